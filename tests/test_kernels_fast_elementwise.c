/* Tests for the fast kernel table, elementwise part (unary, binary, pairs, reduce,
 * select, dropout, cast, slice, pad and transpose; products and windows are in
 * test_kernels_fast.c): each fast entry against fedc__kernels_ref on odd shapes and
 * every broadcast layout, run twice to check that it is deterministic, and bitwise
 * the same on 1 and several threads where the kernel splits its work. */
#include "harness.h"
#include "kernels_check.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>

#include "kernels/fast.h"
#include "kernels/kernels.h"

/* ----------------------------------------------------------------- unary -- */

static void unary_case(fedc__unary_op op, fedc_dtype dt, int64_t n, double param) {
    size_t es = fedc_dtype_size(dt);
    /* Domains: log and sqrt also see negatives (NaN on both sides); exp and
     * sigmoid see large magnitudes. */
    void *x = random_array(dt, n, op == FEDC_U_EXP || op == FEDC_U_SIGMOID ? 40 : 3,
                           dt == FEDC_I32 ? 1 : 0);
    if (op == FEDC_U_POW && param != (double)(int64_t)param)
        for (int64_t i = 0; i < n; i++) store(dt, x, i, fabs(load(dt, x, i)));
    void *ref = alloc_poison((size_t)n * es), *fast = alloc_poison((size_t)n * es),
         *inplace = alloc_bytes((size_t)n * es);
    memcpy(inplace, x, (size_t)n * es);
    char what[96];
    snprintf(what, sizeof what, "unary op %d %s n %lld param %g", (int)op, dt_name(dt),
             (long long)n, param);
    CHECK_OK(R->unary(op, dt, n, x, ref, param));
    CHECK_OK(F->unary(op, dt, n, x, fast, param));
    CHECK_OK(F->unary(op, dt, n, inplace, inplace, param)); /* y aliasing x */
    if (dt == FEDC_I32) {
        CHECK_MSG(memcmp(fast, ref, (size_t)n * es) == 0, "%s", what);
    } else {
        check_close(dt, n, fast, ref, PER_ELEMENT, what);
        check_same_bits(fast, inplace, (size_t)n * es, what);
    }
    fedc_free(x), fedc_free(ref), fedc_free(fast), fedc_free(inplace);
}

/* f32 tanh (its own vectorised code) keeps its relative precision near 0, where
 * 1 - 2 / (e^2x + 1) alone would not: within 4 float ulp of the double tanh from
 * 1e-8 to 100, and exact at 0, +-inf and NaN. */
static void test_tanh_f32_relative(void) {
    enum { N = 4001 };
    static float x[N], y[N];
    for (int i = 0; i < N; i++) x[i] = (i % 2 ? -1.0f : 1.0f) * powf(10.0f, -8.0f + 10.0f * (float)i / (N - 1));
    CHECK_OK(F->unary(FEDC_U_TANH, FEDC_F32, N, x, y, 0));
    for (int i = 0; i < N; i++) {
        double want = tanh((double)x[i]);
        if (fabs(y[i] - want) > 4 * 5.96e-8 * fabs(want)) {
            fedc_test_fail(__FILE__, __LINE__, "tanh(%.9g) = %.9g, want %.9g", x[i], y[i], want);
            break;
        }
    }
    float special[4] = {0.0f, INFINITY, -INFINITY, NAN}, got[4];
    CHECK_OK(F->unary(FEDC_U_TANH, FEDC_F32, 4, special, got, 0));
    CHECK(got[0] == 0.0f && got[1] == 1.0f && got[2] == -1.0f && isnan(got[3]));
}

static void test_unary(void) {
    static const int64_t sizes[] = {1, 7, 31, 2500};
    for (int d = 0; d < 2; d++)
        for (int op = 0; op < FEDC_U_COUNT; op++)
            for (int s = 0; s < FEDC_COUNT_OF(sizes); s++) {
                fedc_dtype dt = d ? FEDC_F64 : FEDC_F32;
                unary_case((fedc__unary_op)op, dt, sizes[s], 2.0);
                if (op == FEDC_U_POW) unary_case(FEDC_U_POW, dt, sizes[s], 0.1);
                if (op == FEDC_U_POW) unary_case(FEDC_U_POW, dt, sizes[s], 3.0);
            }
    unary_case(FEDC_U_NEG, FEDC_I32, 13, 0); /* falls back to the reference */
    float x = 1, y;
    CHECK_ERR(F->unary(FEDC_U_EXP, FEDC_U8, 1, &x, &y, 0), FEDC_EUNSUPPORTED, "u8");
}

/* ---------------------------------------------------------------- binary -- */

static fedc__kshape kshape(int rank, const int64_t *dims) {
    fedc__kshape s = {.rank = rank};
    for (int d = 0; d < rank; d++) s.dims[d] = dims[d];
    return s;
}

/* ---------------------------------------------------------------- pairs -- */

/* select_gt and sub_scaled give the bits of gt then select, and mul then sub, run
 * as the fast kernels run them one at a time: both dtypes, a and b full or scalar,
 * with NaN, -0 and ties with s among the inputs; on 1 and 3 threads; out aliasing
 * a full operand. */
