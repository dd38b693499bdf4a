/* ad.h — the reverse-mode machinery shared by the transform and the per-op rules. */
#ifndef FEDC_AD_INTERNAL_H
#define FEDC_AD_INTERNAL_H

#include "fedc/ad.h"
#include "ir/ir.h"

/* A reverse-mode transform in progress. */
typedef struct fedc__ad {
    fedc_program *g;          /* the program being built */
    const fedc_program *src;  /* the program being differentiated */
    const fedc_value *primal; /* src value -> its value in g */
    fedc_value *ct;           /* src value -> accumulated cotangent in g (FEDC_NONE: zero) */
    const bool *active;       /* src value depends on a wrt input through float values */
} fedc__ad;

/* Adds `contribution` (of src value u's type) to u's cotangent. */
void fedc__ad_accum(fedc__ad *ad, fedc_value u, fedc_value contribution);

/* Applies the derivative rule of src node v, whose cotangent is `ct`: accumulates
 * into the cotangents of v's active operands. */
fedc_status fedc__vjp_rule(fedc__ad *ad, fedc_value v, fedc_value ct);

#endif
