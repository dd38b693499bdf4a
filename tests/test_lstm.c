/* The LSTM ops: the fused recurrence against the same cell written as a fold
 * (the composition oracle, forward and gradient), gradients and tangents of lstm
 * against central finite differences in f64, the linear derivative rules of
 * lstm_grad and lstm_tangent likewise, the fast kernels against the reference
 * ones on odd shapes, the fast kernels' bits on 1 to 3 threads, the text format,
 * and the errors. */
#include <stdlib.h>
#include <string.h>

#include "fedc/ad.h"
#include "fedc/exec.h"
#include "harness.h"
#include "kernels/kernels.h"

enum { T = 4, B = 3, H = 2 };

static void fill(double *x, int64_t n, double scale) {
    for (int64_t i = 0; i < n; i++) x[i] = fedc_test_uniform(-scale, scale);
}

static fedc_type t3(fedc_dtype dt, int64_t a, int64_t b, int64_t c) {
    return fedc_type_make(dt, 3, (int64_t[]){a, b, c});
}
static fedc_type t2(fedc_dtype dt, int64_t a, int64_t b) { return fedc_type_make(dt, 2, (int64_t[]){a, b}); }

/* h [T, B, H] = the first H of every trace row. */
static fedc_value hidden(fedc_program *p, fedc_value trace, int64_t steps, int64_t batch, int64_t hid) {
    return fedc_slice(p, trace, (int64_t[]){0, 0, 0}, (int64_t[]){steps, batch, hid});
}

/* ---------------------------------------------------------- the oracle -- */

/* The cell as ordinary ops: body(h, c, xw_t) -> (h', c', h'). */
static fedc_program *cell_body(void) {
    fedc_program *p;
    if (fedc_program_create(&p)) return NULL;
    fedc_value h = fedc_input(p, "h", t2(FEDC_F64, B, H)), c = fedc_input(p, "c", t2(FEDC_F64, B, H));
    fedc_value wh = fedc_input(p, "wh", t2(FEDC_F64, H, 4 * H));
    fedc_value xw = fedc_input(p, "xw", t2(FEDC_F64, B, 4 * H));
    fedc_value a = fedc_add(p, xw, fedc_matmul(p, h, wh, false, false));
    fedc_value gate[4];
    for (int q = 0; q < 4; q++) gate[q] = fedc_slice(p, a, (int64_t[]){0, q * H}, (int64_t[]){B, (q + 1) * H});
    fedc_value i = fedc_sigmoid(p, gate[0]), g = fedc_tanh(p, gate[1]);
    fedc_value f = fedc_sigmoid(p, gate[2]), o = fedc_sigmoid(p, gate[3]);
    fedc_value c2 = fedc_add(p, fedc_mul(p, f, c), fedc_mul(p, i, g));
    fedc_value h2 = fedc_mul(p, o, fedc_tanh(p, c2));
    fedc_program_output(p, "h", h2);
    fedc_program_output(p, "c", c2);
    fedc_program_output(p, "wh", wh);
    fedc_program_output(p, "y", h2);
    return p;
}

/* Inputs xw [T, B, 4H], wh [H, 4H]; output "h" [T, B, H] and "loss" = sum(h * r),
 * by the fused op or by the fold. */
static fedc_program *hidden_program(bool fused, const double *r) {
    fedc_program *p;
    if (fedc_program_create(&p)) return NULL;
    fedc_value xw = fedc_input(p, "xw", t3(FEDC_F64, T, B, 4 * H)), wh = fedc_input(p, "wh", t2(FEDC_F64, H, 4 * H));
    fedc_value h;
    if (fused) {
        h = hidden(p, fedc_lstm(p, xw, wh), T, B, H);
    } else {
        fedc_program *body = cell_body();
        fedc_value zero = fedc_full(p, t2(FEDC_F64, B, H), 0.0), res[4];
        fedc_value init[3] = {zero, zero, wh};
        fedc_fold(p, body, init, 3, &xw, 1, fedc_scalar(p, FEDC_I32, T), res);
        fedc_program_destroy(body);
        h = res[3];
    }
    fedc_program_output(p, "h", h);
    fedc_value rv = fedc_constant(p, t3(FEDC_F64, T, B, H), r);
    fedc_program_output(p, "loss", fedc_reduce_sum(p, fedc_mul(p, h, rv), NULL, -1, false));
    return p;
}

