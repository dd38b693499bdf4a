/* onnx_import.h — the ONNX importer's shared state (internal): the tensors of the
 * graph by name, each a program value, a value known at import, or both, and the
 * helpers the op translators (onnx_ops*.c) share. onnx_import.c walks the graph.
 *
 * Layouts: every value is kept in ONNX's layout; a rank-4 image that a
 * convolution or pool made may exist only as NHWC (fedc's layout of images), and
 * is transposed back to NCHW only when an op that is not layout-free reads it, so
 * that conv -> relu -> pool -> conv runs without transposes in between.
 */
#ifndef FEDC_FORMATS_ONNX_IMPORT_H
#define FEDC_FORMATS_ONNX_IMPORT_H

#include <stdbool.h>
#include <stdint.h>

#include "fedc/formats.h"
#include "onnx.pb-c.h"

/* ONNX TensorProto data types the importer reads. */
enum { ONNX_FLOAT = 1, ONNX_UINT8 = 2, ONNX_INT32 = 6, ONNX_INT64 = 7, ONNX_BOOL = 9, ONNX_DOUBLE = 11 };

/* A tensor known at import: a Constant, an integer initializer, or the shape
 * arithmetic on them. Values as doubles (exact for the int64 of shapes and for
 * every float). */
typedef struct onnx_const {
    int dtype; /* ONNX data type */
    int rank;
    int64_t dims[FEDC_MAX_RANK];
    int64_t count;
    double *data; /* count values (fedc_malloc'd) */
} onnx_const;

typedef struct onnx_entry {
    const char *name;
    fedc_value v;    /* the value in ONNX's layout, or FEDC_NONE */
    fedc_value nhwc; /* a rank-4 NCHW value in NHWC, or FEDC_NONE */
    onnx_const *k;   /* its value when known at import, or NULL */
} onnx_entry;

/* A parameter's new value that the training form computes (a BatchNorm's running
 * statistic): the program's output "update/<param>". */
typedef struct onnx_update {
    const char *param; /* the initializer's name (the node's input name) */
    fedc_value v;
} onnx_update;

typedef struct onnx_import {
    fedc_program *p;
    const char *what; /* the file, in messages */
    int64_t opset;
    const Onnx__NodeProto *node; /* the node being imported */
    onnx_entry *entries;
    int n, cap;
    fedc_status failed; /* the status of the last fedc__onnx_fail */
    fedc_onnx_batchnorm batchnorm; /* fedc_onnx_options.batchnorm */
    fedc_value mask;               /* unless INFERENCE, the program's input "mask", f32[batch] */
    onnx_update *updates;    /* written after the graph's outputs */
    int nupdates, updates_cap;
} onnx_import;

/* Maps the current node: its inputs are entries already defined, its outputs
 * are set with fedc__onnx_set*. Returns FEDC_OK or an error (fedc__onnx_fail). */
typedef fedc_status (*onnx_op_fn)(onnx_import *im);
typedef struct onnx_op_entry {
    const char *op_type;
    onnx_op_fn fn;
} onnx_op_entry;
/* The translators, each table ended by {NULL, NULL}: onnx_ops.c (arithmetic,
 * products, activations), onnx_ops_shape.c (shapes, indexing, constants),
 * onnx_ops_nn.c (convolution, pooling, normalisation, softmax), onnx_ops_rnn.c
 * (LSTM). */
extern const onnx_op_entry fedc__onnx_ops_basic[], fedc__onnx_ops_shape[], fedc__onnx_ops_nn[], fedc__onnx_ops_rnn[];

