/*
 * The reference kernel table, fedc__kernels_ref: every entry is the plain-C
 * fedc__ref_<field> function of the same name (ref_elementwise.c, ref_shape.c,
 * ref_nn.c, ref_transformer.c, ref_lstm.c), but the optional entries (ref column
 * NONE in kernels.def), which are NULL. It is the oracle the fast table is tested
 * against.
 */
#include "kernels/ref.h"

const fedc__kernels fedc__kernels_ref = {
    .name = "ref",
#define FEDC_KERNEL(ret, field, ref, fast, params) .field = FEDC__KERNEL_IMPL_##ref(field),
#include "kernels/kernels.def"
#undef FEDC_KERNEL
};
