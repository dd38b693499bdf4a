/*
 * src/nn/nn.h — internals of the models (include/fedc/nn.h): the parameter table
 * that layer declarations fill at fedc_model_create, the layer helpers that add a
 * layer's ops to a program at fedc_model_apply, and the initialisers.
 *
 * A layer is declared once (its parameters, with shapes and initialisers, are
 * appended to the table in order) and applied any number of times (its ops take
 * the parameter values the caller passes, in the same order).
 */
#ifndef FEDC_SRC_NN_NN_H
#define FEDC_SRC_NN_NN_H

#include "fedc/core.h"
#include "fedc/nn.h"
#include "fedc/program.h"

/* The transformer has the most parameter tensors: 12 per block and 5 more, so up
 * to 20 blocks. */
#define FEDC_NN_MAX_PARAMS 256

/* One parameter tensor: a named slice of the flat f32 buffer. */
typedef struct fedc__nn_param {
    char name[96];      /* "conv1/w"; a program's: "fc1.weight" */
    fedc_type type;     /* f32, local */
    int64_t offset;     /* in floats, from the start of the buffer */
    int64_t size;       /* floats */
    double init_stddev; /* stddev of the truncated normal; 0: every element init_const */
    double init_const;
    double init_uniform; /* > 0: U(-init_uniform, init_uniform) instead (PyTorch's initialisers) */
    bool batchnorm;      /* a BatchNorm's scale, bias or running statistic (fedc_model_param_is_batchnorm) */
} fedc__nn_param;

/* The parameters in declaration order; size is the running total of floats. */
typedef struct fedc__nn_params {
    fedc__nn_param items[FEDC_NN_MAX_PARAMS];
    int count;
    int64_t size;
} fedc__nn_params;

/* ------------------------------------------------------ declarations (layers.c) -- */

/* "<layer>/w" [in, out] with Haiku's hk.Linear default (truncated normal, stddev
 * 1/sqrt(in)) and "<layer>/b" [out] of zeros. */
fedc_status fedc__nn_declare_dense(fedc__nn_params *ps, const char *layer, int64_t in, int64_t out);
/* "<layer>/w" [kh, kw, cin, cout] (HWIO) with hk.Conv2D's default (truncated normal,
 * stddev 1/sqrt(kh*kw*cin)) and "<layer>/b" [cout] of zeros. */
fedc_status fedc__nn_declare_conv(fedc__nn_params *ps, const char *layer, int kh, int kw, int64_t cin,
                                 int64_t cout);
/* The same two layers as PyTorch's nn.Linear and nn.Conv2d under
 * torch.nn.init.xavier_uniform_ on the weight (pfl-research's simple_cnn): w
 * U(-a, a), a = sqrt(6 / (fan_in + fan_out)); b as PyTorch's reset_parameters
 * leaves it, U(-1/sqrt(fan_in), 1/sqrt(fan_in)). */
fedc_status fedc__nn_declare_dense_xavier(fedc__nn_params *ps, const char *layer, int64_t in, int64_t out);
fedc_status fedc__nn_declare_conv_xavier(fedc__nn_params *ps, const char *layer, int kh, int kw, int64_t cin,
                                        int64_t cout);

/* Appends "<layer>/<suffix>" of shape dims[0..rank) with a truncated normal of
 * init_stddev (0: zeros) to the table. */
fedc_status fedc__nn_declare(fedc__nn_params *ps, const char *layer, const char *suffix, int rank, const int64_t *dims,
                            double init_stddev);

/* ------------------------------------------------------------ ops (layers.c) -- */

/* x [batch, in] @ w + b. */
fedc_value fedc__nn_dense(fedc_program *p, fedc_value x, fedc_value w, fedc_value b);
/* VALID, stride-1 convolution of NHWC x with HWIO w, plus b per output channel. */
fedc_value fedc__nn_conv(fedc_program *p, fedc_value x, fedc_value w, fedc_value b);
/* window x window max pooling with stride `window`, VALID. */
fedc_value fedc__nn_max_pool(fedc_program *p, fedc_value x, int window);
/* [batch, ...] -> [batch, product of the rest], row-major (hk.Flatten's order). */
fedc_value fedc__nn_flatten(fedc_program *p, fedc_value x);
/* Inverted dropout at `rate` with dropout layer number `layer` (0, 1, ...) of the
 * model: the layer's key is `key` with layer * FEDC_NN_DROPOUT_KEY_STEP added to
 * key[3] (mod 2^32). Returns x unchanged when key is FEDC_NONE (evaluation). */
fedc_value fedc__nn_dropout(fedc_program *p, fedc_value x, fedc_value key, int layer, double rate);

/* The Weyl constant of the RNG (the golden ratio as a 32-bit fraction): the second
 * dropout layer's stream would meet the first layer's only for steps (key[3])
 * about 1.6e9 apart, where a small constant such as 1 would give layer 2 at step s
 * the mask stream of layer 1 at step s + 1. */
#define FEDC_NN_DROPOUT_KEY_STEP 0x9E3779B9u

/* ------------------------------------------------- recurrent (recurrent.c) -- */

/* hk.Embed: "<layer>/w" [vocab, dim], truncated normal of stddev 1. */
fedc_status fedc__nn_declare_embedding(fedc__nn_params *ps, const char *layer, int64_t vocab, int64_t dim);
/* hk.LSTM: "<layer>/w" [in + hidden, 4 hidden] (rows: input, then hidden; columns:
 * gates i, g, f, o), truncated normal of stddev 1/sqrt(in + hidden), and
 * "<layer>/b" [4 hidden] of zeros. */
