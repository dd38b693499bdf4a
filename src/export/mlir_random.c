/* Dropout with fedc's counter-based randomness, reproduced bit for bit: element i
 * of x (row-major, per client) is kept when the i-th f32 uniform of the stream
 * named by the key [k0, k1, c2, c3] is >= rate, and scaled by 1 / (1 - rate) in
 * double, as the reference kernel does. The uniform is word i % 4 of
 * Philox4x32-10 (Random123's rounds, src/core/rng.c) on the counter
 * [i / 4, 0, c2, c3] and key [k0, k1], its top 24 bits times 2^-24; the ten
 * rounds are written out in the loop body with 64-bit products. */
#include <string.h>

#include "export/mlir_lower.h"

/* An i32 constant is written as the signed value of its 32 bits (MLIR's syntax). */
static const char *int_const(const lower *l, uint64_t v, const char *type, char *out) {
    long long shown = strcmp(type, "i32") == 0 ? (long long)(int32_t)(uint32_t)v : (long long)v;
    fedc__mlir_tmp(l->m, out);
    fedc__mlir_printf(l->m, "      %s = arith.constant %lld : %s\n", out, shown, type);
    return out;
}

/* hi and lo 32 bits of the 64-bit product m * x (both u32). */
static void mul_hi_lo(const lower *l, uint32_t m, const char *x, char *hi, char *lo) {
    char a[24], b[24], p[24], s[24], h[24];
    fedc__mlir_tmp(l->m, a);
    fedc__mlir_printf(l->m, "      %s = arith.extui %s : i32 to i64\n", a, x);
    emit2(l, "arith.muli", a, int_const(l, m, "i64", b), "i64", p);
    emit2(l, "arith.shrui", p, int_const(l, 32, "i64", s), "i64", h);
    fedc__mlir_tmp(l->m, hi);
    fedc__mlir_printf(l->m, "      %s = arith.trunci %s : i64 to i32\n", hi, h);
    fedc__mlir_tmp(l->m, lo);
    fedc__mlir_printf(l->m, "      %s = arith.trunci %s : i64 to i32\n", lo, p);
}

/* Philox4x32-10 on counter c (four i32 names, updated in place) and key k0, k1. */
static void philox(const lower *l, char c[4][24], const char *k0, const char *k1) {
    char key0[24], key1[24], w0[24], w1[24];
    snprintf(key0, sizeof key0, "%s", k0), snprintf(key1, sizeof key1, "%s", k1);
    int_const(l, 0x9E3779B9u, "i32", w0), int_const(l, 0xBB67AE85u, "i32", w1);
    for (int r = 0; r < 10; r++) {
        if (r > 0) { /* Random123 bumps the key between rounds */
            char n0[24], n1[24];
            emit2(l, "arith.addi", key0, w0, "i32", n0), emit2(l, "arith.addi", key1, w1, "i32", n1);
            snprintf(key0, sizeof key0, "%s", n0), snprintf(key1, sizeof key1, "%s", n1);
        }
        char hi0[24], lo0[24], hi1[24], lo1[24], a[24], y0[24], b[24], y2[24];
        mul_hi_lo(l, 0xD2511F53u, c[0], hi0, lo0);
        mul_hi_lo(l, 0xCD9E8D57u, c[2], hi1, lo1);
        emit2(l, "arith.xori", emit2(l, "arith.xori", hi1, c[1], "i32", a), key0, "i32", y0);
        emit2(l, "arith.xori", emit2(l, "arith.xori", hi0, c[3], "i32", b), key1, "i32", y2);
        snprintf(c[0], 24, "%s", y0), snprintf(c[1], 24, "%s", lo1);
        snprintf(c[2], 24, "%s", y2), snprintf(c[3], 24, "%s", lo0);
    }
}

/* The flat position of the element within one client's x, as an i64. */
static const char *flat_index(const lower *l, const fedc_type *t, bool c, char *out) {
    char idx[FEDC_MAX_RANK + 1][24], acc[24], s[24], m[24], a[24];
    fedc__mlir_loop_indices(l, t->rank + c, idx);
    snprintf(acc, sizeof acc, "%s", "");
    for (int d = 0; d < t->rank; d++) {
        char e[24];
        fedc__mlir_tmp(l->m, e);
        fedc__mlir_printf(l->m, "      %s = arith.index_cast %s : index to i64\n", e, idx[c + d]);
        if (d == 0) {
            snprintf(acc, sizeof acc, "%s", e);
            continue;
        }
        emit2(l, "arith.muli", acc, int_const(l, (uint64_t)t->dims[d], "i64", s), "i64", m);
        emit2(l, "arith.addi", m, e, "i64", a);
        snprintf(acc, sizeof acc, "%s", a);
    }
    if (t->rank == 0) int_const(l, 0, "i64", acc);
    snprintf(out, 24, "%s", acc);
    return out;
}

