/*
 * fedc/formats.h — libfedc_formats: the readers of TensorFlow Federated's HDF5
 * files (FEDC_FORMAT_TFF) and FedJAX's SQLite files (FEDC_FORMAT_FEDJAX), and
 * the importer of ONNX models (fedc_program_from_onnx, docs/onnx.md).
 *
 * They need HDF5, SQLite, msgpack and zlib, so they are a library of their own,
 * built with FEDC_FORMATS=ON (the default): libfedc alone opens LEAF, IDX, CSV
 * and text data, and names these two formats but has no reader for them. A
 * program that opens them links libfedc_formats (pkg-config fedc-formats) and
 * calls fedc_formats_register() once, before it opens a dataset; the fedc CLI
 * and the Python package do so. Without it, fedc_dataset_open of such a file
 * fails with FEDC_EUNSUPPORTED, saying which library has the reader.
 */
#ifndef FEDC_FORMATS_H
#define FEDC_FORMATS_H

#include "fedc/data.h"
#include "fedc/program.h"
#include "fedc/safetensors.h"
#include "fedc/tree.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Adds the TFF and FedJAX readers to libfedc's table of readers. Call it before
 * any dataset is opened (it is not synchronised with fedc_dataset_open); calling
 * it again changes nothing. */
FEDC_API void fedc_formats_register(void);

/* ------------------------------------------------------------------ ONNX -- */

/* An ONNX model (a forward graph of opsets 13 to 18, as torch.onnx.export writes
 * it) as a fedc program. Its inputs are the graph's inputs, by their ONNX names,
 * then one input "params/<initializer name>" per float initializer (the model's
 * parameters, in their ONNX shapes and layouts: PyTorch's state_dict names and
 * shapes); its outputs are the graph's outputs, by name. Integer initializers,
 * Constant nodes and the shape arithmetic on them (Shape, Gather, Unsqueeze,
 * Concat, ...) are computed at import. A symbolic dimension of a graph input (a
 * dim_param such as "batch") takes options.batch. NCHW images stay NCHW at the
 * program's inputs and outputs; the convolutions and pools run on fedc's NHWC ops
 * with transposes around them (docs/onnx.md lists the ops). */
/* How BatchNormalization is imported. The last two make a program to train: its
 * last input is "mask" (f32[batch], 1 for a real example, 0 for padding), and
 * after the graph's outputs come "update/<initializer name>", each node's running
 * mean and variance after the batch. */
typedef enum fedc_onnx_batchnorm {
    FEDC_ONNX_BATCHNORM_INFERENCE, /* normalised by the running statistics (the file's eval-mode form) */
    /* as PyTorch's model.train(): normalised by the mean and (biased) variance of
     * the batch's real examples; the running statistics move towards them by the
     * node's momentum (ONNX's, 1 - PyTorch's), the variance unbiased, as PyTorch */
    FEDC_ONNX_BATCHNORM_TRAINING,
    FEDC_ONNX_BATCHNORM_FROZEN, /* the inference form; the updates are the running statistics as given */
} fedc_onnx_batchnorm;

typedef struct fedc_onnx_options {
    int64_t batch; /* every symbolic dimension of the graph's inputs; 0: 1 */
    bool frozen;   /* the initializers as constants of the program, not inputs (only with INFERENCE) */
    fedc_onnx_batchnorm batchnorm;
} fedc_onnx_options;

typedef struct fedc_onnx_model {
    fedc_program *program;
    fedc_tree *params;               /* the "params/..." inputs, by initializer name (empty when frozen) */
    int num_params;
    fedc_tensor_entry *param_values; /* their names (without "params/"), types and data, in the tree's order */
    int64_t opset;                   /* of the default domain */
    /* Per parameter, in param_values' order: whether a BatchNormalization node reads
     * it as its scale, B, mean or var (fedc_model_program.param_batchnorm). */
    bool *param_batchnorm;
} fedc_onnx_model;

/* Imports the ONNX file at `path` (NULL options: the defaults). An op fedc does
 * not import is refused with FEDC_EUNSUPPORTED naming the op, the node and the
 * opset; a file that is not a well-formed ONNX model gets FEDC_EPARSE (or
 * FEDC_EINVAL) naming the file and what is wrong, never a crash. */
FEDC_API fedc_status fedc_program_from_onnx(const char *path, const fedc_onnx_options *options, fedc_onnx_model **out);
/* The same from bytes in memory; `what` names them in errors, as a path would. */
FEDC_API fedc_status fedc_program_from_onnx_bytes(const void *bytes, size_t size, const char *what,
                                                  const fedc_onnx_options *options, fedc_onnx_model **out);
FEDC_API void fedc_onnx_model_destroy(fedc_onnx_model *m); /* safe on NULL */

/* Writes a copy of the ONNX model at `path` to `out` with its parameters (its
 * float initializers) replaced by `params`, by name: each must be given, in its
 * ONNX type and shape (as fedc_program_from_onnx imported it; a checkpoint of
 * `fedc train --model onnx:PATH` names them so), and no other. The rest of the
 * file is kept; the values are written as raw_data. The file is written under a
 * temporary name and renamed. */
FEDC_API fedc_status fedc_onnx_write_params(const char *path, const char *out, const fedc_tensor_entry *params, int n);

#ifdef __cplusplus
}
#endif

#endif
