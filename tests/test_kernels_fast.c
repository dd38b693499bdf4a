/* Tests for the fast kernel table, products and windows (matmul, gather GEMM,
 * conv, pooling; the elementwise ones are in test_kernels_fast_elementwise.c):
 * every entry of fedc__kernels_fast that is not
 * the reference function itself is compared with fedc__kernels_ref on odd shapes
 * (sizes 1 and primes, non-square, batches of 1 and 3, every transpose and
 * sharing combination, conv and pooling geometries with strides and SAME padding,
 * every broadcast layout), including the aliased and fallback paths, and run twice
 * to check that it is deterministic. Both tables are called only through the
 * struct, as the runtime calls them. Float results are compared with a relative
 * tolerance (1e-5 for f32, 1e-12 for f64) because BLAS accumulates in the element
 * type while the reference accumulates in double. */
#include "harness.h"
#include "kernels_check.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>

#include "kernels/fast.h"
#include "kernels/kernels.h"

/* --------------------------------------------------------------- table -- */

/* fast_blas.c re-picks OpenBLAS's kernels when its runtime dispatch fell back to
 * the generic Prescott ones on a CPU it does not know: a CPU with AVX2 and FMA
 * must end up on better kernels (checked only where OpenBLAS has runtime
 * dispatch and nobody forced a core with OPENBLAS_CORETYPE). */
extern void gotoblas_dynamic_init(void) __attribute__((weak));

static void test_blas_core(void) {
#if defined(__x86_64__)
    fedc__kernels_init();
    if (!gotoblas_dynamic_init || getenv("OPENBLAS_CORETYPE")) return;
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) return;
    CHECK(strcmp(openblas_get_corename(), "Prescott") != 0);
#endif
}

static void test_table(void) {
    CHECK(strcmp(F->name, "fast") == 0);
    CHECK(F->unary && F->binary && F->select && F->reduce && F->broadcast_to && F->transpose);
    CHECK(F->slice && F->pad && F->concat && F->matmul && F->gather && F->scatter_add);
    CHECK(F->one_hot && F->conv2d_scratch && F->conv2d && F->conv2d_bias_relu && F->conv2d_input_grad);
    CHECK(F->conv2d_filter_grad && F->max_pool2d && F->max_pool2d_grad && F->avg_pool2d);
    CHECK(F->avg_pool2d_grad && F->log_softmax && F->softmax_xent && F->argmax && F->dropout);
    CHECK(F->cast && F->iota && F->select_gt && F->sub_scaled);
    fedc__kernels_init();
    fedc__kernels_init(); /* idempotent */
    CHECK(fedc__kernels_sgemm_gflops(48, 2) > 0);
    CHECK(fedc__kernels_sgemm_gflops(0, 2) == 0);
}

/* ---------------------------------------------------------------- matmul -- */

static void matmul_case(fedc_dtype dt, int64_t batch, int64_t m, int64_t n, int64_t k, int ta,
                        int tb, int ab, int bb) {
    size_t es = fedc_dtype_size(dt);
    int64_t na = (ab ? batch : 1) * m * k, nb = (bb ? batch : 1) * k * n, nc = batch * m * n;
    void *a = random_array(dt, na, 1, 0), *b = random_array(dt, nb, 1, 0);
    void *cr = alloc_poison((size_t)nc * es), *cf = alloc_poison((size_t)nc * es),
         *cf2 = alloc_poison((size_t)nc * es);
    char what[160];
    snprintf(what, sizeof what, "matmul %s batch %lld m %lld n %lld k %lld ta %d tb %d ab %d bb %d",
             dt_name(dt), (long long)batch, (long long)m, (long long)n, (long long)k, ta, tb, ab,
             bb);
    CHECK_OK(R->matmul(dt, batch, m, n, k, ta, tb, a, ab, b, bb, cr));
    CHECK_OK(F->matmul(dt, batch, m, n, k, ta, tb, a, ab, b, bb, cf));
    CHECK_OK(F->matmul(dt, batch, m, n, k, ta, tb, a, ab, b, bb, cf2));
    check_close(dt, nc, cf, cr, ARRAY_SCALE, what);
    check_same_bits(cf, cf2, (size_t)nc * es, what);
    fedc_free(a), fedc_free(b), fedc_free(cr), fedc_free(cf), fedc_free(cf2);
}

