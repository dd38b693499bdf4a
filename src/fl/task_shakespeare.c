/* Shakespeare: characters through FedJAX's vocabulary (fedc_shakespeare_hook);
 * LEAF's windows become next-character sequences, and every row has the model's
 * length. */
#include "fl/train.h"

fedc_status fedc__shakespeare_prepare(trainer *t, void **ctx) {
    t->shakespeare.leaf_sequences = true;
    *ctx = &t->shakespeare;
    return FEDC_OK;
}

void fedc__shakespeare_follow_length(trainer *t, int64_t length) { t->shakespeare.sequence_length = length; }
