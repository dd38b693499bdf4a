/* The StableHLO lowerings: each op as the StableHLO ops XLA's own frontends
 * emit (numpy broadcasting as broadcast_in_dim, reductions as reduce with a
 * region, matmul as dot_general), in MLIR's generic form. A value with the
 * clients axis has it as dim 0, as DrJAX lays it out, so a map's body is its
 * ops with one more leading dim. The table at the bottom comes from ops.def: an
 * op without a lowering fails naming it. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "export/stablehlo.h"
#include "export/spelling.h"

/* Operand u spread to v's shape as numpy broadcasts (dims right-aligned, the
 * clients axis first): itself when its type is v's, else a broadcast_in_dim of
 * it to `to` (v's type with u's dtype). */
static const char *spread(const lower *l, fedc_value u, char *to, char *out) {
    const fedc_type *t = type_of(l, u), *o = type_of(l, l->v);
    fedc_type want = *o;
    want.dtype = t->dtype;
    char ut[160], attr[200], dims[160];
    fedc__mlir_tensor(l->m, &want, lead(l, l->v), to, 160);
    if (strcmp(type_str(l, u, ut), to) == 0) return name(l, u);
    int64_t map[FEDC_MAX_RANK + 1];
    int k = 0;
    if (lead(l, u)) map[k++] = 0;
    for (int i = 0; i < t->rank; i++) map[k++] = lead(l, l->v) + o->rank - t->rank + i;
    snprintf(attr, sizeof attr, "broadcast_dimensions = %s", i64s(map, k, dims));
    fedc__mlir_tmp(l->m, out);
    op1(l, out, "stablehlo.broadcast_in_dim", attr, name(l, u), ut, to);
    return out;
}

/* ------------------------------------------------------------ elementwise -- */

static const char *binary_name(fedc__op op) {
    switch (op) {
    case FEDC_OP_ADD: return "stablehlo.add";
    case FEDC_OP_SUB: return "stablehlo.subtract";
    case FEDC_OP_MUL: return "stablehlo.multiply";
    case FEDC_OP_DIV: return "stablehlo.divide";
    case FEDC_OP_MAXIMUM: return "stablehlo.maximum"; /* propagates NaN, as fedc */
    case FEDC_OP_MINIMUM: return "stablehlo.minimum";
    default: return NULL;
    }
}

/* compare's attributes: its direction and the comparison type of dtype dt. */
static const char *compare_attrs(const char *dir, fedc_dtype dt, char *buf) {
    const char *kind = fedc_dtype_is_float(dt) ? "FLOAT" : dt == FEDC_I32 ? "SIGNED" : "UNSIGNED";
    snprintf(buf, 160, "comparison_direction = #stablehlo<comparison_direction %s>, compare_type = "
             "#stablehlo<comparison_type %s>", dir, kind);
    return buf;
}

fedc_status fedc__shlo_binary(const lower *l) {
    static const char *const dirs[] = {"EQ", "NE", "LT", "LE", "GT", "GE"};
    char ta[160], tb[160], a[24], b[24], out[160], attrs[160];
    const char *x = spread(l, l->n->in[0], ta, a), *y = spread(l, l->n->in[1], tb, b);
    type_str(l, l->v, out);
    if (l->n->op >= FEDC_OP_EQ && l->n->op <= FEDC_OP_GE)
        op2(l, out_name(l), "stablehlo.compare", compare_attrs(dirs[l->n->op - FEDC_OP_EQ], type_of(l, l->n->in[0])->dtype, attrs),
            x, y, ta, out);
    else op2(l, out_name(l), binary_name(l->n->op), "", x, y, ta, out);
    return l->m->st;
}

fedc_status fedc__shlo_select(const lower *l) {
    char t[3][160], n[3][24], out[160];
    const char *in[3], *types[3];
    for (int i = 0; i < 3; i++) in[i] = spread(l, l->n->in[i], t[i], n[i]), types[i] = t[i];
    fedc__shlo_op(l->m, out_name(l), "stablehlo.select", "", 3, in, types, type_str(l, l->v, out));
    return l->m->st;
}

