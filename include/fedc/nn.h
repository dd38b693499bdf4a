/*
 * fedc/nn.h — models and optimizers, written as functions that add ops to a
 * program, so that everything they compute can be differentiated (a model's loss
 * by the client, an optimizer's step by a hypergradient through a round).
 *
 * Parameters live in one flat f32 buffer with named slices: parameter i is
 * fedc_model_param_size(m, i) floats at fedc_model_param_offset(m, i). A program
 * takes each parameter as an input of its own name and type, bound to its slice.
 *
 *     fedc_model *m;
 *     fedc_model_create(&m, "cnn", &(fedc_model_options){.num_classes = 62});
 *     float *w = malloc(fedc_model_size(m) * sizeof *w);
 *     fedc_model_init(m, seed, w);
 *     ... params[i] = fedc_input(p, fedc_model_param_name(m, i), fedc_model_param_type(m, i));
 *     fedc_model_outputs out;
 *     fedc_model_apply(m, p, params, x, y, mask, FEDC_NONE, &out);   // out.loss, out.logits, ...
 */
#ifndef FEDC_NN_H
#define FEDC_NN_H

#include "fedc/program.h"
#include "fedc/tree.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ models -- */

typedef struct fedc_model fedc_model;

typedef struct fedc_model_options {
    int num_classes;  /* 0: the model's default (62 for the EMNIST models) */
    int input_height, input_width, input_channels; /* images; 0: 28 x 28 x 1 */
    int input_dim;    /* vectors (logistic, dense, heart); 0: height*width*channels */
    int hidden;       /* dense: units per hidden layer; 0: 200. LSTM models: the LSTM size */
    /* transformer: 0 keeps the preset's size; num_classes is the vocabulary */
    int layers, width, heads, context;
    bool sinusoidal_positions; /* transformer: fixed sinusoidal positions instead of learned ones */
    /* Language models (shakespeare_lstm, stackoverflow_lstm, transformer): */
    bool tied_embeddings; /* the output projection is the token embedding, transposed */
    /* LSTM language models: */
    int sequence_length;  /* tokens per example; 0: 80 (Shakespeare), 20 (Stack Overflow) */
    bool mask_eos, mask_oov; /* leave EOS (2) / OOV (the last id) targets out of loss and accuracy */
    /* Imported models (onnx:) with BatchNormalization: train them in its inference
     * form, on the file's running statistics, which stay as they are (PyTorch's
     * BatchNorm frozen in eval mode while the rest trains). Default: its training
     * form, on the batch's statistics, the running ones updated (docs/onnx.md). */
    bool frozen_batchnorm;
} fedc_model_options;

/* Models by name, with FedJAX's architectures and parameter counts (docs/models.md):
 *   "logistic"  EMNIST logistic regression (784 -> 62: 48,670 parameters)
 *   "dense"     784-200-200-62 ReLU MLP (209,662)
 *   "cnn"       conv3x3x32 - conv3x3x64 - maxpool2 - dropout0.25 - dense128 - dropout0.5
 *               - 62 (1,206,590); with num_classes = 10, the Fashion-MNIST CNN
 *   "heart"     logistic regression for the heart-disease silos (13 -> 2)
 *   "shakespeare_lstm"   characters: embedding 90x8, two LSTM layers of 256 (each
 *               followed by tanh), dense to 90 (820,522)
 *   "stackoverflow_lstm" words: embedding 10,004x96, LSTM 670, tanh, dense 96, dense to
 *               10,004 (4,050,748; 3,090,364 with tied_embeddings)
 *   "transformer[:PRESET]"  decoder-only (GPT-2-style, pre-LN) language model on i32
 *               token sequences; presets tiny (2 blocks, width 32, 2 heads, context
 *               16, vocab 90), small (the default: 6 x 256, 4 heads, context 128,
 *               vocab 10,004), medium (8 x 512, 8 heads, 256) and base (12 x 768,
 *               12 heads, 512: 100.8M parameters, 93.1M tied); options
 *               layers/width/heads/context/num_classes override. Its x is i32
 *               [batch, context], y the next tokens i32 [batch, context]; tokens
 *               whose label is 0 (PAD) are left out of the loss and metrics.
 * The language models take i32 token ids x [batch, length] and targets y [batch,
 * length]; their loss and accuracy are over the target tokens that are not PAD (0)
 * (nor EOS / OOV with mask_eos / mask_oov) of the examples with mask 1.
 * Options override sizes (num_classes, input shape); `options` may be NULL. An
 * unknown name is FEDC_EINVAL listing the known ones. */