static void pairs_case(fedc_dtype dt, int64_t n, int threads) {
    size_t es = fedc_dtype_size(dt), bytes = (size_t)n * es;
    fedc__kshape full = kshape(1, (int64_t[]){n}), one = kshape(0, NULL);
    void *x = random_array(dt, n, 2, 0.25), *a = random_array(dt, n, 1, 0), *g = random_array(dt, n, 3, 0);
    void *s = random_array(dt, 1, 1, 0.25), *b = random_array(dt, 1, 1, 0);
    void *want = alloc_poison(bytes), *got = alloc_poison(bytes);
    uint8_t *cond = alloc_bytes((size_t)n);
    store(dt, x, 0, NAN), store(dt, x, 1, -0.0), store(dt, x, 2, load(dt, s, 0));
    fedc_pool *pool = NULL;
    if (threads > 1) CHECK_OK(fedc_pool_create(&pool, threads));
    fedc_pool *outer = fedc__kernels_set_pool(pool);
    for (int layout = 0; layout < 3; layout++) { /* a full, b scalar; a scalar, b full; both full */
        const void *pa = layout == 1 ? b : a, *pb = layout == 1 ? a : layout == 2 ? g : b;
        const fedc__kshape *as = layout == 1 ? &one : &full, *bs = layout == 0 ? &one : &full;
        CHECK_OK(F->binary(FEDC_B_GT, dt, &full, x, &one, s, &full, cond));
        CHECK_OK(F->select(dt, &full, cond, as, pa, bs, pb, &full, want));
        CHECK_OK(F->select_gt(dt, n, x, s, pa, layout != 1, pb, layout != 0, got));
        check_same_bits(got, want, bytes, "select_gt against gt + select");
    }
    CHECK_OK(F->binary(FEDC_B_MUL, dt, &one, s, &full, g, &full, want));
    CHECK_OK(F->binary(FEDC_B_SUB, dt, &full, a, &full, want, &full, want));
    memcpy(got, a, bytes); /* out aliasing w */
    CHECK_OK(F->sub_scaled(dt, n, got, s, g, got));
    check_same_bits(got, want, bytes, "sub_scaled against mul + sub");
    CHECK_ERR(F->sub_scaled(FEDC_I32, n, a, s, g, got), FEDC_EUNSUPPORTED, "dtype");
    CHECK_ERR(F->select_gt(dt, n, x, s, a, 2, b, 0, got), FEDC_EINVAL, "steps");
    fedc__kernels_set_pool(outer);
    fedc_pool_destroy(pool);
    fedc_free(x), fedc_free(a), fedc_free(g), fedc_free(s), fedc_free(b), fedc_free(want), fedc_free(got);
    fedc_free(cond);
}

/* matmul_sub_scaled gives the bits of the fast matmul, then mul and sub: in the
 * rows GEMM (a few rows; a transposed a of short depth, as a weight gradient),
 * through BLAS (a long side, f64), on 1 and 3 threads (blocks of the product),
 * and with an empty depth. */
static void matmul_sub_scaled_case(fedc_dtype dt, int64_t m, int64_t n, int64_t k, int ta, int tb, int threads) {
    size_t es = fedc_dtype_size(dt), bytes = (size_t)(m * n) * es;
    fedc__kshape cs = kshape(2, (int64_t[]){m, n}), one = kshape(0, NULL);
    void *a = random_array(dt, m * k, 1, 0), *b = random_array(dt, k * n, 1, 0), *w = random_array(dt, m * n, 1, 0);
    void *s = random_array(dt, 1, 1, 0), *want = alloc_poison(bytes), *got = alloc_poison(bytes);
    fedc_pool *pool = NULL;
    if (threads > 1) CHECK_OK(fedc_pool_create(&pool, threads));
    fedc_pool *outer = fedc__kernels_set_pool(pool);
    CHECK_OK(F->matmul(dt, 1, m, n, k, ta, tb, a, 0, b, 0, want));
    CHECK_OK(F->binary(FEDC_B_MUL, dt, &one, s, &cs, want, &cs, want));
    CHECK_OK(F->binary(FEDC_B_SUB, dt, &cs, w, &cs, want, &cs, want));
    CHECK_OK(F->matmul_sub_scaled(dt, m, n, k, ta, tb, a, b, w, s, got));
    char what[120];
    snprintf(what, sizeof what, "matmul_sub_scaled %s %lldx%lldx%lld ta %d tb %d, %d threads", dt_name(dt),
             (long long)m, (long long)n, (long long)k, ta, tb, threads);
    CHECK_MSG(memcmp(got, want, bytes) == 0, "%s: not matmul, mul and sub's bits", what);
    fedc__kernels_set_pool(outer);
    fedc_pool_destroy(pool);
    fedc_free(a), fedc_free(b), fedc_free(w), fedc_free(s), fedc_free(want), fedc_free(got);
}

static void test_matmul_sub_scaled(void) {
    for (int threads = 1; threads <= 3; threads += 2)
        for (int d = 0; d < 2; d++) {
            fedc_dtype dt = d ? FEDC_F64 : FEDC_F32;
            matmul_sub_scaled_case(dt, 2304, 128, 20, 1, 0, threads); /* the dense layer's weight gradient */
            matmul_sub_scaled_case(dt, 20, 300, 700, 0, 0, threads);  /* a few rows, several depth slices */
            matmul_sub_scaled_case(dt, 300, 70, 90, 0, 1, threads);   /* BLAS */
            matmul_sub_scaled_case(dt, 33, 17, 40, 1, 0, threads);    /* depth past the short side: BLAS */
            matmul_sub_scaled_case(dt, 5, 7, 0, 0, 0, threads);       /* empty depth */
        }
    CHECK_ERR(F->matmul_sub_scaled(FEDC_I32, 1, 1, 1, 0, 0, NULL, NULL, NULL, NULL, NULL), FEDC_EUNSUPPORTED, "dtype");
}

static void test_pairs(void) {
    for (int d = 0; d < 2; d++)
        for (int threads = 1; threads <= 3; threads += 2) {
            pairs_case(d ? FEDC_F64 : FEDC_F32, 7, threads);
            pairs_case(d ? FEDC_F64 : FEDC_F32, 100003, threads); /* several spans */
        }
}