fedc_status fedc__shlo_unary(const lower *l) {
    char t[160], zero[24], gt[24], bt[160], attrs[160];
    const char *x = name(l, l->n->in[0]);
    fedc_dtype dt = type_of(l, l->v)->dtype;
    type_str(l, l->v, t);
    switch (l->n->op) {
    case FEDC_OP_NEG: op1(l, out_name(l), "stablehlo.negate", "", x, t, t); break;
    case FEDC_OP_EXP: op1(l, out_name(l), "stablehlo.exponential", "", x, t, t); break;
    case FEDC_OP_LOG: op1(l, out_name(l), "stablehlo.log", "", x, t, t); break;
    case FEDC_OP_TANH: op1(l, out_name(l), "stablehlo.tanh", "", x, t, t); break;
    case FEDC_OP_SIGMOID: op1(l, out_name(l), "stablehlo.logistic", "", x, t, t); break;
    case FEDC_OP_SQRT: op1(l, out_name(l), "stablehlo.sqrt", "", x, t, t); break;
    case FEDC_OP_SQUARE: op2(l, out_name(l), "stablehlo.multiply", "", x, x, t, t); break;
    case FEDC_OP_POW:
        fedc__shlo_splat(l->m, dt, fedc__attr_float(l->n, FEDC_ATTR_EXPONENT, 1), t, zero);
        op2(l, out_name(l), "stablehlo.power", "", x, zero, t, t);
        break;
    case FEDC_OP_RELU: { /* x > 0 ? x : 0, so relu(NaN) is 0 as in fedc (maximum would keep the NaN) */
        fedc_type b = *type_of(l, l->v);
        b.dtype = FEDC_BOOL;
        fedc__mlir_tensor(l->m, &b, lead(l, l->v), bt, sizeof bt);
        fedc__shlo_splat(l->m, dt, 0, t, zero);
        fedc__mlir_tmp(l->m, gt);
        op2(l, gt, "stablehlo.compare", compare_attrs("GT", dt, attrs), x, zero, t, bt);
        fedc__shlo_op(l->m, out_name(l), "stablehlo.select", "", 3, (const char *[]){gt, x, zero},
                      (const char *[]){bt, t, t}, t);
        break;
    }
    default: return unsupported(l, "not an elementwise op");
    }
    return l->m->st;
}

/* float to i32 or u8 as fedc casts: clamped into range, NaN to 0, then converted,
 * and at or past 2^31 the largest i32 (2^31 - 1 is no f32: the clamp's top, the
 * largest f32 below 2^31, would convert to 2147483520). StableHLO's convert leaves
 * overflow to the backend: XLA saturates, IREE does not. */
static void saturating_convert(const lower *l, const char *x, fedc_dtype from, const char *in_t, const char *out_t) {
    fedc_dtype to = type_of(l, l->v)->dtype;
    double lo = to == FEDC_I32 ? -2147483648.0 : 0, hi = to == FEDC_I32 ? (from == FEDC_F32 ? 2147483520.0 : 2147483647.0) : 255;
    char bt[160], k[24], c[24], nan[24], clean[24], e[24], big[24], imax[24], attrs[160];
    fedc_type b = *type_of(l, l->v);
    b.dtype = FEDC_BOOL;
    fedc__mlir_tensor(l->m, &b, lead(l, l->v), bt, sizeof bt);
    /* Each call that writes or names a value is a statement of its own: the order
     * of a call's arguments is the compiler's, and so would be the names
     * (tests/compilers_agree.sh). */
    fedc__shlo_splat(l->m, from, lo, in_t, k);
    fedc__mlir_tmp(l->m, c);
    op2(l, c, "stablehlo.maximum", "", x, k, in_t, in_t);
    fedc__shlo_splat(l->m, from, hi, in_t, k);
    fedc__mlir_tmp(l->m, clean);
    op2(l, clean, "stablehlo.minimum", "", c, k, in_t, in_t);
    fedc__mlir_tmp(l->m, nan);
    op2(l, nan, "stablehlo.compare", compare_attrs("NE", from, attrs), x, x, in_t, bt);
    fedc__shlo_splat(l->m, from, 0, in_t, k);
    fedc__mlir_tmp(l->m, c);
    fedc__shlo_op(l->m, c, "stablehlo.select", "", 3, (const char *[]){nan, k, clean}, (const char *[]){bt, in_t, in_t},
                  in_t);
    if (to != FEDC_I32) { /* u8: [0, 255] holds every clamped value */
        op1(l, out_name(l), "stablehlo.convert", "", c, in_t, out_t);
        return;
    }
    fedc__mlir_tmp(l->m, e);
    op1(l, e, "stablehlo.convert", "", c, in_t, out_t);
    fedc__shlo_splat(l->m, from, 2147483648.0, in_t, k);
    fedc__mlir_tmp(l->m, big);
    op2(l, big, "stablehlo.compare", compare_attrs("GE", from, attrs), x, k, in_t, bt);
    fedc__shlo_splat(l->m, FEDC_I32, 2147483647.0, out_t, imax);
    fedc__shlo_op(l->m, out_name(l), "stablehlo.select", "", 3, (const char *[]){big, imax, e},
                  (const char *[]){bt, out_t, out_t}, out_t);
}

/* A cast to bool is != 0, from a float to an integer saturating; others are
 * stablehlo.convert. */
