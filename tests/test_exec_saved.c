/*
 * Tests for the bytes a forward op saves for its derivative (plan_saved):
 * dropout's mask, max-pool's argmax, softmax cross-entropy's row max and sum
 * (test_xent_kernels, test_executor_xent) and attention's softmax weights
 * (test_attention_kernels, test_executor_attention). The fast kernels dropout_save /
 * dropout_apply and max_pool2d_save / max_pool2d_grad_apply give the bits of
 * dropout and max_pool2d_grad (the reference's; ties, NaN and -0 included); the
 * executor has a dropout's later twins (same key value, rate and type: its
 * derivative) and a max-pool's gradient read what the forward saved, kept alive in
 * the block until the last reader runs, with the bits of the reference kernels;
 * relu's derivative on that gradient runs in one pass (max_pool2d_grad_select_gt).
 */
#include "core/internal.h"
#include "harness.h"

#include <math.h>
#include <string.h>

#include "exec/executor_plan.h"
#include "fedc/exec.h"
#include "fedc/program.h"
#include "kernels/kernels.h"

#define DIMS(...) ((int64_t[]){__VA_ARGS__})
#define NDIMS(...) ((int)(sizeof(DIMS(__VA_ARGS__)) / sizeof(int64_t)))
#define TY(dt, ...) fedc_type_make((dt), NDIMS(__VA_ARGS__), DIMS(__VA_ARGS__))

static const fedc__kernels *const F = &fedc__kernels_fast;
static const fedc__kernels *const R = &fedc__kernels_ref;

static uint64_t state = 0x9E3779B97F4A7C15u;
static float uniform(void) { /* [-1, 1), xorshift64* */
    state ^= state >> 12, state ^= state << 25, state ^= state >> 27;
    return (float)((double)((state * 0x2545F4914F6CDD1Du) >> 11) * (2.0 / 9007199254740992.0) - 1.0);
}

/* Sizes around the tile (256) and block (4) edges; rates whose 1 - rate is a float
 * and not; NaN and -0 among the values. */
static void test_kernels(void) {
    enum { MAX = 1031 };
    const int64_t sizes[] = {1, 3, 4, 5, 255, 256, 257, 1031};
    const double rates[] = {0, 0.25, 0.5, 0.3, 1.0 / 3.0, 0.999};
    fedc_rng_stream s = fedc_rng_stream_make(0xFFFFFFFF12345ull, 9, 0, 77);
    static float x[MAX], ct[MAX], got[MAX], want[MAX];
    static uint8_t keep[MAX];
    for (int i = 0; i < MAX; i++) x[i] = uniform(), ct[i] = uniform();
    x[0] = -0.0f, x[2] = NAN, ct[1] = NAN;
    for (int si = 0; si < FEDC_COUNT_OF(sizes); si++)
        for (int ri = 0; ri < FEDC_COUNT_OF(rates); ri++) {
            int64_t n = sizes[si];
            memset(keep, 7, sizeof keep);
            CHECK_OK(F->dropout_save(FEDC_F32, n, x, s, rates[ri], got, keep));
            CHECK_OK(R->dropout(FEDC_F32, n, x, s, rates[ri], want));
            CHECK_MSG(memcmp(got, want, (size_t)n * sizeof *got) == 0, "dropout_save n %lld rate %g", (long long)n,
                      rates[ri]);
            bool bytes_ok = n == MAX || keep[n] == 7;
            for (int64_t i = 0; i < n; i++) bytes_ok &= keep[i] == 0 || keep[i] == 1;
            CHECK_MSG(bytes_ok, "dropout_save n %lld: mask bytes not 0/1 or written past n", (long long)n);
            CHECK_OK(F->dropout_apply(FEDC_F32, n, ct, keep, rates[ri], got));
            CHECK_OK(R->dropout(FEDC_F32, n, ct, s, rates[ri], want));
            CHECK_MSG(memcmp(got, want, (size_t)n * sizeof *got) == 0, "dropout_apply n %lld rate %g", (long long)n,
                      rates[ri]);
        }
    double xd[3] = {1, 2, 3}, yd[3];
    CHECK_ERR(F->dropout_save(FEDC_F64, 3, xd, s, 0.5, yd, keep), FEDC_EINVAL, "f32");
    CHECK_ERR(F->dropout_apply(FEDC_F32, 3, x, keep, 1.0, got), FEDC_EINVAL, "rate");
    CHECK(R->dropout_save == NULL && R->dropout_apply == NULL);
}

