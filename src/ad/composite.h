/* composite.h — the transformer layers' fused ops written out in elementary ops
 * (matmul, reductions, tanh, select, ...), for the derivatives the fused backward
 * ops do not cover: differentiating the composite form gives every derivative of
 * every order, at the cost of unfused ops. Tests also use the composites as a
 * second, independent statement of what each fused op computes. (internal) */
#ifndef FEDC_AD_COMPOSITE_H
#define FEDC_AD_COMPOSITE_H

#include "ad/ad.h"

/* Emits into p the composite form of node n (of a transformer op) applied to
 * args (values of p with the types of n's operands); returns its value, or
 * FEDC_NONE with p's sticky error. */
fedc_value fedc__composite(fedc_program *p, const fedc__node *n, const fedc_value *args);

/* The vjp of src node v with cotangent ct, for the operands whose bit is set in
 * `which` (and that are active), by differentiating its composite form. */
fedc_status fedc__composite_vjp(fedc__ad *ad, fedc_value v, fedc_value ct, unsigned which);

#endif
