/* Causal self-attention on packed qkv [B, T, 3 H D], as fedc computes it: for each
 * batch b, head h and position i, p_j = softmax_j(q_i . k_j / sqrt(D)) over
 * j <= i and y_i = sum_j p_j v_j; its gradient with dp_j = dy_i . v_j and
 * ds_j = p_j (dp_j - sum_l p_l dp_l) / sqrt(D) is dq_i = sum_j ds_j k_j,
 * dk_j = sum_i ds_j q_i, dv_j = sum_i p_j dy_i. qkv is read as [B, T, 3, H, D]
 * (a reshape), so every pass is a linalg.generic with plain maps; the scores and
 * weights are [B, H, T, T] tensors, 0 above the diagonal. */
#include <math.h>
#include <string.h>

#include "export/mlir_lower.h"

typedef struct attn {
    int64_t b, t, h, d;
    bool c; /* the clients loop, first */
    fedc_dtype dt;
    const char *elem;
    double scale;
    char qkv[24], qkv_type[160]; /* qkv as [c?, B, T, 3, H, D] */
    char p[24], p_type[160];     /* the weights [c?, B, H, T, T] */
    char row_type[160];          /* [c?, B, H, T] */
    char y4_type[160];           /* [c?, B, T, H, D] */
} attn;

/* A tensor type of the given dims after the clients axis. */
static void dims_type(const lower *l, const attn *a, int rank, const int64_t *dims, char *out) {
    fedc_type t = fedc_type_make(a->dt, rank, dims);
    fedc__mlir_tensor(l->m, &t, a->c, out, 160);
}

/* `out = tensor.reshape x(shape)` to `rank` dims (after the clients axis). */
static void reshape(const lower *l, const attn *a, const char *x, const char *from, int rank, const int64_t *dims,
                    const char *to, const char *out) {
    char shape[24], lit[160], stype[32];
    size_t n = (size_t)snprintf(lit, sizeof lit, "[");
    if (a->c) n += (size_t)snprintf(lit + n, sizeof lit - n, "%d, ", l->m->clients);
    for (int i = 0; i < rank; i++) n += (size_t)snprintf(lit + n, sizeof lit - n, "%s%lld", i ? ", " : "", (long long)dims[i]);
    snprintf(lit + n, sizeof lit - n, "]");
    snprintf(stype, sizeof stype, "tensor<%dxi64>", rank + a->c);
    fedc__mlir_tensor_const(l->m, shape, lit, stype);
    fedc__mlir_printf(l->m, "    %s = tensor.reshape %s(%s) : (%s, %s) -> %s\n", out, x, shape, from, stype, to);
}

static void attn_init(const lower *l, attn *a) {
    fedc_value x = l->n->in[0];
    const fedc_type *t = type_of(l, x);
    int64_t heads = fedc__attr_int(l->n, FEDC_ATTR_HEADS, 1);
    *a = (attn){.b = t->dims[0], .t = t->dims[1], .h = heads, .d = t->dims[2] / 3 / heads, .c = clients(l, x),
                .dt = t->dtype, .elem = fedc__mlir_elem(t->dtype)};
    a->scale = 1.0 / sqrt((double)a->d);
    char from[160];
    dims_type(l, a, 5, (int64_t[]){a->b, a->t, 3, a->h, a->d}, a->qkv_type);
    reshape(l, a, name(l, x), fedc__mlir_type_of(l->m, l->s, x, from, sizeof from), 5,
            (int64_t[]){a->b, a->t, 3, a->h, a->d}, a->qkv_type, fedc__mlir_tmp(l->m, a->qkv));
    dims_type(l, a, 4, (int64_t[]){a->b, a->h, a->t, a->t}, a->p_type);
    dims_type(l, a, 3, (int64_t[]){a->b, a->h, a->t}, a->row_type);
    dims_type(l, a, 4, (int64_t[]){a->b, a->t, a->h, a->d}, a->y4_type);
}

