/* mlir_lower.h — the lowering of one node (internal): its context, the small
 * helpers every lowering uses, the shared loop nests (mlir_lower.c) and the
 * lowerings of each file, which mlir_ops.c's table dispatches to. */
#ifndef FEDC_EXPORT_MLIR_LOWER_H
#define FEDC_EXPORT_MLIR_LOWER_H

#include <stdio.h>
#include <string.h>

#include "export/lower.h"

static inline bool clients(const lower *l, fedc_value u) { return fedc__mlir_has_clients(l->s, u); }
static inline bool is_float(const lower *l, fedc_value u) { return fedc_dtype_is_float(type_of(l, u)->dtype); }

/* Appends "d<k>" (k counted from the clients loop) or "0" to a map's results. */
static inline void add_expr(char *buf, size_t size, const char *expr) {
    size_t n = strlen(buf);
    snprintf(buf + n, size - n, "%s%s", n ? ", " : "", expr);
}
static inline void add_loop(char *buf, size_t size, int loop) {
    char e[16];
    snprintf(e, sizeof e, "d%d", loop);
    add_expr(buf, size, e);
}


static inline void identity_map(int loops, char *buf, size_t size) {
    buf[0] = 0;
    for (int i = 0; i < loops; i++) add_loop(buf, size, i);
}

/* Drops the last dim of a map's results ("d0, d1, d2" -> "d0, d1"). */
static inline void rows_map(int loops, char *buf, size_t size) { identity_map(loops - 1, buf, size); }

/* The body's `op a, b : type` into a fresh temporary. */
static inline const char *emit2(const lower *l, const char *op, const char *a, const char *b, const char *type, char *t) {
    fedc__mlir_tmp(l->m, t);
    fedc__mlir_printf(l->m, "      %s = %s %s, %s : %s\n", t, op, a, b, type);
    return t;
}
static inline const char *emit1(const lower *l, const char *op, const char *a, const char *type, char *t) {
    fedc__mlir_tmp(l->m, t);
    fedc__mlir_printf(l->m, "      %s = %s %s : %s\n", t, op, a, type);
    return t;
}
static inline const char *constant(const lower *l, double value, fedc_dtype dt, char *t) {
    char lit[32];
    fedc__mlir_tmp(l->m, t);
    fedc__mlir_printf(l->m, "      %s = arith.constant %s : %s\n", t, fedc__mlir_literal(dt, value, lit, sizeof lit),
                      fedc__mlir_elem(dt));
    return t;
}

/* The body's index of loop `loop`, as an i32 (into out, of 24). */
static inline const char *loop_index_i32(const lower *l, int loop, char *out) {
    char i[24];
    fedc__mlir_tmp(l->m, i);
    fedc__mlir_printf(l->m, "      %s = linalg.index %d : index\n", i, loop);
    fedc__mlir_tmp(l->m, out);
    fedc__mlir_printf(l->m, "      %s = arith.index_cast %s : index to i32\n", out, i);
    return out;
}

/* Writes the body's lines computing one element from %in0, %in1, ...; the SSA name
 * of the result goes to `result` (of 24). */
typedef void (*body_fn)(const lower *l, char *result);

/* v = body(operands) element by element over v's shape, with numpy broadcasting. */
fedc_status fedc__mlir_elementwise(const lower *l, body_fn body);
/* A sum (or max) of x over the loops set in `reduced` (the clients loop first, when
 * x has one); keep leaves them as 1s. The result is named result_name. */
fedc_status fedc__mlir_reduce(const lower *l, fedc_value x, unsigned reduced, bool keep, bool max,
                              const char *result_name, const char *out_type);
/* v = a splat of count (num_clients, num_groups, group_size) in v's type. */
fedc_status fedc__mlir_count_const(const lower *l, int count);
/* v = x * s element by element (x of v's type). */
fedc_status fedc__mlir_scale(const lower *l, const char *x, const char *type, double s);
/* The head of a generic over `rank` loops that reads operand 0 (of v's dtype)
 * through in_map and writes v through out_map, from zeros; the caller writes
 * the body and ends it with fedc__mlir_generic_end(l->m, &u->g, result). */
typedef struct fedc__mlir_unary {
    fedc__mlir_generic g;
    char in_type[160], out_type[160], init[24];
} fedc__mlir_unary;
void fedc__mlir_unary_begin(const lower *l, int rank, const char *iters, const char *in_map, const char *out_map,
                            fedc__mlir_unary *u);
/* v[j...] = operand 0 read through in_map. */
fedc_status fedc__mlir_copy_through(const lower *l, const char *in_map);
/* In a body: the loop indices %i of `loops` loops; an i32 clamped into [0, n) as
 * an index; `r = tensor.extract x[idx...]`. */
void fedc__mlir_loop_indices(const lower *l, int loops, char idx[][24]);
const char *fedc__mlir_clamped_index(const lower *l, const char *i32, int64_t n, char *out);
void fedc__mlir_extract(const lower *l, const char *x, const char *xtype, char idx[][24], int n, const char *r);

/* Sharded (mlir_place.c): result = into (of y_type, shape y_shape after the
 * clients axis when `clients`) with x (of x_type, shape x_shape) placed at
 * offsets lo (negative: a slice of x starting at -lo): a linalg.generic that
 * reads x by tensor.extract, then annotated for its users. What slice, pad
 * and concat become, since LLVM 19 gives
 * tensor.insert_slice and tensor.extract_slice no sharding interface. */
typedef struct fedc__mlir_place_args {
    const char *x, *x_type, *into, *y_type;
    const fedc_type *x_shape, *y_shape;
    const int64_t *lo;
    bool clients;
} fedc__mlir_place_args;
void fedc__mlir_place(const lower *l, const fedc__mlir_place_args *a, const char *result);
/* Sharded: result = x (of type) annotated for its users, split along the
 * clients axis or whole on every device: what a generic needs whose operands
 * tell propagation nothing (it reads its values by tensor.extract). */
void fedc__mlir_annotate_result(const lower *l, const char *x, const char *result, const char *type, bool clients);
/* In a body: the position in x (of extent n) that index i reads, i - lo, clamped
 * into [0, n) so that it can always be read; ok (of 24, "" or an i1) is anded
 * with whether it lies inside. */
const char *fedc__mlir_place_index(const lower *l, const char *i, int64_t lo, int64_t n, char *ok, char *out);

/* The lowerings themselves (mlir_ops.c, mlir_nn.c, mlir_conv.c, mlir_random.c;
 * lstm.c and control.c for both targets, in mlir_lstm.c's and mlir_fold.c's
 * spelling) are declared from their rows in lowerings.def (lower.h). */

#endif