/* y = dropout(2 x, key, 0.3); a temporary t placed while the mask is pending
 * (exact ops only, whose bits both tables share); the derivative's
 * dropout(2 ct, key, 0.3) (a twin), dropout(ct, key, 0.5) and
 * dropout(ct, key2, 0.3) (not twins). */
enum { N = 3000 };

static fedc_program *twins_program(fedc_value ids[4]) {
    fedc_program *p = NULL;
    CHECK_OK(fedc_program_create(&p));
    if (!p) return NULL;
    fedc_value x = fedc_input(p, "x", TY(FEDC_F32, N)), ct = fedc_input(p, "ct", TY(FEDC_F32, N));
    fedc_value key = fedc_input(p, "key", TY(FEDC_I32, 4)), key2 = fedc_input(p, "key2", TY(FEDC_I32, 4));
    ids[0] = fedc_dropout(p, fedc_add(p, x, x), key, 0.3);
    CHECK_OK(fedc_program_output(p, "y", fedc_add(p, ids[0], ids[0])));
    fedc_value t = fedc_add(p, ct, ct);
    CHECK_OK(fedc_program_output(p, "t", fedc_add(p, t, t)));
    ids[1] = fedc_dropout(p, fedc_add(p, ct, ct), key, 0.3);
    ids[2] = fedc_dropout(p, ct, key, 0.5);
    ids[3] = fedc_dropout(p, ct, key2, 0.3);
    CHECK_OK(fedc_program_output(p, "dx", ids[1]));
    CHECK_OK(fedc_program_output(p, "d5", ids[2]));
    CHECK_OK(fedc_program_output(p, "d2", ids[3]));
    return p;
}

static fedc_executor *twins_run(bool reference, fedc_value ids[4], const float *x, const float *ct) {
    static const int32_t key[4] = {12345, -7, 3, 99}, key2[4] = {12345, -7, 3, 100};
    fedc_program *p = twins_program(ids);
    fedc_executor *ex = NULL;
    fedc_exec_options o = {.reference_kernels = reference};
    if (p) CHECK_OK(fedc_executor_create(&ex, p, &o));
    fedc_program_destroy(p);
    if (!ex) return NULL;
    CHECK_OK(fedc_executor_bind(ex, "x", x));
    CHECK_OK(fedc_executor_bind(ex, "ct", ct));
    CHECK_OK(fedc_executor_bind(ex, "key", key));
    CHECK_OK(fedc_executor_bind(ex, "key2", key2));
    CHECK_OK(fedc_executor_run(ex));
    return ex;
}

static void test_executor_twins(void) {
    static float x[N], ct[N];
    for (int i = 0; i < N; i++) x[i] = uniform(), ct[i] = uniform();
    fedc_value ids[4];
    fedc_executor *fast = twins_run(false, ids, x, ct), *ref = twins_run(true, ids, x, ct);
    if (fast && ref) {
        /* the first saves, its twin applies, the others compute their own masks */
        CHECK(fast->plan[ids[0]].saved == ids[0] && fast->plan[ids[1]].saved == ids[0]);
        CHECK(fast->plan[ids[2]].saved == FEDC_NONE && fast->plan[ids[3]].saved == FEDC_NONE);
        CHECK(ref->plan[ids[0]].saved == FEDC_NONE);
        const char *names[5] = {"y", "t", "dx", "d5", "d2"};
        for (int i = 0; i < 5; i++) {
            const void *a = NULL, *b = NULL;
            fedc_type ta, tb;
            CHECK_OK(fedc_executor_output(fast, names[i], &a, &ta));
            CHECK_OK(fedc_executor_output(ref, names[i], &b, &tb));
            CHECK_MSG(a && b && memcmp(a, b, N * sizeof(float)) == 0, "%s: kept mask and reference differ", names[i]);
        }
    }
    fedc_executor_destroy(fast);
    fedc_executor_destroy(ref);
}

/* ------------------------------------------------------------- max-pool -- */

/* Values of few levels, so that windows hold ties (0 and -0 among them), and NaNs. */
static void fill_ties(float *x, int64_t n) {
    for (int64_t i = 0; i < n; i++) {
        float u = uniform();
        x[i] = u < -0.5f ? -0.0f : u < 0.0f ? 0.0f : u < 0.5f ? 1.0f : 2.0f;
        if (i % 97 == 5) x[i] = NAN;
    }
}

/* max_pool2d_grad_select_gt against the gradient (want_dx, the reference's) and
 * then select_gt: relu's derivative (s = b = 0) and another threshold and b. */
