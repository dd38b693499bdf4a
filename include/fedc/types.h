/*
 * fedc/types.h — element types, shapes and placements: the type of every value.
 *
 * A value's type is a dtype, a shape of up to FEDC_MAX_RANK dimensions (row-major,
 * contiguous), and a placement that says where it lives in a federated program:
 *
 *     local    a value inside one client's computation (or a plain program)
 *     server   one value, held by the coordinator
 *     clients  one value per client of the cohort
 */
#ifndef FEDC_TYPES_H
#define FEDC_TYPES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fedc/api.h"

#ifdef __cplusplus
extern "C" {
#endif

#define FEDC_MAX_RANK 6

/* Append only. bool is stored as one byte holding 0 or 1. */
typedef enum fedc_dtype { FEDC_F32, FEDC_F64, FEDC_I32, FEDC_U8, FEDC_BOOL, FEDC_DTYPE_COUNT } fedc_dtype;

/* Append only. The federated placements form a tree, server ⊃ groups ⊃ clients:
 * @groups is one value per group, @clients one per client (ordered by group, a
 * group's clients a contiguous range); a flat program has no @groups value. */
typedef enum fedc_placement { FEDC_LOCAL, FEDC_SERVER, FEDC_CLIENTS, FEDC_GROUPS, FEDC_PLACEMENT_COUNT } fedc_placement;

typedef struct fedc_type {
    fedc_dtype dtype;
    fedc_placement placement;
    int rank;
    int64_t dims[FEDC_MAX_RANK];
} fedc_type;

FEDC_API size_t fedc_dtype_size(fedc_dtype dt);          /* bytes per element */
FEDC_API const char *fedc_dtype_name(fedc_dtype dt);     /* "f32", ... */
FEDC_API bool fedc_dtype_is_float(fedc_dtype dt);        /* f32 or f64 */
FEDC_API const char *fedc_placement_name(fedc_placement p); /* "local", "server", "clients", "groups" */

/* A local type from a dims list: fedc_type_make(FEDC_F32, 2, (int64_t[]){3, 4}). */
FEDC_API fedc_type fedc_type_make(fedc_dtype dt, int rank, const int64_t *dims);
FEDC_API fedc_type fedc_type_scalar(fedc_dtype dt);
/* The number of elements (1 for a scalar), or -1 when there is none: a negative
 * dimension, a rank outside [0, FEDC_MAX_RANK], or a product past INT64_MAX (a type
 * read from a file can be any of these). fedc_type_bytes is SIZE_MAX then, or when
 * the bytes do not fit a size_t. */
FEDC_API int64_t fedc_type_count(const fedc_type *t);
FEDC_API size_t fedc_type_bytes(const fedc_type *t);
FEDC_API bool fedc_type_equal(const fedc_type *a, const fedc_type *b); /* dtype, placement and shape */
FEDC_API bool fedc_type_same_shape(const fedc_type *a, const fedc_type *b);
/* Writes "f32[3,4]" (with "@server"/"@clients" for those placements) into buf;
 * returns buf. 64 bytes always suffice. */
FEDC_API char *fedc_type_str(const fedc_type *t, char *buf, size_t size);

#ifdef __cplusplus
}
#endif
#endif /* FEDC_TYPES_H */