static const double *run(fedc_executor *ex, const char *name) {
    const void *out = NULL;
    CHECK_OK(fedc_executor_run(ex));
    CHECK_OK(fedc_executor_output(ex, name, &out, NULL));
    return out;
}

static void test_fused_matches_fold_forward_and_gradient(void) {
    double xw[T * B * 4 * H], wh[H * 4 * H], r[T * B * H];
    fill(xw, T * B * 4 * H, 1.5), fill(wh, H * 4 * H, 1.0), fill(r, T * B * H, 1.0);
    const char *wrt[2] = {"xw", "wh"};
    fedc_program *g[2] = {0};
    fedc_executor *ex[2] = {0};
    for (int k = 0; k < 2; k++) {
        fedc_program *p = hidden_program(k == 0, r);
        CHECK_MSG(p && !fedc_program_status(p), "build: %s", fedc_errmsg());
        CHECK_OK(fedc_grad(p, "loss", wrt, 2, &g[k]));
        fedc_program_destroy(p);
        if (!g[k]) return;
        CHECK_OK(fedc_executor_create(&ex[k], g[k], NULL));
        CHECK_OK(fedc_executor_bind(ex[k], "xw", xw));
        CHECK_OK(fedc_executor_bind(ex[k], "wh", wh));
        CHECK_OK(fedc_executor_run(ex[k]));
    }
    const char *outs[3] = {"h", "grad_xw", "grad_wh"};
    int64_t sizes[3] = {T * B * H, T * B * 4 * H, H * 4 * H};
    for (int o = 0; o < 3; o++) {
        const double *a = NULL, *b = NULL;
        CHECK_OK(fedc_executor_output(ex[0], outs[o], (const void **)&a, NULL));
        CHECK_OK(fedc_executor_output(ex[1], outs[o], (const void **)&b, NULL));
        for (int64_t i = 0; a && b && i < sizes[o]; i++)
            CHECK_MSG(fabs(a[i] - b[i]) <= 1e-12, "%s[%lld]: lstm %.15g, fold %.15g", outs[o], (long long)i, a[i], b[i]);
    }
    for (int k = 0; k < 2; k++) fedc_executor_destroy(ex[k]), fedc_program_destroy(g[k]);
}

/* ------------------------------------------------- finite differences -- */

/* loss = sum(op(inputs) * r) for a random r (tests/harness.h), and y = op(inputs). */
typedef fedc_value (*build_fn)(fedc_program *p, const fedc_value *x);

static fedc_program *loss_program(build_fn build, int n, const fedc_type *types) {
    fedc_value y;
    fedc_program *p = fedc_test_loss_program(types, n, build, &y);
    if (p) fedc_program_output(p, "y", y);
    return p;
}

