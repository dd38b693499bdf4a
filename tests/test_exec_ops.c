/*
 * Tests for the executor's ops (fedc/exec.h): every op's dispatch (attributes to
 * kernel arguments) on small values computed here; dropout's mask from its key;
 * and the errors found when binding and at run time (unknown or unbound inputs,
 * unknown outputs, out-of-range gather indices and labels), named by node; and
 * how a fold's carries go in and out.
 */
#include "core/internal.h"
#include "ir_check.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fedc/exec.h"
#include "fedc/program.h"
#include "kernels/kernels.h"

/* ---------------------------------------------------------------- errors -- */

static void test_errors_binding(void) {
    fedc_program *p = newp();
    if (!p) return;
    fedc_value x = fedc_input(p, "x", TY(FEDC_F32, 3));
    fedc_value w = fedc_input(p, "weights", TY(FEDC_F32, 3));
    CHECK_OK(fedc_program_output(p, "y", fedc_mul(p, x, w)));
    fedc_executor *ex = NULL;
    CHECK_OK(fedc_executor_create(&ex, p, NULL));
    fedc_program_destroy(p);
    if (!ex) return;
    const float xv[3] = {1, 2, 3}, wv[3] = {4, 5, 6};
    CHECK_ERR(fedc_executor_bind(ex, "nope", xv), FEDC_ENOTFOUND, "\"nope\"");
    CHECK_ERR(fedc_executor_bind(ex, "y", xv), FEDC_ENOTFOUND, "\"y\""); /* an output is not an input */
    CHECK_ERR(fedc_executor_bind(ex, "x", NULL), FEDC_EINVAL, "\"x\"");
    CHECK_OK(fedc_executor_bind(ex, "x", xv));
    fedc_status st = fedc_executor_run(ex);
    CHECK(st != FEDC_OK);
    CHECK_MSG(strstr(fedc_errmsg(), "\"weights\"") != NULL, "message: %s", fedc_errmsg());
    CHECK_OK(fedc_executor_bind(ex, "weights", wv));
    CHECK_OK(fedc_executor_run(ex));
    const void *y = NULL;
    CHECK_ERR(fedc_executor_output(ex, "nope", &y, NULL), FEDC_ENOTFOUND, "\"nope\"");
    CHECK_OK(fedc_executor_output(ex, "y", &y, NULL));
    if (y)
        for (int i = 0; i < 3; i++) CHECK(((const float *)y)[i] == xv[i] * wv[i]);
    fedc_executor_destroy(ex);

    /* a program with an error cannot be run */
    p = newp();
    if (!p) return;
    fedc_exp(p, fedc_input(p, "i", TY(FEDC_I32, 3)));
    ex = NULL;
    CHECK_ERR(fedc_executor_create(&ex, p, NULL), FEDC_ETYPE, "exp");
    CHECK(ex == NULL);
    fedc_program_destroy(p);
}

