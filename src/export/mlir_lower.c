/* What the lowerings share: elementwise loop nests with numpy broadcasting,
 * reductions, copies through a map, and reading elements by index. */
#include <string.h>

#include "export/mlir_lower.h"

/* Where a map reads or writes index 0 of a dim of 1: the constant 0, or,
 * sharded, loop `unit` (of extent 1), since LLVM 19's sharding propagation
 * fails on a generic whose maps hold a constant. True when the loop is used. */
static bool at_zero(const lower *l, int unit, char *buf, size_t size) {
    if (!l->m->hoisted) return add_expr(buf, size, "0"), false;
    add_loop(buf, size, unit);
    return true;
}

/* How operand u is read in a loop nest over `out` (of rank `rank` after the
 * clients loop, if the nest has one): numpy broadcasting, dims right-aligned, a
 * dim of 1 against a larger one read at 0 (or through loop `unit`; true then). */
static bool broadcast_map(const lower *l, fedc_value u, bool nest_clients, const fedc_type *out, int unit, char *buf,
                          size_t size) {
    const fedc_type *t = type_of(l, u);
    int lead = nest_clients ? 1 : 0;
    bool used = false;
    buf[0] = 0;
    if (clients(l, u) && nest_clients) add_loop(buf, size, 0);
    for (int i = 0; i < t->rank; i++) {
        int j = out->rank - t->rank + i;
        if (t->dims[i] == 1 && out->dims[j] != 1) used |= at_zero(l, unit, buf, size);
        else add_loop(buf, size, lead + j);
    }
    return used;
}

/* v = f(operands) element by element over v's shape, with broadcasting. */
fedc_status fedc__mlir_elementwise(const lower *l, body_fn body) {
    char types[4][160], maps[4][160], out_map[160], out_type[160], init[24], result[24], iters[16] = "pppppppp";
    const fedc_type *out = type_of(l, l->v);
    bool nest_clients = clients(l, l->v), unit = false;
    int loops = out->rank + nest_clients;
    fedc__mlir_generic g = {.rank = loops, .iters = iters, .nin = l->n->nin, .out_map = out_map,
                            .out_type = fedc__mlir_type_of(l->m, l->s, l->v, out_type, sizeof out_type),
                            .out_elem = fedc__mlir_elem(out->dtype), .result_name = name(l, l->v)};
    if (l->n->nin > 4) return unsupported(l, "more than 4 operands in one elementwise op");
    for (int i = 0; i < l->n->nin; i++) {
        fedc_value u = l->n->in[i];
        g.in[i] = name(l, u);
        g.in_type[i] = fedc__mlir_type_of(l->m, l->s, u, types[i], sizeof types[i]);
        g.in_elem[i] = fedc__mlir_elem(type_of(l, u)->dtype);
        unit |= broadcast_map(l, u, nest_clients, out, loops, maps[i], sizeof maps[i]);
        g.maps[i] = maps[i];
    }
    identity_map(loops, out_map, sizeof out_map);
    if (unit) iters[loops] = 'r', g.rank++; /* the unit loop: one step, the body never reads %out */
    g.init = fedc__mlir_splat(l->m, l->s, l->v, 0, init);
    fedc__mlir_generic_begin(l->m, &g);
    body(l, result);
    fedc__mlir_generic_end(l->m, &g, result);
    return l->m->st;
}

/* A reduction over loops of x's shape: `reduced` marks the loops (clients loop
 * first, when x has one) that are summed (or maxed); with keep, the output keeps
 * them as 1s. Writes into `result_name` (v's name, or a temporary). */
fedc_status fedc__mlir_reduce(const lower *l, fedc_value x, unsigned reduced, bool keep, bool max,
                                const char *result_name, const char *out_type) {
    const fedc_type *t = type_of(l, x);
    bool xc = clients(l, x);
    int loops = t->rank + xc;
    char iters[16] = {0}, in_map[160], out_map[160] = {0}, in_type[160], init[24], r[24];
    bool unit = false;
    for (int i = 0; i < loops; i++) {
        iters[i] = reduced & (1u << i) ? 'r' : 'p';
        if (!(reduced & (1u << i))) add_loop(out_map, sizeof out_map, i);
        else if (keep) unit |= at_zero(l, loops, out_map, sizeof out_map);
    }
    if (unit) iters[loops] = 'p'; /* the kept dims of 1, written through a loop of extent 1 */
    identity_map(loops, in_map, sizeof in_map);
    const char *elem = fedc__mlir_elem(t->dtype), *xin = name(l, x);
    char split[24];
    fedc__mlir_type_of(l->m, l->s, x, in_type, sizeof in_type);
    if (xc && (reduced & 1u) && !l->s->batched) xin = fedc__mlir_split_use(l->m, xin, in_type, split); /* over clients */
    fedc__mlir_generic g = {.rank = loops + unit, .iters = iters, .nin = 1, .in = {xin},
                            .in_type = {in_type}, .in_elem = {elem},
                            .maps = {in_map}, .out_map = out_map, .out_type = out_type, .out_elem = elem,
                            .result_name = result_name};
    char lit[40];
    if (max && t->dtype == FEDC_I32) snprintf(lit, sizeof lit, "-2147483648");
    else if (max) snprintf(lit, sizeof lit, t->dtype == FEDC_F32 ? "0xFF800000" : "0xFFF0000000000000");
    else snprintf(lit, sizeof lit, fedc_dtype_is_float(t->dtype) ? "0.0" : "0");
    fedc__mlir_tensor_const(l->m, init, lit, out_type);
    g.init = init;
    bool f = fedc_dtype_is_float(t->dtype);
    fedc__mlir_generic_begin(l->m, &g);
    emit2(l, max ? (f ? "arith.maximumf" : "arith.maxsi") : (f ? "arith.addf" : "arith.addi"), "%in0", "%out", elem, r);
    fedc__mlir_generic_end(l->m, &g, r);
    return l->m->st;
}

