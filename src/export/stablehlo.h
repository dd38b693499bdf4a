/* stablehlo.h — lowering a program to StableHLO-shaped MLIR (internal): every op
 * in MLIR's generic form ("stablehlo.add"(...) : (...) -> ...), so that
 * mlir-opt-19 --allow-unregistered-dialect parses it and XLA or IREE take it.
 * The text, types and names are mlir.h's emitter; stablehlo_ops.c lowers the
 * ops, stablehlo.c writes the module. */
#ifndef FEDC_EXPORT_STABLEHLO_H
#define FEDC_EXPORT_STABLEHLO_H

#include "export/lower.h"

/* `result = "name"(ins...) {attrs} : (types...) -> out_type`; attrs without
 * braces, "" for none. */
void fedc__shlo_op(fedc__mlir *m, const char *result, const char *name, const char *attrs, int n, const char *const *ins,
                   const char *const *in_types, const char *out_type);
/* A splat constant of value in dtype dt and tensor type `type`, into name (of 24). */
const char *fedc__shlo_splat(fedc__mlir *m, fedc_dtype dt, double value, const char *type, char *name);

/* A stablehlo.while over the steps 0 .. steps - 1 carrying the step t and n
 * values from inits (of types): the head, and the condition t < steps. The
 * body's block arguments are %w<id>_0 (t) and %w<id>_<1 + i> (value i); returns
 * id, and names the loop `result` (of 24): its result 1 + i is value i.
 * fedc__shlo_while_end returns t + 1 and values and ends the loop. */
int fedc__shlo_while_begin(fedc__mlir *m, int64_t steps, int n, const char *const *inits, const char *const *types,
                           char *result);
void fedc__shlo_while_end(fedc__mlir *m, int id, int n, char (*values)[24], const char *const *types);

/* result = reduce(x) (of type xt, rank `rank`, dtype dt) over the dims set in
 * `dims` (a sum, or a max), of type out_type; v = x * k (of v's type). */
void fedc__shlo_reduce_dims(const lower *l, const char *x, const char *xt, fedc_dtype dt, unsigned dims, int rank, bool max,
                       const char *out_type, const char *result);
void fedc__shlo_scale(const lower *l, const char *x, double k, const char *result);

/* What every lowering uses: v's operands' types, names and clients axis (dim
 * 0 when there), "array<i64: ...>" lists, and ops of one and two operands of one
 * type. */
#include <stdio.h>

static inline int lead(const lower *l, fedc_value u) { return fedc__mlir_has_clients(l->s, u) ? 1 : 0; }
static inline const char *type_str(const lower *l, fedc_value u, char *buf) {
    return fedc__mlir_type_of(l->m, l->s, u, buf, 160);
}
static inline char *out_name(const lower *l) { return l->s->name[l->v]; }

/* "array<i64: a, b>" of n values into buf (of 160). */
static inline const char *i64s(const int64_t *v, int n, char *buf) {
    size_t k = (size_t)snprintf(buf, 160, "array<i64");
    for (int i = 0; i < n && k < 160; i++) k += (size_t)snprintf(buf + k, 160 - k, "%s%lld", i ? ", " : ": ", (long long)v[i]);
    if (k < 160) snprintf(buf + k, 160 - k, ">");
    return buf;
}

static inline void op1(const lower *l, const char *result, const char *op, const char *attrs, const char *x, const char *xt,
                const char *out_type) {
    fedc__shlo_op(l->m, result, op, attrs, 1, (const char *[]){x}, (const char *[]){xt}, out_type);
}
static inline void op2(const lower *l, const char *result, const char *op, const char *attrs, const char *a, const char *b,
                const char *t, const char *out_type) {
    fedc__shlo_op(l->m, result, op, attrs, 2, (const char *[]){a, b}, (const char *[]){t, t}, out_type);
}

/* The lowerings themselves (stablehlo_ops.c, stablehlo_nn.c, stablehlo_index.c,
 * stablehlo_random.c; lstm.c and control.c for both targets, in
 * stablehlo_lstm.c's and stablehlo_fold.c's spelling) are declared from their
 * rows in lowerings.def (lower.h). */

/* Lowers every node of scope s (stablehlo_ops.c); an op without a lowering
 * fails naming it. */
fedc_status fedc__shlo_lower_scope(fedc__mlir *m, fedc__mlir_scope *s);

#endif
