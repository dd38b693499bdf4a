/*
 * fast_softmax_xent.c — softmax cross-entropy over a large vocabulary, f32: the
 * loss and its gradient, each one kernel, row by row (a row of 10,004 logits stays
 * in cache between its passes), with fedc__fast_expf in loops the compiler
 * vectorises (baseline, AVX2 and AVX-512, fast_math.h). Sums use 8 interleaved
 * partial sums in a fixed order. Blocks of ROWS rows go to the kernels' pool when
 * there is one; every row is computed the same way wherever it runs, so the bits
 * do not depend on threads, alignment or the instruction set. f64 goes to the
 * reference kernels.
 *
 * The loss can save each row's max and sum for the gradient, which then takes one
 * pass per row instead of three (softmax_xent_save, softmax_xent_grad_apply).
 *
 * Built with -fno-trapping-math (CMakeLists.txt): without it gcc will not
 * if-convert the clamps of fedc__fast_expf, and the loops stay scalar.
 */
#include <math.h>

#include "kernels/fast.h"
#include "kernels/fast_math.h"
#include "kernels/ref.h"

enum { LANES = 8, ROWS = 16 };

FEDC_FAST_INLINE float row_max(const float *x, int64_t n) {
    float acc[LANES];
    for (int l = 0; l < LANES; l++) acc[l] = -INFINITY;
    int64_t i = 0;
    for (; i + LANES <= n; i += LANES)
        for (int l = 0; l < LANES; l++) acc[l] = x[i + l] > acc[l] ? x[i + l] : acc[l];
    float m = -INFINITY;
    for (; i < n; i++) m = x[i] > m ? x[i] : m;
    for (int l = 0; l < LANES; l++) m = acc[l] > m ? acc[l] : m;
    return m;
}

/* sum_i e^(x_i - max); with `out`, also writes each e^(x_i - max) there. */
FEDC_FAST_INLINE float sum_exp(const float *x, int64_t n, float max, float *out) {
    float acc[LANES] = {0};
    int64_t i = 0;
    if (out) {
        for (; i + LANES <= n; i += LANES)
            for (int l = 0; l < LANES; l++) acc[l] += out[i + l] = fedc__fast_expf(x[i + l] - max);
    } else {
        for (; i + LANES <= n; i += LANES)
            for (int l = 0; l < LANES; l++) acc[l] += fedc__fast_expf(x[i + l] - max);
    }
    float s = 0;
    for (; i < n; i++) {
        float e = fedc__fast_expf(x[i] - max);
        if (out) out[i] = e;
        s += e;
    }
    for (int l = 0; l < LANES; l++) s += acc[l];
    return s;
}

/* One call: rows [r0, r1) of the loss (dlogits NULL) or of the gradient; with
 * stats, the loss saves each row's max and sum of e^(z - max) there and the
 * gradient reads them (softmax_xent_save, softmax_xent_grad_apply). */
typedef struct xent_job {
    int64_t rows, classes;
    const float *logits, *w; /* w: the weight (loss) or the scale (gradient); may be NULL for the loss */
    const int32_t *labels;
    float *loss, *dlogits, *stats;
} xent_job;

FEDC_FAST_INLINE void loss_rows(const xent_job *j, int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; r++) {
        const float *z = j->logits + r * j->classes;
        float max = row_max(z, j->classes);
        /* an infinite max (all -inf, or a +inf) has no finite shift: as the reference */
        float sum = j->stats || !isinf(max) ? sum_exp(z, j->classes, max, NULL) : 0.0f;
        float lse = isinf(max) ? max : max + logf(sum);
        j->loss[r] = (j->w ? j->w[r] : 1.0f) * (lse - z[j->labels[r]]);
        if (j->stats) j->stats[2 * r] = max, j->stats[2 * r + 1] = sum;
    }
}

/* The gradient from a saved max and sum: e^(z - max) is rounded, then scaled,
 * as grad_rows does in its two passes, so the bits are the same. */
FEDC_FAST_INLINE void grad_rows_saved(const xent_job *j, int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; r++) {
        const float *z = j->logits + r * j->classes;
        float *d = j->dlogits + r * j->classes, s = j->w[r], max = j->stats[2 * r];
        float k = s / j->stats[2 * r + 1];
        for (int64_t c = 0; c < j->classes; c++) d[c] = fedc__fast_expf(z[c] - max) * k;
        d[j->labels[r]] -= s;
    }
}

