/* Dropout and the random ops in StableHLO with fedc's own randomness, as
 * mlir_random.c writes them element by element, here on whole tensors of the
 * result's shape: block b of the stream named by the key [k0, k1, c2, c3] is
 * Philox4x32-10 on the counter [b lo, b hi, c2, c3] and key [k0, k1] (its ten
 * rounds written out by philox.c, the products in ui64). Element i (row-major, per client):
 *  - dropout keeps x[i] when the f32 uniform i (word i % 4 of block i / 4, its
 *    top 24 bits times 2^-24) is >= rate, scaling by 1 / (1 - rate) in double;
 *  - random_uniform is that uniform (f64: words 2 (i % 2), 2 (i % 2) + 1 of
 *    block i / 2, 53 bits times 2^-53): fedc's bits, exactly;
 *  - random_normal is Box-Muller on the f64 uniforms of block i in double:
 *    the uniforms are fedc's bits, the variates within the backend's rounding
 *    of log and cosine (fedc's are libm's). */
#include <string.h>

#include "export/philox.h"
#include "export/stablehlo.h"

typedef struct rng {
    fedc__words words; /* Philox's word operations (philox.h), on ui32/ui64 tensors of x's shape */
    const lower *l;
    char u32[160], u64[160]; /* x's shape in ui32 and ui64 */
} rng;

static const char *splat_u(const rng *r, uint64_t v, bool wide, char *out) {
    const char *t = wide ? r->u64 : r->u32;
    fedc__mlir_tmp(r->l->m, out);
    fedc__mlir_printf(r->l->m, "    %s = \"stablehlo.constant\"() {value = dense<%llu> : %s} : () -> %s\n", out,
                      (unsigned long long)v, t, t);
    return out;
}

static const char *bin(const rng *r, const char *op, const char *a, const char *b, bool wide, char *out) {
    const char *t = wide ? r->u64 : r->u32;
    op2(r->l, fedc__mlir_tmp(r->l->m, out), op, "", a, b, t, t);
    return out;
}

static const char *convert(const rng *r, const char *x, bool from_wide, char *out) {
    op1(r->l, fedc__mlir_tmp(r->l->m, out), "stablehlo.convert", "", x, from_wide ? r->u64 : r->u32,
        from_wide ? r->u32 : r->u64);
    return out;
}

static const char *word_constant(const fedc__words *w, uint64_t v, bool wide, char *out) {
    return splat_u((const rng *)w, v, wide, out);
}
static const char *word_binary(const fedc__words *w, fedc__word_op op, const char *a, const char *b, bool wide, char *out) {
    static const char *const spelled[] = {[FEDC__WORD_ADD] = "stablehlo.add", [FEDC__WORD_MUL] = "stablehlo.multiply",
                                          [FEDC__WORD_XOR] = "stablehlo.xor",
                                          [FEDC__WORD_SHR] = "stablehlo.shift_right_logical"};
    return bin((const rng *)w, spelled[op], a, b, wide, out);
}
static const char *word_convert(const fedc__words *w, const char *x, bool from_wide, char *out) {
    return convert((const rng *)w, x, from_wide, out);
}

/* Every element's flat position within its client's x, in ui64. */
static const char *flat_index(const rng *r, const fedc_type *t, int c, char *out) {
    char acc[24] = "", io[24], k[24], m[24], a[24], attr[64];
    int64_t stride = 1;
    for (int d = t->rank - 1; d >= 0; stride *= t->dims[d], d--) {
        snprintf(attr, sizeof attr, "iota_dimension = %d : i64", c + d);
        fedc__shlo_op(r->l->m, fedc__mlir_tmp(r->l->m, io), "stablehlo.iota", attr, 0, NULL, NULL, r->u64);
        bin(r, "stablehlo.multiply", io, splat_u(r, (uint64_t)stride, true, k), true, m);
        if (acc[0]) snprintf(acc, sizeof acc, "%s", bin(r, "stablehlo.add", acc, m, true, a));
        else snprintf(acc, sizeof acc, "%s", m);
    }
    if (!acc[0]) splat_u(r, 0, true, acc);
    snprintf(out, 24, "%s", acc);
    return out;
}

