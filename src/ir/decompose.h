/* decompose.h — the transformer layers' fused ops written out in elementary ops
 * (matmul, reductions, tanh, select, ...). Two users: the derivatives the fused
 * backward ops do not cover (src/ad/composite.c: differentiating the composite
 * form gives every derivative of every order, at the cost of unfused ops), and
 * the export targets, which lower a program decomposed first and so spell only
 * elementary ops. Tests also use the composites as a second, independent
 * statement of what each fused op computes. (internal) */
#ifndef FEDC_IR_DECOMPOSE_H
#define FEDC_IR_DECOMPOSE_H

#include "ir/ir.h"

/* Whether op has a composite form (the fused transformer ops). */
bool fedc__op_is_composite(fedc__op op);

/* Emits into p the composite form of node n (of a transformer op) applied to
 * args (values of p with the types of n's operands); returns its value, or
 * FEDC_NONE with p's sticky error. */
fedc_value fedc__composite(fedc_program *p, const fedc__node *n, const fedc_value *args);

/* *out = a copy of src (its bodies too) with every composite op replaced by its
 * composite form: the same inputs, outputs and function. */
fedc_status fedc__decompose(const fedc_program *src, fedc_program **out);

#endif
