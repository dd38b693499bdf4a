/*
 * src/nn/transformer.c — the decoder-only transformer language model (GPT-2's
 * architecture, as llm.c's train_gpt2.c lays it out):
 *
 *     h = wte[tokens] + positions                        [batch, seq, width]
 *     for each block:  h += proj(attention(ln1(h)))       pre-LN, causal, `heads` heads
 *                      h += fc2(gelu(fc(ln2(h))))         MLP 4 x width
 *     logits = lnf(h) @ head   (head = wte^T when tied)   [batch, seq, vocab]
 *
 * Positions are learned (wpe [context, width]) or sinusoidal (a constant, as in
 * Vaswani et al. 2017). Initialisers follow GPT-2: weights N(0, 0.02) (truncated
 * at 2 sigma, as every fedc initialiser), the two residual projections of each
 * block 0.02 / sqrt(2 layers), biases 0, layer-norm gains 1.
 */
#include "nn/nn.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct preset {
    const char *name;
    fedc__nn_transformer config;
} preset;

/* Presets from a test-sized model to GPT-2-small-sized (parameter counts in
 * docs/models.md; the vocabulary defaults to Stack Overflow's 10,004 ids, except
 * tiny, which uses Shakespeare's 90 characters). */
static const preset PRESETS[] = {
    {"tiny", {2, 32, 2, 16, 90, false, false}},
    {"small", {6, 256, 4, 128, 10004, false, false}},
    {"medium", {8, 512, 8, 256, 10004, false, false}},
    {"base", {12, 768, 12, 512, 10004, false, false}},
};
enum { NPRESETS = sizeof PRESETS / sizeof PRESETS[0] };

enum { MAX_LAYERS = (FEDC_NN_MAX_PARAMS - 5) / 12, MAX_WIDTH = 1 << 14, MAX_CONTEXT = 1 << 14 };
#define LN_EPS 1e-5
#define INIT_STD 0.02

static fedc_status bad_preset(const char *name) {
    char list[96] = "";
    for (int i = 0; i < NPRESETS; i++) {
        if (i) strncat(list, ", ", sizeof list - strlen(list) - 1);
        strncat(list, PRESETS[i].name, sizeof list - strlen(list) - 1);
    }
    return fedc_error(FEDC_EINVAL, "model transformer: unknown preset \"%s\"; the presets are %s", name, list);
}

static fedc_status check_size(const char *field, int64_t v, int64_t max) {
    if (v >= 1 && v <= max) return FEDC_OK;
    return fedc_error(FEDC_EINVAL, "model transformer: %s = %lld is outside [1, %lld]", field, (long long)v,
                      (long long)max);
}

/* "transformer" (the small preset) or "transformer:<preset>", then the options'
 * non-zero sizes override the preset's. */
fedc_status fedc__nn_transformer_config(const char *name, const fedc_model_options *o, fedc__nn_transformer *out) {
    const char *colon = strchr(name, ':'), *which = colon ? colon + 1 : "small";
    const preset *ps = NULL;
    for (int i = 0; i < NPRESETS; i++)
        if (!strcmp(PRESETS[i].name, which)) ps = &PRESETS[i];
    if (!ps) return bad_preset(which);
    fedc__nn_transformer c = ps->config;
    if (o->layers) c.layers = o->layers;
    if (o->width) c.width = o->width;
    if (o->heads) c.heads = o->heads;
    if (o->context) c.context = o->context;
    if (o->num_classes) c.vocab = o->num_classes;
    c.tied = o->tied_embeddings;
    c.sinusoidal = o->sinusoidal_positions;
    fedc_status st;
    if ((st = check_size("layers", c.layers, MAX_LAYERS)) || (st = check_size("width", c.width, MAX_WIDTH)) ||
        (st = check_size("heads", c.heads, c.width)) || (st = check_size("context", c.context, MAX_CONTEXT)) ||
        (st = check_size("vocab (num_classes)", c.vocab, INT32_MAX)))
        return st;
    if (c.width % c.heads)
        return fedc_error(FEDC_EINVAL, "model transformer: width %lld is not a multiple of heads %lld",
                          (long long)c.width, (long long)c.heads);
    if (c.sinusoidal && c.width % 2)
        return fedc_error(FEDC_EINVAL, "model transformer: sinusoidal positions need an even width, got %lld",
                          (long long)c.width);
    if (o->input_height || o->input_width || o->input_channels || o->input_dim || o->hidden)
        return fedc_error(FEDC_EINVAL, "model transformer takes token sequences: set layers, width, heads, context "
                          "and num_classes (the vocabulary), not image or vector sizes");
    *out = c;
    return FEDC_OK;
}

int64_t fedc__nn_transformer_param_count(const fedc__nn_transformer *c) {
    int64_t w = c->width;
    int64_t block = 12 * w * w + 13 * w; /* ln1, qkv, proj, ln2, fc, fc2 with biases */
    return c->vocab * w + (c->sinusoidal ? 0 : c->context * w) + c->layers * block + 2 * w + (c->tied ? 0 : w * c->vocab);
}

/* ------------------------------------------------------------ declare -- */