/* Word w of the key, as ui32 spread over x's shape. */
static const char *key_word(const rng *r, fedc_value key, int w, char *out) {
    const lower *l = r->l;
    int c = lead(l, key);
    char kt[160], st[64], wt[64], bt[64], s[24], q[24], b[24], attr[600], lo[160], hi[160], one[160];
    int64_t start[2] = {0, w}, limit[2] = {l->m->clients, w + 1}, step[2] = {1, 1};
    type_str(l, key, kt);
    snprintf(st, sizeof st, c ? "tensor<%dx1xi32>" : "tensor<1xi32>", l->m->clients);
    snprintf(wt, sizeof wt, c ? "tensor<%dxi32>" : "tensor<i32>", l->m->clients);
    snprintf(bt, sizeof bt, c ? "tensor<%dxui32>" : "tensor<ui32>", l->m->clients);
    snprintf(attr, sizeof attr, "start_indices = %s, limit_indices = %s, strides = %s", i64s(start + 1 - c, 1 + c, lo),
             i64s(limit + 1 - c, 1 + c, hi), i64s(step, 1 + c, one));
    op1(l, fedc__mlir_tmp(l->m, s), "stablehlo.slice", attr, name(l, key), kt, st);
    op1(l, fedc__mlir_tmp(l->m, q), "stablehlo.reshape", "", s, st, wt);
    op1(l, fedc__mlir_tmp(l->m, b), "stablehlo.bitcast_convert", "", q, wt, bt);
    snprintf(attr, sizeof attr, "broadcast_dimensions = array<i64%s>", c ? ": 0" : "");
    op1(l, fedc__mlir_tmp(l->m, out), "stablehlo.broadcast_in_dim", attr, b, bt, r->u32);
    return out;
}

/* out = (wi == k) ? a : b, wi the word index (ui64). */
static const char *pick(const rng *r, const char *wi, uint64_t k, const char *a, const char *b, char *out) {
    const lower *l = r->l;
    fedc_type bt = *type_of(l, l->v);
    bt.dtype = FEDC_BOOL;
    char bts[160], kk[24], eq[24];
    fedc__mlir_tensor(l->m, &bt, lead(l, l->v), bts, sizeof bts);
    splat_u(r, k, true, kk);
    fedc__mlir_tmp(l->m, eq);
    fedc__mlir_printf(l->m, "    %s = \"stablehlo.compare\"(%s, %s) {comparison_direction = #stablehlo<comparison_direction EQ>, "
                      "compare_type = #stablehlo<comparison_type UNSIGNED>} : (%s, %s) -> %s\n", eq, wi, kk, r->u64, r->u64,
                      bts);
    fedc__shlo_op(l->m, fedc__mlir_tmp(l->m, out), "stablehlo.select", "", 3, (const char *[]){eq, a, b},
                  (const char *[]){bts, r->u32, r->u32}, r->u32);
    return out;
}

/* The types of the result's shape in ui32 and ui64. */
static void rng_init(const lower *l, rng *r) {
    fedc_type u = *type_of(l, l->v);
    u.dtype = FEDC_I32; /* the shape; the element types are written below */
    char shape[160];
    *r = (rng){.words = {word_constant, word_binary, word_convert}, .l = l};
    fedc__mlir_tensor(l->m, &u, lead(l, l->v), shape, sizeof shape);
    shape[strlen(shape) - 4] = 0; /* drop "i32>" */
    snprintf(r->u32, sizeof r->u32, "%.150sui32>", shape), snprintf(r->u64, sizeof r->u64, "%.150sui64>", shape);
}

/* Block blk (ui64, per element) of the key's stream: its four words into w. */
static void block(const rng *r, fedc_value key, const char *blk, char w[4][24]) {
    char k32[24], hi[24], k0[24], k1[24];
    convert(r, blk, true, w[0]);
    convert(r, bin(r, "stablehlo.shift_right_logical", blk, splat_u(r, 32, true, k32), true, hi), true, w[1]);
    key_word(r, key, 2, w[2]), key_word(r, key, 3, w[3]);
    key_word(r, key, 0, k0), key_word(r, key, 1, k1);
    fedc__philox(&r->words, w, k0, k1);
}

/* The f32 uniform of every element i: word i % 4 of block i / 4, its top 24
 * bits times 2^-24 (exact); an f32 tensor named out, its type into ft. */
