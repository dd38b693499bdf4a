/* Stack Overflow: words through the vocabulary file (--vocab), or synthetic
 * word ranks, which need none (fedc_stackoverflow_hook). The model predicts the
 * vocabulary's words and 4 special ids; sentences are cut or padded to its
 * length. */
#include "fl/train.h"

fedc_status fedc__stackoverflow_prepare(trainer *t, void **ctx) {
    const fedc_train_config *c = t->c;
    *ctx = &t->stackoverflow;
    if (c->vocab_size < 0 || c->vocab_size > FEDC__MAX_VOCAB)
        return fedc_error(FEDC_EINVAL, "train: vocabulary size %lld is outside [0, %d] (0: 10000)",
                          (long long)c->vocab_size, FEDC__MAX_VOCAB);
    t->stackoverflow.vocab_size = c->vocab_size ? c->vocab_size : FEDC_STACKOVERFLOW_VOCAB_SIZE;
    if (!c->vocab) {
        if (t->synthetic) return FEDC_OK;
        return fedc_error(FEDC_EINVAL, "the stackoverflow task needs --vocab FILE: the vocabulary, one word a line, "
                          "most frequent first (FedJAX's stackoverflow.word_count or TFF's vocabulary)");
    }
    fedc_status st = fedc_stackoverflow_vocab_read(c->vocab, t->stackoverflow.vocab_size, &t->so_vocab);
    if (st) return st;
    t->stackoverflow.vocab = t->so_vocab;
    t->stackoverflow.vocab_size = fedc_stackoverflow_vocab_size(t->so_vocab);
    return FEDC_OK;
}

void fedc__stackoverflow_model_options(const trainer *t, fedc_model_options *o) {
    o->num_classes = (int)t->stackoverflow.vocab_size + 4;
}

void fedc__stackoverflow_follow_length(trainer *t, int64_t length) { t->stackoverflow.max_length = length; }