static void test_errors_gather_range(void) {
    fedc_program *p = newp();
    if (!p) return;
    fedc_value table = fedc_input(p, "table", TY(FEDC_F32, 5, 3)); /* %0 */
    fedc_value idx = fedc_input(p, "idx", TY(FEDC_I32, 4));        /* %1 */
    fedc_value g = fedc_gather(p, table, idx);                     /* %2 */
    CHECK_EQ_INT(g, 2);
    CHECK_OK(fedc_program_output(p, "g", fedc_tanh(p, g)));
    fedc_executor *ex[2] = {NULL, NULL};
    fedc_exec_options ro = {.reference_kernels = true};
    CHECK_OK(fedc_executor_create(&ex[0], p, NULL));
    CHECK_OK(fedc_executor_create(&ex[1], p, &ro));
    fedc_program_destroy(p);
    float tv[15];
    for (int i = 0; i < 15; i++) tv[i] = (float)i / 10;
    for (int e = 0; e < 2; e++) {
        if (!ex[e]) continue;
        int32_t iv[4] = {0, 4, 7, 1};
        CHECK_OK(fedc_executor_bind(ex[e], "table", tv));
        CHECK_OK(fedc_executor_bind(ex[e], "idx", iv));
        CHECK_ERR(fedc_executor_run(ex[e]), FEDC_ERANGE, "%2 (gather)");
        CHECK_MSG(strstr(fedc_errmsg(), "7") != NULL, "message: %s", fedc_errmsg());
        iv[2] = -1;
        CHECK_ERR(fedc_executor_run(ex[e]), FEDC_ERANGE, "%2 (gather)");
        CHECK_MSG(strstr(fedc_errmsg(), "-1") != NULL, "message: %s", fedc_errmsg());
        iv[2] = 5; /* one past the end */
        CHECK_ERR(fedc_executor_run(ex[e]), FEDC_ERANGE, "%2 (gather)");
        /* good data: the executor recovers */
        iv[2] = 2;
        CHECK_OK(fedc_executor_run(ex[e]));
        const float *y = checked_output(ex[e], "g", FEDC_F32, 12);
        for (int k = 0; y && k < 4; k++)
            for (int j = 0; j < 3; j++) CHECK_NEAR(y[k * 3 + j], tanh(tv[iv[k] * 3 + j]), 1e-6);
        fedc_executor_destroy(ex[e]);
    }
}

static void test_errors_label_range(void) {
    fedc_program *p = newp();
    if (!p) return;
    fedc_value logits = fedc_input(p, "logits", TY(FEDC_F32, 3, 4));
    fedc_value labels = fedc_input(p, "labels", TY(FEDC_I32, 3));
    fedc_value scaled = fedc_mul(p, logits, fedc_scalar(p, FEDC_F32, 2)); /* %3 (%2 is the constant) */
    fedc_value xent = fedc_softmax_cross_entropy(p, scaled, labels, FEDC_NONE); /* %4 */
    CHECK_EQ_INT(xent, 4);
    CHECK_OK(fedc_program_output(p, "xent", xent));
    fedc_executor *ex = NULL;
    CHECK_OK(fedc_executor_create(&ex, p, NULL));
    fedc_program_destroy(p);
    if (!ex) return;
    float lv[12];
    for (int i = 0; i < 12; i++) lv[i] = (float)((i * 7) % 5) / 4;
    int32_t yv[3] = {0, 4, 1};
    CHECK_OK(fedc_executor_bind(ex, "logits", lv));
    CHECK_OK(fedc_executor_bind(ex, "labels", yv));
    CHECK_ERR(fedc_executor_run(ex), FEDC_ERANGE, "%4 (softmax_cross_entropy)");
    CHECK_MSG(strstr(fedc_errmsg(), "4") != NULL && strstr(fedc_errmsg(), "label"), "message: %s", fedc_errmsg());
    yv[1] = -2;
    CHECK_ERR(fedc_executor_run(ex), FEDC_ERANGE, "%4 (softmax_cross_entropy)");
    CHECK_MSG(strstr(fedc_errmsg(), "-2") != NULL, "message: %s", fedc_errmsg());
    yv[1] = 3;
    CHECK_OK(fedc_executor_run(ex));
    const float *xe = checked_output(ex, "xent", FEDC_F32, 3);
    for (int r = 0; xe && r < 3; r++) {
        double s = 0;
        for (int c = 0; c < 4; c++) s += exp(2.0 * lv[r * 4 + c]);
        CHECK_NEAR(xe[r], log(s) - 2.0 * lv[r * 4 + yv[r]], 1e-5);
    }
    fedc_executor_destroy(ex);
}

/* ------------------------------------------------------------- dispatch -- */