/* Checks grad_x<i> for each i with active[i] against central differences. */
static void check_gradient(const char *name, build_fn build, int n, const fedc_type *types, const bool *active) {
    fedc_program *p = loss_program(build, n, types), *g = NULL;
    CHECK_MSG(p && !fedc_program_status(p), "%s: build: %s", name, fedc_errmsg());
    const char *all[3] = {"x0", "x1", "x2"}, *wrt[3];
    int nwrt = 0;
    for (int i = 0; i < n; i++)
        if (active[i]) wrt[nwrt++] = all[i];
    CHECK_OK(fedc_grad(p, "loss", wrt, nwrt, &g));
    fedc_executor *fwd = NULL, *bwd = NULL;
    CHECK_OK(fedc_executor_create(&fwd, p, NULL));
    if (g) CHECK_OK(fedc_executor_create(&bwd, g, NULL));
    double *data[3];
    for (int i = 0; i < n; i++) {
        int64_t count = fedc_type_count(&types[i]);
        data[i] = malloc((size_t)count * sizeof **data);
        fill(data[i], count, i == n - 1 ? 0.8 : 1.2);
        if (fwd) CHECK_OK(fedc_executor_bind(fwd, all[i], data[i]));
        if (bwd) CHECK_OK(fedc_executor_bind(bwd, all[i], data[i]));
    }
    if (bwd) CHECK_OK(fedc_executor_run(bwd));
    for (int i = 0; bwd && fwd && i < n; i++) {
        if (!active[i]) continue;
        char gname[24];
        snprintf(gname, sizeof gname, "grad_x%d", i);
        const double *grad = NULL;
        CHECK_OK(fedc_executor_output(bwd, gname, (const void **)&grad, NULL));
        for (int64_t j = 0; grad && j < fedc_type_count(&types[i]); j++) {
            double keep = data[i][j], h = 1e-6;
            data[i][j] = keep + h;
            double up = *run(fwd, "loss");
            data[i][j] = keep - h;
            double down = *run(fwd, "loss");
            data[i][j] = keep;
            double fd = (up - down) / (2 * h);
            CHECK_MSG(fabs(grad[j] - fd) <= 1e-6 * (1 + fabs(fd)), "%s: d loss / d x%d[%lld]: AD %.10g, FD %.10g",
                      name, i, (long long)j, grad[j], fd);
        }
    }
    for (int i = 0; i < n; i++) free(data[i]);
    fedc_executor_destroy(fwd), fedc_executor_destroy(bwd);
    fedc_program_destroy(g), fedc_program_destroy(p);
}

static fedc_value b_lstm(fedc_program *p, const fedc_value *x) { return fedc_lstm(p, x[0], x[1]); }
static fedc_value b_lstm_grad(fedc_program *p, const fedc_value *x) {
    return fedc_lstm_grad(p, fedc_lstm(p, x[0], x[2]), x[1], x[2]);
}
static fedc_value b_lstm_tangent(fedc_program *p, const fedc_value *x) {
    return fedc_lstm_tangent(p, fedc_lstm(p, x[0], x[2]), x[1], x[2]);
}

static void test_gradients_against_finite_differences(void) {
    fedc_type xw = t3(FEDC_F64, T, B, 4 * H), tr = t3(FEDC_F64, T, B, 6 * H), wh = t2(FEDC_F64, H, 4 * H);
    /* the whole trace (h, c and the gates) has a cotangent, not only h */
    check_gradient("lstm", b_lstm, 2, (fedc_type[]){xw, wh}, (bool[]){true, true});
    /* lstm_grad and lstm_tangent in their linear operand */
    check_gradient("lstm_grad", b_lstm_grad, 3, (fedc_type[]){xw, tr, wh}, (bool[]){false, true, false});
    check_gradient("lstm_tangent", b_lstm_tangent, 3, (fedc_type[]){xw, xw, wh}, (bool[]){false, true, false});
    /* one step, and a batch of one */
    check_gradient("lstm T=1", b_lstm, 2, (fedc_type[]){t3(FEDC_F64, 1, 2, 4 * H), wh}, (bool[]){true, true});
    check_gradient("lstm B=1", b_lstm, 2, (fedc_type[]){t3(FEDC_F64, 5, 1, 4 * H), wh}, (bool[]){true, true});
}

/* fedc_jvp (reverse mode transposed: lstm_grad's rule is lstm_tangent) against
 * central differences along a random direction. */
