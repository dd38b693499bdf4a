/* lower.h — the lowering of one node, for either target (internal): its
 * context, and the helpers both targets' lowerings use. A target's lowerings
 * differ only in their spelling (mlir_lower.h: linalg, arith, math; stablehlo.h:
 * StableHLO ops), which one table names (lowerings.def); the composite ops are
 * decomposed before either runs (ir/decompose.h). */
#ifndef FEDC_EXPORT_LOWER_H
#define FEDC_EXPORT_LOWER_H

#include "export/mlir.h"
#include "ir/decompose.h"

/* A target's spelling of the algorithms both targets share (spelling.h). */
typedef struct fedc__spelling fedc__spelling;

/* One node being lowered. */
typedef struct lower {
    fedc__mlir *m;
    fedc__mlir_scope *s;
    fedc_value v;
    const fedc__node *n;
    const fedc__spelling *spell; /* the target's */
} lower;

typedef fedc_status (*lower_fn)(const lower *l);

/* The export targets, the columns of the op table (lowerings.def). */
typedef enum fedc__export_target { FEDC__TO_MLIR, FEDC__TO_STABLEHLO, FEDC__EXPORT_TARGETS } fedc__export_target;

/* Op's lowering in target (lowerings.c); NULL for an op with none (a composite
 * op, decomposed before lowering). */
lower_fn fedc__lowering(fedc__export_target target, fedc__op op);

/* Every spelling the table names, declared from its row: a new op's lowering
 * needs no declaration of its own, and a definition whose signature differs
 * does not compile. (COMPOSITE and NONE name none: the names below are never
 * defined.) */
#define COMPOSITE fedc__composite_row
#define NONE fedc__no_lowering
#define FEDC_LOWERING(id, mlir, stablehlo) \
    fedc_status mlir(const lower *l);      \
    fedc_status stablehlo(const lower *l);
#include "export/lowerings.def"
#undef FEDC_LOWERING
#undef COMPOSITE
#undef NONE

static inline const fedc_type *type_of(const lower *l, fedc_value u) { return &l->s->p->nodes[u].type; }
static inline const char *name(const lower *l, fedc_value u) { return l->s->name[u]; }
static inline fedc_status unsupported(const lower *l, const char *why) {
    return fedc__mlir_fail(l->m, l->s, l->v, FEDC_EUNSUPPORTED, "%s", why);
}

#endif
