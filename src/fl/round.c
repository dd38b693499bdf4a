/* What every algorithm's round shares: the client's objective (and its gradient)
 * as a program, the round's inputs, and the server's optimizer step on the
 * averaged update. */
#include <string.h>

#include "fl/fl.h"

/* The objective's value and example count, from the inputs it declares. */
static fedc_status objective_body(fedc_program *p, const fedc_model *m, const fedc_algorithm *a, fedc_value *w) {
    int n = fedc_model_num_params(m);
    for (int i = 0; i < n; i++) w[i] = fedc_input(p, fedc_model_param_name(m, i), fedc_model_param_type(m, i));
    fedc_value x = fedc_input(p, "x", fedc_model_input_type(m, a->batch_size));
    fedc_value y = fedc_input(p, "y", fedc_model_label_type(m, a->batch_size));
    fedc_value mask = fedc_input(p, "mask", fedc_type_make(FEDC_F32, 1, (int64_t[]){a->batch_size}));
    fedc_value key = fedc_input(p, "key", fedc_type_make(FEDC_I32, 1, (int64_t[]){4}));
    fedc_model_outputs out;
    fedc_status st = fedc_model_apply(m, p, w, x, y, mask, a->dropout ? key : FEDC_NONE, &out);
    if (st) return st;
    fedc_value loss = out.loss;
    if (fedc__fl_proximal(a)) { /* + mu/2 ||w - anchor||^2, the proximal term */
        fedc_value prox = FEDC_NONE;
        for (int i = 0; i < n; i++) {
            char name[80];
            snprintf(name, sizeof name, "anchor_%s", fedc_model_param_name(m, i));
            fedc_value d = fedc_sub(p, w[i], fedc_input(p, name, fedc_model_param_type(m, i)));
            fedc_value sq = fedc_reduce_sum(p, fedc_square(p, d), NULL, -1, false);
            prox = prox == FEDC_NONE ? sq : fedc_add(p, prox, sq);
        }
        loss = fedc_add(p, loss, fedc_mul(p, fedc_scalar(p, FEDC_F32, a->prox_mu / 2), prox));
    }
    st = fedc_program_output(p, "loss", loss);
    return st ? st : fedc_program_output(p, "count", out.count);
}

fedc_status fedc__fl_objective(const fedc_model *m, const fedc_algorithm *a, bool grad, fedc_program **out) {
    *out = NULL;
    int n = fedc_model_num_params(m);
    if (n > FEDC__FL_MAX_PARAMS) return fedc_error(FEDC_EUNSUPPORTED, "fl: the model has more than %d parameters", FEDC__FL_MAX_PARAMS);
    fedc_program *p;
    fedc_status st = fedc_program_create(&p);
    if (st) return st;
    fedc_value *w = fedc__values(n);
    const char **wrt = fedc_calloc((size_t)n + 1, sizeof *wrt);
    st = w && wrt ? objective_body(p, m, a, w) : fedc_error(FEDC_ENOMEM, "fl: out of memory");
    if (!st && grad) {
        for (int i = 0; i < n; i++) wrt[i] = fedc_model_param_name(m, i);
        fedc_program *g;
        st = fedc_grad(p, "loss", wrt, n, &g);
        fedc_program_destroy(p);
        p = st ? NULL : g;
    }
    fedc_free(w);
    fedc_free(wrt);
    if (st) {
        fedc_program_destroy(p);
        return st;
    }
    *out = p;
    return FEDC_OK;
}

fedc_value fedc__fl_step_key(fedc_program *p, fedc_value key, fedc_value t) {
    fedc_value unit = fedc_constant(p, fedc_type_make(FEDC_I32, 1, (int64_t[]){4}), (int32_t[]){0, 0, 0, 1});
    return fedc_add(p, key, fedc_mul(p, unit, t));
}

fedc_status fedc__fl_round_inputs(fedc_program *p, const fedc_model *m, const fedc_algorithm *a, fedc__round_inputs *in) {
    int n = fedc_model_num_params(m);
    if (n > FEDC__FL_MAX_PARAMS) return fedc_error(FEDC_EUNSUPPORTED, "fl: the model has more than %d parameters", FEDC__FL_MAX_PARAMS);
    in->nparams = n;
    in->nstate = fedc_optimizer_state_size(&a->server_opt, n);
    in->params = fedc__values(n + in->nstate);
    if (!in->params) return FEDC_ENOMEM;
    in->state = in->params + n;
    for (int i = 0; i < n; i++)
        in->params[i] = fedc_input(p, fedc_model_param_name(m, i), fedc__placed(fedc_model_param_type(m, i), FEDC_SERVER));
    for (int k = 0; k < in->nstate; k++) {
        char name[32];
        snprintf(name, sizeof name, "server_state%d", k);
        bool count = k == in->nstate - 1 && fedc_optimizer_counts_steps(&a->server_opt);
        fedc_type t = count ? fedc_type_scalar(FEDC_F32) : fedc_model_param_type(m, k % n);
        in->state[k] = fedc_input(p, name, fedc__placed(t, FEDC_SERVER));
    }
    /* each client's batches, [max_steps, batch, ...] */
    fedc_type xt = fedc__stacked(fedc_model_input_type(m, a->batch_size), a->max_steps);
    fedc_type yt = fedc__stacked(fedc_model_label_type(m, a->batch_size), a->max_steps);
    int64_t sb[2] = {a->max_steps, a->batch_size};
    in->x = fedc_input(p, "x", fedc__placed(xt, FEDC_CLIENTS));
    in->y = fedc_input(p, "y", fedc__placed(yt, FEDC_CLIENTS));
    in->mask = fedc_input(p, "mask", fedc__placed(fedc_type_make(FEDC_F32, 2, sb), FEDC_CLIENTS));
    in->steps = fedc_input(p, "steps", fedc__placed(fedc_type_scalar(FEDC_I32), FEDC_CLIENTS));
    in->key = fedc_input(p, "key", fedc__placed(fedc_type_make(FEDC_I32, 1, (int64_t[]){4}), FEDC_CLIENTS));
    return fedc_program_status(p);
}

