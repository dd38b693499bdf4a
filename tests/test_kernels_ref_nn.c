/*
 * Tests of the reference kernels (fedc__kernels_ref) of neural networks: matmul;
 * conv2d against a naive formula on a zero-padded copy, its gradients as the
 * adjoints of the forward map; max and average pooling, and their gradients'
 * adjoints; softmax rows summing to one and the cross-entropy as minus the
 * log-softmax at the label. The rest of the reference kernels are in
 * test_kernels_ref.c.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "kernels/ref.h"
#include "kernels_ref_check.h"

/* ---------------------------------------------------------------- matmul -- */

static void test_matmul(void) {
    /* [2,3] @ [3,2] */
    const double a[] = {1, 2, 3, 4, 5, 6}, b[] = {7, 8, 9, 10, 11, 12};
    const double at[] = {1, 4, 2, 5, 3, 6}, bt[] = {7, 9, 11, 8, 10, 12};
    const double want[] = {58, 64, 139, 154};
    for (int t = 0; t < 2; t++) {
        fedc_dtype dt = FLOATS[t];
        void *A = make(dt, 6, a), *B = make(dt, 6, b), *AT = make(dt, 6, at), *BT = make(dt, 6, bt);
        void *C = make(dt, 8, NULL);
        CHECK_OK(K->matmul(dt, 1, 2, 2, 3, 0, 0, A, 0, B, 0, C));
        CHECK_ARR(dt, C, want, 4, 0);
        CHECK_OK(K->matmul(dt, 1, 2, 2, 3, 1, 0, AT, 0, B, 0, C));
        CHECK_ARR(dt, C, want, 4, 0);
        CHECK_OK(K->matmul(dt, 1, 2, 2, 3, 0, 1, A, 0, BT, 0, C));
        CHECK_ARR(dt, C, want, 4, 0);
        CHECK_OK(K->matmul(dt, 1, 2, 2, 3, 1, 1, AT, 0, BT, 0, C));
        CHECK_ARR(dt, C, want, 4, 0);
        free(A), free(B), free(AT), free(BT), free(C);
    }
    /* batch 2 with a batched and b shared: [2,1,2] @ [2,2] */
    double a2[] = {1, 0, 0, 1}, b2[] = {1, 2, 3, 4}, c2[4];
    CHECK_OK(K->matmul(FEDC_F64, 2, 1, 2, 2, 0, 0, a2, 1, b2, 0, c2));
    CHECK_ARR(FEDC_F64, c2, ((double[]){1, 2, 3, 4}), 4, 0);
    /* a shared, b batched */
    double b3[] = {1, 2, 3, 4, 5, 6, 7, 8};
    CHECK_OK(K->matmul(FEDC_F64, 2, 1, 2, 2, 0, 0, (double[]){1, 1}, 0, b3, 1, c2));
    CHECK_ARR(FEDC_F64, c2, ((double[]){4, 6, 12, 14}), 4, 0);
    /* k = 0 gives zeros */
    c2[0] = 5;
    CHECK_OK(K->matmul(FEDC_F64, 1, 1, 1, 0, 0, 0, a2, 0, b2, 0, c2));
    CHECK(c2[0] == 0);
    CHECK_ERR(K->matmul(FEDC_I32, 1, 1, 1, 1, 0, 0, a2, 0, b2, 0, c2), FEDC_EUNSUPPORTED, "i32");
}

/* ------------------------------------------------------------------ conv -- */

/* A geometry with explicit bottom/right padding deciding oh and ow. */
static fedc__conv_geom conv_geom(int64_t n, int64_t h, int64_t w, int64_t c, int64_t kh, int64_t kw,
                                int64_t o, int64_t sh, int64_t sw, int64_t pt, int64_t pl,
                                int64_t pb, int64_t pr) {
    fedc__conv_geom g = {n, h, w, c, kh, kw, o, sh, sw, pt, pl, 0, 0};
    g.oh = (h + pt + pb - kh) / sh + 1;
    g.ow = (w + pl + pr - kw) / sw + 1;
    return g;
}

/* Independent formula: copy x into a zero-padded image, then slide the filter over it
 * with no bounds checks at all. */