FEDC_FAST_INLINE void grad_rows(const xent_job *j, int64_t r0, int64_t r1) {
    if (j->stats) {
        grad_rows_saved(j, r0, r1);
        return;
    }
    for (int64_t r = r0; r < r1; r++) {
        const float *z = j->logits + r * j->classes;
        float *d = j->dlogits + r * j->classes, s = j->w[r];
        float max = row_max(z, j->classes);
        float k = s / sum_exp(z, j->classes, max, d); /* d holds e^(z - max) */
        for (int64_t c = 0; c < j->classes; c++) d[c] *= k;
        d[j->labels[r]] -= s;
    }
}

static void rows_plain(const xent_job *j, int64_t r0, int64_t r1) {
    if (j->dlogits) grad_rows(j, r0, r1);
    else loss_rows(j, r0, r1);
}

FEDC_FAST_AVX2 static void rows_avx2(const xent_job *j, int64_t r0, int64_t r1) {
    if (j->dlogits) grad_rows(j, r0, r1);
    else loss_rows(j, r0, r1);
}

FEDC_FAST_AVX512 static void rows_avx512(const xent_job *j, int64_t r0, int64_t r1) {
    if (j->dlogits) grad_rows(j, r0, r1);
    else loss_rows(j, r0, r1);
}

static void block_task(void *ctx, int64_t b, int worker) {
    (void)worker;
    const xent_job *j = ctx;
    int64_t r0 = b * ROWS, r1 = r0 + ROWS < j->rows ? r0 + ROWS : j->rows;
    if (FEDC_FAST_HAS_AVX512()) rows_avx512(j, r0, r1);
    else if (FEDC_FAST_HAS_AVX2()) rows_avx2(j, r0, r1);
    else rows_plain(j, r0, r1);
}

static void run_blocks(xent_job *j) { fedc__kernels_parallel((j->rows + ROWS - 1) / ROWS, block_task, j); }

fedc_status fedc__fast_softmax_xent(fedc_dtype dt, int64_t rows, int64_t classes, const void *logits,
                                   const int32_t *labels, const void *w, void *loss) {
    if (dt != FEDC_F32) return fedc__ref_softmax_xent(dt, rows, classes, logits, labels, w, loss);
    fedc_status st = fedc__ref_check_labels("softmax_xent", rows, classes, labels);
    if (st) return st;
    xent_job j = {rows, classes, logits, w, labels, loss, NULL, NULL};
    run_blocks(&j);
    return FEDC_OK;
}

fedc_status fedc__fast_softmax_xent_grad(fedc_dtype dt, int64_t rows, int64_t classes, const void *logits,
                                        const int32_t *labels, const void *scale, void *dlogits) {
    if (dt != FEDC_F32) return fedc__ref_softmax_xent_grad(dt, rows, classes, logits, labels, scale, dlogits);
    fedc_status st = fedc__ref_check_labels("softmax_xent_grad", rows, classes, labels);
    if (st) return st;
    xent_job j = {rows, classes, logits, scale, labels, NULL, dlogits, NULL};
    run_blocks(&j);
    return FEDC_OK;
}

/* ------------------------------------------------------- saved stats -- */

static fedc_status f32_only(const char *what, fedc_dtype dt) {
    if (dt == FEDC_F32) return FEDC_OK;
    return fedc_error(FEDC_EINVAL, "%s (fast): takes f32 logits, not %s", what, fedc_dtype_name(dt));
}

fedc_status fedc__fast_softmax_xent_save(fedc_dtype dt, int64_t rows, int64_t classes, const void *logits,
                                        const int32_t *labels, const void *w, void *loss, float *stats) {
    fedc_status st = f32_only("softmax_xent_save", dt);
    if (!st) st = fedc__ref_check_labels("softmax_xent_save", rows, classes, labels);
    if (st) return st;
    xent_job j = {rows, classes, logits, w, labels, loss, NULL, stats};
    run_blocks(&j);
    return FEDC_OK;
}

fedc_status fedc__fast_softmax_xent_grad_apply(fedc_dtype dt, int64_t rows, int64_t classes, const void *logits,
                                              const int32_t *labels, const void *scale, const float *stats,
                                              void *dlogits) {
    fedc_status st = f32_only("softmax_xent_grad_apply", dt);
    if (!st) st = fedc__ref_check_labels("softmax_xent_grad_apply", rows, classes, labels);
    if (st) return st;
    xent_job j = {rows, classes, logits, scale, labels, NULL, dlogits, (float *)stats};
    run_blocks(&j);
    return FEDC_OK;
}