/* out's shape: a and b right-aligned, each dim the non-1 one. */
static fedc__kshape broadcast_shape(const fedc__kshape *a, const fedc__kshape *b) {
    fedc__kshape o = {.rank = a->rank > b->rank ? a->rank : b->rank};
    for (int d = 0; d < o.rank; d++) {
        int da = d - (o.rank - a->rank), db = d - (o.rank - b->rank);
        int64_t x = da >= 0 ? a->dims[da] : 1, y = db >= 0 ? b->dims[db] : 1;
        o.dims[d] = x == 1 ? y : x;
    }
    return o;
}

static int same_shape(const fedc__kshape *a, const fedc__kshape *b) {
    return a->rank == b->rank && memcmp(a->dims, b->dims, (size_t)a->rank * sizeof(int64_t)) == 0;
}

typedef struct binary_case {
    int arank;
    int64_t adims[4];
    int brank;
    int64_t bdims[4];
} binary_case;

static void binary_check(fedc__binary_op op, fedc_dtype dt, const fedc__kshape *out, int64_t n,
                         const void *fast, const void *ref, const char *what) {
    if (op >= FEDC_B_EQ || dt == FEDC_I32)
        CHECK_MSG(memcmp(fast, ref, (size_t)n * (op >= FEDC_B_EQ ? 1 : 4)) == 0, "%s", what);
    else
        check_close(dt, n, fast, ref, PER_ELEMENT, what);
    (void)out;
}

/* out = a op b on both tables, then again with out aliasing each operand that has
 * out's shape (the contract allows exactly that). */
static void binary_case_run(fedc__binary_op op, fedc_dtype dt, const binary_case *bc) {
    fedc__kshape as = kshape(bc->arank, bc->adims), bs = kshape(bc->brank, bc->bdims);
    fedc__kshape os = broadcast_shape(&as, &bs);
    int64_t na = fedc__kshape_count(&as), nb = fedc__kshape_count(&bs), n = fedc__kshape_count(&os);
    size_t es = fedc_dtype_size(dt), oes = op >= FEDC_B_EQ ? 1 : es;
    double quantum = dt == FEDC_I32 ? 1 : 0.5; /* equal pairs for the comparisons */
    void *a = random_array(dt, na, 3, quantum), *b = random_array(dt, nb, 3, quantum);
    if (dt != FEDC_I32 && na > 3) store(dt, a, 3, NAN);
    if (dt != FEDC_I32 && nb > 2) store(dt, b, 2, NAN);
    void *ref = alloc_poison((size_t)n * oes), *fast = alloc_poison((size_t)n * oes),
         *fast2 = alloc_poison((size_t)n * oes);
    char what[128];
    snprintf(what, sizeof what, "binary op %d %s a rank %d [%lld..] b rank %d [%lld..]", (int)op,
             dt_name(dt), as.rank, (long long)(as.rank ? as.dims[0] : 0), bs.rank,
             (long long)(bs.rank ? bs.dims[0] : 0));
    CHECK_OK(R->binary(op, dt, &as, a, &bs, b, &os, ref));
    CHECK_OK(F->binary(op, dt, &as, a, &bs, b, &os, fast));
    CHECK_OK(F->binary(op, dt, &as, a, &bs, b, &os, fast2));
    binary_check(op, dt, &os, n, fast, ref, what);
    check_same_bits(fast, fast2, (size_t)n * oes, what);
    if (op < FEDC_B_EQ && same_shape(&as, &os)) { /* out is a */
        CHECK_OK(F->binary(op, dt, &as, a, &bs, b, &os, a));
        binary_check(op, dt, &os, n, a, ref, what);
    } else if (op < FEDC_B_EQ && same_shape(&bs, &os)) { /* out is b */
        CHECK_OK(F->binary(op, dt, &as, a, &bs, b, &os, b));
        binary_check(op, dt, &os, n, b, ref, what);
    }
    fedc_free(a), fedc_free(b), fedc_free(ref), fedc_free(fast), fedc_free(fast2);
}

/* Elementwise ops large enough to be cut into spans for the kernels' pool give
 * the same bits on 1, 2 and 3 threads: tanh, a full add, a bias add (the bias
 * repeating along the rows), and y aliasing x. */
static void test_elementwise_bitwise_on_threads(void) {
    enum { ROWS = 333, COLS = 1000, N = ROWS * COLS };
    float *x = random_array(FEDC_F32, N, 3, 0), *bias = random_array(FEDC_F32, COLS, 1, 0), *out[3][4];
    fedc__kshape full = kshape(2, (int64_t[]){ROWS, COLS}), row = kshape(1, (int64_t[]){COLS});
    for (int threads = 1; x && bias && threads <= 3; threads++) {
        fedc_pool *pool = NULL;
        if (threads > 1) CHECK_OK(fedc_pool_create(&pool, threads));
        fedc_pool *outer = fedc__kernels_set_pool(pool);
        float **o = out[threads - 1];
        for (int k = 0; k < 4; k++) o[k] = alloc_bytes(N * sizeof(float));
        CHECK_OK(F->unary(FEDC_U_TANH, FEDC_F32, N, x, o[0], 0));
        CHECK_OK(F->binary(FEDC_B_ADD, FEDC_F32, &full, x, &full, o[0], &full, o[1]));
        CHECK_OK(F->binary(FEDC_B_MUL, FEDC_F32, &full, x, &row, bias, &full, o[2]));
        memcpy(o[3], x, N * sizeof(float));
        CHECK_OK(F->binary(FEDC_B_SUB, FEDC_F32, &row, bias, &full, o[3], &full, o[3]));
        fedc__kernels_set_pool(outer);
        fedc_pool_destroy(pool);
        for (int k = 0; threads > 1 && k < 4; k++)
            CHECK_MSG(memcmp(o[k], out[0][k], N * sizeof(float)) == 0, "op %d: %d threads differ from 1", k, threads);
    }
    for (int t = 0; x && bias && t < 3; t++)
        for (int k = 0; k < 4; k++) fedc_free(out[t][k]);
    fedc_free(x), fedc_free(bias);
}

