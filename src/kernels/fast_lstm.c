/*
 * fast_lstm.c — the LSTM recurrence and its backpropagation through time in f32
 * with BLAS: per step the product of the batch's hidden states and the recurrent
 * weights ([B, H] @ [H, 4H]), written straight into the trace's gate slots (the
 * input projection of every step is one GEMM the caller already did), then one
 * pass of elementwise gate arithmetic. The backward pass mirrors it: per step
 * [B, 4H] @ [H, 4H]^T carries dh back through time. Both cut each step into
 * blocks of hidden units that the executor's spare threads share. Weight gradients are
 * not computed here: they are single large GEMMs over all steps the derivative
 * rule builds (src/ad/vjp_rules.c). f64 goes to the reference kernels.
 */
#include <cblas.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/fast.h"
#include "kernels/fast_math.h"
#include "kernels/ref.h"

static inline float sigmoidf(float x) { return 1.0f / (1.0f + fedc__fast_expf(-x)); }

static fedc_status check(const char *kernel, int64_t T, int64_t B, int64_t H) {
    if (T < 0 || B < 0 || H < 0 || B > INT_MAX / 8 || H > INT_MAX / 8)
        return fedc_error(FEDC_EINVAL, "%s (fast): unsupported size (steps %lld, batch %lld, hidden %lld)", kernel,
                          (long long)T, (long long)B, (long long)H);
    return FEDC_OK;
}

/* Without AVX-512 (fast_rows_gemm), batches up to this size take the recurrent
 * products row by row as GEMVs: a GEMM with a few rows spends most of its time
 * packing the [H, 4H] weights again at every step, while a GEMV streams them from
 * cache once per row. FEDC_LSTM_GEMV_ROWS in the environment overrides it (for
 * bench_lstm_step's comparisons). */
static int64_t gemv_rows(void) {
    static int64_t rows = -1;
    if (rows < 0) {
        const char *env = getenv("FEDC_LSTM_GEMV_ROWS");
        rows = env ? atoll(env) : 8;
    }
    return rows;
}

/* out = a @ w (+ out when accumulate) for the B rows of a ([B, k], leading
 * dimension lda) into out ([B, n], ldo); w is [k, n] (ldw). */
static void rows_times(int64_t B, int64_t k, int64_t n, const float *a, int64_t lda, const float *w, int64_t ldw,
                       bool accumulate, float *out, int64_t ldo) {
    if (B <= 0 || k <= 0 || n <= 0) return;
    /* The rows GEMM on AVX-512 only: its AVX2 loop was not measured on these steps. */
    if (fedc__rows_gemm_level() == 2 && fedc__fast_rows_gemm(B, n, k, a, lda, 1, w, ldw, out, ldo, accumulate)) return;
    float beta = accumulate ? 1.0f : 0.0f;
    if (B <= gemv_rows()) {
        for (int64_t b = 0; b < B; b++) /* out[b] = w^T a[b]: row-major w [k, n] is Trans */
            cblas_sgemv(CblasRowMajor, CblasTrans, (int)k, (int)n, 1.0f, w, (int)ldw, a + b * lda, 1, beta,
                        out + b * ldo, 1);
        return;
    }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)B, (int)n, (int)k, 1.0f, a, (int)lda, w, (int)ldw,
                beta, out, (int)ldo);
}

/* Each step splits the hidden units into blocks of UNITS: block u owns units
 * [u UNITS, (u + 1) UNITS) of h, c and of each gate, so its share of the
 * recurrent product (the gates' columns of those units, or in BPTT the rows of
 * wh) and of the cell arithmetic touches nothing another block writes. The
 * blocks depend on H only, so a step computes the same bits on one thread or on
 * the executor's spare threads (fedc__kernels_parallel). */
enum { UNITS = 64 };

static int64_t unit_blocks(int64_t H) { return (H + UNITS - 1) / UNITS; }