fedc_status fedc__shlo_cast(const lower *l) {
    char in_t[160], out_t[160], zero[24], attrs[160];
    fedc_dtype from = type_of(l, l->n->in[0])->dtype, to = type_of(l, l->v)->dtype;
    type_str(l, l->n->in[0], in_t), type_str(l, l->v, out_t);
    if (to == FEDC_BOOL && from != FEDC_BOOL) {
        fedc__shlo_splat(l->m, from, 0, in_t, zero);
        op2(l, out_name(l), "stablehlo.compare", compare_attrs("NE", from, attrs), name(l, l->n->in[0]), zero, in_t, out_t);
    } else if (fedc_dtype_is_float(from) && !fedc_dtype_is_float(to)) {
        saturating_convert(l, name(l, l->n->in[0]), from, in_t, out_t);
    } else {
        op1(l, out_name(l), "stablehlo.convert", "", name(l, l->n->in[0]), in_t, out_t);
    }
    return l->m->st;
}

/* --------------------------------------------------------------- values -- */

/* A constant's exact bytes (bools as i8, then != 0); a @clients constant is
 * one copy every client reads (broadcast along the clients axis). */
fedc_status fedc__shlo_constant(const lower *l) {
    const fedc_type *t = type_of(l, l->v);
    fedc_type bytes = *t;
    if (t->dtype == FEDC_BOOL) bytes.dtype = FEDC_U8;
    size_t n = fedc_type_bytes(t);
    char type[160], attr_head[200], local[24], flags[24], zero[24], attrs[160], out[160];
    char *hex = fedc_malloc(2 * n + 1);
    if (!hex) return l->m->st = fedc_error(FEDC_ENOMEM, "export to stablehlo: out of memory for a constant of %zu bytes", n);
    fedc__mlir_hex(l->n->data, n, hex);
    fedc__mlir_tensor(l->m, &bytes, false, type, sizeof type);
    bool spread_out = lead(l, l->v) != 0, as_bool = t->dtype == FEDC_BOOL;
    const char *result = spread_out || as_bool ? fedc__mlir_tmp(l->m, local) : out_name(l);
    fedc__mlir_printf(l->m, "    %s = \"stablehlo.constant\"() {value = dense<\"0x%s\"> : %s} : () -> %s\n", result, hex,
                      type, type);
    fedc_free(hex);
    snprintf(attr_head, sizeof attr_head, "%s", type);
    if (as_bool) {
        fedc_type b = *t;
        b.placement = FEDC_LOCAL;
        fedc__mlir_tensor(l->m, &b, false, out, sizeof out);
        fedc__shlo_splat(l->m, FEDC_U8, 0, type, zero);
        result = spread_out ? fedc__mlir_tmp(l->m, flags) : out_name(l);
        op2(l, result, "stablehlo.compare", compare_attrs("NE", FEDC_U8, attrs), local, zero, type, out);
        snprintf(attr_head, sizeof attr_head, "%s", out);
    }
    if (spread_out) {
        int64_t map[FEDC_MAX_RANK];
        for (int i = 0; i < t->rank; i++) map[i] = i + 1;
        char dims[160], attr[200];
        snprintf(attr, sizeof attr, "broadcast_dimensions = %s", i64s(map, t->rank, dims));
        op1(l, out_name(l), "stablehlo.broadcast_in_dim", attr, result, attr_head, type_str(l, l->v, out));
    }
    return l->m->st;
}

fedc_status fedc__shlo_iota(const lower *l) {
    char t[160], attr[64];
    snprintf(attr, sizeof attr, "iota_dimension = %lld : i64",
             (long long)(fedc__attr_int(l->n, FEDC_ATTR_AXIS, 0) + lead(l, l->v)));
    fedc__shlo_op(l->m, out_name(l), "stablehlo.iota", attr, 0, NULL, NULL, type_str(l, l->v, t));
    return l->m->st;
}

fedc_status fedc__shlo_num_clients(const lower *l) {
    char t[160];
    fedc__shlo_splat(l->m, type_of(l, l->v)->dtype, l->m->clients, type_str(l, l->v, t), out_name(l));
    return l->m->st;
}

/* ----------------------------------------------------------- reductions -- */

/* result = reduce(x) over the dims set in `dims` (a sum, or a max), of type
 * out_type; its region adds (or takes the maximum of) two scalars. */