/* A generic over `loops` loops named by `letters` (one per loop after the clients
 * loop: b, h, i, j, d), reading operands through maps written in those letters
 * ("b i 0 h d"); 'r' in iters marks a reduction. */
typedef struct agen {
    fedc__mlir_generic g;
    char iters[16], maps[8][160], out_map[160], init[24];
} agen;

static void letters_map(const attn *a, const char *letters, const char *spec, char *out) {
    out[0] = 0;
    if (a->c) add_loop(out, 160, 0);
    for (const char *s = spec; *s; s++) {
        if (*s == ' ') continue;
        const char *at = strchr(letters, *s);
        char e[8] = {*s, 0};
        if (at) add_loop(out, 160, a->c + (int)(at - letters));
        else add_expr(out, 160, e); /* a constant: 0, 1 or 2 */
    }
}

static void agen_begin(const lower *l, const attn *a, agen *ag, const char *letters, const char *iters, int nin,
                       const char *const *names, const char *const *types, const char *const *specs,
                       const char *out_spec, const char *out_type, const char *result, double init) {
    int loops = (int)strlen(letters) + a->c;
    snprintf(ag->iters, sizeof ag->iters, "%s%s", a->c ? "p" : "", iters);
    letters_map(a, letters, out_spec, ag->out_map);
    char lit[32];
    fedc__mlir_tensor_const(l->m, ag->init, fedc__mlir_literal(a->dt, init, lit, sizeof lit), out_type);
    ag->g = (fedc__mlir_generic){.rank = loops, .iters = ag->iters, .nin = nin, .out_map = ag->out_map,
                                 .out_type = out_type, .out_elem = a->elem, .init = ag->init, .result_name = result};
    for (int i = 0; i < nin; i++) {
        letters_map(a, letters, specs[i], ag->maps[i]);
        ag->g.in[i] = names[i], ag->g.in_type[i] = types[i], ag->g.in_elem[i] = a->elem, ag->g.maps[i] = ag->maps[i];
    }
    fedc__mlir_generic_begin(l->m, &ag->g);
}

/* j <= i in the body of loops "bhij..." (i and j at positions 2 and 3). */
static const char *causal(const lower *l, const attn *a, char *out) {
    char i[24], j[24];
    fedc__mlir_tmp(l->m, i), fedc__mlir_tmp(l->m, j);
    fedc__mlir_printf(l->m, "      %s = linalg.index %d : index\n      %s = linalg.index %d : index\n", i, a->c + 2, j,
                      a->c + 3);
    fedc__mlir_tmp(l->m, out);
    fedc__mlir_printf(l->m, "      %s = arith.cmpi ule, %s, %s : index\n", out, j, i);
    return out;
}

