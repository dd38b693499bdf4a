/*
 * Tests for the executor's memory plan (fedc/exec.h, src/exec/plan_memory.c):
 * liveness planning (a long chain reuses a few buffers; diamonds and random DAGs
 * with many outputs stay correct while buffers are shared), and reshapes that
 * alias their operand's memory instead of taking a buffer.
 */
#include "core/internal.h"
#include "ir_check.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fedc/exec.h"
#include "fedc/program.h"
#include "kernels/kernels.h"
#include "test_rng.h"

/* -------------------------------------------------------------- planning -- */

enum { CHAIN_N = 1000, CHAIN_LEN = 32 };

static void test_plan_chain(void) {
    fedc_program *p = newp();
    if (!p) return;
    fedc_value v = fedc_input(p, "x", TY(FEDC_F32, CHAIN_N));
    fedc_value half = fedc_scalar(p, FEDC_F32, 0.5), one = fedc_scalar(p, FEDC_F32, 1);
    for (int i = 0; i < CHAIN_LEN; i++) {
        switch (i % 4) {
        case 0: v = fedc_add(p, v, one); break;
        case 1: v = fedc_mul(p, v, half); break;
        case 2: v = fedc_tanh(p, v); break;
        default: v = fedc_neg(p, v); break;
        }
    }
    CHECK_OK(fedc_program_output(p, "y", v));
    fedc_executor *ex = NULL;
    CHECK_OK(fedc_executor_create(&ex, p, NULL));
    fedc_program_destroy(p);
    if (!ex) return;
    size_t one_buffer = CHAIN_N * sizeof(float);
    size_t planned = fedc_executor_planned_bytes(ex), unplanned = fedc_executor_unplanned_bytes(ex);
    CHECK_MSG(unplanned >= CHAIN_LEN * one_buffer, "unplanned %zu < %zu", unplanned, CHAIN_LEN * one_buffer);
    CHECK_MSG(unplanned <= CHAIN_LEN * (one_buffer + 64), "unplanned %zu", unplanned);
    /* at most three buffers' worth (each rounded up to the 64-byte alignment) */
    CHECK_MSG(planned >= one_buffer && planned <= 3 * (one_buffer + 64), "planned %zu bytes for buffers of %zu",
              planned, one_buffer);
    CHECK(planned * 8 < unplanned);

    static float x[CHAIN_N];
    for (int i = 0; i < CHAIN_N; i++) x[i] = (float)(i - CHAIN_N / 2) / 100.0f;
    CHECK_OK(fedc_executor_bind(ex, "x", x));
    CHECK_OK(fedc_executor_run(ex));
    const float *y = checked_output(ex, "y", FEDC_F32, CHAIN_N);
    for (int i = 0; y && i < CHAIN_N; i++) {
        float t = x[i];
        for (int k = 0; k < CHAIN_LEN; k++) {
            switch (k % 4) {
            case 0: t = t + 1.0f; break;
            case 1: t = t * 0.5f; break;
            case 2: t = tanhf(t); break;
            default: t = -t; break;
            }
        }
        CHECK_NEAR(y[i], t, 1e-5);
    }
    fedc_executor_destroy(ex);
}

/* A diamond with several branches whose lifetimes overlap:
 *   a = x + 1; b = a * a; c = a - 1; d = a * 3; e = b - d; f = c + e; g = -b;
 *   h = f + g; out = h * d  = (x - 3a) * 3a, and b is an output too. */
