/*
 * Reference kernels that move or combine elements by index: reduce, broadcast_to,
 * transpose, slice, pad, concat, gather, scatter_add, one_hot and argmax, plus the
 * shape helpers every ref_*.c file shares (fedc__kshape_count, shape checks and
 * broadcasting strides). Every kernel walks its output in row-major order and
 * computes each source position by plain index arithmetic (unravel the flat index,
 * dot it with strides), which is slow but easy to check by eye: this is the oracle.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "kernels/ref.h"

/* ---------------------------------------------------------------- shapes -- */

int64_t fedc__kshape_count(const fedc__kshape *s) {
    int64_t count = 1;
    for (int d = 0; d < s->rank; d++) count *= s->dims[d];
    return count;
}

/* "[2,3,4]" into buf, for error messages. */
static const char *shape_str(const fedc__kshape *s, char *buf, size_t size) {
    size_t used = (size_t)snprintf(buf, size, "[");
    for (int d = 0; d < s->rank && d < FEDC_MAX_RANK && used < size; d++)
        used += (size_t)snprintf(buf + used, size - used, d ? ",%lld" : "%lld",
                                 (long long)s->dims[d]);
    if (used < size) snprintf(buf + used, size - used, "]");
    return buf;
}

fedc_status fedc__ref_check_shape(const char *kernel, const fedc__kshape *s) {
    if (s->rank < 0 || s->rank > FEDC_MAX_RANK)
        return fedc_error(FEDC_EINVAL, "%s: rank %d is outside [0, %d]", kernel, s->rank,
                          FEDC_MAX_RANK);
    for (int d = 0; d < s->rank; d++)
        if (s->dims[d] < 0)
            return fedc_error(FEDC_EINVAL, "%s: dim %d is negative (%lld)", kernel, d,
                              (long long)s->dims[d]);
    return FEDC_OK;
}

/* Row-major element strides of a contiguous array of shape s. */
static void contiguous_strides(const fedc__kshape *s, int64_t strides[FEDC_MAX_RANK]) {
    int64_t step = 1;
    for (int d = s->rank - 1; d >= 0; d--) {
        strides[d] = step;
        step *= s->dims[d];
    }
}

fedc_status fedc__ref_bcast_strides(const char *kernel, const fedc__kshape *in,
                                   const fedc__kshape *out, int64_t strides[FEDC_MAX_RANK]) {
    fedc_status st = fedc__ref_check_shape(kernel, in);
    if (!st) st = fedc__ref_check_shape(kernel, out);
    if (st) return st;
    int64_t own[FEDC_MAX_RANK];
    contiguous_strides(in, own);
    int lead = out->rank - in->rank; /* out dims that in lacks: broadcast */
    bool ok = lead >= 0;
    for (int d = 0; d < out->rank && ok; d++) {
        if (d < lead)
            strides[d] = 0;
        else if (in->dims[d - lead] == out->dims[d])
            strides[d] = own[d - lead];
        else if (in->dims[d - lead] == 1)
            strides[d] = 0;
        else
            ok = false;
    }
    if (!ok) {
        char a[96], b[96];
        return fedc_error(FEDC_ESHAPE, "%s: shape %s does not broadcast to %s", kernel,
                          shape_str(in, a, sizeof a), shape_str(out, b, sizeof b));
    }
    return FEDC_OK;
}

int64_t fedc__ref_offset(const fedc__kshape *s, const int64_t *strides, int64_t flat) {
    int64_t offset = 0;
    for (int d = s->rank - 1; d >= 0; d--) {
        offset += (flat % s->dims[d]) * strides[d];
        flat /= s->dims[d];
    }
    return offset;
}

/* Numeric elements (F32, F64, I32) read as double, exactly. */
static double load_num(fedc_dtype dt, const void *p, int64_t i) {
    return dt == FEDC_I32 ? (double)((const int32_t *)p)[i] : fedc__ref_loadf(dt, p, i);
}

static fedc_status unsupported(const char *kernel, fedc_dtype dt) {
    return fedc_error(FEDC_EUNSUPPORTED, "%s: dtype %s is not supported", kernel,
                      fedc_dtype_name(dt));
}

/* ---------------------------------------------------------------- reduce -- */

/* Splits xs into the kept axes (ks, with x strides kstr) and the reduced ones (rs,
 * rstr), each in their original order. */
static void split_axes(const fedc__kshape *xs, unsigned axes, fedc__kshape *ks, int64_t *kstr,
                       fedc__kshape *rs, int64_t *rstr) {
    int64_t xstr[FEDC_MAX_RANK];
    contiguous_strides(xs, xstr);
    ks->rank = rs->rank = 0;
    for (int d = 0; d < xs->rank; d++) {
        if (axes & (1u << d)) {
            rstr[rs->rank] = xstr[d];
            rs->dims[rs->rank++] = xs->dims[d];
        } else {
            kstr[ks->rank] = xstr[d];
            ks->dims[ks->rank++] = xs->dims[d];
        }
    }
}