static void test_jvp_against_finite_differences(void) {
    fedc_type types[2] = {t3(FEDC_F64, T, B, 4 * H), t2(FEDC_F64, H, 4 * H)};
    fedc_program *p = loss_program(b_lstm, 2, types), *j = NULL;
    const char *wrt[2] = {"x0", "x1"};
    CHECK_OK(fedc_jvp(p, wrt, 2, &j));
    enum { NX = T * B * 4 * H, NW = H * 4 * H, NY = T * B * 6 * H };
    double x[NX], w[NW], tx[NX], tw[NW], xs[NX], ws[NW], up[NY];
    fill(x, NX, 1.2), fill(w, NW, 0.8), fill(tx, NX, 1.0), fill(tw, NW, 1.0);
    fedc_executor *fwd = NULL, *jex = NULL;
    CHECK_OK(fedc_executor_create(&fwd, p, NULL));
    if (j) CHECK_OK(fedc_executor_create(&jex, j, NULL));
    if (!fwd || !jex) goto done;
    CHECK_OK(fedc_executor_bind(jex, "x0", x));
    CHECK_OK(fedc_executor_bind(jex, "x1", w));
    CHECK_OK(fedc_executor_bind(jex, "tangent_x0", tx));
    CHECK_OK(fedc_executor_bind(jex, "tangent_x1", tw));
    const double *tangent = run(jex, "tangent_y");
    CHECK_OK(fedc_executor_bind(fwd, "x0", xs));
    CHECK_OK(fedc_executor_bind(fwd, "x1", ws));
    const double h = 1e-6;
    for (int s = 0; s < 2; s++) {
        double sign = s == 0 ? 1 : -1;
        for (int i = 0; i < NX; i++) xs[i] = x[i] + sign * h * tx[i];
        for (int i = 0; i < NW; i++) ws[i] = w[i] + sign * h * tw[i];
        const double *y = run(fwd, "y");
        for (int i = 0; i < NY; i++) up[i] = s == 0 ? y[i] : (up[i] - y[i]) / (2 * h);
    }
    for (int i = 0; tangent && i < NY; i++)
        CHECK_MSG(fabs(tangent[i] - up[i]) <= 1e-6 * (1 + fabs(up[i])), "tangent_y[%d]: jvp %.10g, FD %.10g", i,
                  tangent[i], up[i]);
done:
    fedc_executor_destroy(fwd), fedc_executor_destroy(jex);
    fedc_program_destroy(j), fedc_program_destroy(p);
}

static void test_second_derivative_is_refused(void) {
    fedc_type types[2] = {t3(FEDC_F64, T, B, 4 * H), t2(FEDC_F64, H, 4 * H)};
    fedc_program *p = loss_program(b_lstm, 2, types), *g = NULL, *gg = NULL;
    const char *wrt[1] = {"x1"};
    CHECK_OK(fedc_grad(p, "loss", wrt, 1, &g));
    /* d/d wh of sum(grad_wh): goes through lstm_grad's trace and weights */
    fedc_value s = fedc_reduce_sum(g, fedc_program_find_output(g, "grad_x1"), NULL, -1, false);
    CHECK_OK(fedc_program_output(g, "s", s));
    CHECK_ERR(fedc_grad(g, "s", wrt, 1, &gg), FEDC_EUNSUPPORTED, "second derivatives through lstm");
    fedc_program_destroy(gg), fedc_program_destroy(g), fedc_program_destroy(p);
}

/* ------------------------------------------------- kernels: fast vs ref -- */

static void compare(const char *what, const float *a, const float *b, int64_t n) {
    for (int64_t i = 0; i < n; i++)
        CHECK_MSG(fabsf(a[i] - b[i]) <= 2e-5f * (1 + fabsf(b[i])), "%s[%lld]: fast %.8g, ref %.8g", what,
                  (long long)i, a[i], b[i]);
}

