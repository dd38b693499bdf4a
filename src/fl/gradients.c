/* Each client's mean gradient over its batches at a given model (FedSGD's
 * client, Mime's full-batch gradient):
 *
 *     g_i = sum_b count_b * grad loss(w, b) / sum_b count_b     (a fold over batches)
 */
#include "fl/fl.h"

/* The fold's body: carries w/... (unchanged), sum/... and the counters; steps x,
 * y, mask. */
static fedc_status accumulate_step(const fedc_program *objective, fedc_program **out) {
    fedc_program *p;
    fedc_status st = fedc_program_create(&p);
    if (st) return st;
    fedc_tree *w = fedc_tree_input_same(p, "w", fedc_tree_of_inputs(objective, "w"));
    fedc_tree *sum = fedc_tree_input_same(p, "sum", fedc_tree_of_inputs(objective, "w"));
    fedc__step s;
    fedc__step_inputs(p, &s);
    fedc_tree *args = fedc__step_batch(p, objective);
    fedc_tree_set_tree(p, args, "w", w);
    fedc_tree_set(p, args, "key", fedc__fl_step_key(p, s.key, s.t));
    fedc_tree *res = fedc_tree_call(p, objective, args);
    fedc_value n = fedc_tree_get(p, res, "count");
    st = fedc_tree_output(p, "w", w);
    if (!st) st = fedc_tree_output(p, "sum", fedc_tree_axpy(p, n, fedc_tree_subtree(p, res, "grad_w"), sum));
    if (!st) st = fedc__step_outputs(p, &s, fedc_tree_get(p, res, "loss"), n);
    return fedc__fl_done(p, st, out);
}

/* The map's body: (w/..., x, y, mask, steps, key) -> (grad/..., examples, loss). */
static fedc_status client_gradient(fedc_round *r, const fedc_program *step, const fedc_tree *w_like,
                                   fedc_program **out) {
    fedc_program *p;
    fedc_status st = fedc_program_create(&p);
    if (st) return st;
    fedc_tree *w = fedc_tree_input(p, "w", w_like, FEDC_LOCAL);
    fedc_tree *carries = fedc_tree_new(p);
    fedc_tree_set_tree(p, carries, "w", w);
    fedc_tree_set_tree(p, carries, "sum", fedc_tree_full_like(p, w, 0));
    fedc_tree *res = fedc__fold_batches(p, step, carries, fedc_tree_input(p, NULL, r->data, FEDC_LOCAL));
    fedc_value denominator = fedc_maximum(p, fedc_tree_get(p, res, "count"), fedc_scalar(p, FEDC_F32, 1));
    fedc_tree *sum = fedc_tree_subtree(p, res, "sum"), *grad = fedc_tree_new(p);
    for (int i = 0; i < fedc_tree_size(sum); i++) /* sum / count, leaf by leaf (a division, as FedJAX's) */
        fedc_tree_set(p, grad, fedc_tree_name(sum, i), fedc_div(p, fedc_tree_value(sum, i), denominator));
    st = fedc_tree_output(p, "grad", grad);
    if (!st) st = fedc__fold_outputs(p, res);
    return fedc__fl_done(p, st, out);
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
