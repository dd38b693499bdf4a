/* apfl.h — APFL's round and evaluation on a given objective (internal: they use
 * the model's; tests/test_apfl.c gives FedJAX's test gradient and model). */
#ifndef FEDC_FL_APFL_H
#define FEDC_FL_APFL_H

#include "fedc/fl.h"

/* Builds APFL's round on r with `grad`: a program with inputs w/<param>, x, y,
 * mask, key (one batch) and outputs loss, count and grad_w/<param>, as
 * fedc_round_objective makes it with grad. */
fedc_status fedc__apfl_round_with(fedc_round *r, const fedc_program *grad);
/* APFL's personalized evaluation on r with `objective` (fedc_round_evaluate's;
 * NULL: the model's). */
fedc_status fedc__apfl_evaluation_with(fedc_round *r, const fedc_program *objective);

#endif