/* Reductions and layer norms large enough to be cut into spans for the kernels'
 * pool give the same bits on 1, 2 and 3 threads: a column sum (leading axis, in
 * the reference's order, so equal to it), a row mean, layer_norm, its input
 * gradient and its parameter gradient (which sums over rows in two passes). */
static void test_reduce_norm_bitwise_on_threads(void) {
    enum { ROWS = 1031, COLS = 600, N = ROWS * COLS, K = 5 };
    float *x = random_array(FEDC_F32, N, 3, 0), *dy = random_array(FEDC_F32, N, 5, 0),
          *gb = random_array(FEDC_F32, 2 * COLS, 7, 0), *out[3][K];
    size_t sizes[K] = {COLS, ROWS, N, N, 2 * COLS};
    fedc__kshape xs = kshape(2, (int64_t[]){ROWS, COLS});
    for (int threads = 1; x && dy && gb && threads <= 3; threads++) {
        fedc_pool *pool = NULL;
        if (threads > 1) CHECK_OK(fedc_pool_create(&pool, threads));
        fedc_pool *outer = fedc__kernels_set_pool(pool);
        float **o = out[threads - 1];
        for (int k = 0; k < K; k++) o[k] = alloc_bytes(sizes[k] * sizeof(float));
        CHECK_OK(F->reduce(FEDC_R_SUM, FEDC_F32, &xs, 0x1, x, o[0]));
        CHECK_OK(F->reduce(FEDC_R_MEAN, FEDC_F32, &xs, 0x2, x, o[1]));
        CHECK_OK(F->layer_norm(FEDC_F32, ROWS, COLS, x, gb, gb + COLS, 1e-5, o[2]));
        CHECK_OK(F->layer_norm_grad(FEDC_F32, ROWS, COLS, x, gb, dy, 1e-5, o[3]));
        CHECK_OK(F->layer_norm_param_grad(FEDC_F32, ROWS, COLS, x, dy, 1e-5, o[4]));
        fedc__kernels_set_pool(outer);
        fedc_pool_destroy(pool);
        for (int k = 0; threads > 1 && k < K; k++)
            CHECK_MSG(memcmp(o[k], out[0][k], sizes[k] * sizeof(float)) == 0, "op %d: %d threads differ from 1", k,
                      threads);
    }
    float *ref = alloc_bytes(2 * COLS * sizeof(float));
    if (x && dy && gb && ref) {
        CHECK_OK(R->reduce(FEDC_R_SUM, FEDC_F32, &xs, 0x1, x, ref));
        CHECK_MSG(memcmp(ref, out[0][0], COLS * sizeof(float)) == 0, "column sum differs from the reference");
        CHECK_OK(R->layer_norm_param_grad(FEDC_F32, ROWS, COLS, x, dy, 1e-5, ref));
        for (int c = 0; c < 2 * COLS; c++)
            CHECK_MSG(fabsf(ref[c] - out[0][4][c]) <= 1e-3f * (1.0f + fabsf(ref[c])),
                      "layer_norm_param_grad[%d]: %g, reference %g", c, (double)out[0][4][c], (double)ref[c]);
    }
    for (int t = 0; x && dy && gb && t < 3; t++)
        for (int k = 0; k < K; k++) fedc_free(out[t][k]);
    fedc_free(x), fedc_free(dy), fedc_free(gb), fedc_free(ref);
}

static void test_binary(void) {
    static const binary_case cases[] = {
        {3, {3, 5, 7}, 3, {3, 5, 7}}, /* same shape */
        {1, {2500}, 1, {2500}},       /* several tiles when aliased */
        {3, {3, 5, 7}, 0, {0}},       /* scalar b */
        {3, {3, 5, 7}, 1, {1}},
        {3, {3, 5, 7}, 3, {1, 1, 1}},
        {0, {0}, 3, {3, 5, 7}},       /* scalar a */
        {1, {1}, 1, {2500}},
        {3, {3, 5, 7}, 1, {7}},       /* bias b */
        {3, {3, 5, 7}, 2, {5, 7}},
        {3, {3, 5, 7}, 3, {1, 5, 7}},
        {2, {3, 1300}, 1, {1300}},
        {1, {7}, 3, {3, 5, 7}},       /* bias a */
        {2, {5, 7}, 3, {3, 5, 7}},
        {3, {3, 1, 7}, 3, {1, 5, 1}}, /* general: the reference */
        {3, {3, 5, 1}, 3, {3, 1, 7}},
        {3, {3, 5, 7}, 3, {3, 1, 7}},
        {3, {3, 5, 7}, 2, {5, 1}},
        {2, {5, 1}, 2, {5, 7}},
        {0, {0}, 0, {0}},             /* scalars */
        {1, {1}, 1, {1}},
        {2, {0, 3}, 1, {3}},          /* empty */
    };
    for (int d = 0; d < 3; d++) {
        fedc_dtype dt = d == 0 ? FEDC_F32 : d == 1 ? FEDC_F64 : FEDC_I32;
        for (int op = 0; op < FEDC_B_COUNT; op++)
            for (int i = 0; i < FEDC_COUNT_OF(cases); i++)
                binary_case_run((fedc__binary_op)op, dt, &cases[i]);
    }
    fedc__kshape s3 = kshape(1, (int64_t[]){3}), s4 = kshape(1, (int64_t[]){4});
    float buf[4] = {0};
    CHECK_ERR(F->binary(FEDC_B_ADD, FEDC_F32, &s3, buf, &s4, buf, &s4, buf), FEDC_ESHAPE,
              "binary");
    CHECK_ERR(F->binary(FEDC_B_ADD, FEDC_U8, &s4, buf, &s4, buf, &s4, buf), FEDC_EUNSUPPORTED,
              "u8");
}

