/*
 * A reader of the few ONNX protobuf messages that ONNX's node tests are made of:
 * TensorProto (input_N.pb, output_N.pb) and, from model.onnx, the graph's nodes
 * with their attributes and the graph's input and output names. Test-side code
 * for tests/test_onnx.c, written from the protobuf wire format (varints, fixed32,
 * fixed64, length-delimited fields) and onnx.proto's field numbers.
 *
 * It is a parser of files from outside, so every varint, length and count is
 * bounds-checked: malformed input (truncated, overlong varints, lengths past the
 * end, groups, wrong wire types for a known field, data that does not match the
 * dims) gets an error naming what and the byte offset, never a crash.
 */
#ifndef FEDC_TEST_ONNX_TENSOR_H
#define FEDC_TEST_ONNX_TENSOR_H

#include <stddef.h>
#include <stdint.h>

#define ONNX_MAX_RANK 8
#define ONNX_NAME 64      /* names and op types longer than this are rejected */
#define ONNX_MAX_IO 16    /* inputs or outputs of a node or a graph */
#define ONNX_MAX_ATTRS 24
#define ONNX_MAX_INTS 32  /* elements of an ints or floats attribute */

/* TensorProto.DataType */
enum {
    ONNX_FLOAT = 1, ONNX_UINT8 = 2, ONNX_INT8 = 3, ONNX_UINT16 = 4, ONNX_INT16 = 5, ONNX_INT32 = 6,
    ONNX_INT64 = 7, ONNX_STRING = 8, ONNX_BOOL = 9, ONNX_FLOAT16 = 10, ONNX_DOUBLE = 11, ONNX_UINT32 = 12,
    ONNX_UINT64 = 13, ONNX_BFLOAT16 = 16
};

/* A tensor's values, whatever its data type, as doubles (exact for every type the
 * node tests use with fedc's ops; int64 beyond 2^53 would round). */
typedef struct onnx_tensor {
    char name[ONNX_NAME];
    int data_type;
    int rank;
    int64_t dims[ONNX_MAX_RANK];
    int64_t count; /* product of dims (1 for a scalar) */
    double *data;  /* count values, malloc'd; onnx_tensor_free releases */
} onnx_tensor;

/* AttributeProto.AttributeType */
enum { ONNX_ATTR_FLOAT = 1, ONNX_ATTR_INT = 2, ONNX_ATTR_STRING = 3, ONNX_ATTR_TENSOR = 4, ONNX_ATTR_FLOATS = 6,
       ONNX_ATTR_INTS = 7, ONNX_ATTR_STRINGS = 8 };

typedef struct onnx_attr {
    char name[ONNX_NAME];
    int type;
    double f;
    int64_t i;
    char s[ONNX_NAME];
    int n; /* elements of ints / floats */
    int64_t ints[ONNX_MAX_INTS];
    double floats[ONNX_MAX_INTS];
} onnx_attr;

typedef struct onnx_node {
    char op_type[ONNX_NAME];
    int ninputs, noutputs, nattrs;
    char inputs[ONNX_MAX_IO][ONNX_NAME]; /* "" for an optional input left out */
    char outputs[ONNX_MAX_IO][ONNX_NAME];
    onnx_attr attrs[ONNX_MAX_ATTRS];
} onnx_node;

/* What a node test's model.onnx holds: the first node (node tests have one; the
 * "_expanded" ones several), how many there are, and the graph's inputs and
 * outputs by name, in order (input_N.pb is the graph's input N). */
typedef struct onnx_model {
    int64_t opset;  /* version of the default ("" or "ai.onnx") domain */
    int nnodes;
    onnx_node node;
    int ninputs, noutputs;
    char inputs[ONNX_MAX_IO][ONNX_NAME];
    char outputs[ONNX_MAX_IO][ONNX_NAME];
} onnx_model;

/* Parse from memory or a file. 0 on success; -1 with a message in err (which
 * names the file for the _read forms) otherwise. A failed onnx_tensor_parse
 * leaves *t empty (data NULL), so onnx_tensor_free is always safe. */
int onnx_tensor_parse(const uint8_t *buf, size_t len, onnx_tensor *t, char *err, size_t errsize);
int onnx_tensor_read(const char *path, onnx_tensor *t, char *err, size_t errsize);
void onnx_tensor_free(onnx_tensor *t);
int onnx_model_parse(const uint8_t *buf, size_t len, onnx_model *m, char *err, size_t errsize);
int onnx_model_read(const char *path, onnx_model *m, char *err, size_t errsize);

/* The attribute `name` of node n, or NULL. */
const onnx_attr *onnx_node_attr(const onnx_node *n, const char *name);
/* Its int (or `dflt` when absent) and float (likewise). */
int64_t onnx_attr_int(const onnx_node *n, const char *name, int64_t dflt);
double onnx_attr_float(const onnx_node *n, const char *name, double dflt);

/* A whole file into malloc'd memory (at most 256 MiB). */
int onnx_read_file(const char *path, uint8_t **buf, size_t *len, char *err, size_t errsize);

#endif