void fedc__shlo_reduce_dims(const lower *l, const char *x, const char *xt, fedc_dtype dt, unsigned dims, int rank, bool max,
                       const char *out_type, const char *result) {
    char init[24], st[64], attr[200], list[160];
    const char *elem = fedc__mlir_elem(dt);
    snprintf(st, sizeof st, "tensor<%s>", elem);
    fedc__shlo_splat(l->m, dt, max ? -INFINITY : 0, st, init);
    int64_t d[FEDC_MAX_RANK + 1];
    int n = 0;
    for (int i = 0; i < rank; i++)
        if (dims & (1u << i)) d[n++] = i;
    snprintf(attr, sizeof attr, "dimensions = %s", i64s(d, n, list));
    char a[24], b[24], r[24];
    fedc__mlir_tmp(l->m, a), fedc__mlir_tmp(l->m, b), fedc__mlir_tmp(l->m, r);
    fedc__mlir_printf(l->m, "    %s = \"stablehlo.reduce\"(%s, %s) ({\n    ^bb0(%s: %s, %s: %s):\n  ", result, x, init, a, st,
                      b, st);
    op2(l, r, max ? "stablehlo.maximum" : "stablehlo.add", "", a, b, st, st);
    fedc__mlir_printf(l->m, "      \"stablehlo.return\"(%s) : (%s) -> ()\n    }) {%s} : (%s, %s) -> %s\n", r, st, attr, xt,
                      st, out_type);
}

/* v = x * k, k a scalar: a mean's division (fedc multiplies by the inverse). */
void fedc__shlo_scale(const lower *l, const char *x, double k, const char *result) {
    char t[160], c[24];
    type_str(l, l->v, t);
    fedc__shlo_splat(l->m, type_of(l, l->v)->dtype, k, t, c);
    op2(l, result, "stablehlo.multiply", "", x, c, t, t);
}

fedc_status fedc__shlo_reduce(const lower *l) {
    fedc_value x = l->n->in[0];
    const fedc_type *t = type_of(l, x);
    int count, c = lead(l, x);
    const int64_t *axes = fedc__attr_ints(l->n, FEDC_ATTR_AXES, &count);
    unsigned dims = 0;
    int64_t n = 1;
    fedc_type kept = *t; /* the result without kept dims */
    kept.rank = 0;
    for (int i = 0; i < count; i++) {
        int ax = fedc__axis(axes[i], t->rank);
        dims |= 1u << (ax + c);
        n *= t->dims[ax];
    }
    for (int i = 0; i < t->rank; i++)
        if (!(dims & (1u << (i + c)))) kept.dims[kept.rank++] = t->dims[i];
    bool keep = fedc__attr_int(l->n, FEDC_ATTR_KEEPDIMS, 0) != 0, mean = l->n->op == FEDC_OP_REDUCE_MEAN;
    char xt[160], kt[160], vt[160], r[24], s[24];
    fedc__mlir_tensor(l->m, &kept, c, kt, sizeof kt);
    type_str(l, l->v, vt);
    const char *summed = keep || mean ? fedc__mlir_tmp(l->m, r) : out_name(l);
    fedc__shlo_reduce_dims(l, name(l, x), type_str(l, x, xt), t->dtype, dims, t->rank + c, l->n->op == FEDC_OP_REDUCE_MAX, kt, summed);
    const char *shaped = summed;
    if (keep) op1(l, shaped = mean ? fedc__mlir_tmp(l->m, s) : out_name(l), "stablehlo.reshape", "", summed, kt, vt);
    if (mean) fedc__shlo_scale(l, shaped, 1.0 / (double)n, out_name(l));
    return l->m->st;
}

/* sum and mean over the clients axis (dim 0), or (sum_up, mean_up from the
 * groups) over the groups axis. */
fedc_status fedc__shlo_sum(const lower *l) {
    char xt[160], vt[160], r[24];
    bool mean = l->n->op == FEDC_OP_MEAN || l->n->op == FEDC_OP_MEAN_UP;
    const char *summed = mean ? fedc__mlir_tmp(l->m, r) : out_name(l);
    fedc__shlo_reduce_dims(l, name(l, l->n->in[0]), type_str(l, l->n->in[0], xt), type_of(l, l->v)->dtype, 1u,
           type_of(l, l->v)->rank + 1, false, type_str(l, l->v, vt), summed);
    if (mean) fedc__shlo_scale(l, summed, 1.0 / l->m->clients, out_name(l));
    return l->m->st;
}

