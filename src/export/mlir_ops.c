/* The lowerings: each op of ops.def as upstream MLIR, in fedc's layouts and with
 * fedc's semantics (numpy broadcasting, NaN-propagating maximum, saturating float
 * to int casts, relu(NaN) = 0). A value that carries the clients axis is
 * lowered with one more loop in front, d0 over the clients, so every op applies
 * to @clients values (and to a map's body) client by client. The table at the
 * bottom comes from ops.def: an op without a lowering says so by name. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "export/mlir.h"

/* One node being lowered. */
typedef struct lower {
    fedc__mlir *m;
    fedc__mlir_scope *s;
    fedc_value v;
    const fedc__node *n;
} lower;

typedef fedc_status (*lower_fn)(const lower *l);

static const fedc_type *type_of(const lower *l, fedc_value u) { return &l->s->p->nodes[u].type; }
static bool clients(const lower *l, fedc_value u) { return fedc__mlir_has_clients(l->s, u); }
static const char *name(const lower *l, fedc_value u) { return l->s->name[u]; }
static bool is_float(const lower *l, fedc_value u) { return fedc_dtype_is_float(type_of(l, u)->dtype); }
static fedc_status unsupported(const lower *l, const char *why) {
    return fedc__mlir_fail(l->m, l->s, l->v, FEDC_EUNSUPPORTED, "%s", why);
}

/* Appends "d<k>" (k counted from the clients loop) or "0" to a map's results. */
static void add_expr(char *buf, size_t size, const char *expr) {
    size_t n = strlen(buf);
    snprintf(buf + n, size - n, "%s%s", n ? ", " : "", expr);
}
static void add_loop(char *buf, size_t size, int loop) {
    char e[16];
    snprintf(e, sizeof e, "d%d", loop);
    add_expr(buf, size, e);
}

/* How operand u is read in a loop nest over `out` (of rank `rank` after the
 * clients loop, if the nest has one): numpy broadcasting, dims right-aligned, a
 * dim of 1 against a larger one read at 0. */
static void broadcast_map(const lower *l, fedc_value u, bool nest_clients, const fedc_type *out, char *buf,
                          size_t size) {
    const fedc_type *t = type_of(l, u);
    int lead = nest_clients ? 1 : 0;
    buf[0] = 0;
    if (clients(l, u) && nest_clients) add_loop(buf, size, 0);
    for (int i = 0; i < t->rank; i++) {
        int j = out->rank - t->rank + i;
        if (t->dims[i] == 1 && out->dims[j] != 1) add_expr(buf, size, "0");
        else add_loop(buf, size, lead + j);
    }
}

static void identity_map(int loops, char *buf, size_t size) {
    buf[0] = 0;
    for (int i = 0; i < loops; i++) add_loop(buf, size, i);
}

/* ---------------------------------------------------------- elementwise -- */

/* Writes the body's lines computing one element from %in0, %in1, ...; the SSA name
 * of the result goes to `result` (of 24). */
typedef void (*body_fn)(const lower *l, char *result);

/* v = f(operands) element by element over v's shape, with broadcasting. */
static fedc_status elementwise(const lower *l, body_fn body) {
    char types[4][160], maps[4][160], out_map[160], out_type[160], init[24], result[24];
    const fedc_type *out = type_of(l, l->v);
    bool nest_clients = clients(l, l->v);
    int loops = out->rank + nest_clients;
    fedc__mlir_generic g = {.rank = loops, .iters = "pppppppp", .nin = l->n->nin, .out_map = out_map,
                            .out_type = fedc__mlir_type_of(l->m, l->s, l->v, out_type, sizeof out_type),
                            .out_elem = fedc__mlir_elem(out->dtype), .result_name = name(l, l->v)};
    if (l->n->nin > 4) return unsupported(l, "more than 4 operands in one elementwise op");
    for (int i = 0; i < l->n->nin; i++) {
        fedc_value u = l->n->in[i];
        g.in[i] = name(l, u);
        g.in_type[i] = fedc__mlir_type_of(l->m, l->s, u, types[i], sizeof types[i]);
        g.in_elem[i] = fedc__mlir_elem(type_of(l, u)->dtype);
        broadcast_map(l, u, nest_clients, out, maps[i], sizeof maps[i]);
        g.maps[i] = maps[i];
    }
    identity_map(loops, out_map, sizeof out_map);
    g.init = fedc__mlir_splat(l->m, l->s, l->v, 0, init);
    fedc__mlir_generic_begin(l->m, &g);
    body(l, result);
    fedc__mlir_generic_end(l->m, &g, result);
    return l->m->st;
}

/* The body's `op a, b : type` into a fresh temporary. */
static const char *emit2(const lower *l, const char *op, const char *a, const char *b, const char *type, char *t) {
    fedc__mlir_tmp(l->m, t);
    fedc__mlir_printf(l->m, "      %s = %s %s, %s : %s\n", t, op, a, b, type);
    return t;
}
static const char *emit1(const lower *l, const char *op, const char *a, const char *type, char *t) {
    fedc__mlir_tmp(l->m, t);
    fedc__mlir_printf(l->m, "      %s = %s %s : %s\n", t, op, a, type);
    return t;
}
static const char *constant(const lower *l, double value, fedc_dtype dt, char *t) {
    char lit[32];
    fedc__mlir_tmp(l->m, t);
    fedc__mlir_printf(l->m, "      %s = arith.constant %s : %s\n", t, fedc__mlir_literal(dt, value, lit, sizeof lit),
                      fedc__mlir_elem(dt));
    return t;
}

static const char *binary_op(fedc__op op, bool f) {
    switch (op) {
    case FEDC_OP_ADD: return f ? "arith.addf" : "arith.addi";
    case FEDC_OP_SUB: return f ? "arith.subf" : "arith.subi";
    case FEDC_OP_MUL: return f ? "arith.mulf" : "arith.muli";
    case FEDC_OP_DIV: return f ? "arith.divf" : "arith.divsi";
    case FEDC_OP_MAXIMUM: return f ? "arith.maximumf" : "arith.maxsi"; /* maximumf propagates NaN, as fedc */
    case FEDC_OP_MINIMUM: return f ? "arith.minimumf" : "arith.minsi";
    default: return NULL;
    }
}

static const char *predicate(fedc__op op, bool f) {
    static const char *const fp[] = {"oeq", "une", "olt", "ole", "ogt", "oge"};
    static const char *const ip[] = {"eq", "ne", "slt", "sle", "sgt", "sge"};
    int k = (int)op - (int)FEDC_OP_EQ;
    return f ? fp[k] : ip[k];
}

static void body_binary(const lower *l, char *result) {
    const char *type = fedc__mlir_elem(type_of(l, l->n->in[0])->dtype);
    bool f = is_float(l, l->n->in[0]);
    fedc__op op = l->n->op;
    if (op >= FEDC_OP_EQ && op <= FEDC_OP_GE) {
        fedc__mlir_tmp(l->m, result);
        fedc__mlir_printf(l->m, "      %s = %s %s, %%in0, %%in1 : %s\n", result, f ? "arith.cmpf" : "arith.cmpi",
                          predicate(op, f), type);
        return;
    }
    emit2(l, binary_op(op, f), "%in0", "%in1", type, result);
}

static void body_select(const lower *l, char *result) {
    fedc__mlir_tmp(l->m, result);
    fedc__mlir_printf(l->m, "      %s = arith.select %%in0, %%in1, %%in2 : %s\n", result,
                      fedc__mlir_elem(type_of(l, l->v)->dtype));
}

