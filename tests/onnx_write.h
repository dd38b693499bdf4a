/*
 * ONNX models written by the tests themselves (tests/test_onnx_import.c), through
 * protobuf-c and the C code generated from ONNX's onnx.proto: a graph is built
 * node by node, then packed into a ModelProto's bytes. Nothing here knows fedc;
 * the importer under test reads what these write.
 */
#ifndef FEDC_TEST_ONNX_WRITE_H
#define FEDC_TEST_ONNX_WRITE_H

#include <stddef.h>
#include <stdint.h>

#include "onnx.pb-c.h"

#define OW_MAX 64

typedef struct onnx_writer {
    Onnx__GraphProto graph;
    Onnx__NodeProto *nodes[OW_MAX];
    Onnx__TensorProto *inits[OW_MAX];
    Onnx__ValueInfoProto *inputs[OW_MAX], *outputs[OW_MAX];
    void *owned[16 * OW_MAX]; /* everything allocated, freed by ow_free */
    int nowned;
} onnx_writer;

void ow_init(onnx_writer *w);
void ow_free(onnx_writer *w);

/* A graph input of ONNX element type `elem` (1 float, 7 int64); a dim of -1 is
 * the symbolic "batch". */
void ow_input(onnx_writer *w, const char *name, int elem, int rank, const int64_t *dims);
void ow_output(onnx_writer *w, const char *name);
/* Initializers: floats in raw_data (as PyTorch writes them), int64s in int64_data. */
void ow_init_f32(onnx_writer *w, const char *name, int rank, const int64_t *dims, const float *data);
void ow_init_i64(onnx_writer *w, const char *name, int rank, const int64_t *dims, const int64_t *data);

/* Attributes for ow_node. */
Onnx__AttributeProto *ow_int(onnx_writer *w, const char *name, int64_t v);
Onnx__AttributeProto *ow_float(onnx_writer *w, const char *name, float v);
Onnx__AttributeProto *ow_ints(onnx_writer *w, const char *name, int n, const int64_t *v);
Onnx__AttributeProto *ow_tensor_i64(onnx_writer *w, const char *name, int rank, const int64_t *dims, const int64_t *data);

/* A node: inputs and outputs as comma-separated names ("" for none, "x,,y" leaves
 * the second input out); then nattrs attributes. */
void ow_node(onnx_writer *w, const char *op, const char *name, const char *inputs, const char *outputs, int nattrs, ...);

/* The model at `opset` (default domain) as bytes (malloc'd; *size long). */
uint8_t *ow_pack(onnx_writer *w, int64_t opset, size_t *size);

#endif