/* One output of a float reduction: the reduced elements are visited in row-major
 * order of the reduced axes and summed in double (then rounded once by the caller). */
static double reduce_float(fedc_reduce_op op, fedc_dtype dt, const void *x, int64_t base,
                           const fedc__kshape *rs, const int64_t *rstr) {
    int64_t count = fedc__kshape_count(rs);
    double acc = op == FEDC_R_MAX ? -INFINITY : 0.0;
    for (int64_t r = 0; r < count; r++) {
        double v = fedc__ref_loadf(dt, x, base + fedc__ref_offset(rs, rstr, r));
        if (op == FEDC_R_MAX)
            acc = v > acc || isnan(v) ? v : acc; /* max propagates NaN */
        else
            acc += v;
    }
    return op == FEDC_R_MEAN ? acc / (double)count : acc;
}

/* One output of an i32 reduction: SUM wraps modulo 2^32, MAX of nothing is INT32_MIN. */
static int32_t reduce_i32(fedc_reduce_op op, const int32_t *x, int64_t base,
                          const fedc__kshape *rs, const int64_t *rstr) {
    int64_t count = fedc__kshape_count(rs);
    uint32_t sum = 0;
    int32_t max = INT32_MIN;
    for (int64_t r = 0; r < count; r++) {
        int32_t v = x[base + fedc__ref_offset(rs, rstr, r)];
        sum += (uint32_t)v;
        if (v > max) max = v;
    }
    return op == FEDC_R_MAX ? max : fedc__ref_wrap_i32(sum);
}

fedc_status fedc__ref_reduce(fedc_reduce_op op, fedc_dtype dt, const fedc__kshape *xs, unsigned axes,
                            const void *x, void *y) {
    fedc_status st = fedc__ref_check_shape("reduce", xs);
    if (st) return st;
    if ((unsigned)op >= FEDC_R_COUNT) return fedc_error(FEDC_EINVAL, "reduce: bad op %d", (int)op);
    if (xs->rank < 32 && (axes >> xs->rank) != 0)
        return fedc_error(FEDC_EINVAL, "reduce: axes mask 0x%x names an axis >= rank %d", axes,
                          xs->rank);
    int is_float = fedc_dtype_is_float(dt);
    if (!is_float && !(dt == FEDC_I32 && op != FEDC_R_MEAN)) return unsupported("reduce", dt);
    fedc__kshape ks, rs;
    int64_t kstr[FEDC_MAX_RANK], rstr[FEDC_MAX_RANK];
    split_axes(xs, axes, &ks, kstr, &rs, rstr);
    int64_t nout = fedc__kshape_count(&ks);
    for (int64_t o = 0; o < nout; o++) {
        int64_t base = fedc__ref_offset(&ks, kstr, o);
        if (is_float)
            fedc__ref_storef(dt, y, o, reduce_float(op, dt, x, base, &rs, rstr));
        else
            ((int32_t *)y)[o] = reduce_i32(op, x, base, &rs, rstr);
    }
    return FEDC_OK;
}

/* ------------------------------------------------------ data movement -- */

fedc_status fedc__ref_broadcast_to(size_t elsize, const fedc__kshape *xs, const void *x,
                                  const fedc__kshape *ys, void *y) {
    int64_t xstr[FEDC_MAX_RANK];
    fedc_status st = fedc__ref_bcast_strides("broadcast_to", xs, ys, xstr);
    if (st) return st;
    int64_t count = fedc__kshape_count(ys);
    for (int64_t e = 0; e < count; e++)
        memcpy((char *)y + (size_t)e * elsize,
               (const char *)x + (size_t)fedc__ref_offset(ys, xstr, e) * elsize, elsize);
    return FEDC_OK;
}

fedc_status fedc__ref_transpose(size_t elsize, const fedc__kshape *xs, const int *perm, const void *x,
                               void *y) {
    fedc_status st = fedc__ref_check_shape("transpose", xs);
    if (st) return st;
    int64_t xstr[FEDC_MAX_RANK], ystr_in_x[FEDC_MAX_RANK];
    fedc__kshape ys = {.rank = xs->rank};
    unsigned seen = 0;
    contiguous_strides(xs, xstr);
    for (int d = 0; d < xs->rank; d++) {
        if (perm[d] < 0 || perm[d] >= xs->rank || (seen & (1u << perm[d])))
            return fedc_error(FEDC_EINVAL, "transpose: perm[%d] = %d: not a permutation of rank %d",
                              d, perm[d], xs->rank);
        seen |= 1u << perm[d];
        ys.dims[d] = xs->dims[perm[d]];
        ystr_in_x[d] = xstr[perm[d]]; /* stepping y's axis d steps x's axis perm[d] */
    }
    int64_t count = fedc__kshape_count(&ys);
    for (int64_t e = 0; e < count; e++)
        memcpy((char *)y + (size_t)e * elsize,
               (const char *)x + (size_t)fedc__ref_offset(&ys, ystr_in_x, e) * elsize, elsize);
    return FEDC_OK;
}

