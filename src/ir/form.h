/* form.h — the deployment form's cut, shared by the pass that makes it
 * (src/ir/form.c, form_phase.c) and what runs its phases (src/deploy/run.c)
 * (internal). The form is a program -> program pass: a round program cut into
 * the phases of fedc/form.h. */
#ifndef FEDC_IR_FORM_H
#define FEDC_IR_FORM_H

#include "fedc/form.h"
#include "ir/ir.h"

/* Where a value of the round program is computed: a phase (exchange * 5 + kind),
 * or one of these. */
enum {
    FEDC__DEPLOY_INPUT = -1, /* an input of the round: read by name wherever needed */
    FEDC__DEPLOY_FREE = -2   /* a local value that no input reaches (a constant): copied into each phase */
};

static inline int fedc__deploy_slot(int exchange, fedc_phase_kind kind) { return exchange * FEDC_PHASE_COUNT + (int)kind; }

/* The cut: every value's slot, which values a phase other than their own reads
 * (they become outputs of their phase), and which phase writes each output of
 * the round. */
typedef struct fedc__cut {
    const fedc_program *round;
    int exchanges;
    int *slot;          /* per value */
    bool *exported;     /* per value */
    int *output_slot;   /* per output of the round */
} fedc__cut;

/* The name by which phases pass value v of the round (deploy.h: inputs keep
 * theirs; others "<phase>/%N"). buf of 600 bytes suffices. */
const char *fedc__deploy_name(const fedc__cut *c, fedc_value v, char *buf, size_t size);

/* Builds the phase program of `slot` (form_phase.c). */
fedc_status fedc__deploy_extract(const fedc__cut *c, int slot, fedc_program **out);

struct fedc_deployment_form {
    fedc_program *round; /* a copy */
    int exchanges;
    fedc_program **phase; /* exchanges * FEDC_PHASE_COUNT */
};

#endif
