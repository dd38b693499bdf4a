/* The lowerings: each op of ops.def as upstream MLIR, in fedc's layouts and with
 * fedc's semantics (numpy broadcasting, NaN-propagating maximum, saturating float
 * to int casts, relu(NaN) = 0). A value that carries the clients axis is
 * lowered with one more loop in front, d0 over the clients, so every op applies
 * to @clients values (and to a map's body) client by client. The table at the
 * bottom comes from ops.def: an op without a lowering says so by name. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "export/mlir_lower.h"
#include "export/spelling.h"

/* ---------------------------------------------------------- elementwise -- */

/* Writes the body's lines computing one element from %in0, %in1, ...; the SSA name
 * of the result goes to `result` (of 24). */
typedef void (*body_fn)(const lower *l, char *result);

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

fedc_status fedc__lower_binary(const lower *l) { return fedc__mlir_elementwise(l, body_binary); }
fedc_status fedc__lower_unary(const lower *l) {
    if (l->n->op != FEDC_OP_NEG && !is_float(l, l->v)) return unsupported(l, "an integer operand");
    return fedc__mlir_elementwise(l, body_unary);
}
fedc_status fedc__lower_select(const lower *l) { return fedc__mlir_elementwise(l, body_select); }
fedc_status fedc__lower_cast(const lower *l) { return fedc__mlir_elementwise(l, body_cast); }
fedc_status fedc__lower_broadcast_to(const lower *l) { return fedc__mlir_elementwise(l, body_identity); }

/* ------------------------------------------------------------ sources -- */

/* The constant's bytes, exactly (dense<"0x..."> is little-endian raw data); a
 * @clients constant is one copy that every client reads, spread along the axis. */
