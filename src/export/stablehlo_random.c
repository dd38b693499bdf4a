/* Dropout in StableHLO with fedc's own randomness, as mlir_random.c writes it
 * element by element, here on whole tensors: element i of x (row-major, per
 * client) is kept when the i-th f32 uniform of the stream named by the key
 * [k0, k1, c2, c3] is >= rate, and scaled by 1 / (1 - rate) in double. The
 * uniform is word i % 4 of Philox4x32-10 on the counter [i / 4, 0, c2, c3] and
 * key [k0, k1] (its ten rounds written out, the products in ui64), its top 24
 * bits times 2^-24. */
#include <string.h>

#include "export/stablehlo.h"

typedef struct rng {
    const shlo *l;
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

/* hi and lo 32 bits of the 64-bit product m * x. */
static void mul_hi_lo(const rng *r, uint32_t m, const char *x, char *hi, char *lo) {
    char a[24], k[24], p[24], s[24], h[24];
    bin(r, "stablehlo.multiply", convert(r, x, false, a), splat_u(r, m, true, k), true, p);
    convert(r, bin(r, "stablehlo.shift_right_logical", p, splat_u(r, 32, true, s), true, h), true, hi);
    convert(r, p, true, lo);
}

/* Philox4x32-10 on counter c (updated in place) and key k0, k1 (ui32 tensors). */
static void philox(const rng *r, char c[4][24], const char *k0, const char *k1) {
    char key0[24], key1[24], w0[24], w1[24];
    snprintf(key0, sizeof key0, "%s", k0), snprintf(key1, sizeof key1, "%s", k1);
    splat_u(r, 0x9E3779B9u, false, w0), splat_u(r, 0xBB67AE85u, false, w1);
    for (int round = 0; round < 10; round++) {
        if (round > 0) { /* Random123 bumps the key between rounds */
            char n0[24], n1[24];
            bin(r, "stablehlo.add", key0, w0, false, n0), bin(r, "stablehlo.add", key1, w1, false, n1);
            snprintf(key0, sizeof key0, "%s", n0), snprintf(key1, sizeof key1, "%s", n1);
        }
        char hi0[24], lo0[24], hi1[24], lo1[24], a[24], y0[24], b[24], y2[24];
        mul_hi_lo(r, 0xD2511F53u, c[0], hi0, lo0);
        mul_hi_lo(r, 0xCD9E8D57u, c[2], hi1, lo1);
        bin(r, "stablehlo.xor", bin(r, "stablehlo.xor", hi1, c[1], false, a), key0, false, y0);
        bin(r, "stablehlo.xor", bin(r, "stablehlo.xor", hi0, c[3], false, b), key1, false, y2);
        snprintf(c[0], 24, "%s", y0), snprintf(c[1], 24, "%s", lo1);
        snprintf(c[2], 24, "%s", y2), snprintf(c[3], 24, "%s", lo0);
    }
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
    const shlo *l = r->l;
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
    const shlo *l = r->l;
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

fedc_status fedc__shlo_dropout(const shlo *l) {
    fedc_value x = l->n->in[0], key = l->n->in[1];
    const fedc_type *t = type_of(l, x);
    int c = lead(l, l->v);
    double rate = fedc__attr_float(l->n, FEDC_ATTR_RATE, 0);
    if (c && !lead(l, key)) return unsupported(l, "clients' dropout with one server key has no StableHLO lowering yet");
    rng r = {.l = l};
    fedc_type u = *t;
    u.dtype = FEDC_I32; /* the shape; the element types are written below */
    char shape[160];
    fedc__mlir_tensor(l->m, &u, c, shape, sizeof shape);
    shape[strlen(shape) - 4] = 0; /* drop "i32>" */
    snprintf(r.u32, sizeof r.u32, "%.150sui32>", shape), snprintf(r.u64, sizeof r.u64, "%.150sui64>", shape);
    char i[24], two[24], three[24], blk[24], wi[24], k32[24], hi[24], ctr[4][24], k0[24], k1[24];
    flat_index(&r, t, c, i);
    bin(&r, "stablehlo.shift_right_logical", i, splat_u(&r, 2, true, two), true, blk);
    bin(&r, "stablehlo.and", i, splat_u(&r, 3, true, three), true, wi);
    convert(&r, blk, true, ctr[0]);
    convert(&r, bin(&r, "stablehlo.shift_right_logical", blk, splat_u(&r, 32, true, k32), true, hi), true, ctr[1]);
    key_word(&r, key, 2, ctr[2]), key_word(&r, key, 3, ctr[3]);
    philox(&r, ctr, key_word(&r, key, 0, k0), key_word(&r, key, 1, k1));
    char s1[24], s2[24], w[24], e8[24], top[24];
    pick(&r, wi, 3, ctr[3], pick(&r, wi, 2, ctr[2], pick(&r, wi, 1, ctr[1], ctr[0], s1), s2), w);
    bin(&r, "stablehlo.shift_right_logical", w, splat_u(&r, 8, false, e8), false, top);
    /* the uniform as f32, compared in f64; x / (1 - rate) in f64, rounded once */
    fedc_type f = *t, d = *t, b = *t;
    f.dtype = FEDC_F32, d.dtype = FEDC_F64, b.dtype = FEDC_BOOL;
    char ft[160], dt[160], btt[160], xt[160], uf[24], sc[24], q[24], ud[24], rt[24], keep[24], xd[24], den[24], v[24],
        vr[24], z[24];
    fedc__mlir_tensor(l->m, &f, c, ft, sizeof ft), fedc__mlir_tensor(l->m, &d, c, dt, sizeof dt);
    fedc__mlir_tensor(l->m, &b, c, btt, sizeof btt), type_str(l, x, xt);
    op1(l, fedc__mlir_tmp(l->m, uf), "stablehlo.convert", "", top, r.u32, ft);
    fedc__shlo_splat(l->m, FEDC_F32, 0x1p-24, ft, sc);
    op2(l, fedc__mlir_tmp(l->m, q), "stablehlo.multiply", "", uf, sc, ft, ft);
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
