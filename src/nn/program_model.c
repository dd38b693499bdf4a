/*
 * src/nn/program_model.c — models whose forward pass is a program made elsewhere
 * (fedc_model_create_program): an imported ONNX model, which the fedc CLI
 * (cli/model_onnx.c, with libfedc_formats's importer) hands over through the
 * loader it registers for "onnx:". nn knows no file format: the loader builds
 * the forward for a batch size, and this file checks
 * it against the task's examples and classes, declares its parameters under the
 * program's names and inlines it into the programs that train and evaluate it.
 *
 * The forward is built again for every batch size it is applied at, because a
 * program's types are static and the trainer applies the model at its training
 * and its evaluation batch.
 */
#include "nn/nn.h"

#include <stdio.h>
#include <string.h>

struct fedc__nn_program {
    char *name;
    fedc_model_forward_fn forward, forward_train;
    void *ctx;
    void (*destroy_ctx)(void *ctx);
    float *init; /* the initial values, in the parameter table's layout */
};

/* How the task's examples reach the program's input. */
typedef enum layout { LAYOUT_SAME, LAYOUT_NCHW, LAYOUT_RESHAPE, LAYOUT_NONE } layout;

/* NHWC images go to a [batch, C, H, W] input transposed (PyTorch's layout);
 * any other input of as many elements per example takes them reshaped (row
 * major: a flattened image, or an image of a vector). */
static layout layout_of(const fedc_type *x, const fedc_type *want) {
    if (want->dtype != FEDC_F32) return LAYOUT_NONE;
    if (fedc_type_same_shape(x, want)) return LAYOUT_SAME;
    if (x->rank == 4 && want->rank == 4 && want->dims[0] == x->dims[0] && want->dims[1] == x->dims[3] &&
        want->dims[2] == x->dims[1] && want->dims[3] == x->dims[2])
        return LAYOUT_NCHW;
    if (want->rank >= 1 && want->dims[0] == x->dims[0] && fedc_type_count(x) == fedc_type_count(want))
        return LAYOUT_RESHAPE;
    return LAYOUT_NONE;
}

static fedc_value feed(fedc_program *p, fedc_value x, const fedc_type *want) {
    fedc_type xt = fedc_value_type(p, x);
    switch (layout_of(&xt, want)) {
    case LAYOUT_SAME: return x;
    case LAYOUT_NCHW: return fedc_transpose(p, x, (int[]){0, 3, 1, 2});
    case LAYOUT_RESHAPE: return fedc_reshape(p, x, want->rank, want->dims);
    case LAYOUT_NONE: break;
    }
    return fedc_program_fail(p, FEDC_ESHAPE, "model: the program's input does not take the examples");
}

static fedc_status build(const fedc__nn_program *g, int64_t batch, bool training, fedc_program **out) {
    *out = NULL;
    fedc_status st = (training ? g->forward_train : g->forward)(g->ctx, batch, out);
    if (st) return st;
    if (!*out) return fedc_error(FEDC_EINTERNAL, "model %s: the forward builder made no program", g->name);
    return FEDC_OK;
}