/* ---------------------------------------------------------------- reduce -- */

static void reduce_case(fedc_reduce_op op, fedc_dtype dt, const fedc__kshape *xs, unsigned axes) {
    int64_t n = fedc__kshape_count(xs), ny = 1;
    for (int d = 0; d < xs->rank; d++)
        if (!(axes >> d & 1u)) ny *= xs->dims[d];
    size_t es = fedc_dtype_size(dt);
    void *x = random_array(dt, n, 1, dt == FEDC_I32 ? 1 : 0);
    void *ref = alloc_poison((size_t)ny * es), *fast = alloc_poison((size_t)ny * es),
         *fast2 = alloc_poison((size_t)ny * es);
    char what[128];
    snprintf(what, sizeof what, "reduce op %d %s rank %d [%lld..] axes 0x%x", (int)op,
             dt_name(dt), xs->rank, (long long)(xs->rank ? xs->dims[0] : 0), axes);
    CHECK_OK(R->reduce(op, dt, xs, axes, x, ref));
    CHECK_OK(F->reduce(op, dt, xs, axes, x, fast));
    CHECK_OK(F->reduce(op, dt, xs, axes, x, fast2));
    if (dt == FEDC_I32) CHECK_MSG(memcmp(fast, ref, (size_t)ny * es) == 0, "%s", what);
    else check_close(dt, ny, fast, ref, PER_ELEMENT, what);
    check_same_bits(fast, fast2, (size_t)ny * es, what);
    fedc_free(x), fedc_free(ref), fedc_free(fast), fedc_free(fast2);
}

static void test_reduce(void) {
    static const struct {
        int rank;
        int64_t dims[4];
        unsigned axes;
    } cases[] = {
        {3, {3, 5, 7}, 0x1}, {3, {3, 5, 7}, 0x3}, {3, {3, 5, 7}, 0x4}, {3, {3, 5, 7}, 0x6},
        {3, {3, 5, 7}, 0x7}, {3, {3, 5, 7}, 0x2}, {3, {3, 5, 7}, 0x5}, {3, {3, 5, 7}, 0x0},
        {4, {1, 5, 1, 7}, 0x2}, {4, {5, 1, 7, 1}, 0x5}, {4, {3, 1, 7, 1}, 0xA},
        {2, {20, 300}, 0x1}, {2, {20, 300}, 0x2}, {2, {4, 1001}, 0x2}, {1, {13}, 0x1},
        {2, {0, 3}, 0x1}, {2, {3, 0}, 0x2}, {0, {0}, 0x0}, {1, {1}, 0x1},
    };
    for (int d = 0; d < 3; d++) {
        fedc_dtype dt = d == 0 ? FEDC_F32 : d == 1 ? FEDC_F64 : FEDC_I32;
        for (int op = 0; op < FEDC_R_COUNT; op++) {
            if (dt == FEDC_I32 && op == FEDC_R_MEAN) continue;
            for (int i = 0; i < FEDC_COUNT_OF(cases); i++) {
                fedc__kshape xs = kshape(cases[i].rank, cases[i].dims);
                reduce_case((fedc_reduce_op)op, dt, &xs, cases[i].axes);
            }
        }
    }
    /* max's edges, bit for bit: -0 and 0 (the first kept), NaNs (the last, quieted), -inf, all -inf */
    uint32_t snan = 0x7f800001u, qnan = 0x7fc00123u;
    float rows[5][4] = {{-0.0f, 0.0f, -1, -0.0f}, {0.0f, -0.0f, -2, -3}, {1, 0, 5, 2}, {-INFINITY, -INFINITY, -INFINITY, -INFINITY},
                        {1, 2, 3, 4}};
    memcpy(&rows[4][1], &snan, 4), memcpy(&rows[4][3], &qnan, 4), memcpy(&rows[2][0], &snan, 4);
    float fm[5], rm[5];
    fedc__kshape ms = kshape(2, (int64_t[]){5, 4});
    CHECK_OK(F->reduce(FEDC_R_MAX, FEDC_F32, &ms, 0x2, rows, fm));
    CHECK_OK(R->reduce(FEDC_R_MAX, FEDC_F32, &ms, 0x2, rows, rm));
    check_same_bits(fm, rm, sizeof fm, "reduce max edges");
    fedc__kshape xs = kshape(2, (int64_t[]){2, 2});
    float buf[4] = {0};
    CHECK_ERR(F->reduce(FEDC_R_SUM, FEDC_F32, &xs, 0x4, buf, buf), FEDC_EINVAL, "reduce");
}

/* select: the fast layouts (full cond; a and b full or scalar) and a broadcast
 * that falls back, in every dtype, against the reference bit for bit (select only
 * copies). */