/* The weights P[b, h, i, j]: scores, their masked row max, the sums of exp, then P. */
static void weights(const lower *l, attn *a) {
    agen ag;
    char s[24], m[24], z[24], r[24], sc[24], k[24], e[24], d[24], ninf[24], zero[24], msk[24], sel[24];
    const char *q2[2] = {a->qkv, a->qkv}, *t2[2] = {a->qkv_type, a->qkv_type};
    agen_begin(l, a, &ag, "bhijd", "ppppr", 2, q2, t2, (const char *[]){"b i 0 h d", "b j 1 h d"}, "b h i j", a->p_type,
               fedc__mlir_tmp(l->m, s), 0);
    emit2(l, "arith.addf", "%out", emit2(l, "arith.mulf", "%in0", "%in1", a->elem, r), a->elem, e);
    fedc__mlir_generic_end(l->m, &ag.g, e);
    /* m[b, h, i] = max over j <= i of s * scale */
    agen_begin(l, a, &ag, "bhij", "pppr", 1, (const char *[]){s}, (const char *[]){a->p_type}, (const char *[]){"b h i j"},
               "b h i", a->row_type, fedc__mlir_tmp(l->m, m), -INFINITY);
    emit2(l, "arith.mulf", "%in0", constant(l, a->scale, a->dt, k), a->elem, sc);
    causal(l, a, msk);
    fedc__mlir_tmp(l->m, sel);
    fedc__mlir_printf(l->m, "      %s = arith.select %s, %s, %s : %s\n", sel, msk, sc, constant(l, -INFINITY, a->dt, ninf), a->elem);
    fedc__mlir_generic_end(l->m, &ag.g, emit2(l, "arith.maximumf", "%out", sel, a->elem, r));
    /* z[b, h, i] = sum over j <= i of exp(s * scale - m); then P = exp(...) / z, 0 above the diagonal */
    for (int pass = 0; pass < 2; pass++) {
        const char *names[3] = {s, m, z}, *types[3] = {a->p_type, a->row_type, a->row_type};
        agen_begin(l, a, &ag, "bhij", pass ? "pppp" : "pppr", 2 + pass, names, types,
                   (const char *[]){"b h i j", "b h i", "b h i"}, pass ? "b h i j" : "b h i", pass ? a->p_type : a->row_type,
                   pass ? fedc__mlir_tmp(l->m, a->p) : fedc__mlir_tmp(l->m, z), 0);
        emit2(l, "arith.mulf", "%in0", constant(l, a->scale, a->dt, k), a->elem, sc);
        emit1(l, "math.exp", emit2(l, "arith.subf", sc, "%in1", a->elem, d), a->elem, e);
        causal(l, a, msk);
        if (pass) emit2(l, "arith.divf", e, "%in2", a->elem, r);
        fedc__mlir_tmp(l->m, sel);
        fedc__mlir_printf(l->m, "      %s = arith.select %s, %s, %s : %s\n", sel, msk, pass ? r : e,
                          constant(l, 0, a->dt, zero), a->elem);
        fedc__mlir_generic_end(l->m, &ag.g, pass ? sel : emit2(l, "arith.addf", "%out", sel, a->elem, r));
    }
}

/* out4[b, x, h, d] = sum over `sum` of w[...] * qkv[...] (or another operand). */
static void weighted_sum(const lower *l, const attn *a, const char *letters, const char *iters, const char *w,
                         const char *w_type, const char *w_spec, const char *x, const char *x_type, const char *x_spec,
                         const char *out_spec, const char *result) {
    agen ag;
    char p[24], r[24];
    agen_begin(l, a, &ag, letters, iters, 2, (const char *[]){w, x}, (const char *[]){w_type, x_type},
               (const char *[]){w_spec, x_spec}, out_spec, a->y4_type, result, 0);
    fedc__mlir_generic_end(l->m, &ag.g, emit2(l, "arith.addf", "%out", emit2(l, "arith.mulf", "%in0", "%in1", a->elem, p),
                                              a->elem, r));
}

fedc_status fedc__lower_causal_attention(const lower *l) {
    attn a;
    attn_init(l, &a);
    weights(l, &a);
    char y4[24], out_type[160];
    weighted_sum(l, &a, "bihdj", "ppppr", a.p, a.p_type, "b h i j", a.qkv, a.qkv_type, "b j 2 h d", "b i h d",
                 fedc__mlir_tmp(l->m, y4));
    reshape(l, &a, y4, a.y4_type, 3, (int64_t[]){a.b, a.t, a.h * a.d}, fedc__mlir_type_of(l->m, l->s, l->v, out_type, sizeof out_type),
            name(l, l->v));
    return l->m->st;
}