/* weighted_mean(x, w) = sum_i w_i x_i * (1 / sum_i w_i), as fedc aggregates. */
fedc_status fedc__shlo_weighted_mean(const lower *l) {
    fedc_value x = l->n->in[0], w = l->n->in[1];
    fedc_dtype dt = type_of(l, x)->dtype;
    int rank = type_of(l, x)->rank;
    char xt[160], wt[160], vt[160], st[64], wx[24], ws[24], num[24], den[24], one[24], inv[24], invs[24], attr[200],
        dims[160];
    type_str(l, x, xt), type_str(l, w, wt), type_str(l, l->v, vt);
    snprintf(st, sizeof st, "tensor<%s>", fedc__mlir_elem(dt));
    snprintf(attr, sizeof attr, "broadcast_dimensions = %s", i64s((int64_t[]){0}, 1, dims));
    op1(l, fedc__mlir_tmp(l->m, ws), "stablehlo.broadcast_in_dim", attr, name(l, w), wt, xt);
    op2(l, fedc__mlir_tmp(l->m, wx), "stablehlo.multiply", "", name(l, x), ws, xt, xt);
    fedc__shlo_reduce_dims(l, wx, xt, dt, 1u, rank + 1, false, vt, fedc__mlir_tmp(l->m, num));
    fedc__shlo_reduce_dims(l, name(l, w), wt, dt, 1u, 1, false, st, fedc__mlir_tmp(l->m, den));
    fedc__shlo_splat(l->m, dt, 1, st, one);
    op2(l, fedc__mlir_tmp(l->m, inv), "stablehlo.divide", "", one, den, st, st);
    snprintf(attr, sizeof attr, "broadcast_dimensions = array<i64>");
    op1(l, fedc__mlir_tmp(l->m, invs), "stablehlo.broadcast_in_dim", attr, inv, st, vt);
    op2(l, out_name(l), "stablehlo.multiply", "", num, invs, vt, vt);
    return l->m->st;
}

/* --------------------------------------------------------------- shapes -- */

fedc_status fedc__shlo_broadcast(const lower *l) { /* the server value, read by every client */
    int64_t map[FEDC_MAX_RANK];
    int rank = type_of(l, l->v)->rank;
    for (int i = 0; i < rank; i++) map[i] = i + 1;
    char xt[160], vt[160], attr[200], dims[160];
    snprintf(attr, sizeof attr, "broadcast_dimensions = %s", i64s(map, rank, dims));
    op1(l, out_name(l), "stablehlo.broadcast_in_dim", attr, name(l, l->n->in[0]), type_str(l, l->n->in[0], xt),
        type_str(l, l->v, vt));
    return l->m->st;
}

fedc_status fedc__shlo_broadcast_to(const lower *l) {
    char t[160], n[24], vt[160];
    const char *x = spread(l, l->n->in[0], t, n);
    if (x == name(l, l->n->in[0])) op1(l, out_name(l), "stablehlo.reshape", "", x, t, type_str(l, l->v, vt));
    else snprintf(out_name(l), sizeof l->s->name[0], "%s", x);
    return l->m->st;
}

fedc_status fedc__shlo_reshape(const lower *l) {
    char xt[160], vt[160];
    op1(l, out_name(l), "stablehlo.reshape", "", name(l, l->n->in[0]), type_str(l, l->n->in[0], xt), type_str(l, l->v, vt));
    return l->m->st;
}

fedc_status fedc__shlo_transpose(const lower *l) {
    int count, c = lead(l, l->v);
    const int64_t *perm = fedc__attr_ints(l->n, FEDC_ATTR_PERM, &count);
    int64_t p[FEDC_MAX_RANK + 1];
    if (c) p[0] = 0;
    for (int i = 0; i < count; i++) p[i + c] = perm[i] + c;
    char xt[160], vt[160], attr[200], list[160];
    snprintf(attr, sizeof attr, "permutation = %s", i64s(p, count + c, list));
    op1(l, out_name(l), "stablehlo.transpose", attr, name(l, l->n->in[0]), type_str(l, l->n->in[0], xt),
        type_str(l, l->v, vt));
    return l->m->st;
}

fedc_status fedc__shlo_slice(const lower *l) {
    const fedc_type *x = type_of(l, l->n->in[0]);
    int ns, nl, c = lead(l, l->v);
    const int64_t *start = fedc__attr_ints(l->n, FEDC_ATTR_START, &ns), *size = fedc__attr_ints(l->n, FEDC_ATTR_SHAPE, &nl);
    int64_t lo[FEDC_MAX_RANK + 1], hi[FEDC_MAX_RANK + 1], one[FEDC_MAX_RANK + 1];
    if (c) lo[0] = 0, hi[0] = l->m->clients, one[0] = 1;
    for (int i = 0; i < x->rank; i++) lo[i + c] = start[i], hi[i + c] = start[i] + size[i], one[i + c] = 1;
    char xt[160], vt[160], attr[600], a[160], b[160], s[160];
    snprintf(attr, sizeof attr, "start_indices = %s, limit_indices = %s, strides = %s", i64s(lo, x->rank + c, a),
             i64s(hi, x->rank + c, b), i64s(one, x->rank + c, s));
    op1(l, out_name(l), "stablehlo.slice", attr, name(l, l->n->in[0]), type_str(l, l->n->in[0], xt), type_str(l, l->v, vt));
    return l->m->st;
}