void fedc__fl_round_inputs_free(fedc__round_inputs *in) {
    fedc_free(in->params);
    in->params = in->state = NULL;
}

void fedc__fl_client_inputs(fedc_program *p, const fedc_model *m, const fedc_program *round,
                            const fedc__round_inputs *in, fedc_value *w, fedc__client_inputs *ci) {
    for (int i = 0; i < in->nparams; i++) w[i] = fedc_input(p, fedc_model_param_name(m, i), fedc_model_param_type(m, i));
    ci->x = fedc_input(p, "x", fedc__placed(fedc_value_type(round, in->x), FEDC_LOCAL));
    ci->y = fedc_input(p, "y", fedc__placed(fedc_value_type(round, in->y), FEDC_LOCAL));
    ci->mask = fedc_input(p, "mask", fedc__placed(fedc_value_type(round, in->mask), FEDC_LOCAL));
    ci->steps = fedc_input(p, "steps", fedc_type_scalar(FEDC_I32));
    ci->key = fedc_input(p, "key", fedc_type_make(FEDC_I32, 1, (int64_t[]){4}));
}

fedc_status fedc__fl_server_update(fedc_program *p, const fedc_model *m, const fedc_algorithm *a,
                                   const fedc__round_inputs *in, const fedc_value *updates, fedc_value weight,
                                   fedc_value client_loss) {
    int n = in->nparams;
    fedc_value *grads = fedc__values(2 * n + in->nstate), *next = grads + n, *state = next + n;
    if (!grads) return FEDC_ENOMEM;
    for (int i = 0; i < n; i++) grads[i] = fedc_weighted_mean(p, updates[i], weight);
    fedc_status st = fedc_program_status(p);
    if (!st) st = fedc_optimizer_step(&a->server_opt, p, FEDC_NONE, n, in->params, grads, in->state, next, state);
    for (int i = 0; !st && i < n; i++) {
        char name[80];
        snprintf(name, sizeof name, "new_%s", fedc_model_param_name(m, i));
        st = fedc_program_output(p, name, next[i]);
    }
    for (int k = 0; !st && k < in->nstate; k++) {
        char name[40];
        snprintf(name, sizeof name, "new_server_state%d", k);
        st = fedc_program_output(p, name, state[k]);
    }
    if (!st) st = fedc_program_output(p, "train_loss", fedc_weighted_mean(p, client_loss, weight));
    if (!st) st = fedc_program_output(p, "examples", fedc_sum(p, weight));
    fedc_free(grads);
    return st;
}

fedc_status fedc__fl_assemble(const fedc_model *m, const fedc_algorithm *a, fedc__client_builder build,
                              fedc_program **out) {
    *out = NULL;
    fedc_program *p = NULL, *client = NULL;
    fedc__round_inputs in = {0};
    fedc_status st = fedc_program_create(&p);
    if (!st) st = fedc__fl_round_inputs(p, m, a, &in);
    if (!st) st = build(m, a, p, &in, &client);
    int n = in.nparams;
    fedc_value *args = st ? NULL : fedc__values(2 * n + 7), *res = args ? args + n + 5 : NULL;
    if (!st && !args) st = FEDC_ENOMEM;
    for (int i = 0; !st && i < n; i++) args[i] = fedc_broadcast(p, in.params[i]);
    if (!st) args[n] = in.x, args[n + 1] = in.y, args[n + 2] = in.mask, args[n + 3] = in.steps, args[n + 4] = in.key;
    if (!st) st = fedc_map(p, client, args, n + 5, res);
    if (!st) st = fedc__fl_server_update(p, m, a, &in, res, res[n], res[n + 1]);
    fedc_free(args);
    fedc__fl_round_inputs_free(&in);
    fedc_program_destroy(client);
    if (st) fedc_program_destroy(p);
    else *out = p;
    return st;
}