static void pool_select_case(const fedc__pool_geom *g, const float *x, const float *dy, const uint8_t *arg,
                             const float *want_dx, int64_t nx) {
    static const float cuts[][2] = {{0.0f, 0.0f}, {1.0f, -1.5f}};
    float *got = fedc_malloc((size_t)nx * sizeof *got), *want = fedc_malloc((size_t)nx * sizeof *want);
    for (int i = 0; got && want && i < FEDC_COUNT_OF(cuts); i++) {
        memset(got, 0x7f, (size_t)nx * sizeof *got);
        CHECK_OK(F->max_pool2d_grad_select_gt(FEDC_F32, g, arg, dy, x, &cuts[i][0], &cuts[i][1], got));
        CHECK_OK(F->select_gt(FEDC_F32, nx, x, &cuts[i][0], want_dx, 1, &cuts[i][1], 0, want));
        CHECK_MSG(memcmp(got, want, (size_t)nx * sizeof *got) == 0, "max_pool2d_grad_select_gt %lldx%lld, cut %d",
                  (long long)g->kh, (long long)g->kw, i);
    }
    fedc_free(got), fedc_free(want);
}

static void test_pool_kernels(void) {
    /* n, h, w, c, kh, kw, sh, sw, pad top, pad left, oh, ow: tiles (c over one
     * channel block of 64), overlapping windows, padding, a 1-wide image */
    const fedc__pool_geom geoms[] = {
        {2, 6, 4, 70, 2, 2, 2, 2, 0, 0, 3, 2}, {1, 7, 7, 5, 3, 3, 2, 2, 0, 0, 3, 3},
        {2, 5, 6, 3, 3, 3, 2, 2, 1, 1, 3, 3},  {1, 4, 1, 2, 2, 1, 1, 1, 0, 0, 3, 1},
    };
    enum { MAX = 2 * 7 * 7 * 70 };
    static float x[MAX], dy[MAX], y[MAX], want_y[MAX], dx[MAX], want_dx[MAX];
    static uint8_t arg[MAX];
    for (int gi = 0; gi < FEDC_COUNT_OF(geoms); gi++) {
        const fedc__pool_geom *g = &geoms[gi];
        int64_t nx = g->n * g->h * g->w * g->c, ny = g->n * g->oh * g->ow * g->c;
        fill_ties(x, nx);
        for (int64_t i = 0; i < ny; i++) dy[i] = uniform();
        dy[0] = -0.0f;
        CHECK_OK(F->max_pool2d_save(FEDC_F32, g, x, y, arg));
        CHECK_OK(R->max_pool2d(FEDC_F32, g, x, want_y));
        CHECK_MSG(memcmp(y, want_y, (size_t)ny * sizeof *y) == 0, "max_pool2d_save, geometry %d", gi);
        memset(dx, 0x7f, sizeof dx);
        CHECK_OK(F->max_pool2d_grad_apply(FEDC_F32, g, arg, dy, dx));
        CHECK_OK(R->max_pool2d_grad(FEDC_F32, g, x, dy, want_dx));
        CHECK_MSG(memcmp(dx, want_dx, (size_t)nx * sizeof *dx) == 0, "max_pool2d_grad_apply, geometry %d", gi);
        CHECK_OK(F->max_pool2d_grad(FEDC_F32, g, x, dy, dx));
        CHECK_MSG(memcmp(dx, want_dx, (size_t)nx * sizeof *dx) == 0, "max_pool2d_grad, geometry %d", gi);
        pool_select_case(g, x, dy, arg, want_dx, nx);
    }
    fedc__pool_geom big = {1, 16, 16, 1, 16, 16, 1, 1, 0, 0, 1, 1};
    CHECK_ERR(F->max_pool2d_save(FEDC_F32, &big, x, y, arg), FEDC_EINVAL, "255");
    CHECK_ERR(F->max_pool2d_grad_apply(FEDC_F64, &geoms[0], arg, dy, dx), FEDC_EINVAL, "f32");
}

/* An executor of p (then destroyed) with x and dy bound, after one run. */
static fedc_executor *pool_executor(fedc_program *p, bool reference, const float *x, const float *dy) {
    fedc_executor *ex = NULL;
    fedc_exec_options o = {.reference_kernels = reference};
    CHECK_OK(fedc_executor_create(&ex, p, &o));
    fedc_program_destroy(p);
    if (!ex) return NULL;
    CHECK_OK(fedc_executor_bind(ex, "x", x));
    CHECK_OK(fedc_executor_bind(ex, "dy", dy));
    CHECK_OK(fedc_executor_run(ex));
    return ex;
}

