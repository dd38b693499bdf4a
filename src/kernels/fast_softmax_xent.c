/*
 * fast_softmax_xent.c — softmax cross-entropy over a large vocabulary, f32: the
 * loss and its gradient, each one kernel, row by row (a row of 10,004 logits stays
 * in cache between its passes), with fedc_fast_expf in loops the compiler
 * vectorises. Sums use 8 interleaved partial sums in a fixed order, so results do
 * not depend on threads or alignment. f64 goes to the reference kernels.
 *
 * Built with -fno-trapping-math (CMakeLists.txt): without it gcc will not
 * if-convert the clamps of fedc_fast_expf, and the loops stay scalar.
 */
#include <math.h>

#include "kernels/fast.h"
#include "kernels/fast_math.h"
#include "kernels/ref.h"

enum { LANES = 8 };

static float row_max(const float *x, int64_t n) {
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
static float sum_exp(const float *x, int64_t n, float max, float *out) {
    float acc[LANES] = {0};
    int64_t i = 0;
    if (out) {
        for (; i + LANES <= n; i += LANES)
            for (int l = 0; l < LANES; l++) acc[l] += out[i + l] = fedc_fast_expf(x[i + l] - max);
    } else {
        for (; i + LANES <= n; i += LANES)
            for (int l = 0; l < LANES; l++) acc[l] += fedc_fast_expf(x[i + l] - max);
    }
    float s = 0;
    for (; i < n; i++) {
        float e = fedc_fast_expf(x[i] - max);
        if (out) out[i] = e;
        s += e;
    }
    for (int l = 0; l < LANES; l++) s += acc[l];
    return s;
}

fedc_status fedc_fast_softmax_xent(fedc_dtype dt, int64_t rows, int64_t classes, const void *logits,
                                   const int32_t *labels, const void *w, void *loss) {
    if (dt != FEDC_F32) return fedc_ref_softmax_xent(dt, rows, classes, logits, labels, w, loss);
    fedc_status st = fedc_ref_check_labels("softmax_xent", rows, classes, labels);
    if (st) return st;
    const float *ws = w;
    float *out = loss;
    for (int64_t r = 0; r < rows; r++) {
        const float *z = (const float *)logits + r * classes;
        float max = row_max(z, classes);
        /* an infinite max (all -inf, or a +inf) has no finite shift: as the reference */
        float lse = isinf(max) ? max : max + logf(sum_exp(z, classes, max, NULL));
        out[r] = (ws ? ws[r] : 1.0f) * (lse - z[labels[r]]);
    }
    return FEDC_OK;
}

fedc_status fedc_fast_softmax_xent_grad(fedc_dtype dt, int64_t rows, int64_t classes, const void *logits,
                                        const int32_t *labels, const void *scale, void *dlogits) {
    if (dt != FEDC_F32) return fedc_ref_softmax_xent_grad(dt, rows, classes, logits, labels, scale, dlogits);
    fedc_status st = fedc_ref_check_labels("softmax_xent_grad", rows, classes, labels);
    if (st) return st;
    const float *ss = scale;
    for (int64_t r = 0; r < rows; r++) {
        const float *z = (const float *)logits + r * classes;
        float *d = (float *)dlogits + r * classes, s = ss[r];
        float max = row_max(z, classes);
        float k = s / sum_exp(z, classes, max, d); /* d holds e^(z - max) */
        for (int64_t c = 0; c < classes; c++) d[c] *= k;
        d[labels[r]] -= s;
    }
    return FEDC_OK;
}
