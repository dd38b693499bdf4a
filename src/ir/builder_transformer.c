/* Builders of the transformer layers' ops (include/fedc/program.h): GELU, layer
 * normalisation, fused causal attention and their backward ops. The type rules
 * are in infer.c, the kernels in src/kernels/{ref,fast}_transformer.c. */
#include "ir/rule.h"

static fedc_value emit_eps(fedc_program *p, fedc__op op, const fedc_value *in, int nin, double eps) {
    fedc__attr a = fedc__attr_make_float(FEDC_ATTR_EPS, eps);
    return fedc__emit(p, op, in, nin, &a, 1, NULL);
}

static fedc_value emit_heads(fedc_program *p, fedc__op op, const fedc_value *in, int nin, int heads) {
    fedc__attr a = fedc__attr_make_int(FEDC_ATTR_HEADS, heads);
    return fedc__emit(p, op, in, nin, &a, 1, NULL);
}

fedc_value fedc_gelu(fedc_program *p, fedc_value x) { return fedc__emit(p, FEDC_OP_GELU, &x, 1, NULL, 0, NULL); }

fedc_value fedc_gelu_grad(fedc_program *p, fedc_value x, fedc_value dy) {
    return fedc__emit(p, FEDC_OP_GELU_GRAD, (fedc_value[]){x, dy}, 2, NULL, 0, NULL);
}

fedc_value fedc_layer_norm(fedc_program *p, fedc_value x, fedc_value gamma, fedc_value beta, double eps) {
    return emit_eps(p, FEDC_OP_LAYER_NORM, (fedc_value[]){x, gamma, beta}, 3, eps);
}

fedc_value fedc_layer_norm_grad(fedc_program *p, fedc_value x, fedc_value gamma, fedc_value dy, double eps) {
    return emit_eps(p, FEDC_OP_LAYER_NORM_GRAD, (fedc_value[]){x, gamma, dy}, 3, eps);
}

fedc_value fedc_layer_norm_param_grad(fedc_program *p, fedc_value x, fedc_value dy, double eps) {
    return emit_eps(p, FEDC_OP_LAYER_NORM_PARAM_GRAD, (fedc_value[]){x, dy}, 2, eps);
}

fedc_value fedc_causal_attention(fedc_program *p, fedc_value qkv, int heads) {
    return emit_heads(p, FEDC_OP_CAUSAL_ATTENTION, &qkv, 1, heads);
}

fedc_value fedc_causal_attention_grad(fedc_program *p, fedc_value qkv, fedc_value dy, int heads) {
    return emit_heads(p, FEDC_OP_CAUSAL_ATTENTION_GRAD, (fedc_value[]){qkv, dy}, 2, heads);
}

/* -------------------------------------------------------------- type rules -- */

/* The rules of this family's ops (ir/rule.h; infer.c's table reaches them). */

/* Operand i has operand 0's dtype and shape. */
static fedc_status same_as_first(const rule_ctx *c, int i, const char *what) {
    const fedc_type *a = operand(c, 0), *b = operand(c, i);
    if (b->dtype != a->dtype || !fedc_type_same_shape(a, b))
        return fail(c, FEDC_ESHAPE, "%s %s must have the type of operand 0, %s", what, TYPESTR(b), TYPESTR(a));
    return FEDC_OK;
}

fedc_status fedc__infer_GELU(const rule_ctx *c, fedc_type *out) { return floats(c, out); }

fedc_status fedc__infer_GELU_GRAD(const rule_ctx *c, fedc_type *out) {
    fedc_status st = floats(c, out);
    return st ? st : same_as_first(c, 1, "dy");
}