FEDC_API fedc_status fedc_model_create(fedc_model **out, const char *name, const fedc_model_options *options);
FEDC_API void fedc_model_destroy(fedc_model *m); /* safe on NULL */

FEDC_API const char *fedc_model_name(const fedc_model *m);
FEDC_API int fedc_model_num_params(const fedc_model *m);             /* parameter tensors */
FEDC_API int64_t fedc_model_size(const fedc_model *m);               /* floats in all of them */
FEDC_API const char *fedc_model_param_name(const fedc_model *m, int i); /* "conv1/w", ... */
FEDC_API fedc_type fedc_model_param_type(const fedc_model *m, int i);  /* f32, local */
FEDC_API int64_t fedc_model_param_offset(const fedc_model *m, int i);  /* in floats */
FEDC_API int64_t fedc_model_param_size(const fedc_model *m, int i);
/* Whether parameter i is a BatchNorm's: its scale, bias, running mean or running
 * variance (an imported model's BatchNormalization inputs; fedbn keeps them per
 * client). False for the built-in models, which have none. */
FEDC_API bool fedc_model_param_is_batchnorm(const fedc_model *m, int i);
/* The type of one batch of inputs: [batch, ...example shape], f32 (i32 token ids
 * [batch, length] for the language models). */
FEDC_API fedc_type fedc_model_input_type(const fedc_model *m, int64_t batch);
/* The type of one batch of labels: i32[batch], or i32[batch, context] for language
 * models (a next token per position). The mask stays f32[batch], per example. */
FEDC_API fedc_type fedc_model_label_type(const fedc_model *m, int64_t batch);
FEDC_API int fedc_model_num_classes(const fedc_model *m);

/* Fills `params` (fedc_model_size floats) with the initialisers FedJAX's Haiku models
 * use (documented per model in docs/models.md), from the counter RNG keyed by seed. */
FEDC_API fedc_status fedc_model_init(const fedc_model *m, uint64_t seed, float *params);

typedef struct fedc_model_outputs {
    fedc_value loss;    /* f32[]: mean cross-entropy over the examples with mask 1 */
    fedc_value logits;  /* f32[batch, classes] ([batch, length, classes] for language models) */
    fedc_value correct; /* f32[]: number of masked-in examples whose argmax is the label */
    fedc_value count;   /* f32[]: number of masked-in examples (language models: target tokens) */
    /* The same per example, f32[batch] (0 where masked out): its summed cross-entropy
     * (the loss times the count is their sum), its correct and its counted targets;
     * what evaluation sums per client when several clients share a batch. */
    fedc_value example_loss, example_correct, example_count;
    /* In training (fedc_model_apply_tree_training): the new values of the model's
     * state parameters, by parameter name (an imported BatchNorm's running
     * statistics), which training writes in place of the optimizer's step; NULL
     * when the model has none. */
    fedc_tree *updates;
} fedc_model_outputs;

/* Adds the model's forward pass on one batch to p: params (one value per parameter,
 * in order), x (fedc_model_input_type), y (fedc_model_label_type), mask (f32[batch]: 1 for
 * real examples, 0 for padding). `dropout_key` (an i32[4] value) turns dropout on
 * (training); FEDC_NONE evaluates without it. */
FEDC_API fedc_status fedc_model_apply(const fedc_model *m, fedc_program *p, const fedc_value *params, fedc_value x,
                             fedc_value y, fedc_value mask, fedc_value dropout_key, fedc_model_outputs *out);

/* ------------------------------------------------ models from programs -- */

