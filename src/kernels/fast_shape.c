/*
 * fast_shape.c — slice and pad as copies of contiguous runs, and transpose as
 * strided rows. The reference kernels
 * move one element at a time with an index computation each; here the trailing
 * axes that the window covers whole are merged with the first partial one into a
 * run that is contiguous in both arrays, and each run is one memcpy (a slice of
 * the rows of a matrix is a single memcpy; a window of columns is one per row).
 * The language models slice weights and LSTM traces and pad their gradients back
 * every step, so these are on the hot path of training. An imported ONNX CNN
 * transposes its NHWC activations back to NCHW before its dense head, and its
 * OIHW filters to HWIO, at every step and in the gradient: a transpose walks the
 * output row by row, the index arithmetic once per row.
 */
#include <stdint.h>
#include <string.h>

#include "kernels/fast.h"
#include "kernels/ref.h"

/* The window `inner` at offset `at` of `outer`, as rows: runs of `run` elements
 * contiguous in both arrays, one for each index of the axes [0, split). */
typedef struct window {
    size_t es, outer_bytes;
    int split;
    int64_t run, rows, base, ostr[FEDC_MAX_RANK], idims[FEDC_MAX_RANK];
    char *outer, *inner;
    bool into_inner; /* slice: out of outer into inner; pad: into outer from inner */
} window;

/* Element offset in outer of row `row`'s run, and its index digits in idx. */
static int64_t row_offset(const window *w, int64_t row, int64_t *idx) {
    int64_t off = w->base;
    for (int d = w->split - 1; d >= 0; d--) idx[d] = row % w->idims[d], off += idx[d] * w->ostr[d], row /= w->idims[d];
    return off;
}

/* Rows [r0, r1): copies their runs; pad also zeroes the gap before each run (from
 * the end of the previous row's run) and, after the last row, the rest of outer.
 * The runs come in increasing order, so the gaps are exactly the rest of outer. */
static void window_rows(const void *ctx, int64_t r0, int64_t r1) {
    const window *w = ctx;
    int64_t idx[FEDC_MAX_RANK], prev[FEDC_MAX_RANK];
    size_t bytes = (size_t)w->run * w->es;
    size_t zeroed = r0 > 0 ? (size_t)row_offset(w, r0 - 1, prev) * w->es + bytes : 0; /* pad: outer done up to here */
    int64_t off = row_offset(w, r0, idx);
    for (int64_t row = r0; row < r1; row++) {
        char *o = w->outer + (size_t)off * w->es, *in = w->inner + (size_t)row * bytes;
        if (w->into_inner) {
            memcpy(in, o, bytes);
        } else {
            memset(w->outer + zeroed, 0, (size_t)off * w->es - zeroed); /* all-zero bytes: 0, 0.0, false */
            memcpy(o, in, bytes);
            zeroed = (size_t)off * w->es + bytes;
        }
        int d = w->split - 1;
        for (; d >= 0 && ++idx[d] == w->idims[d]; d--) idx[d] = 0, off -= (w->idims[d] - 1) * w->ostr[d];
        if (d >= 0) off += w->ostr[d];
    }
    if (!w->into_inner && r1 == w->rows) memset(w->outer + zeroed, 0, w->outer_bytes - zeroed);
}

/* Copies the window between the two arrays (slice or pad, see window), in spans
 * of rows of about 128 KB for the kernels' pool. */
static void copy_window(size_t es, const fedc__kshape *outer, const int64_t *at, const fedc__kshape *inner,
                        char *outer_data, char *inner_data, bool into_inner) {
    int r = inner->rank;
    window w = {.es = es, .outer_bytes = (size_t)fedc__kshape_count(outer) * es, .outer = outer_data,
                .inner = inner_data, .into_inner = into_inner};
    int64_t total = fedc__kshape_count(inner), step = 1;
    if (total == 0) {
        if (!into_inner) memset(outer_data, 0, w.outer_bytes);
        return;
    }
    for (int d = r - 1; d >= 0; d--) w.ostr[d] = step, step *= outer->dims[d];
    for (int d = 0; d < r; d++) w.base += at[d] * w.ostr[d], w.idims[d] = inner->dims[d];
    w.split = r > 0 ? r - 1 : 0; /* axes [split, r) form one run */
    w.run = r > 0 ? inner->dims[r - 1] : 1;
    while (w.split > 0 && inner->dims[w.split] == outer->dims[w.split]) w.run *= inner->dims[--w.split];
    w.rows = total / w.run;
    int64_t span = (int64_t)(131072 / ((size_t)w.run * es)) + 1;
    fedc__kernels_spans(w.rows, span, window_rows, &w);
}