static void fast_vs_ref(int64_t steps, int64_t batch, int64_t hid) {
    int64_t nx = steps * batch * 4 * hid, nt = steps * batch * 6 * hid, nw = hid * 4 * hid;
    float *xw = malloc((size_t)(nx + 1) * 4), *wh = malloc((size_t)(nw + 1) * 4), *dtr = malloc((size_t)(nt + 1) * 4);
    float *tr[2], *dxw[2], *tan[2];
    void *scratch = malloc(FEDC_LSTM_SCRATCH(batch, hid) + 8);
    for (int64_t i = 0; i < nx; i++) xw[i] = (float)fedc_test_uniform(-2, 2);
    for (int64_t i = 0; i < nw; i++) wh[i] = (float)fedc_test_uniform(-1, 1);
    for (int64_t i = 0; i < nt; i++) dtr[i] = (float)fedc_test_uniform(-1, 1);
    const fedc__kernels *k[2] = {&fedc__kernels_fast, &fedc__kernels_ref};
    for (int s = 0; s < 2; s++) {
        tr[s] = malloc((size_t)(nt + 1) * 4), dxw[s] = malloc((size_t)(nx + 1) * 4), tan[s] = malloc((size_t)(nt + 1) * 4);
        CHECK_OK(k[s]->lstm(FEDC_F32, steps, batch, hid, xw, wh, tr[s]));
    }
    for (int s = 0; s < 2; s++) { /* the derivatives at the same (reference) trace */
        CHECK_OK(k[s]->lstm_grad(FEDC_F32, steps, batch, hid, tr[1], dtr, wh, dxw[s], scratch));
        CHECK_OK(k[s]->lstm_tangent(FEDC_F32, steps, batch, hid, tr[1], xw, wh, tan[s], scratch));
    }
    char what[64];
    snprintf(what, sizeof what, "lstm T=%lld B=%lld H=%lld", (long long)steps, (long long)batch, (long long)hid);
    compare(what, tr[0], tr[1], nt);
    compare("lstm_grad", dxw[0], dxw[1], nx);
    compare("lstm_tangent", tan[0], tan[1], nt);
    for (int s = 0; s < 2; s++) free(tr[s]), free(dxw[s]), free(tan[s]);
    free(xw), free(wh), free(dtr), free(scratch);
}

static void test_fast_kernels_match_reference(void) {
    fedc__kernels_init();
    fast_vs_ref(5, 3, 7);
    fast_vs_ref(1, 1, 1);
    fast_vs_ref(9, 2, 13);
    fast_vs_ref(0, 3, 4);
    fast_vs_ref(3, 0, 4);
    fast_vs_ref(4, 9, 130); /* blocks of hidden units, the last short; sgemm rows */
    fast_vs_ref(3, 2, 70);  /* sgemv rows */
}

/* The fast kernels on the kernels' pool (2 and 3 threads) give the same bits as
 * on the calling thread alone: the blocks of hidden units are fixed by H. */
static void lstm_on_threads(int64_t steps, int64_t batch, int64_t hid) {
    int64_t nx = steps * batch * 4 * hid, nt = steps * batch * 6 * hid, nw = hid * 4 * hid;
    float *xw = malloc((size_t)nx * 4), *wh = malloc((size_t)nw * 4), *dtr = malloc((size_t)nt * 4);
    float *tr[3], *dxw[3];
    void *scratch = malloc(FEDC_LSTM_SCRATCH(batch, hid));
    for (int64_t i = 0; i < nx; i++) xw[i] = (float)fedc_test_uniform(-2, 2);
    for (int64_t i = 0; i < nw; i++) wh[i] = (float)fedc_test_uniform(-0.2, 0.2);
    for (int64_t i = 0; i < nt; i++) dtr[i] = (float)fedc_test_uniform(-1, 1);
    for (int threads = 1; threads <= 3; threads++) {
        fedc_pool *pool = NULL;
        if (threads > 1) CHECK_OK(fedc_pool_create(&pool, threads));
        fedc_pool *outer = fedc__kernels_set_pool(pool);
        int s = threads - 1;
        tr[s] = malloc((size_t)nt * 4), dxw[s] = malloc((size_t)nx * 4);
        CHECK_OK(fedc__kernels_fast.lstm(FEDC_F32, steps, batch, hid, xw, wh, tr[s]));
        CHECK_OK(fedc__kernels_fast.lstm_grad(FEDC_F32, steps, batch, hid, tr[s], dtr, wh, dxw[s], scratch));
        fedc__kernels_set_pool(outer);
        fedc_pool_destroy(pool);
        if (s > 0) {
            CHECK_MSG(memcmp(tr[s], tr[0], (size_t)nt * 4) == 0, "lstm B=%lld H=%lld: %d threads differ from 1",
                      (long long)batch, (long long)hid, threads);
            CHECK_MSG(memcmp(dxw[s], dxw[0], (size_t)nx * 4) == 0, "lstm_grad B=%lld H=%lld: %d threads differ from 1",
                      (long long)batch, (long long)hid, threads);
        }
    }
    for (int s = 0; s < 3; s++) free(tr[s]), free(dxw[s]);
    free(xw), free(wh), free(dtr), free(scratch);
}