static void test_matmul(void) {
    static const int64_t shapes[][4] = {/* batch, m, n, k */
                                        {1, 1, 1, 1},  {1, 7, 13, 31}, {3, 7, 13, 31},
                                        {3, 13, 1, 7}, {1, 31, 7, 1},  {3, 1, 31, 13},
                                        {3, 5, 4, 0},  {2, 0, 3, 4},   {0, 3, 3, 3},
                                        {3, 64, 33, 70}};
    static const int share[][2] = {{1, 1}, {1, 0}, {0, 1}, {0, 0}};
    for (int d = 0; d < 2; d++)
        for (int s = 0; s < FEDC_COUNT_OF(shapes); s++)
            for (int t = 0; t < 4; t++)
                for (int sh = 0; sh < 4; sh++)
                    matmul_case(d ? FEDC_F64 : FEDC_F32, shapes[s][0], shapes[s][1], shapes[s][2],
                                shapes[s][3], t & 1, t >> 1, share[sh][0], share[sh][1]);
}

/* Products cut into blocks on the kernels' pool (the transformer's weight
 * gradients: 768 columns in 4 blocks of 192, 256 in 2 of 128; blocks large
 * enough to zero c themselves and ask BLAS for beta = 1, written over poison):
 * near the reference, and the same bits with no pool and on 2 and 3 threads. */
static void test_matmul_blocks(void) {
    static const int64_t shapes[][3] = {{256, 768, 160}, {256, 256, 160}, {1024, 300, 96}};
    for (int s = 0; s < FEDC_COUNT_OF(shapes); s++) {
        int64_t m = shapes[s][0], n = shapes[s][1], k = shapes[s][2];
        float *a = random_array(FEDC_F32, m * k, 1, 0), *b = random_array(FEDC_F32, k * n, 1, 0);
        float *want = alloc_poison((size_t)(m * n) * sizeof *want), *got = alloc_poison((size_t)(m * n) * sizeof *got);
        char what[96];
        snprintf(what, sizeof what, "matmul %lldx%lldx%lld ta 1", (long long)m, (long long)n, (long long)k);
        CHECK_OK(R->matmul(FEDC_F32, 1, m, n, k, 1, 0, a, 0, b, 0, want));
        CHECK_OK(F->matmul(FEDC_F32, 1, m, n, k, 1, 0, a, 0, b, 0, got));
        check_close(FEDC_F32, m * n, got, want, ARRAY_SCALE, what);
        memcpy(want, got, (size_t)(m * n) * sizeof *got);
        for (int threads = 2; threads <= 3; threads++) {
            fedc_pool *pool;
            CHECK_OK(fedc_pool_create(&pool, threads));
            fedc_pool *outer = fedc__kernels_set_pool(pool);
            memset(got, 0xff, (size_t)(m * n) * sizeof *got); /* NaNs, were c not zeroed */
            CHECK_OK(F->matmul(FEDC_F32, 1, m, n, k, 1, 0, a, 0, b, 0, got));
            fedc__kernels_set_pool(outer);
            fedc_pool_destroy(pool);
            check_same_bits(got, want, (size_t)(m * n) * sizeof *got, what);
        }
        fedc_free(a), fedc_free(b), fedc_free(want), fedc_free(got);
    }
}

static void test_matmul_errors(void) {
    int32_t a[4] = {0}, b[4] = {0}, c[4];
    CHECK_ERR(F->matmul(FEDC_I32, 1, 2, 2, 1, 0, 0, a, 1, b, 1, c), FEDC_EUNSUPPORTED, "matmul");
    CHECK_ERR(F->matmul(FEDC_I32, 1, 2, 2, 1, 0, 0, a, 1, b, 1, c), FEDC_EUNSUPPORTED, "i32");
    CHECK_ERR(F->matmul(FEDC_F32, 1, -1, 2, 1, 0, 0, a, 1, b, 1, c), FEDC_EINVAL, "matmul");
}

/* --------------------------------------------------------- gather gemm -- */

/* fedc__fast_gather_gemm / fedc__fast_rows_gemm promise each element of c to be its
 * initial value plus the products in increasing k, one FMA at a time, then the
 * epilogue: a scalar fmaf loop must give the same bits, for blocks of every shape
 * (rows 1..13 and 25, columns around 16, 32 and 64), depths across the 128-deep
 * slices, both with c fresh and accumulated, with every epilogue, a read
 * through offset tables, in rows or transposed (a weight gradient's x^T), and w
 * stored as it is read or transposed (a dense layer's input gradient, in
 * 32-column panels). Where AVX-512
 * and AVX2 are missing both return false and leave c alone. */
static void gather_want(const fedc__gather_gemm *g, const float *c0, float *want) {
    for (int64_t r = 0; r < g->rows; r++)
        for (int64_t j = 0; j < g->cols; j++) {
            float v = g->accumulate ? c0[r * g->ldc + j] : 0.0f;
            for (int64_t k = 0; k < g->depth; k++)
                v = fmaf(g->a[g->row_off[r] + g->k_off[k]], g->w[g->w_transposed ? j * g->ldw + k : k * g->ldw + j], v);
            if (g->bias) v = v + g->bias[j];
            if (g->relu) v = v > 0 ? v : 0;
            if (g->minuend) {
                float product = *g->scale * v; /* rounded apart, as sub(w, mul(s, c)) */
                v = g->minuend[r * g->ldc + j] - product;
            }
            want[r * g->ldc + j] = v;
        }
}

