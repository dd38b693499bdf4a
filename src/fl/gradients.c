/* Each client's mean gradient over its batches at a given model (FedSGD's
 * client, Mime's full-batch gradient):
 *
 *     g_i = sum_b count_b * grad loss(w, b) / sum_b count_b     (a fold over batches)
 */
#include "fl/fl.h"

/* The fold's body: carries w/... (unchanged), sum/..., loss_sum, count, t, key;
 * steps x, y, mask. */
static fedc_status accumulate_step(const fedc_program *objective, fedc_program **out) {
    fedc_program *p;
    fedc_status st = fedc_program_create(&p);
    if (st) return st;
    fedc_tree *w = fedc_tree_input_same(p, "w", fedc_tree_of_inputs(objective, "w"));
    fedc_tree *sum = fedc_tree_input_same(p, "sum", fedc_tree_of_inputs(objective, "w"));
    fedc_value loss_sum = fedc_input(p, "loss_sum", fedc_type_scalar(FEDC_F32));
    fedc_value count = fedc_input(p, "count", fedc_type_scalar(FEDC_F32));
    fedc_value t = fedc_input(p, "t", fedc_type_scalar(FEDC_I32));
    fedc_value key = fedc_input(p, "key", fedc_type_make(FEDC_I32, 1, (int64_t[]){4}));
    fedc_tree *args = fedc_tree_new(p);
    fedc_tree_set_tree(p, args, "w", w);
    const char *batch[3] = {"x", "y", "mask"};
    for (int i = 0; i < 3; i++)
        fedc_tree_set(p, args, batch[i],
                      fedc_input(p, batch[i], fedc_value_type(objective, fedc_program_find_input(objective, batch[i]))));
    fedc_tree_set(p, args, "key", fedc__fl_step_key(p, key, t));
    fedc_tree *res = fedc_tree_call(p, objective, args);
    fedc_value l = fedc_tree_get(p, res, "loss"), n = fedc_tree_get(p, res, "count");
    st = fedc_tree_output(p, "w", w);
    if (!st) st = fedc_tree_output(p, "sum", fedc_tree_axpy(p, n, fedc_tree_subtree(p, res, "grad_w"), sum));
    if (!st) st = fedc_program_output(p, "loss_sum", fedc_add(p, loss_sum, fedc_mul(p, l, n)));
    if (!st) st = fedc_program_output(p, "count", fedc_add(p, count, n));
    if (!st) st = fedc_program_output(p, "t", fedc_add(p, t, fedc_scalar(p, FEDC_I32, 1)));
    if (!st) st = fedc_program_output(p, "key", key);
    if (!st) st = fedc_program_status(p);
    if (st) fedc_program_destroy(p);
    else *out = p;
    return st;
}

/* The map's body: (w/..., x, y, mask, steps, key) -> (grad/..., examples, loss). */
static fedc_status client_gradient(fedc_round *r, const fedc_program *step, const fedc_tree *w_like,
                                   fedc_program **out) {
    fedc_program *p;
    fedc_status st = fedc_program_create(&p);
    if (st) return st;
    fedc_tree *w = fedc_tree_input(p, "w", w_like, FEDC_LOCAL);
    fedc_tree *data = fedc_tree_input(p, NULL, r->data, FEDC_LOCAL);
    fedc_tree *carries = fedc_tree_new(p), *xs = fedc_tree_new(p);
    fedc_tree_set_tree(p, carries, "w", w);
    fedc_tree_set_tree(p, carries, "sum", fedc_tree_full_like(p, w, 0));
    fedc_tree_set(p, carries, "loss_sum", fedc_scalar(p, FEDC_F32, 0));
    fedc_tree_set(p, carries, "count", fedc_scalar(p, FEDC_F32, 0));
    fedc_tree_set(p, carries, "t", fedc_scalar(p, FEDC_I32, 0));
    fedc_tree_set(p, carries, "key", fedc_tree_get(p, data, "key"));
    const char *seq[3] = {"x", "y", "mask"};
    for (int i = 0; i < 3; i++) fedc_tree_set(p, xs, seq[i], fedc_tree_get(p, data, seq[i]));
    fedc_tree *res = fedc_tree_fold(p, step, carries, xs, fedc_tree_get(p, data, "steps"));
    fedc_value count = fedc_tree_get(p, res, "count");
    fedc_value denominator = fedc_maximum(p, count, fedc_scalar(p, FEDC_F32, 1));
    fedc_tree *sum = fedc_tree_subtree(p, res, "sum"), *grad = fedc_tree_new(p);
    for (int i = 0; i < fedc_tree_size(sum); i++) /* sum / count, leaf by leaf (a division, as FedJAX's) */
        fedc_tree_set(p, grad, fedc_tree_name(sum, i), fedc_div(p, fedc_tree_value(sum, i), denominator));
    st = fedc_tree_output(p, "grad", grad);
    if (!st) st = fedc_program_output(p, "examples", count);
    if (!st) st = fedc_program_output(p, "loss", fedc_div(p, fedc_tree_get(p, res, "loss_sum"), denominator));
    if (!st) st = fedc_program_status(p);
    if (st) fedc_program_destroy(p);
    else *out = p;
    return st;
}

fedc_status fedc__round_gradients_with(fedc_round *r, const fedc_program *objective, const fedc_tree *w,
                                      fedc_tree **out) {
    *out = NULL;
    fedc_program *step = NULL, *client = NULL, *p = r->p;
    fedc_status st = accumulate_step(objective, &step);
    if (!st) st = client_gradient(r, step, w, &client);
    fedc_tree *args = st ? NULL : fedc_tree_new(p);
    if (args) {
        fedc_tree_set_tree(p, args, "w", w);
        fedc_tree_set_tree(p, args, NULL, r->data);
        *out = fedc_tree_map(p, client, args);
        st = fedc_program_status(p);
    }
    fedc_program_destroy(step);
    fedc_program_destroy(client);
    return st;
}

fedc_status fedc_round_gradients(fedc_round *r, const fedc_tree *w, fedc_tree **out) {
    *out = NULL;
    fedc_program *objective = NULL;
    fedc_status st = fedc_round_objective(r, NULL, NULL, true, &objective);
    if (!st) st = fedc__round_gradients_with(r, objective, w, out);
    fedc_program_destroy(objective);
    return st;
}