/* pooled = max_pool2d(x) (3x3, stride 2: overlapping windows) with its gradient
 * for dy, and a temporary placed while the argmax is pending; a second gradient of
 * another geometry (2x2) reads x without a forward of its own. */
static fedc_executor *pool_run(bool reference, fedc_value ids[3], const float *x, const float *dy) {
    fedc_program *p = NULL;
    CHECK_OK(fedc_program_create(&p));
    if (!p) return NULL;
    fedc_value xv = fedc_add(p, fedc_input(p, "x", TY(FEDC_F32, 2, 7, 7, 5)), fedc_scalar(p, FEDC_F32, 0));
    fedc_value d = fedc_input(p, "dy", TY(FEDC_F32, 2, 3, 3, 5));
    const int64_t pads[4] = {0, 0, 0, 0};
    ids[0] = fedc_max_pool2d(p, xv, 3, 3, 2, 2, FEDC_PAD_VALID);
    CHECK_OK(fedc_program_output(p, "y", fedc_add(p, ids[0], ids[0])));
    fedc_value t = fedc_add(p, d, d);
    CHECK_OK(fedc_program_output(p, "t", fedc_add(p, t, t)));
    ids[1] = fedc_max_pool2d_grad(p, xv, fedc_add(p, d, d), 3, 3, 2, 2, pads);
    ids[2] = fedc_max_pool2d_grad(p, xv, fedc_slice(p, d, DIMS(0, 0, 0, 0), DIMS(2, 3, 3, 5)), 2, 2, 2, 2, pads);
    CHECK_OK(fedc_program_output(p, "dx", ids[1]));
    CHECK_OK(fedc_program_output(p, "dx2", fedc_add(p, ids[2], ids[2])));
    return pool_executor(p, reference, x, dy);
}

static void test_executor_pool(void) {
    static float x[2 * 7 * 7 * 5], dy[2 * 3 * 3 * 5];
    fill_ties(x, FEDC_COUNT_OF(x));
    for (int i = 0; i < FEDC_COUNT_OF(dy); i++) dy[i] = uniform();
    fedc_value ids[3];
    fedc_executor *fast = pool_run(false, ids, x, dy), *ref = pool_run(true, ids, x, dy);
    if (fast && ref) {
        CHECK(fast->plan[ids[0]].saved == ids[0] && fast->plan[ids[1]].saved == ids[0]);
        CHECK(fast->plan[ids[2]].saved == FEDC_NONE && ref->plan[ids[0]].saved == FEDC_NONE);
        const char *names[4] = {"y", "t", "dx", "dx2"};
        const size_t bytes[4] = {sizeof dy, sizeof dy, sizeof x, sizeof x};
        for (int i = 0; i < 4; i++) {
            const void *a = NULL, *b = NULL;
            fedc_type ta, tb;
            CHECK_OK(fedc_executor_output(fast, names[i], &a, &ta));
            CHECK_OK(fedc_executor_output(ref, names[i], &b, &tb));
            CHECK_MSG(a && b && memcmp(a, b, bytes[i]) == 0, "%s: saved argmax and reference differ", names[i]);
        }
    }
    fedc_executor_destroy(fast);
    fedc_executor_destroy(ref);
}

/* relu's derivative on a pool's gradient, as vjp_RELU after vjp_MAX_POOL2D write
 * it: select(gt(x, 0), max_pool2d_grad(x, dy), 0), with pooled = max_pool2d(x)
 * saving the argmax; windows that tile x (2x2 on 6x4) and that overlap (3x3,
 * stride 2, on 7x7). The fast executor runs the gradient inside the select and
 * gives the reference executor's bits. */
static fedc_executor *pool_select_run(bool reference, bool tiles, fedc_value ids[2], const float *x, const float *dy) {
    int64_t side = tiles ? 6 : 7, k = tiles ? 2 : 3, out = 3;
    fedc_program *p = NULL;
    CHECK_OK(fedc_program_create(&p));
    if (!p) return NULL;
    fedc_value xv = fedc_add(p, fedc_input(p, "x", TY(FEDC_F32, 2, side, tiles ? 4 : 7, 5)), fedc_scalar(p, FEDC_F32, 0));
    fedc_value d = fedc_input(p, "dy", TY(FEDC_F32, 2, out, tiles ? 2 : 3, 5));
    const int64_t pads[4] = {0, 0, 0, 0};
    CHECK_OK(fedc_program_output(p, "y", fedc_max_pool2d(p, xv, k, k, 2, 2, FEDC_PAD_VALID)));
    ids[0] = fedc_max_pool2d_grad(p, xv, d, k, k, 2, 2, pads);
    ids[1] = fedc_select(p, fedc_gt(p, xv, fedc_scalar(p, FEDC_F32, 0)), ids[0], fedc_scalar(p, FEDC_F32, 0));
    CHECK_OK(fedc_program_output(p, "dx", ids[1]));
    return pool_executor(p, reference, x, dy);
}