static void gather_case(int64_t rows, int64_t cols, int64_t depth, int mode, bool w_transposed) {
    int64_t ldw = w_transposed ? depth + 3 : cols + 3, ldc = cols + 1, span = rows * 7 + depth * 5 + 1;
    float *a = random_array(FEDC_F32, span, 1, 0);
    float *w = random_array(FEDC_F32, (w_transposed ? cols : depth) * ldw + 1, 1, 0);
    float *bias = random_array(FEDC_F32, cols, 1, 0), *c0 = random_array(FEDC_F32, rows * ldc, 1, 0);
    float *minuend = random_array(FEDC_F32, rows * ldc, 1, 0), scale = 0.1f;
    float *got = alloc_bytes((size_t)(rows * ldc) * sizeof(float)), *want = alloc_bytes((size_t)(rows * ldc) * sizeof(float));
    int32_t *row_off = alloc_bytes((size_t)(rows + 1) * sizeof(int32_t)), *k_off = alloc_bytes((size_t)(depth + 1) * sizeof(int32_t));
    for (int64_t r = 0; r < rows; r++) row_off[r] = (int32_t)(r * 7 - (r % 3));
    for (int64_t k = 0; k < depth; k++) k_off[k] = (int32_t)(k * 5 + 2);
    fedc__gather_gemm g = {.rows = rows, .cols = cols, .depth = depth, .a = a, .row_off = row_off, .k_off = k_off,
                          .w = w, .ldw = ldw, .c = got, .ldc = ldc, .accumulate = mode & 1,
                          .bias = mode & 2 ? bias : NULL, .relu = (mode & 4) != 0,
                          .minuend = mode & 8 ? minuend : NULL, .scale = &scale, .w_transposed = w_transposed};
    memcpy(got, c0, (size_t)(rows * ldc) * sizeof(float));
    memcpy(want, c0, (size_t)(rows * ldc) * sizeof(float));
    char what[120];
    snprintf(what, sizeof what, "gather_gemm %lldx%lld depth %lld mode %d%s", (long long)rows, (long long)cols,
             (long long)depth, mode, w_transposed ? " w transposed" : "");
    if (!fedc__fast_gather_gemm(&g)) {
        check_same_bits(got, c0, (size_t)(rows * ldc) * sizeof(float), what); /* untouched */
    } else {
        gather_want(&g, c0, want);
        CHECK_MSG(memcmp(got, want, (size_t)(rows * ldc) * sizeof(float)) == 0, "%s: not the fmaf loop's bits", what);
        /* the strided forms, accumulating and with an SGD step (the epilogue is the gathered form's): dense,
         * row r at a + 7 r; transposed, element k at 5 k */
        if (!w_transposed && (mode == 1 || mode == 8))
            for (int t = 0; t < 2; t++) {
                for (int64_t r = 0; r < rows; r++) row_off[r] = (int32_t)(t ? r : r * 7);
                for (int64_t k = 0; k < depth; k++) k_off[k] = (int32_t)(t ? k * 5 : k);
                memcpy(got, c0, (size_t)(rows * ldc) * sizeof(float));
                fedc__gather_gemm strided = g;
                strided.row_off = strided.k_off = NULL, strided.row_step = t ? 1 : 7, strided.k_step = t ? 5 : 1;
                CHECK(mode == 1 ? fedc__fast_rows_gemm(rows, cols, depth, a, t ? 1 : 7, t ? 5 : 1, w, ldw, got, ldc, true)
                                : fedc__fast_gather_gemm(&strided));
                gather_want(&g, c0, want);
                CHECK_MSG(memcmp(got, want, (size_t)(rows * ldc) * sizeof(float)) == 0,
                          "%s %s: not the fmaf loop's bits", what, t ? "transposed" : "dense");
            }
    }
    fedc_free(a), fedc_free(w), fedc_free(bias), fedc_free(c0), fedc_free(got), fedc_free(want);
    fedc_free(row_off), fedc_free(k_off), fedc_free(minuend);
}

static void test_gather_gemm(void) {
    static const int64_t rows[] = {1, 2, 4, 5, 6, 7, 12, 13, 25};
    static const int64_t cols[] = {1, 16, 20, 32, 33, 64, 70, 130};
    static const int64_t depths[] = {0, 1, 5, 128, 131, 300};
    for (int i = 0; i < FEDC_COUNT_OF(rows); i++)
        for (int j = 0; j < FEDC_COUNT_OF(cols); j++)
            for (int d = 0; d < FEDC_COUNT_OF(depths); d++)
                for (int mode = 0; mode < 32; mode++) gather_case(rows[i], cols[j], depths[d], mode & 15, mode > 15);
    /* w over 2 MB: the few-rows forms prefetch its next slice (a dense layer's forward pass) */
    gather_case(5, 16, 28000, 1, false);
    gather_case(3, 20, 24000, 8, false);
}

