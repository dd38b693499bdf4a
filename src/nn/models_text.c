/*
 * src/nn/models_text.c — FedJAX's language models (fedjax/models/shakespeare.py
 * and stackoverflow.py, create_lstm_model) and their masked sequence heads.
 *
 *   Shakespeare: Embed(90, 8) -> [LSTM(256), tanh] x 2 -> Linear(90)
 *   Stack Overflow: Embed(10004, 96) -> LSTM(670), tanh, Linear(96) -> Linear(10004),
 *     or with tied embeddings the output is (.) @ Embed^T + a bias [10004].
 *
 * Both run time-major (FedJAX transposes x to [T, B] first): the embedding rows of
 * x^T, one lstm op per layer, and the dense layers on [T * B, .] rows. The heads
 * follow FedJAX's metrics with masked_target_values: a target token counts when it
 * is not PAD (nor EOS / OOV when asked) and its example is real (mask 1). The loss
 * is the mean cross-entropy over the counted tokens (SequenceTokenCrossEntropyLoss);
 * FedJAX's train_loss averages per sequence instead, which weights short sequences
 * more, docs/models.md says where that matters.
 */
#include "nn/nn.h"

#include <string.h>

#include "fedc/tasks.h"

/* FedJAX's sizes. */
enum { CHAR_EMBED = 8, CHAR_HIDDEN = 256, CHAR_LAYERS = 2, WORD_EMBED = 96, WORD_HIDDEN = 670 };
#define MAX_TEXT_UNITS ((int64_t)1 << 20)

fedc_status fedc__nn_text_configure(fedc__nn_text *t, const char *name, bool word, const fedc_model_options *o) {
    if (o->input_height || o->input_width || o->input_channels || o->input_dim)
        return fedc_error(FEDC_EINVAL, "model %s takes token ids: set sequence_length, not an input shape", name);
    if (o->sequence_length < 0 || o->sequence_length > FEDC_TASK_MAX_LENGTH)
        return fedc_error(FEDC_EINVAL, "model %s: sequence_length = %d is outside [0, %d] (0 means the default)", name,
                          o->sequence_length, FEDC_TASK_MAX_LENGTH);
    if (o->num_classes < 0 || o->num_classes == 1 || o->num_classes > MAX_TEXT_UNITS || o->hidden < 0 ||
        o->hidden > MAX_TEXT_UNITS)
        return fedc_error(FEDC_EINVAL, "model %s: num_classes = %d or hidden = %d is out of range", name,
                          o->num_classes, o->hidden);
    if (o->tied_embeddings && !word)
        return fedc_error(FEDC_EINVAL, "model %s has no tied embeddings (stackoverflow_lstm has)", name);
    memset(t, 0, sizeof *t);
    t->word = word;
    t->vocab = o->num_classes ? o->num_classes
                              : word ? FEDC_STACKOVERFLOW_VOCAB_SIZE + 4 : FEDC_SHAKESPEARE_VOCAB_SIZE;
    t->embed = word ? WORD_EMBED : CHAR_EMBED;
    t->hidden = o->hidden ? o->hidden : word ? WORD_HIDDEN : CHAR_HIDDEN;
    t->layers = word ? 1 : CHAR_LAYERS;
    t->length = o->sequence_length ? o->sequence_length
                                   : word ? FEDC_STACKOVERFLOW_MAX_LENGTH : FEDC_SHAKESPEARE_SEQUENCE_LENGTH;
    t->tied = o->tied_embeddings;
    t->mask_eos = o->mask_eos;
    t->mask_oov = o->mask_oov;
    return FEDC_OK;
}

/* Order: embed, lstm1 (w, b), [lstm2 (w, b)], [project (w, b)], output (w, b) or
 * the tied output's bias. */
