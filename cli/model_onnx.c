/*
 * The "onnx:" models of fedc train and fedc eval (--model onnx:FILE.onnx): an
 * ONNX file imported by libfedc_formats (fedc_program_from_onnx) and handed to
 * libfedc as a model whose forward is the imported program
 * (fedc_model_create_program). The CLI joins the two because libfedc's models
 * know no file format and libfedc_formats knows no models (tests/module_deps.sh).
 * The file is imported again for each batch size the trainer applies the model
 * at: a program's shapes are static, and the graph's symbolic batch takes it.
 * A model with BatchNormalization is imported a second way for training, in its
 * training form (batch statistics, the running ones updated), unless
 * frozen_batchnorm keeps the inference form, its running statistics as they are.
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "fedc/fedc.h"
#ifdef FEDC_HAVE_FORMATS
#include "fedc/formats.h"

typedef struct onnx_source {
    char *path;
    fedc_onnx_batchnorm batchnorm; /* of the training forward */
} onnx_source;

static void source_free(void *ctx) {
    onnx_source *s = ctx;
    if (s) fedc_free(s->path);
    fedc_free(s);
}

/* The graph's one input must be the examples, batch first; the rest are the
 * parameters the importer appended (and the training form's mask). */
static fedc_status import(const char *path, int64_t batch, fedc_onnx_batchnorm bn, fedc_onnx_model **out) {
    fedc_status st = fedc_program_from_onnx(path, &(fedc_onnx_options){.batch = batch, .batchnorm = bn}, out);
    if (st) return st;
    const fedc_program *f = (*out)->program;
    int graph_inputs = fedc_program_num_inputs(f) - (*out)->num_params - (bn != FEDC_ONNX_BATCHNORM_INFERENCE);
    fedc_type xt = graph_inputs == 1 ? fedc_value_type(f, fedc_program_input(f, 0)) : fedc_type_scalar(FEDC_F32);
    if (graph_inputs != 1)
        st = fedc_error(FEDC_EUNSUPPORTED, "model onnx:%s: its graph has %d inputs; a model to train takes one (the "
                        "examples)", path, graph_inputs);
    else if (xt.rank < 1 || xt.dims[0] != batch)
        st = fedc_error(FEDC_ESHAPE, "model onnx:%s: its input %s has no batch dimension of its own (its first "
                        "dimension is fixed; export it with a dynamic batch axis, torch.onnx.export's dynamic_axes)",
                        path, fedc_program_input_name(f, 0));
    if (st) {
        fedc_onnx_model_destroy(*out);
        *out = NULL;
    }
    return st;
}

static fedc_status build(const onnx_source *s, int64_t batch, fedc_onnx_batchnorm bn, fedc_program **out) {
    fedc_onnx_model *om = NULL;
    fedc_status st = import(s->path, batch, bn, &om);
    if (st) return st;
    *out = om->program;
    om->program = NULL; /* the caller's now */
    fedc_onnx_model_destroy(om);
    return FEDC_OK;
}

static fedc_status forward(void *ctx, int64_t batch, fedc_program **out) {
    return build(ctx, batch, FEDC_ONNX_BATCHNORM_INFERENCE, out);
}

static fedc_status forward_train(void *ctx, int64_t batch, fedc_program **out) {
    const onnx_source *s = ctx;
    return build(s, batch, s->batchnorm, out);
}

/* Whether the graph has state that training updates (a BatchNorm's running
 * statistics): else the training forward is the forward. */
static fedc_status has_state(const char *path, fedc_onnx_batchnorm bn, bool *out) {
    fedc_onnx_model *om = NULL;
    fedc_status st = import(path, 1, bn, &om);
    *out = false;
    for (int i = 0; !st && i < fedc_program_num_outputs(om->program); i++)
        *out = *out || !strncmp(fedc_program_output_name(om->program, i), "update/", 7);
    fedc_onnx_model_destroy(om);
    return st;
}

