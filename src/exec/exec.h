/* exec.h — what the executor and the per-op dispatch share (internal). */
#ifndef FEDC_EXEC_INTERNAL_H
#define FEDC_EXEC_INTERNAL_H

#include "fedc/exec.h"
#include "ir/ir.h"
#include "kernels/kernels.h"

/* One step of a run: a node with its operand and result memory. */
typedef struct fedc__step {
    const fedc_program *p;
    fedc_value v;
    const fedc__node *n;
    const fedc_kernels *k;
    void *out;
    const void *const *in; /* n->nin operand pointers */
    void *scratch;         /* fedc__step_scratch(...) bytes */
} fedc__step;

/* Runs one node's kernel. */
fedc_status fedc__step_run(const fedc__step *s);

/* Scratch bytes the node's kernel needs (0 for most ops). */
size_t fedc__step_scratch(const fedc_kernels *k, const fedc_program *p, const fedc__node *n);

fedc_kshape fedc__kshape(const fedc_type *t);

#endif