/* Compares output `name` (any numeric dtype) with `want`, element by element. */
static void check_output(const fedc_executor *ex, const char *name, const char *type, const double *want, double tol) {
    const void *y = NULL;
    fedc_type t;
    fedc_status st = fedc_executor_output(ex, name, &y, &t);
    CHECK_OK(st);
    if (st) return;
    char buf[64];
    fedc_type_str(&t, buf, sizeof buf);
    CHECK_MSG(strcmp(buf, type) == 0, "output %s is %s, want %s", name, buf, type);
    if (strcmp(buf, type) != 0) return;
    int bad = 0;
    for (int64_t i = 0; i < fedc_type_count(&t) && bad < 4; i++) {
        double v;
        switch (t.dtype) {
        case FEDC_F32: v = ((const float *)y)[i]; break;
        case FEDC_F64: v = ((const double *)y)[i]; break;
        case FEDC_I32: v = ((const int32_t *)y)[i]; break;
        default: v = ((const uint8_t *)y)[i]; break;
        }
        double scale = fabs(want[i]) > 1 ? fabs(want[i]) : 1;
        if (!(fabs(v - want[i]) <= tol * scale)) {
            fedc_test_fail(__FILE__, __LINE__, "output %s[%lld] = %.9g, want %.9g", name, (long long)i, v, want[i]);
            bad++;
        }
    }
}

/* Every op's dispatch (attributes -> kernel arguments) on small values whose
 * results are computed here: transposes, slices, pads, concat, broadcasts,
 * reductions with negative axes, argmax, gather, scatter_add, one_hot, select,
 * cast, iota, log_softmax, pow, pooling with SAME padding. Both kernel tables. */
