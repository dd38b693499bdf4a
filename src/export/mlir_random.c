/* fedc's counter-based randomness, reproduced bit for bit (src/core/rng.c): a
 * key [k0, k1, c2, c3] names a stream whose block b is Philox4x32-10
 * (Random123's rounds, philox.c) on the counter [b lo, b hi, c2, c3] and key
 * [k0, k1]; the ten rounds are written out in the loop body with 64-bit products. Element i
 * (row-major, per client) of
 *  - dropout: x[i] kept when the f32 uniform i is >= rate, scaled by
 *    1 / (1 - rate) in double, as the reference kernel does;
 *  - random_uniform: the uniform i: in f32 word i % 4 of block i / 4, its top 24
 *    bits times 2^-24; in f64 words 2 (i % 2) and 2 (i % 2) + 1 of block i / 2,
 *    53 bits times 2^-53;
 *  - random_normal: Box-Muller on the f64 uniforms 2 i and 2 i + 1 (block i):
 *    sqrt(-2 log(1 - u1)) cos(2 pi u2) in double, rounded once to the dtype.
 *    math.log and math.cos become calls of libm's log and cos (the pipeline of
 *    docs/export.md), so under mlir-cpu-runner on the machine fedc runs on the
 *    bits are fedc's; sqrt is correctly rounded everywhere. */
#include <string.h>

#include "export/mlir_lower.h"
#include "export/philox.h"

/* An i32 constant is written as the signed value of its 32 bits (MLIR's syntax). */
static const char *int_const(const lower *l, uint64_t v, const char *type, char *out) {
    long long shown = strcmp(type, "i32") == 0 ? (long long)(int32_t)(uint32_t)v : (long long)v;
    fedc__mlir_tmp(l->m, out);
    fedc__mlir_printf(l->m, "      %s = arith.constant %lld : %s\n", out, shown, type);
    return out;
}

/* The word operations of Philox (philox.h) as arith ops on i32 and i64 scalars
 * in the body. */
typedef struct body_words {
    fedc__words words;
    const lower *l;
} body_words;

