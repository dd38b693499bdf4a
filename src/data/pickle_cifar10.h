/* pickle_cifar10.h — the CIFAR-10 python batch parser (internal; pickle_cifar10.c
 * says what it accepts). */
#ifndef FEDC_DATA_PICKLE_CIFAR10_H
#define FEDC_DATA_PICKLE_CIFAR10_H

#include "data/dataset.h"

enum { FEDC__CIFAR10_CLASSES = 10, FEDC__CIFAR10_SIDE = 32, FEDC__CIFAR10_PLANE = 32 * 32 };

/* One batch: n images of 3072 bytes (red plane, green plane, blue plane, each
 * 32 x 32 row-major), pointing into the parsed buffer, and n labels in 0..9. */
typedef struct fedc__cifar10_batch {
    const uint8_t *pixels;
    int64_t n;
    int32_t *labels; /* owned */
    int64_t labels_n;
} fedc__cifar10_batch;

/* Parses buf[0 .. len), the bytes of the file `path` (named in errors with the
 * byte offset): FEDC_EPARSE for a damaged or different structure,
 * FEDC_EUNSUPPORTED for an opcode or global the tarball's batches never use. */
FEDC_INTERNAL_API fedc_status fedc__cifar10_parse(const char *path, const uint8_t *buf, size_t len,
                                                  fedc__cifar10_batch *out);
FEDC_INTERNAL_API void fedc__cifar10_batch_free(fedc__cifar10_batch *b);

#endif
