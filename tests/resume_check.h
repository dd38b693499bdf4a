/* Whether a training job checkpointed half way and resumed ends with the same
 * bits (every tensor of the checkpoint: the model and the algorithm's server
 * state) as the same job run without a stop (tests of stateful algorithms). */
#ifndef FEDC_TEST_RESUME_CHECK_H
#define FEDC_TEST_RESUME_CHECK_H

#include <string.h>

#include "fedc/fedc.h"
#include "harness.h"

/* c with out_dir `dir` under the test's directory: rounds whole, then rounds/2
 * and a resume to rounds in another. */
static bool resume_matches(fedc_train_config c, const char *dir) {
    char whole[512], part[600], a[700], b[700];
    snprintf(whole, sizeof whole, "%s", fedc_test_tmp(dir));
    snprintf(part, sizeof part, "%s-resumed", whole);
    int rounds = c.rounds;
    fedc_train_result r;
    c.checkpoint_every = rounds / 2, c.out_dir = whole;
    CHECK_OK(fedc_train(&c, &r));
    c.out_dir = part, c.rounds = rounds / 2;
    CHECK_OK(fedc_train(&c, &r));
    c.rounds = rounds, c.resume = true;
    CHECK_OK(fedc_train(&c, &r));
    snprintf(a, sizeof a, "%s/checkpoint.safetensors", whole);
    snprintf(b, sizeof b, "%s/checkpoint.safetensors", part);
    fedc_safetensors *x = NULL, *y = NULL;
    bool same = !fedc_safetensors_read(a, &x) && !fedc_safetensors_read(b, &y) &&
                fedc_safetensors_count(x) == fedc_safetensors_count(y) && fedc_safetensors_count(x) > 0;
    for (int i = 0; same && i < fedc_safetensors_count(x); i++) {
        fedc_tensor_entry s = fedc_safetensors_tensor(x, i), t = fedc_safetensors_tensor(y, i);
        same = !strcmp(s.name, t.name) && fedc_type_bytes(&s.type) == fedc_type_bytes(&t.type) &&
               !memcmp(s.data, t.data, fedc_type_bytes(&s.type));
    }
    fedc_safetensors_destroy(x);
    fedc_safetensors_destroy(y);
    return same;
}

#endif