/* The EMNIST CNN's dense input gradient dy @ W^T ([20, 128] @ [9216, 128]^T)
 * wherever the rows GEMM runs (AVX-512, AVX2 + FMA): each element is the fmaf
 * loop over the 128 outputs in order, bit for bit, not a BLAS sum, on 1 thread
 * and cut in column blocks on 2. FEDC_ROWS_GEMM=0 runs BLAS. */
static void test_dense_input_grad_bits(void) {
    int64_t m = 20, n = 9216, k = 128;
    float *dy = random_array(FEDC_F32, m * k, 1, 0), *w = random_array(FEDC_F32, n * k, 1, 0);
    float *dx = alloc_poison((size_t)(m * n) * sizeof *dx), *dx2 = alloc_poison((size_t)(m * n) * sizeof *dx2);
    CHECK_OK(F->matmul(FEDC_F32, 1, m, n, k, 0, 1, dy, 0, w, 0, dx));
    int64_t wrong = 0;
    for (int64_t r = 0; r < m; r++)
        for (int64_t j = 0; j < n; j++) {
            float v = 0.0f;
            for (int64_t t = 0; t < k; t++) v = fmaf(dy[r * k + t], w[j * k + t], v);
            wrong += memcmp(&v, &dx[r * n + j], sizeof v) != 0;
        }
    if (fedc__rows_gemm_level() > 0)
        CHECK_MSG(wrong == 0, "dense dy @ W^T: %lld of %lld not the fmaf loop's bits", (long long)wrong,
                  (long long)(m * n));
    fedc_pool *pool;
    CHECK_OK(fedc_pool_create(&pool, 2));
    fedc_pool *outer = fedc__kernels_set_pool(pool);
    CHECK_OK(F->matmul(FEDC_F32, 1, m, n, k, 0, 1, dy, 0, w, 0, dx2));
    fedc__kernels_set_pool(outer);
    fedc_pool_destroy(pool);
    check_same_bits(dx2, dx, (size_t)(m * n) * sizeof *dx, "dense dy @ W^T on 2 threads");
    fedc_free(dy), fedc_free(w), fedc_free(dx), fedc_free(dx2);
}

/* ------------------------------------------------------------------ conv -- */

typedef struct conv_case {
    int64_t n, h, w, c, kh, kw, o, sh, sw;
    int same; /* TensorFlow SAME padding, else VALID */
} conv_case;

/* SAME: out = ceil(in / s) and the padding total max((out-1)*s + k - in, 0) split
 * with the smaller half first; VALID: no padding, out = (in - k) / s + 1. */
static void tf_padding(int same, int64_t in, int64_t k, int64_t s, int64_t *out, int64_t *lo) {
    if (same) {
        *out = (in + s - 1) / s;
        int64_t total = (*out - 1) * s + k - in;
        *lo = (total > 0 ? total : 0) / 2;
    } else {
        *out = in >= k ? (in - k) / s + 1 : 0;
        *lo = 0;
    }
}

static fedc__conv_geom conv_geom(const conv_case *cc) {
    fedc__conv_geom g = {.n = cc->n, .h = cc->h, .w = cc->w, .c = cc->c, .kh = cc->kh,
                        .kw = cc->kw, .o = cc->o, .sh = cc->sh, .sw = cc->sw};
    tf_padding(cc->same, cc->h, cc->kh, cc->sh, &g.oh, &g.pad_top);
    tf_padding(cc->same, cc->w, cc->kw, cc->sw, &g.ow, &g.pad_left);
    return g;
}

typedef struct conv_bufs {
    void *x, *w, *dy, *ref, *fast, *fast2, *scratch;
} conv_bufs;

/* One pass (0 forward, 1 input grad, 2 filter grad) through `k` into out. */
static fedc_status conv_pass(const fedc__kernels *k, int pass, fedc_dtype dt,
                             const fedc__conv_geom *g, const conv_bufs *b, void *out) {
    if (pass == 0) return k->conv2d(dt, g, b->x, b->w, out, b->scratch);
    if (pass == 1) return k->conv2d_input_grad(dt, g, b->dy, b->w, out, b->scratch);
    return k->conv2d_filter_grad(dt, g, b->x, b->dy, out, b->scratch);
}