/* Gates and states of units [j0, j1) of one batch row: the preactivations are
 * x (the row's input projection [i, g, f, o]) plus, after step 0 (c_prev, c[t-1],
 * not NULL), the recurrent product already in the gate slots of r = [h, c, i,
 * g, f, o]. Restrict parameters and fast_math's inlined exp let the compiler
 * vectorise. */
FEDC_FAST_INLINE void row_forward(int64_t H, int64_t j0, int64_t j1, float *restrict r, const float *restrict c_prev,
                                  const float *restrict x) {
    float *h = r, *c = r + H, *i = r + 2 * H, *g = r + 3 * H, *f = r + 4 * H, *o = r + 5 * H;
    if (c_prev)
        for (int64_t j = j0; j < j1; j++) {
            i[j] = sigmoidf(i[j] + x[j]);
            g[j] = fedc__fast_tanhf(g[j] + x[H + j]);
            f[j] = sigmoidf(f[j] + x[2 * H + j]);
            o[j] = sigmoidf(o[j] + x[3 * H + j]);
            c[j] = f[j] * c_prev[j] + i[j] * g[j];
        }
    else
        for (int64_t j = j0; j < j1; j++) {
            i[j] = sigmoidf(x[j]);
            g[j] = fedc__fast_tanhf(x[H + j]);
            f[j] = sigmoidf(x[2 * H + j]);
            o[j] = sigmoidf(x[3 * H + j]);
            c[j] = i[j] * g[j];
        }
    for (int64_t j = j0; j < j1; j++) h[j] = o[j] * fedc__fast_tanhf(c[j]);
}

/* Units [j0, j1) of every batch row's cells, compiled for the baseline, AVX2 and
 * AVX-512 (the same operations lane by lane, so the same bits). */
FEDC_FAST_INLINE void cells_forward(int64_t B, int64_t H, int64_t j0, int64_t j1, float *rows, const float *prev,
                                    const float *x) {
    for (int64_t b = 0; b < B; b++)
        row_forward(H, j0, j1, rows + b * 6 * H, prev ? prev + b * 6 * H + H : NULL, x + b * 4 * H);
}

static void cells_forward_plain(int64_t B, int64_t H, int64_t j0, int64_t j1, float *rows, const float *prev,
                                const float *x) {
    cells_forward(B, H, j0, j1, rows, prev, x);
}
FEDC_FAST_AVX2 static void cells_forward_avx2(int64_t B, int64_t H, int64_t j0, int64_t j1, float *rows,
                                              const float *prev, const float *x) {
    cells_forward(B, H, j0, j1, rows, prev, x);
}
FEDC_FAST_AVX512 static void cells_forward_avx512(int64_t B, int64_t H, int64_t j0, int64_t j1, float *rows,
                                                  const float *prev, const float *x) {
    cells_forward(B, H, j0, j1, rows, prev, x);
}

/* One step of the recurrence (forward) or of BPTT (backward), for the pool. */
typedef struct step_job {
    int64_t t, T, B, H;
    const float *x, *w;     /* xw [T, B, 4H] (forward); wh [H, 4H] */
    float *trace;           /* forward: [T, B, 6H] */
    const float *tr, *dtr;  /* backward: the trace and its cotangent */
    float *dxw;             /* backward: [T, B, 4H] */
    const float *wt;        /* backward: wh^T [4H, H] (NULL when T < 2) */
    float *dh_rec, *dc_rec; /* backward: [B, H] each */
    const float *zeros;     /* backward: H zeros, c[-1] */
} step_job;

/* Forward step t, block u: the block's gate columns of h[t-1] wh, then its
 * cells (which add xw[t]). */
