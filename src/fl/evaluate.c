/* Evaluation as a federated program: each client runs an objective over its
 * batches (a fold summing loss, correct and count over the real examples) at its
 * own model, and the server sums; the per-client sums are kept for the accuracy
 * distribution. The model's evaluation (fedc_evaluation_program) sends every
 * client the server's model; an algorithm's own evaluation may send each its own
 * (APFL's personalized models, HypCluster's best cluster). */
#include <string.h>

#include "fl/fl.h"

const char *const fedc__eval_sums[3] = {"loss_sum", "correct", "count"};

fedc_status fedc__eval_outputs(fedc_program *p, const fedc_tree *res, bool packed) {
    fedc_status st = fedc_program_status(p);
    for (int i = 0; !st && i < 3; i++) {
        char name[32];
        snprintf(name, sizeof name, "client_%s", fedc__eval_sums[i]);
        fedc_value v = fedc_tree_get(p, res, fedc__eval_sums[i]);
        st = fedc_program_output(p, fedc__eval_sums[i], fedc_sum(p, packed ? fedc_reduce_sum(p, v, NULL, -1, false) : v));
        if (!st) st = fedc_program_output(p, name, v);
    }
    return st ? st : fedc_program_status(p);
}

fedc_status fedc__model_objective(const fedc_round *r, fedc_program **out) {
    *out = NULL;
    fedc_program *p;
    fedc_status st = fedc_program_create(&p);
    if (st) return st;
    fedc_tree *w;
    fedc_model_outputs o;
    st = fedc__model_on_batch(r, p, false, &w, &o);
    if (!st) st = fedc_program_output(p, "loss", o.loss);
    if (!st) st = fedc_program_output(p, "count", o.count);
    if (!st) st = fedc_program_output(p, "correct", o.correct);
    return fedc__fl_done(p, st, out);
}

/* The fold's body: carries w/..., correct and the step's counters; one batch. */
static fedc_status eval_step(const fedc_program *objective, fedc_program **out) {
    fedc_program *p;
    fedc_status st = fedc_program_create(&p);
    if (st) return st;
    fedc_tree *w = fedc_tree_input_same(p, "w", fedc_tree_of_inputs(objective, "w"));
    fedc_value correct = fedc_input(p, "correct", fedc_type_scalar(FEDC_F32));
    fedc__step s;
    fedc__step_inputs(p, &s);
    fedc_tree *args = fedc__step_batch(p, objective);
    fedc_tree_set_tree(p, args, "w", w);
    fedc_tree_set(p, args, "key", s.key); /* dropout is off: the key is not read */
    fedc_tree *res = fedc_tree_call(p, objective, args);
    st = fedc_tree_output(p, "w", w);
    if (!st) st = fedc_program_output(p, "correct", fedc_add(p, correct, fedc_tree_get(p, res, "correct")));
    if (!st) st = fedc__step_outputs(p, &s, fedc_tree_get(p, res, "loss"), fedc_tree_get(p, res, "count"));
    return fedc__fl_done(p, st, out);
}

/* The map's body: (w/..., x, y, mask, steps) -> loss_sum, correct, count. */
static fedc_status eval_client(const fedc_round *r, const fedc_program *step, const fedc_tree *w_like,
                               fedc_program **out) {
    fedc_program *p;
    fedc_status st = fedc_program_create(&p);
    if (st) return st;
    fedc_tree *carries = fedc_tree_new(p), *data = fedc_tree_input(p, NULL, r->data, FEDC_LOCAL);
    fedc_tree_set_tree(p, carries, "w", fedc_tree_input(p, "w", w_like, FEDC_LOCAL));
    fedc_tree_set(p, carries, "correct", fedc_scalar(p, FEDC_F32, 0));
    if (!fedc_tree_has(data, "key")) fedc_tree_set(p, data, "key", fedc_full(p, fedc_type_make(FEDC_I32, 1, (int64_t[]){4}), 0));
    fedc_tree *res = fedc__fold_batches(p, step, carries, data);
    for (int i = 0; !st && i < 3; i++) st = fedc_program_output(p, fedc__eval_sums[i], fedc_tree_get(p, res, fedc__eval_sums[i]));
    return fedc__fl_done(p, st, out);
}

fedc_tree *fedc__client_sums(fedc_round *r, const fedc_tree *w, const fedc_program *objective) {
    fedc_program *p = r->p, *own = NULL, *step = NULL, *client = NULL;
    fedc_status st = fedc_program_status(p);
    if (!st && !objective) st = fedc__model_objective(r, &own);
    if (!st) st = eval_step(objective ? objective : own, &step);
    if (!st) st = eval_client(r, step, w, &client);
    fedc_tree *args = st ? NULL : fedc_tree_new(p), *res = NULL;
    if (args) {
        fedc_tree_set_tree(p, args, "w", w);
        fedc_tree_set_tree(p, args, NULL, r->data);
        res = fedc_tree_map(p, client, args);
    }
    fedc_program_destroy(own);
    fedc_program_destroy(step);
    fedc_program_destroy(client);
    if (st && !fedc_program_status(p)) fedc_program_fail(p, st, "%s", fedc_errmsg());
    return res;
}

fedc_status fedc_round_evaluate(fedc_round *r, const fedc_tree *w, const fedc_program *objective) {
    return fedc__eval_outputs(r->p, fedc__client_sums(r, w, objective), false);
}

fedc_status fedc_evaluation_program(const fedc_model *m, int64_t batch_size, int64_t max_steps, fedc_program **out) {
    *out = NULL;
    if (batch_size < 1 || max_steps < 1) return fedc_error(FEDC_EINVAL, "evaluation: batch size and steps must be >= 1");
    fedc_algorithm eval = {.batch_size = batch_size, .max_steps = max_steps}; /* no dropout */
    fedc_program *p;
    fedc_status st = fedc_program_create(&p);
    if (st) return st;
    fedc_round r = {.model = m, .alg = &eval, .p = p};
    fedc_tree *w = fedc_model_input_tree(m, p, NULL, FEDC_SERVER); /* by the parameters' own names */
    st = fedc__round_data(&r, false);
    if (!st) st = fedc_round_evaluate(&r, fedc_tree_broadcast(p, w), NULL);
    return fedc__fl_done(p, st, out);
}
