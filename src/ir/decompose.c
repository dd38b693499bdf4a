/* Composite forms of the transformer layers' ops (decompose.h): the same
 * functions as the fused kernels (src/kernels/ref_transformer.c), in ops that
 * have derivative rules and a lowering to every export target. */
#include "ir/decompose.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define GELU_C 0.7978845608028654
#define GELU_A 0.044715

static fedc_value k(fedc_program *p, fedc_value like, double v) { return fedc_scalar_like(p, like, v); }

/* t = tanh(c (x + a x^3)). */
static fedc_value gelu_t(fedc_program *p, fedc_value x) {
    fedc_value x3 = fedc_mul(p, x, fedc_square(p, x));
    fedc_value c = k(p, x, GELU_C), a = k(p, x, GELU_A);
    fedc_value inner = fedc_add(p, x, fedc_mul(p, a, x3));
    return fedc_tanh(p, fedc_mul(p, c, inner));
}

static fedc_value gelu(fedc_program *p, fedc_value x) {
    fedc_value half_x = fedc_mul(p, k(p, x, 0.5), x);
    fedc_value one = k(p, x, 1);
    return fedc_mul(p, half_x, fedc_add(p, one, gelu_t(p, x)));
}

/* dy (1/2 (1 + t) + 1/2 x (1 - t^2) c (1 + 3 a x^2)). */
static fedc_value gelu_grad(fedc_program *p, fedc_value x, fedc_value dy) {
    fedc_value t = gelu_t(p, x), half = k(p, x, 0.5), one = k(p, x, 1);
    fedc_value c = k(p, x, GELU_C), a3 = k(p, x, 3 * GELU_A);
    fedc_value poly = fedc_mul(p, c, fedc_add(p, one, fedc_mul(p, a3, fedc_square(p, x))));
    fedc_value half_x = fedc_mul(p, half, x);
    fedc_value second = fedc_mul(p, half_x, fedc_mul(p, fedc_sub(p, one, fedc_square(p, t)), poly));
    fedc_value first = fedc_mul(p, half, fedc_add(p, one, t));
    return fedc_mul(p, dy, fedc_add(p, first, second));
}

/* xhat = (x - mean) / sqrt(var + eps) over the last axis, and 1 / sqrt(var + eps). */
static fedc_value normalise(fedc_program *p, fedc_value x, double eps, fedc_value *rstd) {
    int last = -1;
    fedc_value d = fedc_sub(p, x, fedc_reduce_mean(p, x, &last, 1, true));
    fedc_value var = fedc_reduce_mean(p, fedc_square(p, d), &last, 1, true);
    *rstd = fedc_pow(p, fedc_add(p, var, k(p, x, eps)), -0.5);
    return fedc_mul(p, d, *rstd);
}

/* With g = dy gamma: dx = rstd (g - mean(g) - xhat mean(g xhat)). */
static fedc_value layer_norm_grad(fedc_program *p, fedc_value x, fedc_value gamma, fedc_value dy, double eps) {
    int last = -1;
    fedc_value rstd, xhat = normalise(p, x, eps, &rstd), g = fedc_mul(p, dy, gamma);
    fedc_value mg = fedc_reduce_mean(p, g, &last, 1, true);
    fedc_value mgx = fedc_reduce_mean(p, fedc_mul(p, g, xhat), &last, 1, true);
    fedc_value centred = fedc_sub(p, g, mg);
    return fedc_mul(p, rstd, fedc_sub(p, centred, fedc_mul(p, xhat, mgx)));
}

/* [sum over rows of dy xhat; sum over rows of dy] as [2, C]. */
static fedc_value layer_norm_param_grad(fedc_program *p, fedc_value x, fedc_value dy, double eps) {
    fedc_type t = fedc_value_type(p, x);
    int axes[FEDC_MAX_RANK];
    for (int i = 0; i < t.rank - 1; i++) axes[i] = i;
    fedc_value rstd, xhat = normalise(p, x, eps, &rstd);
    int64_t row[2] = {1, t.dims[t.rank - 1]};
    fedc_value dg = fedc_reshape(p, fedc_reduce_sum(p, fedc_mul(p, dy, xhat), axes, t.rank - 1, false), 2, row);
    fedc_value db = fedc_reshape(p, fedc_reduce_sum(p, dy, axes, t.rank - 1, false), 2, row);
    return fedc_concat(p, (fedc_value[]){dg, db}, 2, 0);
}

/* ------------------------------------------------------------- attention -- */

typedef struct attn {
    int64_t b, t, h, d;
    fedc_value q, k, v, probs; /* [b, h, t, d] and [b, h, t, t] */
} attn;

/* Splits qkv [b, t, 3 h d] into q, k, v [b, h, t, d] and computes the causal
 * softmax weights. */
