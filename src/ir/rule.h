/* rule.h — a type rule's view of its node and the checks rules share (internal).
 * Every op has a rule fedc__infer_<ID> (the table in infer.c comes from
 * ops.def); most live in infer.c, and an op family's may live beside its
 * builders (builder_transformer.c, builder_lstm.c), so that a new op's builder
 * and type rule are one file. Rules read their operands through `operand` and
 * fail through `fail`, whose message names the op. */
#ifndef FEDC_IR_RULE_H
#define FEDC_IR_RULE_H

#include <stdarg.h>

#include "ir/ir.h"

typedef struct fedc__rule_ctx {
    const fedc_program *p;
    const fedc__node *n;
    const char *name; /* op name, for messages */
} fedc__rule_ctx;
typedef fedc__rule_ctx rule_ctx;

#define FEDC_OP(id, name, min_in, max_in) fedc_status fedc__infer_##id(const rule_ctx *c, fedc_type *out);
#include "ir/ops.def"
#undef FEDC_OP

/* The shared checks (infer.c). */
fedc_status fedc__rule_vfail(const rule_ctx *c, fedc_status st, const char *fmt, va_list ap);
fedc_status fedc__rule_require_dtype_float(const rule_ctx *c, int i);
fedc_status fedc__rule_require_dtype(const rule_ctx *c, int i, fedc_dtype dt);
fedc_status fedc__rule_require_rank(const rule_ctx *c, int i, int rank);
/* All operands share one placement (local values join either side), given to *out. */
fedc_status fedc__rule_same_placement(const rule_ctx *c, fedc_placement *out);
/* An elementwise op's result: operands of one dtype (numeric: f32, f64 or i32;
 * floats_only: f32 or f64), shapes broadcast as numpy does. */
fedc_status fedc__rule_elementwise(const rule_ctx *c, fedc_type *out, bool numeric, bool floats_only);
fedc_status fedc__rule_set_dims(fedc_type *out, int rank, const int64_t *dims);
/* Dims >= 0 whose product fits a byte count; `what` names them in the message. */
fedc_status fedc__rule_check_dims(const rule_ctx *c, int count, const int64_t *dims, const char *what);

/* The short names the rules are written with. */
static inline const fedc_type *operand(const rule_ctx *c, int i) { return &c->p->nodes[c->n->in[i]].type; }
static inline fedc_status fail(const rule_ctx *c, fedc_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static inline fedc_status fail(const rule_ctx *c, fedc_status st, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fedc_status r = fedc__rule_vfail(c, st, fmt, ap);
    va_end(ap);
    return r;
}
static inline fedc_status require_dtype_float(const rule_ctx *c, int i) { return fedc__rule_require_dtype_float(c, i); }
static inline fedc_status require_dtype(const rule_ctx *c, int i, fedc_dtype dt) { return fedc__rule_require_dtype(c, i, dt); }
static inline fedc_status require_rank(const rule_ctx *c, int i, int rank) { return fedc__rule_require_rank(c, i, rank); }
static inline fedc_status same_placement(const rule_ctx *c, fedc_placement *out) { return fedc__rule_same_placement(c, out); }
static inline fedc_status elementwise(const rule_ctx *c, fedc_type *out, bool numeric, bool floats_only) {
    return fedc__rule_elementwise(c, out, numeric, floats_only);
}
static inline fedc_status floats(const rule_ctx *c, fedc_type *out) { return elementwise(c, out, true, true); }
static inline fedc_status set_dims(fedc_type *out, int rank, const int64_t *dims) { return fedc__rule_set_dims(out, rank, dims); }
static inline fedc_status check_dims(const rule_ctx *c, int count, const int64_t *dims, const char *what) {
    return fedc__rule_check_dims(c, count, dims, what);
}

#define TYPESTR(t) fedc_type_str((t), (char[64]){0}, 64)

#endif