/* An error naming the file, the node, its op and the opset, then fmt. */
fedc_status fedc__onnx_fail(onnx_import *im, fedc_status status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The status of the error already reported (by fedc__onnx_fail or the program's
 * builders): what a translator returns after a helper returned NULL or FEDC_NONE. */
fedc_status fedc__onnx_error(const onnx_import *im);

/* The file at path read whole (fedc_malloc'd), at most 2 GiB. */
fedc_status fedc__onnx_read_file(const char *path, uint8_t **out, size_t *size);
/* bytes decoded as an onnx.ModelProto (free it with onnx__model_proto__free_unpacked),
 * their nesting bounded first; FEDC_EPARSE naming `what` when they are not one. */
fedc_status fedc__onnx_unpack(const void *bytes, size_t size, const char *what, Onnx__ModelProto **out);

/* known[i]: whether g's initializer i is only ever needed known at import (an
 * LSTM's initial state, a shape), so a constant even when it is a float
 * (onnx_known.c). */
fedc_status fedc__onnx_known_initializers(const Onnx__GraphProto *g, bool *known);

/* Records v as the new value of the parameter `param` (an output "update/<param>"). */
fedc_status fedc__onnx_add_update(onnx_import *im, const char *param, fedc_value v);

/* ------------------------------------------------------------ entries -- */

onnx_entry *fedc__onnx_find(onnx_import *im, const char *name);
/* A new entry named `name` (a later definition of a name replaces it). */
onnx_entry *fedc__onnx_define(onnx_import *im, const char *name);
/* The node's input k: NULL with an error if it is absent or undefined. */
onnx_entry *fedc__onnx_in(onnx_import *im, int k);
bool fedc__onnx_has_in(const onnx_import *im, int k); /* given and not "" */
int fedc__onnx_rank(onnx_import *im, onnx_entry *e);
/* e's dims in ONNX's layout (rank returned). */
int fedc__onnx_dims(onnx_import *im, onnx_entry *e, int64_t *dims);
/* The program value of e in ONNX's layout (a constant materialised as dtype
 * `like`'s, or its own when like is FEDC_NONE); FEDC_NONE on error. */
fedc_value fedc__onnx_value(onnx_import *im, onnx_entry *e, fedc_value like);
/* A rank-4 NCHW e as an NHWC value. */
fedc_value fedc__onnx_nhwc(onnx_import *im, onnx_entry *e);
/* Sets the node's output k to v (ONNX layout), to an NHWC value, or to a
 * constant (taken over). */
fedc_status fedc__onnx_set(onnx_import *im, int k, fedc_value v);
fedc_status fedc__onnx_set_nhwc(onnx_import *im, int k, fedc_value nhwc);
fedc_status fedc__onnx_set_const(onnx_import *im, int k, onnx_const *c);

/* ----------------------------------------------------------- constants -- */

onnx_const *fedc__onnx_const_new(int dtype, int rank, const int64_t *dims); /* zeros; NULL: error set */
void fedc__onnx_const_free(onnx_const *c);
/* A copy of c's values as `dtype` with other dims (of the same count). */
onnx_const *fedc__onnx_const_reshaped(const onnx_const *c, int dtype, int rank, const int64_t *dims);
/* A TensorProto's values (raw_data or the typed fields; dims checked). */
fedc_status fedc__onnx_const_of_tensor(const Onnx__TensorProto *t, const char *what, onnx_const **out);
/* Node input k, which must be known at import (a shape, axes, pads...). */
const onnx_const *fedc__onnx_const_in(onnx_import *im, int k, const char *what);
/* Node input k, a shape (1-D, at most FEDC_MAX_RANK values) known at import, into
 * dims: its rank, or -1 with the error reported. */
int fedc__onnx_shape_in(onnx_import *im, int k, int64_t *dims);
fedc_dtype fedc__onnx_fedc_dtype(int onnx_dtype, bool *ok);
/* A constant's value as an integer, truncated; NaN as 0 and beyond +-2^62 clamped
 * (a hostile file's float "shape" must not make an undefined conversion). */
int64_t fedc__onnx_i64(double v);

/* --------------------------------------------------------- attributes -- */

const Onnx__AttributeProto *fedc__onnx_attr(const onnx_import *im, const char *name);
int64_t fedc__onnx_attr_int(const onnx_import *im, const char *name, int64_t dflt);
double fedc__onnx_attr_float(const onnx_import *im, const char *name, double dflt);
/* An ints attribute: its count (at most max), or -1 when absent. */
int fedc__onnx_attr_ints(onnx_import *im, const char *name, int64_t *out, int max);
/* A string attribute into buf (dflt when absent). */
const char *fedc__onnx_attr_string(const onnx_import *im, const char *name, const char *dflt, char *buf, size_t size);
/* Refuses any attribute not in `known` (comma-separated): it could change the
 * op's meaning. */
fedc_status fedc__onnx_known_attrs(onnx_import *im, const char *known);
/* A negative axis counted from the end; an error when out of range. */
fedc_status fedc__onnx_axis(onnx_import *im, int64_t axis, int rank, int *out);

#endif
