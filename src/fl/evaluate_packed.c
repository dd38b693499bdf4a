/* Packed evaluation: several test clients share one slot of the evaluation
 * cohort, their examples one after another in its batches, each row tagged with
 * its client's place in the slot (`segment`), and the model's per-example sums
 * added up per segment. A client with a few examples no longer costs a whole
 * padded batch: LEAF Shakespeare's 572 held-out roles hold about 3,000 rows, which
 * one client per slot would pad to 572 batches. The per-client counts are the
 * same as evaluating each client alone (whole numbers); the loss sums are the same
 * sums in another order. */
#include "fl/fl.h"

/* The fold's body: carries the model, loss_sum/correct/count f32[segments]; one
 * batch x, y, mask, segment. */
static fedc_status packed_step(const fedc_model *m, int64_t batch, int segments, fedc_program **out) {
    fedc_program *p;
    fedc_status st = fedc_program_create(&p);
    if (st) return st;
    fedc_tree *w = fedc_model_input_tree(m, p, "w", FEDC_LOCAL);
    fedc_type vs = fedc_type_make(FEDC_F32, 1, (int64_t[]){segments});
    fedc_value carried[3];
    for (int i = 0; i < 3; i++) carried[i] = fedc_input(p, fedc__eval_sums[i], vs);
    fedc_value x = fedc_input(p, "x", fedc_model_input_type(m, batch));
    fedc_value y = fedc_input(p, "y", fedc_model_label_type(m, batch));
    fedc_value mask = fedc_input(p, "mask", fedc_type_make(FEDC_F32, 1, &batch));
    fedc_value segment = fedc_input(p, "segment", fedc_type_make(FEDC_I32, 1, &batch));
    fedc_model_outputs o;
    st = fedc_model_apply_tree(m, p, w, x, y, mask, FEDC_NONE, &o);
    fedc_value place = st ? FEDC_NONE : fedc_one_hot(p, segment, segments, FEDC_F32); /* [batch, segments] */
    fedc_value per[3] = {o.example_loss, o.example_correct, o.example_count};
    for (int i = 0; !st && i < 3; i++) {
        fedc_value column = fedc_reshape(p, per[i], 2, (int64_t[]){batch, 1});
        fedc_value added = fedc_reduce_sum(p, fedc_mul(p, place, column), (int[]){0}, 1, false);
        st = fedc_program_output(p, fedc__eval_sums[i], fedc_add(p, carried[i], added));
    }
    if (!st) st = fedc_tree_output(p, "w", w);
    return fedc__fl_done(p, st, out);
}

/* The map's body: one slot's clients over its batches -> the per-segment sums. */
static fedc_status packed_slot(const fedc_model *m, const fedc_program *step, const fedc_round *r, int segments,
                               fedc_program **out) {
    fedc_program *p;
    fedc_status st = fedc_program_create(&p);
    if (st) return st;
    fedc_tree *data = fedc_tree_input(p, NULL, r->data, FEDC_LOCAL), *carries = fedc_tree_new(p), *xs = fedc_tree_new(p);
    fedc_tree_set_tree(p, carries, "w", fedc_model_input_tree(m, p, "w", FEDC_LOCAL));
    static const char *const seq[4] = {"x", "y", "mask", "segment"};
    for (int i = 0; i < 3; i++)
        fedc_tree_set(p, carries, fedc__eval_sums[i], fedc_full(p, fedc_type_make(FEDC_F32, 1, (int64_t[]){segments}), 0));
    for (int i = 0; i < 4; i++) fedc_tree_set(p, xs, seq[i], fedc_tree_get(p, data, seq[i]));
    fedc_tree *res = fedc_tree_fold(p, step, carries, xs, fedc_tree_get(p, data, "steps"));
    for (int i = 0; !st && i < 3; i++) st = fedc_program_output(p, fedc__eval_sums[i], fedc_tree_get(p, res, fedc__eval_sums[i]));
    return fedc__fl_done(p, st, out);
}

fedc_status fedc_evaluation_program_packed(const fedc_model *m, int64_t batch_size, int64_t max_steps, int segments,
                                           fedc_program **out) {
    *out = NULL;
    if (batch_size < 1 || max_steps < 1 || segments < 1)
        return fedc_error(FEDC_EINVAL, "evaluation: batch size, steps and clients per slot must be >= 1");
    fedc_algorithm eval = {.batch_size = batch_size, .max_steps = max_steps};
    fedc_program *p = NULL, *step = NULL, *slot = NULL;
    fedc_status st = fedc_program_create(&p);
    if (st) return st;
    fedc_round r = {.model = m, .alg = &eval, .p = p};
    fedc_tree *w = fedc_model_input_tree(m, p, NULL, FEDC_SERVER);
    st = fedc__round_data(&r, false);
    int64_t sb[2] = {max_steps, batch_size};
    if (!st) fedc_tree_set(p, r.data, "segment", fedc_input(p, "segment", fedc__placed(fedc_type_make(FEDC_I32, 2, sb), FEDC_CLIENTS)));
    if (!st) st = packed_step(m, batch_size, segments, &step);
    if (!st) st = packed_slot(m, step, &r, segments, &slot);
    fedc_tree *args = st ? NULL : fedc_tree_copy(p, r.data), *res = NULL;
    if (args) {
        fedc_tree_set_tree(p, args, "w", fedc_tree_broadcast(p, w));
        res = fedc_tree_map(p, slot, args);
    }
    if (!st) st = fedc__eval_outputs(p, res, true);
    fedc_program_destroy(step);
    fedc_program_destroy(slot);
    return fedc__fl_done(p, st, out);
}