static attn attention_probs(fedc_program *p, fedc_value qkv, int64_t heads) {
    fedc_type ty = fedc_value_type(p, qkv);
    attn a = {ty.dims[0], ty.dims[1], heads, ty.dims[2] / (3 * heads), 0, 0, 0, 0};
    fedc_value split = fedc_transpose(p, fedc_reshape(p, qkv, 5, (int64_t[]){a.b, a.t, 3, a.h, a.d}),
                                      (int[]){2, 0, 3, 1, 4});
    fedc_value part[3];
    for (int w = 0; w < 3; w++) {
        int64_t start[5] = {w, 0, 0, 0, 0}, limit[5] = {w + 1, a.b, a.h, a.t, a.d};
        part[w] = fedc_reshape(p, fedc_slice(p, split, start, limit), 4, (int64_t[]){a.b, a.h, a.t, a.d});
    }
    a.q = part[0], a.k = part[1], a.v = part[2];
    fedc_value qk = fedc_matmul(p, a.q, a.k, false, true);
    fedc_value s = fedc_mul(p, qk, k(p, qkv, 1.0 / sqrt((double)a.d)));
    uint8_t *mask = malloc((size_t)(a.t * a.t) + 1);
    if (!mask) return (attn){0, 0, 0, 0, FEDC_NONE, FEDC_NONE, FEDC_NONE, FEDC_NONE};
    for (int64_t i = 0; i < a.t; i++)
        for (int64_t j = 0; j < a.t; j++) mask[i * a.t + j] = j <= i;
    fedc_value m = fedc_constant(p, fedc_type_make(FEDC_BOOL, 2, (int64_t[]){a.t, a.t}), mask);
    free(mask);
    a.probs = fedc_exp(p, fedc_log_softmax(p, fedc_select(p, m, s, k(p, qkv, -1e30))));
    return a;
}

/* [b, h, t, d] parts -> [b, t, parts * h * d], the layout of qkv (parts = 3) or
 * of the output (parts = 1). */
static fedc_value pack(fedc_program *p, const attn *a, const fedc_value *parts, int n) {
    fedc_value stack[3];
    for (int w = 0; w < n; w++) stack[w] = fedc_reshape(p, parts[w], 5, (int64_t[]){1, a->b, a->h, a->t, a->d});
    fedc_value all = n == 1 ? stack[0] : fedc_concat(p, stack, n, 0);
    fedc_value moved = fedc_transpose(p, all, (int[]){1, 3, 0, 2, 4}); /* [b, t, parts, h, d] */
    return fedc_reshape(p, moved, 3, (int64_t[]){a->b, a->t, n * a->h * a->d});
}

static fedc_value causal_attention(fedc_program *p, fedc_value qkv, int64_t heads) {
    attn a = attention_probs(p, qkv, heads);
    fedc_value o = fedc_matmul(p, a.probs, a.v, false, false);
    return pack(p, &a, &o, 1);
}

static fedc_value causal_attention_grad(fedc_program *p, fedc_value qkv, fedc_value dy, int64_t heads) {
    attn a = attention_probs(p, qkv, heads);
    int last = -1;
    fedc_value dout = fedc_transpose(p, fedc_reshape(p, dy, 4, (int64_t[]){a.b, a.t, a.h, a.d}), (int[]){0, 2, 1, 3});
    fedc_value dp = fedc_matmul(p, dout, a.v, false, true);
    fedc_value rowdot = fedc_reduce_sum(p, fedc_mul(p, a.probs, dp), &last, 1, true);
    fedc_value dprobs = fedc_mul(p, a.probs, fedc_sub(p, dp, rowdot));
    fedc_value ds = fedc_mul(p, dprobs, k(p, qkv, 1.0 / sqrt((double)a.d)));
    fedc_value grads[3];
    grads[0] = fedc_matmul(p, ds, a.k, false, false);
    grads[1] = fedc_matmul(p, ds, a.q, true, false);
    grads[2] = fedc_matmul(p, a.probs, dout, true, false);
    return pack(p, &a, grads, 3);
}

fedc_value fedc__composite(fedc_program *p, const fedc__node *n, const fedc_value *args) {
    double eps = fedc__attr_float(n, FEDC_ATTR_EPS, 0);
    int64_t heads = fedc__attr_int(n, FEDC_ATTR_HEADS, 1);
    fedc_value rstd;
    switch (n->op) {
    case FEDC_OP_GELU: return gelu(p, args[0]);
    case FEDC_OP_GELU_GRAD: return gelu_grad(p, args[0], args[1]);
    case FEDC_OP_LAYER_NORM:
        return fedc_add(p, fedc_mul(p, normalise(p, args[0], eps, &rstd), args[1]), args[2]);
    case FEDC_OP_LAYER_NORM_GRAD: return layer_norm_grad(p, args[0], args[1], args[2], eps);
    case FEDC_OP_LAYER_NORM_PARAM_GRAD: return layer_norm_param_grad(p, args[0], args[1], eps);
    case FEDC_OP_CAUSAL_ATTENTION: return causal_attention(p, args[0], heads);
    case FEDC_OP_CAUSAL_ATTENTION_GRAD: return causal_attention_grad(p, args[0], args[1], heads);
    default: break;
    }
    fedc_error(FEDC_EINTERNAL, "composite: op %s has no composite form", fedc__ops[n->op].name);
    return fedc__program_fail(p, FEDC_EINTERNAL);
}

bool fedc__op_is_composite(fedc__op op) {
    switch (op) {
    case FEDC_OP_GELU:
    case FEDC_OP_GELU_GRAD:
    case FEDC_OP_LAYER_NORM:
    case FEDC_OP_LAYER_NORM_GRAD:
    case FEDC_OP_LAYER_NORM_PARAM_GRAD:
    case FEDC_OP_CAUSAL_ATTENTION:
    case FEDC_OP_CAUSAL_ATTENTION_GRAD: return true;
    default: return false;
    }
}

fedc_status fedc__decompose(const fedc_program *src, fedc_program **out) {
    return fedc__program_rewrite(src, fedc__op_is_composite, fedc__composite, out);
}