fedc_status fedc__ref_check_window(const char *kernel, const fedc__kshape *outer, const int64_t *at,
                                  const fedc__kshape *inner) {
    fedc_status st = fedc__ref_check_shape(kernel, outer);
    if (!st) st = fedc__ref_check_shape(kernel, inner);
    if (st) return st;
    if (outer->rank != inner->rank)
        return fedc_error(FEDC_ESHAPE, "%s: ranks differ (%d vs %d)", kernel, outer->rank,
                          inner->rank);
    for (int d = 0; d < outer->rank; d++)
        if (at[d] < 0 || at[d] + inner->dims[d] > outer->dims[d])
            return fedc_error(FEDC_ESHAPE, "%s: axis %d: [%lld, %lld) is outside [0, %lld)",
                              kernel, d, (long long)at[d], (long long)(at[d] + inner->dims[d]),
                              (long long)outer->dims[d]);
    return FEDC_OK;
}

/* Offset of element `at` in a contiguous array with strides str. */
static int64_t dot(int rank, const int64_t *at, const int64_t *str) {
    int64_t offset = 0;
    for (int d = 0; d < rank; d++) offset += at[d] * str[d];
    return offset;
}

fedc_status fedc__ref_slice(size_t elsize, const fedc__kshape *xs, const int64_t *start,
                           const void *x, const fedc__kshape *ys, void *y) {
    fedc_status st = fedc__ref_check_window("slice", xs, start, ys);
    if (st) return st;
    int64_t xstr[FEDC_MAX_RANK];
    contiguous_strides(xs, xstr);
    int64_t base = dot(xs->rank, start, xstr);
    int64_t count = fedc__kshape_count(ys);
    for (int64_t e = 0; e < count; e++)
        memcpy((char *)y + (size_t)e * elsize,
               (const char *)x + (size_t)(base + fedc__ref_offset(ys, xstr, e)) * elsize, elsize);
    return FEDC_OK;
}

fedc_status fedc__ref_pad(size_t elsize, const fedc__kshape *xs, const int64_t *lo, const void *x,
                         const fedc__kshape *ys, void *y) {
    fedc_status st = fedc__ref_check_window("pad", ys, lo, xs);
    if (st) return st;
    int64_t ystr[FEDC_MAX_RANK];
    contiguous_strides(ys, ystr);
    memset(y, 0, (size_t)fedc__kshape_count(ys) * elsize); /* all-zero bytes: 0, 0.0, false */
    int64_t base = dot(ys->rank, lo, ystr);
    int64_t count = fedc__kshape_count(xs);
    for (int64_t e = 0; e < count; e++)
        memcpy((char *)y + (size_t)(base + fedc__ref_offset(xs, ystr, e)) * elsize,
               (const char *)x + (size_t)e * elsize, elsize);
    return FEDC_OK;
}

/* Checks that the n shapes agree except along `axis`. */
static fedc_status check_concat(int n, const fedc__kshape *xs, int axis) {
    for (int i = 0; i < n; i++) {
        fedc_status st = fedc__ref_check_shape("concat", &xs[i]);
        if (st) return st;
        if (xs[i].rank != xs[0].rank)
            return fedc_error(FEDC_ESHAPE, "concat: input %d has rank %d, input 0 has %d", i,
                              xs[i].rank, xs[0].rank);
        for (int d = 0; d < xs[0].rank; d++)
            if (d != axis && xs[i].dims[d] != xs[0].dims[d])
                return fedc_error(FEDC_ESHAPE, "concat: input %d dim %d is %lld, input 0 has %lld",
                                  i, d, (long long)xs[i].dims[d], (long long)xs[0].dims[d]);
    }
    return FEDC_OK;
}

/* Viewing every input as [outer, dims[axis] * inner], the output's row o is the
 * inputs' rows o laid end to end. */
fedc_status fedc__ref_concat(size_t elsize, int n, const fedc__kshape *xs, const void *const *x,
                            int axis, void *y) {
    if (n <= 0) return FEDC_OK;
    if (axis < 0 || axis >= xs[0].rank)
        return fedc_error(FEDC_EINVAL, "concat: axis %d is outside [0, %d)", axis, xs[0].rank);
    fedc_status st = check_concat(n, xs, axis);
    if (st) return st;
    int64_t outer = 1, inner = 1;
    for (int d = 0; d < axis; d++) outer *= xs[0].dims[d];
    for (int d = axis + 1; d < xs[0].rank; d++) inner *= xs[0].dims[d];
    char *out = y;
    for (int64_t o = 0; o < outer; o++) {
        for (int i = 0; i < n; i++) {
            size_t row = (size_t)(xs[i].dims[axis] * inner) * elsize;
            memcpy(out, (const char *)x[i] + (size_t)o * row, row);
            out += row;
        }
    }
    return FEDC_OK;
}