/* A model whose forward pass is a program made elsewhere (an imported ONNX
 * model: libfedc_formats registers the loader "onnx", so that
 * fedc_model_create(&m, "onnx:model.onnx", &o) imports the file). `forward`
 * builds it for a batch size: its inputs are x (the model's input, in the
 * program's own layout, e.g. NCHW) then one per parameter, in order; its first
 * output is the logits f32[batch, classes]. The model adds the loss and metric
 * heads of every model (softmax cross-entropy on i32 labels). Its input type is
 * the task's examples as options say (28 x 28 x 1 images, NHWC, unless
 * input_height/width/channels or input_dim say otherwise), fed to the program
 * transposed to NCHW where the program's input is [batch, C, H, W], else
 * reshaped, and refused where the element counts differ; an output whose
 * classes differ from options->num_classes (when set) is refused. */
typedef fedc_status (*fedc_model_forward_fn)(void *ctx, int64_t batch, fedc_program **out);

typedef struct fedc_model_program {
    const char *name;                   /* fedc_model_name: "onnx:model.onnx" */
    fedc_model_forward_fn forward;
    void *ctx;                          /* owned by the model from create on (also when create fails) */
    void (*destroy_ctx)(void *ctx);     /* NULL: nothing to free */
    int num_params;
    const char *const *param_names;     /* checkpoints name them so (PyTorch's state_dict names) */
    const float *const *param_values;   /* the initial values (fedc_model_init copies them) */
    /* The forward in training, where it differs (NULL: `forward` trains too): its
     * inputs are forward's, then "mask" (f32[batch], 1 for a real example); its
     * outputs forward's, then "update/<param>" for each state parameter (a
     * BatchNorm's running statistic): its new value after the batch. */
    fedc_model_forward_fn forward_train;
    /* Per parameter (NULL: none): whether it is a BatchNorm's scale, bias or
     * running statistic (fedc_model_param_is_batchnorm). */
    const bool *param_batchnorm;
} fedc_model_program;

FEDC_API fedc_status fedc_model_create_program(fedc_model **out, const fedc_model_program *spec,
                                               const fedc_model_options *options);

/* fedc_model_create of "PREFIX:REST" calls load(REST, options, out). Register
 * before creating models (not synchronised with fedc_model_create); at most 4
 * prefixes; registering one again replaces its loader. */
typedef fedc_status (*fedc_model_loader)(const char *rest, const fedc_model_options *options, fedc_model **out);
FEDC_API fedc_status fedc_model_register_loader(const char *prefix, fedc_model_loader load);
/* Whether `name` is "PREFIX:..." of a known loader prefix ("onnx" is known even
 * when no loader is registered: creating it then says which library has it). */
FEDC_API bool fedc_model_name_is_loaded(const char *name);

/* -------------------------------------------------------------- optimizers -- */

typedef enum fedc_optimizer_kind {
    FEDC_OPT_SGD,
    FEDC_OPT_MOMENTUM, /* heavy ball; nesterov = true for Nesterov's */
    FEDC_OPT_ADAM,
    FEDC_OPT_ADAGRAD,
    FEDC_OPT_YOGI,
    FEDC_OPT_RMSPROP,
    FEDC_OPT_COUNT
} fedc_optimizer_kind;

/* The settings of an optimizer; fedc_optimizer_defaults fills FedJAX's defaults
 * (optax's) for a kind, then callers change what they need. */
typedef struct fedc_optimizer {
    fedc_optimizer_kind kind;
    double learning_rate;
    double momentum;            /* momentum */
    bool nesterov;              /* momentum */
    double b1, b2, eps;         /* adam, yogi; rmsprop's decay is b2 */
    double initial_accumulator; /* adagrad (0.1, as FedJAX), yogi (1e-6) */
    double weight_decay;        /* decoupled, as optax.add_decayed_weights before the learning rate:
                                   w - lr * (u + weight_decay * w); adam with it is optax.adamw (0: none) */
} fedc_optimizer;

FEDC_API fedc_optimizer fedc_optimizer_defaults(fedc_optimizer_kind kind, double learning_rate);
FEDC_API const char *fedc_optimizer_name(fedc_optimizer_kind kind); /* "sgd", "momentum", ... */
/* Parses "sgd", "momentum", "nesterov", "adam", "adagrad", "yogi", "rmsprop". */
FEDC_API fedc_status fedc_optimizer_parse(const char *name, double learning_rate, fedc_optimizer *out);