fedc_status fedc__shlo_concat(const lower *l) {
    int n = l->n->nin, ax = fedc__axis(fedc__attr_int(l->n, FEDC_ATTR_AXIS, 0), type_of(l, l->v)->rank) + lead(l, l->v);
    char (*types)[160] = fedc__list(n, sizeof *types), vt[160], attr[64];
    const char **ins = fedc__list(n, sizeof *ins), **tys = fedc__list(n, sizeof *tys);
    if (types && ins && tys) {
        for (int i = 0; i < n; i++) ins[i] = name(l, l->n->in[i]), tys[i] = type_str(l, l->n->in[i], types[i]);
        snprintf(attr, sizeof attr, "dimension = %d : i64", ax);
        fedc__shlo_op(l->m, out_name(l), "stablehlo.concatenate", attr, n, ins, tys, type_str(l, l->v, vt));
    } else {
        l->m->st = FEDC_ENOMEM;
    }
    fedc_free(types), fedc_free(ins), fedc_free(tys);
    return l->m->st;
}

fedc_status fedc__shlo_pad(const lower *l) {
    const fedc_type *x = type_of(l, l->n->in[0]), *y = type_of(l, l->v);
    int count, c = lead(l, l->v);
    const int64_t *lo = fedc__attr_ints(l->n, FEDC_ATTR_LO, &count);
    int64_t low[FEDC_MAX_RANK + 1] = {0}, high[FEDC_MAX_RANK + 1] = {0}, in[FEDC_MAX_RANK + 1] = {0};
    for (int i = 0; i < x->rank; i++) low[i + c] = lo[i], high[i + c] = y->dims[i] - x->dims[i] - lo[i];
    char xt[160], vt[160], st[64], zero[24], attr[600], a[160], b[160], s[160];
    snprintf(st, sizeof st, "tensor<%s>", fedc__mlir_elem(x->dtype));
    fedc__shlo_splat(l->m, x->dtype, 0, st, zero);
    snprintf(attr, sizeof attr, "edge_padding_low = %s, edge_padding_high = %s, interior_padding = %s",
             i64s(low, x->rank + c, a), i64s(high, x->rank + c, b), i64s(in, x->rank + c, s));
    fedc__shlo_op(l->m, out_name(l), "stablehlo.pad", attr, 2, (const char *[]){name(l, l->n->in[0]), zero},
                  (const char *[]){type_str(l, l->n->in[0], xt), st}, type_str(l, l->v, vt));
    return l->m->st;
}

/* ---------------------------------------------------------- linear algebra -- */

/* "[a, b]" of n values. */
static const char *dims_list(const int64_t *v, int n, char *buf) {
    size_t k = (size_t)snprintf(buf, 80, "[");
    for (int i = 0; i < n && k < 80; i++) k += (size_t)snprintf(buf + k, 80 - k, "%s%lld", i ? ", " : "", (long long)v[i]);
    if (k < 80) snprintf(buf + k, 80 - k, "]");
    return buf;
}

/* matmul as dot_general: the clients axis (when both operands have it) and the
 * leading dims of two operands of one rank are batch dims; a contracts its last
 * dim (its first of the two, transposed), b its first of the two (its last). The
 * result is batch dims, then a's free dims, then b's: fedc's layout. */
fedc_status fedc__shlo_matmul(const lower *l) {
    fedc_value a = l->n->in[0], b = l->n->in[1];
    int ra = type_of(l, a)->rank, rb = type_of(l, b)->rank, ca = lead(l, a), cb = lead(l, b);
    bool ta = fedc__attr_int(l->n, FEDC_ATTR_TRANSPOSE_A, 0) != 0, tb = fedc__attr_int(l->n, FEDC_ATTR_TRANSPOSE_B, 0) != 0;
    int64_t lb[FEDC_MAX_RANK + 1], rbd[FEDC_MAX_RANK + 1];
    int nb = 0;
    if (ca && cb) lb[nb] = 0, rbd[nb] = 0, nb++;
    for (int i = 0; ra == rb && i < ra - 2; i++, nb++) lb[nb] = ca + i, rbd[nb] = cb + i;
    int64_t lc = ca + ra - (ta ? 2 : 1), rc = cb + rb - (tb ? 1 : 2);
    char at[160], bt[160], vt[160], attr[600], l1[80], l2[80], l3[80], l4[80];
    snprintf(attr, sizeof attr, "dot_dimension_numbers = #stablehlo.dot<lhs_batching_dimensions = %s, "
             "rhs_batching_dimensions = %s, lhs_contracting_dimensions = %s, rhs_contracting_dimensions = %s>",
             dims_list(lb, nb, l1), dims_list(rbd, nb, l2), dims_list(&lc, 1, l3), dims_list(&rc, 1, l4));
    if (ta && ra > 2 && ra != rb) return unsupported(l, "a transposed batched matmul has no StableHLO lowering yet");
    fedc__shlo_op(l->m, out_name(l), "stablehlo.dot_general", attr, 2, (const char *[]){name(l, a), name(l, b)},
                  (const char *[]){type_str(l, a, at), type_str(l, b, bt)}, type_str(l, l->v, vt));
    return l->m->st;
}