static fedc_status declare_ln(fedc__nn_params *ps, const char *layer, int64_t w) {
    fedc_status st = fedc__nn_declare_param(ps, layer, "g", 1, (int64_t[]){w}, 0.0, 1.0);
    return st ? st : fedc__nn_declare_param(ps, layer, "b", 1, (int64_t[]){w}, 0.0, 0.0);
}

static fedc_status declare_linear(fedc__nn_params *ps, const char *layer, int64_t in, int64_t out, double std) {
    fedc_status st = fedc__nn_declare_param(ps, layer, "w", 2, (int64_t[]){in, out}, std, 0.0);
    return st ? st : fedc__nn_declare_param(ps, layer, "b", 1, (int64_t[]){out}, 0.0, 0.0);
}

/* Order: wte, [wpe], per block h<i>/{ln1 g b, qkv w b, proj w b, ln2 g b, fc w b,
 * fc2 w b}, lnf g b, [head w]. */
fedc_status fedc__nn_transformer_declare(const fedc__nn_transformer *c, fedc__nn_params *ps) {
    int64_t w = c->width;
    double resid_std = INIT_STD / sqrt(2.0 * (double)c->layers);
    fedc_status st = fedc__nn_declare_param(ps, "wte", "w", 2, (int64_t[]){c->vocab, w}, INIT_STD, 0.0);
    if (!st && !c->sinusoidal) st = fedc__nn_declare_param(ps, "wpe", "w", 2, (int64_t[]){c->context, w}, INIT_STD / 2, 0.0);
    for (int64_t l = 0; !st && l < c->layers; l++) {
        char name[6][24];
        const char *parts[6] = {"ln1", "qkv", "proj", "ln2", "fc", "fc2"};
        for (int i = 0; i < 6; i++) snprintf(name[i], sizeof name[i], "h%lld/%s", (long long)l, parts[i]);
        if ((st = declare_ln(ps, name[0], w)) || (st = declare_linear(ps, name[1], w, 3 * w, INIT_STD)) ||
            (st = declare_linear(ps, name[2], w, w, resid_std)) || (st = declare_ln(ps, name[3], w)) ||
            (st = declare_linear(ps, name[4], w, 4 * w, INIT_STD)) ||
            (st = declare_linear(ps, name[5], 4 * w, w, resid_std)))
            break;
    }
    if (!st) st = declare_ln(ps, "lnf", w);
    if (!st && !c->tied) st = fedc__nn_declare_param(ps, "head", "w", 2, (int64_t[]){w, c->vocab}, INIT_STD, 0.0);
    return st;
}

/* ------------------------------------------------------------ forward -- */

/* pe[t, 2i] = sin(t / 10000^(2i / width)), pe[t, 2i + 1] = cos(the same). */
static fedc_value sinusoid(fedc_program *p, int64_t context, int64_t width) {
    float *pe = malloc((size_t)(context * width) * sizeof *pe);
    if (!pe) return fedc_program_fail(p, FEDC_ENOMEM, "model transformer: out of memory for positions");
    for (int64_t t = 0; t < context; t++)
        for (int64_t i = 0; i < width; i += 2) {
            double angle = (double)t / pow(10000.0, (double)i / (double)width);
            pe[t * width + i] = (float)sin(angle);
            pe[t * width + i + 1] = (float)cos(angle);
        }
    fedc_value v = fedc_constant(p, fedc_type_make(FEDC_F32, 2, (int64_t[]){context, width}), pe);
    free(pe);
    return v;
}

/* x [batch, seq, in] @ w [in, out] + b: one GEMM over all positions. */
static fedc_value linear(fedc_program *p, fedc_value x, const fedc_value *wb) {
    return fedc_add(p, fedc_matmul(p, x, wb[0], false, false), wb[1]);
}

/* One pre-LN block; w points at its 12 parameters. */
static fedc_value block(const fedc__nn_transformer *c, fedc_program *p, const fedc_value *w, fedc_value h) {
    fedc_value a = fedc_layer_norm(p, h, w[0], w[1], LN_EPS);
    fedc_value att = fedc_causal_attention(p, linear(p, a, w + 2), (int)c->heads);
    h = fedc_add(p, h, linear(p, att, w + 4));
    a = fedc_layer_norm(p, h, w[6], w[7], LN_EPS);
    return fedc_add(p, h, linear(p, fedc_gelu(p, linear(p, a, w + 8)), w + 10));
}

fedc_value fedc__nn_transformer_forward(const fedc__nn_transformer *c, fedc_program *p, const fedc_value *w,
                                       fedc_value tokens) {
    int at = 0;
    fedc_value wte = w[at++];
    fedc_value h = fedc_gather(p, wte, tokens);
    h = fedc_add(p, h, c->sinusoidal ? sinusoid(p, c->context, c->width) : w[at++]);
    for (int64_t l = 0; l < c->layers; l++, at += 12) h = block(c, p, w + at, h);
    h = fedc_layer_norm(p, h, w[at], w[at + 1], LN_EPS);
    at += 2;
    return c->tied ? fedc_matmul(p, h, wte, false, true) : fedc_matmul(p, h, w[at], false, false);
}