static void test_dispatch_ops(void) {
    fedc_program *p = newp();
    if (!p) return;
    fedc_value x = fedc_input(p, "x", TY(FEDC_F32, 2, 3, 4));
    fedc_value z = fedc_input(p, "z", TY(FEDC_F32, 2, 3, 4));
    fedc_value r = fedc_input(p, "r", TY(FEDC_F32, 3, 1));
    fedc_value tab = fedc_input(p, "tab", TY(FEDC_F64, 5, 2));
    fedc_value gidx = fedc_input(p, "gidx", TY(FEDC_I32, 2, 2));
    fedc_value upd = fedc_input(p, "upd", TY(FEDC_F32, 3, 2));
    fedc_value sidx = fedc_input(p, "sidx", TY(FEDC_I32, 3));
    fedc_value oidx = fedc_input(p, "oidx", TY(FEDC_I32, 4));
    fedc_value img = fedc_input(p, "img", TY(FEDC_F32, 1, 3, 3, 1));
    fedc_value xs[2] = {x, fedc_neg(p, x)};
    fedc_value ci = fedc_cast(p, x, FEDC_I32);
    struct {
        const char *name;
        fedc_value v;
    } outs[] = {
        {"t", fedc_transpose(p, x, (int[]){2, 0, 1})},
        {"s", fedc_slice(p, x, DIMS(0, 1, 1), DIMS(2, 3, 3))},
        {"p", fedc_pad(p, x, DIMS(1, 0, 0), DIMS(0, 1, 2))},
        {"c", fedc_concat(p, xs, 2, -1)},
        {"b", fedc_broadcast_to(p, r, 3, DIMS(2, 3, 4))},
        {"rs", fedc_reduce_sum(p, x, (int[]){-1}, 1, true)},
        {"rm", fedc_reduce_max(p, x, (int[]){0, -1}, 2, false)},
        {"ra", fedc_reduce_mean(p, x, NULL, -1, false)},
        {"am", fedc_argmax(p, z, 1)},
        {"g", fedc_gather(p, tab, gidx)},
        {"sa", fedc_scatter_add(p, upd, sidx, 5)},
        {"oh", fedc_one_hot(p, oidx, 3, FEDC_F32)},
        {"sel", fedc_select(p, fedc_lt(p, r, fedc_scalar(p, FEDC_F32, 15)), x, fedc_neg(p, x))},
        {"ci", ci},
        {"cf", fedc_cast(p, oidx, FEDC_F64)},
        {"ri", fedc_reduce_sum(p, ci, (int[]){0}, 1, false)},
        {"io", fedc_iota(p, TY(FEDC_I32, 3, 4), 0)},
        {"iof", fedc_iota(p, TY(FEDC_F32, 2, 3), -1)},
        {"ls", fedc_log_softmax(p, x)},
        {"pw", fedc_pow(p, fedc_mul(p, x, fedc_scalar(p, FEDC_F32, 0.1)), 3)},
        {"bb", fedc_add(p, fedc_slice(p, x, DIMS(0, 0, 0), DIMS(2, 1, 4)), r)},
        {"ap", fedc_avg_pool2d(p, img, 2, 2, 2, 2, FEDC_PAD_SAME)},
        {"mp", fedc_max_pool2d(p, img, 2, 2, 2, 2, FEDC_PAD_SAME)},
        {"sq", fedc_sqrt(p, fedc_square(p, x))},
    };
    for (int i = 0; i < FEDC_COUNT_OF(outs); i++) CHECK_OK(fedc_program_output(p, outs[i].name, outs[i].v));
    CHECK_OK(fedc_program_status(p));

    float xv[24], zv[24], rv[3] = {10, 20, 30}, uv[6], imv[9];
    double tv[10];
    int32_t gv[4] = {4, 0, 2, 2}, sv[3] = {1, 1, 4}, ov[4] = {0, 2, 5, -1};
#define X(i, j, k) ((double)((i) * 12 + (j) * 4 + (k) - 5))
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 3; j++)
            for (int k = 0; k < 4; k++) {
                xv[i * 12 + j * 4 + k] = (float)X(i, j, k);
                zv[i * 12 + j * 4 + k] = (float)((i * 7 + k * 3 + j * 5) % 11); /* no ties along axis 1 */
            }
    for (int i = 0; i < 10; i++) tv[i] = (i / 2) * 10 + (i % 2);
    for (int i = 0; i < 6; i++) uv[i] = (float)(i / 2 + 1) + (float)(i % 2) * 0.5f;
    for (int i = 0; i < 9; i++) imv[i] = (float)(i + 1);

    /* expected values, by hand */
    double t[24], sl[8], pd[72] = {0}, c[48], b[24], rs[6], rm[3], ra = 0, am[8], g[8], sa[10] = {0}, oh[12] = {0},
           sel[24], cif[24], cf[4], ri[12], io[12], iof[6], ls[24], pw[24], bb[24], sq[24];
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 3; j++) {
            double mx = -1e300, sum = 0;
            for (int k = 0; k < 4; k++) mx = X(i, j, k) > mx ? X(i, j, k) : mx;
            for (int k = 0; k < 4; k++) sum += exp(X(i, j, k) - mx);
            rs[i * 3 + j] = 0;
            for (int k = 0; k < 4; k++) {
                double v = X(i, j, k);
                t[k * 6 + i * 3 + j] = v;
                pd[(i + 1) * 24 + j * 6 + k] = v;
                c[i * 24 + j * 8 + k] = v;
                c[i * 24 + j * 8 + 4 + k] = -v;
                b[i * 12 + j * 4 + k] = rv[j];
                rs[i * 3 + j] += v;
                ra += v / 24;
                sel[i * 12 + j * 4 + k] = rv[j] < 15 ? v : -v;
                cif[i * 12 + j * 4 + k] = v;
                ls[i * 12 + j * 4 + k] = v - mx - log(sum);
                pw[i * 12 + j * 4 + k] = pow(v * (double)0.1f, 3);
                bb[i * 12 + j * 4 + k] = X(i, 0, k) + rv[j];
                sq[i * 12 + j * 4 + k] = fabs(v);
            }
        }
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2; j++)
            for (int k = 0; k < 2; k++) sl[i * 4 + j * 2 + k] = X(i, j + 1, k + 1);
    for (int j = 0; j < 3; j++) rm[j] = X(1, j, 3);
    for (int i = 0; i < 2; i++)
        for (int k = 0; k < 4; k++) {
            int best = 0;
            for (int j = 1; j < 3; j++)
                if (zv[i * 12 + j * 4 + k] > zv[i * 12 + best * 4 + k]) best = j;
            am[i * 4 + k] = best;
        }
    for (int n = 0; n < 4; n++)
        for (int col = 0; col < 2; col++) g[n * 2 + col] = tv[gv[n] * 2 + col];
    for (int n = 0; n < 3; n++)
        for (int col = 0; col < 2; col++) sa[sv[n] * 2 + col] += uv[n * 2 + col];
    for (int n = 0; n < 4; n++)
        if (ov[n] >= 0 && ov[n] < 3) oh[n * 3 + ov[n]] = 1;
    for (int n = 0; n < 4; n++) cf[n] = ov[n];
    for (int j = 0; j < 3; j++)
        for (int k = 0; k < 4; k++) ri[j * 4 + k] = X(0, j, k) + X(1, j, k);
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 4; j++) io[i * 4 + j] = i;
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 3; j++) iof[i * 3 + j] = j;
    /* SAME, 2x2 windows, stride 2 on 3x3: one padding row/column at the bottom/right,
     * ignored by both pools (average over in-image elements) */
    const double ap[4] = {(1 + 2 + 4 + 5) / 4.0, (3 + 6) / 2.0, (7 + 8) / 2.0, 9};
    const double mp[4] = {5, 6, 8, 9};