/* (j == k[...]) over shape y (with the clients axis when c), as i1, into eq:
 * an iota along the last dim compared with the indices k spread along it. */
static const char *hot(const lower *l, const char *k, const char *kt, const fedc_type *y, int c, char *bts, char *eq) {
    fedc_type it = *y, bt = *y;
    it.dtype = FEDC_I32, bt.dtype = FEDC_BOOL;
    char its[160], io[24], ks[24], attr[200], dims[160];
    fedc__mlir_tensor(l->m, &it, c, its, sizeof its), fedc__mlir_tensor(l->m, &bt, c, bts, 160);
    snprintf(attr, sizeof attr, "iota_dimension = %d : i64", y->rank - 1 + c);
    fedc__shlo_op(l->m, fedc__mlir_tmp(l->m, io), "stablehlo.iota", attr, 0, NULL, NULL, its);
    int64_t map[FEDC_MAX_RANK + 1];
    for (int i = 0; i < y->rank - 1 + c; i++) map[i] = i;
    snprintf(attr, sizeof attr, "broadcast_dimensions = %s", i64s(map, y->rank - 1 + c, dims));
    op1(l, fedc__mlir_tmp(l->m, ks), "stablehlo.broadcast_in_dim", attr, k, kt, its);
    op2(l, fedc__mlir_tmp(l->m, eq), "stablehlo.compare", compare_attrs("EQ", FEDC_I32, attr), io, ks, its, bts);
    return eq;
}

fedc_status fedc__shlo_one_hot(const lower *l) {
    char kt[160], bts[160], vt[160], eq[24];
    hot(l, name(l, l->n->in[0]), type_str(l, l->n->in[0], kt), type_of(l, l->v), lead(l, l->v), bts, eq);
    op1(l, out_name(l), "stablehlo.convert", "", eq, bts, type_str(l, l->v, vt));
    return l->m->st;
}

/* The rows of x (its last dim dropped): their type into rt, and "broadcast the
 * rows back along the last dim" into attr (of 200). */
static void rows_of(const lower *l, fedc_value x, char *rt, char *attr) {
    fedc_type rows = *type_of(l, x);
    rows.rank--;
    int c = lead(l, x);
    fedc__mlir_tensor(l->m, &rows, c, rt, 160);
    int64_t map[FEDC_MAX_RANK + 1];
    char dims[160];
    for (int i = 0; i < rows.rank + c; i++) map[i] = i;
    snprintf(attr, 200, "broadcast_dimensions = %s", i64s(map, rows.rank + c, dims));
}

/* lse[r] = m[r] + log(sum_c exp(x[r, c] - m[r])), m the row's max: fedc's
 * row_logsumexp; lse spread back to x's shape into lse_b. */
static void row_logsumexp(const lower *l, fedc_value x, char *lse, char *lse_b) {
    const fedc_type *t = type_of(l, x);
    int c = lead(l, x), rank = t->rank + c;
    char xt[160], rt[160], attr[200], mx[24], mxs[24], d[24], e[24], s[24], lg[24];
    type_str(l, x, xt);
    rows_of(l, x, rt, attr);
    fedc__shlo_reduce_dims(l, name(l, x), xt, t->dtype, 1u << (rank - 1), rank, true, rt, fedc__mlir_tmp(l->m, mx));
    op1(l, fedc__mlir_tmp(l->m, mxs), "stablehlo.broadcast_in_dim", attr, mx, rt, xt);
    op2(l, fedc__mlir_tmp(l->m, d), "stablehlo.subtract", "", name(l, x), mxs, xt, xt);
    op1(l, fedc__mlir_tmp(l->m, e), "stablehlo.exponential", "", d, xt, xt);
    fedc__shlo_reduce_dims(l, e, xt, t->dtype, 1u << (rank - 1), rank, false, rt, fedc__mlir_tmp(l->m, s));
    op1(l, fedc__mlir_tmp(l->m, lg), "stablehlo.log", "", s, rt, rt);
    op2(l, fedc__mlir_tmp(l->m, lse), "stablehlo.add", "", mx, lg, rt, rt);
    op1(l, fedc__mlir_tmp(l->m, lse_b), "stablehlo.broadcast_in_dim", attr, lse, rt, xt);
}

