/*
 * src/nn/models.c — the models of include/fedc/nn.h: FedJAX's EMNIST models
 * (fedjax/models/emnist.py: create_logistic_model, create_dense_model,
 * create_conv_model), the same CNN for Fashion-MNIST (num_classes = 10),
 * pfl-research's CIFAR-10 simple_cnn (the same layers on 32x32x3, PyTorch's
 * initialisers), and a logistic regression for the heart-disease silos. docs/models.md describes each
 * architecture, its parameters and its sources.
 *
 * A model is a table of parameters (declared once, at create) and a forward pass
 * that fedc_model_apply adds to a program, followed by the loss and metric heads
 * shared by every model.
 */
#include "nn/nn.h"

#include <string.h>

typedef enum arch { ARCH_LOGISTIC, ARCH_DENSE, ARCH_CNN, ARCH_CHAR_LSTM, ARCH_WORD_LSTM, ARCH_TRANSFORMER, ARCH_PROGRAM } arch;

typedef struct model_kind {
    const char *name;
    arch arch;
    int default_classes;
    int vector_dim; /* > 0: the model takes vectors only, of this default size */
    int side, channels; /* images: the default shape, side x side x channels (0: FedJAX's 28 x 28 x 1) */
    bool xavier;        /* PyTorch's layers under Xavier-uniform weights, not Haiku's defaults */
} model_kind;

static const model_kind KINDS[] = {
    {"logistic", ARCH_LOGISTIC, 62, 0, 0, 0, false},
    {"dense", ARCH_DENSE, 62, 0, 0, 0, false},
    {"cnn", ARCH_CNN, 62, 0, 0, 0, false},
    {"heart", ARCH_LOGISTIC, 2, 13, 0, 0, false},
    {"shakespeare_lstm", ARCH_CHAR_LSTM, 0, 0, 0, 0, false}, /* models_text.c */
    {"stackoverflow_lstm", ARCH_WORD_LSTM, 0, 0, 0, 0, false},
    /* pfl-research benchmarks/model/pytorch/cnn.py simple_cnn: FedJAX's CNN layer for
     * layer (VALID convs, 2x2 pool, dropouts 0.25 and 0.5) on CIFAR-10's images. */
    {"pfl_cnn", ARCH_CNN, 10, 0, 32, 3, true},
};
enum { NKINDS = sizeof KINDS / sizeof KINDS[0] };
/* "transformer[:preset]" (src/nn/transformer.c) is matched by prefix. */
static const model_kind TRANSFORMER_KIND = {"transformer", ARCH_TRANSFORMER, 0, 0, 0, 0, false};
/* fedc_model_create_program's models (src/nn/program_model.c). */
static const model_kind PROGRAM_KIND = {"program", ARCH_PROGRAM, 0, 0, 0, 0, false};

/* FedJAX's defaults: 28 x 28 x 1 images (_HAIKU_SAMPLE_BATCH), 200 hidden units. */
enum { DEFAULT_SIDE = 28, DEFAULT_CHANNELS = 1, DEFAULT_HIDDEN = 200 };
/* Bounds on the options, so that every size below fits in int64 with room. */
enum { MAX_SIDE = 1 << 16, MAX_UNITS = 1 << 20 };
#define MAX_INPUT ((int64_t)1 << 31)

/* The CNN's fixed sizes (ConvDropoutModule in fedjax/models/emnist.py). */
enum { CONV1_OUT = 32, CONV2_OUT = 64, CNN_KERNEL = 3, CNN_POOL = 2, CNN_DENSE = 128 };
static const double CNN_DROPOUT1 = 0.25, CNN_DROPOUT2 = 0.5;

struct fedc_model {
    const model_kind *kind;
    int classes;
    bool images; /* x is [batch, height, width, channels]; else [batch, input_dim] */
    int64_t height, width, channels;
    int64_t input_dim; /* floats per example */
    int64_t hidden;    /* dense only */
    fedc__nn_transformer tf; /* transformer only */
    fedc__nn_text text;      /* the LSTM language models */
    fedc__nn_program *program; /* models from programs */
    fedc__nn_params params;
};

