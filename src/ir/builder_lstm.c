/* The builders of the recurrent ops (include/fedc/program.h): plain emits, the
 * type rules (src/ir/infer.c) check the shapes. */
#include "ir/rule.h"

fedc_value fedc_lstm(fedc_program *p, fedc_value xw, fedc_value wh) {
    fedc_value in[2] = {xw, wh};
    return fedc__emit(p, FEDC_OP_LSTM, in, 2, NULL, 0, NULL);
}

fedc_value fedc_lstm_grad(fedc_program *p, fedc_value trace, fedc_value dtrace, fedc_value wh) {
    fedc_value in[3] = {trace, dtrace, wh};
    return fedc__emit(p, FEDC_OP_LSTM_GRAD, in, 3, NULL, 0, NULL);
}

fedc_value fedc_lstm_tangent(fedc_program *p, fedc_value trace, fedc_value dxw, fedc_value wh) {
    fedc_value in[3] = {trace, dxw, wh};
    return fedc__emit(p, FEDC_OP_LSTM_TANGENT, in, 3, NULL, 0, NULL);
}

/* -------------------------------------------------------------- type rules -- */

/* The rules of the LSTM ops (ir/rule.h; infer.c's table reaches them). */

/* Operand `i` is [T, B, k * H] of operand 0's dtype, where wh (operand `w`) is
 * [H, 4H]; writes T, B, H. */
static fedc_status lstm_operand(const rule_ctx *c, int i, int w, int k, int64_t *T, int64_t *B, int64_t *H) {
    const fedc_type *x = operand(c, i), *wh = operand(c, w);
    fedc_status st = require_dtype_float(c, i);
    if (!st) st = require_rank(c, i, 3);
    if (!st) st = require_rank(c, w, 2);
    if (st) return st;
    if (wh->dtype != x->dtype || wh->dims[1] != 4 * wh->dims[0])
        return fail(c, FEDC_ESHAPE, "the recurrent weights %s must be [H, 4H] of the dtype of %s", TYPESTR(wh), TYPESTR(x));
    if (x->dims[2] != k * wh->dims[0])
        return fail(c, FEDC_ESHAPE, "operand %d %s must be [steps, batch, %d * %lld] for weights %s", i, TYPESTR(x), k,
                    (long long)wh->dims[0], TYPESTR(wh));
    if (*T >= 0 && (x->dims[0] != *T || x->dims[1] != *B))
        return fail(c, FEDC_ESHAPE, "operand %d %s has other steps or batch than operand 0 %s", i, TYPESTR(x),
                    TYPESTR(operand(c, 0)));
    *T = x->dims[0], *B = x->dims[1], *H = wh->dims[0];
    return FEDC_OK;
}

static fedc_status lstm_result(const rule_ctx *c, int64_t T, int64_t B, int64_t width, fedc_type *out) {
    fedc_status st = same_placement(c, &out->placement);
    if (st) return st;
    out->dtype = operand(c, 0)->dtype;
    return set_dims(out, 3, (int64_t[]){T, B, width});
}

/* lstm(xw [T, B, 4H], wh [H, 4H]) -> trace [T, B, 6H]. */
fedc_status fedc__infer_LSTM(const rule_ctx *c, fedc_type *out) {
    int64_t T = -1, B = -1, H = 0;
    fedc_status st = lstm_operand(c, 0, 1, 4, &T, &B, &H);
    return st ? st : lstm_result(c, T, B, 6 * H, out);
}

/* lstm_grad(trace, dtrace [T, B, 6H], wh) -> dxw [T, B, 4H]. */
fedc_status fedc__infer_LSTM_GRAD(const rule_ctx *c, fedc_type *out) {
    int64_t T = -1, B = -1, H = 0;
    fedc_status st = lstm_operand(c, 0, 2, 6, &T, &B, &H);
    if (!st) st = lstm_operand(c, 1, 2, 6, &T, &B, &H);
    return st ? st : lstm_result(c, T, B, 4 * H, out);
}

/* lstm_tangent(trace [T, B, 6H], dxw [T, B, 4H], wh) -> dtrace [T, B, 6H]. */
fedc_status fedc__infer_LSTM_TANGENT(const rule_ctx *c, fedc_type *out) {
    int64_t T = -1, B = -1, H = 0;
    fedc_status st = lstm_operand(c, 0, 2, 6, &T, &B, &H);
    if (!st) st = lstm_operand(c, 1, 2, 4, &T, &B, &H);
    return st ? st : lstm_result(c, T, B, 6 * H, out);
}