/* The forward's interface: x, then n parameters; its first output the logits. */
static fedc_status check_forward(const fedc__nn_program *g, const fedc_program *f, fedc_type example, int want_classes,
                                 int *classes) {
    char got[64], ex[64];
    if (fedc_program_num_inputs(f) < 1 || fedc_program_num_outputs(f) < 1)
        return fedc_error(FEDC_EINVAL, "model %s: the program needs an input (the examples) and an output (the logits)",
                          g->name);
    fedc_type xt = fedc_value_type(f, fedc_program_input(f, 0));
    if (layout_of(&example, &xt) == LAYOUT_NONE)
        return fedc_error(FEDC_ESHAPE, "model %s: its input %s (%s) does not take the task's examples %s", g->name,
                          fedc_program_input_name(f, 0), fedc_type_str(&xt, got, sizeof got),
                          fedc_type_str(&example, ex, sizeof ex));
    fedc_type yt = fedc_value_type(f, fedc_program_output_value(f, 0));
    if (yt.dtype != FEDC_F32 || yt.rank != 2 || yt.dims[0] != 1)
        return fedc_error(FEDC_ESHAPE, "model %s: its output %s is %s at batch 1, not logits f32[1, classes]", g->name,
                          fedc_program_output_name(f, 0), fedc_type_str(&yt, got, sizeof got));
    if (want_classes && yt.dims[1] != want_classes)
        return fedc_error(FEDC_ESHAPE, "model %s: its output %s has %lld classes, but the task's labels have %d",
                          g->name, fedc_program_output_name(f, 0), (long long)yt.dims[1], want_classes);
    if (yt.dims[1] < 1 || yt.dims[1] > (1 << 20))
        return fedc_error(FEDC_ESHAPE, "model %s: its output has %lld classes", g->name, (long long)yt.dims[1]);
    *classes = (int)yt.dims[1];
    return FEDC_OK;
}

static fedc_status declare(const fedc_model_program *spec, const fedc_program *f, fedc__nn_params *ps) {
    if (spec->num_params < 0 || fedc_program_num_inputs(f) != 1 + spec->num_params)
        return fedc_error(FEDC_EINVAL, "model %s: the program has %d inputs, but x and %d parameters make %d",
                          spec->name, fedc_program_num_inputs(f), spec->num_params, 1 + spec->num_params);
    if (spec->num_params > FEDC_NN_MAX_PARAMS)
        return fedc_error(FEDC_EINVAL, "model %s: %d parameter tensors, more than %d", spec->name, spec->num_params,
                          FEDC_NN_MAX_PARAMS);
    for (int i = 0; i < spec->num_params; i++) {
        fedc__nn_param *q = &ps->items[i];
        const char *name = spec->param_names[i];
        if (!name || !name[0] || strlen(name) >= sizeof q->name)
            return fedc_error(FEDC_EINVAL, "model %s: parameter %d's name is empty or longer than %zu bytes",
                              spec->name, i, sizeof q->name - 1);
        strcpy(q->name, name);
        q->batchnorm = spec->param_batchnorm && spec->param_batchnorm[i];
        q->type = fedc_value_type(f, fedc_program_input(f, 1 + i));
        q->type.placement = FEDC_LOCAL;
        if (q->type.dtype != FEDC_F32)
            return fedc_error(FEDC_ETYPE, "model %s: parameter %s is not f32", spec->name, name);
        q->size = fedc_type_count(&q->type);
        q->offset = ps->size;
        ps->size += q->size;
        ps->count++;
    }
    return FEDC_OK;
}

/* The training forward's interface: the forward's inputs and "mask"; its first
 * output the forward's, then update/<param> of a parameter's type for each
 * state parameter. */
static fedc_status check_train(const fedc__nn_program *g, const fedc__nn_params *ps, const fedc_program *f,
                               const fedc_program *t) {
    int n = fedc_program_num_inputs(f);
    bool ok = fedc_program_num_inputs(t) == n + 1 && fedc_program_num_outputs(t) >= 1;
    for (int i = 0; ok && i < n; i++) {
        fedc_type a = fedc_value_type(f, fedc_program_input(f, i)), b = fedc_value_type(t, fedc_program_input(t, i));
        ok = fedc_type_same_shape(&a, &b) && a.dtype == b.dtype;
    }
    fedc_type mt = ok ? fedc_value_type(t, fedc_program_input(t, n)) : fedc_type_scalar(FEDC_F32);
    if (!ok || strcmp(fedc_program_input_name(t, n), "mask") || mt.rank != 1 || mt.dims[0] != 1 || mt.dtype != FEDC_F32)
        return fedc_error(FEDC_EINVAL, "model %s: its training forward does not take the forward's inputs and a mask "
                          "f32[batch]", g->name);
    for (int k = 1; k < fedc_program_num_outputs(t); k++) {
        const char *name = fedc_program_output_name(t, k);
        if (strncmp(name, "update/", 7)) continue;
        int i = 0;
        while (i < ps->count && strcmp(ps->items[i].name, name + 7)) i++;
        fedc_type ut = fedc_value_type(t, fedc_program_output_value(t, k));
        if (i == ps->count || !fedc_type_same_shape(&ut, &ps->items[i].type) || ut.dtype != FEDC_F32)
            return fedc_error(FEDC_EINVAL, "model %s: its training forward's output %s is no parameter's new value",
                              g->name, name);
    }
    return FEDC_OK;
}