static void body_unary(const lower *l, char *result) {
    fedc_dtype dt = type_of(l, l->v)->dtype;
    const char *type = fedc__mlir_elem(dt);
    char a[24], b[24], c[24], d[24], e[24];
    switch (l->n->op) {
    case FEDC_OP_NEG:
        if (dt == FEDC_I32) emit2(l, "arith.subi", constant(l, 0, dt, a), "%in0", type, result);
        else emit1(l, "arith.negf", "%in0", type, result);
        return;
    case FEDC_OP_EXP: emit1(l, "math.exp", "%in0", type, result); return;
    case FEDC_OP_LOG: emit1(l, "math.log", "%in0", type, result); return;
    case FEDC_OP_TANH: emit1(l, "math.tanh", "%in0", type, result); return;
    case FEDC_OP_SQRT: emit1(l, "math.sqrt", "%in0", type, result); return;
    case FEDC_OP_SQUARE: emit2(l, "arith.mulf", "%in0", "%in0", type, result); return;
    case FEDC_OP_POW:
        emit2(l, "math.powf", "%in0", constant(l, fedc__attr_float(l->n, FEDC_ATTR_EXPONENT, 1), dt, a), type, result);
        return;
    case FEDC_OP_RELU: /* x > 0 ? x : 0, so relu(NaN) = 0 as in fedc */
        fedc__mlir_tmp(l->m, b);
        fedc__mlir_printf(l->m, "      %s = arith.cmpf ogt, %%in0, %s : %s\n", b, constant(l, 0, dt, a), type);
        fedc__mlir_tmp(l->m, result);
        fedc__mlir_printf(l->m, "      %s = arith.select %s, %%in0, %s : %s\n", result, b, a, type);
        return;
    case FEDC_OP_SIGMOID: /* as fedc: exp only ever sees -|x| */
        constant(l, 0, dt, a), constant(l, 1, dt, b);
        fedc__mlir_tmp(l->m, c);
        fedc__mlir_printf(l->m, "      %s = math.absf %%in0 : %s\n", c, type);
        emit1(l, "arith.negf", c, type, d);
        emit1(l, "math.exp", d, type, e); /* e = exp(-|x|) */
        emit2(l, "arith.addf", b, e, type, c);
        emit2(l, "arith.divf", b, c, type, d); /* 1 / (1 + e): x >= 0 */
        char f[24];
        emit2(l, "arith.divf", e, c, type, f); /* e / (1 + e): x < 0 */
        fedc__mlir_tmp(l->m, b);
        fedc__mlir_printf(l->m, "      %s = arith.cmpf oge, %%in0, %s : %s\n", b, a, type);
        fedc__mlir_tmp(l->m, result);
        fedc__mlir_printf(l->m, "      %s = arith.select %s, %s, %s : %s\n", result, b, d, f, type);
        return;
    default: snprintf(result, 24, "%%in0"); return;
    }
}

static void body_identity(const lower *l, char *result) {
    (void)l;
    snprintf(result, 24, "%%in0");
}

/* fedc's casts: float to int saturates (NaN to 0), int to u8 wraps, to bool is != 0. */
static void body_cast(const lower *l, char *result) {
    fedc_dtype from = type_of(l, l->n->in[0])->dtype, to = type_of(l, l->v)->dtype;
    const char *ft = fedc__mlir_elem(from), *tt = fedc__mlir_elem(to);
    bool ffrom = fedc_dtype_is_float(from), fto = fedc_dtype_is_float(to), usrc = from == FEDC_U8 || from == FEDC_BOOL;
    char a[24], b[24], c[24], d[24];
    if (from == to) return body_identity(l, result);
    if (to == FEDC_BOOL) {
        fedc__mlir_tmp(l->m, a);
        fedc__mlir_printf(l->m, "      %s = arith.constant 0%s : %s\n", a, ffrom ? ".0" : "", ft);
        fedc__mlir_tmp(l->m, result);
        fedc__mlir_printf(l->m, "      %s = %s, %%in0, %s : %s\n", result, ffrom ? "arith.cmpf une" : "arith.cmpi ne", a,
                          ft);
        return;
    }
    if (ffrom && fto) {
        fedc__mlir_tmp(l->m, result);
        fedc__mlir_printf(l->m, "      %s = %s %%in0 : %s to %s\n", result, to == FEDC_F64 ? "arith.extf" : "arith.truncf",
                          ft, tt);
    } else if (!ffrom && fto) {
        fedc__mlir_tmp(l->m, result);
        fedc__mlir_printf(l->m, "      %s = %s %%in0 : %s to %s\n", result, usrc ? "arith.uitofp" : "arith.sitofp", ft, tt);
    } else if (ffrom) { /* to i32 or u8: clamp into range, NaN to 0, then truncate */
        /* hi: the largest source float that converts (2^31 - 1 rounds up to 2^31 in f32) */
        double lo = to == FEDC_I32 ? -2147483648.0 : 0, hi = to == FEDC_I32 ? (from == FEDC_F32 ? 2147483520.0 : 2147483647.0) : 255;
        char e[24], g[24];
        emit2(l, "arith.maximumf", "%in0", constant(l, lo, from, a), ft, b);
        emit2(l, "arith.minimumf", b, constant(l, hi, from, a), ft, c);
        fedc__mlir_tmp(l->m, d);
        fedc__mlir_printf(l->m, "      %s = arith.cmpf uno, %%in0, %%in0 : %s\n", d, ft);
        fedc__mlir_tmp(l->m, b);
        fedc__mlir_printf(l->m, "      %s = arith.select %s, %s, %s : %s\n", b, d, constant(l, 0, from, a), c, ft);
        if (to == FEDC_U8) { /* [0, 255] */
            fedc__mlir_tmp(l->m, result);
            fedc__mlir_printf(l->m, "      %s = arith.fptoui %s : %s to %s\n", result, b, ft, tt);
            return;
        }
        fedc__mlir_tmp(l->m, e);
        fedc__mlir_printf(l->m, "      %s = arith.fptosi %s : %s to %s\n", e, b, ft, tt);
        fedc__mlir_tmp(l->m, g); /* at or past 2^31: the largest i32, as fedc saturates */
        fedc__mlir_printf(l->m, "      %s = arith.cmpf oge, %%in0, %s : %s\n", g, constant(l, 2147483648.0, from, a), ft);
        fedc__mlir_tmp(l->m, result);
        fedc__mlir_printf(l->m, "      %s = arith.select %s, %s, %s : %s\n", result, g,
                          constant(l, 2147483647.0, to, c), e, tt);
    } else { /* integer to integer: widen unsigned sources, truncate to u8 */
        fedc__mlir_tmp(l->m, result);
        bool wider = fedc_dtype_size(to) > fedc_dtype_size(from) || from == FEDC_BOOL;
        fedc__mlir_printf(l->m, "      %s = %s %%in0 : %s to %s\n", result, wider ? (usrc ? "arith.extui" : "arith.extsi") : "arith.trunci",
                          ft, tt);
    }
}

static fedc_status lower_binary(const lower *l) { return elementwise(l, body_binary); }
static fedc_status lower_unary(const lower *l) {
    if (l->n->op != FEDC_OP_NEG && !is_float(l, l->v)) return unsupported(l, "an integer operand");
    return elementwise(l, body_unary);
}
static fedc_status lower_select(const lower *l) { return elementwise(l, body_select); }
static fedc_status lower_cast(const lower *l) { return elementwise(l, body_cast); }
static fedc_status lower_broadcast_to(const lower *l) { return elementwise(l, body_identity); }

/* The body's index of loop `loop`, as an i32 (into out, of 24). */
static const char *loop_index_i32(const lower *l, int loop, char *out) {
    char i[24];
    fedc__mlir_tmp(l->m, i);
    fedc__mlir_printf(l->m, "      %s = linalg.index %d : index\n", i, loop);
    fedc__mlir_tmp(l->m, out);
    fedc__mlir_printf(l->m, "      %s = arith.index_cast %s : index to i32\n", out, i);
    return out;
}

/* ------------------------------------------------------------ sources -- */

/* The constant's bytes, exactly (dense<"0x..."> is little-endian raw data); a
 * @clients constant is one copy that every client reads, spread along the axis. */
