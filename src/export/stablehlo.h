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

/* The lowerings of stablehlo_ops.c: elementwise ops, constants, reductions,
 * the federated ops, the shape ops, matmul, one_hot and the softmax family;
 * nothing writes nothing (an input, and a result, named by its map). */
fedc_status fedc__shlo_nothing(const lower *l);
fedc_status fedc__shlo_constant(const lower *l);
fedc_status fedc__shlo_iota(const lower *l);
fedc_status fedc__shlo_binary(const lower *l);
fedc_status fedc__shlo_unary(const lower *l);
fedc_status fedc__shlo_select(const lower *l);
fedc_status fedc__shlo_cast(const lower *l);
fedc_status fedc__shlo_reduce(const lower *l);
fedc_status fedc__shlo_broadcast(const lower *l);
fedc_status fedc__shlo_sum(const lower *l);
fedc_status fedc__shlo_weighted_mean(const lower *l);
fedc_status fedc__shlo_num_clients(const lower *l);
fedc_status fedc__shlo_map(const lower *l);
fedc_status fedc__shlo_reshape(const lower *l);
fedc_status fedc__shlo_broadcast_to(const lower *l);
fedc_status fedc__shlo_transpose(const lower *l);
fedc_status fedc__shlo_slice(const lower *l);
fedc_status fedc__shlo_concat(const lower *l);
fedc_status fedc__shlo_pad(const lower *l);
fedc_status fedc__shlo_matmul(const lower *l);
fedc_status fedc__shlo_one_hot(const lower *l);
fedc_status fedc__shlo_log_softmax(const lower *l);
fedc_status fedc__shlo_softmax_xent(const lower *l);
fedc_status fedc__shlo_softmax_xent_grad(const lower *l);
/* Of stablehlo_nn.c: convolutions, pools and their gradients. */
fedc_status fedc__shlo_conv2d(const lower *l);
fedc_status fedc__shlo_conv2d_input_grad(const lower *l);
fedc_status fedc__shlo_conv2d_filter_grad(const lower *l);
fedc_status fedc__shlo_max_pool2d(const lower *l);
fedc_status fedc__shlo_max_pool2d_grad(const lower *l);
fedc_status fedc__shlo_avg_pool2d(const lower *l);
fedc_status fedc__shlo_avg_pool2d_grad(const lower *l);
/* Of stablehlo_index.c: argmax, gather, scatter_add. */
fedc_status fedc__shlo_argmax(const lower *l);
fedc_status fedc__shlo_gather(const lower *l);
fedc_status fedc__shlo_scatter_add(const lower *l);
/* Of stablehlo_random.c: dropout and the random ops with fedc's Philox stream. */
fedc_status fedc__shlo_dropout(const lower *l);
fedc_status fedc__shlo_random_uniform(const lower *l);
fedc_status fedc__shlo_random_normal(const lower *l);
/* Of stablehlo_lstm.c: the fused LSTM, its gradient and its tangent. */
fedc_status fedc__shlo_lstm(const lower *l);
fedc_status fedc__shlo_lstm_grad(const lower *l);
fedc_status fedc__shlo_lstm_tangent(const lower *l);
/* Of stablehlo_fold.c: fold as stablehlo.while. */
fedc_status fedc__shlo_fold(const lower *l);

/* Lowers every node of scope s (stablehlo_ops.c); an op without a lowering
 * fails naming it. */
fedc_status fedc__shlo_lower_scope(fedc__mlir *m, fedc__mlir_scope *s);

#endif