/* conv2d_bias_relu must give exactly the bits of conv2d, the fast bias add, (with
 * relu) the fast relu and (with a pool: 2x2 windows, stride 2, VALID, or SAME
 * with stride 1 when the output is smaller) the fast max_pool2d run one after
 * another, as the unfused executor would. */
static void check_conv_epilogue(fedc_dtype dt, const fedc__conv_geom *g, const conv_bufs *b, int64_t ny) {
    size_t es = fedc_dtype_size(dt), bytes = (size_t)ny * es;
    void *bias = random_array(dt, g->o, 1, 0), *want = alloc_poison(bytes), *got = alloc_poison(bytes);
    void *conv = alloc_poison(bytes);
    fedc__kshape ys = {4, {g->n, g->oh, g->ow, g->o}}, bs = {1, {g->o}};
    fedc__pool_geom pool = {g->n, g->oh, g->ow, g->o, 2, 2, 2, 2, 0, 0, g->oh / 2, g->ow / 2};
    if (pool.oh == 0 || pool.ow == 0) pool = (fedc__pool_geom){g->n, g->oh, g->ow, g->o, 2, 2, 1, 1, 0, 0, g->oh, g->ow};
    for (int mode = 0; mode < 3; mode++) { /* bias; bias + relu; bias + relu + pool */
        int relu = mode > 0;
        const fedc__pool_geom *pg = mode == 2 ? &pool : NULL;
        size_t n = pg ? (size_t)(pg->n * pg->oh * pg->ow * pg->c) : (size_t)ny;
        CHECK_OK(F->conv2d(dt, g, b->x, b->w, conv, b->scratch));
        CHECK_OK(F->binary(FEDC_B_ADD, dt, &ys, conv, &bs, bias, &ys, want));
        if (relu) CHECK_OK(F->unary(FEDC_U_RELU, dt, ny, want, want, 0));
        if (pg) {
            CHECK_OK(F->max_pool2d(dt, pg, want, conv));
            memcpy(want, conv, n * es);
        }
        CHECK_OK(F->conv2d_bias_relu(dt, g, b->x, b->w, bias, relu, pg, got, b->scratch));
        static const char *const what[3] = {"conv2d_bias_relu without relu", "conv2d_bias_relu",
                                            "conv2d_bias_relu with max_pool2d"};
        check_same_bits(got, want, n * es, what[mode]);
    }
    CHECK_ERR(F->conv2d_bias_relu(dt, g, b->x, b->w, NULL, 1, NULL, got, b->scratch), FEDC_EINVAL, "bias");
    pool.c++;
    CHECK_ERR(F->conv2d_bias_relu(dt, g, b->x, b->w, bias, 1, &pool, got, b->scratch), FEDC_EINVAL, "pool");
    fedc_free(bias), fedc_free(want), fedc_free(got), fedc_free(conv);
}

static void conv_case_run(fedc_dtype dt, const conv_case *cc) {
    fedc__conv_geom g = conv_geom(cc);
    size_t es = fedc_dtype_size(dt);
    int64_t nx = g.n * g.h * g.w * g.c, nw = g.kh * g.kw * g.c * g.o, ny = g.n * g.oh * g.ow * g.o;
    int64_t sizes[3] = {ny, nx, nw};
    static const char *const names[3] = {"conv2d", "conv2d_input_grad", "conv2d_filter_grad"};
    size_t scratch = F->conv2d_scratch(&g, dt);
    conv_bufs b = {random_array(dt, nx, 1, 0), random_array(dt, nw, 1, 0),
                   random_array(dt, ny, 1, 0), NULL, NULL, NULL, alloc_poison(scratch)};
    for (int pass = 0; pass < 3; pass++) {
        size_t bytes = (size_t)sizes[pass] * es;
        void *ref = alloc_poison(bytes), *fast = alloc_poison(bytes), *fast2 = alloc_poison(bytes);
        char what[200];
        snprintf(what, sizeof what,
                 "%s %s n%lld %lldx%lldx%lld k%lldx%lld o%lld s%lldx%lld %s (pad %lld,%lld)",
                 names[pass], dt_name(dt), (long long)g.n, (long long)g.h, (long long)g.w,
                 (long long)g.c, (long long)g.kh, (long long)g.kw, (long long)g.o, (long long)g.sh,
                 (long long)g.sw, cc->same ? "same" : "valid", (long long)g.pad_top,
                 (long long)g.pad_left);
        CHECK_OK(conv_pass(R, pass, dt, &g, &b, ref));
        CHECK_OK(conv_pass(F, pass, dt, &g, &b, fast));
        CHECK_OK(conv_pass(F, pass, dt, &g, &b, fast2));
        check_close(dt, sizes[pass], fast, ref, ARRAY_SCALE, what);
        check_same_bits(fast, fast2, bytes, what);
        fedc_free(ref), fedc_free(fast), fedc_free(fast2);
    }
    check_conv_epilogue(dt, &g, &b, ny);
    fedc_free(b.x), fedc_free(b.w), fedc_free(b.dy), fedc_free(b.scratch);
}