static void test_executor_pool_select(void) {
    static float x[2 * 7 * 7 * 5], dy[2 * 3 * 3 * 5];
    for (int tiles = 0; tiles < 2; tiles++) {
        fill_ties(x, FEDC_COUNT_OF(x));
        for (int i = 0; i < FEDC_COUNT_OF(dy); i++) dy[i] = uniform();
        dy[1] = -0.0f;
        fedc_value ids[2];
        fedc_executor *fast = pool_select_run(false, tiles, ids, x, dy), *ref = pool_select_run(true, tiles, ids, x, dy);
        if (fast && ref) {
            CHECK(fast->plan[ids[1]].product == ids[0] && fast->plan[ids[0]].kind == MEM_NONE);
            CHECK(ref->plan[ids[1]].product == FEDC_NONE);
            const char *names[2] = {"y", "dx"};
            for (int i = 0; i < 2; i++) {
                const void *a = NULL, *b = NULL;
                fedc_type ta, tb;
                CHECK_OK(fedc_executor_output(fast, names[i], &a, &ta));
                CHECK_OK(fedc_executor_output(ref, names[i], &b, &tb));
                CHECK_MSG(a && b && memcmp(a, b, fedc_type_bytes(&ta)) == 0, "%s (%s): fused and reference differ",
                          names[i], tiles ? "tiles" : "overlapping");
            }
        }
        fedc_executor_destroy(fast);
        fedc_executor_destroy(ref);
    }
}

/* softmax_xent_save and softmax_xent_grad_apply give the bits of softmax_xent and
 * softmax_xent_grad: rows of 1 to 10,004 classes (the 8-lane sums' tails), with and
 * without weights, on 1 and 2 threads (blocks of rows), an infinite max, a NaN. */
static void xent_case(int64_t rows, int64_t classes, bool weighted, int threads) {
    size_t nz = (size_t)(rows * classes);
    float *z = fedc_malloc(nz * sizeof *z), *want = fedc_malloc(nz * sizeof *z), *got = fedc_malloc(nz * sizeof *z);
    float *w = fedc_malloc((size_t)rows * 6 * sizeof *w), *scale = w + rows, *loss = scale + rows, *gloss = loss + rows;
    float *stats = gloss + rows;
    int32_t *labels = fedc_malloc((size_t)rows * sizeof *labels);
    if (!z || !want || !got || !w || !labels) goto done;
    for (size_t i = 0; i < nz; i++) z[i] = 8.0f * uniform();
    for (int64_t r = 0; r < rows; r++) w[r] = uniform(), scale[r] = uniform(), labels[r] = (int32_t)((r * 7919) % classes);
    if (rows > 3) z[classes] = INFINITY, z[2 * classes + classes / 2] = NAN; /* rows 1 and 2 */
    if (rows > 3) /* row 3 all -inf */
        for (int64_t c = 0; c < classes; c++) z[3 * classes + c] = -INFINITY;
    fedc_pool *pool = NULL;
    if (threads > 1) CHECK_OK(fedc_pool_create(&pool, threads));
    fedc_pool *outer = fedc__kernels_set_pool(pool);
    CHECK_OK(F->softmax_xent(FEDC_F32, rows, classes, z, labels, weighted ? w : NULL, loss));
    CHECK_OK(F->softmax_xent_grad(FEDC_F32, rows, classes, z, labels, scale, want));
    CHECK_OK(F->softmax_xent_save(FEDC_F32, rows, classes, z, labels, weighted ? w : NULL, gloss, stats));
    CHECK_OK(F->softmax_xent_grad_apply(FEDC_F32, rows, classes, z, labels, scale, stats, got));
    CHECK_MSG(memcmp(loss, gloss, (size_t)rows * sizeof *loss) == 0, "softmax_xent_save %lld x %lld, %d threads: loss",
              (long long)rows, (long long)classes, threads);
    CHECK_MSG(memcmp(want, got, nz * sizeof *got) == 0, "softmax_xent_grad_apply %lld x %lld, %d threads: gradient",
              (long long)rows, (long long)classes, threads);
    fedc__kernels_set_pool(outer);
    fedc_pool_destroy(pool);
done:
    fedc_free(z), fedc_free(want), fedc_free(got), fedc_free(w), fedc_free(labels);
}