static void forward_block(void *ctx, int64_t u, int worker) {
    (void)worker;
    const step_job *s = ctx;
    int64_t B = s->B, H = s->H, j0 = u * UNITS, jb = H - j0 < UNITS ? H - j0 : UNITS;
    float *rows = s->trace + s->t * B * 6 * H;
    const float *prev = s->t > 0 ? rows - B * 6 * H : NULL, *x = s->x + s->t * B * 4 * H;
    for (int64_t q = 0; prev && q < 4; q++)
        rows_times(B, H, jb, prev, 6 * H, s->w + q * H + j0, 4 * H, false, rows + (2 + q) * H + j0, 6 * H);
    if (FEDC_FAST_HAS_AVX512()) cells_forward_avx512(B, H, j0, j0 + jb, rows, prev, x);
    else if (FEDC_FAST_HAS_AVX2()) cells_forward_avx2(B, H, j0, j0 + jb, rows, prev, x);
    else cells_forward_plain(B, H, j0, j0 + jb, rows, prev, x);
}

fedc_status fedc__fast_lstm(fedc_dtype dt, int64_t T, int64_t B, int64_t H, const void *xw, const void *wh,
                           void *trace) {
    if (dt != FEDC_F32) return fedc__ref_lstm(dt, T, B, H, xw, wh, trace);
    fedc_status st = check("lstm", T, B, H);
    if (st) return st;
    step_job s = {.T = T, .B = B, .H = H, .x = xw, .w = wh, .trace = trace};
    for (s.t = 0; B > 0 && s.t < T; s.t++) fedc__kernels_parallel(unit_blocks(H), forward_block, &s);
    return FEDC_OK;
}

/* Units [j0, j1) of one batch row of a BPTT step: r the row's trace [h, c, i, g,
 * f, o], c_prev its c[t-1] (zeros at t = 0), d the trace's cotangent, dhr / dcr
 * the cotangents of h and c carried from step t+1 (dcr is updated), da the
 * preactivations' gradient. Separate restrict parameters, so that the compiler
 * vectorises over j without run-time alias checks. */
FEDC_FAST_INLINE void row_backward(int64_t H, int64_t j0, int64_t j1, const float *restrict r, const float *restrict c_prev,
                         const float *restrict d, const float *restrict dhr, float *restrict dcr,
                         float *restrict da) {
    const float *c = r + H, *i = r + 2 * H, *g = r + 3 * H, *f = r + 4 * H, *o = r + 5 * H;
    for (int64_t j = j0; j < j1; j++) {
        float tc = fedc__fast_tanhf(c[j]), dh = d[j] + dhr[j];
        float dc = dh * o[j] * (1.0f - tc * tc) + d[H + j] + dcr[j];
        float di = dc * g[j] + d[2 * H + j], dg = dc * i[j] + d[3 * H + j];
        float df = dc * c_prev[j] + d[4 * H + j], dout = dh * tc + d[5 * H + j];
        dcr[j] = dc * f[j];
        da[j] = di * i[j] * (1.0f - i[j]);
        da[H + j] = dg * (1.0f - g[j] * g[j]);
        da[2 * H + j] = df * f[j] * (1.0f - f[j]);
        da[3 * H + j] = dout * o[j] * (1.0f - o[j]);
    }
}

FEDC_FAST_INLINE void cells_backward(const step_job *s, int64_t j0, int64_t j1, const float *rows, const float *prev,
                                     const float *d, float *out) {
    int64_t H = s->H;
    for (int64_t b = 0; b < s->B; b++)
        row_backward(H, j0, j1, rows + b * 6 * H, prev ? prev + b * 6 * H + H : s->zeros, d + b * 6 * H,
                     s->dh_rec + b * H, s->dc_rec + b * H, out + b * 4 * H);
}

static void cells_backward_plain(const step_job *s, int64_t j0, int64_t j1, const float *rows, const float *prev,
                                 const float *d, float *out) {
    cells_backward(s, j0, j1, rows, prev, d, out);
}
FEDC_FAST_AVX2 static void cells_backward_avx2(const step_job *s, int64_t j0, int64_t j1, const float *rows,
                                               const float *prev, const float *d, float *out) {
    cells_backward(s, j0, j1, rows, prev, d, out);
}
FEDC_FAST_AVX512 static void cells_backward_avx512(const step_job *s, int64_t j0, int64_t j1, const float *rows,
                                                   const float *prev, const float *d, float *out) {
    cells_backward(s, j0, j1, rows, prev, d, out);
}