static const conv_case conv_cases[] = {
    /* n, h, w, c, kh, kw, o, sh, sw, same */
    {1, 7, 7, 1, 1, 1, 3, 1, 1, 0},     /* 1x1 direct GEMM */
    {3, 7, 5, 3, 1, 1, 4, 1, 1, 1},     /* 1x1 direct, SAME is no padding */
    {3, 7, 7, 3, 1, 1, 4, 2, 2, 0},     /* 1x1 strided: im2col */
    {1, 1, 1, 1, 1, 1, 1, 1, 1, 0},     /* everything 1 */
    {1, 13, 13, 1, 3, 3, 32, 1, 1, 0},  /* first-layer shape */
    {3, 13, 7, 3, 3, 3, 7, 1, 1, 1},
    {3, 13, 13, 3, 3, 3, 5, 2, 2, 1},
    {3, 13, 13, 3, 3, 3, 5, 2, 2, 0},
    {2, 13, 11, 32, 5, 5, 3, 1, 1, 1},
    {3, 7, 13, 3, 5, 5, 4, 2, 2, 0},
    {3, 9, 8, 3, 3, 2, 5, 1, 2, 1},     /* non-square kernel, mixed strides */
    {3, 8, 9, 1, 3, 2, 7, 2, 1, 0},
    {2, 5, 5, 32, 3, 3, 32, 1, 1, 1},
    {2, 3, 3, 3, 5, 5, 2, 1, 1, 1},     /* kernel larger than the image */
    {1, 31, 31, 3, 3, 3, 13, 2, 2, 1},
    {2, 26, 26, 32, 3, 3, 64, 1, 1, 0}, /* the EMNIST CNN's second layer: full 6 x 64 blocks */
    {2, 9, 7, 40, 3, 3, 37, 1, 1, 1},   /* short vectors in 6 x 64 blocks, both ways */
    {2, 6, 6, 2, 3, 3, 3, 1, 1, 0},     /* input grad: every dx row near an edge */
    {2, 7, 5, 4, 3, 1, 6, 1, 1, 1},     /* input grad: every column reaches alike (whole rows) */
};

static void test_conv(void) {
    for (int d = 0; d < 2; d++)
        for (int i = 0; i < FEDC_COUNT_OF(conv_cases); i++)
            conv_case_run(d ? FEDC_F64 : FEDC_F32, &conv_cases[i]);
}

/* Batches whose im2col buffer is processed in several chunks (one with chunks of
 * several images, one where a single image exceeds the chunk size). */
static void test_conv_chunked(void) {
    static const conv_case big[] = {
        {5, 32, 32, 32, 3, 3, 8, 1, 1, 1},
        {2, 64, 64, 32, 3, 3, 4, 1, 1, 1},
    };
    for (int i = 0; i < FEDC_COUNT_OF(big); i++) {
        fedc__conv_geom g = conv_geom(&big[i]);
        size_t whole = (size_t)(g.n * g.oh * g.ow * g.kh * g.kw * g.c) * sizeof(float);
        CHECK(F->conv2d_scratch(&g, FEDC_F32) < whole); /* really chunked */
        conv_case_run(FEDC_F32, &big[i]);
    }
}

/* Wherever the rows GEMM runs (AVX-512, or AVX2 + FMA since the AVX2 loop took
 * the EMNIST CNN's second layer), its forward and filter gradient read the image
 * in place: each output is the fmaf loop over the taps (over images and pixels
 * for dw) in order, bit for bit, not a BLAS sum. FEDC_ROWS_GEMM=0 runs BLAS. */