static fedc_status copy_init(const fedc_model_program *spec, const fedc__nn_params *ps, fedc__nn_program *g) {
    g->init = fedc_malloc((size_t)(ps->size ? ps->size : 1) * sizeof *g->init);
    if (!g->init) return fedc_error(FEDC_ENOMEM, "model %s: out of memory for its parameters", spec->name);
    for (int i = 0; i < ps->count; i++) {
        if (!spec->param_values || !spec->param_values[i])
            return fedc_error(FEDC_EINVAL, "model %s: parameter %s has no initial value", spec->name, ps->items[i].name);
        memcpy(g->init + ps->items[i].offset, spec->param_values[i], (size_t)ps->items[i].size * sizeof *g->init);
    }
    return FEDC_OK;
}

fedc_status fedc__nn_program_create(const fedc_model_program *spec, fedc_type example, int want_classes,
                                   fedc__nn_params *ps, int *classes, fedc__nn_program **out) {
    *out = NULL;
    fedc__nn_program *g = fedc_calloc(1, sizeof *g);
    size_t len = strlen(spec->name);
    if (g) g->name = fedc_malloc(len + 1);
    if (!g || !g->name) {
        if (spec->destroy_ctx) spec->destroy_ctx(spec->ctx);
        fedc_free(g);
        return fedc_error(FEDC_ENOMEM, "model %s: out of memory", spec->name);
    }
    memcpy(g->name, spec->name, len + 1);
    g->forward = spec->forward;
    g->forward_train = spec->forward_train;
    g->ctx = spec->ctx;
    g->destroy_ctx = spec->destroy_ctx;
    fedc_program *f = NULL, *t = NULL;
    fedc_status st = build(g, 1, false, &f);
    if (!st) st = declare(spec, f, ps);
    if (!st) st = check_forward(g, f, example, want_classes, classes);
    if (!st && g->forward_train && !(st = build(g, 1, true, &t))) st = check_train(g, ps, f, t);
    if (!st) st = copy_init(spec, ps, g);
    fedc_program_destroy(t);
    fedc_program_destroy(f);
    if (st) {
        fedc__nn_program_destroy(g);
        return st;
    }
    *out = g;
    return FEDC_OK;
}

void fedc__nn_program_destroy(fedc__nn_program *g) {
    if (!g) return;
    if (g->destroy_ctx) g->destroy_ctx(g->ctx);
    fedc_free(g->init);
    fedc_free(g->name);
    fedc_free(g);
}

const char *fedc__nn_program_name(const fedc__nn_program *g) { return g->name; }

/* The file's values, whatever the seed: the model starts where its author left it. */
fedc_status fedc__nn_program_init(const fedc__nn_program *g, const fedc__nn_params *ps, float *params) {
    memcpy(params, g->init, (size_t)ps->size * sizeof *params);
    return FEDC_OK;
}

/* The training forward's updates into updates[] (FEDC_NONE already), by parameter name. */
static void take_updates(const fedc_program *f, const fedc__nn_params *ps, const fedc_value *all, fedc_value *updates) {
    for (int k = 1; k < fedc_program_num_outputs(f); k++) {
        const char *name = fedc_program_output_name(f, k);
        for (int i = 0; !strncmp(name, "update/", 7) && i < ps->count; i++)
            if (!strcmp(ps->items[i].name, name + 7)) updates[i] = all[k];
    }
}