fedc_status fedc__nn_text_declare(const fedc__nn_text *t, fedc__nn_params *ps) {
    fedc_status st = fedc__nn_declare_embedding(ps, "embed", t->vocab, t->embed);
    int64_t in = t->embed;
    for (int64_t l = 0; !st && l < t->layers; l++) {
        char name[16];
        snprintf(name, sizeof name, "lstm%d", (int)l + 1);
        st = fedc__nn_declare_lstm(ps, name, in, t->hidden);
        in = t->hidden;
    }
    if (!st && t->word) st = fedc__nn_declare_dense(ps, "project", t->hidden, t->embed), in = t->embed;
    if (st) return st;
    if (t->tied) return fedc__nn_declare(ps, "output", "b", 1, (int64_t[]){t->vocab}, 0.0);
    return fedc__nn_declare_dense(ps, "output", in, t->vocab);
}

/* Time-major logits [T, B, vocab] of x [B, T]. */
static fedc_value forward(const fedc__nn_text *t, fedc_program *p, const fedc_value *w, fedc_value x, int64_t B) {
    int64_t T = t->length;
    fedc_value h = fedc_gather(p, w[0], fedc_transpose(p, x, (int[]){1, 0})); /* [T, B, embed] */
    int k = 1;
    for (int64_t l = 0; l < t->layers; l++, k += 2) h = fedc_tanh(p, fedc__nn_lstm(p, h, w[k], w[k + 1]));
    fedc_value rows = fedc_reshape(p, h, 2, (int64_t[]){T * B, t->hidden});
    if (t->word) rows = fedc__nn_dense(p, rows, w[k], w[k + 1]), k += 2;
    fedc_value logits = t->tied ? fedc_add(p, fedc_matmul(p, rows, w[0], false, true), w[k])
                                : fedc__nn_dense(p, rows, w[k], w[k + 1]);
    return fedc_reshape(p, logits, 3, (int64_t[]){T, B, t->vocab});
}

/* 1 where target y (time-major [T, B]) counts, times the example mask [B]. */
static fedc_value token_mask(const fedc__nn_text *t, fedc_program *p, fedc_value yt, fedc_value mask, int64_t B) {
    fedc_value keep = fedc_ne(p, yt, fedc_scalar(p, FEDC_I32, FEDC_SHAKESPEARE_PAD));
    fedc_value m = fedc_cast(p, keep, FEDC_F32);
    if (t->mask_eos) m = fedc_mul(p, m, fedc_cast(p, fedc_ne(p, yt, fedc_scalar(p, FEDC_I32, FEDC_SHAKESPEARE_EOS)), FEDC_F32));
    if (t->mask_oov) m = fedc_mul(p, m, fedc_cast(p, fedc_ne(p, yt, fedc_scalar(p, FEDC_I32, (double)(t->vocab - 1))), FEDC_F32));
    return fedc_mul(p, m, fedc_reshape(p, mask, 2, (int64_t[]){1, B}));
}

void fedc__nn_text_apply(const fedc__nn_text *t, fedc_program *p, const fedc_value *w, fedc_value x, fedc_value y,
                        fedc_value mask, fedc_model_outputs *out) {
    int64_t B = fedc_value_type(p, x).dims[0];
    fedc_value logits = forward(t, p, w, x, B);
    fedc_value yt = fedc_transpose(p, y, (int[]){1, 0});
    fedc_value m = token_mask(t, p, yt, mask, B);
    fedc_value xent = fedc_softmax_cross_entropy(p, logits, yt, m);
    fedc_value count = fedc_reduce_sum(p, m, NULL, -1, false);
    fedc_value denom = fedc_maximum(p, count, fedc_scalar_like(p, count, 1.0));
    fedc_value hit = fedc_mul(p, fedc_cast(p, fedc_eq(p, fedc_argmax(p, logits, -1), yt), FEDC_F32), m);
    out->loss = fedc_div(p, fedc_reduce_sum(p, xent, NULL, -1, false), denom);
    out->logits = fedc_transpose(p, logits, (int[]){1, 0, 2});
    out->correct = fedc_reduce_sum(p, hit, NULL, -1, false);
    out->count = count;
    /* per example: summed over time, the first axis of the time-major [T, B] */
    out->example_loss = fedc_reduce_sum(p, xent, (int[]){0}, 1, false);
    out->example_correct = fedc_reduce_sum(p, hit, (int[]){0}, 1, false);
    out->example_count = fedc_reduce_sum(p, m, (int[]){0}, 1, false);
}