static void naive_conv(const fedc__conv_geom *g, const double *x, const double *w, double *y) {
    int64_t ph = (g->oh - 1) * g->sh + g->kh, pw = (g->ow - 1) * g->sw + g->kw;
    ph = ph > g->h + g->pad_top ? ph : g->h + g->pad_top;
    pw = pw > g->w + g->pad_left ? pw : g->w + g->pad_left;
    double *xp = calloc((size_t)(g->n * ph * pw * g->c), sizeof *xp);
    for (int64_t b = 0; b < g->n; b++)
        for (int64_t r = 0; r < g->h; r++)
            for (int64_t s = 0; s < g->w; s++)
                for (int64_t c = 0; c < g->c; c++)
                    xp[((b * ph + r + g->pad_top) * pw + s + g->pad_left) * g->c + c] =
                        x[((b * g->h + r) * g->w + s) * g->c + c];
    for (int64_t b = 0; b < g->n; b++)
        for (int64_t i = 0; i < g->oh; i++)
            for (int64_t j = 0; j < g->ow; j++)
                for (int64_t o = 0; o < g->o; o++) {
                    double acc = 0;
                    for (int64_t di = 0; di < g->kh; di++)
                        for (int64_t dj = 0; dj < g->kw; dj++)
                            for (int64_t c = 0; c < g->c; c++)
                                acc += xp[((b * ph + i * g->sh + di) * pw + j * g->sw + dj) *
                                              g->c + c] *
                                       w[((di * g->kw + dj) * g->c + c) * g->o + o];
                    y[((b * g->oh + i) * g->ow + j) * g->o + o] = acc;
                }
    free(xp);
}

static void check_conv_geom(fedc__conv_geom g, uint64_t seed) {
    int64_t nx = g.n * g.h * g.w * g.c, nw = g.kh * g.kw * g.c * g.o, ny = g.n * g.oh * g.ow * g.o;
    double *x = randoms(nx, seed), *w = randoms(nw, seed + 1), *dy = randoms(ny, seed + 2);
    double *want = malloc((size_t)ny * sizeof *want);
    double *xr = malloc((size_t)nx * sizeof *xr), *wr = malloc((size_t)nw * sizeof *wr);
    CHECK_EQ_INT(K->conv2d_scratch(&g, FEDC_F32), 0);
    for (int t = 0; t < 2; t++) { /* forward against the naive formula, f32 and f64 */
        fedc_dtype dt = FLOATS[t];
        void *X = make(dt, nx, x), *W = make(dt, nw, w), *Y = make(dt, ny, NULL);
        for (int64_t i = 0; i < nx; i++) xr[i] = get(dt, X, i); /* the inputs as stored */
        for (int64_t i = 0; i < nw; i++) wr[i] = get(dt, W, i);
        naive_conv(&g, xr, wr, want);
        CHECK_OK(K->conv2d(dt, &g, X, W, Y, NULL));
        CHECK_ARR(dt, Y, want, ny, dt == FEDC_F32 ? 1e-6 : 1e-13);
        free(X), free(W), free(Y);
    }
    free(xr), free(wr);
    /* the gradients are the adjoints: <conv(x,w), dy> = <x, dx> = <w, dw> */
    double *y = malloc((size_t)ny * sizeof *y), *dx = malloc((size_t)nx * sizeof *dx);
    double *dw = malloc((size_t)nw * sizeof *dw);
    CHECK_OK(K->conv2d(FEDC_F64, &g, x, w, y, NULL));
    CHECK_OK(K->conv2d_input_grad(FEDC_F64, &g, dy, w, dx, NULL));
    CHECK_OK(K->conv2d_filter_grad(FEDC_F64, &g, x, dy, dw, NULL));
    double fwd = dot(y, dy, ny);
    CHECK_NEAR(dot(x, dx, nx), fwd, 1e-12);
    CHECK_NEAR(dot(w, dw, nw), fwd, 1e-12);
    free(x), free(w), free(dy), free(want), free(y), free(dx), free(dw);
}

static void test_conv2d(void) {
    /* n h w c kh kw o sh sw pt pl pb pr */
    check_conv_geom(conv_geom(2, 5, 6, 3, 3, 3, 4, 2, 2, 1, 1, 1, 1), 10);
    check_conv_geom(conv_geom(1, 7, 4, 2, 2, 3, 3, 2, 1, 0, 1, 0, 1), 20);
    check_conv_geom(conv_geom(2, 4, 4, 1, 4, 4, 2, 2, 2, 2, 2, 2, 2), 30);
    check_conv_geom(conv_geom(1, 6, 5, 2, 3, 2, 1, 3, 2, 2, 0, 1, 3), 40);
    check_conv_geom(conv_geom(3, 3, 3, 2, 1, 1, 2, 1, 1, 0, 0, 0, 0), 50);
    /* a hand case: 1x3x3x1 image, 2x2 ones filter, stride 1, no padding */
    fedc__conv_geom g = conv_geom(1, 3, 3, 1, 2, 2, 1, 1, 1, 0, 0, 0, 0);
    double y[4];
    CHECK_OK(K->conv2d(FEDC_F64, &g, (double[]){1, 2, 3, 4, 5, 6, 7, 8, 9}, (double[]){1, 1, 1, 1},
                       y, NULL));
    CHECK_ARR(FEDC_F64, y, ((double[]){12, 16, 24, 28}), 4, 0);
    g.sh = 0;
    CHECK_ERR(K->conv2d(FEDC_F64, &g, y, y, y, NULL), FEDC_EINVAL, "conv2d");
    g.sh = 1;
    CHECK_ERR(K->conv2d(FEDC_I32, &g, y, y, y, NULL), FEDC_EUNSUPPORTED, "i32");
}

