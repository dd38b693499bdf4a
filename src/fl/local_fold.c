/* What every client's fold over its batches shares (fl/fl.h): the counters a
 * step carries (loss_sum, count, t, key), its batch inputs, and running the fold
 * over the client's real batches. */
#include "fl/fl.h"

void fedc__step_inputs(fedc_program *p, fedc__step *s) {
    s->loss_sum = fedc_input(p, "loss_sum", fedc_type_scalar(FEDC_F32));
    s->count = fedc_input(p, "count", fedc_type_scalar(FEDC_F32));
    s->t = fedc_input(p, "t", fedc_type_scalar(FEDC_I32));
    s->key = fedc_input(p, "key", fedc_type_make(FEDC_I32, 1, (int64_t[]){4}));
}

fedc_tree *fedc__step_batch(fedc_program *p, const fedc_program *objective) {
    static const char *const names[3] = {"x", "y", "mask"};
    fedc_tree *batch = fedc_tree_new(p);
    for (int i = 0; i < 3; i++)
        fedc_tree_set(p, batch, names[i],
                      fedc_input(p, names[i], fedc_value_type(objective, fedc_program_find_input(objective, names[i]))));
    return batch;
}

fedc_status fedc__step_outputs(fedc_program *p, const fedc__step *s, fedc_value loss, fedc_value count) {
    fedc_status st = fedc_program_output(p, "loss_sum", fedc_add(p, s->loss_sum, fedc_mul(p, loss, count)));
    if (!st) st = fedc_program_output(p, "count", fedc_add(p, s->count, count));
    if (!st) st = fedc_program_output(p, "t", fedc_add(p, s->t, fedc_scalar(p, FEDC_I32, 1)));
    if (!st) st = fedc_program_output(p, "key", s->key);
    return st ? st : fedc_program_status(p);
}

fedc_tree *fedc__fold_batches(fedc_program *p, const fedc_program *step, fedc_tree *carries, const fedc_tree *data) {
    static const char *const seq[3] = {"x", "y", "mask"};
    fedc_tree_set(p, carries, "loss_sum", fedc_scalar(p, FEDC_F32, 0));
    fedc_tree_set(p, carries, "count", fedc_scalar(p, FEDC_F32, 0));
    fedc_tree_set(p, carries, "t", fedc_scalar(p, FEDC_I32, 0));
    fedc_tree_set(p, carries, "key", fedc_tree_get(p, data, "key"));
    fedc_tree *xs = fedc_tree_new(p);
    for (int i = 0; i < 3; i++) fedc_tree_set(p, xs, seq[i], fedc_tree_get(p, data, seq[i]));
    return fedc_tree_fold(p, step, carries, xs, fedc_tree_get(p, data, "steps"));
}

fedc_status fedc__fold_outputs(fedc_program *p, const fedc_tree *res) {
    fedc_value count = fedc_tree_get(p, res, "count");
    fedc_value mean = fedc_div(p, fedc_tree_get(p, res, "loss_sum"), fedc_maximum(p, count, fedc_scalar(p, FEDC_F32, 1)));
    fedc_status st = fedc_program_output(p, "examples", count);
    return st ? st : fedc_program_output(p, "loss", mean);
}

fedc_status fedc__fl_done(fedc_program *p, fedc_status st, fedc_program **out) {
    if (!st) st = fedc_program_status(p);
    if (st) fedc_program_destroy(p);
    else *out = p;
    return st;
}