#undef X

    for (int ref = 0; ref < 2; ref++) {
        fedc_executor *ex = NULL;
        fedc_exec_options opt = {.reference_kernels = ref == 1};
        CHECK_OK(fedc_executor_create(&ex, p, &opt));
        if (!ex) continue;
        CHECK_OK(fedc_executor_bind(ex, "x", xv));
        CHECK_OK(fedc_executor_bind(ex, "z", zv));
        CHECK_OK(fedc_executor_bind(ex, "r", rv));
        CHECK_OK(fedc_executor_bind(ex, "tab", tv));
        CHECK_OK(fedc_executor_bind(ex, "gidx", gv));
        CHECK_OK(fedc_executor_bind(ex, "upd", uv));
        CHECK_OK(fedc_executor_bind(ex, "sidx", sv));
        CHECK_OK(fedc_executor_bind(ex, "oidx", ov));
        CHECK_OK(fedc_executor_bind(ex, "img", imv));
        CHECK_OK(fedc_executor_run(ex));
        check_output(ex, "t", "f32[4,2,3]", t, 0);
        check_output(ex, "s", "f32[2,2,2]", sl, 0);
        check_output(ex, "p", "f32[3,4,6]", pd, 0);
        check_output(ex, "c", "f32[2,3,8]", c, 0);
        check_output(ex, "b", "f32[2,3,4]", b, 0);
        check_output(ex, "rs", "f32[2,3,1]", rs, 1e-6);
        check_output(ex, "rm", "f32[3]", rm, 0);
        check_output(ex, "ra", "f32[]", &ra, 1e-6);
        check_output(ex, "am", "i32[2,4]", am, 0);
        check_output(ex, "g", "f64[2,2,2]", g, 0);
        check_output(ex, "sa", "f32[5,2]", sa, 1e-6);
        check_output(ex, "oh", "f32[4,3]", oh, 0);
        check_output(ex, "sel", "f32[2,3,4]", sel, 0);
        check_output(ex, "ci", "i32[2,3,4]", cif, 0);
        check_output(ex, "cf", "f64[4]", cf, 0);
        check_output(ex, "ri", "i32[3,4]", ri, 0);
        check_output(ex, "io", "i32[3,4]", io, 0);
        check_output(ex, "iof", "f32[2,3]", iof, 0);
        check_output(ex, "ls", "f32[2,3,4]", ls, 1e-5);
        check_output(ex, "pw", "f32[2,3,4]", pw, 1e-5);
        check_output(ex, "bb", "f32[2,3,4]", bb, 0);
        check_output(ex, "ap", "f32[1,2,2,1]", ap, 1e-6);
        check_output(ex, "mp", "f32[1,2,2,1]", mp, 0);
        check_output(ex, "sq", "f32[2,3,4]", sq, 1e-6);
        fedc_executor_destroy(ex);
    }
    fedc_program_destroy(p);
}

