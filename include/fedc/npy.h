/*
 * fedc/npy.h — reading and writing numpy .npy files, so that data made with numpy
 * can be fed to programs and their results loaded back with np.load.
 *
 *     fedc_type t;
 *     void *x;
 *     if (fedc_npy_read("x.npy", &t, &x)) fprintf(stderr, "%s\n", fedc_errmsg());
 *     ...
 *     fedc_npy_write("y.npy", &t, x);
 *     fedc_free(x);
 *
 * Supported: format versions 1.0, 2.0 and 3.0; C-order (row-major) arrays of up to
 * FEDC_MAX_RANK dimensions, scalars included; the little-endian dtypes numpy writes
 * for fedc's element types:
 *
 *     '<f4' f32   '<f8' f64   '<i4' i32   '|u1' u8   '|b1' bool
 *
 * Anything else (another dtype such as '<i8', big-endian data, Fortran order,
 * structured arrays) is refused with FEDC_EUNSUPPORTED and a message that names the
 * file, what it holds and how to convert it with numpy. Malformed files (bad magic,
 * a truncated header or data, data of the wrong size) give FEDC_EPARSE; files that
 * cannot be opened, read or written give FEDC_EIO.
 */
#ifndef FEDC_NPY_H
#define FEDC_NPY_H

#include "fedc/core.h"
#include "fedc/types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Reads the array in `path`. On success *type is its dtype and shape (placement
 * local) and *data a fedc_malloc'd copy of its elements, row-major, that the caller
 * frees with fedc_free. bool elements read as 0 or 1. On failure *data is NULL. */
FEDC_API fedc_status fedc_npy_read(const char *path, fedc_type *type, void **data);

/* Writes `data` (row-major, `type`'s dtype and shape; the placement is ignored) to
 * `path` as a version 1.0 .npy file with the same header bytes np.save writes. On
 * failure no partial file is left behind. */
FEDC_API fedc_status fedc_npy_write(const char *path, const fedc_type *type, const void *data);

#ifdef __cplusplus
}
#endif
#endif /* FEDC_NPY_H */
