/* What the ONNX importer's test cases share (tests/test_onnx_import.c, which
 * defines these, and tests/onnx_import_rnn.c): models written through
 * protobuf-c (onnx_write.h), imported, run on fixed inputs and compared with a
 * reference computed by plain loops. */
#ifndef FEDC_TESTS_ONNX_IMPORT_CASE_H
#define FEDC_TESTS_ONNX_IMPORT_CASE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fedc/formats.h"
#include "onnx_write.h"

enum { ELEM_FLOAT = 1, ELEM_INT64 = 7 };

/* Seeded values in [-1, 1) as floats. */
void onnx_fill(float *v, int n);
/* The model `write` makes, packed at opset 17. */
uint8_t *onnx_packed(void (*write)(onnx_writer *, const void *), const void *model, size_t *size);
/* The imported model (checked to import), or NULL after a failed check. */
fedc_onnx_model *onnx_import_bytes(const uint8_t *bytes, size_t size, int64_t batch, bool frozen);
/* Runs m on x, its parameters bound from the file's values; copies output `name`
 * (n floats) to out. */
void onnx_run(const fedc_onnx_model *m, const float *x, const char *name, float *out, int n);
/* Checks got against want within 2e-5 of max(1, |want|), naming what and where. */
void onnx_check_close(const float *got, const double *want, int n, const char *what);
/* How many of p's values are op `op`. */
int onnx_count_ops(const fedc_program *p, const char *op);

/* The recurrent cells' cases (onnx_import_rnn.c). */
void test_onnx_lstm(void);
void test_onnx_gru(void);

#endif