/* Dropout's mask is element i's uniform of the stream named by the i32[4] key
 * (key[0..1] the Philox key, key[2..3] the upper counter words): kept when the
 * uniform is >= rate, scaled by 1 / (1 - rate). */
static void test_dropout(void) {
    enum { N = 4096 };
    const double rate = 0.25;
    fedc_program *p = newp();
    if (!p) return;
    fedc_value x = fedc_input(p, "x", TY(FEDC_F32, N));
    fedc_value key = fedc_input(p, "key", TY(FEDC_I32, 4));
    CHECK_OK(fedc_program_output(p, "y", fedc_dropout(p, x, key, rate)));
    fedc_executor *ex = NULL;
    CHECK_OK(fedc_executor_create(&ex, p, NULL));
    fedc_program_destroy(p);
    if (!ex) return;
    static float xv[N], first[N];
    for (int i = 0; i < N; i++) xv[i] = 1.0f + (float)(i % 7);
    int32_t kv[4] = {12345, -7, 3, 99};
    CHECK_OK(fedc_executor_bind(ex, "x", xv));
    CHECK_OK(fedc_executor_bind(ex, "key", kv));
    CHECK_OK(fedc_executor_run(ex));
    const float *y = checked_output(ex, "y", FEDC_F32, N);
    if (y) {
        fedc_rng_stream s = {{{(uint32_t)kv[0], (uint32_t)kv[1]}}, (uint32_t)kv[2], (uint32_t)kv[3]};
        int kept = 0, bad = 0;
        for (int i = 0; i < N && bad < 5; i++) {
            bool keep = fedc_rng_uniform_f32(s, (uint64_t)i) >= rate;
            double want = keep ? xv[i] / (1 - rate) : 0;
            kept += keep;
            if (fabs(y[i] - want) > 1e-6 * fabs(want)) {
                fedc_test_fail(__FILE__, __LINE__, "y[%d] = %g, want %g", i, y[i], want);
                bad++;
            }
        }
        CHECK_MSG(fabs(kept / (double)N - (1 - rate)) < 0.03, "kept %d of %d", kept, N);
        memcpy(first, y, sizeof first);
    }
    /* same key: same mask; another key: another mask */
    CHECK_OK(fedc_executor_run(ex));
    y = checked_output(ex, "y", FEDC_F32, N);
    if (y) CHECK(memcmp(y, first, sizeof first) == 0);
    kv[3] = 100;
    CHECK_OK(fedc_executor_run(ex));
    y = checked_output(ex, "y", FEDC_F32, N);
    if (y) CHECK(memcmp(y, first, sizeof first) != 0);
    fedc_executor_destroy(ex);
}

/* ----------------------------------------------------------------- folds -- */

/* A fold reads its initial carries where they lie and writes its final carries
 * straight into its results: the initial values stay as they were, a carry
 * passed through comes out unchanged, no step (length 0) gives the initial
 * values, and a second run on the same executor gives the same values. One
 * initial carry is computed in the executor's memory and dies at the fold, so
 * the memory plan may give a result its place. */