static fedc_status load(const char *path, const fedc_model_options *o, fedc_model **out) {
    fedc_onnx_model *om = NULL;
    fedc_onnx_batchnorm bn = o && o->frozen_batchnorm ? FEDC_ONNX_BATCHNORM_FROZEN : FEDC_ONNX_BATCHNORM_TRAINING;
    bool state = false;
    fedc_status st = import(path, 1, FEDC_ONNX_BATCHNORM_INFERENCE, &om);
    if (!st) st = has_state(path, bn, &state);
    if (st) return fedc_onnx_model_destroy(om), st;
    onnx_source *s = fedc_calloc(1, sizeof *s);
    size_t len = strlen(path);
    char *name = fedc_malloc(len + 6);
    const char **names = fedc_calloc((size_t)om->num_params + 1, sizeof *names);
    const float **values = fedc_calloc((size_t)om->num_params + 1, sizeof *values);
    if (s) s->path = fedc_malloc(len + 1);
    if (!s || !s->path || !name || !names || !values) {
        st = fedc_error(FEDC_ENOMEM, "model onnx:%s: out of memory", path);
        source_free(s);
    } else {
        memcpy(s->path, path, len + 1);
        s->batchnorm = bn;
        snprintf(name, len + 6, "onnx:%s", path);
        for (int i = 0; i < om->num_params; i++) {
            names[i] = om->param_values[i].name;
            values[i] = om->param_values[i].data;
        }
        fedc_model_program spec = {.name = name, .forward = forward, .ctx = s, .destroy_ctx = source_free,
                                   .num_params = om->num_params, .param_names = names, .param_values = values,
                                   .forward_train = state ? forward_train : NULL,
                                   .param_batchnorm = om->param_batchnorm};
        st = fedc_model_create_program(out, &spec, o);
    }
    fedc_free(values);
    fedc_free(names);
    fedc_free(name);
    fedc_onnx_model_destroy(om);
    return st;
}

void cli_register_onnx_models(void) { fedc_model_register_loader("onnx", load); }

/* ------------------------------------------------------ --export-onnx -- */

/* OUT's safetensors beside it: OUT.onnx -> OUT.safetensors, else OUT + ".safetensors". */
static void safetensors_path(const char *out, char *buf, size_t size) {
    size_t len = strlen(out);
    if (len > 5 && !strcmp(out + len - 5, ".onnx")) len -= 5;
    snprintf(buf, size, "%.*s.safetensors", (int)len, out);
}

/* The model's parameters, by their ONNX names, out of the checkpoint (whose
 * server state, under server/, is not the model's). */
static fedc_status trained(const fedc_onnx_model *om, const fedc_safetensors *ckpt, fedc_tensor_entry *e) {
    for (int i = 0; i < om->num_params; i++) {
        fedc_status st = fedc_safetensors_find(ckpt, om->param_values[i].name, &e[i]);
        if (st) return st;
        if (!fedc_type_same_shape(&e[i].type, &om->param_values[i].type) || e[i].type.dtype != om->param_values[i].type.dtype)
            return fedc_error(FEDC_ESHAPE, "the checkpoint's %s is not the model's parameter of that name", e[i].name);
    }
    return FEDC_OK;
}

int cli_export_onnx(const char *model, const char *out_dir, const char *out) {
    char ckpt_path[4096], st_path[4096];
    snprintf(ckpt_path, sizeof ckpt_path, "%s/checkpoint.safetensors", out_dir);
    safetensors_path(out, st_path, sizeof st_path);
    fedc_onnx_model *om = NULL;
    fedc_safetensors *ckpt = NULL;
    fedc_tensor_entry *e = NULL;
    fedc_status st = fedc_program_from_onnx(model, &(fedc_onnx_options){.batch = 1}, &om);
    if (!st) st = fedc_safetensors_read(ckpt_path, &ckpt);
    if (!st && !(e = fedc_calloc((size_t)om->num_params + 1, sizeof *e))) st = fedc_error(FEDC_ENOMEM, "out of memory");
    if (!st) st = trained(om, ckpt, e);
    /* the safetensors' data must be aligned for no reader: fedc_safetensors_write copies */
    if (!st) st = fedc_onnx_write_params(model, out, e, om->num_params);
    if (!st) st = fedc_safetensors_write(st_path, e, om->num_params, NULL, 0);
    if (st) fprintf(stderr, "fedc train: --export-onnx %s: %s\n", out, fedc_errmsg());
    else printf("exported: %s (ONNX), %s (PyTorch's state_dict names)\n", out, st_path);
    fedc_free(e);
    fedc_safetensors_destroy(ckpt);
    fedc_onnx_model_destroy(om);
    return st ? CLI_FAILED : CLI_OK;
}
#else
void cli_register_onnx_models(void) {}

int cli_export_onnx(const char *model, const char *out_dir, const char *out) {
    (void)model, (void)out_dir;
    fprintf(stderr, "fedc train: --export-onnx %s: this fedc was built without libfedc_formats (FEDC_FORMATS=OFF)\n", out);
    return CLI_FAILED;
}
#endif