/* ---------------------------------------------------------------- options -- */

static fedc_status check_range(const model_kind *k, const char *field, int v, int max) {
    if (v < 0 || v > max)
        return fedc_error(FEDC_EINVAL, "model %s: %s = %d is outside [0, %d] (0 means the default)", k->name,
                          field, v, max);
    return FEDC_OK;
}

static fedc_status check_ranges(const model_kind *k, const fedc_model_options *o) {
    fedc_status st;
    if ((st = check_range(k, "num_classes", o->num_classes, MAX_UNITS)) ||
        (st = check_range(k, "input_height", o->input_height, MAX_SIDE)) ||
        (st = check_range(k, "input_width", o->input_width, MAX_SIDE)) ||
        (st = check_range(k, "input_channels", o->input_channels, MAX_SIDE)) ||
        (st = check_range(k, "input_dim", o->input_dim, INT32_MAX)) ||
        (st = check_range(k, "hidden", o->hidden, MAX_UNITS)))
        return st;
    return FEDC_OK;
}

/* Vector models (heart) take [batch, input_dim]; an image shape is a mistake. */
static fedc_status resolve_vector(fedc_model *m, const fedc_model_options *o) {
    if (o->input_height || o->input_width || o->input_channels)
        return fedc_error(FEDC_EINVAL, "model %s takes vectors: set input_dim, not an image shape", m->kind->name);
    m->images = false;
    m->input_dim = o->input_dim ? o->input_dim : m->kind->vector_dim;
    return FEDC_OK;
}

/* Image models take [batch, h, w, c]; logistic and dense take [batch, input_dim]
 * instead when input_dim is given without an image shape. */
static fedc_status resolve_image(fedc_model *m, const fedc_model_options *o) {
    bool image_set = o->input_height || o->input_width || o->input_channels;
    const model_kind *k = m->kind;
    int side = k->side ? k->side : DEFAULT_SIDE, channels = k->channels ? k->channels : DEFAULT_CHANNELS;
    m->height = o->input_height ? o->input_height : side;
    m->width = o->input_width ? o->input_width : side;
    m->channels = o->input_channels ? o->input_channels : channels;
    int64_t hwc = m->height * m->width * m->channels;
    if (hwc > MAX_INPUT)
        return fedc_error(FEDC_EINVAL, "model %s: an image of %lld floats is too large", m->kind->name,
                          (long long)hwc);
    m->images = m->kind->arch == ARCH_CNN || !o->input_dim || image_set;
    m->input_dim = m->images ? hwc : o->input_dim;
    if (m->images && o->input_dim && o->input_dim != hwc)
        return fedc_error(FEDC_EINVAL, "model %s: input_dim %d differs from height*width*channels = %lld",
                          m->kind->name, o->input_dim, (long long)hwc);
    /* Two VALID 3x3 convolutions take 4 rows and columns, and the pool needs 2 more. */
    if (m->kind->arch == ARCH_CNN && (m->height < 6 || m->width < 6))
        return fedc_error(FEDC_EINVAL, "model %s: images of %lld x %lld are smaller than 6 x 6", m->kind->name,
                          (long long)m->height, (long long)m->width);
    return FEDC_OK;
}

static bool is_text(const fedc_model *m) { return m->kind->arch == ARCH_CHAR_LSTM || m->kind->arch == ARCH_WORD_LSTM; }

