/* fl.h — what the algorithms and the training job share (internal). */
#ifndef FEDC_FL_INTERNAL_H
#define FEDC_FL_INTERNAL_H

#include <string.h>

#include "core/internal.h"
#include "fedc/fl.h"

/* The most parameter tensors an algorithm takes: well above the models' own
 * limit (the transformer "base" preset has 150; with Adam's two slots per tensor a
 * round has about 3 values per tensor). */
enum { FEDC__FL_MAX_PARAMS = 1024 };

/* t with placement pl. */
static inline fedc_type fedc__placed(fedc_type t, fedc_placement pl) {
    t.placement = pl;
    return t;
}

/* t with a leading axis of `steps` (a client's batches stacked). */
static inline fedc_type fedc__stacked(fedc_type t, int64_t steps) {
    memmove(t.dims + 1, t.dims, sizeof t.dims - sizeof t.dims[0]);
    t.dims[0] = steps;
    t.rank++;
    return t;
}

/* The i32[4] dropout key of step t: key + [0, 0, 0, t]. */
fedc_value fedc__fl_step_key(fedc_program *p, fedc_value key, fedc_value t);

/* fedc_round_gradients with a given objective (fedc_round_objective's interface,
 * with grad) instead of the model's: Mime's tests differentiate FedJAX's loss. */
fedc_status fedc__round_gradients_with(fedc_round *r, const fedc_program *objective, const fedc_tree *w,
                                      fedc_tree **out);

/* a's definition (FedAvg's when a->def is NULL). */
const fedc_algorithm_def *fedc__algorithm_def(const fedc_algorithm *a);

/* The metadata the training job binds (fedc_round_meta's names), NULL-terminated. */
extern const char *const fedc__round_meta_names[];

#endif