/* --------------------------------------------------------------- indices -- */

/* FEDC_ERANGE naming the first index outside [0, rows). */
static fedc_status check_indices(const char *kernel, int64_t nidx, const int32_t *idx,
                                 int64_t rows) {
    for (int64_t i = 0; i < nidx; i++)
        if (idx[i] < 0 || idx[i] >= rows)
            return fedc_error(FEDC_ERANGE, "%s: index %d at position %lld is outside [0, %lld)",
                              kernel, idx[i], (long long)i, (long long)rows);
    return FEDC_OK;
}

fedc_status fedc__ref_gather(size_t elsize, int64_t rows, int64_t width, const void *table,
                            int64_t nidx, const int32_t *idx, void *y) {
    fedc_status st = check_indices("gather", nidx, idx, rows);
    if (st) return st;
    size_t row = (size_t)width * elsize;
    for (int64_t i = 0; i < nidx; i++)
        memcpy((char *)y + (size_t)i * row, (const char *)table + (size_t)idx[i] * row, row);
    return FEDC_OK;
}

/* Output row r, columns [j0, j0 + nj): the sum, in double and in order of i, of the
 * updates whose index is r. nj <= SCATTER_CHUNK, so the accumulators fit the stack. */
enum { SCATTER_CHUNK = 64 };
static void scatter_row_chunk(fedc_dtype dt, int64_t r, int64_t j0, int64_t nj, int64_t width,
                              int64_t nidx, const int32_t *idx, const void *updates, void *y) {
    double acc[SCATTER_CHUNK] = {0};
    for (int64_t i = 0; i < nidx; i++) {
        if (idx[i] != r) continue;
        for (int64_t j = 0; j < nj; j++) acc[j] += fedc__ref_loadf(dt, updates, i * width + j0 + j);
    }
    for (int64_t j = 0; j < nj; j++) fedc__ref_storef(dt, y, r * width + j0 + j, acc[j]);
}

fedc_status fedc__ref_scatter_add(fedc_dtype dt, int64_t rows, int64_t width, int64_t nidx,
                                 const int32_t *idx, const void *updates, void *y) {
    if (!fedc_dtype_is_float(dt)) return unsupported("scatter_add", dt);
    fedc_status st = check_indices("scatter_add", nidx, idx, rows);
    if (st) return st;
    for (int64_t r = 0; r < rows; r++)
        for (int64_t j0 = 0; j0 < width; j0 += SCATTER_CHUNK) {
            int64_t nj = width - j0 < SCATTER_CHUNK ? width - j0 : SCATTER_CHUNK;
            scatter_row_chunk(dt, r, j0, nj, width, nidx, idx, updates, y);
        }
    return FEDC_OK;
}

/* Writes the small integer v (0 or 1 here) as an element of dt. */
static void store_small(fedc_dtype dt, void *p, int64_t i, int v) {
    switch (dt) {
    case FEDC_F32: ((float *)p)[i] = (float)v; break;
    case FEDC_F64: ((double *)p)[i] = v; break;
    case FEDC_I32: ((int32_t *)p)[i] = v; break;
    default: ((uint8_t *)p)[i] = (uint8_t)v; break; /* U8, BOOL */
    }
}

fedc_status fedc__ref_one_hot(fedc_dtype dt, int64_t n, const int32_t *idx, int64_t depth, void *y) {
    if ((unsigned)dt >= FEDC_DTYPE_COUNT) return unsupported("one_hot", dt);
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < depth; j++) store_small(dt, y, i * depth + j, idx[i] == j);
    return FEDC_OK;
}

/* ---------------------------------------------------------------- argmax -- */

fedc_status fedc__ref_argmax(fedc_dtype dt, int64_t outer, int64_t len, int64_t inner,
                            const void *x, int32_t *y) {
    if (!fedc_dtype_is_float(dt) && dt != FEDC_I32) return unsupported("argmax", dt);
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++) {
            int64_t base = o * len * inner + i; /* x[o, l, i] = x[base + l * inner] */
            int32_t best = 0;
            for (int64_t l = 1; l < len; l++) /* strict >: the first maximum wins */
                if (load_num(dt, x, base + l * inner) > load_num(dt, x, base + best * inner))
                    best = (int32_t)l;
            y[o * inner + i] = best;
        }
    return FEDC_OK;
}