static void test_plan_diamond(void) {
    for (int keep_b = 0; keep_b < 2; keep_b++) {
        fedc_program *p = newp();
        if (!p) return;
        enum { N = 300 };
        fedc_value x = fedc_input(p, "x", TY(FEDC_F32, N));
        fedc_value one = fedc_scalar(p, FEDC_F32, 1), three = fedc_scalar(p, FEDC_F32, 3);
        fedc_value a = fedc_add(p, x, one);
        fedc_value b = fedc_mul(p, a, a);
        fedc_value c = fedc_sub(p, a, one);
        fedc_value d = fedc_mul(p, a, three);
        fedc_value e = fedc_sub(p, b, d);
        fedc_value f = fedc_add(p, c, e);
        fedc_value g = fedc_neg(p, b);
        fedc_value h = fedc_add(p, f, g);
        fedc_value out = fedc_mul(p, h, d);
        CHECK_OK(fedc_program_output(p, "out", out));
        if (keep_b) CHECK_OK(fedc_program_output(p, "b", b));
        fedc_executor *ex = NULL;
        CHECK_OK(fedc_executor_create(&ex, p, NULL));
        fedc_program_destroy(p);
        if (!ex) return;
        CHECK(fedc_executor_planned_bytes(ex) < fedc_executor_unplanned_bytes(ex));
        float xv[N];
        for (int i = 0; i < N; i++) xv[i] = (float)(i % 17) * 0.25f - 2;
        CHECK_OK(fedc_executor_bind(ex, "x", xv));
        CHECK_OK(fedc_executor_run(ex));
        const float *ov = checked_output(ex, "out", FEDC_F32, N);
        const float *bv = keep_b ? checked_output(ex, "b", FEDC_F32, N) : NULL;
        for (int i = 0; ov && i < N; i++) {
            double av = xv[i] + 1.0;
            CHECK_NEAR(ov[i], (xv[i] - 3 * av) * 3 * av, 1e-5);
            if (bv) CHECK_NEAR(bv[i], av * av, 1e-5);
        }
        fedc_executor_destroy(ex);
    }
}

/* Random DAGs of values of shapes [8,16], [1,16] and [8,1] (broadcasting, and
 * reductions between them), with many outputs, checked against a plain
 * interpreter. Buffers of different sizes come and go, so first-fit placement
 * makes gaps and reuses them. */
enum { DR = 8, DC = 16, DAG_STEPS = 70, DAG_MAX = 3 * DAG_STEPS + 4 };

typedef struct dval {
    int rows, cols;
    float v[DR * DC];
} dval;

static float dget(const dval *a, int r, int c) { return a->v[(a->rows == 1 ? 0 : r) * a->cols + (a->cols == 1 ? 0 : c)]; }

