/*
 * The fast kernel table, fedc__kernels_fast: GEMM-based matmul and convolution
 * (fast_blas.c, fast_conv.c), channel-vectorised pooling (fast_pool.c), flat
 * elementwise loops (fast_elementwise.c), slice and pad by contiguous runs
 * (fast_shape.c), and the rest of the fast_*.c files; an entry whose fast column in
 * kernels.def is REF is the reference kernel of the same name, which is already as
 * fast as it needs to be or not on a hot path. The fast functions are declared in
 * fast.h, which every fast_*.c includes, so the compiler checks each definition
 * against the table's field.
 */
#include "kernels/fast.h"
#include "kernels/ref.h"

const fedc__kernels fedc__kernels_fast = {
    .name = "fast",
#define FEDC_KERNEL(ret, field, ref, fast, params) .field = FEDC__KERNEL_IMPL_##fast(field),
#include "kernels/kernels.def"
#undef FEDC_KERNEL
};
