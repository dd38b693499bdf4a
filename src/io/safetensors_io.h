/* safetensors_io.h — the safetensors encoder and reader without their copies
 * (internal; src/io/safetensors.c). A deployment's messages are safetensors
 * payloads as large as the model: these let the wire encode straight into the
 * transport's message and read a received one where it lies. */
#ifndef FEDC_IO_SAFETENSORS_IO_H
#define FEDC_IO_SAFETENSORS_IO_H

#include "fedc/safetensors.h"

/* Where an encoding goes, piece by piece: begin(ctx, total) makes room for
 * all of it (false: out of memory), then put(ctx, data, n) appends each piece
 * (false: out of memory). */
typedef struct fedc__byte_sink {
    bool (*begin)(void *ctx, size_t total);
    bool (*put)(void *ctx, const void *data, size_t n);
    void *ctx;
} fedc__byte_sink;

/* fedc_safetensors_encode's bytes, written to `sink`: each tensor's bytes
 * copied once, from the caller's buffer to the sink's. */
FEDC_INTERNAL_API fedc_status fedc__safetensors_encode_into(const fedc_tensor_entry *tensors, int n,
                                                            const fedc_metadata_entry *metadata, int nmeta,
                                                            const fedc__byte_sink *sink);
/* A sink into a fedc_malloc'd buffer (data, size bytes; the caller frees it). */
typedef struct fedc__memory_sink {
    unsigned char *data;
    size_t size, at;
} fedc__memory_sink;
FEDC_INTERNAL_API fedc__byte_sink fedc__memory_sink_of(fedc__memory_sink *m);

/* fedc_safetensors_parse's checks and result without the copy: the tensors
 * point into `bytes`, which must outlive the result. */
FEDC_INTERNAL_API fedc_status fedc__safetensors_view(const void *bytes, size_t size, const char *what,
                                                     fedc_safetensors **out);

#endif