fedc_status fedc__nn_declare_lstm(fedc__nn_params *ps, const char *layer, int64_t in, int64_t hidden);
/* hk.LSTM over a time-major sequence x [T, B, in] from zero state: h [T, B, H].
 * The input projection of all steps is one GEMM; Haiku's forget-gate bias of +1 is
 * added to it; the recurrence is the fused lstm op. */
fedc_value fedc__nn_lstm(fedc_program *p, fedc_value x, fedc_value w, fedc_value b);

/* ----------------------------------------------- language models (models_text.c) -- */

typedef struct fedc__nn_text {
    bool word;            /* Stack Overflow's shape (a projection to embed); else Shakespeare's */
    int64_t vocab, embed, hidden, layers, length;
    bool tied, mask_eos, mask_oov;
} fedc__nn_text;

/* Sizes from FedJAX's defaults and the options; errors name the model. */
fedc_status fedc__nn_text_configure(fedc__nn_text *t, const char *name, bool word, const fedc_model_options *o);
fedc_status fedc__nn_text_declare(const fedc__nn_text *t, fedc__nn_params *ps);
/* The forward pass and the masked sequence heads. x and y are i32[B, length], mask
 * f32[B]. */
void fedc__nn_text_apply(const fedc__nn_text *t, fedc_program *p, const fedc_value *w, fedc_value x, fedc_value y,
                        fedc_value mask, fedc_model_outputs *out);

/* -------------------------------------------------------------- init (init.c) -- */

/* The stream parameter `index` of a model is initialised from: round UINT32_MAX,
 * client `index`, step FEDC_NN_INIT_STEP, so that it differs from the streams a
 * training run keys by (seed, round, client, step) for its own draws. */
#define FEDC_NN_INIT_STEP 0x696E6974u /* "init" */
fedc_rng_stream fedc__nn_init_stream(uint64_t seed, int index);

/* n floats of stddev * z, z standard normal conditioned on |z| < 2 (drawn again
 * while outside), as Haiku's hk.initializers.TruncatedNormal. Element j's attempt
 * a uses the stream's normal number a * n + j, so every element is a pure function
 * of (stream, j). */
void fedc__nn_truncated_normal(fedc_rng_stream s, double stddev, int64_t n, float *out);
/* n floats of U(-limit, limit): element j is (2u - 1) * limit, u the stream's
 * uniform double number j. */
void fedc__nn_uniform(fedc_rng_stream s, double limit, int64_t n, float *out);

/* "<layer>/<suffix>" of shape dims[0..rank): truncated normal of init_stddev, or
 * (init_stddev 0) every element init_const. */
fedc_status fedc__nn_declare_param(fedc__nn_params *ps, const char *layer, const char *suffix, int rank,
                                  const int64_t *dims, double init_stddev, double init_const);

/* ------------------------------------------------ transformer (transformer.c) -- */

typedef struct fedc__nn_transformer {
    int64_t layers, width, heads, context, vocab;
    bool tied;       /* logits = h @ wte^T; else a separate head [width, vocab] */
    bool sinusoidal; /* fixed sinusoidal positions; else learned wpe [context, width] */
} fedc__nn_transformer;

/* Resolves "transformer[:preset]" and the options into a checked config. */
fedc_status fedc__nn_transformer_config(const char *name, const fedc_model_options *o, fedc__nn_transformer *out);
/* The number of floats the model's parameters hold, by formula (tests check the
 * declared table against it). */
int64_t fedc__nn_transformer_param_count(const fedc__nn_transformer *c);
fedc_status fedc__nn_transformer_declare(const fedc__nn_transformer *c, fedc__nn_params *ps);
/* Logits [batch, seq, vocab] of i32 tokens [batch, seq]. */
fedc_value fedc__nn_transformer_forward(const fedc__nn_transformer *c, fedc_program *p, const fedc_value *w,
                                       fedc_value tokens);

/* ------------------------------------------ models from programs (program_model.c) -- */

typedef struct fedc__nn_program fedc__nn_program;

/* Builds the forward at batch 1, checks it against the model's input type
 * `example` (batch 1) and the task's classes (0: any), declares the parameters
 * in ps and sets *classes. Takes spec->ctx (freed by fedc__nn_program_destroy,
 * or here on failure). */
fedc_status fedc__nn_program_create(const fedc_model_program *spec, fedc_type example, int want_classes,
                                   fedc__nn_params *ps, int *classes, fedc__nn_program **out);
void fedc__nn_program_destroy(fedc__nn_program *g); /* safe on NULL */
const char *fedc__nn_program_name(const fedc__nn_program *g);
fedc_status fedc__nn_program_init(const fedc__nn_program *g, const fedc__nn_params *ps, float *params);
/* The logits of x (the model's input type), the program inlined into p. With
 * updates (ps->count values, FEDC_NONE on entry): in training, the training
 * forward where the model has one (mask f32[batch] its input), updates[i] set to
 * the new value of parameter i when it is state. */
fedc_value fedc__nn_program_forward(const fedc__nn_program *g, fedc_program *p, const fedc__nn_params *ps,
                                   const fedc_value *w, fedc_value x, fedc_value mask, fedc_value *updates);
/* fedc_model_apply, in training (the model's training form; out->updates) or not. */
fedc_status fedc__model_apply(const fedc_model *m, fedc_program *p, const fedc_value *params, fedc_value x,
                              fedc_value y, fedc_value mask, fedc_value dropout_key, bool training,
                              fedc_model_outputs *out);
/* fedc_model_create of a name with a loader's prefix. */
fedc_status fedc__nn_load(const char *name, const fedc_model_options *o, fedc_model **out);

#endif /* FEDC_SRC_NN_NN_H */