static fedc_status resolve_options(fedc_model *m, const fedc_model_options *o) {
    const model_kind *k = m->kind;
    if (o->layers || o->width || o->heads || o->context || o->sinusoidal_positions)
        return fedc_error(FEDC_EINVAL, "model %s: layers, width, heads, context and sinusoidal_positions are for "
                          "transformer models", k->name);
    if (is_text(m)) {
        fedc_status st = fedc__nn_text_configure(&m->text, k->name, k->arch == ARCH_WORD_LSTM, o);
        m->classes = (int)m->text.vocab;
        return st;
    }
    if (o->sequence_length || o->tied_embeddings || o->mask_eos || o->mask_oov)
        return fedc_error(FEDC_EINVAL, "model %s is not a language model: sequence_length, tied_embeddings, "
                          "mask_eos and mask_oov must be unset", k->name);
    fedc_status st = check_ranges(k, o);
    if (st) return st;
    if (o->hidden && k->arch != ARCH_DENSE)
        return fedc_error(FEDC_EINVAL, "model %s has no hidden layer: hidden must be 0", k->name);
    m->classes = o->num_classes ? o->num_classes : k->default_classes;
    m->hidden = o->hidden ? o->hidden : DEFAULT_HIDDEN;
    return k->vector_dim ? resolve_vector(m, o) : resolve_image(m, o);
}

/* ----------------------------------------------------------- declarations -- */

/* Parameter order: layers in forward order, w before b in each. */
static fedc_status declare_params(fedc_model *m) {
    fedc__nn_params *ps = &m->params;
    fedc_status st;
    switch (m->kind->arch) {
    case ARCH_LOGISTIC: return fedc__nn_declare_dense(ps, "dense1", m->input_dim, m->classes);
    case ARCH_DENSE:
        if ((st = fedc__nn_declare_dense(ps, "dense1", m->input_dim, m->hidden)) ||
            (st = fedc__nn_declare_dense(ps, "dense2", m->hidden, m->hidden)))
            return st;
        return fedc__nn_declare_dense(ps, "dense3", m->hidden, m->classes);
    case ARCH_TRANSFORMER: return fedc__nn_transformer_declare(&m->tf, ps);
    case ARCH_CNN: {
        /* VALID 3x3 twice (-4), then the 2x2 VALID pool (floor of half). */
        int64_t flat = ((m->height - 4) / CNN_POOL) * ((m->width - 4) / CNN_POOL) * CONV2_OUT;
        bool x = m->kind->xavier;
        fedc_status (*conv)(fedc__nn_params *, const char *, int, int, int64_t, int64_t) =
            x ? fedc__nn_declare_conv_xavier : fedc__nn_declare_conv;
        fedc_status (*dense)(fedc__nn_params *, const char *, int64_t, int64_t) =
            x ? fedc__nn_declare_dense_xavier : fedc__nn_declare_dense;
        if ((st = conv(ps, "conv1", CNN_KERNEL, CNN_KERNEL, m->channels, CONV1_OUT)) ||
            (st = conv(ps, "conv2", CNN_KERNEL, CNN_KERNEL, CONV1_OUT, CONV2_OUT)) ||
            (st = dense(ps, "dense1", flat, CNN_DENSE)))
            return st;
        return dense(ps, "dense2", CNN_DENSE, m->classes);
    }
    case ARCH_CHAR_LSTM:
    case ARCH_WORD_LSTM: return fedc__nn_text_declare(&m->text, ps);
    case ARCH_PROGRAM: break; /* fedc_model_create_program declares them */
    }
    return fedc_error(FEDC_EINTERNAL, "model %s: unknown architecture", m->kind->name);
}

static const model_kind *find_kind(const char *name) {
    if (!strncmp(name, "transformer", 11) && (name[11] == 0 || name[11] == ':')) return &TRANSFORMER_KIND;
    for (int i = 0; i < NKINDS; i++)
        if (strcmp(KINDS[i].name, name) == 0) return &KINDS[i];
    return NULL;
}

static fedc_status unknown_name(const char *name) {
    char list[192] = "";
    for (int i = 0; i < NKINDS; i++) {
        if (i) strncat(list, ", ", sizeof list - strlen(list) - 1);
        strncat(list, KINDS[i].name, sizeof list - strlen(list) - 1);
    }
    strncat(list, ", transformer[:tiny|small|medium|base]", sizeof list - strlen(list) - 1);
    return fedc_error(FEDC_EINVAL, "model: unknown name \"%s\"; the models are %s", name, list);
}