static void test_fast_kernels_bitwise_on_threads(void) {
    fedc__kernels_init();
    lstm_on_threads(6, 12, 200);
    lstm_on_threads(5, 3, 96);
}

/* The executor with fast and with reference kernels, on a whole gradient in f32. */
static void test_executor_fast_and_reference_agree(void) {
    fedc_program *p;
    CHECK_OK(fedc_program_create(&p));
    fedc_value xw = fedc_input(p, "xw", t3(FEDC_F32, 6, 5, 12)), wh = fedc_input(p, "wh", t2(FEDC_F32, 3, 12));
    fedc_value h = hidden(p, fedc_lstm(p, xw, wh), 6, 5, 3);
    CHECK_OK(fedc_program_output(p, "loss", fedc_reduce_sum(p, fedc_square(p, h), NULL, -1, false)));
    fedc_program *g = NULL;
    CHECK_OK(fedc_grad(p, "loss", (const char *[]){"xw", "wh"}, 2, &g));
    float x[6 * 5 * 12], w[3 * 12];
    for (int i = 0; i < 6 * 5 * 12; i++) x[i] = (float)fedc_test_uniform(-2, 2);
    for (int i = 0; i < 3 * 12; i++) w[i] = (float)fedc_test_uniform(-1, 1);
    const float *out[2][2];
    fedc_executor *ex[2] = {0};
    for (int s = 0; g && s < 2; s++) {
        fedc_exec_options o = {.reference_kernels = s == 1};
        CHECK_OK(fedc_executor_create(&ex[s], g, &o));
        if (!ex[s]) continue;
        CHECK_OK(fedc_executor_bind(ex[s], "xw", x));
    CHECK_OK(fedc_executor_bind(ex[s], "wh", w));
        CHECK_OK(fedc_executor_run(ex[s]));
        CHECK_OK(fedc_executor_output(ex[s], "grad_xw", (const void **)&out[s][0], NULL));
        CHECK_OK(fedc_executor_output(ex[s], "grad_wh", (const void **)&out[s][1], NULL));
    }
    if (ex[0] && ex[1]) {
        compare("grad_xw", out[0][0], out[1][0], 6 * 5 * 12);
        compare("grad_wh", out[0][1], out[1][1], 3 * 12);
    }
    fedc_executor_destroy(ex[0]), fedc_executor_destroy(ex[1]);
    fedc_program_destroy(g), fedc_program_destroy(p);
}

/* --------------------------------------------------- text and errors -- */