fedc_status fedc__lower_constant(const lower *l) {
    const fedc_type *t = type_of(l, l->v);
    bool c = clients(l, l->v), flags = t->dtype == FEDC_BOOL;
    fedc_type bytes = *t;
    if (flags) bytes.dtype = FEDC_U8; /* booleans are written as bytes, then compared with 0 */
    char type[160], local[24];
    fedc__mlir_tensor(l->m, &bytes, false, type, sizeof type);
    size_t n = fedc_type_bytes(t);
    char *hex = fedc_malloc(2 * n + 5); /* "0x...", quoted: the exact bytes */
    if (!hex) return l->m->st = fedc_error(FEDC_ENOMEM, "export to mlir: out of memory for a constant of %zu bytes", n);
    const uint8_t *b = l->n->data;
    hex[0] = '"', hex[1] = '0', hex[2] = 'x';
    fedc__mlir_hex(b, n, hex + 3);
    hex[3 + 2 * n] = '"', hex[4 + 2 * n] = 0;
    fedc__mlir_tensor_const(l->m, local, hex, type);
    fedc_free(hex);
    if (!c && !flags) {
        snprintf(l->s->name[l->v], sizeof l->s->name[l->v], "%s", local);
        return l->m->st;
    }
    /* spread along the clients axis, and/or turned into i1 */
    char out_type[160], out_map[160], in_map[160] = {0}, init[24], r[24], zero[24];
    identity_map(t->rank + c, out_map, sizeof out_map);
    for (int i = 0; i < t->rank; i++) add_loop(in_map, sizeof in_map, i + c);
    fedc__mlir_generic g = {.rank = t->rank + c, .iters = "pppppppp", .nin = 1, .in = {local}, .in_type = {type},
                            .in_elem = {fedc__mlir_elem(bytes.dtype)}, .maps = {in_map}, .out_map = out_map,
                            .out_type = fedc__mlir_type_of(l->m, l->s, l->v, out_type, sizeof out_type),
                            .out_elem = fedc__mlir_elem(t->dtype), .result_name = name(l, l->v)};
    g.init = fedc__mlir_splat(l->m, l->s, l->v, 0, init);
    fedc__mlir_generic_begin(l->m, &g);
    if (flags) {
        fedc__mlir_tmp(l->m, zero);
        fedc__mlir_printf(l->m, "      %s = arith.constant 0 : i8\n", zero);
        fedc__mlir_tmp(l->m, r);
        fedc__mlir_printf(l->m, "      %s = arith.cmpi ne, %%in0, %s : i8\n", r, zero);
    }
    fedc__mlir_generic_end(l->m, &g, flags ? r : "%in0");
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

fedc_status fedc__lower_iota(const lower *l) { return fedc__mlir_elementwise(l, body_iota); }

fedc_status fedc__lower_num_clients(const lower *l) {
    return fedc__mlir_count_const(l, fedc__mlir_whole_count(l->m, l->m->at_groups));
}

fedc_status fedc__mlir_count_const(const lower *l, int count) {
    char type[160], lit[32], nm[24];
    fedc_dtype dt = type_of(l, l->v)->dtype;
    if (dt == FEDC_I32) snprintf(lit, sizeof lit, "%d", count);
    else snprintf(lit, sizeof lit, "%d.0", count);
    fedc__mlir_tensor_const(l->m, nm, lit, fedc__mlir_type_of(l->m, l->s, l->v, type, sizeof type));
    snprintf(l->s->name[l->v], sizeof l->s->name[l->v], "%s", nm);
    return l->m->st;
}

/* ---------------------------------------------------------- reductions -- */

fedc_status fedc__lower_reduce(const lower *l) {
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
    fedc_status st = fedc__mlir_reduce(l, x, reduced, keep, l->n->op == FEDC_OP_REDUCE_MAX, mean ? fedc__mlir_tmp(l->m, sum) : name(l, l->v), type);
    if (!st && mean) st = fedc__mlir_scale(l, sum, type, 1.0 / (double)n);
    return st;
}

/* An aggregate's sum (of rank 1 or more), whole on every device for the ops
 * that finish it (fedc__mlir_replicated_use: LLVM 19's propagation crashes when
 * it infers one through them). */
static const char *whole(const lower *l, const char *sum, const char *type, char *out) {
    return type_of(l, l->v)->rank ? fedc__mlir_replicated_use(l->m, sum, type, out) : sum;
}

/* Per device (m->mesh_rows), an aggregation's part x over the device's clients
 * or groups summed over the mesh axes the level spans: the clients' over the
 * whole mesh, the groups' across the rows. */
static const char *level_axes(const lower *l) { return l->m->at_groups ? "0" : "0, 1"; }
static const char *all_reduced(const lower *l, const char *x, const char *type, char *out) {
    if (!l->m->mesh_rows) return x;
    fedc__mlir_all_reduce(l->m, x, type, level_axes(l), fedc__mlir_tmp(l->m, out));
    return out;
}

/* sum and mean over the clients axis (axis 0 of the clients tensor). */
fedc_status fedc__lower_sum(const lower *l) {
    char type[160], sum[24], all[24], part[24];
    fedc__mlir_type_of(l->m, l->s, l->v, type, sizeof type);
    bool mean = l->n->op == FEDC_OP_MEAN || l->n->op == FEDC_OP_MEAN_UP; /* mean_up from the groups too */
    bool split = l->m->mesh_rows; /* per device: its part, then the all-reduce */
    const char *to = mean ? fedc__mlir_tmp(l->m, sum) : name(l, l->v);
    fedc_status st = fedc__mlir_reduce(l, l->n->in[0], 1u, false, false, split ? fedc__mlir_tmp(l->m, part) : to, type);
    if (!st && split) fedc__mlir_all_reduce(l->m, part, type, level_axes(l), to);
    if (!st && mean)
        st = fedc__mlir_scale(l, whole(l, sum, type, all), type, 1.0 / fedc__mlir_whole_count(l->m, l->m->at_groups));
    return st ? st : l->m->st;
}

/* weighted_mean(x, w) = sum_i w_i x_i * (1 / sum_i w_i), as fedc aggregates it. */
fedc_status fedc__lower_weighted_mean(const lower *l) {
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
    char xs[24], ws[24];
    fedc__mlir_type_of(l->m, l->s, x, xt, sizeof xt), fedc__mlir_type_of(l->m, l->s, w, wt, sizeof wt);
    const char *xin = fedc__mlir_split_use(l->m, name(l, x), xt, xs), *win = fedc__mlir_split_use(l->m, name(l, w), wt, ws);
    fedc__mlir_generic g = {.rank = loops, .iters = iters, .nin = 2, .in = {xin, win},
                            .in_type = {xt, wt},
                            .in_elem = {elem, elem}, .maps = {xmap, wmap}, .out_map = out_map, .out_type = type,
                            .out_elem = elem, .result_name = fedc__mlir_tmp(l->m, num)};
    g.init = fedc__mlir_splat(l->m, l->s, l->v, 0, init);
    fedc__mlir_generic_begin(l->m, &g);
    emit2(l, "arith.addf", emit2(l, "arith.mulf", "%in0", "%in1", elem, a), "%out", elem, b);
    fedc__mlir_generic_end(l->m, &g, b);
    /* the weights' sum */
    fedc__mlir_tensor_const(l->m, winit, "0.0", wtype);
    fedc__mlir_generic gw = {.rank = 1, .iters = "r", .nin = 1, .in = {win}, .in_type = {wt}, .in_elem = {elem},
                             .maps = {"d0"}, .out_map = "", .out_type = wtype, .out_elem = elem,
                             .init = winit, .result_name = fedc__mlir_tmp(l->m, den)};
    fedc__mlir_generic_begin(l->m, &gw);
    emit2(l, "arith.addf", "%in0", "%out", elem, a);
    fedc__mlir_generic_end(l->m, &gw, a);
    /* num * (1 / den), den read as a scalar by every element */
    char map[160], dmap[8] = "", r[24], one[24], all[24];
    identity_map(t->rank, map, sizeof map);
    char nall[24], dall[24];
    const char *nsum = all_reduced(l, num, type, nall), *dsum = all_reduced(l, den, wtype, dall);
    fedc__mlir_generic gd = {.rank = t->rank, .iters = "pppppppp", .nin = 2, .in = {whole(l, nsum, type, all), dsum},
                             .in_type = {type, wtype},
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

fedc_status fedc__lower_transpose(const lower *l) {
    int count;
    const int64_t *perm = fedc__attr_ints(l->n, FEDC_ATTR_PERM, &count);
    int lead = clients(l, l->v) ? 1 : 0, inverse[FEDC_MAX_RANK];
    for (int j = 0; j < count; j++) inverse[perm[j]] = j; /* y dim j is x dim perm[j] */
    char in_map[160] = {0};
    if (lead) add_loop(in_map, sizeof in_map, 0);
    for (int k = 0; k < count; k++) add_loop(in_map, sizeof in_map, lead + inverse[k]);
    return fedc__mlir_copy_through(l, in_map);
}

/* broadcast: the server value, read by every client. */
fedc_status fedc__lower_broadcast(const lower *l) {
    char in_map[160] = {0};
    for (int i = 0; i < type_of(l, l->v)->rank; i++) add_loop(in_map, sizeof in_map, i + 1);
    return fedc__mlir_copy_through(l, in_map);
}

/* The literal of a reshape's shape (the clients axis first, when c). */
static const char *shape_literal(int clients, bool c, int rank, const int64_t *dims, char *buf, size_t size) {
    size_t n = (size_t)snprintf(buf, size, "[");
    if (c) n += (size_t)snprintf(buf + n, size - n, "%d%s", clients, rank ? ", " : "");
    for (int i = 0; i < rank && n < size; i++) n += (size_t)snprintf(buf + n, size - n, "%s%lld", i ? ", " : "", (long long)dims[i]);
    if (n < size) snprintf(buf + n, size - n, "]");
    return buf;
}

/* The row-major offset, within dims [from, rank) of a shape, of the loops
 * first.. that index them (in a generic's body, as an index). */
static const char *offset_of(const lower *l, const fedc_type *t, int from, int first, char *out) {
    char idx[24], k[24], prod[24], sum[24];
    int64_t stride = 1;
    snprintf(out, 24, "%s", "");
    for (int d = t->rank - 1; d >= from; stride *= t->dims[d], d--) {
        fedc__mlir_tmp(l->m, idx);
        fedc__mlir_printf(l->m, "      %s = linalg.index %d : index\n", idx, first + d - from);
        fedc__mlir_tmp(l->m, k);
        fedc__mlir_printf(l->m, "      %s = arith.constant %lld : index\n", k, (long long)stride);
        emit2(l, "arith.muli", idx, k, "index", prod);
        if (out[0]) snprintf(out, 24, "%s", emit2(l, "arith.addi", prod, out, "index", sum));
        else snprintf(out, 24, "%s", prod);
    }
    if (!out[0]) {
        fedc__mlir_tmp(l->m, out);
        fedc__mlir_printf(l->m, "      %s = arith.constant 0 : index\n", out);
    }
    return out;
}

/* Sharded, a reshape is a linalg.generic: LLVM 19 gives tensor.reshape,
 * tensor.collapse_shape and tensor.expand_shape no sharding interface, and
 * rejects a generic that reads through floordiv/mod or writes through anything
 * but a projected permutation. So the dims the shapes share in front (and the
 * clients axis) stay parallel loops, and each remaining output element takes,
 * from a reduction over the remaining input dims, the one element whose
 * row-major offset is its own: a select, exact for every dtype, at the cost of
 * (rest of x) * (rest of y) steps. */
static fedc_status lower_reshape_sharded(const lower *l) {
    const fedc_type *x = type_of(l, l->n->in[0]), *y = type_of(l, l->v);
    int c = clients(l, l->v), same = 0;
    while (same < x->rank && same < y->rank && x->dims[same] == y->dims[same]) same++;
    int ny = y->rank - same, nx = x->rank - same, loops = c + same + ny + nx;
    char iters[2 * FEDC_MAX_RANK + 2] = {0}, in_map[160] = {0}, out_map[160] = {0};
    for (int i = 0; i < loops; i++) iters[i] = i < c + same + ny ? 'p' : 'r';
    for (int i = 0; i < c + same; i++) add_loop(in_map, sizeof in_map, i), add_loop(out_map, sizeof out_map, i);
    for (int i = 0; i < ny; i++) add_loop(out_map, sizeof out_map, c + same + i);
    for (int i = 0; i < nx; i++) add_loop(in_map, sizeof in_map, c + same + ny + i);
    fedc__mlir_unary u;
    fedc__mlir_unary_begin(l, loops, iters, in_map, out_map, &u);
    char oy[24], ox[24], hit[24], r[24];
    offset_of(l, y, same, c + same, oy);
    offset_of(l, x, same, c + same + ny, ox);
    fedc__mlir_tmp(l->m, hit);
    fedc__mlir_printf(l->m, "      %s = arith.cmpi eq, %s, %s : index\n", hit, oy, ox);
    fedc__mlir_tmp(l->m, r);
    fedc__mlir_printf(l->m, "      %s = arith.select %s, %%in0, %%out : %s\n", r, hit, u.g.out_elem);
    fedc__mlir_generic_end(l->m, &u.g, r);
    return l->m->st;
}

/* tensor.reshape with the shape as a constant (the clients axis kept in front). */
fedc_status fedc__lower_reshape(const lower *l) {
    if (l->m->hoisted) return lower_reshape_sharded(l);
    const fedc_type *t = type_of(l, l->v);
    bool c = clients(l, l->v);
    char shape[24], lit[160], stype[32], in_type[160], out_type[160];
    snprintf(stype, sizeof stype, "tensor<%dxi64>", t->rank + c);
    fedc__mlir_tensor_const(l->m, shape, shape_literal(l->m->clients, c, t->rank, t->dims, lit, sizeof lit), stype);
    fedc__mlir_printf(l->m, "    %s = tensor.reshape %s(%s) : (%s, %s) -> %s\n", name(l, l->v), name(l, l->n->in[0]), shape,
                      fedc__mlir_type_of(l->m, l->s, l->n->in[0], in_type, sizeof in_type), stype,
                      fedc__mlir_type_of(l->m, l->s, l->v, out_type, sizeof out_type));
    return l->m->st;
}

static void print_list(fedc__mlir *m, bool clients_first, int64_t first, int n, const int64_t *v, int64_t fill) {
    fedc__mlir_printf(m, "[");
    if (clients_first) fedc__mlir_printf(m, "%lld%s", (long long)first, n ? ", " : "");
    for (int i = 0; i < n; i++) fedc__mlir_printf(m, "%s%lld", i ? ", " : "", (long long)(v ? v[i] : fill));
    fedc__mlir_printf(m, "]");
}

/* Sharded, x placed at offsets (negative for a slice) into `into`, as a
 * generic (LLVM 19 cannot shard tensor.insert_slice or extract_slice). */
static void place(const lower *l, fedc_value x, const char *into, const int64_t *offsets, const char *result) {
    char x_type[160], y_type[160];
    fedc__mlir_place_args a = {name(l, x), fedc__mlir_type_of(l->m, l->s, x, x_type, sizeof x_type), into,
                               fedc__mlir_type_of(l->m, l->s, l->v, y_type, sizeof y_type), type_of(l, x),
                               type_of(l, l->v), offsets, clients(l, l->v)};
    fedc__mlir_place(l, &a, result);
}

fedc_status fedc__lower_slice(const lower *l) {
    const fedc_type *x = type_of(l, l->n->in[0]);
    bool c = clients(l, l->v);
    int ns, nl;
    const int64_t *start = fedc__attr_ints(l->n, FEDC_ATTR_START, &ns), *size = fedc__attr_ints(l->n, FEDC_ATTR_SHAPE, &nl);
    char in_type[160], out_type[160];
    if (l->m->hoisted) {
        int64_t lo[FEDC_MAX_RANK] = {0};
        char into[24];
        for (int d = 0; d < x->rank; d++) lo[d] = start ? -start[d] : 0;
        place(l, l->n->in[0], fedc__mlir_splat(l->m, l->s, l->v, 0, into), lo, name(l, l->v));
        return l->m->st;
    }
    fedc__mlir_printf(l->m, "    %s = tensor.extract_slice %s", name(l, l->v), name(l, l->n->in[0]));
    print_list(l->m, c, 0, x->rank, start, 0);
    print_list(l->m, c, l->m->clients, x->rank, size, 0);
    print_list(l->m, c, 1, x->rank, NULL, 1);
    fedc__mlir_printf(l->m, " : %s to %s\n", fedc__mlir_type_of(l->m, l->s, l->n->in[0], in_type, sizeof in_type),
                      fedc__mlir_type_of(l->m, l->s, l->v, out_type, sizeof out_type));
    return l->m->st;
}

/* into[offsets...] = x: tensor.insert_slice (sharded, a generic), for concat and pad. */
static void insert(const lower *l, fedc_value x, const char *into, const int64_t *offsets, const char *result) {
    const fedc_type *t = type_of(l, x);
    bool c = clients(l, l->v);
    char in_type[160], out_type[160];
    if (l->m->hoisted) {
        place(l, x, into, offsets, result);
        return;
    }
    fedc__mlir_printf(l->m, "    %s = tensor.insert_slice %s into %s", result, name(l, x), into);
    print_list(l->m, c, 0, t->rank, offsets, 0);
    print_list(l->m, c, l->m->clients, t->rank, t->dims, 0);
    print_list(l->m, c, 1, t->rank, NULL, 1);
    fedc__mlir_printf(l->m, " : %s into %s\n", fedc__mlir_type_of(l->m, l->s, x, in_type, sizeof in_type),
                      fedc__mlir_type_of(l->m, l->s, l->v, out_type, sizeof out_type));
}

fedc_status fedc__lower_concat(const lower *l) {
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

fedc_status fedc__lower_pad(const lower *l) {
    int count;
    const int64_t *lo = fedc__attr_ints(l->n, FEDC_ATTR_LO, &count);
    char zeros[24];
    fedc__mlir_splat(l->m, l->s, l->v, 0, zeros);
    insert(l, l->n->in[0], zeros, lo, name(l, l->v));
    return l->m->st;
}


/* ------------------------------------------------------- names only -- */

fedc_status fedc__lower_result(const lower *l) { (void)l; return FEDC_OK; } /* named by its map */
fedc_status fedc__lower_input(const lower *l) { (void)l; return FEDC_OK; } /* named as an argument */

/* ------------------------------------------------------------- dispatch -- */

/* Sharded, a server value of rank 1 or more that a node computed is annotated
 * whole on every device for its users (fedc__mlir_replicated_use). A rank-0 one
 * is not: LLVM 19 cannot write its sharding (`[[]]` says one dim, and its parser
 * takes no `[]`), and propagation infers it whole. */
static void annotate_server_value(const lower *l) {
    const fedc_type *t = type_of(l, l->v);
    if (!l->m->hoisted || fedc__mlir_has_clients(l->s, l->v) || t->rank == 0) return;
    char type[160], out[24];
    fedc__mlir_type_of(l->m, l->s, l->v, type, sizeof type);
    snprintf(l->s->name[l->v], sizeof l->s->name[l->v], "%s",
             fedc__mlir_replicated_use(l->m, l->s->name[l->v], type, out));
}

fedc_status fedc__mlir_lower_scope(fedc__mlir *m, fedc__mlir_scope *s) {
    bool *live = fedc__list(s->p->n + 1, sizeof *live);
    if (!live) return m->st = FEDC_ENOMEM;
    fedc__mlir_liveness(s->p, s->out_live, live, m->hoisted != NULL);
    s->live = live;
    for (fedc_value v = 0; !m->st && v < s->p->n; v++) {
        if (!live[v]) continue;
        lower l = {m, s, v, &s->p->nodes[v], &fedc__mlir_spelling};
        if (!s->batched) m->clients = fedc__mlir_level(m, s, v), m->at_groups = fedc__mlir_level_is_groups(s, v);
        lower_fn f = fedc__lowering(FEDC__TO_MLIR, l.n->op);
        if (f) f(&l);
        else fedc__mlir_fail(m, s, v, FEDC_EUNSUPPORTED, "%s has no lowering to MLIR yet", fedc__ops[l.n->op].name);
        if (l.n->op != FEDC_OP_INPUT && !fedc__op_has_body(l.n->op)) annotate_server_value(&l); /* results name them */
    }
    s->live = NULL;
    fedc_free(live);
    return m->st;
}

const fedc__spelling fedc__mlir_spelling = {fedc__mlir_lower_scope, &fedc__mlir_lstm_spelling, &fedc__mlir_fold_spelling};