static void random_dag(uint64_t seed, bool reference) {
    rng r = {seed};
    fedc_program *p = newp();
    if (!p) return;
    static dval vals[DAG_MAX];
    fedc_value ids[DAG_MAX];
    bool is_output[DAG_MAX];
    int n = 0;
    float xin[DR * DC], rin[DC];
    fill_f32(&r, xin, DR * DC, -1, 1);
    fill_f32(&r, rin, DC, -1, 1);
    ids[n] = fedc_input(p, "x", TY(FEDC_F32, DR, DC));
    vals[n].rows = DR, vals[n].cols = DC;
    memcpy(vals[n].v, xin, sizeof xin);
    is_output[n++] = false;
    ids[n] = fedc_input(p, "r", TY(FEDC_F32, 1, DC));
    vals[n].rows = 1, vals[n].cols = DC;
    memcpy(vals[n].v, rin, sizeof rin);
    is_output[n++] = false;

    for (int step = 0; step < DAG_STEPS; step++) {
        int kind = rng_int(&r, 10);
        /* prefer recent values, so lifetimes vary from short to long */
        int ia = n - 1 - rng_int(&r, n < 6 ? n : 6);
        int ib = rng_int(&r, 3) ? n - 1 - rng_int(&r, n < 10 ? n : 10) : rng_int(&r, n);
        const dval *a = &vals[ia], *b = &vals[ib];
        dval *y = &vals[n];
        fedc_value v;
        if (kind < 6) { /* binary, then tanh */
            int op = rng_int(&r, 5);
            y->rows = a->rows > b->rows ? a->rows : b->rows;
            y->cols = a->cols > b->cols ? a->cols : b->cols;
            for (int i = 0; i < y->rows; i++)
                for (int j = 0; j < y->cols; j++) {
                    float u = dget(a, i, j), w = dget(b, i, j), z;
                    switch (op) {
                    case 0: z = u + w; break;
                    case 1: z = u - w; break;
                    case 2: z = u * w; break;
                    case 3: z = u > w ? u : w; break;
                    default: z = u < w ? u : w; break;
                    }
                    y->v[i * y->cols + j] = z;
                }
            fedc_value (*fns[5])(fedc_program *, fedc_value, fedc_value) = {fedc_add, fedc_sub, fedc_mul,
                                                                            fedc_maximum, fedc_minimum};
            v = fns[op](p, ids[ia], ids[ib]);
        } else if (kind < 8) { /* unary */
            int op = rng_int(&r, 3);
            *y = *a;
            for (int i = 0; i < a->rows * a->cols; i++) {
                float u = a->v[i];
                y->v[i] = op == 0 ? -u : op == 1 ? (u > 0 ? u : 0) : (float)(1 / (1 + exp(-(double)u)));
            }
            v = op == 0 ? fedc_neg(p, ids[ia]) : op == 1 ? fedc_relu(p, ids[ia]) : fedc_sigmoid(p, ids[ia]);
        } else { /* a reduction that keeps dims: sum over rows or max over columns */
            bool rows = kind == 8;
            y->rows = rows ? 1 : a->rows;
            y->cols = rows ? a->cols : 1;
            for (int i = 0; i < y->rows; i++)
                for (int j = 0; j < y->cols; j++) {
                    float acc = rows ? 0.0f : -INFINITY;
                    int len = rows ? a->rows : a->cols;
                    for (int k = 0; k < len; k++) {
                        float u = rows ? a->v[k * a->cols + j] : a->v[i * a->cols + k];
                        acc = rows ? acc + u : (u > acc ? u : acc);
                    }
                    y->v[i * y->cols + j] = acc;
                }
            v = rows ? fedc_reduce_sum(p, ids[ia], (int[]){0}, 1, true)
                     : fedc_reduce_max(p, ids[ia], (int[]){-1}, 1, true);
        }
        ids[n] = v;
        is_output[n++] = false;
        if (kind < 6 || kind >= 8) { /* squash, to keep values bounded */
            dval *t = &vals[n];
            *t = vals[n - 1];
            for (int i = 0; i < t->rows * t->cols; i++) t->v[i] = tanhf(t->v[i]);
            ids[n] = fedc_tanh(p, v);
            is_output[n++] = false;
        }
        if (rng_int(&r, 5) == 0) is_output[n - 1] = true;
    }
    is_output[n - 1] = true;
    char name[16];
    for (int i = 2; i < n; i++) {
        if (!is_output[i]) continue;
        snprintf(name, sizeof name, "o%d", i);
        CHECK_OK(fedc_program_output(p, name, ids[i]));
    }
    CHECK_OK(fedc_program_status(p));
    fedc_executor *ex = NULL;
    fedc_exec_options opt = {.reference_kernels = reference};
    CHECK_OK(fedc_executor_create(&ex, p, &opt));
    fedc_program_destroy(p);
    if (!ex) return;
    CHECK(fedc_executor_planned_bytes(ex) <= fedc_executor_unplanned_bytes(ex));
    CHECK_OK(fedc_executor_bind(ex, "x", xin));
    CHECK_OK(fedc_executor_bind(ex, "r", rin));
    CHECK_OK(fedc_executor_run(ex));
    int failures = fedc_test_failures();
    for (int i = 2; i < n && fedc_test_failures() < failures + 5; i++) {
        if (!is_output[i]) continue;
        snprintf(name, sizeof name, "o%d", i);
        const float *y = checked_output(ex, name, FEDC_F32, vals[i].rows * vals[i].cols);
        for (int k = 0; y && k < vals[i].rows * vals[i].cols; k++)
            CHECK_MSG(fabs(y[k] - vals[i].v[k]) <= 1e-4 * (fabs(vals[i].v[k]) > 1 ? fabs(vals[i].v[k]) : 1),
                      "seed %llu, output %s[%d]: %.9g, want %.9g", (unsigned long long)seed, name, k, y[k],
                      vals[i].v[k]);
    }
    fedc_executor_destroy(ex);
}

