/*
 * Tests for a linear layer's epilogue (kernels' matmul_bias, plan_epilogues):
 * matmul_bias gives the bits of the fast matmul, then add and gelu, for products
 * cut into blocks (1 and 2 threads) or not, through BLAS's beta = 0 and beta = 1
 * paths, rows whose length is no multiple of the vectors', empty depth, f32 and
 * f64; and the executor runs matmul -> add(bias) [-> gelu] as one kernel when
 * only the add reads the product, keeping the add's value for a gelu's
 * derivative, with the unfused plan's bits.
 */
#include "harness.h"
#include "kernels_check.h"

#include <math.h>
#include <string.h>

#include "exec/executor_plan.h"
#include "fedc/exec.h"
#include "fedc/program.h"
#include "kernels/kernels.h"

#define DIMS(...) ((int64_t[]){__VA_ARGS__})
#define NDIMS(...) ((int)(sizeof(DIMS(__VA_ARGS__)) / sizeof(int64_t)))
#define TY(dt, ...) fedc_type_make((dt), NDIMS(__VA_ARGS__), DIMS(__VA_ARGS__))

static fedc__kshape kshape(int rank, const int64_t *dims) {
    fedc__kshape s = {.rank = rank};
    for (int d = 0; d < rank; d++) s.dims[d] = dims[d];
    return s;
}

static void matmul_bias_case(fedc_dtype dt, int64_t m, int64_t n, int64_t k, int ta, int tb, int act, int threads) {
    size_t es = fedc_dtype_size(dt), bytes = (size_t)(m * n) * es;
    fedc__kshape cs = kshape(2, (int64_t[]){m, n}), bs = kshape(1, (int64_t[]){n});
    void *a = random_array(dt, m * k, 1, 0), *b = random_array(dt, k * n, 1, 0), *bias = random_array(dt, n, 1, 0);
    void *want = alloc_poison(bytes), *want_act = alloc_poison(bytes), *got = alloc_poison(bytes);
    void *got_act = alloc_poison(bytes);
    fedc_pool *pool = NULL;
    if (threads > 1) CHECK_OK(fedc_pool_create(&pool, threads));
    fedc_pool *outer = fedc__kernels_set_pool(pool);
    CHECK_OK(F->matmul(dt, 1, m, n, k, ta, tb, a, 0, b, 0, want));
    CHECK_OK(F->binary(FEDC_B_ADD, dt, &cs, want, &bs, bias, &cs, want));
    CHECK_OK(F->gelu(dt, m * n, want, want_act));
    CHECK_OK(F->matmul_bias(dt, m, n, k, ta, tb, a, b, bias, got, act ? got_act : NULL));
    char what[120];
    snprintf(what, sizeof what, "matmul_bias %s %lldx%lldx%lld ta %d tb %d act %d, %d threads", dt_name(dt),
             (long long)m, (long long)n, (long long)k, ta, tb, act, threads);
    check_same_bits(got, want, bytes, what);
    if (act) check_same_bits(got_act, want_act, bytes, what);
    fedc__kernels_set_pool(outer);
    fedc_pool_destroy(pool);
    fedc_free(a), fedc_free(b), fedc_free(bias), fedc_free(want), fedc_free(want_act), fedc_free(got);
    fedc_free(got_act);
}

static void test_kernel(void) {
    for (int threads = 1; threads <= 2; threads++)
        for (int act = 0; act <= 1; act++) {
            matmul_bias_case(FEDC_F32, 1024, 768, 256, 0, 0, act, threads); /* a transformer's qkv: blocks, beta 1 */
            matmul_bias_case(FEDC_F32, 600, 37, 300, 0, 0, act, threads);  /* rows of 37: the vectors' tails */
            matmul_bias_case(FEDC_F32, 300, 70, 90, 1, 1, act, threads);   /* small: beta 0 */
            matmul_bias_case(FEDC_F32, 20, 300, 700, 0, 0, act, threads);  /* a few rows */
            matmul_bias_case(FEDC_F64, 300, 520, 64, 0, 1, act, threads);  /* f64, cut by columns */
            matmul_bias_case(FEDC_F32, 5, 7, 0, 0, 0, act, threads);       /* empty depth: the bias alone */
        }
    float x[4] = {1, 2, 3, 4}, y[4];
    CHECK_ERR(F->matmul_bias(FEDC_F32, -1, 2, 2, 0, 0, x, x, x, y, NULL), FEDC_EINVAL, "negative");
    CHECK_ERR(F->matmul_bias(FEDC_I32, 2, 2, 2, 0, 0, x, x, x, y, NULL), FEDC_EUNSUPPORTED, "dtype");
    CHECK(R->matmul_bias == NULL);
}

/* h = x [B, T, C] @ w + b, g = gelu(h), and gelu's derivative reading h (a
 * training step's MLP); z = x2 @ w2 + b2 (2-D, no activation); q = x @ w3 + b3
 * with the product read twice (not fused). `keep` makes the products outputs,
 * which rules fusion out: the plain plan to compare with. */