static void test_select(void) {
    static const struct {
        int crank, arank, brank;
        int64_t c[3], a[3], b[3];
    } cases[] = {
        {2, 2, 2, {7, 13}, {7, 13}, {7, 13}}, /* all full */
        {2, 2, 0, {7, 13}, {7, 13}, {0}},     /* relu's derivative: select(x > 0, ct, 0) */
        {2, 0, 2, {7, 13}, {0}, {7, 13}},
        {1, 0, 0, {31}, {0}, {0}},
        {3, 3, 1, {2, 3, 5}, {2, 3, 5}, {5}},  /* a bias-shaped operand: the reference path */
        {2, 1, 2, {3, 5}, {1}, {3, 5}},        /* a size-1 operand of rank 1: a scalar */
    };
    const fedc_dtype dts[] = {FEDC_F32, FEDC_F64, FEDC_I32, FEDC_U8};
    for (size_t ci = 0; ci < sizeof cases / sizeof *cases; ci++) {
        fedc__kshape cs = kshape(cases[ci].crank, cases[ci].c), as = kshape(cases[ci].arank, cases[ci].a),
                    bs = kshape(cases[ci].brank, cases[ci].b);
        fedc__kshape outs = broadcast_shape(&cs, &as);
        outs = broadcast_shape(&outs, &bs);
        int64_t n = fedc__kshape_count(&outs), nc = fedc__kshape_count(&cs);
        uint8_t *cond = alloc_bytes((size_t)nc);
        for (int64_t i = 0; i < nc; i++) cond[i] = uniform() > 0;
        for (size_t di = 0; di < sizeof dts / sizeof *dts; di++) {
            fedc_dtype dt = dts[di];
            size_t es = fedc_dtype_size(dt);
            unsigned char *a = alloc_bytes(es * (size_t)fedc__kshape_count(&as)), *b = alloc_bytes(es * (size_t)fedc__kshape_count(&bs));
            for (size_t i = 0; i < es * (size_t)fedc__kshape_count(&as); i++) a[i] = (unsigned char)(37 * i + 1);
            for (size_t i = 0; i < es * (size_t)fedc__kshape_count(&bs); i++) b[i] = (unsigned char)(91 * i + 7);
            void *got = alloc_poison(es * (size_t)n), *want = alloc_poison(es * (size_t)n);
            CHECK_OK(F->select(dt, &cs, cond, &as, a, &bs, b, &outs, got));
            CHECK_OK(R->select(dt, &cs, cond, &as, a, &bs, b, &outs, want));
            char what[64];
            snprintf(what, sizeof what, "select case %zu %s", ci, dt_name(dt));
            check_same_bits(got, want, es * (size_t)n, what);
            fedc_free(a), fedc_free(b), fedc_free(got), fedc_free(want);
        }
        fedc_free(cond);
    }
}

/* --------------------------------------------------------------- dropout -- */

/* The fast dropout (and random_uniform) computes its Philox blocks in tiles; its
 * mask and values must be the reference's bit for bit: sizes around the tile (256) and block (4) edges,
 * rates whose threshold is exact and not, a stream with a high counter word, and
 * rate 0 (keep all). NaN and -0 inputs go through as the reference's do. */
static void test_dropout(void) {
    const int64_t sizes[] = {1, 3, 4, 5, 255, 256, 257, 1031};
    const double rates[] = {0, 0.25, 0.5, 0.3, 1.0 / 3.0, 0.999};
    fedc_rng_stream streams[2] = {fedc_rng_stream_make(7, 3, 11, 2), fedc_rng_stream_make(0xFFFFFFFF12345ull, 9, 0, 77)};
    for (size_t si = 0; si < FEDC_COUNT_OF(sizes); si++) {
        int64_t n = sizes[si];
        float *x = alloc_bytes((size_t)n * sizeof *x), *got = alloc_poison((size_t)n * sizeof *got);
        float *want = alloc_poison((size_t)n * sizeof *want);
        for (int64_t i = 0; i < n; i++) x[i] = (float)uniform();
        x[0] = -0.0f;
        if (n > 2) x[2] = NAN;
        for (size_t ri = 0; ri < FEDC_COUNT_OF(rates); ri++)
            for (int k = 0; k < 2; k++) {
                CHECK_OK(F->dropout(FEDC_F32, n, x, streams[k], rates[ri], got));
                CHECK_OK(R->dropout(FEDC_F32, n, x, streams[k], rates[ri], want));
                char what[64];
                snprintf(what, sizeof what, "dropout n %lld rate %g stream %d", (long long)n, rates[ri], k);
                check_same_bits(got, want, (size_t)n * sizeof *got, what);
            }
        fedc_free(x), fedc_free(got), fedc_free(want);
    }
    /* Where 1 - rate is a float the kernel divides in float: the same bits as the
     * reference's double division, on 2^22 float bit patterns of every exponent
     * (subnormals, overflow to infinity, NaN) and rate 0 (a copy, as the reference). */
    enum { N = 1 << 22 };
    const double float_rates[] = {0.5, 0.25, 0.125, 0.75, 0.875, 0};
    float *x = alloc_bytes(N * sizeof *x), *got = alloc_bytes(N * sizeof *got), *want = alloc_bytes(N * sizeof *want);
    for (int64_t i = 0; i < N; i++) {
        uint32_t bits = (uint32_t)((uniform() + 1.0) * 2147483648.0);
        memcpy(&x[i], &bits, sizeof bits);
    }
    for (size_t ri = 0; ri < FEDC_COUNT_OF(float_rates); ri++) {
        CHECK_OK(F->dropout(FEDC_F32, N, x, streams[0], float_rates[ri], got));
        CHECK_OK(R->dropout(FEDC_F32, N, x, streams[0], float_rates[ri], want));
        char what[64];
        snprintf(what, sizeof what, "dropout on 2^22 bit patterns, rate %g", float_rates[ri]);
        check_same_bits(got, want, N * sizeof *got, what);
    }
    fedc_free(x), fedc_free(got), fedc_free(want);
    /* random_uniform shares the tiles: the reference's draws, around the edges */
    for (size_t si = 0; si < FEDC_COUNT_OF(sizes); si++)
        for (int k = 0; k < 2; k++) {
            int64_t n = sizes[si];
            float *g = alloc_poison((size_t)n * sizeof *g), *w = alloc_poison((size_t)n * sizeof *w);
            CHECK_OK(F->random_uniform(FEDC_F32, n, streams[k], g));
            CHECK_OK(R->random_uniform(FEDC_F32, n, streams[k], w));
            char what[64];
            snprintf(what, sizeof what, "random_uniform n %lld stream %d", (long long)n, k);
            check_same_bits(g, w, (size_t)n * sizeof *g, what);
            fedc_free(g), fedc_free(w);
        }
    double xd[3] = {1, 2, 3}, yd[3];
    CHECK_ERR(F->dropout(FEDC_F32, 3, xd, streams[0], 1.0, yd), FEDC_EINVAL, "rate");
    CHECK_ERR(F->dropout(FEDC_F32, 3, xd, streams[0], NAN, yd), FEDC_EINVAL, "rate");
}