static void test_plan_random_dags(void) {
    for (uint64_t seed = 1; seed <= 40; seed++) random_dag(seed * 0x9E3779B97F4A7C15ull, seed % 4 == 0);
}

/* A reshape that is not an output reads its operand's memory (no copy, no
 * buffer): tanh -> reshape -> reshape -> neg plans two buffers, and @clients
 * values reshape per client. */
static void test_reshape_aliases(void) {
    fedc_program *p;
    CHECK_OK(fedc_program_create(&p));
    fedc_value x = fedc_input(p, "x", fedc_type_make(FEDC_F32, 2, (int64_t[]){4, 6}));
    fedc_value r = fedc_reshape(p, fedc_tanh(p, x), 1, (int64_t[]){24});
    fedc_value s = fedc_reshape(p, r, 2, (int64_t[]){6, 4});
    CHECK_OK(fedc_program_output(p, "y", fedc_neg(p, s)));
    fedc_type ct = fedc_type_make(FEDC_F32, 2, (int64_t[]){2, 3});
    ct.placement = FEDC_CLIENTS;
    fedc_value c = fedc_input(p, "c", ct);
    CHECK_OK(fedc_program_output(p, "z", fedc_neg(p, fedc_reshape(p, c, 1, (int64_t[]){6}))));
    fedc_exec_options o = {.clients = 3};
    fedc_executor *ex = NULL;
    CHECK_OK(fedc_executor_create(&ex, p, &o));
    fedc_program_destroy(p);
    if (!ex) return;
    /* three buffers of 96, 96 and 72 bytes (tanh, neg [24]; neg [6] x 3 clients), each
     * rounded up to 128: none for the reshapes */
    CHECK_MSG(fedc_executor_unplanned_bytes(ex) == 3 * 128, "unplanned %zu", fedc_executor_unplanned_bytes(ex));
    float xs[24], cs[18];
    for (int i = 0; i < 24; i++) xs[i] = (float)i / 10 - 1;
    for (int i = 0; i < 18; i++) cs[i] = (float)i;
    CHECK_OK(fedc_executor_bind(ex, "x", xs));
    CHECK_OK(fedc_executor_bind(ex, "c", cs));
    CHECK_OK(fedc_executor_run(ex));
    const float *y = checked_output(ex, "y", FEDC_F32, 24), *z = checked_output(ex, "z", FEDC_F32, 6); /* per client */
    float th[24]; /* the fast kernels' tanh, bit for bit (its own code, not libm's) */
    CHECK_OK(fedc__kernels_fast.unary(FEDC_U_TANH, FEDC_F32, 24, xs, th, 0));
    for (int i = 0; y && i < 24; i++) CHECK(y[i] == -th[i] && fabsf(th[i] - tanhf(xs[i])) <= 1e-6f);
    for (int i = 0; z && i < 18; i++) CHECK(z[i] == -cs[i]);
    fedc_executor_destroy(ex);
}

int main(int argc, char **argv) {
    static const fedc_test tests[] = {
        {"plan_chain", test_plan_chain},
        {"reshape_aliases", test_reshape_aliases},
        {"plan_diamond", test_plan_diamond},
        {"plan_random_dags", test_plan_random_dags},
    };
    return fedc_test_main(argc, argv, tests, FEDC_COUNT_OF(tests));
}
