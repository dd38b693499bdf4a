/*
 * ref.h — the reference kernels, one function per entry of struct fedc__kernels but
 * the optional ones (fedc__ref_<field>, with that field's exact signature, declared
 * from kernels.def), so a fast implementation can point at a reference entry where
 * it has no faster version. The table itself is fedc__kernels_ref (ref_table.c).
 *
 * The reference kernels are the oracle: plain loops and index arithmetic, no BLAS,
 * no allocation, no threads. Choices a faster implementation must match (up to
 * rounding) or knowingly differ from:
 *
 *  - Floating-point work on f32 is done in double and rounded once when stored:
 *    every sum (reduce, matmul, conv and its gradients, pooling, scatter_add,
 *    log_softmax, softmax_xent) accumulates in a double, in the plain row-major order
 *    of the summed indices, and unary functions are evaluated in double. Results are
 *    therefore at least as accurate as a float-accumulating implementation; compare
 *    against them with a relative tolerance, not bit equality.
 *  - i32 ADD/SUB/MUL/NEG and i32 SUM wrap modulo 2^32 (no undefined overflow). i32 DIV
 *    truncates toward zero; x / 0 is 0 and INT32_MIN / -1 is INT32_MIN.
 *  - MAX/MIN (binary) propagate NaN. MAX reduce of an empty axis is -inf (INT32_MIN for
 *    i32); MEAN of an empty axis is NaN (0/0).
 *  - max_pool2d of a window with no in-image element gives -inf; avg_pool2d of such
 *    a window gives 0, and its gradient sends nothing back.
 *  - argmax takes the first maximum (strict >, so a NaN is never chosen unless it is
 *    element 0); argmax over an empty axis writes 0.
 *  - cast: float -> i32/u8 truncates toward zero and saturates to the target's range,
 *    NaN -> 0; integer -> u8 wraps modulo 256 (C's conversion, as numpy does); any ->
 *    bool is x != 0 (so NaN -> 1).
 *  - dropout scales kept values as x / (1 - rate), computed in double.
 *  - conv2d_scratch is 0: the reference needs no scratch and ignores the pointer.
 *  - Shapes are checked where it is cheap (rank, broadcast compatibility, permutation,
 *    slice/pad bounds): a bad one is FEDC_ESHAPE or FEDC_EINVAL with a message.
 *  - Only the purely elementwise kernels (unary, binary and select without
 *    broadcasting of the aliased operand, cast between same-size types, dropout) may
 *    be called with y aliasing x; the rest need distinct buffers.
 */
#ifndef FEDC_KERNELS_REF_H
#define FEDC_KERNELS_REF_H

#include "kernels/kernels.h"

/* fedc__ref_<field> for every row of kernels.def whose ref column is REF. */
#define FEDC__REF_DECL_REF(ret, fn, params) ret fn params;
#define FEDC__REF_DECL_NONE(ret, fn, params)
#define FEDC_KERNEL(ret, field, ref, fast, params) FEDC__REF_DECL_##ref(ret, fedc__ref_##field, params)
#include "kernels/kernels.def"
#undef FEDC_KERNEL
#undef FEDC__REF_DECL_REF
#undef FEDC__REF_DECL_NONE

/* ---- helpers shared by the kernels (defined in ref_shape.c, but one) --------- */

/* FEDC_ERANGE naming `kernel` and the row when a label is outside [0, classes)
 * (ref_nn.c). */
fedc_status fedc__ref_check_labels(const char *kernel, int64_t rows, int64_t classes, const int32_t *labels);

/* FEDC_EINVAL naming `kernel` unless 0 <= s->rank <= FEDC_MAX_RANK and no dim is
 * negative. */
fedc_status fedc__ref_check_shape(const char *kernel, const fedc__kshape *s);

/* FEDC_ESHAPE naming `kernel` unless `inner` (same rank) placed at offset `at` lies
 * inside `outer` (slice's and pad's window). */
fedc_status fedc__ref_check_window(const char *kernel, const fedc__kshape *outer, const int64_t *at,
                                  const fedc__kshape *inner);

/* Element strides of `in` seen through out's indices under numpy broadcasting: in is
 * right-aligned against out, and a missing or size-1 dim gets stride 0. FEDC_ESHAPE
 * naming `kernel` and both shapes when in does not broadcast to out. */
fedc_status fedc__ref_bcast_strides(const char *kernel, const fedc__kshape *in,
                                   const fedc__kshape *out, int64_t strides[FEDC_MAX_RANK]);

/* The offset, under `strides`, of the element whose row-major flat index in shape s
 * is `flat`. */
int64_t fedc__ref_offset(const fedc__kshape *s, const int64_t *strides, int64_t flat);

/* The int32 whose bits are u: arithmetic modulo 2^32 without relying on the
 * implementation-defined conversion of out-of-range values. */
static inline int32_t fedc__ref_wrap_i32(uint32_t u) {
    return u <= (uint32_t)INT32_MAX ? (int32_t)u : -(int32_t)(~u) - 1;
}

/* Float elements read as double and written with one rounding (dt is F32 or F64). */
static inline double fedc__ref_loadf(fedc_dtype dt, const void *p, int64_t i) {
    return dt == FEDC_F32 ? (double)((const float *)p)[i] : ((const double *)p)[i];
}
static inline void fedc__ref_storef(fedc_dtype dt, void *p, int64_t i, double v) {
    if (dt == FEDC_F32)
        ((float *)p)[i] = (float)v;
    else
        ((double *)p)[i] = v;
}

#endif /* FEDC_KERNELS_REF_H */