/* Optimizer state: `slots` tensors per parameter (of the parameter's type: adam's m
 * and v, ...), in the order slot-major then parameter (slot 0 of every parameter,
 * then slot 1 ...), then one f32[] step count if the optimizer counts steps. */
FEDC_API int fedc_optimizer_slots(const fedc_optimizer *o);
FEDC_API bool fedc_optimizer_counts_steps(const fedc_optimizer *o);
/* Number of state tensors for n parameters: n * slots (+ 1 step count). */
FEDC_API int fedc_optimizer_state_size(const fedc_optimizer *o, int n);
/* The initial value of every element of state tensor k (for n parameters). */
FEDC_API double fedc_optimizer_state_init(const fedc_optimizer *o, int n, int k);

/* Adds one step to p: new_params[i] = params[i] - update(grads[i], state). state and
 * new_state hold fedc_optimizer_state_size(o, n) values each. `lr` is a scalar
 * value of the parameters' dtype to use as the learning rate, or FEDC_NONE for
 * o->learning_rate as a constant. The step is built from ordinary ops, so it is
 * differentiable, in the learning rate too (pass it as a value). */
FEDC_API fedc_status fedc_optimizer_step(const fedc_optimizer *o, fedc_program *p, fedc_value lr, int n,
                                const fedc_value *params, const fedc_value *grads, const fedc_value *state,
                                fedc_value *new_params, fedc_value *new_state);

/* ------------------------------------------------- on value trees (tree.h) -- */

/* The model's parameters as inputs of p named prefix/<param> ("" or NULL: by the
 * parameter names) at placement pl; the tree's leaves are the parameter names. */
FEDC_API fedc_tree *fedc_model_input_tree(const fedc_model *m, fedc_program *p, const char *prefix, fedc_placement pl);
/* Constants shaped as the model's parameters, filled with `value`, at placement pl
 * (a never-seen client's control variate: fedc_model_full_tree(m, p, FEDC_LOCAL, 0)). */
FEDC_API fedc_tree *fedc_model_full_tree(const fedc_model *m, fedc_program *p, fedc_placement pl, double value);
/* fedc_model_apply with the parameters as a tree (leaves by parameter name). */
FEDC_API fedc_status fedc_model_apply_tree(const fedc_model *m, fedc_program *p, const fedc_tree *params, fedc_value x,
                                  fedc_value y, fedc_value mask, fedc_value dropout_key, fedc_model_outputs *out);
/* The same in training: dropout as dropout_key says, and a model's training form
 * where it has one (fedc_model_program.forward_train: an imported BatchNorm
 * normalises by the batch's statistics), out->updates its state's new values. */
FEDC_API fedc_status fedc_model_apply_tree_training(const fedc_model *m, fedc_program *p, const fedc_tree *params,
                                                    fedc_value x, fedc_value y, fedc_value mask,
                                                    fedc_value dropout_key, fedc_model_outputs *out);
/* An optimizer's state for `params` as a tree of its initial values (constants of
 * the parameters' placement), named by optax's slots: trace/<param> (momentum),
 * mu/<param> and nu/<param> (adam, yogi), sum_of_squares/<param> (adagrad),
 * nu/<param> (rmsprop), and count (adam, yogi). SGD's is empty. */
FEDC_API fedc_tree *fedc_optimizer_init_tree(const fedc_optimizer *o, fedc_program *p, const fedc_tree *params);
/* fedc_optimizer_step on trees: grads has params' leaf names, state is as
 * fedc_optimizer_init_tree makes it. new_state may be NULL (a step whose state is
 * not kept, as Mime's clients take). */
FEDC_API fedc_status fedc_optimizer_step_tree(const fedc_optimizer *o, fedc_program *p, fedc_value lr,
                                     const fedc_tree *params, const fedc_tree *grads, const fedc_tree *state,
                                     fedc_tree **new_params, fedc_tree **new_state);

#ifdef __cplusplus
}
#endif
#endif /* FEDC_NN_H */