static void test_text_round_trip(void) {
    fedc_program *p;
    CHECK_OK(fedc_program_create(&p));
    fedc_value xw = fedc_input(p, "xw", t3(FEDC_F32, 2, 3, 8)), wh = fedc_input(p, "wh", t2(FEDC_F32, 2, 8));
    fedc_value tr = fedc_lstm(p, xw, wh);
    fedc_value d = fedc_lstm_grad(p, tr, tr, wh);
    CHECK_OK(fedc_program_output(p, "t", fedc_lstm_tangent(p, tr, d, wh)));
    char *a = NULL, *b = NULL;
    fedc_program *q = NULL;
    CHECK_OK(fedc_program_to_string(p, &a));
    if (a) CHECK_OK(fedc_program_parse(a, &q));
    if (q) CHECK_OK(fedc_program_to_string(q, &b));
    CHECK(a && strstr(a, "lstm(%0, %1) : f32[2,3,12]"));
    CHECK(a && strstr(a, "lstm_grad(") && strstr(a, "lstm_tangent("));
    CHECK(a && b && strcmp(a, b) == 0);
    fedc_free(a), fedc_free(b);
    fedc_program_destroy(q), fedc_program_destroy(p);
}

static void test_type_errors(void) {
    fedc_program *p;
    CHECK_OK(fedc_program_create(&p));
    fedc_value xw = fedc_input(p, "xw", t3(FEDC_F32, 2, 3, 8));
    fedc_value bad_w = fedc_input(p, "w", t2(FEDC_F32, 3, 8));
    CHECK(fedc_lstm(p, xw, bad_w) == FEDC_NONE);
    CHECK_ERR(fedc_program_status(p), FEDC_ESHAPE, "lstm: the recurrent weights f32[3,8] must be [H, 4H]");
    fedc_program_destroy(p);
    CHECK_OK(fedc_program_create(&p));
    xw = fedc_input(p, "xw", t3(FEDC_F32, 2, 3, 12));
    fedc_value wh = fedc_input(p, "wh", t2(FEDC_F32, 2, 8));
    CHECK(fedc_lstm(p, xw, wh) == FEDC_NONE);
    CHECK_ERR(fedc_program_status(p), FEDC_ESHAPE, "must be [steps, batch, 4 * 2]");
    fedc_program_destroy(p);
    CHECK_OK(fedc_program_create(&p));
    xw = fedc_input(p, "xw", t3(FEDC_F32, 2, 3, 8));
    fedc_value w64 = fedc_input(p, "wh", t2(FEDC_F64, 2, 8));
    CHECK(fedc_lstm(p, xw, w64) == FEDC_NONE);
    CHECK_ERR(fedc_program_status(p), FEDC_ESHAPE, "of the dtype of f32[2,3,8]");
    fedc_program_destroy(p);
    CHECK_OK(fedc_program_create(&p));
    fedc_value tr = fedc_input(p, "tr", t3(FEDC_F32, 2, 3, 12)), other = fedc_input(p, "d", t3(FEDC_F32, 2, 4, 12));
    wh = fedc_input(p, "wh", t2(FEDC_F32, 2, 8));
    CHECK(fedc_lstm_grad(p, tr, other, wh) == FEDC_NONE);
    CHECK_ERR(fedc_program_status(p), FEDC_ESHAPE, "has other steps or batch than operand 0");
    fedc_program_destroy(p);
}

int main(int argc, char **argv) {
    fedc_test_seed(0x2545F4914F6CDD1Dull);
    static const fedc_test tests[] = {
        {"fused_matches_fold_forward_and_gradient", test_fused_matches_fold_forward_and_gradient},
        {"gradients_against_finite_differences", test_gradients_against_finite_differences},
        {"jvp_against_finite_differences", test_jvp_against_finite_differences},
        {"second_derivative_is_refused", test_second_derivative_is_refused},
        {"fast_kernels_match_reference", test_fast_kernels_match_reference},
        {"fast_kernels_bitwise_on_threads", test_fast_kernels_bitwise_on_threads},
        {"executor_fast_and_reference_agree", test_executor_fast_and_reference_agree},
        {"text_round_trip", test_text_round_trip},
        {"type_errors", test_type_errors},
    };
    return fedc_test_main(argc, argv, tests, FEDC_COUNT_OF(tests));
}