enum { B = 4, T = 33, C = 40, H = 70, Z = 300 };

static fedc_program *linear_program(bool keep, fedc_value ids[3]) {
    fedc_program *p = NULL;
    CHECK_OK(fedc_program_create(&p));
    if (!p) return NULL;
    fedc_value x = fedc_tanh(p, fedc_input(p, "x", TY(FEDC_F32, B, T, C))), w = fedc_input(p, "w", TY(FEDC_F32, C, H));
    fedc_value b = fedc_input(p, "b", TY(FEDC_F32, H)), ct = fedc_input(p, "ct", TY(FEDC_F32, B, T, H));
    ids[0] = fedc_matmul(p, x, w, false, false);
    fedc_value h = fedc_add(p, ids[0], b), g = fedc_gelu(p, h);
    fedc_value t = fedc_exp(p, ct); /* placed while h and g are pending */
    CHECK_OK(fedc_program_output(p, "t", fedc_add(p, t, t)));
    CHECK_OK(fedc_program_output(p, "g", fedc_add(p, g, g)));
    CHECK_OK(fedc_program_output(p, "dh", fedc_gelu_grad(p, h, ct)));
    fedc_value x2 = fedc_input(p, "x2", TY(FEDC_F32, Z, C)), w2 = fedc_input(p, "w2", TY(FEDC_F32, H, C));
    fedc_value b2 = fedc_input(p, "b2", TY(FEDC_F32, H)); /* before the product: its memory is ready then */
    ids[1] = fedc_matmul(p, x2, w2, false, true);
    CHECK_OK(fedc_program_output(p, "z", fedc_add(p, ids[1], b2)));
    ids[2] = fedc_matmul(p, x, w, false, false);
    CHECK_OK(fedc_program_output(p, "q", fedc_add(p, fedc_add(p, ids[2], b), ids[2])));
    if (keep) {
        CHECK_OK(fedc_program_output(p, "p0", ids[0]));
        CHECK_OK(fedc_program_output(p, "p1", ids[1]));
    }
    return p;
}

static fedc_executor *linear_run(bool keep, fedc_value ids[3], const float *const *data) {
    static const char *const names[7] = {"x", "w", "b", "ct", "x2", "w2", "b2"};
    fedc_program *p = linear_program(keep, ids);
    fedc_executor *ex = NULL;
    fedc_exec_options o = {.threads = 2};
    if (p) CHECK_OK(fedc_executor_create(&ex, p, &o));
    fedc_program_destroy(p);
    if (!ex) return NULL;
    for (int i = 0; i < 7; i++) CHECK_OK(fedc_executor_bind(ex, names[i], data[i]));
    CHECK_OK(fedc_executor_run(ex));
    return ex;
}

static void test_executor(void) {
    static const int64_t counts[7] = {B * T * C, C * H, H, B * T * H, Z * C, H * C, H};
    float *data[7];
    for (int i = 0; i < 7; i++) data[i] = random_array(FEDC_F32, counts[i], 2, 0);
    data[0][5] = NAN; /* the add's and gelu's NaN handling must match too */
    fedc_value ids[3];
    fedc_executor *fused = linear_run(false, ids, (const float *const *)data);
    fedc_executor *plain = linear_run(true, ids, (const float *const *)data);
    if (fused && plain) {
        CHECK(fused->epi && fused->epi[ids[0]].out != FEDC_NONE && fused->epi[ids[0]].act != FEDC_NONE);
        CHECK(fused->epi && fused->epi[ids[1]].out != FEDC_NONE && fused->epi[ids[1]].act == FEDC_NONE);
        CHECK(fused->epi && fused->epi[ids[2]].out == FEDC_NONE);
        CHECK(!plain->epi || (plain->epi[ids[0]].out == FEDC_NONE && plain->epi[ids[1]].out == FEDC_NONE));
        const char *names[5] = {"t", "g", "dh", "z", "q"};
        const size_t bytes[5] = {B * T * H, B * T * H, B * T * H, Z * H, B * T * H};
        for (int i = 0; i < 5; i++) {
            const void *a = NULL, *c = NULL;
            fedc_type ta, tc;
            CHECK_OK(fedc_executor_output(fused, names[i], &a, &ta));
            CHECK_OK(fedc_executor_output(plain, names[i], &c, &tc));
            CHECK_MSG(a && c && memcmp(a, c, bytes[i] * sizeof(float)) == 0, "%s: fused and plain differ", names[i]);
        }
    }
    fedc_executor_destroy(fused);
    fedc_executor_destroy(plain);
    for (int i = 0; i < 7; i++) fedc_free(data[i]);
}

int main(int argc, char **argv) {
    static const fedc_test tests[] = {
        {"kernel", test_kernel},
        {"executor", test_executor},
    };
    return fedc_test_main(argc, argv, tests, FEDC_COUNT_OF(tests));
}