fedc_value fedc__nn_program_forward(const fedc__nn_program *g, fedc_program *p, const fedc__nn_params *ps,
                                   const fedc_value *w, fedc_value x, fedc_value mask, fedc_value *updates) {
    int64_t batch = fedc_value_type(p, x).dims[0];
    bool training = updates && g->forward_train;
    fedc_program *f = NULL;
    fedc_status st = build(g, batch, training, &f);
    char why[512]; /* fedc_errmsg's buffer is where fedc_program_fail writes */
    if (st) return snprintf(why, sizeof why, "%s", fedc_errmsg()), fedc_program_fail(p, st, "%s", why);
    fedc_value args[2 + FEDC_NN_MAX_PARAMS];
    fedc_type want = fedc_value_type(f, fedc_program_input(f, 0));
    args[0] = feed(p, x, &want);
    for (int i = 0; i < ps->count; i++) args[1 + i] = w[i];
    if (training) args[1 + ps->count] = mask;
    fedc_value logits = FEDC_NONE;
    /* inline writes every output; the model takes the first (and the updates) */
    fedc_value *all = fedc_malloc((size_t)fedc_program_num_outputs(f) * sizeof *all);
    if (!all) st = fedc_error(FEDC_ENOMEM, "model %s: out of memory", g->name);
    if (!st && !(st = fedc_program_inline(p, f, args, all))) {
        logits = all[0];
        if (training) take_updates(f, ps, all, updates);
    }
    fedc_free(all);
    fedc_program_destroy(f);
    if (st) return snprintf(why, sizeof why, "%s", fedc_errmsg()), fedc_program_fail(p, st, "model %s: %s", g->name, why);
    return logits;
}

/* ---------------------------------------------------------------- loaders -- */

enum { MAX_LOADERS = 4, MAX_PREFIX = 16 };
static struct {
    char prefix[MAX_PREFIX];
    fedc_model_loader load;
} loaders[MAX_LOADERS];

/* The prefix of "PREFIX:REST" (its length), or 0. */
static size_t prefix_len(const char *name) {
    const char *colon = strchr(name, ':');
    return colon && colon > name && (size_t)(colon - name) < MAX_PREFIX ? (size_t)(colon - name) : 0;
}

static int loader_of(const char *name) {
    size_t len = prefix_len(name);
    for (int i = 0; len && i < MAX_LOADERS; i++)
        if (loaders[i].load && strlen(loaders[i].prefix) == len && !strncmp(loaders[i].prefix, name, len)) return i;
    return -1;
}

fedc_status fedc_model_register_loader(const char *prefix, fedc_model_loader load) {
    if (!prefix || !load || !prefix[0] || strlen(prefix) >= MAX_PREFIX || strchr(prefix, ':'))
        return fedc_error(FEDC_EINVAL, "fedc_model_register_loader: the prefix must be 1 to %d characters without ':'",
                          MAX_PREFIX - 1);
    int free_slot = -1;
    for (int i = 0; i < MAX_LOADERS; i++) {
        if (loaders[i].load && !strcmp(loaders[i].prefix, prefix)) free_slot = i;
        if (!loaders[i].load && free_slot < 0) free_slot = i;
    }
    if (free_slot < 0) return fedc_error(FEDC_EINVAL, "fedc_model_register_loader: %d loaders already", MAX_LOADERS);
    strcpy(loaders[free_slot].prefix, prefix);
    loaders[free_slot].load = load;
    return FEDC_OK;
}

bool fedc_model_name_is_loaded(const char *name) {
    if (!name) return false;
    return loader_of(name) >= 0 || (prefix_len(name) == 4 && !strncmp(name, "onnx", 4));
}

fedc_status fedc__nn_load(const char *name, const fedc_model_options *o, fedc_model **out) {
    int i = loader_of(name);
    if (i < 0)
        return fedc_error(FEDC_EUNSUPPORTED, "model %s: no loader of \"onnx:\" models is registered (the fedc CLI "
                          "built with libfedc_formats has one; fedc_model_register_loader)", name);
    return loaders[i].load(name + strlen(loaders[i].prefix) + 1, o, out);
}
