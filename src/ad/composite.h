/* composite.h — the derivatives of the transformer layers' fused ops that the
 * fused backward ops do not cover, by differentiating their composite forms
 * (ir/decompose.h): every derivative of every order, at the cost of unfused
 * ops. (internal) */
#ifndef FEDC_AD_COMPOSITE_H
#define FEDC_AD_COMPOSITE_H

#include "ad/ad.h"
#include "ir/decompose.h"

/* The vjp of src node v with cotangent ct, for the operands whose bit is set in
 * `which` (and that are active), by differentiating its composite form. */
fedc_status fedc__composite_vjp(fedc__ad *ad, fedc_value v, fedc_value ct, unsigned which);

#endif