static void test_xent_kernels(void) {
    const int64_t shapes[][2] = {{1, 1}, {5, 7}, {40, 8}, {17, 1003}, {37, 10004}};
    for (int si = 0; si < FEDC_COUNT_OF(shapes); si++)
        for (int threads = 1; threads <= 2; threads++) {
            xent_case(shapes[si][0], shapes[si][1], false, threads);
            xent_case(shapes[si][0], shapes[si][1], true, threads);
        }
    double zd[2] = {1, 2}, ld[1];
    float zf[2] = {1, 2}, lf[1], st[2];
    int32_t good[1] = {1}, bad[1] = {2};
    CHECK_ERR(F->softmax_xent_save(FEDC_F64, 1, 2, zd, good, NULL, ld, st), FEDC_EINVAL, "f32");
    CHECK_ERR(F->softmax_xent_grad_apply(FEDC_F64, 1, 2, zd, good, zd, st, ld), FEDC_EINVAL, "f32");
    CHECK_ERR(F->softmax_xent_save(FEDC_F32, 1, 2, zf, bad, NULL, lf, st), FEDC_ERANGE, "softmax_xent_save");
    CHECK_ERR(F->softmax_xent_grad_apply(FEDC_F32, 1, 2, zf, bad, zf, st, lf), FEDC_ERANGE, "softmax_xent_grad_apply");
    CHECK(R->softmax_xent_save == NULL && R->softmax_xent_grad_apply == NULL);
}

/* Outputs names[i] of ex have the bits of want[i] (bytes[i] bytes): the saved
 * path against the kernels called one by one. */
static void check_outputs(const fedc_executor *ex, int n, const char *const *names, const float *const *want,
                          const size_t *bytes) {
    for (int i = 0; i < n; i++) {
        const void *got = NULL;
        fedc_type ty;
        CHECK_OK(fedc_executor_output(ex, names[i], &got, &ty));
        CHECK_MSG(got && memcmp(got, want[i], bytes[i]) == 0, "%s: the saved path and the kernels one by one differ",
                  names[i]);
    }
}

/* loss = softmax_xent(z, labels, w) and its gradient for a scale (ids 0, 1: they
 * share logits and labels), a temporary placed while the stats are pending, and a
 * gradient of other logits (id 2: computes its own). Outputs against the fast
 * kernels called one by one. */
enum { XR = 6, XC = 1003 };

static fedc_executor *xent_run(fedc_value ids[3], const float *z, const int32_t *labels, const float *w) {
    fedc_program *p = NULL;
    CHECK_OK(fedc_program_create(&p));
    if (!p) return NULL;
    fedc_value zv = fedc_input(p, "z", TY(FEDC_F32, 2, 3, XC)), lv = fedc_input(p, "labels", TY(FEDC_I32, 2, 3));
    fedc_value wv = fedc_input(p, "w", TY(FEDC_F32, 2, 3));
    ids[0] = fedc_softmax_cross_entropy(p, zv, lv, wv);
    CHECK_OK(fedc_program_output(p, "loss", fedc_add(p, ids[0], ids[0])));
    fedc_value t = fedc_add(p, wv, wv);
    CHECK_OK(fedc_program_output(p, "t", fedc_add(p, t, t)));
    ids[1] = fedc_softmax_cross_entropy_grad(p, zv, lv, t);
    ids[2] = fedc_softmax_cross_entropy_grad(p, fedc_add(p, zv, zv), lv, wv);
    CHECK_OK(fedc_program_output(p, "dz", ids[1]));
    CHECK_OK(fedc_program_output(p, "dz2", ids[2]));
    fedc_executor *ex = NULL;
    fedc_exec_options o = {.threads = 2};
    CHECK_OK(fedc_executor_create(&ex, p, &o));
    fedc_program_destroy(p);
    if (!ex) return NULL;
    CHECK_OK(fedc_executor_bind(ex, "z", z));
    CHECK_OK(fedc_executor_bind(ex, "labels", labels));
    CHECK_OK(fedc_executor_bind(ex, "w", w));
    CHECK_OK(fedc_executor_run(ex));
    return ex;
}