fedc_status fedc__lower_dropout(const lower *l) {
    fedc_value x = l->n->in[0], key = l->n->in[1];
    const fedc_type *t = type_of(l, x);
    bool c = clients(l, l->v);
    double rate = fedc__attr_float(l->n, FEDC_ATTR_RATE, 0);
    int loops = t->rank + c;
    char xmap[160], kmaps[4][160], xt[160], kt[160], out_type[160], init[24];
    identity_map(loops, xmap, sizeof xmap);
    for (int w = 0; w < 4; w++) snprintf(kmaps[w], sizeof kmaps[w], "%s%d", c && clients(l, key) ? "d0, " : "", w);
    const char *elem = fedc__mlir_elem(t->dtype), *kname = name(l, key);
    fedc__mlir_type_of(l->m, l->s, key, kt, sizeof kt);
    fedc__mlir_generic g = {.rank = loops, .iters = "pppppppp", .nin = 5, .in = {name(l, x), kname, kname, kname, kname},
                            .in_type = {fedc__mlir_type_of(l->m, l->s, x, xt, sizeof xt), kt, kt, kt, kt},
                            .in_elem = {elem, "i32", "i32", "i32", "i32"},
                            .maps = {xmap, kmaps[0], kmaps[1], kmaps[2], kmaps[3]}, .out_map = xmap,
                            .out_type = fedc__mlir_type_of(l->m, l->s, l->v, out_type, sizeof out_type), .out_elem = elem,
                            .result_name = name(l, l->v)};
    g.init = fedc__mlir_splat(l->m, l->s, l->v, 0, init);
    fedc__mlir_generic_begin(l->m, &g);
    char i[24], four[24], blk[24], wi[24], lo[24], hi[24], sh[24], ctr[4][24];
    flat_index(l, t, c, i);
    emit2(l, "arith.divui", i, int_const(l, 4, "i64", four), "i64", blk);
    emit2(l, "arith.remui", i, four, "i64", wi);
    fedc__mlir_tmp(l->m, lo);
    fedc__mlir_printf(l->m, "      %s = arith.trunci %s : i64 to i32\n", lo, blk);
    emit2(l, "arith.shrui", blk, int_const(l, 32, "i64", sh), "i64", hi);
    fedc__mlir_tmp(l->m, ctr[1]);
    fedc__mlir_printf(l->m, "      %s = arith.trunci %s : i64 to i32\n", ctr[1], hi);
    snprintf(ctr[0], 24, "%s", lo), snprintf(ctr[2], 24, "%%in3"), snprintf(ctr[3], 24, "%%in4");
    philox(l, ctr, "%in1", "%in2");
    /* word i % 4, its top 24 bits as a float in [0, 1) */
    char w[24], s1[24], s2[24], k[24], z[24], b1[24], b2[24], e8[24], top[24], u[24], u64[24], scale[24], keep[24];
    char one[24], q[24], xd[24], v[24], y[24];
    fedc__mlir_tmp(l->m, b1);
    fedc__mlir_printf(l->m, "      %s = arith.cmpi eq, %s, %s : i64\n", b1, wi, int_const(l, 1, "i64", k));
    fedc__mlir_tmp(l->m, s1);
    fedc__mlir_printf(l->m, "      %s = arith.select %s, %s, %s : i32\n", s1, b1, ctr[1], ctr[0]);
    fedc__mlir_tmp(l->m, b2);
    fedc__mlir_printf(l->m, "      %s = arith.cmpi eq, %s, %s : i64\n", b2, wi, int_const(l, 2, "i64", z));
    fedc__mlir_tmp(l->m, s2);
    fedc__mlir_printf(l->m, "      %s = arith.select %s, %s, %s : i32\n", s2, b2, ctr[2], s1);
    fedc__mlir_tmp(l->m, b1);
    fedc__mlir_printf(l->m, "      %s = arith.cmpi eq, %s, %s : i64\n", b1, wi, int_const(l, 3, "i64", k));
    fedc__mlir_tmp(l->m, w);
    fedc__mlir_printf(l->m, "      %s = arith.select %s, %s, %s : i32\n", w, b1, ctr[3], s2);
    emit2(l, "arith.shrui", w, int_const(l, 8, "i32", e8), "i32", top);
    fedc__mlir_tmp(l->m, u);
    fedc__mlir_printf(l->m, "      %s = arith.uitofp %s : i32 to f32\n", u, top);
    emit2(l, "arith.mulf", u, constant(l, 0x1p-24, FEDC_F32, scale), "f32", q);
    fedc__mlir_tmp(l->m, u64);
    fedc__mlir_printf(l->m, "      %s = arith.extf %s : f32 to f64\n", u64, q);
    fedc__mlir_tmp(l->m, keep);
    fedc__mlir_printf(l->m, "      %s = arith.cmpf oge, %s, %s : f64\n", keep, u64, constant(l, rate, FEDC_F64, z));
    /* x / (1 - rate) in double, rounded once to x's dtype */
    if (t->dtype == FEDC_F32) {
        fedc__mlir_tmp(l->m, xd);
        fedc__mlir_printf(l->m, "      %s = arith.extf %%in0 : f32 to f64\n", xd);
    } else {
        snprintf(xd, sizeof xd, "%%in0");
    }
    emit2(l, "arith.divf", xd, constant(l, 1.0 - rate, FEDC_F64, one), "f64", v);
    if (t->dtype == FEDC_F32) {
        char r[24];
        fedc__mlir_tmp(l->m, r);
        fedc__mlir_printf(l->m, "      %s = arith.truncf %s : f64 to f32\n", r, v);
        snprintf(v, sizeof v, "%s", r);
    }
    fedc__mlir_tmp(l->m, y);
    fedc__mlir_printf(l->m, "      %s = arith.select %s, %s, %s : %s\n", y, keep, v, constant(l, 0, t->dtype, top), elem);
    fedc__mlir_generic_end(l->m, &g, y);
    return l->m->st;
}