/* --------------------------------------------------------------- pooling -- */

static fedc__pool_geom pool_geom(int64_t h, int64_t w, int64_t k, int64_t s, int64_t pad,
                                int64_t oh, int64_t ow) {
    fedc__pool_geom g = {1, h, w, 1, k, k, s, s, pad, pad, oh, ow};
    return g;
}

static void test_max_pool(void) {
    /* overlapping 2x2 windows, stride 1, with ties: the first maximum wins */
    fedc__pool_geom g = pool_geom(3, 3, 2, 1, 0, 2, 2);
    double x[] = {1, 5, 2, 5, 0, 5, 3, 4, 1};
    for (int t = 0; t < 2; t++) {
        fedc_dtype dt = FLOATS[t];
        void *X = make(dt, 9, x), *Y = make(dt, 4, NULL);
        void *DY = make(dt, 4, (double[]){1, 2, 3, 4}), *DX = make(dt, 9, NULL);
        CHECK_OK(K->max_pool2d(dt, &g, X, Y));
        CHECK_ARR(dt, Y, ((double[]){5, 5, 5, 5}), 4, 0);
        CHECK_OK(K->max_pool2d_grad(dt, &g, X, DY, DX));
        CHECK_ARR(dt, DX, ((double[]){0, 3, 0, 3, 0, 4, 0, 0, 0}), 9, 0);
        free(X), free(Y), free(DY), free(DX);
    }
    /* padding is never picked, even when every real value is negative */
    fedc__pool_geom p = pool_geom(2, 2, 2, 1, 1, 2, 2);
    double y[4], dx[4];
    double neg[] = {-1, -2, -3, -4};
    CHECK_OK(K->max_pool2d(FEDC_F64, &p, neg, y));
    CHECK_ARR(FEDC_F64, y, ((double[]){-1, -1, -1, -1}), 4, 0);
    CHECK_OK(K->max_pool2d_grad(FEDC_F64, &p, neg, (double[]){1, 1, 1, 1}, dx));
    CHECK_ARR(FEDC_F64, dx, ((double[]){4, 0, 0, 0}), 4, 0);
}

static void test_avg_pool(void) {
    /* TensorFlow's count: padded positions are not in the divisor */
    fedc__pool_geom p = pool_geom(2, 2, 2, 1, 1, 2, 2);
    for (int t = 0; t < 2; t++) {
        fedc_dtype dt = FLOATS[t];
        void *X = make(dt, 4, (double[]){1, 2, 3, 4}), *Y = make(dt, 4, NULL);
        void *DY = make(dt, 4, (double[]){1, 1, 1, 1}), *DX = make(dt, 4, NULL);
        CHECK_OK(K->avg_pool2d(dt, &p, X, Y));
        CHECK_ARR(dt, Y, ((double[]){1, 1.5, 2, 2.5}), 4, 0);
        /* dy = 1 everywhere: dx[r,s] = sum of 1/count over the windows holding (r,s) */
        CHECK_OK(K->avg_pool2d_grad(dt, &p, DY, DX));
        CHECK_ARR(dt, DX, ((double[]){1 + 0.5 + 0.5 + 0.25, 0.5 + 0.25, 0.5 + 0.25, 0.25}), 4,
                  tol_of(dt));
        free(X), free(Y), free(DY), free(DX);
    }
}

/* <pool(x), dy> == <x, pool_grad(dy)> for avg pooling, and for max pooling given x
 * (max pooling is linear once its argmaxes are fixed). */