fedc_status fedc_model_create(fedc_model **out, const char *name, const fedc_model_options *options) {
    if (!out) return fedc_error(FEDC_EINVAL, "fedc_model_create: out is NULL");
    *out = NULL;
    if (!name) return unknown_name("(null)");
    if (fedc_model_name_is_loaded(name)) return fedc__nn_load(name, options, out);
    const model_kind *kind = find_kind(name);
    if (!kind) return unknown_name(name);
    fedc_model_options none = {0};
    fedc_model *m = fedc_calloc(1, sizeof *m);
    if (!m) return fedc_error(FEDC_ENOMEM, "fedc_model_create: out of memory");
    m->kind = kind;
    const fedc_model_options *o = options ? options : &none;
    fedc_status st = kind->arch == ARCH_TRANSFORMER ? fedc__nn_transformer_config(name, o, &m->tf) : resolve_options(m, o);
    if (!st && kind->arch == ARCH_TRANSFORMER) m->classes = (int)m->tf.vocab;
    if (!st) st = declare_params(m);
    if (st) {
        fedc_free(m);
        return st;
    }
    *out = m;
    return FEDC_OK;
}

void fedc_model_destroy(fedc_model *m) {
    if (m) fedc__nn_program_destroy(m->program);
    fedc_free(m);
}

/* The image or vector examples that options describe, then the program's
 * parameters, forward and classes checked against them. Takes spec->ctx. */
fedc_status fedc_model_create_program(fedc_model **out, const fedc_model_program *spec,
                                      const fedc_model_options *options) {
    if (out) *out = NULL;
    if (!out || !spec || !spec->name || !spec->forward) {
        if (spec && spec->destroy_ctx) spec->destroy_ctx(spec->ctx);
        return fedc_error(FEDC_EINVAL, "fedc_model_create_program: a NULL %s",
                          !out ? "out" : !spec ? "spec" : !spec->name ? "name" : "forward");
    }
    fedc_model_options none = {0};
    const fedc_model_options *o = options ? options : &none;
    fedc_model *m = fedc_calloc(1, sizeof *m);
    fedc_status st = m ? FEDC_OK : fedc_error(FEDC_ENOMEM, "fedc_model_create_program: out of memory");
    if (m) m->kind = &PROGRAM_KIND;
    if (!st && (o->hidden || o->layers || o->width || o->heads || o->context || o->sequence_length ||
                o->tied_embeddings || o->mask_eos || o->mask_oov || o->sinusoidal_positions))
        st = fedc_error(FEDC_EINVAL, "model %s: its sizes are the program's: only num_classes and the input's shape "
                        "may be set", spec->name);
    if (!st) st = check_ranges(m->kind, o);
    if (!st) st = resolve_image(m, o);
    if (st) {
        if (spec->destroy_ctx) spec->destroy_ctx(spec->ctx);
    } else {
        st = fedc__nn_program_create(spec, fedc_model_input_type(m, 1), o->num_classes, &m->params, &m->classes,
                                     &m->program);
    }
    if (st) {
        fedc_model_destroy(m);
        return st;
    }
    *out = m;
    return FEDC_OK;
}

/* ------------------------------------------------------------- inspection -- */

static bool has_param(const fedc_model *m, int i) { return m && i >= 0 && i < m->params.count; }

const char *fedc_model_name(const fedc_model *m) {
    return !m ? NULL : m->program ? fedc__nn_program_name(m->program) : m->kind->name;
}
int fedc_model_num_params(const fedc_model *m) { return m ? m->params.count : 0; }
int64_t fedc_model_size(const fedc_model *m) { return m ? m->params.size : 0; }
int fedc_model_num_classes(const fedc_model *m) { return m ? m->classes : 0; }

const char *fedc_model_param_name(const fedc_model *m, int i) {
    return has_param(m, i) ? m->params.items[i].name : NULL;
}

fedc_type fedc_model_param_type(const fedc_model *m, int i) {
    return has_param(m, i) ? m->params.items[i].type : fedc_type_scalar(FEDC_F32);
}

