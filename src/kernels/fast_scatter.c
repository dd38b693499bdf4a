/*
 * fast_scatter.c — scatter_add (the gradient of an embedding lookup) for f32:
 * zero the table, then add each update row into its row, in index order. The
 * reference finds, for each table row, the updates that land on it (a pass over
 * every index per row: 10,004 x 1,024 for a language model's embedding); this is
 * one pass. Rows hit more than once are summed in f32, in index order (fixed, so
 * deterministic), where the reference sums in double.
 */
#include <string.h>

#include "kernels/fast.h"
#include "kernels/ref.h"

fedc_status fedc__fast_scatter_add(fedc_dtype dt, int64_t rows, int64_t width, int64_t nidx, const int32_t *idx,
                                  const void *updates, void *y) {
    for (int64_t i = 0; i < nidx; i++) /* a bad index: the reference reports it */
        if (idx[i] < 0 || idx[i] >= rows) return fedc__ref_scatter_add(dt, rows, width, nidx, idx, updates, y);
    if (dt != FEDC_F32) return fedc__ref_scatter_add(dt, rows, width, nidx, idx, updates, y);
    float *out = y;
    const float *u = updates;
    memset(out, 0, (size_t)(rows * width) * sizeof *out);
    for (int64_t i = 0; i < nidx; i++) {
        float *row = out + (int64_t)idx[i] * width;
        const float *add = u + i * width;
        for (int64_t j = 0; j < width; j++) row[j] += add[j];
    }
    return FEDC_OK;
}
