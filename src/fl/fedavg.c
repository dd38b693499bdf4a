/* FedAvg (McMahan et al. 2017), FedOpt (Reddi et al. 2020) and FedProx (Li et al.
 * 2020), which differ only in the client's objective and the server's optimizer:
 *
 *     for each client i, in parallel:              (map)
 *         w_i = w; s_i = client_opt.init()
 *         for each batch b of client i:            (fold, length = its batches)
 *             w_i, s_i = client_opt(w_i, grad objective(w_i, b), s_i)
 *         delta_i = w - w_i; n_i = examples seen
 *     w, s = server_opt(w, weighted_mean(delta_i, n_i), s)
 */
#include "fl/fl.h"

/* The local step, the fold's body:
 *   carries  params..., client_opt state..., loss_sum, count, t, key, [anchor params...]
 *   steps    x, y, mask (one batch) */
static fedc_status local_step(const fedc_model *m, const fedc_algorithm *a, fedc_program **out) {
    fedc_program *obj, *p;
    fedc_status st = fedc__fl_objective(m, a, true, &obj);
    if (st) return st;
    if ((st = fedc_program_create(&p))) {
        fedc_program_destroy(obj);
        return st;
    }
    int n = fedc_model_num_params(m), ns = fedc_optimizer_state_size(&a->client_opt, n);
    bool prox = fedc__fl_proximal(a);
    /* w [n], s [ns], anchor [n], args [2n + 4], res [n + 2], next [n], state [ns] */
    fedc_value *w = fedc__values(6 * n + 2 * ns + 6);
    if (!w) {
        fedc_program_destroy(obj);
        fedc_program_destroy(p);
        return FEDC_ENOMEM;
    }
    fedc_value *s = w + n, *anchor = s + ns, *args = anchor + n, *res = args + 2 * n + 4, *next = res + n + 2,
               *state = next + n;
    for (int i = 0; i < n; i++) w[i] = fedc_input(p, fedc_model_param_name(m, i), fedc_model_param_type(m, i));
    for (int k = 0; k < ns; k++) {
        char name[32];
        snprintf(name, sizeof name, "client_state%d", k);
        bool count = k == ns - 1 && fedc_optimizer_counts_steps(&a->client_opt);
        s[k] = fedc_input(p, name, count ? fedc_type_scalar(FEDC_F32) : fedc_model_param_type(m, k % n));
    }
    fedc_value loss_sum = fedc_input(p, "loss_sum", fedc_type_scalar(FEDC_F32));
    fedc_value count = fedc_input(p, "count", fedc_type_scalar(FEDC_F32));
    fedc_value t = fedc_input(p, "t", fedc_type_scalar(FEDC_I32));
    fedc_value key = fedc_input(p, "key", fedc_type_make(FEDC_I32, 1, (int64_t[]){4}));
    for (int i = 0; prox && i < n; i++) {
        char name[80];
        snprintf(name, sizeof name, "anchor_%s", fedc_model_param_name(m, i));
        anchor[i] = fedc_input(p, name, fedc_model_param_type(m, i));
    }
    fedc_value x = fedc_input(p, "x", fedc_value_type(obj, fedc_program_find_input(obj, "x")));
    fedc_value y = fedc_input(p, "y", fedc_value_type(obj, fedc_program_find_input(obj, "y")));
    fedc_value mask = fedc_input(p, "mask", fedc_value_type(obj, fedc_program_find_input(obj, "mask")));

    /* the objective's inputs: params, x, y, mask, key, [anchors]; outputs: loss, count, grads */
    int na = 0;
    for (int i = 0; i < n; i++) args[na++] = w[i];
    args[na++] = x, args[na++] = y, args[na++] = mask, args[na++] = fedc__fl_step_key(p, key, t);
    for (int i = 0; prox && i < n; i++) args[na++] = anchor[i];
    st = fedc_program_inline(p, obj, args, res);
    if (!st) st = fedc_optimizer_step(&a->client_opt, p, FEDC_NONE, n, w, res + 2, s, next, state);
    for (int i = 0; !st && i < n; i++) st = fedc_program_output(p, fedc_model_param_name(m, i), next[i]);
    for (int k = 0; !st && k < ns; k++) st = fedc_program_output(p, fedc_program_input_name(p, n + k), state[k]);
    if (!st) st = fedc_program_output(p, "loss_sum", fedc_add(p, loss_sum, fedc_mul(p, res[0], res[1])));
    if (!st) st = fedc_program_output(p, "count", fedc_add(p, count, res[1]));
    if (!st) st = fedc_program_output(p, "t", fedc_add(p, t, fedc_scalar(p, FEDC_I32, 1)));
    if (!st) st = fedc_program_output(p, "key", key);
    for (int i = 0; !st && prox && i < n; i++) st = fedc_program_output(p, fedc_program_input_name(p, n + ns + 4 + i), anchor[i]);
    fedc_free(w);
    fedc_program_destroy(obj);
    if (st) fedc_program_destroy(p);
    else *out = p;
    return st;
}