static void test_conv_in_place_bits(void) {
    conv_case cc = {2, 26, 26, 32, 3, 3, 64, 1, 1, 0};
    fedc__conv_geom g = conv_geom(&cc);
    int64_t taps = g.kh * g.kw * g.c, pix = g.oh * g.ow;
    int64_t nx = g.n * g.h * g.w * g.c, nw = taps * g.o, ny = g.n * pix * g.o;
    float *x = random_array(FEDC_F32, nx, 1, 0), *w = random_array(FEDC_F32, nw, 1, 0);
    float *dy = random_array(FEDC_F32, ny, 1, 0), *y = alloc_poison((size_t)ny * 4), *dw = alloc_poison((size_t)nw * 4);
    void *scratch = alloc_poison(F->conv2d_scratch(&g, FEDC_F32));
    CHECK_OK(F->conv2d(FEDC_F32, &g, x, w, y, scratch));
    CHECK_OK(F->conv2d_filter_grad(FEDC_F32, &g, x, dy, dw, scratch));
    int64_t wrong_y = 0, wrong_dw = 0;
    for (int64_t b = 0; b < g.n; b++)
        for (int64_t p = 0; p < pix; p++)
            for (int64_t o = 0; o < g.o; o++) {
                float v = 0.0f;
                for (int64_t t = 0; t < taps; t++) {
                    int64_t i = p / g.ow + t / (g.kw * g.c), j = p % g.ow + t / g.c % g.kw;
                    v = fmaf(x[((b * g.h + i) * g.w + j) * g.c + t % g.c], w[t * g.o + o], v);
                }
                wrong_y += memcmp(&v, &y[(b * pix + p) * g.o + o], 4) != 0;
            }
    for (int64_t t = 0; t < taps; t++)
        for (int64_t o = 0; o < g.o; o++) {
            float v = 0.0f;
            for (int64_t b = 0; b < g.n; b++)
                for (int64_t p = 0; p < pix; p++) {
                    int64_t i = p / g.ow + t / (g.kw * g.c), j = p % g.ow + t / g.c % g.kw;
                    v = fmaf(x[((b * g.h + i) * g.w + j) * g.c + t % g.c], dy[(b * pix + p) * g.o + o], v);
                }
            wrong_dw += memcmp(&v, &dw[t * g.o + o], 4) != 0;
        }
    if (fedc__rows_gemm_level() > 0) { /* BLAS (FEDC_ROWS_GEMM=0) sums in its own order */
        CHECK_MSG(wrong_y == 0, "conv2d layer 2: %lld of %lld outputs not the fmaf loop's bits", (long long)wrong_y,
                  (long long)ny);
        CHECK_MSG(wrong_dw == 0, "conv2d_filter_grad layer 2: %lld of %lld not the fmaf loop's bits",
                  (long long)wrong_dw, (long long)nw);
    }
    fedc_free(x), fedc_free(w), fedc_free(dy), fedc_free(y), fedc_free(dw), fedc_free(scratch);
}

static void test_conv_errors(void) {
    conv_case cc = {1, 5, 5, 1, 3, 3, 1, 1, 1, 0};
    fedc__conv_geom g = conv_geom(&cc);
    int32_t buf[64] = {0};
    CHECK_ERR(F->conv2d(FEDC_I32, &g, buf, buf, buf, buf), FEDC_EUNSUPPORTED, "conv2d");
    CHECK_ERR(F->conv2d_input_grad(FEDC_U8, &g, buf, buf, buf, buf), FEDC_EUNSUPPORTED, "u8");
    CHECK_ERR(F->conv2d_filter_grad(FEDC_I32, &g, buf, buf, buf, buf), FEDC_EUNSUPPORTED,
              "conv2d_filter_grad");
    g.sh = 0;
    CHECK_ERR(F->conv2d(FEDC_F32, &g, buf, buf, buf, buf), FEDC_EINVAL, "conv2d");
    CHECK(F->conv2d_scratch(&g, FEDC_F32) == 0);
}

/* --------------------------------------------------------------- pooling -- */

typedef struct pool_case {
    int64_t n, h, w, c, k, s;
    int same;
    double quantum; /* > 0: quantised data, so windows hold ties */
} pool_case;

static fedc__pool_geom pool_geom(const pool_case *pc) {
    fedc__pool_geom g = {.n = pc->n, .h = pc->h, .w = pc->w, .c = pc->c, .kh = pc->k,
                        .kw = pc->k, .sh = pc->s, .sw = pc->s};
    tf_padding(pc->same, pc->h, pc->k, pc->s, &g.oh, &g.pad_top);
    tf_padding(pc->same, pc->w, pc->k, pc->s, &g.ow, &g.pad_left);
    return g;
}

static void pool_describe(char *buf, size_t size, const char *kernel, fedc_dtype dt,
                          const fedc__pool_geom *g) {
    snprintf(buf, size,
             "%s %s n%lld %lldx%lldx%lld k%lldx%lld s%lldx%lld pad %lld,%lld out %lldx%lld",
             kernel, dt_name(dt), (long long)g->n, (long long)g->h, (long long)g->w,
             (long long)g->c, (long long)g->kh, (long long)g->kw, (long long)g->sh,
             (long long)g->sw, (long long)g->pad_top, (long long)g->pad_left, (long long)g->oh,
             (long long)g->ow);
}

