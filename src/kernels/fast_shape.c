/*
 * fast_shape.c — slice and pad as copies of contiguous runs. The reference kernels
 * move one element at a time with an index computation each; here the trailing
 * axes that the window covers whole are merged with the first partial one into a
 * run that is contiguous in both arrays, and each run is one memcpy (a slice of
 * the rows of a matrix is a single memcpy; a window of columns is one per row).
 * The language models slice weights and LSTM traces and pad their gradients back
 * every step, so these are on the hot path of training.
 */
#include <string.h>

#include "kernels/fast.h"
#include "kernels/ref.h"

/* Copies the window `inner` at offset `at` of `outer` between the two arrays:
 * out of outer into inner (slice) or into outer from inner (pad, which also
 * zeroes the rest of outer: the runs come in increasing order, so the gaps
 * between them are the rest, and nothing is written twice). */
static void copy_window(size_t es, const fedc_kshape *outer, const int64_t *at, const fedc_kshape *inner,
                        char *outer_data, char *inner_data, bool into_inner) {
    int r = inner->rank;
    int64_t total = fedc_kshape_count(inner), ostr[FEDC_MAX_RANK], idx[FEDC_MAX_RANK] = {0}, base = 0;
    size_t zeroed = 0, outer_bytes = (size_t)fedc_kshape_count(outer) * es; /* pad: bytes of outer done */
    if (total == 0) {
        if (!into_inner) memset(outer_data, 0, outer_bytes); /* all-zero bytes: 0, 0.0, false */
        return;
    }
    int64_t step = 1;
    for (int d = r - 1; d >= 0; d--) ostr[d] = step, step *= outer->dims[d];
    for (int d = 0; d < r; d++) base += at[d] * ostr[d];
    int split = r > 0 ? r - 1 : 0; /* axes [split, r) form one run */
    int64_t run = r > 0 ? inner->dims[r - 1] : 1;
    while (split > 0 && inner->dims[split] == outer->dims[split]) run *= inner->dims[--split];
    size_t bytes = (size_t)run * es;
    for (int64_t row = 0; row < total / run; row++) {
        int64_t off = base;
        for (int d = 0; d < split; d++) off += idx[d] * ostr[d];
        char *o = outer_data + (size_t)off * es, *in = inner_data + (size_t)(row * run) * es;
        if (!into_inner) memset(outer_data + zeroed, 0, (size_t)off * es - zeroed), zeroed = (size_t)off * es + bytes;
        memcpy(into_inner ? in : o, into_inner ? o : in, bytes);
        for (int d = split - 1; d >= 0 && ++idx[d] == inner->dims[d]; d--) idx[d] = 0;
    }
    if (!into_inner) memset(outer_data + zeroed, 0, outer_bytes - zeroed);
}

fedc_status fedc_fast_slice(size_t elsize, const fedc_kshape *xs, const int64_t *start, const void *x,
                            const fedc_kshape *ys, void *y) {
    fedc_status st = fedc_ref_check_window("slice", xs, start, ys);
    if (st) return st;
    copy_window(elsize, xs, start, ys, (char *)x, y, true);
    return FEDC_OK;
}

fedc_status fedc_fast_pad(size_t elsize, const fedc_kshape *xs, const int64_t *lo, const void *x,
                          const fedc_kshape *ys, void *y) {
    fedc_status st = fedc_ref_check_window("pad", ys, lo, xs);
    if (st) return st;
    copy_window(elsize, ys, lo, xs, y, (char *)x, false);
    return FEDC_OK;
}