/* The client, the map's body: (params..., x, y, mask, steps, key) ->
 * (delta_<param>..., examples, loss). The client optimizer starts afresh. */
static fedc_status client_update(const fedc_model *m, const fedc_algorithm *a, const fedc_program *step,
                                 const fedc_program *round, const fedc__round_inputs *in, fedc_program **out) {
    fedc_program *p;
    fedc_status st = fedc_program_create(&p);
    if (st) return st;
    int n = in->nparams, ns = fedc_optimizer_state_size(&a->client_opt, n), nc = 0;
    bool prox = fedc__fl_proximal(a);
    /* w [n], carries and res [2n + ns + 4] each */
    fedc_value *w = fedc__values(5 * n + 2 * ns + 8);
    if (!w) {
        fedc_program_destroy(p);
        return FEDC_ENOMEM;
    }
    fedc_value *carries = w + n, *res = carries + 2 * n + ns + 4;
    fedc__client_inputs ci;
    fedc__fl_client_inputs(p, m, round, in, w, &ci);
    for (int i = 0; i < n; i++) carries[nc++] = w[i];
    for (int k = 0; k < ns; k++) /* the state's initial values, as constants */
        carries[nc++] = fedc_full(p, fedc_value_type(step, fedc_program_input(step, n + k)),
                                  fedc_optimizer_state_init(&a->client_opt, n, k));
    carries[nc++] = fedc_scalar(p, FEDC_F32, 0); /* loss_sum */
    carries[nc++] = fedc_scalar(p, FEDC_F32, 0); /* count */
    carries[nc++] = fedc_scalar(p, FEDC_I32, 0); /* t */
    carries[nc++] = ci.key;
    for (int i = 0; prox && i < n; i++) carries[nc++] = w[i]; /* the anchor: the server's model */
    st = fedc_fold(p, step, carries, nc, (fedc_value[]){ci.x, ci.y, ci.mask}, 3, ci.steps, res);
    for (int i = 0; !st && i < n; i++) {
        char name[80];
        snprintf(name, sizeof name, "delta_%s", fedc_model_param_name(m, i));
        st = fedc_program_output(p, name, fedc_sub(p, w[i], res[i]));
    }
    fedc_value loss_sum = res[n + ns], count = res[n + ns + 1];
    fedc_value mean = fedc_div(p, loss_sum, fedc_maximum(p, count, fedc_scalar(p, FEDC_F32, 1)));
    if (!st) st = fedc_program_output(p, "examples", count);
    if (!st) st = fedc_program_output(p, "loss", mean);
    fedc_free(w);
    if (st) fedc_program_destroy(p);
    else *out = p;
    return st;
}

/* Local steps then the delta: the client of FedAvg, FedOpt and FedProx. */
static fedc_status build_client(const fedc_model *m, const fedc_algorithm *a, const fedc_program *round,
                                const fedc__round_inputs *in, fedc_program **client) {
    fedc_program *step = NULL;
    fedc_status st = local_step(m, a, &step);
    if (!st) st = client_update(m, a, step, round, in, client);
    fedc_program_destroy(step);
    return st;
}

fedc_status fedc__fedavg_round(const fedc_model *m, const fedc_algorithm *a, fedc_program **out) {
    return fedc__fl_assemble(m, a, build_client, out);
}

const fedc_algorithm_def fedc_algorithm_fedavg = {
    .name = "fedavg",
    .summary = "FedAvg: local epochs of the client optimizer, example-weighted mean of the deltas; "
               "with a server optimizer, FedOpt (FedAdam, FedYogi, FedAdagrad, FedAvgM)",
    .round = fedc__fedavg_round,
};