/* x [..., C] with per-feature vectors [C] at `vectors` (gamma, beta), and eps > 0. */
static fedc_status layer_norm_common(const rule_ctx *c, fedc_type *out, const int *vectors, int nvec) {
    const fedc_type *x = operand(c, 0);
    fedc_status st = require_dtype_float(c, 0);
    if (!st) st = same_placement(c, &out->placement);
    if (st) return st;
    if (x->rank < 1) return fail(c, FEDC_ESHAPE, "x must have rank >= 1 (features last), got %s", TYPESTR(x));
    for (int i = 0; i < nvec; i++) {
        const fedc_type *v = operand(c, vectors[i]);
        if (v->dtype != x->dtype || v->rank != 1 || v->dims[0] != x->dims[x->rank - 1])
            return fail(c, FEDC_ESHAPE, "operand %d is %s; it must be %s[%lld], one value per feature of x %s",
                        vectors[i], TYPESTR(v), fedc_dtype_name(x->dtype), (long long)x->dims[x->rank - 1], TYPESTR(x));
    }
    double eps = fedc__attr_float(c->n, FEDC_ATTR_EPS, -1);
    if (!(eps > 0)) return fail(c, FEDC_EINVAL, "eps must be > 0, got %g", eps);
    fedc_placement pl = out->placement;
    *out = *x;
    out->placement = pl;
    return FEDC_OK;
}

fedc_status fedc__infer_LAYER_NORM(const rule_ctx *c, fedc_type *out) {
    return layer_norm_common(c, out, (int[]){1, 2}, 2);
}

fedc_status fedc__infer_LAYER_NORM_GRAD(const rule_ctx *c, fedc_type *out) { /* x, gamma, dy */
    fedc_status st = layer_norm_common(c, out, (int[]){1}, 1);
    return st ? st : same_as_first(c, 2, "dy");
}

fedc_status fedc__infer_LAYER_NORM_PARAM_GRAD(const rule_ctx *c, fedc_type *out) { /* x, dy -> [2, C] */
    fedc_status st = layer_norm_common(c, out, NULL, 0);
    if (!st) st = same_as_first(c, 1, "dy");
    if (st) return st;
    int64_t dims[2] = {2, operand(c, 0)->dims[operand(c, 0)->rank - 1]};
    return set_dims(out, 2, dims);
}

/* qkv [batch, seq, 3 * heads * head_dim]; the output is [batch, seq, heads * head_dim]. */
static fedc_status attention_common(const rule_ctx *c, fedc_type *out) {
    const fedc_type *x = operand(c, 0);
    fedc_status st = require_dtype_float(c, 0);
    if (!st) st = require_rank(c, 0, 3);
    if (!st) st = same_placement(c, &out->placement);
    if (st) return st;
    int64_t heads = fedc__attr_int(c->n, FEDC_ATTR_HEADS, 0);
    if (heads < 1) return fail(c, FEDC_EINVAL, "heads must be >= 1, got %lld", (long long)heads);
    if (x->dims[2] % (3 * heads) || x->dims[2] == 0)
        return fail(c, FEDC_ESHAPE, "qkv %s: the last axis must be 3 * heads * head_dim with heads = %lld",
                    TYPESTR(x), (long long)heads);
    fedc_placement pl = out->placement;
    *out = *x;
    out->placement = pl;
    out->dims[2] = x->dims[2] / 3;
    return FEDC_OK;
}

fedc_status fedc__infer_CAUSAL_ATTENTION(const rule_ctx *c, fedc_type *out) { return attention_common(c, out); }

fedc_status fedc__infer_CAUSAL_ATTENTION_GRAD(const rule_ctx *c, fedc_type *out) { /* qkv, dy -> dqkv */
    fedc_status st = attention_common(c, out);
    if (st) return st;
    const fedc_type *dy = operand(c, 1);
    if (dy->dtype != out->dtype || !fedc_type_same_shape(dy, out))
        return fail(c, FEDC_ESHAPE, "dy is %s but the attention's output is %s", TYPESTR(dy), TYPESTR(out));
    fedc_placement pl = out->placement;
    *out = *operand(c, 0);
    out->placement = pl;
    return FEDC_OK;
}