static fedc_status lower_constant(const lower *l) {
    const fedc_type *t = type_of(l, l->v);
    char type[160], local[24];
    fedc__mlir_tensor(l->m, t, false, type, sizeof type);
    const char *dst = clients(l, l->v) ? fedc__mlir_tmp(l->m, local) : name(l, l->v);
    int64_t count = fedc_type_count(t);
    fedc__mlir_printf(l->m, "    %s = arith.constant dense<", dst);
    if (t->dtype == FEDC_BOOL) {
        fedc__mlir_printf(l->m, "[");
        for (int64_t i = 0; i < count; i++)
            fedc__mlir_printf(l->m, "%s%s", i ? ", " : "", ((const uint8_t *)l->n->data)[i] ? "true" : "false");
        fedc__mlir_printf(l->m, "]");
    } else {
        fedc__mlir_printf(l->m, "\"0x");
        const uint8_t *b = l->n->data;
        for (size_t i = 0; i < (size_t)count * fedc_dtype_size(t->dtype); i++) fedc__mlir_printf(l->m, "%02X", b[i]);
        fedc__mlir_printf(l->m, "\"");
    }
    fedc__mlir_printf(l->m, "> : %s\n", type);
    if (t->dtype == FEDC_BOOL && t->rank > 1) return unsupported(l, "a bool constant of rank > 1");
    if (!clients(l, l->v)) return l->m->st;
    char out_type[160], out_map[160], in_map[160], init[24];
    identity_map(t->rank + 1, out_map, sizeof out_map);
    in_map[0] = 0;
    for (int i = 0; i < t->rank; i++) add_loop(in_map, sizeof in_map, i + 1);
    fedc__mlir_generic g = {.rank = t->rank + 1, .iters = "pppppppp", .nin = 1, .in = {local}, .in_type = {type},
                            .in_elem = {fedc__mlir_elem(t->dtype)}, .maps = {in_map}, .out_map = out_map,
                            .out_type = fedc__mlir_type_of(l->m, l->s, l->v, out_type, sizeof out_type),
                            .out_elem = fedc__mlir_elem(t->dtype), .result_name = name(l, l->v)};
    g.init = fedc__mlir_splat(l->m, l->s, l->v, 0, init);
    fedc__mlir_generic_begin(l->m, &g);
    fedc__mlir_generic_end(l->m, &g, "%in0");
    return l->m->st;
}

static void body_iota(const lower *l, char *result) {
    int axis = (int)fedc__attr_int(l->n, FEDC_ATTR_AXIS, 0) + (clients(l, l->v) ? 1 : 0);
    fedc_dtype dt = type_of(l, l->v)->dtype;
    char k[24];
    loop_index_i32(l, axis, k);
    if (dt == FEDC_I32) {
        snprintf(result, 24, "%s", k);
        return;
    }
    fedc__mlir_tmp(l->m, result);
    fedc__mlir_printf(l->m, "      %s = arith.sitofp %s : i32 to %s\n", result, k, fedc__mlir_elem(dt));
}

static fedc_status lower_iota(const lower *l) { return elementwise(l, body_iota); }

static fedc_status lower_num_clients(const lower *l) {
    char type[160], lit[32];
    fedc_dtype dt = type_of(l, l->v)->dtype;
    if (dt == FEDC_I32) snprintf(lit, sizeof lit, "%d", l->m->clients);
    else snprintf(lit, sizeof lit, "%d.0", l->m->clients);
    fedc__mlir_printf(l->m, "    %s = arith.constant dense<%s> : %s\n", name(l, l->v), lit,
                      fedc__mlir_type_of(l->m, l->s, l->v, type, sizeof type));
    return l->m->st;
}

/* ---------------------------------------------------------- reductions -- */

/* A reduction over loops of x's shape: `reduced` marks the loops (clients loop
 * first, when x has one) that are summed (or maxed); with keep, the output keeps
 * them as 1s. Writes into `result_name` (v's name, or a temporary). */
static fedc_status reduce_loops(const lower *l, fedc_value x, unsigned reduced, bool keep, bool max, bool out_clients,
                                const char *result_name, const char *out_type) {
    const fedc_type *t = type_of(l, x);
    bool xc = clients(l, x);
    int loops = t->rank + xc;
    char iters[16] = {0}, in_map[160], out_map[160] = {0}, in_type[160], init[24], r[24];
    for (int i = 0; i < loops; i++) {
        iters[i] = reduced & (1u << i) ? 'r' : 'p';
        if (!(reduced & (1u << i))) add_loop(out_map, sizeof out_map, i);
        else if (keep) add_expr(out_map, sizeof out_map, "0");
    }
    identity_map(loops, in_map, sizeof in_map);
    const char *elem = fedc__mlir_elem(t->dtype);
    fedc__mlir_generic g = {.rank = loops, .iters = iters, .nin = 1, .in = {name(l, x)},
                            .in_type = {fedc__mlir_type_of(l->m, l->s, x, in_type, sizeof in_type)}, .in_elem = {elem},
                            .maps = {in_map}, .out_map = out_map, .out_type = out_type, .out_elem = elem,
                            .result_name = result_name};
    fedc__mlir_tmp(l->m, init);
    char lit[40];
    if (max && t->dtype == FEDC_I32) snprintf(lit, sizeof lit, "-2147483648");
    else if (max) snprintf(lit, sizeof lit, t->dtype == FEDC_F32 ? "0xFF800000" : "0xFFF0000000000000");
    else snprintf(lit, sizeof lit, fedc_dtype_is_float(t->dtype) ? "0.0" : "0");
    fedc__mlir_printf(l->m, "    %s = arith.constant dense<%s> : %s\n", init, lit, out_type);
    g.init = init;
    (void)out_clients;
    bool f = fedc_dtype_is_float(t->dtype);
    fedc__mlir_generic_begin(l->m, &g);
    emit2(l, max ? (f ? "arith.maximumf" : "arith.maxsi") : (f ? "arith.addf" : "arith.addi"), "%in0", "%out", elem, r);
    fedc__mlir_generic_end(l->m, &g, r);
    return l->m->st;
}

/* y = x * s element by element, s a scalar literal: a mean's division, as
 * fedc's aggregation multiplies by the inverse of the count. */