static void check_pool_adjoint(fedc__pool_geom g, uint64_t seed) {
    int64_t nx = g.n * g.h * g.w * g.c, ny = g.n * g.oh * g.ow * g.c;
    double *x = randoms(nx, seed), *dy = randoms(ny, seed + 1);
    double *y = malloc((size_t)ny * sizeof *y), *dx = malloc((size_t)nx * sizeof *dx);
    CHECK_OK(K->avg_pool2d(FEDC_F64, &g, x, y));
    CHECK_OK(K->avg_pool2d_grad(FEDC_F64, &g, dy, dx));
    CHECK_NEAR(dot(y, dy, ny), dot(x, dx, nx), 1e-12);
    CHECK_OK(K->max_pool2d(FEDC_F64, &g, x, y));
    CHECK_OK(K->max_pool2d_grad(FEDC_F64, &g, x, dy, dx));
    CHECK_NEAR(dot(y, dy, ny), dot(x, dx, nx), 1e-12);
    free(x), free(dy), free(y), free(dx);
}

static void test_pool_adjoint(void) {
    /* n h w c kh kw sh sw pt pl oh ow */
    check_pool_adjoint((fedc__pool_geom){2, 7, 6, 3, 3, 3, 2, 2, 1, 1, 4, 3}, 1);
    check_pool_adjoint((fedc__pool_geom){1, 5, 5, 2, 2, 3, 1, 2, 0, 1, 4, 3}, 2);
    check_pool_adjoint((fedc__pool_geom){1, 8, 8, 1, 2, 2, 2, 2, 0, 0, 4, 4}, 3);
    fedc__pool_geom bad = pool_geom(2, 2, 2, 0, 0, 1, 1);
    double z[4];
    CHECK_ERR(K->avg_pool2d(FEDC_F64, &bad, z, z), FEDC_EINVAL, "avg_pool2d");
}

/* --------------------------------------------------------------- softmax -- */

static void test_log_softmax(void) {
    const double x[] = {1, 2, 3, 0, 0, 0, 1000, 0, -1000};
    for (int t = 0; t < 2; t++) {
        fedc_dtype dt = FLOATS[t];
        void *X = make(dt, 9, x), *Y = make(dt, 9, NULL);
        CHECK_OK(K->log_softmax(dt, 3, 3, X, Y));
        for (int r = 0; r < 3; r++) {
            double s = 0;
            for (int c = 0; c < 3; c++) s += exp(get(dt, Y, r * 3 + c));
            CHECK_NEAR(s, 1, tol_of(dt) * 4);
        }
        double l3 = log(exp(-2) + exp(-1) + 1);
        double want[] = {-2 - l3, -1 - l3, -l3, -log(3), -log(3), -log(3), 0, -1000, -2000};
        CHECK_ARR(dt, Y, want, 9, tol_of(dt));
        free(X), free(Y);
    }
}

static void test_softmax_xent(void) {
    const double x[] = {1, 2, 3, 0.5, -1, 2, 1000, 0, -1000};
    int32_t labels[] = {0, 2, 1};
    for (int t = 0; t < 2; t++) {
        fedc_dtype dt = FLOATS[t];
        void *X = make(dt, 9, x), *LS = make(dt, 9, NULL), *L = make(dt, 3, NULL);
        CHECK_OK(K->log_softmax(dt, 3, 3, X, LS));
        CHECK_OK(K->softmax_xent(dt, 3, 3, X, labels, NULL, L));
        double want[3];
        for (int r = 0; r < 3; r++) want[r] = -get(dt, LS, r * 3 + labels[r]);
        CHECK_ARR(dt, L, want, 3, tol_of(dt));
        CHECK(isfinite(get(dt, L, 2)) && fabs(get(dt, L, 2) - 1000) < 1e-9);
        /* weights scale each row */
        void *W = make(dt, 3, (double[]){2, 0, 0.5});
        CHECK_OK(K->softmax_xent(dt, 3, 3, X, labels, W, L));
        CHECK_ARR(dt, L, ((double[]){2 * want[0], 0, 0.5 * want[2]}), 3, tol_of(dt));
        CHECK_ERR(K->softmax_xent(dt, 3, 3, X, (int32_t[]){0, 3, 1}, NULL, L), FEDC_ERANGE,
                  "label 3");
        CHECK(strstr(fedc_errmsg(), "row 1") != NULL);
        free(X), free(LS), free(L), free(W);
    }
}

int main(int argc, char **argv) {
    static const fedc_test tests[] = {
        {"matmul", test_matmul},
        {"conv2d", test_conv2d},
        {"max_pool", test_max_pool},
        {"avg_pool", test_avg_pool},
        {"pool_adjoint", test_pool_adjoint},
        {"log_softmax", test_log_softmax},
        {"softmax_xent", test_softmax_xent},
    };
    return fedc_test_main(argc, argv, tests, FEDC_COUNT_OF(tests));
}