/* ------------------------------------------------------------------ cast -- */

/* f32 -> i32 and i32 -> f32, the fast loops: the reference's bits on 2^20 float
 * bit patterns (NaN, infinities, the saturating bounds, subnormals) and i32s. */
static void test_cast(void) {
    enum { N = 1 << 20 };
    float *x = alloc_bytes(N * sizeof *x), *fy = alloc_bytes(N * sizeof *fy), *fw = alloc_bytes(N * sizeof *fw);
    int32_t *i = alloc_bytes(N * sizeof *i), *iy = alloc_bytes(N * sizeof *iy), *iw = alloc_bytes(N * sizeof *iw);
    for (int64_t k = 0; k < N; k++) {
        uint32_t bits = (uint32_t)((uniform() + 1.0) * 2147483648.0);
        memcpy(&x[k], &bits, sizeof bits);
        i[k] = (int32_t)bits;
    }
    const float edges[] = {0x1p31f, -0x1p31f, 0x1.fffffep30f, -0x1.fffffep30f, -0.0f, 0.5f, -0.99f, INFINITY, -INFINITY, NAN};
    memcpy(x, edges, sizeof edges);
    i[0] = INT32_MIN, i[1] = INT32_MAX, i[2] = 16777217;
    CHECK_OK(F->cast(FEDC_F32, FEDC_I32, N, x, iy));
    CHECK_OK(R->cast(FEDC_F32, FEDC_I32, N, x, iw));
    check_same_bits(iy, iw, N * sizeof *iy, "cast f32 -> i32");
    CHECK_OK(F->cast(FEDC_I32, FEDC_F32, N, i, fy));
    CHECK_OK(R->cast(FEDC_I32, FEDC_F32, N, i, fw));
    check_same_bits(fy, fw, N * sizeof *fy, "cast i32 -> f32");
    fedc_free(x), fedc_free(fy), fedc_free(fw), fedc_free(i), fedc_free(iy), fedc_free(iw);
}

/* ------------------------------------------------------------ slice, pad -- */

/* The window `inner` at `at` of `outer`: slice outer -> inner and pad inner -> outer,
 * fast against reference, bit for bit, for element sizes 1, 4 and 8. */
static void window_case(const fedc__kshape *outer, const int64_t *at, const fedc__kshape *inner) {
    static const size_t sizes[] = {1, 4, 8};
    for (size_t si = 0; si < FEDC_COUNT_OF(sizes); si++) {
        size_t es = sizes[si], nout = (size_t)fedc__kshape_count(outer) * es, nin = (size_t)fedc__kshape_count(inner) * es;
        unsigned char *big = alloc_bytes(nout), *small = alloc_bytes(nin);
        void *got = alloc_poison(nout > nin ? nout : nin), *want = alloc_poison(nout > nin ? nout : nin);
        for (size_t i = 0; big && i < nout; i++) big[i] = (unsigned char)(1 + i % 251);
        for (size_t i = 0; small && i < nin; i++) small[i] = (unsigned char)(1 + (i * 7) % 253);
        char what[96];
        snprintf(what, sizeof what, "slice rank %d, %zu-byte elements, %lld of %lld", outer->rank, es,
                 (long long)fedc__kshape_count(inner), (long long)fedc__kshape_count(outer));
        CHECK_OK(F->slice(es, outer, at, big, inner, got));
        CHECK_OK(R->slice(es, outer, at, big, inner, want));
        check_same_bits(got, want, nin, what);
        what[0] = 'p', what[1] = 'a', what[2] = 'd', memmove(what + 3, what + 5, strlen(what + 5) + 1);
        CHECK_OK(F->pad(es, inner, at, small, outer, got));
        CHECK_OK(R->pad(es, inner, at, small, outer, want));
        check_same_bits(got, want, nout, what);
        fedc_free(big), fedc_free(small), fedc_free(got), fedc_free(want);
    }
}

/* Windows large enough to be cut into spans of rows, on 2 and 3 threads: still
 * the reference's bytes (pad's zeroed gaps included). */
static void test_slice_pad_on_threads(void) {
    fedc__kshape outer = kshape(2, (int64_t[]){600, 1024}), inner = kshape(2, (int64_t[]){512, 700});
    fedc__kshape outer3 = kshape(3, (int64_t[]){40, 30, 200}), inner3 = kshape(3, (int64_t[]){33, 30, 200});
    for (int threads = 2; threads <= 3; threads++) {
        fedc_pool *pool = NULL;
        CHECK_OK(fedc_pool_create(&pool, threads));
        fedc_pool *prev = fedc__kernels_set_pool(pool);
        window_case(&outer, (int64_t[]){40, 100}, &inner);
        window_case(&outer3, (int64_t[]){5, 0, 0}, &inner3);
        fedc__kernels_set_pool(prev);
        fedc_pool_destroy(pool);
    }
}

