/* Evaluation as a federated program: each client runs the model over its
 * batches (a fold summing loss, correct and count over the real examples), and
 * the server sums; the per-client sums are kept for the accuracy distribution. */
#include <string.h>

#include "fl/fl.h"

/* The fold's body: carries params..., loss_sum, correct, count; steps x, y, mask. */
static fedc_status eval_step(const fedc_model *m, int64_t batch, fedc_program **out) {
    fedc_program *p;
    fedc_status st = fedc_program_create(&p);
    if (st) return st;
    int n = fedc_model_num_params(m);
    fedc_value *w = fedc__values(n);
    if (!w) {
        fedc_program_destroy(p);
        return FEDC_ENOMEM;
    }
    for (int i = 0; i < n; i++) w[i] = fedc_input(p, fedc_model_param_name(m, i), fedc_model_param_type(m, i));
    fedc_value loss_sum = fedc_input(p, "loss_sum", fedc_type_scalar(FEDC_F32));
    fedc_value correct = fedc_input(p, "correct", fedc_type_scalar(FEDC_F32));
    fedc_value count = fedc_input(p, "count", fedc_type_scalar(FEDC_F32));
    fedc_value x = fedc_input(p, "x", fedc_model_input_type(m, batch));
    fedc_value y = fedc_input(p, "y", fedc_model_label_type(m, batch));
    fedc_value mask = fedc_input(p, "mask", fedc_type_make(FEDC_F32, 1, &batch));
    fedc_model_outputs o;
    st = fedc_model_apply(m, p, w, x, y, mask, FEDC_NONE, &o);
    for (int i = 0; !st && i < n; i++) st = fedc_program_output(p, fedc_model_param_name(m, i), w[i]);
    if (!st) st = fedc_program_output(p, "loss_sum", fedc_add(p, loss_sum, fedc_mul(p, o.loss, o.count)));
    if (!st) st = fedc_program_output(p, "correct", fedc_add(p, correct, o.correct));
    if (!st) st = fedc_program_output(p, "count", fedc_add(p, count, o.count));
    fedc_free(w);
    if (st) fedc_program_destroy(p);
    else *out = p;
    return st;
}

static fedc_status eval_client(const fedc_model *m, const fedc_program *step, fedc_type xt, fedc_type yt,
                               fedc_program **out) {
    fedc_program *p;
    fedc_status st = fedc_program_create(&p);
    if (st) return st;
    int n = fedc_model_num_params(m), nc = 0;
    fedc_value *carries = fedc__values(2 * n + 6), *res = carries ? carries + n + 3 : NULL;
    if (!carries) {
        fedc_program_destroy(p);
        return FEDC_ENOMEM;
    }
    for (int i = 0; i < n; i++) carries[nc++] = fedc_input(p, fedc_model_param_name(m, i), fedc_model_param_type(m, i));
    fedc_value x = fedc_input(p, "x", xt), y = fedc_input(p, "y", yt);
    fedc_value mask = fedc_input(p, "mask", fedc_type_make(FEDC_F32, 2, yt.dims));
    fedc_value steps = fedc_input(p, "steps", fedc_type_scalar(FEDC_I32));
    for (int k = 0; k < 3; k++) carries[nc++] = fedc_scalar(p, FEDC_F32, 0);
    st = fedc_fold(p, step, carries, nc, (fedc_value[]){x, y, mask}, 3, steps, res);
    if (!st) st = fedc_program_output(p, "loss_sum", res[n]);
    if (!st) st = fedc_program_output(p, "correct", res[n + 1]);
    if (!st) st = fedc_program_output(p, "count", res[n + 2]);
    fedc_free(carries);
    if (st) fedc_program_destroy(p);
    else *out = p;
    return st;
}

fedc_status fedc_evaluation_program(const fedc_model *m, int64_t batch_size, int64_t max_steps, fedc_program **out) {
    *out = NULL;
    int n = fedc_model_num_params(m);
    if (batch_size < 1 || max_steps < 1) return fedc_error(FEDC_EINVAL, "evaluation: batch size and steps must be >= 1");
    if (n > FEDC__FL_MAX_PARAMS) return fedc_error(FEDC_EUNSUPPORTED, "evaluation: too many parameter tensors");
    fedc_type xt = fedc_model_input_type(m, batch_size);
    memmove(xt.dims + 1, xt.dims, sizeof xt.dims - sizeof xt.dims[0]);
    xt.dims[0] = max_steps;
    xt.rank++;
    fedc_type yt = fedc__stacked(fedc_model_label_type(m, batch_size), max_steps);
    fedc_program *p = NULL, *step = NULL, *client = NULL;
    fedc_status st = eval_step(m, batch_size, &step);
    if (!st) st = eval_client(m, step, xt, yt, &client);
    if (!st) st = fedc_program_create(&p);
    fedc_value *args = st ? NULL : fedc__values(n + 4), r[3];
    if (!st && !args) st = FEDC_ENOMEM;
    for (int i = 0; !st && i < n; i++)
        args[i] = fedc_broadcast(p, fedc_input(p, fedc_model_param_name(m, i), fedc__placed(fedc_model_param_type(m, i), FEDC_SERVER)));
    if (!st) {
        args[n] = fedc_input(p, "x", fedc__placed(xt, FEDC_CLIENTS));
        args[n + 1] = fedc_input(p, "y", fedc__placed(yt, FEDC_CLIENTS));
        args[n + 2] = fedc_input(p, "mask", fedc__placed(fedc_type_make(FEDC_F32, 2, yt.dims), FEDC_CLIENTS));
        args[n + 3] = fedc_input(p, "steps", fedc__placed(fedc_type_scalar(FEDC_I32), FEDC_CLIENTS));
        st = fedc_map(p, client, args, n + 4, r);
    }
    const char *names[3] = {"loss_sum", "correct", "count"};
    for (int k = 0; !st && k < 3; k++) {
        char name[32];
        snprintf(name, sizeof name, "client_%s", names[k]);
        st = fedc_program_output(p, names[k], fedc_sum(p, r[k]));
        if (!st) st = fedc_program_output(p, name, r[k]);
    }
    fedc_free(args);
    fedc_program_destroy(step);
    fedc_program_destroy(client);
    if (st) fedc_program_destroy(p);
    else *out = p;
    return st;
}
