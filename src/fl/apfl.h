/* apfl.h — APFL's round on a given gradient (internal: the round uses the model's
 * loss; tests/test_apfl.c gives FedJAX's test gradient). */
#ifndef FEDC_FL_APFL_H
#define FEDC_FL_APFL_H

#include "fedc/fl.h"

/* Builds APFL's round on r with `grad`: a program with inputs w/<param>, x, y,
 * mask, key (one batch) and outputs loss, count and grad_w/<param>, as
 * fedc_round_objective makes it with grad. */
fedc_status fedc__apfl_round_with(fedc_round *r, const fedc_program *grad);

#endif