fedc_status fedc__lower_causal_attention_grad(const lower *l) {
    attn a;
    attn_init(l, &a);
    weights(l, &a);
    fedc_value dy = l->n->in[1];
    char dy4[24], from[160], dp[24], dot[24], ds[24], r[24], p[24], k[24], e[24], f[24];
    reshape(l, &a, name(l, dy), fedc__mlir_type_of(l->m, l->s, dy, from, sizeof from), 4,
            (int64_t[]){a.b, a.t, a.h, a.d}, a.y4_type, fedc__mlir_tmp(l->m, dy4));
    agen ag;
    /* dp[b, h, i, j] = dy_i . v_j */
    agen_begin(l, &a, &ag, "bhijd", "ppppr", 2, (const char *[]){dy4, a.qkv}, (const char *[]){a.y4_type, a.qkv_type},
               (const char *[]){"b i h d", "b j 2 h d"}, "b h i j", a.p_type, fedc__mlir_tmp(l->m, dp), 0);
    fedc__mlir_generic_end(l->m, &ag.g, emit2(l, "arith.addf", "%out", emit2(l, "arith.mulf", "%in0", "%in1", a.elem, p),
                                              a.elem, r));
    /* dot[b, h, i] = sum_j p_j dp_j */
    agen_begin(l, &a, &ag, "bhij", "pppr", 2, (const char *[]){a.p, dp}, (const char *[]){a.p_type, a.p_type},
               (const char *[]){"b h i j", "b h i j"}, "b h i", a.row_type, fedc__mlir_tmp(l->m, dot), 0);
    fedc__mlir_generic_end(l->m, &ag.g, emit2(l, "arith.addf", "%out", emit2(l, "arith.mulf", "%in0", "%in1", a.elem, p),
                                              a.elem, r));
    /* ds = p (dp - dot) scale */
    agen_begin(l, &a, &ag, "bhij", "pppp", 3, (const char *[]){a.p, dp, dot},
               (const char *[]){a.p_type, a.p_type, a.row_type}, (const char *[]){"b h i j", "b h i j", "b h i"}, "b h i j",
               a.p_type, fedc__mlir_tmp(l->m, ds), 0);
    emit2(l, "arith.subf", "%in1", "%in2", a.elem, e);
    emit2(l, "arith.mulf", "%in0", e, a.elem, f);
    emit2(l, "arith.mulf", f, constant(l, a.scale, a.dt, k), a.elem, r);
    fedc__mlir_generic_end(l->m, &ag.g, r);
    /* dq, dk, dv, each [b, t, h, d], stacked as [b, t, 3, h, d] */
    char part[3][24], stack[24], next[24], out_type[160], lead[16] = "";
    weighted_sum(l, &a, "bihdj", "ppppr", ds, a.p_type, "b h i j", a.qkv, a.qkv_type, "b j 1 h d", "b i h d",
                 fedc__mlir_tmp(l->m, part[0]));
    weighted_sum(l, &a, "bjhdi", "ppppr", ds, a.p_type, "b h i j", a.qkv, a.qkv_type, "b i 0 h d", "b j h d",
                 fedc__mlir_tmp(l->m, part[1]));
    weighted_sum(l, &a, "bjhdi", "ppppr", a.p, a.p_type, "b h i j", dy4, a.y4_type, "b i h d", "b j h d",
                 fedc__mlir_tmp(l->m, part[2]));
    char lit[32];
    fedc__mlir_tensor_const(l->m, stack, fedc__mlir_literal(a.dt, 0, lit, sizeof lit), a.qkv_type);
    if (a.c) snprintf(lead, sizeof lead, "%d, ", l->m->clients);
    for (int w = 0; w < 3; w++) {
        fedc__mlir_tmp(l->m, next);
        fedc__mlir_printf(l->m, "    %s = tensor.insert_slice %s into %s[%s0, 0, %d, 0, 0] [%s%lld, %lld, 1, %lld, %lld] "
                          "[%s1, 1, 1, 1, 1] : %s into %s\n", next, part[w], stack, a.c ? "0, " : "", w, lead,
                          (long long)a.b, (long long)a.t, (long long)a.h, (long long)a.d, a.c ? "1, " : "", a.y4_type,
                          a.qkv_type);
        snprintf(stack, sizeof stack, "%s", next);
    }
    reshape(l, &a, stack, a.qkv_type, 3, (int64_t[]){a.b, a.t, 3 * a.h * a.d},
            fedc__mlir_type_of(l->m, l->s, l->v, out_type, sizeof out_type), name(l, l->v));
    return l->m->st;
}