int64_t fedc_model_param_offset(const fedc_model *m, int i) {
    return has_param(m, i) ? m->params.items[i].offset : -1;
}

int64_t fedc_model_param_size(const fedc_model *m, int i) { return has_param(m, i) ? m->params.items[i].size : 0; }

bool fedc_model_param_is_batchnorm(const fedc_model *m, int i) { return has_param(m, i) && m->params.items[i].batchnorm; }

fedc_type fedc_model_input_type(const fedc_model *m, int64_t batch) {
    if (!m) return fedc_type_scalar(FEDC_F32);
    if (m->kind->arch == ARCH_TRANSFORMER) return fedc_type_make(FEDC_I32, 2, (int64_t[]){batch, m->tf.context});
    if (is_text(m)) return fedc_type_make(FEDC_I32, 2, (int64_t[]){batch, m->text.length});
    if (m->images) return fedc_type_make(FEDC_F32, 4, (int64_t[]){batch, m->height, m->width, m->channels});
    return fedc_type_make(FEDC_F32, 2, (int64_t[]){batch, m->input_dim});
}

fedc_type fedc_model_label_type(const fedc_model *m, int64_t batch) {
    if (m && m->kind->arch == ARCH_TRANSFORMER) return fedc_type_make(FEDC_I32, 2, (int64_t[]){batch, m->tf.context});
    if (m && is_text(m)) return fedc_type_make(FEDC_I32, 2, (int64_t[]){batch, m->text.length});
    return fedc_type_make(FEDC_I32, 1, (int64_t[]){batch});
}

/* ------------------------------------------------------------------- init -- */

fedc_status fedc_model_init(const fedc_model *m, uint64_t seed, float *params) {
    if (!m || !params) return fedc_error(FEDC_EINVAL, "fedc_model_init: %s is NULL", m ? "params" : "model");
    if (m->program) return fedc__nn_program_init(m->program, &m->params, params);
    for (int i = 0; i < m->params.count; i++) {
        const fedc__nn_param *q = &m->params.items[i];
        float *at = params + q->offset;
        if (q->init_uniform > 0)
            fedc__nn_uniform(fedc__nn_init_stream(seed, i), q->init_uniform, q->size, at);
        else if (q->init_stddev > 0)
            fedc__nn_truncated_normal(fedc__nn_init_stream(seed, i), q->init_stddev, q->size, at);
        else
            for (int64_t j = 0; j < q->size; j++) at[j] = (float)q->init_const;
    }
    return FEDC_OK;
}

/* ------------------------------------------------------------------ apply -- */

/* `v` is a value of p with want's dtype and shape (any placement). */
static fedc_status check_value(const fedc_model *m, const fedc_program *p, fedc_value v, fedc_type want,
                               const char *what) {
    if (v == FEDC_NONE) return fedc_error(FEDC_EINVAL, "model %s: %s is FEDC_NONE", fedc_model_name(m), what);
    if (v < 0 || v >= fedc_program_size(p))
        return fedc_error(FEDC_EINVAL, "model %s: %s (%%%d) is not a value of the program", fedc_model_name(m), what,
                          (int)v);
    fedc_type t = fedc_value_type(p, v);
    if (t.dtype == want.dtype && fedc_type_same_shape(&t, &want)) return FEDC_OK;
    char got[64], expected[64];
    return fedc_error(t.dtype != want.dtype ? FEDC_ETYPE : FEDC_ESHAPE, "model %s: %s is %s, expected %s",
                      fedc_model_name(m), what, fedc_type_str(&t, got, sizeof got),
                      fedc_type_str(&want, expected, sizeof expected));
}