/* Runs the four pooling kernels of both tables on geometry g; `x` may hold NaNs. */
static void pool_run(fedc_dtype dt, const fedc__pool_geom *g, const void *x) {
    size_t es = fedc_dtype_size(dt);
    int64_t nx = g->n * g->h * g->w * g->c, ny = g->n * g->oh * g->ow * g->c;
    void *dy = random_array(dt, ny, 1, 0);
    for (int kind = 0; kind < 4; kind++) {
        int64_t n = kind % 2 ? nx : ny; /* forward writes y, gradient dx */
        size_t bytes = (size_t)n * es;
        void *out[3] = {alloc_poison(bytes), alloc_poison(bytes), alloc_poison(bytes)};
        const fedc__kernels *tables[3] = {R, F, F};
        static const char *const names[4] = {"max_pool2d", "max_pool2d_grad", "avg_pool2d",
                                              "avg_pool2d_grad"};
        for (int t = 0; t < 3; t++) {
            const fedc__kernels *k = tables[t];
            if (kind == 0) CHECK_OK(k->max_pool2d(dt, g, x, out[t]));
            if (kind == 1) CHECK_OK(k->max_pool2d_grad(dt, g, x, dy, out[t]));
            if (kind == 2) CHECK_OK(k->avg_pool2d(dt, g, x, out[t]));
            if (kind == 3) CHECK_OK(k->avg_pool2d_grad(dt, g, dy, out[t]));
        }
        char what[200];
        pool_describe(what, sizeof what, names[kind], dt, g);
        check_close(dt, n, out[1], out[0], PER_ELEMENT, what);
        check_same_bits(out[1], out[2], bytes, what);
        for (int t = 0; t < 3; t++) fedc_free(out[t]);
    }
    fedc_free(dy);
}

static void test_pool(void) {
    static const pool_case cases[] = {
        /* n, h, w, c, k, s, same, quantum */
        {3, 8, 8, 3, 2, 2, 0, 0},    {1, 7, 7, 1, 2, 2, 0, 0},   {3, 7, 9, 32, 2, 2, 1, 0},
        {3, 7, 7, 5, 3, 1, 1, 0},    {1, 13, 13, 3, 3, 2, 1, 0}, {3, 7, 7, 70, 3, 1, 1, 0.5},
        {3, 8, 8, 3, 2, 2, 0, 0.5},  {1, 1, 1, 1, 2, 2, 1, 0},   {1, 5, 6, 3, 3, 1, 1, 1.0},
        {3, 6, 6, 130, 2, 2, 0, 0.25},
    };
    for (int d = 0; d < 2; d++) {
        fedc_dtype dt = d ? FEDC_F64 : FEDC_F32;
        for (int i = 0; i < FEDC_COUNT_OF(cases); i++) {
            fedc__pool_geom g = pool_geom(&cases[i]);
            void *x = random_array(dt, g.n * g.h * g.w * g.c, 2, cases[i].quantum);
            pool_run(dt, &g, x);
            fedc_free(x);
        }
    }
}

/* Windows wholly in padding (max gives -inf, average 0) and NaNs in the data. */
static void test_pool_edges(void) {
    fedc__pool_geom g = {.n = 2, .h = 4, .w = 4, .c = 3, .kh = 2, .kw = 2, .sh = 1, .sw = 1,
                        .pad_top = 2, .pad_left = 2, .oh = 5, .ow = 5};
    for (int d = 0; d < 2; d++) {
        fedc_dtype dt = d ? FEDC_F64 : FEDC_F32;
        int64_t nx = g.n * g.h * g.w * g.c;
        void *x = random_array(dt, nx, 1, 0);
        for (int64_t i = 0; i < nx; i += 7) store(dt, x, i, NAN);
        pool_run(dt, &g, x);
        fedc_free(x);
    }
    uint8_t buf[16] = {0};
    CHECK_ERR(F->max_pool2d(FEDC_U8, &g, buf, buf), FEDC_EUNSUPPORTED, "max_pool2d");
    CHECK_ERR(F->avg_pool2d_grad(FEDC_I32, &g, buf, buf), FEDC_EUNSUPPORTED, "i32");
    g.sw = 0;
    CHECK_ERR(F->avg_pool2d(FEDC_F32, &g, buf, buf), FEDC_EINVAL, "avg_pool2d");
}


int main(int argc, char **argv) {
    static const fedc_test tests[] = {
        {"table", test_table},
        {"blas_core", test_blas_core},
        {"matmul", test_matmul},
        {"matmul_blocks", test_matmul_blocks},
        {"matmul_errors", test_matmul_errors},
        {"gather_gemm", test_gather_gemm},
        {"dense_input_grad_bits", test_dense_input_grad_bits},
        {"conv", test_conv},
        {"conv_chunked", test_conv_chunked},
        {"conv_in_place_bits", test_conv_in_place_bits},
        {"conv_errors", test_conv_errors},
        {"pool", test_pool},
        {"pool_edges", test_pool_edges},
    };
    return fedc_test_main(argc, argv, tests, FEDC_COUNT_OF(tests));
}