static fedc_status scale(const lower *l, const char *x, const char *type, double s) {
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

static fedc_status lower_reduce(const lower *l) {
    fedc_value x = l->n->in[0];
    const fedc_type *t = type_of(l, x);
    int count, lead = clients(l, x) ? 1 : 0;
    const int64_t *axes = fedc__attr_ints(l->n, FEDC_ATTR_AXES, &count);
    unsigned reduced = 0;
    int64_t n = 1;
    for (int i = 0; i < count; i++) {
        int ax = fedc__axis(axes[i], t->rank);
        reduced |= 1u << (ax + lead);
        n *= t->dims[ax];
    }
    bool keep = fedc__attr_int(l->n, FEDC_ATTR_KEEPDIMS, 0) != 0, mean = l->n->op == FEDC_OP_REDUCE_MEAN;
    char type[160], sum[24];
    fedc__mlir_type_of(l->m, l->s, l->v, type, sizeof type);
    fedc_status st = reduce_loops(l, x, reduced, keep, l->n->op == FEDC_OP_REDUCE_MAX, lead, mean ? fedc__mlir_tmp(l->m, sum) : name(l, l->v), type);
    if (!st && mean) st = scale(l, sum, type, 1.0 / (double)n);
    return st;
}

/* sum and mean over the clients axis (axis 0 of the clients tensor). */
static fedc_status lower_sum(const lower *l) {
    char type[160], sum[24];
    fedc__mlir_type_of(l->m, l->s, l->v, type, sizeof type);
    bool mean = l->n->op == FEDC_OP_MEAN;
    fedc_status st = reduce_loops(l, l->n->in[0], 1u, false, false, false, mean ? fedc__mlir_tmp(l->m, sum) : name(l, l->v), type);
    if (!st && mean) st = scale(l, sum, type, 1.0 / l->m->clients);
    return st;
}

/* weighted_mean(x, w) = sum_i w_i x_i * (1 / sum_i w_i), as fedc aggregates it. */
static fedc_status lower_weighted_mean(const lower *l) {
    fedc_value x = l->n->in[0], w = l->n->in[1];
    const fedc_type *t = type_of(l, x);
    int loops = t->rank + 1;
    char iters[16] = "r", xmap[160], wmap[160] = "d0", out_map[160] = {0}, xt[160], wt[160], type[160], wtype[160];
    char num[24], den[24], init[24], winit[24], a[24], b[24], inv[24];
    for (int i = 1; i < loops; i++) iters[i] = 'p', add_loop(out_map, sizeof out_map, i);
    identity_map(loops, xmap, sizeof xmap);
    const char *elem = fedc__mlir_elem(t->dtype);
    fedc__mlir_type_of(l->m, l->s, l->v, type, sizeof type);
    snprintf(wtype, sizeof wtype, "tensor<%s>", elem);
    fedc__mlir_generic g = {.rank = loops, .iters = iters, .nin = 2, .in = {name(l, x), name(l, w)},
                            .in_type = {fedc__mlir_type_of(l->m, l->s, x, xt, sizeof xt),
                                        fedc__mlir_type_of(l->m, l->s, w, wt, sizeof wt)},
                            .in_elem = {elem, elem}, .maps = {xmap, wmap}, .out_map = out_map, .out_type = type,
                            .out_elem = elem, .result_name = fedc__mlir_tmp(l->m, num)};
    g.init = fedc__mlir_splat(l->m, l->s, l->v, 0, init);
    fedc__mlir_generic_begin(l->m, &g);
    emit2(l, "arith.addf", emit2(l, "arith.mulf", "%in0", "%in1", elem, a), "%out", elem, b);
    fedc__mlir_generic_end(l->m, &g, b);
    /* the weights' sum */
    fedc__mlir_tmp(l->m, winit);
    fedc__mlir_printf(l->m, "    %s = arith.constant dense<0.0> : %s\n", winit, wtype);
    fedc__mlir_generic gw = {.rank = 1, .iters = "r", .nin = 1, .in = {name(l, w)}, .in_type = {wt}, .in_elem = {elem},
                             .maps = {"d0"}, .out_map = "", .out_type = wtype, .out_elem = elem,
                             .init = winit, .result_name = fedc__mlir_tmp(l->m, den)};
    fedc__mlir_generic_begin(l->m, &gw);
    emit2(l, "arith.addf", "%in0", "%out", elem, a);
    fedc__mlir_generic_end(l->m, &gw, a);
    /* num * (1 / den), den read as a scalar by every element */
    char map[160], dmap[8] = "", r[24], one[24];
    identity_map(t->rank, map, sizeof map);
    fedc__mlir_generic gd = {.rank = t->rank, .iters = "pppppppp", .nin = 2, .in = {num, den}, .in_type = {type, wtype},
                             .in_elem = {elem, elem}, .maps = {map, dmap}, .out_map = map, .out_type = type,
                             .out_elem = elem, .result_name = name(l, l->v)};
    gd.init = fedc__mlir_splat(l->m, l->s, l->v, 0, init);
    fedc__mlir_generic_begin(l->m, &gd);
    emit2(l, "arith.divf", constant(l, 1, t->dtype, one), "%in1", elem, inv);
    emit2(l, "arith.mulf", "%in0", inv, elem, r);
    fedc__mlir_generic_end(l->m, &gd, r);
    return l->m->st;
}

/* ------------------------------------------------------------- shapes -- */

/* y[j...] = x[...] read through `in_map`: a transpose's permutation, or a
 * broadcast's map that drops the clients loop. */
static fedc_status copy_through(const lower *l, const char *in_map) {
    const fedc_type *t = type_of(l, l->v);
    bool c = clients(l, l->v);
    char out_map[160], in_type[160], out_type[160], init[24];
    identity_map(t->rank + c, out_map, sizeof out_map);
    const char *elem = fedc__mlir_elem(t->dtype);
    fedc__mlir_generic g = {.rank = t->rank + c, .iters = "pppppppp", .nin = 1, .in = {name(l, l->n->in[0])},
                            .in_type = {fedc__mlir_type_of(l->m, l->s, l->n->in[0], in_type, sizeof in_type)},
                            .in_elem = {elem}, .maps = {in_map}, .out_map = out_map,
                            .out_type = fedc__mlir_type_of(l->m, l->s, l->v, out_type, sizeof out_type),
                            .out_elem = elem, .result_name = name(l, l->v)};
    g.init = fedc__mlir_splat(l->m, l->s, l->v, 0, init);
    fedc__mlir_generic_begin(l->m, &g);
    fedc__mlir_generic_end(l->m, &g, "%in0");
    return l->m->st;
}

static fedc_status lower_transpose(const lower *l) {
    int count;
    const int64_t *perm = fedc__attr_ints(l->n, FEDC_ATTR_PERM, &count);
    int lead = clients(l, l->v) ? 1 : 0, inverse[FEDC_MAX_RANK];
    for (int j = 0; j < count; j++) inverse[perm[j]] = j; /* y dim j is x dim perm[j] */
    char in_map[160] = {0};
    if (lead) add_loop(in_map, sizeof in_map, 0);
    for (int k = 0; k < count; k++) add_loop(in_map, sizeof in_map, lead + inverse[k]);
    return copy_through(l, in_map);
}

/* broadcast: the server value, read by every client. */
static fedc_status lower_broadcast(const lower *l) {
    char in_map[160] = {0};
    for (int i = 0; i < type_of(l, l->v)->rank; i++) add_loop(in_map, sizeof in_map, i + 1);
    return copy_through(l, in_map);
}

/* tensor.reshape with the shape as a constant (the clients axis kept in front). */
static fedc_status lower_reshape(const lower *l) {
    const fedc_type *t = type_of(l, l->v);
    bool c = clients(l, l->v);
    char shape[24], in_type[160], out_type[160];
    fedc__mlir_tmp(l->m, shape);
    fedc__mlir_printf(l->m, "    %s = arith.constant dense<[", shape);
    if (c) fedc__mlir_printf(l->m, "%d%s", l->m->clients, t->rank ? ", " : "");
    for (int i = 0; i < t->rank; i++) fedc__mlir_printf(l->m, "%s%lld", i ? ", " : "", (long long)t->dims[i]);
    fedc__mlir_printf(l->m, "]> : tensor<%dxi64>\n", t->rank + c);
    fedc__mlir_printf(l->m, "    %s = tensor.reshape %s(%s) : (%s, tensor<%dxi64>) -> %s\n", name(l, l->v),
                      name(l, l->n->in[0]), shape, fedc__mlir_type_of(l->m, l->s, l->n->in[0], in_type, sizeof in_type),
                      t->rank + c, fedc__mlir_type_of(l->m, l->s, l->v, out_type, sizeof out_type));
    return l->m->st;
}

static void print_list(fedc__mlir *m, bool clients_first, int64_t first, int n, const int64_t *v, int64_t fill) {
    fedc__mlir_printf(m, "[");
    if (clients_first) fedc__mlir_printf(m, "%lld%s", (long long)first, n ? ", " : "");
    for (int i = 0; i < n; i++) fedc__mlir_printf(m, "%s%lld", i ? ", " : "", (long long)(v ? v[i] : fill));
    fedc__mlir_printf(m, "]");
}

static fedc_status lower_slice(const lower *l) {
    const fedc_type *x = type_of(l, l->n->in[0]);
    bool c = clients(l, l->v);
    int ns, nl;
    const int64_t *start = fedc__attr_ints(l->n, FEDC_ATTR_START, &ns), *size = fedc__attr_ints(l->n, FEDC_ATTR_SHAPE, &nl);
    char in_type[160], out_type[160];
    fedc__mlir_printf(l->m, "    %s = tensor.extract_slice %s", name(l, l->v), name(l, l->n->in[0]));
    print_list(l->m, c, 0, x->rank, start, 0);
    print_list(l->m, c, l->m->clients, x->rank, size, 0);
    print_list(l->m, c, 1, x->rank, NULL, 1);
    fedc__mlir_printf(l->m, " : %s to %s\n", fedc__mlir_type_of(l->m, l->s, l->n->in[0], in_type, sizeof in_type),
                      fedc__mlir_type_of(l->m, l->s, l->v, out_type, sizeof out_type));
    return l->m->st;
}

/* into[offsets...] = x: tensor.insert_slice, for concat and pad. */
static void insert(const lower *l, fedc_value x, const char *into, const int64_t *offsets, const char *result) {
    const fedc_type *t = type_of(l, x);
    bool c = clients(l, l->v);
    char in_type[160], out_type[160];
    fedc__mlir_printf(l->m, "    %s = tensor.insert_slice %s into %s", result, name(l, x), into);
    print_list(l->m, c, 0, t->rank, offsets, 0);
    print_list(l->m, c, l->m->clients, t->rank, t->dims, 0);
    print_list(l->m, c, 1, t->rank, NULL, 1);
    fedc__mlir_printf(l->m, " : %s into %s\n", fedc__mlir_type_of(l->m, l->s, x, in_type, sizeof in_type),
                      fedc__mlir_type_of(l->m, l->s, l->v, out_type, sizeof out_type));
}

static fedc_status lower_concat(const lower *l) {
    int ax = fedc__axis(fedc__attr_int(l->n, FEDC_ATTR_AXIS, 0), type_of(l, l->v)->rank);
    int64_t offsets[FEDC_MAX_RANK] = {0};
    char acc[24], next[24];
    fedc__mlir_splat(l->m, l->s, l->v, 0, acc);
    for (int i = 0; i < l->n->nin; i++) {
        fedc_value x = l->n->in[i];
        const char *result = i == l->n->nin - 1 ? name(l, l->v) : fedc__mlir_tmp(l->m, next);
        insert(l, x, acc, offsets, result);
        offsets[ax] += type_of(l, x)->dims[ax];
        snprintf(acc, sizeof acc, "%s", result);
    }
    return l->m->st;
}

static fedc_status lower_pad(const lower *l) {
    int count;
    const int64_t *lo = fedc__attr_ints(l->n, FEDC_ATTR_LO, &count);
    char zeros[24];
    fedc__mlir_splat(l->m, l->s, l->v, 0, zeros);
    insert(l, l->n->in[0], zeros, lo, name(l, l->v));
    return l->m->st;
}


/* ------------------------------------------------------ softmax family -- */

/* Drops the last dim of a map's results ("d0, d1, d2" -> "d0, d1"). */
static void rows_map(int loops, char *buf, size_t size) { identity_map(loops - 1, buf, size); }

/* lse[r] = m[r] + log(sum_c exp(x[r, c] - m[r])), m the row's max, over the last
 * axis: fedc's row_logsumexp. Names the result in `lse`, its type in `type`. */
static fedc_status row_logsumexp(const lower *l, fedc_value x, char *lse, char *type) {
    fedc_type rows = *type_of(l, x);
    rows.rank--;
    bool c = clients(l, x);
    int loops = type_of(l, x)->rank + c;
    const char *elem = fedc__mlir_elem(rows.dtype);
    char mx[24], sum[24], init[24], xt[160], all[160], part[160], iters[16] = {0}, d[24], e[24], r[24];
    fedc__mlir_tensor(l->m, &rows, c, type, 160);
    if (reduce_loops(l, x, 1u << (loops - 1), false, true, false, fedc__mlir_tmp(l->m, mx), type)) return l->m->st;
    for (int i = 0; i < loops; i++) iters[i] = i == loops - 1 ? 'r' : 'p';
    identity_map(loops, all, sizeof all);
    rows_map(loops, part, sizeof part);
    fedc__mlir_tmp(l->m, init);
    fedc__mlir_printf(l->m, "    %s = arith.constant dense<0.0> : %s\n", init, type);
    fedc__mlir_generic g = {.rank = loops, .iters = iters, .nin = 2, .in = {name(l, x), mx},
                            .in_type = {fedc__mlir_type_of(l->m, l->s, x, xt, sizeof xt), type}, .in_elem = {elem, elem},
                            .maps = {all, part}, .out_map = part, .out_type = type, .out_elem = elem, .init = init,
                            .result_name = fedc__mlir_tmp(l->m, sum)};
    fedc__mlir_generic_begin(l->m, &g);
    emit2(l, "arith.addf", emit1(l, "math.exp", emit2(l, "arith.subf", "%in0", "%in1", elem, d), elem, e), "%out", elem, r);
    fedc__mlir_generic_end(l->m, &g, r);
    fedc__mlir_tmp(l->m, init);
    fedc__mlir_printf(l->m, "    %s = arith.constant dense<0.0> : %s\n", init, type);
    fedc__mlir_generic h = {.rank = loops - 1, .iters = "pppppppp", .nin = 2, .in = {mx, sum}, .in_type = {type, type},
                            .in_elem = {elem, elem}, .maps = {part, part}, .out_map = part, .out_type = type,
                            .out_elem = elem, .init = init, .result_name = fedc__mlir_tmp(l->m, lse)};
    fedc__mlir_generic_begin(l->m, &h);
    emit2(l, "arith.addf", "%in0", emit1(l, "math.log", "%in1", elem, d), elem, r);
    fedc__mlir_generic_end(l->m, &h, r);
    return l->m->st;
}

/* A loop nest over v's shape whose operands are x (whole) and then row values
 * (the last loop dropped): log_softmax and softmax_cross_entropy_grad. */
static void rows_generic(const lower *l, fedc__mlir_generic *g, char maps[2][160], char *types, int nrows,
                         const char *const *row_names, const char *const *row_types, const char *const *row_elems,
                         char *init) {
    bool c = clients(l, l->v);
    int loops = type_of(l, l->v)->rank + c;
    identity_map(loops, maps[0], 160);
    rows_map(loops, maps[1], 160);
    *g = (fedc__mlir_generic){.rank = loops, .iters = "pppppppp", .nin = 1 + nrows, .in = {name(l, l->n->in[0])},
                              .in_type = {fedc__mlir_type_of(l->m, l->s, l->n->in[0], types, 160)},
                              .in_elem = {fedc__mlir_elem(type_of(l, l->n->in[0])->dtype)}, .maps = {maps[0]},
                              .out_map = maps[0], .out_type = types + 160,
                              .out_elem = fedc__mlir_elem(type_of(l, l->v)->dtype), .result_name = name(l, l->v)};
    fedc__mlir_type_of(l->m, l->s, l->v, types + 160, 160);
    for (int i = 0; i < nrows; i++) {
        g->in[1 + i] = row_names[i], g->in_type[1 + i] = row_types[i], g->maps[1 + i] = maps[1];
        g->in_elem[1 + i] = row_elems[i];
    }
    g->init = fedc__mlir_splat(l->m, l->s, l->v, 0, init);
}

static fedc_status lower_log_softmax(const lower *l) {
    char lse[24], lse_type[160], maps[2][160], types[320], init[24], r[24];
    if (row_logsumexp(l, l->n->in[0], lse, lse_type)) return l->m->st;
    fedc__mlir_generic g;
    const char *elem = fedc__mlir_elem(type_of(l, l->v)->dtype);
    rows_generic(l, &g, maps, types, 1, (const char *[]){lse}, (const char *[]){lse_type}, &elem, init);
    fedc__mlir_generic_begin(l->m, &g);
    emit2(l, "arith.subf", "%in0", "%in1", g.out_elem, r);
    fedc__mlir_generic_end(l->m, &g, r);
    return l->m->st;
}

/* A label as an index into the class axis, clamped into [0, classes): fedc
 * refuses a label outside it at run time; an exported module cannot fail, so it
 * reads the nearest class instead (docs/export.md). */
static const char *label_index(const lower *l, const char *label, int64_t classes, char *out) {
    char lo[24], hi[24], a[24], b[24];
    constant(l, 0, FEDC_I32, lo), constant(l, (double)(classes - 1), FEDC_I32, hi);
    emit2(l, "arith.minsi", emit2(l, "arith.maxsi", label, lo, "i32", a), hi, "i32", b);
    fedc__mlir_tmp(l->m, out);
    fedc__mlir_printf(l->m, "      %s = arith.index_cast %s : i32 to index\n", out, b);
    return out;
}

/* loss[r] = w[r] * (lse[r] - x[r, label[r]]), the label's logit read with
 * tensor.extract at the row's indices. */
static fedc_status lower_softmax_xent(const lower *l) {
    fedc_value x = l->n->in[0];
    const fedc_type *xt = type_of(l, x);
    bool c = clients(l, l->v);
    int loops = type_of(l, l->v)->rank + c;
    char lse[24], lse_type[160], map[160], lt[160], wt[160], out_type[160], init[24];
    if (row_logsumexp(l, x, lse, lse_type)) return l->m->st;
    identity_map(loops, map, sizeof map);
    const char *elem = fedc__mlir_elem(xt->dtype);
    fedc__mlir_generic g = {.rank = loops, .iters = "pppppppp", .nin = l->n->nin, .in = {lse, name(l, l->n->in[1])},
                            .in_type = {lse_type, fedc__mlir_type_of(l->m, l->s, l->n->in[1], lt, sizeof lt)},
                            .in_elem = {elem, "i32", elem}, .maps = {map, map, map}, .out_map = map,
                            .out_type = fedc__mlir_type_of(l->m, l->s, l->v, out_type, sizeof out_type),
                            .out_elem = elem, .result_name = name(l, l->v)};
    if (l->n->nin == 3) g.in[2] = name(l, l->n->in[2]), g.in_type[2] = fedc__mlir_type_of(l->m, l->s, l->n->in[2], wt, sizeof wt);
    g.init = fedc__mlir_splat(l->m, l->s, l->v, 0, init);
    fedc__mlir_generic_begin(l->m, &g);
    char idx[FEDC_MAX_RANK + 1][24], k[24], v[24], nll[24], r[24];
    for (int i = 0; i < loops; i++) {
        fedc__mlir_tmp(l->m, idx[i]);
        fedc__mlir_printf(l->m, "      %s = linalg.index %d : index\n", idx[i], i);
    }
    label_index(l, "%in1", xt->dims[xt->rank - 1], k);
    char xtype[160];
    fedc__mlir_tmp(l->m, v);
    fedc__mlir_printf(l->m, "      %s = tensor.extract %s[", v, name(l, x));
    for (int i = 0; i < loops; i++) fedc__mlir_printf(l->m, "%s, ", idx[i]);
    fedc__mlir_printf(l->m, "%s] : %s\n", k, fedc__mlir_type_of(l->m, l->s, x, xtype, sizeof xtype));
    emit2(l, "arith.subf", "%in0", v, elem, nll);
    if (l->n->nin == 3) emit2(l, "arith.mulf", "%in2", nll, elem, r);
    fedc__mlir_generic_end(l->m, &g, l->n->nin == 3 ? r : nll);
    return l->m->st;
}

/* dlogits[r, c] = scale[r] * (exp(x[r, c] - lse[r]) - [c == label[r]]). */
static fedc_status lower_softmax_xent_grad(const lower *l) {
    char lse[24], lse_type[160], maps[2][160], types[320], init[24], lt[160], st[160];
    if (row_logsumexp(l, l->n->in[0], lse, lse_type)) return l->m->st;
    fedc__mlir_generic g;
    const char *rows[3] = {lse, name(l, l->n->in[1]), name(l, l->n->in[2])};
    const char *rtypes[3] = {lse_type, fedc__mlir_type_of(l->m, l->s, l->n->in[1], lt, sizeof lt),
                             fedc__mlir_type_of(l->m, l->s, l->n->in[2], st, sizeof st)};
    const char *elem = fedc__mlir_elem(type_of(l, l->v)->dtype), *relems[3] = {elem, "i32", elem};
    rows_generic(l, &g, maps, types, 3, rows, rtypes, relems, init);
    char ci[24], eq[24], hot[24], d[24], p[24], q[24], r[24];
    fedc__mlir_generic_begin(l->m, &g);
    loop_index_i32(l, g.rank - 1, ci);
    fedc__mlir_tmp(l->m, eq);
    fedc__mlir_printf(l->m, "      %s = arith.cmpi eq, %s, %%in2 : i32\n", eq, ci);
    fedc__mlir_tmp(l->m, hot);
    fedc__mlir_printf(l->m, "      %s = arith.uitofp %s : i1 to %s\n", hot, eq, elem);
    emit1(l, "math.exp", emit2(l, "arith.subf", "%in0", "%in1", elem, d), elem, p);
    emit2(l, "arith.mulf", "%in3", emit2(l, "arith.subf", p, hot, elem, q), elem, r);
    fedc__mlir_generic_end(l->m, &g, r);
    return l->m->st;
}


/* ------------------------------------------------------------ indexing -- */

/* The body's loop indices %i<k> of a generic of `loops` loops, into idx. */
static void loop_indices(const lower *l, int loops, char idx[][24]) {
    for (int i = 0; i < loops; i++) {
        fedc__mlir_tmp(l->m, idx[i]);
        fedc__mlir_printf(l->m, "      %s = linalg.index %d : index\n", idx[i], i);
    }
}

/* An i32 index clamped into [0, n) as an index value: an exported module cannot
 * fail at run time the way fedc does on an index out of range, so it reads the
 * nearest row instead (docs/export.md). */
static const char *clamped_index(const lower *l, const char *i32, int64_t n, char *out) {
    char lo[24], hi[24], a[24], b[24];
    constant(l, 0, FEDC_I32, lo), constant(l, (double)(n - 1), FEDC_I32, hi);
    emit2(l, "arith.minsi", emit2(l, "arith.maxsi", i32, lo, "i32", a), hi, "i32", b);
    fedc__mlir_tmp(l->m, out);
    fedc__mlir_printf(l->m, "      %s = arith.index_cast %s : i32 to index\n", out, b);
    return out;
}

/* `%r = tensor.extract x[idx...]` in a generic's body. */
static void extract(const lower *l, const char *x, const char *xtype, char idx[][24], int n, const char *r) {
    fedc__mlir_printf(l->m, "      %s = tensor.extract %s[", r, x);
    for (int i = 0; i < n; i++) fedc__mlir_printf(l->m, "%s%s", i ? ", " : "", idx[i]);
    fedc__mlir_printf(l->m, "] : %s\n", xtype);
}

/* y[c?, i..., w...] = table[c?, idx[c?, i...], w...]. */
static fedc_status lower_gather(const lower *l) {
    fedc_value table = l->n->in[0], ix = l->n->in[1];
    const fedc_type *it = type_of(l, ix), *tt = type_of(l, table);
    bool c = clients(l, l->v);
    int loops = type_of(l, l->v)->rank + c;
    char imap[160] = {0}, out_map[160], itype[160], ttype[160], out_type[160], init[24], idx[FEDC_MAX_RANK + 2][24];
    char k[24], r[24], at[FEDC_MAX_RANK + 2][24];
    if (c) add_loop(imap, sizeof imap, 0);
    for (int i = 0; i < it->rank; i++) add_loop(imap, sizeof imap, c + i);
    identity_map(loops, out_map, sizeof out_map);
    fedc__mlir_generic g = {.rank = loops, .iters = "pppppppp", .nin = 1, .in = {name(l, ix)},
                            .in_type = {fedc__mlir_type_of(l->m, l->s, ix, itype, sizeof itype)}, .in_elem = {"i32"},
                            .maps = {imap}, .out_map = out_map,
                            .out_type = fedc__mlir_type_of(l->m, l->s, l->v, out_type, sizeof out_type),
                            .out_elem = fedc__mlir_elem(tt->dtype), .result_name = name(l, l->v)};
    g.init = fedc__mlir_splat(l->m, l->s, l->v, 0, init);
    fedc__mlir_generic_begin(l->m, &g);
    loop_indices(l, loops, idx);
    int n = 0;
    if (c) snprintf(at[n++], 24, "%s", idx[0]);
    snprintf(at[n++], 24, "%s", clamped_index(l, "%in0", tt->dims[0], k));
    for (int i = 1; i < tt->rank; i++) snprintf(at[n++], 24, "%s", idx[c + it->rank + i - 1]);
    extract(l, name(l, table), fedc__mlir_type_of(l->m, l->s, table, ttype, sizeof ttype), at, n, fedc__mlir_tmp(l->m, r));
    fedc__mlir_generic_end(l->m, &g, r);
    return l->m->st;
}

static void body_one_hot(const lower *l, char *result) {
    fedc_dtype dt = type_of(l, l->v)->dtype;
    char ji[24], eq[24];
    loop_index_i32(l, type_of(l, l->v)->rank + clients(l, l->v) - 1, ji);
    fedc__mlir_tmp(l->m, eq);
    fedc__mlir_printf(l->m, "      %s = arith.cmpi eq, %s, %%in0 : i32\n", eq, ji);
    if (dt == FEDC_BOOL) {
        snprintf(result, 24, "%s", eq);
        return;
    }
    fedc__mlir_tmp(l->m, result);
    fedc__mlir_printf(l->m, "      %s = %s %s : i1 to %s\n", result, fedc_dtype_is_float(dt) ? "arith.uitofp" : "arith.extui",
                      eq, fedc__mlir_elem(dt));
}

/* one_hot: the index read once per row, the class from the last loop. */
static fedc_status lower_one_hot(const lower *l) {
    char types[320], maps[2][160], init[24], result[24];
    bool c = clients(l, l->v);
    int loops = type_of(l, l->v)->rank + c;
    rows_map(loops, maps[0], sizeof maps[0]);
    identity_map(loops, maps[1], sizeof maps[1]);
    fedc__mlir_generic g = {.rank = loops, .iters = "pppppppp", .nin = 1, .in = {name(l, l->n->in[0])},
                            .in_type = {fedc__mlir_type_of(l->m, l->s, l->n->in[0], types, 160)}, .in_elem = {"i32"},
                            .maps = {maps[0]}, .out_map = maps[1],
                            .out_type = fedc__mlir_type_of(l->m, l->s, l->v, types + 160, 160),
                            .out_elem = fedc__mlir_elem(type_of(l, l->v)->dtype), .result_name = name(l, l->v)};
    g.init = fedc__mlir_splat(l->m, l->s, l->v, 0, init);
    fedc__mlir_generic_begin(l->m, &g);
    body_one_hot(l, result);
    fedc__mlir_generic_end(l->m, &g, result);
    return l->m->st;
}

/* argmax along `axis`: the maximum first, then the least position holding it (so
 * the first maximum wins, as in fedc; a NaN maximum gives the axis' length). */
static fedc_status lower_argmax(const lower *l) {
    fedc_value x = l->n->in[0];
    const fedc_type *xt = type_of(l, x);
    bool c = clients(l, x);
    int ax = fedc__axis(fedc__attr_int(l->n, FEDC_ATTR_AXIS, -1), xt->rank) + c, loops = xt->rank + c;
    fedc_type rows = *type_of(l, l->v);
    rows.dtype = xt->dtype;
    char mx_type[160], mx[24], xmap[160], rmap[160] = {0}, iters[16] = {0}, xtype[160], out_type[160], init[24], lit[32];
    fedc__mlir_tensor(l->m, &rows, c, mx_type, sizeof mx_type);
    if (reduce_loops(l, x, 1u << ax, false, true, false, fedc__mlir_tmp(l->m, mx), mx_type)) return l->m->st;
    for (int i = 0; i < loops; i++) {
        iters[i] = i == ax ? 'r' : 'p';
        if (i != ax) add_loop(rmap, sizeof rmap, i);
    }
    identity_map(loops, xmap, sizeof xmap);
    const char *elem = fedc__mlir_elem(xt->dtype);
    fedc__mlir_generic g = {.rank = loops, .iters = iters, .nin = 2, .in = {name(l, x), mx},
                            .in_type = {fedc__mlir_type_of(l->m, l->s, x, xtype, sizeof xtype), mx_type},
                            .in_elem = {elem, elem}, .maps = {xmap, rmap}, .out_map = rmap,
                            .out_type = fedc__mlir_type_of(l->m, l->s, l->v, out_type, sizeof out_type),
                            .out_elem = "i32", .result_name = name(l, l->v)};
    fedc__mlir_tmp(l->m, init);
    fedc__mlir_printf(l->m, "    %s = arith.constant dense<%s> : %s\n", init,
                      fedc__mlir_literal(FEDC_I32, (double)xt->dims[ax - c], lit, sizeof lit), out_type);
    g.init = init;
    fedc__mlir_generic_begin(l->m, &g);
    char ii[24], eq[24], lt[24], both[24], r[24];
    loop_index_i32(l, ax, ii);
    fedc__mlir_tmp(l->m, eq);
    fedc__mlir_printf(l->m, "      %s = %s, %%in0, %%in1 : %s\n", eq, fedc_dtype_is_float(xt->dtype) ? "arith.cmpf oeq" : "arith.cmpi eq",
                      elem);
    fedc__mlir_tmp(l->m, lt);
    fedc__mlir_printf(l->m, "      %s = arith.cmpi slt, %s, %%out : i32\n", lt, ii);
    emit2(l, "arith.andi", eq, lt, "i1", both);
    fedc__mlir_tmp(l->m, r);
    fedc__mlir_printf(l->m, "      %s = arith.select %s, %s, %%out : i32\n", r, both, ii);
    fedc__mlir_generic_end(l->m, &g, r);
    return l->m->st;
}

/* -------------------------------------------------------------- gelu -- */

/* t = tanh(c (x + a x^3)), fedc's tanh form of GELU (c = sqrt(2 / pi), a = 0.044715). */
static const char *gelu_t(const lower *l, const char *x, const char *elem, fedc_dtype dt, char *t) {
    char a[24], c[24], x2[24], x3[24], ax3[24], s[24], cs[24];
    constant(l, 0.044715, dt, a), constant(l, 0.7978845608028654, dt, c);
    emit2(l, "arith.mulf", x, x, elem, x2);
    emit2(l, "arith.mulf", x2, x, elem, x3);
    emit2(l, "arith.mulf", a, x3, elem, ax3);
    emit2(l, "arith.addf", x, ax3, elem, s);
    emit2(l, "arith.mulf", c, s, elem, cs);
    return emit1(l, "math.tanh", cs, elem, t);
}

static void body_gelu(const lower *l, char *result) {
    fedc_dtype dt = type_of(l, l->v)->dtype;
    const char *elem = fedc__mlir_elem(dt);
    char t[24], half[24], one[24], u[24], hx[24];
    gelu_t(l, "%in0", elem, dt, t);
    constant(l, 0.5, dt, half), constant(l, 1, dt, one);
    emit2(l, "arith.addf", one, t, elem, u);
    emit2(l, "arith.mulf", half, "%in0", elem, hx);
    emit2(l, "arith.mulf", hx, u, elem, result);
}

/* dx = dy (1/2 (1 + t) + 1/2 x (1 - t^2) c (1 + 3 a x^2)). */
static void body_gelu_grad(const lower *l, char *result) {
    fedc_dtype dt = type_of(l, l->v)->dtype;
    const char *elem = fedc__mlir_elem(dt);
    char t[24], half[24], one[24], c[24], a3[24], p[24], q[24], t2[24], w[24], x2[24], e[24], f[24], g[24], h[24];
    gelu_t(l, "%in0", elem, dt, t);
    constant(l, 0.5, dt, half), constant(l, 1, dt, one), constant(l, 0.7978845608028654, dt, c);
    constant(l, 3 * 0.044715, dt, a3);
    emit2(l, "arith.mulf", half, emit2(l, "arith.addf", one, t, elem, p), elem, q); /* 1/2 (1 + t) */
    emit2(l, "arith.subf", one, emit2(l, "arith.mulf", t, t, elem, t2), elem, w);   /* 1 - t^2 */
    emit2(l, "arith.mulf", "%in0", "%in0", elem, x2);
    emit2(l, "arith.addf", one, emit2(l, "arith.mulf", a3, x2, elem, e), elem, f); /* 1 + 3 a x^2 */
    emit2(l, "arith.mulf", emit2(l, "arith.mulf", half, "%in0", elem, g), w, elem, h);
    emit2(l, "arith.mulf", h, c, elem, g);
    emit2(l, "arith.mulf", g, f, elem, h);
    emit2(l, "arith.addf", q, h, elem, g);
    emit2(l, "arith.mulf", "%in1", g, elem, result);
}

static fedc_status lower_gelu(const lower *l) { return elementwise(l, body_gelu); }
static fedc_status lower_gelu_grad(const lower *l) { return elementwise(l, body_gelu_grad); }

/* ------------------------------------------------------------- matmul -- */

/* y[..., i, j] = sum_k a[..., i, k] b[..., k, j] (either transposed), a rank-2
 * operand shared by every batch entry; loops: clients, batch..., i, j, k. */
static fedc_status lower_matmul(const lower *l) {
    fedc_value a = l->n->in[0], b = l->n->in[1];
    const fedc_type *t = type_of(l, l->v), *ta = type_of(l, a), *tb = type_of(l, b);
    bool c = clients(l, l->v);
    int lead = c, batch = t->rank - 2, loops = lead + t->rank + 1;
    int I = lead + batch, J = I + 1, K = J + 1;
    bool tra = fedc__attr_int(l->n, FEDC_ATTR_TRANSPOSE_A, 0), trb = fedc__attr_int(l->n, FEDC_ATTR_TRANSPOSE_B, 0);
    char amap[160] = {0}, bmap[160] = {0}, out_map[160], iters[16] = {0}, at[160], bt[160], ot[160], init[24], p[24],
         r[24];
    for (int i = 0; i < loops; i++) iters[i] = i == K ? 'r' : 'p';
    for (int w = 0; w < 2; w++) {
        const fedc_type *tw = w ? tb : ta;
        char *map = w ? bmap : amap;
        if (c && clients(l, w ? b : a)) add_loop(map, 160, 0);
        for (int i = 0; i < tw->rank - 2; i++) add_loop(map, 160, lead + i);
        int row = w ? K : I, col = w ? J : K;
        bool tr = w ? trb : tra;
        add_loop(map, 160, tr ? col : row);
        add_loop(map, 160, tr ? row : col);
    }
    out_map[0] = 0;
    for (int i = 0; i < loops - 1; i++) add_loop(out_map, sizeof out_map, i);
    const char *elem = fedc__mlir_elem(t->dtype);
    fedc__mlir_generic g = {.rank = loops, .iters = iters, .nin = 2, .in = {name(l, a), name(l, b)},
                            .in_type = {fedc__mlir_type_of(l->m, l->s, a, at, sizeof at),
                                        fedc__mlir_type_of(l->m, l->s, b, bt, sizeof bt)},
                            .in_elem = {elem, elem}, .maps = {amap, bmap}, .out_map = out_map,
                            .out_type = fedc__mlir_type_of(l->m, l->s, l->v, ot, sizeof ot), .out_elem = elem,
                            .result_name = name(l, l->v)};
    g.init = fedc__mlir_splat(l->m, l->s, l->v, 0, init);
    fedc__mlir_generic_begin(l->m, &g);
    emit2(l, "arith.addf", "%out", emit2(l, "arith.mulf", "%in0", "%in1", elem, p), elem, r);
    fedc__mlir_generic_end(l->m, &g, r);
    return l->m->st;
}

/* --------------------------------------------------------------- maps -- */

/* A map is its body lowered along the clients axis: the body's inputs are the
 * map's arguments, its outputs the map's results. */
static fedc_status lower_map(const lower *l) {
    const fedc_program *body = fedc__body(l->s->p, l->n);
    fedc__mlir_scope b;
    if (fedc__mlir_scope_init(&b, body, true, l->m->tmp++)) return l->m->st = FEDC_ENOMEM;
    for (int i = 0; i < body->n; i++) snprintf(b.name[i], sizeof b.name[i], "%%s%d_%d", b.id, i);
    for (int i = 0; i < fedc_program_num_inputs(body); i++)
        snprintf(b.name[fedc_program_input(body, i)], sizeof b.name[0], "%s", name(l, l->n->in[i]));
    fedc_status st = fedc__mlir_lower_scope(l->m, &b);
    for (fedc_value u = l->v + 1; !st && u < l->s->p->n; u++) {
        const fedc__node *r = &l->s->p->nodes[u];
        if (r->op != FEDC_OP_RESULT || r->in[0] != l->v) continue;
        int k = (int)fedc__attr_int(r, FEDC_ATTR_INDEX, 0);
        snprintf(l->s->name[u], sizeof l->s->name[u], "%s", b.name[body->outputs[k].value]);
    }
    fedc__mlir_scope_free(&b);
    return st;
}

static fedc_status lower_result(const lower *l) { (void)l; return FEDC_OK; } /* named by its map */
static fedc_status lower_input(const lower *l) { (void)l; return FEDC_OK; } /* named as an argument */

/* ------------------------------------------------------------- dispatch -- */

#define lower_ADD lower_binary
#define lower_SUB lower_binary
#define lower_MUL lower_binary
#define lower_DIV lower_binary
#define lower_MAXIMUM lower_binary
#define lower_MINIMUM lower_binary
#define lower_EQ lower_binary
#define lower_NE lower_binary
#define lower_LT lower_binary
#define lower_LE lower_binary
#define lower_GT lower_binary
#define lower_GE lower_binary
#define lower_NEG lower_unary
#define lower_EXP lower_unary
#define lower_LOG lower_unary
#define lower_TANH lower_unary
#define lower_SIGMOID lower_unary
#define lower_RELU lower_unary
#define lower_SQRT lower_unary
#define lower_SQUARE lower_unary
#define lower_POW lower_unary
#define lower_SELECT lower_select
#define lower_CAST lower_cast
#define lower_BROADCAST_TO lower_broadcast_to
#define lower_INPUT lower_input
#define lower_CONSTANT lower_constant
#define lower_IOTA lower_iota
#define lower_NUM_CLIENTS lower_num_clients
#define lower_REDUCE_SUM lower_reduce
#define lower_REDUCE_MEAN lower_reduce
#define lower_REDUCE_MAX lower_reduce
#define lower_SUM lower_sum
#define lower_MEAN lower_sum
#define lower_WEIGHTED_MEAN lower_weighted_mean
#define lower_BROADCAST lower_broadcast
#define lower_TRANSPOSE lower_transpose
#define lower_RESHAPE lower_reshape
#define lower_SLICE lower_slice
#define lower_CONCAT lower_concat
#define lower_PAD lower_pad
#define lower_MATMUL lower_matmul
#define lower_MAP lower_map
#define lower_RESULT lower_result
#define lower_GELU_GRAD lower_gelu_grad
#define lower_GELU lower_gelu
#define lower_ARGMAX lower_argmax
#define lower_ONE_HOT lower_one_hot
#define lower_GATHER lower_gather
#define lower_SOFTMAX_XENT_GRAD lower_softmax_xent_grad
#define lower_SOFTMAX_XENT lower_softmax_xent
#define lower_LOG_SOFTMAX lower_log_softmax
/* Not lowered yet: each is NULL in the table, and exporting a program that holds
 * one fails naming it (docs/export.md lists them). */
#define lower_SCATTER_ADD NULL
#define lower_CONV2D NULL
#define lower_CONV2D_INPUT_GRAD NULL
#define lower_CONV2D_FILTER_GRAD NULL
#define lower_MAX_POOL2D NULL
#define lower_MAX_POOL2D_GRAD NULL
#define lower_AVG_POOL2D NULL
#define lower_AVG_POOL2D_GRAD NULL
#define lower_DROPOUT NULL
#define lower_FOLD NULL
#define lower_LAYER_NORM NULL
#define lower_LAYER_NORM_GRAD NULL
#define lower_LAYER_NORM_PARAM_GRAD NULL
#define lower_CAUSAL_ATTENTION NULL
#define lower_CAUSAL_ATTENTION_GRAD NULL
#define lower_LSTM NULL
#define lower_LSTM_GRAD NULL
#define lower_LSTM_TANGENT NULL

static const lower_fn lowerings[FEDC_OP_COUNT] = {
#define FEDC_OP(id, name, min_in, max_in) [FEDC_OP_##id] = lower_##id,
#include "ir/ops.def"
#undef FEDC_OP
};

bool fedc_mlir_lowers(const char *op_name) {
    for (int op = 0; op < FEDC_OP_COUNT; op++)
        if (strcmp(fedc__ops[op].name, op_name) == 0) return lowerings[op] != NULL;
    return false;
}

fedc_status fedc__mlir_lower_scope(fedc__mlir *m, fedc__mlir_scope *s) {
    for (fedc_value v = 0; !m->st && v < s->p->n; v++) {
        lower l = {m, s, v, &s->p->nodes[v]};
        lower_fn f = lowerings[l.n->op];
        if (!f) return fedc__mlir_fail(m, s, v, FEDC_EUNSUPPORTED, "%s has no lowering to MLIR yet", fedc__ops[l.n->op].name);
        f(&l);
    }
    return m->st;
}