/* The batch size is x's leading dimension; everything else is fixed by the model. */
static fedc_status check_args(const fedc_model *m, const fedc_program *p, const fedc_value *params, fedc_value x,
                              fedc_value y, fedc_value mask, fedc_value key) {
    fedc_status st;
    for (int i = 0; i < m->params.count; i++)
        if ((st = check_value(m, p, params[i], m->params.items[i].type, m->params.items[i].name))) return st;
    int64_t batch = 1;
    if (x >= 0 && x < fedc_program_size(p)) {
        fedc_type xt = fedc_value_type(p, x);
        if (xt.rank > 0 && xt.dims[0] > 0) batch = xt.dims[0];
    }
    int64_t b[1] = {batch};
    if ((st = check_value(m, p, x, fedc_model_input_type(m, batch), "x")) ||
        (st = check_value(m, p, y, fedc_model_label_type(m, batch), "y (labels)")) ||
        (st = check_value(m, p, mask, fedc_type_make(FEDC_F32, 1, b), "mask")))
        return st;
    if (key == FEDC_NONE) return FEDC_OK;
    return check_value(m, p, key, fedc_type_make(FEDC_I32, 1, (int64_t[]){4}), "dropout_key");
}

/* hk.Flatten of an image batch; vectors are already flat. */
static fedc_value flatten_input(const fedc_model *m, fedc_program *p, fedc_value x) {
    return m->images ? fedc__nn_flatten(p, x) : x;
}

static fedc_value forward_dense(const fedc_model *m, fedc_program *p, const fedc_value *w, fedc_value x) {
    fedc_value h = flatten_input(m, p, x);
    h = fedc_relu(p, fedc__nn_dense(p, h, w[0], w[1]));
    h = fedc_relu(p, fedc__nn_dense(p, h, w[2], w[3]));
    return fedc__nn_dense(p, h, w[4], w[5]);
}

/* ConvDropoutModule: conv-relu-conv-relu-maxpool-dropout-flatten-dense-relu-dropout-dense. */
static fedc_value forward_cnn(fedc_program *p, const fedc_value *w, fedc_value x, fedc_value key) {
    fedc_value h = fedc_relu(p, fedc__nn_conv(p, x, w[0], w[1]));
    h = fedc_relu(p, fedc__nn_conv(p, h, w[2], w[3]));
    h = fedc__nn_max_pool(p, h, CNN_POOL);
    h = fedc__nn_flatten(p, fedc__nn_dropout(p, h, key, 0, CNN_DROPOUT1));
    h = fedc_relu(p, fedc__nn_dense(p, h, w[4], w[5]));
    h = fedc__nn_dropout(p, h, key, 1, CNN_DROPOUT2);
    return fedc__nn_dense(p, h, w[6], w[7]);
}

/* updates: in training, for the model's state (fedc__nn_program_forward); NULL in evaluation. */
static fedc_value forward(const fedc_model *m, fedc_program *p, const fedc_value *w, fedc_value x, fedc_value mask,
                         fedc_value key, fedc_value *updates) {
    switch (m->kind->arch) {
    case ARCH_LOGISTIC: return fedc__nn_dense(p, flatten_input(m, p, x), w[0], w[1]);
    case ARCH_DENSE: return forward_dense(m, p, w, x);
    case ARCH_CNN: return forward_cnn(p, w, x, key);
    case ARCH_TRANSFORMER: return fedc__nn_transformer_forward(&m->tf, p, w, x);
    case ARCH_PROGRAM: return fedc__nn_program_forward(m->program, p, &m->params, w, x, mask, updates);
    case ARCH_CHAR_LSTM:
    case ARCH_WORD_LSTM: break; /* fedc__nn_text_apply */
    }
    return FEDC_NONE;
}

/* v [batch, ...] summed over all but its first axis: per example. */
static fedc_value per_example(fedc_program *p, fedc_value v) {
    int rank = fedc_value_type(p, v).rank;
    if (rank <= 1) return v;
    int axes[FEDC_MAX_RANK];
    for (int i = 1; i < rank; i++) axes[i - 1] = i;
    return fedc_reduce_sum(p, v, axes, rank - 1, false);
}

/* loss = sum(xent * mask) / max(sum(mask), 1): the mean over the masked-in
 * examples, and 0 (not NaN) for a batch that is all padding. */
