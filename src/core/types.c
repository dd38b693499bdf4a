/* Element types, shapes and placements. */
#include "fedc/types.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

static const struct {
    const char *name;
    size_t size;
} dtypes[FEDC_DTYPE_COUNT] = {
    [FEDC_F32] = {"f32", 4}, [FEDC_F64] = {"f64", 8}, [FEDC_I32] = {"i32", 4},
    [FEDC_U8] = {"u8", 1},   [FEDC_BOOL] = {"bool", 1},
};

static const char *const placements[FEDC_PLACEMENT_COUNT] = {"local", "server", "clients", "groups"};

size_t fedc_dtype_size(fedc_dtype dt) { return (unsigned)dt < FEDC_DTYPE_COUNT ? dtypes[dt].size : 0; }

const char *fedc_dtype_name(fedc_dtype dt) {
    return (unsigned)dt < FEDC_DTYPE_COUNT ? dtypes[dt].name : "?";
}

bool fedc_dtype_is_float(fedc_dtype dt) { return dt == FEDC_F32 || dt == FEDC_F64; }

const char *fedc_placement_name(fedc_placement p) {
    return (unsigned)p < FEDC_PLACEMENT_COUNT ? placements[p] : "?";
}

fedc_type fedc_type_make(fedc_dtype dt, int rank, const int64_t *dims) {
    fedc_type t;
    memset(&t, 0, sizeof t);
    t.dtype = dt;
    t.placement = FEDC_LOCAL;
    t.rank = rank;
    for (int i = 0; i < rank && i < FEDC_MAX_RANK; i++) t.dims[i] = dims[i];
    return t;
}

fedc_type fedc_type_scalar(fedc_dtype dt) { return fedc_type_make(dt, 0, NULL); }

/* Types also come from files (checkpoints, .npy, datasets), so a count that does
 * not exist (a negative dimension, a rank out of range, a product past int64) is
 * -1 rather than an overflow; an empty dimension makes the count 0 whatever the
 * others are. */
int64_t fedc_type_count(const fedc_type *t) {
    if (t->rank < 0 || t->rank > FEDC_MAX_RANK) return -1;
    bool empty = false;
    for (int i = 0; i < t->rank; i++) {
        if (t->dims[i] < 0) return -1;
        empty |= t->dims[i] == 0;
    }
    if (empty) return 0;
    int64_t n = 1;
    for (int i = 0; i < t->rank; i++)
        if (__builtin_mul_overflow(n, t->dims[i], &n)) return -1;
    return n;
}

size_t fedc_type_bytes(const fedc_type *t) {
    int64_t n = fedc_type_count(t);
    size_t bytes;
    if (n < 0 || (uint64_t)n > SIZE_MAX || __builtin_mul_overflow((size_t)n, fedc_dtype_size(t->dtype), &bytes))
        return SIZE_MAX;
    return bytes;
}

bool fedc_type_same_shape(const fedc_type *a, const fedc_type *b) {
    if (a->rank != b->rank) return false;
    for (int i = 0; i < a->rank; i++)
        if (a->dims[i] != b->dims[i]) return false;
    return true;
}

bool fedc_type_equal(const fedc_type *a, const fedc_type *b) {
    return a->dtype == b->dtype && a->placement == b->placement && fedc_type_same_shape(a, b);
}

char *fedc_type_str(const fedc_type *t, char *buf, size_t size) {
    size_t n = (size_t)snprintf(buf, size, "%s[", fedc_dtype_name(t->dtype));
    for (int i = 0; i < t->rank && n < size; i++)
        n += (size_t)snprintf(buf + n, size - n, i ? ",%lld" : "%lld", (long long)t->dims[i]);
    if (n < size) n += (size_t)snprintf(buf + n, size - n, "]");
    if (t->placement != FEDC_LOCAL && n < size)
        snprintf(buf + n, size - n, "@%s", fedc_placement_name(t->placement));
    return buf;
}