static fedc_program *fold_program(void) {
    enum { N = 4, S = 3 };
    fedc_program *body = newp(), *p = newp();
    if (!body || !p) {
        fedc_program_destroy(body), fedc_program_destroy(p);
        return NULL;
    }
    fedc_value a = fedc_input(body, "a", TY(FEDC_F32, N)), b = fedc_input(body, "b", TY(FEDC_F32, N));
    fedc_value pass = fedc_input(body, "pass", TY(FEDC_F32, N)), x = fedc_input(body, "x", TY(FEDC_F32, N));
    fedc_program_output(body, "a", fedc_add(body, a, x));
    fedc_program_output(body, "b", fedc_mul(body, b, fedc_full(body, TY(FEDC_F32, N), 2.0)));
    fedc_program_output(body, "pass", pass);
    fedc_program_output(body, "y", a);
    fedc_value a0 = fedc_input(p, "a0", TY(FEDC_F32, N)), xs = fedc_input(p, "xs", TY(FEDC_F32, S, N));
    fedc_value length = fedc_input(p, "length", TY(FEDC_I32));
    fedc_value init[3] = {a0, fedc_add(p, a0, fedc_full(p, TY(FEDC_F32, N), 1.0)),
                          fedc_mul(p, a0, fedc_full(p, TY(FEDC_F32, N), 3.0))}, res[4];
    fedc_fold(p, body, init, 3, &xs, 1, length, res);
    fedc_program_destroy(body);
    const char *names[4] = {"a", "b", "pass", "ys"};
    for (int k = 0; k < 4; k++) fedc_program_output(p, names[k], res[k]);
    return p;
}

static void test_fold_carries(void) {
    enum { N = 4, S = 3 };
    fedc_program *p = fold_program();
    CHECK_MSG(p && !fedc_program_status(p), "build: %s", fedc_errmsg());
    fedc_executor *ex = NULL;
    if (p) CHECK_OK(fedc_executor_create(&ex, p, NULL));
    fedc_program_destroy(p);
    if (!ex) return;
    float a0[N] = {1, -2, 0.5f, 4}, xs[S][N], keep[N];
    for (int t = 0; t < S; t++)
        for (int i = 0; i < N; i++) xs[t][i] = (float)(10 * t + i);
    memcpy(keep, a0, sizeof keep);
    int32_t length = 0;
    CHECK_OK(fedc_executor_bind(ex, "a0", a0));
    CHECK_OK(fedc_executor_bind(ex, "xs", xs));
    CHECK_OK(fedc_executor_bind(ex, "length", &length));
    for (int run = 0; run < 2 * (S + 1); run++) {
        length = run % (S + 1);
        CHECK_OK(fedc_executor_run(ex));
        const float *a = checked_output(ex, "a", FEDC_F32, N), *b = checked_output(ex, "b", FEDC_F32, N);
        const float *pass = checked_output(ex, "pass", FEDC_F32, N), *ys = checked_output(ex, "ys", FEDC_F32, S * N);
        if (!a || !b || !pass || !ys) break;
        for (int i = 0; i < N; i++) {
            float want_a = a0[i], want_b = a0[i] + 1;
            for (int t = 0; t < S; t++) {
                float y = ys[t * N + i];
                CHECK_MSG(y == (t < length ? want_a : 0.0f), "length %d: ys[%d][%d] = %g", length, t, i, y);
                if (t < length) want_a += xs[t][i], want_b *= 2;
            }
            CHECK_MSG(a[i] == want_a, "length %d: a[%d] = %g, want %g", length, i, a[i], want_a);
            CHECK_MSG(b[i] == want_b, "length %d: b[%d] = %g, want %g", length, i, b[i], want_b);
            CHECK_MSG(pass[i] == a0[i] * 3, "length %d: pass[%d] = %g, want %g", length, i, pass[i], a0[i] * 3);
        }
        CHECK(memcmp(a0, keep, sizeof keep) == 0);
    }
    fedc_executor_destroy(ex);
}

int main(int argc, char **argv) {
    static const fedc_test tests[] = {
        {"errors_binding", test_errors_binding},
        {"errors_gather_range", test_errors_gather_range},
        {"errors_label_range", test_errors_label_range},
        {"dispatch_ops", test_dispatch_ops},
        {"dropout", test_dropout},
        {"fold_carries", test_fold_carries},
    };
    return fedc_test_main(argc, argv, tests, FEDC_COUNT_OF(tests));
}