static void heads(fedc_program *p, fedc_value logits, fedc_value y, fedc_value mask, fedc_model_outputs *out) {
    fedc_value xent = fedc_softmax_cross_entropy(p, logits, y, mask);
    fedc_value count = fedc_reduce_sum(p, mask, NULL, -1, false);
    fedc_value denom = fedc_maximum(p, count, fedc_scalar_like(p, count, 1.0));
    fedc_value hit = fedc_mul(p, fedc_cast(p, fedc_eq(p, fedc_argmax(p, logits, -1), y), FEDC_F32), mask);
    out->loss = fedc_div(p, fedc_reduce_sum(p, xent, NULL, -1, false), denom);
    out->logits = logits;
    out->correct = fedc_reduce_sum(p, hit, NULL, -1, false);
    out->count = count;
    out->example_loss = per_example(p, xent);
    out->example_correct = per_example(p, hit);
    out->example_count = per_example(p, mask);
}

/* A language model's per-token weights [batch, context]: the example's mask where
 * the label is not PAD (id 0), else 0. */
static fedc_value token_weights(const fedc_model *m, fedc_program *p, fedc_value y, fedc_value mask) {
    int64_t batch = fedc_value_type(p, y).dims[0];
    fedc_value real = fedc_cast(p, fedc_ne(p, y, fedc_scalar(p, FEDC_I32, 0)), FEDC_F32);
    (void)m;
    return fedc_mul(p, real, fedc_reshape(p, mask, 2, (int64_t[]){batch, 1}));
}

static void clear_outputs(fedc_model_outputs *out) {
    out->loss = out->logits = out->correct = out->count = FEDC_NONE;
    out->example_loss = out->example_correct = out->example_count = FEDC_NONE;
    out->updates = NULL;
}

/* The state parameters' updates (FEDC_NONE: not state) as a tree, or NULL for none. */
static fedc_tree *updates_tree(const fedc_model *m, fedc_program *p, const fedc_value *updates) {
    fedc_tree *t = NULL;
    for (int i = 0; i < m->params.count; i++)
        if (updates[i] != FEDC_NONE) {
            if (!t) t = fedc_tree_new(p);
            fedc_tree_set(p, t, m->params.items[i].name, updates[i]);
        }
    return t;
}

fedc_status fedc__model_apply(const fedc_model *m, fedc_program *p, const fedc_value *params, fedc_value x,
                              fedc_value y, fedc_value mask, fedc_value dropout_key, bool training,
                              fedc_model_outputs *out) {
    if (!m || !p || !params || !out)
        return fedc_error(FEDC_EINVAL, "fedc_model_apply: a NULL %s",
                          !m ? "model" : !p ? "program" : !params ? "params" : "out");
    clear_outputs(out);
    fedc_status st = fedc_program_status(p);
    if (st) return st;
    if ((st = check_args(m, p, params, x, y, mask, dropout_key))) return st;
    if (is_text(m)) {
        fedc__nn_text_apply(&m->text, p, params, x, y, mask, out);
    } else {
        fedc_value updates[FEDC_NN_MAX_PARAMS];
        for (int i = 0; i < m->params.count; i++) updates[i] = FEDC_NONE; /* only a program model has state */
        fedc_value logits = forward(m, p, params, x, mask, dropout_key, training ? updates : NULL);
        if (m->kind->arch == ARCH_TRANSFORMER) mask = token_weights(m, p, y, mask);
        heads(p, logits, y, mask, out);
        if (training) out->updates = updates_tree(m, p, updates);
    }
    if ((st = fedc_program_status(p))) clear_outputs(out);
    return st;
}

fedc_status fedc_model_apply(const fedc_model *m, fedc_program *p, const fedc_value *params, fedc_value x,
                             fedc_value y, fedc_value mask, fedc_value dropout_key, fedc_model_outputs *out) {
    return fedc__model_apply(m, p, params, x, y, mask, dropout_key, false, out);
}