static const char *uniform_f32(const rng *r, fedc_value key, const char *i, char *ft, const char *out) {
    const lower *l = r->l;
    char two[24], three[24], blk[24], wi[24], w[4][24], s1[24], s2[24], word[24], e8[24], top[24], uf[24], sc[24];
    bin(r, "stablehlo.shift_right_logical", i, splat_u(r, 2, true, two), true, blk);
    bin(r, "stablehlo.and", i, splat_u(r, 3, true, three), true, wi);
    block(r, key, blk, w);
    pick(r, wi, 3, w[3], pick(r, wi, 2, w[2], pick(r, wi, 1, w[1], w[0], s1), s2), word);
    bin(r, "stablehlo.shift_right_logical", word, splat_u(r, 8, false, e8), false, top);
    fedc_type f = *type_of(l, l->v);
    f.dtype = FEDC_F32;
    fedc__mlir_tensor(l->m, &f, lead(l, l->v), ft, 160);
    op1(l, fedc__mlir_tmp(l->m, uf), "stablehlo.convert", "", top, r->u32, ft);
    fedc__shlo_splat(l->m, FEDC_F32, 0x1p-24, ft, sc);
    op2(l, out, "stablehlo.multiply", "", uf, sc, ft, ft);
    return out;
}

/* ((a << 21) | (b >> 11)) * 2^-53 of two word tensors (exact), in f64 (type dt),
 * named out. */
static const char *uniform_f64_of(const rng *r, const char *a, const char *b, const char *dt, const char *out) {
    char a64[24], b64[24], s21[24], s11[24], hi[24], lo[24], bits[24], u[24], sc[24];
    convert(r, a, false, a64), convert(r, b, false, b64);
    bin(r, "stablehlo.shift_left", a64, splat_u(r, 21, true, s21), true, hi);
    bin(r, "stablehlo.shift_right_logical", b64, splat_u(r, 11, true, s11), true, lo);
    bin(r, "stablehlo.or", hi, lo, true, bits);
    op1(r->l, fedc__mlir_tmp(r->l->m, u), "stablehlo.convert", "", bits, r->u64, dt);
    fedc__shlo_splat(r->l->m, FEDC_F64, 0x1p-53, dt, sc);
    op2(r->l, out, "stablehlo.multiply", "", u, sc, dt, dt);
    return out;
}

/* The result's shape in f64, into dt (of 160). */
static const char *f64_type(const lower *l, char *dt) {
    fedc_type d = *type_of(l, l->v);
    d.dtype = FEDC_F64;
    return fedc__mlir_tensor(l->m, &d, lead(l, l->v), dt, 160);
}

fedc_status fedc__shlo_random_uniform(const lower *l) {
    fedc_value key = l->n->in[0];
    const fedc_type *t = type_of(l, l->v);
    rng r;
    rng_init(l, &r);
    char i[24], ft[160];
    flat_index(&r, t, lead(l, l->v), i);
    if (t->dtype == FEDC_F32) {
        uniform_f32(&r, key, i, ft, out_name(l));
        return l->m->st;
    }
    char one[24], blk[24], odd[24], w[4][24], a[24], b[24], dt[160];
    bin(&r, "stablehlo.shift_right_logical", i, splat_u(&r, 1, true, one), true, blk);
    bin(&r, "stablehlo.and", i, one, true, odd);
    block(&r, key, blk, w);
    pick(&r, odd, 1, w[2], w[0], a), pick(&r, odd, 1, w[3], w[1], b);
    uniform_f64_of(&r, a, b, f64_type(l, dt), out_name(l));
    return l->m->st;
}