static void test_executor_xent(void) {
    static float z[XR * XC], z2[XR * XC], w[XR], t[XR], loss[XR], dz[XR * XC], dz2[XR * XC];
    static int32_t labels[XR];
    for (int i = 0; i < XR * XC; i++) z[i] = 4.0f * uniform(), z2[i] = z[i] + z[i];
    for (int r = 0; r < XR; r++) w[r] = uniform(), t[r] = w[r] + w[r], labels[r] = (r * 331) % XC;
    fedc_value ids[3];
    fedc_executor *ex = xent_run(ids, z, labels, w);
    if (!ex) return;
    CHECK(ex->plan[ids[0]].saved == ids[0] && ex->plan[ids[1]].saved == ids[0] && ex->plan[ids[2]].saved == FEDC_NONE);
    CHECK_OK(F->softmax_xent(FEDC_F32, XR, XC, z, labels, w, loss));
    for (int r = 0; r < XR; r++) loss[r] += loss[r];
    CHECK_OK(F->softmax_xent_grad(FEDC_F32, XR, XC, z, labels, t, dz));
    CHECK_OK(F->softmax_xent_grad(FEDC_F32, XR, XC, z2, labels, w, dz2));
    check_outputs(ex, 3, (const char *[]){"loss", "dz", "dz2"}, (const float *[]){loss, dz, dz2},
                  (size_t[]){sizeof loss, sizeof dz, sizeof dz2});
    fedc_executor_destroy(ex);
}

/* causal_attention_save and causal_attention_grad_apply give the bits of
 * causal_attention and causal_attention_grad: sequences shorter than, equal to and
 * past the 32-row blocks, one and several heads, on 1 and 2 threads. */
static void attention_case(const fedc__attn_geom *g, int threads) {
    int64_t nqkv = g->batch * g->seq * 3 * g->heads * g->head_dim, ny = nqkv / 3;
    size_t scratch_bytes = F->attention_scratch(FEDC_F32, g);
    float *qkv = fedc_malloc((size_t)nqkv * sizeof *qkv), *dy = fedc_malloc((size_t)ny * sizeof *dy);
    float *y = fedc_malloc((size_t)ny * sizeof *y), *gy = fedc_malloc((size_t)ny * sizeof *gy);
    float *dq = fedc_malloc((size_t)nqkv * sizeof *dq), *gdq = fedc_malloc((size_t)nqkv * sizeof *gdq);
    float *probs = fedc_malloc((size_t)(g->batch * g->heads * g->seq * g->seq) * sizeof *probs);
    void *scratch = fedc_malloc(scratch_bytes);
    if (!qkv || !dy || !y || !gy || !dq || !gdq || !probs || !scratch) goto done;
    for (int64_t i = 0; i < nqkv; i++) qkv[i] = 2.0f * uniform();
    for (int64_t i = 0; i < ny; i++) dy[i] = uniform();
    fedc_pool *pool = NULL;
    if (threads > 1) CHECK_OK(fedc_pool_create(&pool, threads));
    fedc_pool *outer = fedc__kernels_set_pool(pool);
    CHECK_OK(F->causal_attention(FEDC_F32, g, qkv, y, scratch));
    CHECK_OK(F->causal_attention_grad(FEDC_F32, g, qkv, dy, dq, scratch));
    memset(scratch, 0xFF, scratch_bytes); /* the saved path must not read what the plain one left there */
    CHECK_OK(F->causal_attention_save(FEDC_F32, g, qkv, gy, scratch, probs));
    memset(scratch, 0xFF, scratch_bytes);
    CHECK_OK(F->causal_attention_grad_apply(FEDC_F32, g, qkv, dy, gdq, scratch, probs));
    CHECK_MSG(memcmp(y, gy, (size_t)ny * sizeof *y) == 0, "causal_attention_save seq %lld heads %lld, %d threads",
              (long long)g->seq, (long long)g->heads, threads);
    CHECK_MSG(memcmp(dq, gdq, (size_t)nqkv * sizeof *dq) == 0,
              "causal_attention_grad_apply seq %lld heads %lld, %d threads", (long long)g->seq, (long long)g->heads,
              threads);
    fedc__kernels_set_pool(outer);
    fedc_pool_destroy(pool);
done:
    fedc_free(qkv), fedc_free(dy), fedc_free(y), fedc_free(gy), fedc_free(dq), fedc_free(gdq), fedc_free(probs);
    fedc_free(scratch);
}