/* y = x * s element by element, s a scalar literal: a mean's division, as
 * fedc's aggregation multiplies by the inverse of the count. */
fedc_status fedc__mlir_scale(const lower *l, const char *x, const char *type, double s) {
    const fedc_type *t = type_of(l, l->v);
    bool c = clients(l, l->v);
    char map[160], init[24], r[24], k[24];
    identity_map(t->rank + c, map, sizeof map);
    const char *elem = fedc__mlir_elem(t->dtype);
    fedc__mlir_generic g = {.rank = t->rank + c, .iters = "pppppppp", .nin = 1, .in = {x}, .in_type = {type},
                            .in_elem = {elem}, .maps = {map}, .out_map = map, .out_type = type, .out_elem = elem,
                            .result_name = name(l, l->v)};
    g.init = fedc__mlir_splat(l->m, l->s, l->v, 0, init);
    fedc__mlir_generic_begin(l->m, &g);
    emit2(l, "arith.mulf", "%in0", constant(l, s, t->dtype, k), elem, r);
    fedc__mlir_generic_end(l->m, &g, r);
    return l->m->st;
}

void fedc__mlir_unary_begin(const lower *l, int rank, const char *iters, const char *in_map, const char *out_map,
                            fedc__mlir_unary *u) {
    const char *elem = fedc__mlir_elem(type_of(l, l->v)->dtype);
    u->g = (fedc__mlir_generic){.rank = rank, .iters = iters, .nin = 1, .in = {name(l, l->n->in[0])},
                                .in_type = {fedc__mlir_type_of(l->m, l->s, l->n->in[0], u->in_type, sizeof u->in_type)},
                                .in_elem = {elem}, .maps = {in_map}, .out_map = out_map,
                                .out_type = fedc__mlir_type_of(l->m, l->s, l->v, u->out_type, sizeof u->out_type),
                                .out_elem = elem, .result_name = name(l, l->v)};
    u->g.init = fedc__mlir_splat(l->m, l->s, l->v, 0, u->init);
    fedc__mlir_generic_begin(l->m, &u->g);
}

/* y[j...] = x[...] read through `in_map`: a transpose's permutation, or a
 * broadcast's map that drops the clients loop. */
fedc_status fedc__mlir_copy_through(const lower *l, const char *in_map) {
    const fedc_type *t = type_of(l, l->v);
    int c = clients(l, l->v);
    char out_map[160];
    identity_map(t->rank + c, out_map, sizeof out_map);
    fedc__mlir_unary u;
    fedc__mlir_unary_begin(l, t->rank + c, "pppppppp", in_map, out_map, &u);
    fedc__mlir_generic_end(l->m, &u.g, "%in0");
    return l->m->st;
}

/* The body's loop indices %i<k> of a generic of `loops` loops, into idx. */
void fedc__mlir_loop_indices(const lower *l, int loops, char idx[][24]) {
    for (int i = 0; i < loops; i++) {
        fedc__mlir_tmp(l->m, idx[i]);
        fedc__mlir_printf(l->m, "      %s = linalg.index %d : index\n", idx[i], i);
    }
}

/* An i32 index clamped into [0, n) as an index value: an exported module cannot
 * fail at run time the way fedc does on an index out of range, so it reads the
 * nearest row instead (docs/export.md). */
const char *fedc__mlir_clamped_index(const lower *l, const char *i32, int64_t n, char *out) {
    char lo[24], hi[24], a[24], b[24];
    constant(l, 0, FEDC_I32, lo), constant(l, (double)(n - 1), FEDC_I32, hi);
    emit2(l, "arith.minsi", emit2(l, "arith.maxsi", i32, lo, "i32", a), hi, "i32", b);
    fedc__mlir_tmp(l->m, out);
    fedc__mlir_printf(l->m, "      %s = arith.index_cast %s : i32 to index\n", out, b);
    return out;
}

/* `%r = tensor.extract x[idx...]` in a generic's body. */
void fedc__mlir_extract(const lower *l, const char *x, const char *xtype, char idx[][24], int n, const char *r) {
    fedc__mlir_printf(l->m, "      %s = tensor.extract %s[", r, x);
    for (int i = 0; i < n; i++) fedc__mlir_printf(l->m, "%s%s", i ? ", " : "", idx[i]);
    fedc__mlir_printf(l->m, "] : %s\n", xtype);
}
