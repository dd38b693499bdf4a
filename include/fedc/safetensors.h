/*
 * fedc/safetensors.h — tensors to and from .safetensors files, the format of
 * Hugging Face's safetensors (readable by numpy and PyTorch through the
 * `safetensors` package, and simple enough to read by hand): an 8-byte
 * little-endian header length, a JSON header
 *     {"name": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]}, ...,
 *      "__metadata__": {"key": "value", ...}}
 * and the tensors' bytes. Checkpoints use it.
 *
 * Writing is atomic: the file is written under a temporary name, flushed to disk
 * (fsync) and renamed, so a reader (or a resumed run) sees the old file or the new
 * one, never a partial one.
 */
#ifndef FEDC_SAFETENSORS_H
#define FEDC_SAFETENSORS_H

#include "fedc/core.h"
#include "fedc/types.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct fedc_tensor_entry {
    const char *name;
    fedc_type type;   /* f32, f64, i32, u8 or bool; placement ignored */
    const void *data; /* row-major */
} fedc_tensor_entry;

typedef struct fedc_metadata_entry {
    const char *key, *value;
} fedc_metadata_entry;

FEDC_API fedc_status fedc_safetensors_write(const char *path, const fedc_tensor_entry *tensors, int n,
                                   const fedc_metadata_entry *metadata, int nmeta);

/* The same bytes in memory (a message's payload): *out fedc_malloc'd, *size long. */
FEDC_API fedc_status fedc_safetensors_encode(const fedc_tensor_entry *tensors, int n, const fedc_metadata_entry *metadata,
                                            int nmeta, void **out, size_t *size);

/* A file read whole into memory. */
typedef struct fedc_safetensors fedc_safetensors;

FEDC_API fedc_status fedc_safetensors_read(const char *path, fedc_safetensors **out);
/* The same from bytes in memory (copied); `what` names them in errors, as a path would. */
FEDC_API fedc_status fedc_safetensors_parse(const void *bytes, size_t size, const char *what, fedc_safetensors **out);
FEDC_API void fedc_safetensors_destroy(fedc_safetensors *s); /* safe on NULL */
FEDC_API int fedc_safetensors_count(const fedc_safetensors *s);
/* Tensor i. Its data points into the file's bytes (valid until destroy) and need
 * not be aligned for its dtype: copy it out (memcpy) rather than read it in place. */
FEDC_API fedc_tensor_entry fedc_safetensors_tensor(const fedc_safetensors *s, int i);
/* The tensor named `name`; FEDC_ENOTFOUND naming it and the file otherwise. */
FEDC_API fedc_status fedc_safetensors_find(const fedc_safetensors *s, const char *name, fedc_tensor_entry *out);
/* A metadata value, or NULL. */
FEDC_API const char *fedc_safetensors_metadata(const fedc_safetensors *s, const char *key);

#ifdef __cplusplus
}
#endif
#endif /* FEDC_SAFETENSORS_H */