/* BPTT's product dxw[t+1] wh^T per block of units, against a transposed copy of
 * wh made once per call: fast_rows_gemm reads it in place, and without AVX-512,
 * in slices of K_SLICE along k, it is a few small GEMMs that OpenBLAS runs
 * without packing wh again at every step (1.5x faster at batch 32, H 256). The
 * slices are fixed by H: the same sums on any thread. */
enum { K_SLICE = 256 };

static void transpose(int64_t rows, int64_t cols, const float *x, float *y) {
    for (int64_t i0 = 0; i0 < rows; i0 += 32) /* 32 x 32 tiles */
        for (int64_t j0 = 0; j0 < cols; j0 += 32)
            for (int64_t i = i0; i < rows && i < i0 + 32; i++)
                for (int64_t j = j0; j < cols && j < j0 + 32; j++) y[j * rows + i] = x[i * cols + j];
}

/* BPTT step t, block u: the block's units of dh = dxw[t+1] wh^T (the cotangent
 * of h[t] through step t+1; the rows of wh of those units), then the block's
 * preactivation gradients of step t. At t = 0 c_prev reads a row of zeros (so
 * the loop has no branch). */
static void backward_block(void *ctx, int64_t u, int worker) {
    (void)worker;
    const step_job *s = ctx;
    int64_t t = s->t, B = s->B, H = s->H, j0 = u * UNITS, jb = H - j0 < UNITS ? H - j0 : UNITS;
    const float *next = s->dxw + (t + 1) * B * 4 * H;
    for (int64_t k0 = 0; t + 1 < s->T && k0 < 4 * H; k0 += K_SLICE) /* wh^T's columns, in fixed slices of k */
        rows_times(B, 4 * H - k0 < K_SLICE ? 4 * H - k0 : K_SLICE, jb, next + k0, 4 * H, s->wt + k0 * H + j0, H,
                   k0 > 0, s->dh_rec + j0, H);
    const float *rows = s->tr + t * B * 6 * H, *prev = t > 0 ? rows - B * 6 * H : NULL, *d = s->dtr + t * B * 6 * H;
    float *out = s->dxw + t * B * 4 * H;
    if (FEDC_FAST_HAS_AVX512()) cells_backward_avx512(s, j0, j0 + jb, rows, prev, d, out);
    else if (FEDC_FAST_HAS_AVX2()) cells_backward_avx2(s, j0, j0 + jb, rows, prev, d, out);
    else cells_backward_plain(s, j0, j0 + jb, rows, prev, d, out);
}

fedc_status fedc__fast_lstm_grad(fedc_dtype dt, int64_t T, int64_t B, int64_t H, const void *trace, const void *dtrace,
                                const void *wh, void *dxw, void *scratch) {
    if (dt != FEDC_F32) return fedc__ref_lstm_grad(dt, T, B, H, trace, dtrace, wh, dxw, scratch);
    fedc_status st = check("lstm_grad", T, B, H);
    if (st) return st;
    /* scratch holds 2 B H doubles = 4 B H floats: dh_rec, dc_rec and H zeros; then 4 H^2 floats */
    float *dh_rec = scratch, *dc_rec = dh_rec + B * H, *zeros = dc_rec + B * H, *wt = NULL;
    memset(dh_rec, 0, (size_t)(2 * B * H + (B > 0 ? H : 0)) * sizeof *dh_rec);
    if (T > 1) transpose(H, 4 * H, wh, wt = dh_rec + 4 * B * H);
    step_job s = {.T = T, .B = B, .H = H, .w = wh, .tr = trace, .dtr = dtrace, .dxw = dxw, .wt = wt,
                  .dh_rec = dh_rec, .dc_rec = dc_rec, .zeros = zeros};
    for (s.t = T - 1; B > 0 && s.t >= 0; s.t--) fedc__kernels_parallel(unit_blocks(H), backward_block, &s);
    return FEDC_OK;
}