fedc_status fedc__fast_slice(size_t elsize, const fedc__kshape *xs, const int64_t *start, const void *x,
                            const fedc__kshape *ys, void *y) {
    fedc_status st = fedc__ref_check_window("slice", xs, start, ys);
    if (st) return st;
    copy_window(elsize, xs, start, ys, (char *)x, y, true);
    return FEDC_OK;
}

fedc_status fedc__fast_pad(size_t elsize, const fedc__kshape *xs, const int64_t *lo, const void *x,
                          const fedc__kshape *ys, void *y) {
    fedc_status st = fedc__ref_check_window("pad", ys, lo, xs);
    if (st) return st;
    copy_window(elsize, ys, lo, xs, y, (char *)x, false);
    return FEDC_OK;
}

/* A transpose's output as rows of its last axis: row i's source is at base(i),
 * its elements `stride` apart. */
typedef struct transpose_job {
    size_t es;
    int rank;
    int64_t dims[FEDC_MAX_RANK], src_stride[FEDC_MAX_RANK]; /* per output axis */
    const char *x;
    char *y;
} transpose_job;

#define STRIDED_ROW(T)                                                                 \
    for (int64_t k = 0; k < len; k++) ((T *)out)[k] = ((const T *)in)[k * stride];

static void transpose_rows(const void *ctx, int64_t r0, int64_t r1) {
    const transpose_job *j = ctx;
    int last = j->rank - 1;
    int64_t len = j->dims[last], stride = j->src_stride[last];
    for (int64_t r = r0; r < r1; r++) {
        int64_t rest = r, base = 0;
        for (int d = last - 1; d >= 0; d--) base += (rest % j->dims[d]) * j->src_stride[d], rest /= j->dims[d];
        const char *in = j->x + (size_t)base * j->es;
        char *out = j->y + (size_t)(r * len) * j->es;
        if (j->es == 4) {
            STRIDED_ROW(uint32_t)
        } else if (j->es == 8) {
            STRIDED_ROW(uint64_t)
        } else {
            for (int64_t k = 0; k < len; k++) memcpy(out + (size_t)k * j->es, in + (size_t)(k * stride) * j->es, j->es);
        }
    }
}

fedc_status fedc__fast_transpose(size_t elsize, const fedc__kshape *xs, const int *perm, const void *x, void *y) {
    fedc_status st = fedc__ref_check_shape("transpose", xs);
    if (st) return st;
    int r = xs->rank;
    int64_t count = fedc__kshape_count(xs);
    if (r < 1 || count == 0 || (elsize != 4 && elsize != 8)) /* its checks and the rare cases */
        return fedc__ref_transpose(elsize, xs, perm, x, y);
    transpose_job j = {.es = elsize, .rank = r, .x = x, .y = y};
    int64_t xstr[FEDC_MAX_RANK], step = 1;
    unsigned seen = 0;
    for (int d = r - 1; d >= 0; d--) xstr[d] = step, step *= xs->dims[d];
    for (int d = 0; d < r; d++) {
        if (perm[d] < 0 || perm[d] >= r || (seen & (1u << perm[d])))
            return fedc__ref_transpose(elsize, xs, perm, x, y); /* which says what is wrong */
        seen |= 1u << perm[d];
        j.dims[d] = xs->dims[perm[d]];
        j.src_stride[d] = xstr[perm[d]];
    }
    int64_t rows = count / j.dims[r - 1];
    fedc__kernels_spans(rows, 16384 / j.dims[r - 1] + 1, transpose_rows, &j);
    return FEDC_OK;
}