fedc_status fedc__shlo_random_normal(const lower *l) {
    fedc_value key = l->n->in[0];
    const fedc_type *t = type_of(l, l->v);
    rng r;
    rng_init(l, &r);
    char i[24], w[4][24], dt[160], u1[24], u2[24], one[24], q[24], lg[24], m2[24], p[24], rr[24], tp[24], a[24], c[24];
    flat_index(&r, t, lead(l, l->v), i);
    block(&r, key, i, w);
    f64_type(l, dt);
    uniform_f64_of(&r, w[0], w[1], dt, fedc__mlir_tmp(l->m, u1)), uniform_f64_of(&r, w[2], w[3], dt, fedc__mlir_tmp(l->m, u2));
    fedc__shlo_splat(l->m, FEDC_F64, 1.0, dt, one);
    op2(l, fedc__mlir_tmp(l->m, q), "stablehlo.subtract", "", one, u1, dt, dt);
    op1(l, fedc__mlir_tmp(l->m, lg), "stablehlo.log", "", q, dt, dt);
    fedc__shlo_splat(l->m, FEDC_F64, -2.0, dt, m2);
    op2(l, fedc__mlir_tmp(l->m, p), "stablehlo.multiply", "", m2, lg, dt, dt);
    op1(l, fedc__mlir_tmp(l->m, rr), "stablehlo.sqrt", "", p, dt, dt);
    fedc__shlo_splat(l->m, FEDC_F64, 6.283185307179586476925286766559, dt, tp);
    op2(l, fedc__mlir_tmp(l->m, a), "stablehlo.multiply", "", tp, u2, dt, dt);
    op1(l, fedc__mlir_tmp(l->m, c), "stablehlo.cosine", "", a, dt, dt);
    if (t->dtype == FEDC_F64) {
        op2(l, out_name(l), "stablehlo.multiply", "", rr, c, dt, dt);
        return l->m->st;
    }
    char y[24], ft[160];
    op2(l, fedc__mlir_tmp(l->m, y), "stablehlo.multiply", "", rr, c, dt, dt);
    op1(l, out_name(l), "stablehlo.convert", "", y, dt, type_str(l, l->v, ft)); /* rounded once, as fedc stores it */
    return l->m->st;
}

fedc_status fedc__shlo_dropout(const lower *l) {
    fedc_value x = l->n->in[0], key = l->n->in[1];
    const fedc_type *t = type_of(l, x);
    int c = lead(l, l->v);
    double rate = fedc__attr_float(l->n, FEDC_ATTR_RATE, 0);
    if (c && !lead(l, key)) return unsupported(l, "clients' dropout with one server key has no StableHLO lowering yet");
    rng r;
    rng_init(l, &r);
    char i[24], ft[160], q[24];
    flat_index(&r, t, c, i);
    uniform_f32(&r, key, i, ft, fedc__mlir_tmp(l->m, q));
    /* the uniform compared in f64; x / (1 - rate) in f64, rounded once */
    fedc_type d = *t, b = *t;
    d.dtype = FEDC_F64, b.dtype = FEDC_BOOL;
    char dt[160], btt[160], xt[160], ud[24], rt[24], keep[24], xd[24], den[24], v[24], vr[24], z[24];
    fedc__mlir_tensor(l->m, &d, c, dt, sizeof dt);
    fedc__mlir_tensor(l->m, &b, c, btt, sizeof btt), type_str(l, x, xt);
    op1(l, fedc__mlir_tmp(l->m, ud), "stablehlo.convert", "", q, ft, dt);
    fedc__shlo_splat(l->m, FEDC_F64, rate, dt, rt);
    fedc__mlir_tmp(l->m, keep);
    fedc__mlir_printf(l->m, "    %s = \"stablehlo.compare\"(%s, %s) {comparison_direction = #stablehlo<comparison_direction GE>, "
                      "compare_type = #stablehlo<comparison_type FLOAT>} : (%s, %s) -> %s\n", keep, ud, rt, dt, dt, btt);
    const char *xin = name(l, x);
    if (t->dtype == FEDC_F32) op1(l, xin = fedc__mlir_tmp(l->m, xd), "stablehlo.convert", "", name(l, x), xt, dt);
    fedc__shlo_splat(l->m, FEDC_F64, 1.0 - rate, dt, den);
    op2(l, fedc__mlir_tmp(l->m, v), "stablehlo.divide", "", xin, den, dt, dt);
    const char *scaled = v;
    if (t->dtype == FEDC_F32) op1(l, scaled = fedc__mlir_tmp(l->m, vr), "stablehlo.convert", "", v, dt, xt);
    fedc__shlo_splat(l->m, t->dtype, 0, xt, z);
    fedc__shlo_op(l->m, out_name(l), "stablehlo.select", "", 3, (const char *[]){keep, scaled, z},
                  (const char *[]){btt, xt, xt}, xt);
    return l->m->st;
}
