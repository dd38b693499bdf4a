/* FedSGD (McMahan et al. 2017): each client computes the gradient of its loss on
 * all its data (the example-weighted mean of its batches' gradients), the server
 * averages the gradients by examples and takes one optimizer step:
 *
 *     g_i, n_i = map(client_gradient)(broadcast(w), data_i)
 *     w, s = server_opt(w, weighted_mean(g_i, n_i), s)
 */
#include "fl/fl.h"

/* The fold's body: carries params..., grad_sum..., loss_sum, count, t, key; steps
 * x, y, mask. Sums gradient * examples over the batches. */
static fedc_status accumulate_step(const fedc_model *m, const fedc_algorithm *a, fedc_program **out) {
    fedc_program *obj, *p;
    fedc_status st = fedc__fl_objective(m, a, true, &obj);
    if (st) return st;
    if ((st = fedc_program_create(&p))) {
        fedc_program_destroy(obj);
        return st;
    }
    int n = fedc_model_num_params(m);
    /* w [n], g [n], args [n + 4], res [n + 2] */
    fedc_value *w = fedc__values(4 * n + 6);
    if (!w) {
        fedc_program_destroy(obj);
        fedc_program_destroy(p);
        return FEDC_ENOMEM;
    }
    fedc_value *g = w + n, *args = g + n, *res = args + n + 4;
    for (int i = 0; i < n; i++) w[i] = fedc_input(p, fedc_model_param_name(m, i), fedc_model_param_type(m, i));
    for (int i = 0; i < n; i++) {
        char name[80];
        snprintf(name, sizeof name, "sum_%s", fedc_model_param_name(m, i));
        g[i] = fedc_input(p, name, fedc_model_param_type(m, i));
    }
    fedc_value loss_sum = fedc_input(p, "loss_sum", fedc_type_scalar(FEDC_F32));
    fedc_value count = fedc_input(p, "count", fedc_type_scalar(FEDC_F32));
    fedc_value t = fedc_input(p, "t", fedc_type_scalar(FEDC_I32));
    fedc_value key = fedc_input(p, "key", fedc_type_make(FEDC_I32, 1, (int64_t[]){4}));
    fedc_value x = fedc_input(p, "x", fedc_value_type(obj, fedc_program_find_input(obj, "x")));
    fedc_value y = fedc_input(p, "y", fedc_value_type(obj, fedc_program_find_input(obj, "y")));
    fedc_value mask = fedc_input(p, "mask", fedc_value_type(obj, fedc_program_find_input(obj, "mask")));
    for (int i = 0; i < n; i++) args[i] = w[i];
    args[n] = x, args[n + 1] = y, args[n + 2] = mask, args[n + 3] = fedc__fl_step_key(p, key, t);
    st = fedc_program_inline(p, obj, args, res);
    for (int i = 0; !st && i < n; i++) st = fedc_program_output(p, fedc_model_param_name(m, i), w[i]);
    for (int i = 0; !st && i < n; i++)
        st = fedc_program_output(p, fedc_program_input_name(p, n + i), fedc_add(p, g[i], fedc_mul(p, res[2 + i], res[1])));
    if (!st) st = fedc_program_output(p, "loss_sum", fedc_add(p, loss_sum, fedc_mul(p, res[0], res[1])));
    if (!st) st = fedc_program_output(p, "count", fedc_add(p, count, res[1]));
    if (!st) st = fedc_program_output(p, "t", fedc_add(p, t, fedc_scalar(p, FEDC_I32, 1)));
    if (!st) st = fedc_program_output(p, "key", key);
    fedc_free(w);
    fedc_program_destroy(obj);
    if (st) fedc_program_destroy(p);
    else *out = p;
    return st;
}

/* The client: (params..., x, y, mask, steps, key) -> (grad_<param>..., examples, loss). */
static fedc_status client_gradient(const fedc_model *m, const fedc_program *step, const fedc_program *round,
                                   const fedc__round_inputs *in, fedc_program **out) {
    fedc_program *p;
    fedc_status st = fedc_program_create(&p);
    if (st) return st;
    int n = in->nparams, nc = 0;
    fedc_value *carries = fedc__values(4 * n + 8), *res = carries ? carries + 2 * n + 4 : NULL;
    if (!carries) {
        fedc_program_destroy(p);
        return FEDC_ENOMEM;
    }
    fedc__client_inputs ci;
    fedc__fl_client_inputs(p, m, round, in, carries, &ci); /* the params are the first carries */
    nc = n;
    for (int i = 0; i < n; i++) carries[nc++] = fedc_full(p, fedc_model_param_type(m, i), 0.0);
    carries[nc++] = fedc_scalar(p, FEDC_F32, 0);
    carries[nc++] = fedc_scalar(p, FEDC_F32, 0);
    carries[nc++] = fedc_scalar(p, FEDC_I32, 0);
    carries[nc++] = ci.key;
    st = fedc_fold(p, step, carries, nc, (fedc_value[]){ci.x, ci.y, ci.mask}, 3, ci.steps, res);
    fedc_value count = res[2 * n + 1], denominator = fedc_maximum(p, count, fedc_scalar(p, FEDC_F32, 1));
    for (int i = 0; !st && i < n; i++) {
        char name[80];
        snprintf(name, sizeof name, "grad_%s", fedc_model_param_name(m, i));
        st = fedc_program_output(p, name, fedc_div(p, res[n + i], denominator));
    }
    if (!st) st = fedc_program_output(p, "examples", count);
    if (!st) st = fedc_program_output(p, "loss", fedc_div(p, res[2 * n], denominator));
    fedc_free(carries);
    if (st) fedc_program_destroy(p);
    else *out = p;
    return st;
}

static fedc_status build_client(const fedc_model *m, const fedc_algorithm *a, const fedc_program *round,
                                const fedc__round_inputs *in, fedc_program **client) {
    fedc_program *step = NULL;
    fedc_status st = accumulate_step(m, a, &step);
    if (!st) st = client_gradient(m, step, round, in, client);
    fedc_program_destroy(step);
    return st;
}

static fedc_status fedsgd_round(const fedc_model *m, const fedc_algorithm *a, fedc_program **out) {
    return fedc__fl_assemble(m, a, build_client, out);
}

const fedc_algorithm_def fedc_algorithm_fedsgd = {
    .name = "fedsgd",
    .summary = "FedSGD: one gradient of each client's data, example-weighted mean, a server optimizer step",
    .one_pass = true,
    .round = fedsgd_round,
};