fedc_status fedc__shlo_log_softmax(const lower *l) {
    char lse[24], lse_b[24], vt[160];
    row_logsumexp(l, l->n->in[0], lse, lse_b);
    op2(l, out_name(l), "stablehlo.subtract", "", name(l, l->n->in[0]), lse_b, type_str(l, l->v, vt), vt);
    return l->m->st;
}

/* loss[r] = w[r] * (lse[r] - x[r, label[r]]), the label's logit picked by a
 * one-hot sum (a label out of range picks 0, where fedc fails: docs/export.md). */
fedc_status fedc__shlo_softmax_xent(const lower *l) {
    fedc_value x = l->n->in[0];
    const fedc_type *t = type_of(l, x);
    int c = lead(l, x), rank = t->rank + c;
    char lse[24], lse_b[24], xt[160], rt[160], kt[160], bts[160], attr[200], eq[24], oh[24], px[24], pick[24], nll[24];
    row_logsumexp(l, x, lse, lse_b);
    type_str(l, x, xt);
    rows_of(l, x, rt, attr);
    hot(l, name(l, l->n->in[1]), type_str(l, l->n->in[1], kt), t, c, bts, eq);
    op1(l, fedc__mlir_tmp(l->m, oh), "stablehlo.convert", "", eq, bts, xt);
    op2(l, fedc__mlir_tmp(l->m, px), "stablehlo.multiply", "", name(l, x), oh, xt, xt);
    fedc__shlo_reduce_dims(l, px, xt, t->dtype, 1u << (rank - 1), rank, false, rt, fedc__mlir_tmp(l->m, pick));
    if (l->n->nin < 3) {
        op2(l, out_name(l), "stablehlo.subtract", "", lse, pick, rt, rt);
        return l->m->st;
    }
    op2(l, fedc__mlir_tmp(l->m, nll), "stablehlo.subtract", "", lse, pick, rt, rt);
    op2(l, out_name(l), "stablehlo.multiply", "", name(l, l->n->in[2]), nll, rt, rt);
    return l->m->st;
}

/* dlogits[r, c] = scale[r] * (exp(x[r, c] - lse[r]) - [c == label[r]]). */
fedc_status fedc__shlo_softmax_xent_grad(const lower *l) {
    fedc_value x = l->n->in[0];
    int c = lead(l, x);
    char lse[24], lse_b[24], xt[160], rt[160], kt[160], bts[160], attr[200], eq[24], oh[24], d[24], p[24], q[24],
        sb[24], st[160];
    row_logsumexp(l, x, lse, lse_b);
    type_str(l, x, xt);
    rows_of(l, x, rt, attr);
    hot(l, name(l, l->n->in[1]), type_str(l, l->n->in[1], kt), type_of(l, x), c, bts, eq);
    op1(l, fedc__mlir_tmp(l->m, oh), "stablehlo.convert", "", eq, bts, xt);
    op2(l, fedc__mlir_tmp(l->m, d), "stablehlo.subtract", "", name(l, x), lse_b, xt, xt);
    op1(l, fedc__mlir_tmp(l->m, p), "stablehlo.exponential", "", d, xt, xt);
    op2(l, fedc__mlir_tmp(l->m, q), "stablehlo.subtract", "", p, oh, xt, xt);
    op1(l, fedc__mlir_tmp(l->m, sb), "stablehlo.broadcast_in_dim", attr, name(l, l->n->in[2]), type_str(l, l->n->in[2], st),
        xt);
    op2(l, out_name(l), "stablehlo.multiply", "", sb, q, xt, xt);
    return l->m->st;
}

fedc_status fedc__shlo_nothing(const lower *l) { (void)l; return FEDC_OK; } /* inputs, and results (named by map) */

/* ------------------------------------------------------------- dispatch -- */

fedc_status fedc__shlo_lower_scope(fedc__mlir *m, fedc__mlir_scope *s) {
    for (fedc_value v = 0; !m->st && v < s->p->n; v++) {
        lower l = {m, s, v, &s->p->nodes[v], &fedc__shlo_spelling};
        if (!s->batched) m->clients = fedc__mlir_level(m, s, v);
        lower_fn f = fedc__lowering(FEDC__TO_STABLEHLO, l.n->op);
        if (f) f(&l);
        else fedc__mlir_fail(m, s, v, FEDC_EUNSUPPORTED, "%s has no lowering to StableHLO yet", fedc__ops[l.n->op].name);
    }
    return m->st;
}

const fedc__spelling fedc__shlo_spelling = {fedc__shlo_lower_scope, &fedc__shlo_lstm_spelling, &fedc__shlo_fold_spelling};