static void test_slice_pad(void) {
    /* rows of a matrix (one run), columns (a run per row), an LSTM trace's h, inner
     * windows of 3-d and 4-d arrays, whole arrays, empty windows, rank 0 and 1 */
    struct { int rank; int64_t outer[4], at[4], inner[4]; } cases[] = {
        {2, {264, 1024}, {8, 0}, {256, 1024}},
        {2, {264, 1024}, {0, 0}, {8, 1024}},
        {2, {7, 13}, {2, 3}, {4, 9}},
        {3, {5, 3, 12}, {0, 0, 0}, {5, 3, 2}},
        {3, {5, 3, 12}, {1, 0, 4}, {3, 3, 8}},
        {3, {5, 3, 12}, {1, 1, 0}, {4, 2, 12}},
        {4, {3, 4, 5, 6}, {1, 0, 0, 0}, {2, 4, 5, 6}},
        {4, {3, 4, 5, 6}, {0, 1, 2, 1}, {3, 2, 3, 4}},
        {4, {3, 4, 5, 6}, {0, 0, 0, 0}, {3, 4, 5, 6}},
        {3, {5, 3, 12}, {2, 0, 0}, {0, 3, 12}},
        {1, {17}, {5}, {11}},
        {0, {0}, {0}, {0}},
    };
    for (size_t c = 0; c < FEDC_COUNT_OF(cases); c++) {
        fedc__kshape outer = {cases[c].rank, {0}}, inner = {cases[c].rank, {0}};
        for (int d = 0; d < cases[c].rank; d++) outer.dims[d] = cases[c].outer[d], inner.dims[d] = cases[c].inner[d];
        window_case(&outer, cases[c].at, &inner);
    }
    fedc__kshape a = {2, {4, 4}}, b = {2, {3, 5}};
    float x[20] = {0}, y[20];
    CHECK_ERR(F->slice(4, &a, (int64_t[]){0, 0}, x, &b, y), FEDC_ESHAPE, "axis 1");
    CHECK_ERR(F->pad(4, &b, (int64_t[]){1, 0}, x, &a, y), FEDC_ESHAPE, "axis 1");
}

/* Every permutation of x (rank 1 to 4), fast against reference, bit for bit, for
 * element sizes 1, 4 and 8; the NHWC -> NCHW of an imported CNN's activations
 * also on 2 threads; a bad permutation refused as the reference refuses it. */
static void test_transpose(void) {
    static const size_t sizes[] = {1, 4, 8};
    fedc__kshape shapes[] = {kshape(1, (int64_t[]){7}), kshape(2, (int64_t[]){5, 3}), kshape(3, (int64_t[]){2, 3, 5}),
                             kshape(4, (int64_t[]){3, 4, 5, 7}), kshape(4, (int64_t[]){20, 12, 12, 64}),
                             kshape(3, (int64_t[]){4, 0, 3})};
    static const int perms4[][4] = {{0, 1, 2, 3}, {0, 3, 1, 2}, {0, 2, 3, 1}, {3, 2, 1, 0}, {2, 3, 1, 0}, {1, 0, 3, 2}};
    static const int perms3[][3] = {{0, 1, 2}, {2, 0, 1}, {1, 2, 0}, {2, 1, 0}};
    for (int threads = 1; threads <= 2; threads++) {
        fedc_pool *pool = NULL;
        if (threads > 1) CHECK_OK(fedc_pool_create(&pool, threads));
        fedc_pool *prev = pool ? fedc__kernels_set_pool(pool) : NULL;
        for (size_t c = 0; c < FEDC_COUNT_OF(shapes); c++)
            for (size_t si = 0; si < FEDC_COUNT_OF(sizes); si++) {
                const fedc__kshape *xs = &shapes[c];
                size_t es = sizes[si], n = (size_t)fedc__kshape_count(xs) * es;
                unsigned char *x = alloc_bytes(n ? n : 1);
                void *got = alloc_poison(n ? n : 1), *want = alloc_poison(n ? n : 1);
                for (size_t i = 0; x && i < n; i++) x[i] = (unsigned char)(1 + (i * 13) % 251);
                int np = xs->rank == 4 ? 6 : xs->rank == 3 ? 4 : xs->rank == 2 ? 2 : 1;
                for (int k = 0; k < np; k++) {
                    int perm[4] = {0, 1, 2, 3};
                    if (xs->rank == 4) memcpy(perm, perms4[k], sizeof perm);
                    if (xs->rank == 3) memcpy(perm, perms3[k], 3 * sizeof *perm);
                    if (xs->rank == 2) perm[0] = k, perm[1] = 1 - k;
                    char what[96];
                    snprintf(what, sizeof what, "transpose rank %d case %zu perm %d, %zu-byte elements, %d threads",
                             xs->rank, c, k, es, threads);
                    CHECK_OK(F->transpose(es, xs, perm, x, got));
                    CHECK_OK(R->transpose(es, xs, perm, x, want));
                    check_same_bits(got, want, n, what);
                }
                fedc_free(x), fedc_free(got), fedc_free(want);
            }
        if (pool) fedc__kernels_set_pool(prev), fedc_pool_destroy(pool);
    }
    float x[6] = {0}, y[6];
    fedc__kshape s = kshape(2, (int64_t[]){2, 3});
    CHECK_ERR(F->transpose(4, &s, (int[]){0, 0}, x, y), FEDC_EINVAL, "not a permutation");
}

int main(int argc, char **argv) {
    static const fedc_test tests[] = {
        {"select", test_select},
        {"dropout", test_dropout},
        {"cast: f32 <-> i32 as the reference", test_cast},
        {"pairs", test_pairs},
        {"matmul_sub_scaled", test_matmul_sub_scaled},
        {"unary", test_unary},
        {"tanh_f32_relative", test_tanh_f32_relative},
        {"elementwise_bitwise_on_threads", test_elementwise_bitwise_on_threads},
        {"reduce_norm_bitwise_on_threads", test_reduce_norm_bitwise_on_threads},
        {"binary", test_binary},
        {"reduce", test_reduce},
        {"slice_pad", test_slice_pad},
        {"slice_pad_on_threads", test_slice_pad_on_threads},
        {"transpose", test_transpose},
    };
    return fedc_test_main(argc, argv, tests, FEDC_COUNT_OF(tests));
}