static const char *word_constant(const fedc__words *w, uint64_t v, bool wide, char *out) {
    return int_const(((const body_words *)w)->l, v, wide ? "i64" : "i32", out);
}
static const char *word_binary(const fedc__words *w, fedc__word_op op, const char *a, const char *b, bool wide, char *out) {
    static const char *const spelled[] = {[FEDC__WORD_ADD] = "arith.addi", [FEDC__WORD_MUL] = "arith.muli",
                                          [FEDC__WORD_XOR] = "arith.xori", [FEDC__WORD_SHR] = "arith.shrui"};
    return emit2(((const body_words *)w)->l, spelled[op], a, b, wide ? "i64" : "i32", out);
}
static const char *word_convert(const fedc__words *w, const char *x, bool from_wide, char *out) {
    const lower *l = ((const body_words *)w)->l;
    fedc__mlir_tmp(l->m, out);
    if (from_wide) fedc__mlir_printf(l->m, "      %s = arith.trunci %s : i64 to i32\n", out, x);
    else fedc__mlir_printf(l->m, "      %s = arith.extui %s : i32 to i64\n", out, x);
    return out;
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

/* The stream's words: `key` names the four key words in the body (%in<k>, ...). */
typedef struct stream {
    char key[4][24];
} stream;

/* Block `blk` (an i64) of the stream: its four words into w. */
static void block(const lower *l, const stream *st, const char *blk, char w[4][24]) {
    char lo[24], hi[24], sh[24];
    fedc__mlir_tmp(l->m, lo);
    fedc__mlir_printf(l->m, "      %s = arith.trunci %s : i64 to i32\n", lo, blk);
    emit2(l, "arith.shrui", blk, int_const(l, 32, "i64", sh), "i64", hi);
    fedc__mlir_tmp(l->m, w[1]);
    fedc__mlir_printf(l->m, "      %s = arith.trunci %s : i64 to i32\n", w[1], hi);
    snprintf(w[0], 24, "%s", lo), snprintf(w[2], 24, "%s", st->key[2]), snprintf(w[3], 24, "%s", st->key[3]);
    body_words words = {{word_constant, word_binary, word_convert}, l};
    fedc__philox(&words.words, w, st->key[0], st->key[1]);
}

/* out = (wi == k) ? a : b, wi an i64. */
static const char *pick(const lower *l, const char *wi, int k, const char *a, const char *b, char *out) {
    char kk[24], eq[24];
    fedc__mlir_tmp(l->m, eq);
    fedc__mlir_printf(l->m, "      %s = arith.cmpi eq, %s, %s : i64\n", eq, wi, int_const(l, (uint64_t)k, "i64", kk));
    fedc__mlir_tmp(l->m, out);
    fedc__mlir_printf(l->m, "      %s = arith.select %s, %s, %s : i32\n", out, eq, a, b);
    return out;
}

/* fedc_rng_uniform_f32 of element i: word i % 4 of block i / 4, its top 24 bits
 * times 2^-24 (exact). */
static const char *uniform_f32(const lower *l, const stream *st, const char *i, char *out) {
    char four[24], blk[24], wi[24], w[4][24], s1[24], s2[24], word[24], e8[24], top[24], u[24], scale[24];
    emit2(l, "arith.divui", i, int_const(l, 4, "i64", four), "i64", blk);
    emit2(l, "arith.remui", i, four, "i64", wi);
    block(l, st, blk, w);
    pick(l, wi, 3, w[3], pick(l, wi, 2, w[2], pick(l, wi, 1, w[1], w[0], s1), s2), word);
    emit2(l, "arith.shrui", word, int_const(l, 8, "i32", e8), "i32", top);
    fedc__mlir_tmp(l->m, u);
    fedc__mlir_printf(l->m, "      %s = arith.uitofp %s : i32 to f32\n", u, top);
    return emit2(l, "arith.mulf", u, constant(l, 0x1p-24, FEDC_F32, scale), "f32", out);
}

/* ((a << 21) | (b >> 11)) * 2^-53: the f64 uniform of two words (exact). */
static const char *uniform_f64_of(const lower *l, const char *a, const char *b, char *out) {
    char a64[24], b64[24], s21[24], s11[24], hi[24], lo[24], bits[24], u[24], scale[24];
    fedc__mlir_tmp(l->m, a64);
    fedc__mlir_printf(l->m, "      %s = arith.extui %s : i32 to i64\n", a64, a);
    fedc__mlir_tmp(l->m, b64);
    fedc__mlir_printf(l->m, "      %s = arith.extui %s : i32 to i64\n", b64, b);
    emit2(l, "arith.shli", a64, int_const(l, 21, "i64", s21), "i64", hi);
    emit2(l, "arith.shrui", b64, int_const(l, 11, "i64", s11), "i64", lo);
    emit2(l, "arith.ori", hi, lo, "i64", bits);
    fedc__mlir_tmp(l->m, u);
    fedc__mlir_printf(l->m, "      %s = arith.uitofp %s : i64 to f64\n", u, bits);
    return emit2(l, "arith.mulf", u, constant(l, 0x1p-53, FEDC_F64, scale), "f64", out);
}

/* fedc_rng_uniform_f64 of element i: words 2 (i % 2), 2 (i % 2) + 1 of block i / 2. */
static const char *uniform_f64(const lower *l, const stream *st, const char *i, char *out) {
    char two[24], blk[24], odd[24], w[4][24], a[24], b[24];
    emit2(l, "arith.divui", i, int_const(l, 2, "i64", two), "i64", blk);
    emit2(l, "arith.remui", i, two, "i64", odd);
    block(l, st, blk, w);
    char one[24], eq[24];
    fedc__mlir_tmp(l->m, eq);
    fedc__mlir_printf(l->m, "      %s = arith.cmpi eq, %s, %s : i64\n", eq, odd, int_const(l, 1, "i64", one));
    fedc__mlir_tmp(l->m, a);
    fedc__mlir_printf(l->m, "      %s = arith.select %s, %s, %s : i32\n", a, eq, w[2], w[0]);
    fedc__mlir_tmp(l->m, b);
    fedc__mlir_printf(l->m, "      %s = arith.select %s, %s, %s : i32\n", b, eq, w[3], w[1]);
    return uniform_f64_of(l, a, b, out);
}

/* fedc_rng_normal of element i: Box-Muller on the f64 uniforms 2 i and 2 i + 1,
 * which are words 0, 1 and 2, 3 of block i. */
static const char *normal(const lower *l, const stream *st, const char *i, char *out) {
    char w[4][24], u1[24], u2[24], one[24], q[24], lg[24], m2[24], p[24], r[24], tp[24], a[24], c[24];
    block(l, st, i, w);
    uniform_f64_of(l, w[0], w[1], u1), uniform_f64_of(l, w[2], w[3], u2);
    emit1(l, "math.log", emit2(l, "arith.subf", constant(l, 1.0, FEDC_F64, one), u1, "f64", q), "f64", lg);
    emit1(l, "math.sqrt", emit2(l, "arith.mulf", constant(l, -2.0, FEDC_F64, m2), lg, "f64", p), "f64", r);
    emit2(l, "arith.mulf", constant(l, 6.283185307179586476925286766559, FEDC_F64, tp), u2, "f64", a);
    return emit2(l, "arith.mulf", r, emit1(l, "math.cos", a, "f64", c), "f64", out);
}

/* With sharding, word w of each client's key [C, 4] as a [C] tensor: a
 * reduction over the words that keeps word w (exact), because LLVM 19's
 * sharding propagation takes no generic whose map reads a constant position
 * (d0, w). Into out (of 24). */
static const char *key_word(const lower *l, fedc_value key, int w, char *out) {
    char kt[160], ot[160], lit[8], z[24], iw[24], cw[24], eq[24], zero[24], sel[24], sum[24];
    snprintf(ot, sizeof ot, "tensor<%dxi32>", l->m->clients);
    fedc__mlir_tensor_const(l->m, z, fedc__mlir_literal(FEDC_I32, 0, lit, sizeof lit), ot);
    fedc__mlir_generic g = {.rank = 2, .iters = "pr", .nin = 1, .in = {name(l, key)},
                            .in_type = {fedc__mlir_type_of(l->m, l->s, key, kt, sizeof kt)}, .in_elem = {"i32"},
                            .maps = {"d0, d1"}, .out_map = "d0", .out_type = ot, .out_elem = "i32", .init = z,
                            .result_name = fedc__mlir_tmp(l->m, out)};
    fedc__mlir_generic_begin(l->m, &g);
    fedc__mlir_tmp(l->m, iw), fedc__mlir_tmp(l->m, cw), fedc__mlir_tmp(l->m, eq);
    fedc__mlir_printf(l->m, "      %s = linalg.index 1 : index\n      %s = arith.constant %d : index\n"
                      "      %s = arith.cmpi eq, %s, %s : index\n", iw, cw, w, eq, iw, cw);
    fedc__mlir_tmp(l->m, sel);
    fedc__mlir_printf(l->m, "      %s = arith.select %s, %%in0, %s : i32\n", sel, eq, constant(l, 0, FEDC_I32, zero));
    fedc__mlir_generic_end(l->m, &g, emit2(l, "arith.addi", "%out", sel, "i32", sum));
    return out;
}

/* The head of a generic over v's loops (the clients loop first when v has it)
 * reading `nx` operands of v's shape and then the key's four words, which the
 * body finds at %in<nx>..; st names them, *i is the element's flat index. */
typedef struct keyed {
    fedc__mlir_generic g;
    char maps[5][160], types[5][160], init[24], words[4][24];
} keyed;

static void keyed_begin(const lower *l, fedc_value key, int nx, keyed *k, stream *st, char *i) {
    const fedc_type *t = type_of(l, l->v);
    bool c = clients(l, l->v);
    int loops = t->rank + c;
    identity_map(loops, k->maps[0], sizeof k->maps[0]);
    const char *elem = fedc__mlir_elem(t->dtype);
    k->g = (fedc__mlir_generic){.rank = loops, .iters = "pppppppp", .nin = nx + 4, .out_map = k->maps[0],
                                .out_type = fedc__mlir_type_of(l->m, l->s, l->v, k->types[0], sizeof k->types[0]),
                                .out_elem = elem, .result_name = name(l, l->v)};
    fedc__mlir_type_of(l->m, l->s, key, k->types[1], sizeof k->types[1]);
    for (int x = 0; x < nx; x++) {
        fedc_value u = l->n->in[x];
        k->g.in[x] = name(l, u), k->g.in_elem[x] = fedc__mlir_elem(type_of(l, u)->dtype), k->g.maps[x] = k->maps[0];
        k->g.in_type[x] = fedc__mlir_type_of(l->m, l->s, u, k->types[2 + x], sizeof k->types[2 + x]);
    }
    bool words = l->m->hoisted && c && clients(l, key); /* sharded: the words as [C] tensors */
    if (words) snprintf(k->types[1], sizeof k->types[1], "tensor<%dxi32>", l->m->clients);
    for (int w = 0; w < 4; w++) {
        if (words) snprintf(k->maps[1 + w], sizeof k->maps[1 + w], "d0");
        else snprintf(k->maps[1 + w], sizeof k->maps[1 + w], "%s%d", c && clients(l, key) ? "d0, " : "", w);
        k->g.in[nx + w] = words ? key_word(l, key, w, k->words[w]) : name(l, key);
        k->g.in_type[nx + w] = k->types[1], k->g.in_elem[nx + w] = "i32", k->g.maps[nx + w] = k->maps[1 + w];
        snprintf(st->key[w], sizeof st->key[w], "%%in%d", nx + w);
    }
    k->g.init = fedc__mlir_splat(l->m, l->s, l->v, 0, k->init);
    fedc__mlir_generic_begin(l->m, &k->g);
    flat_index(l, t, c, i);
}

fedc_status fedc__lower_dropout(const lower *l) {
    const fedc_type *t = type_of(l, l->v);
    double rate = fedc__attr_float(l->n, FEDC_ATTR_RATE, 0);
    const char *elem = fedc__mlir_elem(t->dtype);
    keyed k;
    stream st;
    char i[24], q[24], u64[24], keep[24], z[24], one[24], xd[24], v[24], y[24], zero[24];
    keyed_begin(l, l->n->in[1], 1, &k, &st, i);
    uniform_f32(l, &st, i, q);
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
    fedc__mlir_printf(l->m, "      %s = arith.select %s, %s, %s : %s\n", y, keep, v, constant(l, 0, t->dtype, zero), elem);
    fedc__mlir_generic_end(l->m, &k.g, y);
    return l->m->st;
}

fedc_status fedc__lower_random_uniform(const lower *l) {
    keyed k;
    stream st;
    char i[24], u[24];
    keyed_begin(l, l->n->in[0], 0, &k, &st, i);
    if (type_of(l, l->v)->dtype == FEDC_F64) uniform_f64(l, &st, i, u);
    else uniform_f32(l, &st, i, u);
    fedc__mlir_generic_end(l->m, &k.g, u);
    return l->m->st;
}

fedc_status fedc__lower_random_normal(const lower *l) {
    keyed k;
    stream st;
    char i[24], y[24], r[24];
    keyed_begin(l, l->n->in[0], 0, &k, &st, i);
    normal(l, &st, i, y);
    if (type_of(l, l->v)->dtype == FEDC_F32) { /* rounded once, as fedc stores the double */
        fedc__mlir_tmp(l->m, r);
        fedc__mlir_printf(l->m, "      %s = arith.truncf %s : f64 to f32\n", r, y);
        snprintf(y, sizeof y, "%s", r);
    }
    fedc__mlir_generic_end(l->m, &k.g, y);
    return l->m->st;
}