static void test_attention_kernels(void) {
    const fedc__attn_geom geoms[] = {{1, 1, 1, 4}, {2, 7, 3, 8}, {3, 32, 2, 16}, {2, 70, 4, 16}, {1, 128, 1, 64}};
    for (int gi = 0; gi < FEDC_COUNT_OF(geoms); gi++)
        for (int threads = 1; threads <= 2; threads++) attention_case(&geoms[gi], threads);
    double qd[12] = {0}, yd[4];
    float pf[1];
    fedc__attn_geom one = {1, 1, 1, 4};
    CHECK_ERR(F->causal_attention_save(FEDC_F64, &one, qd, yd, NULL, pf), FEDC_EINVAL, "f32");
    CHECK_ERR(F->causal_attention_grad_apply(FEDC_F64, &one, qd, yd, qd, NULL, pf), FEDC_EINVAL, "f32");
    CHECK(R->causal_attention_save == NULL && R->causal_attention_grad_apply == NULL);
}

/* y = causal_attention(qkv, 2 heads) and its gradient (ids 0, 1), a temporary
 * placed while the weights are pending, and a gradient with 4 heads (id 2: not
 * what was saved, computes its own). Outputs against the kernels one by one. */
enum { AB = 2, AT = 45, AC = 16 };

static void test_executor_attention(void) {
    static float qkv[AB * AT * 3 * AC], dy[AB * AT * AC], y[AB * AT * AC], dq[AB * AT * 3 * AC], dq4[AB * AT * 3 * AC];
    for (int i = 0; i < FEDC_COUNT_OF(qkv); i++) qkv[i] = 2.0f * uniform();
    for (int i = 0; i < FEDC_COUNT_OF(dy); i++) dy[i] = uniform();
    fedc_program *p = NULL;
    CHECK_OK(fedc_program_create(&p));
    if (!p) return;
    fedc_value qv = fedc_input(p, "qkv", TY(FEDC_F32, AB, AT, 3 * AC)), dv = fedc_input(p, "dy", TY(FEDC_F32, AB, AT, AC));
    fedc_value ids[3] = {fedc_causal_attention(p, qv, 2)};
    CHECK_OK(fedc_program_output(p, "y", fedc_add(p, ids[0], ids[0])));
    fedc_value t = fedc_add(p, dv, dv);
    CHECK_OK(fedc_program_output(p, "t", fedc_add(p, t, t)));
    ids[1] = fedc_causal_attention_grad(p, qv, dv, 2);
    ids[2] = fedc_causal_attention_grad(p, qv, dv, 4);
    CHECK_OK(fedc_program_output(p, "dq", ids[1]));
    CHECK_OK(fedc_program_output(p, "dq4", ids[2]));
    fedc_executor *ex = NULL;
    fedc_exec_options o = {.threads = 2};
    CHECK_OK(fedc_executor_create(&ex, p, &o));
    fedc_program_destroy(p);
    if (!ex) return;
    CHECK_OK(fedc_executor_bind(ex, "qkv", qkv));
    CHECK_OK(fedc_executor_bind(ex, "dy", dy));
    CHECK_OK(fedc_executor_run(ex));
    CHECK(ex->plan[ids[0]].saved == ids[0] && ex->plan[ids[1]].saved == ids[0] && ex->plan[ids[2]].saved == FEDC_NONE);
    fedc__attn_geom g2 = {AB, AT, 2, AC / 2}, g4 = {AB, AT, 4, AC / 4};
    void *scratch = fedc_malloc(F->attention_scratch(FEDC_F32, &g2) + F->attention_scratch(FEDC_F32, &g4));
    if (scratch) {
        CHECK_OK(F->causal_attention(FEDC_F32, &g2, qkv, y, scratch));
        for (int i = 0; i < FEDC_COUNT_OF(y); i++) y[i] += y[i];
        CHECK_OK(F->causal_attention_grad(FEDC_F32, &g2, qkv, dy, dq, scratch));
        CHECK_OK(F->causal_attention_grad(FEDC_F32, &g4, qkv, dy, dq4, scratch));
        check_outputs(ex, 3, (const char *[]){"y", "dq", "dq4"}, (const float *[]){y, dq, dq4},
                      (size_t[]){sizeof y, sizeof dq, sizeof dq4});
    }
    fedc_free(scratch);
    fedc_executor_destroy(ex);
}

int main(int argc, char **argv) {
    static const fedc_test tests[] = {
        {"kernels", test_kernels},
        {"executor_twins", test_executor_twins},
        {"pool_kernels", test_pool_kernels},
        {"executor_pool", test_executor_pool},
        {"executor_pool_select", test_executor_pool_select},
        {"xent_kernels", test_xent_kernels},
        {"executor_xent", test_executor_xent},
        {"attention_kernels", test_attention_kernels},
        {"executor_attention", test_executor_attention},
    };
    return fedc_test_main(argc, argv, tests, FEDC_COUNT_OF(tests));
}
