/* Type rules: for each op, the checks on its operands and attributes and the type
 * of its result. The builder runs them as each op is added; the verifier and the
 * parser run them again on whole programs. Messages name the op and the operands.
 * The transformer and LSTM families' rules live beside their builders
 * (builder_transformer.c, builder_lstm.c), the federated ones in infer_federated.c;
 * the table at the bottom reaches all. */
#include <string.h>

#include "ir/rule.h"

fedc_status fedc__rule_vfail(const rule_ctx *c, fedc_status st, const char *fmt, va_list ap) {
    char detail[400];
    vsnprintf(detail, sizeof detail, fmt, ap);
    return fedc_error(st, "%s: %s", c->name, detail);
}

int fedc__axis(int64_t axis, int rank) {
    if (axis < 0) axis += rank;
    return axis >= 0 && axis < rank ? (int)axis : -1;
}

/* ---------------------------------------------------------------- helpers -- */

fedc_status fedc__rule_require_dtype_float(const rule_ctx *c, int i) {
    const fedc_type *t = operand(c, i);
    if (!fedc_dtype_is_float(t->dtype))
        return fail(c, FEDC_ETYPE, "operand %d must be f32 or f64, got %s", i, TYPESTR(t));
    return FEDC_OK;
}

fedc_status fedc__rule_require_dtype(const rule_ctx *c, int i, fedc_dtype dt) {
    const fedc_type *t = operand(c, i);
    if (t->dtype != dt)
        return fail(c, FEDC_ETYPE, "operand %d must be %s, got %s", i, fedc_dtype_name(dt), TYPESTR(t));
    return FEDC_OK;
}

fedc_status fedc__rule_require_rank(const rule_ctx *c, int i, int rank) {
    const fedc_type *t = operand(c, i);
    if (t->rank != rank)
        return fail(c, FEDC_ESHAPE, "operand %d must have rank %d, got %s", i, rank, TYPESTR(t));
    return FEDC_OK;
}

/* All operands share one placement, and the result has it too. A local value (a
 * constant, say) combines with server or clients values; server and clients
 * values never combine: one must be broadcast or the other aggregated. */
fedc_status fedc__rule_same_placement(const rule_ctx *c, fedc_placement *out) {
    fedc_placement pl = FEDC_LOCAL;
    int from = -1;
    for (int i = 0; i < c->n->nin; i++) {
        fedc_placement q = operand(c, i)->placement;
        if (q == FEDC_LOCAL) continue;
        if (from >= 0 && q != pl)
            return fail(c, FEDC_ETYPE, "operand %d is %s but operand %d is %s: broadcast the server value or "
                        "aggregate the clients value first", i, TYPESTR(operand(c, i)), from,
                        TYPESTR(operand(c, from)));
        pl = q;
        from = i;
    }
    *out = pl;
    return FEDC_OK;
}

/* numpy broadcasting of a and b into out (dims right-aligned, 1 stretches). */
static fedc_status broadcast_shapes(const rule_ctx *c, const fedc_type *a, const fedc_type *b, fedc_type *out) {
    int rank = a->rank > b->rank ? a->rank : b->rank;
    out->rank = rank;
    for (int i = 0; i < rank; i++) {
        int ia = i - (rank - a->rank), ib = i - (rank - b->rank);
        int64_t da = ia >= 0 ? a->dims[ia] : 1, db = ib >= 0 ? b->dims[ib] : 1;
        if (da != db && da != 1 && db != 1)
            return fail(c, FEDC_ESHAPE, "shapes do not broadcast: %s and %s (axis %d: %lld vs %lld)", TYPESTR(a),
                        TYPESTR(b), i, (long long)da, (long long)db);
        out->dims[i] = da == 1 ? db : da;
    }
    return FEDC_OK;
}

fedc_status fedc__rule_elementwise(const rule_ctx *c, fedc_type *out, bool numeric, bool floats_only) {
    fedc_status st = same_placement(c, &out->placement);
    if (st) return st;
    const fedc_type *a = operand(c, 0);
    for (int i = 1; i < c->n->nin; i++) {
        if (operand(c, i)->dtype != a->dtype)
            return fail(c, FEDC_ETYPE, "operand dtypes differ: %s and %s (use cast)", TYPESTR(a),
                        TYPESTR(operand(c, i)));
    }
    if (floats_only && !fedc_dtype_is_float(a->dtype))
        return fail(c, FEDC_ETYPE, "needs f32 or f64 operands, got %s", TYPESTR(a));
    if (numeric && !(fedc_dtype_is_float(a->dtype) || a->dtype == FEDC_I32))
        return fail(c, FEDC_ETYPE, "needs f32, f64 or i32 operands, got %s", TYPESTR(a));
    out->dtype = a->dtype;
    out->rank = a->rank;
    memcpy(out->dims, a->dims, sizeof out->dims);
    for (int i = 1; i < c->n->nin; i++) {
        fedc_type acc = *out;
        st = broadcast_shapes(c, &acc, operand(c, i), out);
        if (st) return st;
    }
    return FEDC_OK;
}

/* Reads the AXES attribute as a bit mask over `rank` axes. */
static fedc_status axes_mask(const rule_ctx *c, int rank, unsigned *mask) {
    int count;
    const int64_t *axes = fedc__attr_ints(c->n, FEDC_ATTR_AXES, &count);
    *mask = 0;
    for (int i = 0; i < count; i++) {
        int ax = fedc__axis(axes[i], rank);
        if (ax < 0) return fail(c, FEDC_EINVAL, "axis %lld is out of range for rank %d", (long long)axes[i], rank);
        if (*mask & (1u << ax)) return fail(c, FEDC_EINVAL, "axis %d is listed twice", ax);
        *mask |= 1u << ax;
    }
    return FEDC_OK;
}

fedc_status fedc__rule_set_dims(fedc_type *out, int rank, const int64_t *dims) {
    out->rank = rank;
    memset(out->dims, 0, sizeof out->dims);
    for (int i = 0; i < rank; i++) out->dims[i] = dims[i];
    return FEDC_OK;
}

/* Dims must be >= 0 and their product must fit comfortably in a byte count. */
fedc_status fedc__rule_check_dims(const rule_ctx *c, int count, const int64_t *dims, const char *what) {
    if (count > FEDC_MAX_RANK) return fail(c, FEDC_ESHAPE, "%s has rank %d > %d", what, count, FEDC_MAX_RANK);
    int64_t total = 1;
    for (int i = 0; i < count; i++) {
        if (dims[i] < 0) return fail(c, FEDC_ESHAPE, "%s has a negative dimension %lld", what, (long long)dims[i]);
        if (dims[i] && total > (INT64_MAX / 8) / dims[i])
            return fail(c, FEDC_ESHAPE, "%s has too many elements", what);
        total *= dims[i];
    }
    return FEDC_OK;
}

/* -------------------------------------------------------------- sources -- */

fedc_status fedc__infer_INPUT(const rule_ctx *c, fedc_type *out) {
    *out = c->n->type;
    if (!c->n->name || !*c->n->name) return fail(c, FEDC_EINVAL, "an input needs a name");
    return check_dims(c, c->n->type.rank, c->n->type.dims, "the input's type");
}

fedc_status fedc__infer_CONSTANT(const rule_ctx *c, fedc_type *out) {
    *out = c->n->type;
    if (!c->n->data) return fail(c, FEDC_EINVAL, "a constant needs data");
    return check_dims(c, c->n->type.rank, c->n->type.dims, "the constant's type");
}

fedc_status fedc__infer_IOTA(const rule_ctx *c, fedc_type *out) {
    *out = c->n->type;
    int count;
    const int64_t *shape = fedc__attr_ints(c->n, FEDC_ATTR_SHAPE, &count);
    fedc_status st = check_dims(c, count, shape, "shape");
    if (st) return st;
    out->dtype = (fedc_dtype)fedc__attr_int(c->n, FEDC_ATTR_DTYPE, FEDC_F32);
    if ((unsigned)out->dtype >= FEDC_DTYPE_COUNT || !(fedc_dtype_is_float(out->dtype) || out->dtype == FEDC_I32))
        return fail(c, FEDC_ETYPE, "dtype must be f32, f64 or i32, got %s", fedc_dtype_name(out->dtype));
    set_dims(out, count, shape);
    if (fedc__axis(fedc__attr_int(c->n, FEDC_ATTR_AXIS, 0), count) < 0)
        return fail(c, FEDC_EINVAL, "axis %lld is out of range for rank %d",
                    (long long)fedc__attr_int(c->n, FEDC_ATTR_AXIS, 0), count);
    return FEDC_OK;
}

/* ---------------------------------------------------------- elementwise -- */

static fedc_status arith(const rule_ctx *c, fedc_type *out) { return elementwise(c, out, true, false); }
static fedc_status compare(const rule_ctx *c, fedc_type *out) {
    fedc_status st = elementwise(c, out, true, false);
    out->dtype = FEDC_BOOL;
    return st;
}

fedc_status fedc__infer_ADD(const rule_ctx *c, fedc_type *out) { return arith(c, out); }
fedc_status fedc__infer_SUB(const rule_ctx *c, fedc_type *out) { return arith(c, out); }
fedc_status fedc__infer_MUL(const rule_ctx *c, fedc_type *out) { return arith(c, out); }
fedc_status fedc__infer_DIV(const rule_ctx *c, fedc_type *out) { return floats(c, out); }
fedc_status fedc__infer_MAXIMUM(const rule_ctx *c, fedc_type *out) { return arith(c, out); }
fedc_status fedc__infer_MINIMUM(const rule_ctx *c, fedc_type *out) { return arith(c, out); }
fedc_status fedc__infer_NEG(const rule_ctx *c, fedc_type *out) { return arith(c, out); }
fedc_status fedc__infer_EXP(const rule_ctx *c, fedc_type *out) { return floats(c, out); }
fedc_status fedc__infer_LOG(const rule_ctx *c, fedc_type *out) { return floats(c, out); }
fedc_status fedc__infer_TANH(const rule_ctx *c, fedc_type *out) { return floats(c, out); }
fedc_status fedc__infer_SIGMOID(const rule_ctx *c, fedc_type *out) { return floats(c, out); }
fedc_status fedc__infer_RELU(const rule_ctx *c, fedc_type *out) { return floats(c, out); }
fedc_status fedc__infer_SQRT(const rule_ctx *c, fedc_type *out) { return floats(c, out); }
fedc_status fedc__infer_SQUARE(const rule_ctx *c, fedc_type *out) { return floats(c, out); }
fedc_status fedc__infer_POW(const rule_ctx *c, fedc_type *out) {
    if (!fedc__attr_find(c->n, FEDC_ATTR_EXPONENT)) return fail(c, FEDC_EINVAL, "needs an exponent");
    return floats(c, out);
}
fedc_status fedc__infer_EQ(const rule_ctx *c, fedc_type *out) { return compare(c, out); }
fedc_status fedc__infer_NE(const rule_ctx *c, fedc_type *out) { return compare(c, out); }
fedc_status fedc__infer_LT(const rule_ctx *c, fedc_type *out) { return compare(c, out); }
fedc_status fedc__infer_LE(const rule_ctx *c, fedc_type *out) { return compare(c, out); }
fedc_status fedc__infer_GT(const rule_ctx *c, fedc_type *out) { return compare(c, out); }
fedc_status fedc__infer_GE(const rule_ctx *c, fedc_type *out) { return compare(c, out); }

fedc_status fedc__infer_SELECT(const rule_ctx *c, fedc_type *out) {
    fedc_status st = require_dtype(c, 0, FEDC_BOOL);
    if (st) return st;
    st = same_placement(c, &out->placement);
    if (st) return st;
    const fedc_type *a = operand(c, 1), *b = operand(c, 2);
    if (a->dtype != b->dtype)
        return fail(c, FEDC_ETYPE, "operands 1 and 2 differ in dtype: %s and %s", TYPESTR(a), TYPESTR(b));
    fedc_type ab;
    memset(&ab, 0, sizeof ab);
    st = broadcast_shapes(c, a, b, &ab);
    if (!st) st = broadcast_shapes(c, operand(c, 0), &ab, out);
    out->dtype = a->dtype;
    return st;
}

/* ----------------------------------------------------------- reductions -- */

static fedc_status reduce(const rule_ctx *c, fedc_type *out, bool floats_only) {
    const fedc_type *x = operand(c, 0);
    if (floats_only ? !fedc_dtype_is_float(x->dtype) : !(fedc_dtype_is_float(x->dtype) || x->dtype == FEDC_I32))
        return fail(c, FEDC_ETYPE, "cannot reduce %s", TYPESTR(x));
    unsigned mask;
    fedc_status st = axes_mask(c, x->rank, &mask);
    if (st) return st;
    bool keep = fedc__attr_int(c->n, FEDC_ATTR_KEEPDIMS, 0) != 0;
    *out = *x;
    out->rank = 0;
    memset(out->dims, 0, sizeof out->dims);
    for (int i = 0; i < x->rank; i++) {
        if (!(mask & (1u << i))) out->dims[out->rank++] = x->dims[i];
        else if (keep) out->dims[out->rank++] = 1;
    }
    return FEDC_OK;
}

fedc_status fedc__infer_REDUCE_SUM(const rule_ctx *c, fedc_type *out) { return reduce(c, out, false); }
fedc_status fedc__infer_REDUCE_MEAN(const rule_ctx *c, fedc_type *out) { return reduce(c, out, true); }
fedc_status fedc__infer_REDUCE_MAX(const rule_ctx *c, fedc_type *out) { return reduce(c, out, false); }

fedc_status fedc__infer_ARGMAX(const rule_ctx *c, fedc_type *out) {
    const fedc_type *x = operand(c, 0);
    int ax = fedc__axis(fedc__attr_int(c->n, FEDC_ATTR_AXIS, -1), x->rank);
    if (ax < 0) return fail(c, FEDC_EINVAL, "axis is out of range for %s", TYPESTR(x));
    if (!(fedc_dtype_is_float(x->dtype) || x->dtype == FEDC_I32))
        return fail(c, FEDC_ETYPE, "cannot take argmax of %s", TYPESTR(x));
    *out = *x;
    out->dtype = FEDC_I32;
    out->rank = 0;
    for (int i = 0; i < x->rank; i++)
        if (i != ax) out->dims[out->rank++] = x->dims[i];
    for (int i = out->rank; i < FEDC_MAX_RANK; i++) out->dims[i] = 0;
    return FEDC_OK;
}

/* --------------------------------------------------------------- shapes -- */

fedc_status fedc__infer_RESHAPE(const rule_ctx *c, fedc_type *out) {
    const fedc_type *x = operand(c, 0);
    int count;
    const int64_t *shape = fedc__attr_ints(c->n, FEDC_ATTR_SHAPE, &count);
    fedc_status st = check_dims(c, count, shape, "shape");
    if (st) return st;
    int64_t n = 1;
    for (int i = 0; i < count; i++) n *= shape[i];
    if (n != fedc_type_count(x))
        return fail(c, FEDC_ESHAPE, "cannot reshape %s (%lld elements) to %lld elements", TYPESTR(x),
                    (long long)fedc_type_count(x), (long long)n);
    *out = *x;
    return set_dims(out, count, shape);
}

fedc_status fedc__infer_BROADCAST_TO(const rule_ctx *c, fedc_type *out) {
    const fedc_type *x = operand(c, 0);
    int count;
    const int64_t *shape = fedc__attr_ints(c->n, FEDC_ATTR_SHAPE, &count);
    fedc_status st = check_dims(c, count, shape, "shape");
    if (st) return st;
    *out = *x;
    set_dims(out, count, shape);
    if (count < x->rank) return fail(c, FEDC_ESHAPE, "cannot broadcast %s to a lower rank %d", TYPESTR(x), count);
    for (int i = 0; i < x->rank; i++) {
        int64_t d = x->dims[i], t = shape[count - x->rank + i];
        if (d != t && d != 1)
            return fail(c, FEDC_ESHAPE, "cannot broadcast %s to %s", TYPESTR(x), TYPESTR(out));
    }
    return FEDC_OK;
}

fedc_status fedc__infer_TRANSPOSE(const rule_ctx *c, fedc_type *out) {
    const fedc_type *x = operand(c, 0);
    int count;
    const int64_t *perm = fedc__attr_ints(c->n, FEDC_ATTR_PERM, &count);
    if (count != x->rank) return fail(c, FEDC_EINVAL, "perm has %d entries for %s", count, TYPESTR(x));
    unsigned seen = 0;
    *out = *x;
    for (int i = 0; i < count; i++) {
        if (perm[i] < 0 || perm[i] >= count || (seen & (1u << perm[i])))
            return fail(c, FEDC_EINVAL, "perm is not a permutation of 0..%d", count - 1);
        seen |= 1u << perm[i];
        out->dims[i] = x->dims[perm[i]];
    }
    return FEDC_OK;
}

fedc_status fedc__infer_SLICE(const rule_ctx *c, fedc_type *out) {
    const fedc_type *x = operand(c, 0);
    int ns, nl;
    const int64_t *start = fedc__attr_ints(c->n, FEDC_ATTR_START, &ns);
    const int64_t *size = fedc__attr_ints(c->n, FEDC_ATTR_SHAPE, &nl);
    if (ns != x->rank || nl != x->rank)
        return fail(c, FEDC_EINVAL, "start and shape need %d entries for %s", x->rank, TYPESTR(x));
    *out = *x;
    for (int i = 0; i < x->rank; i++) {
        if (start[i] < 0 || size[i] < 0 || start[i] + size[i] > x->dims[i])
            return fail(c, FEDC_ESHAPE, "axis %d: [%lld, %lld) is outside [0, %lld) of %s", i, (long long)start[i],
                        (long long)(start[i] + size[i]), (long long)x->dims[i], TYPESTR(x));
        out->dims[i] = size[i];
    }
    return FEDC_OK;
}

fedc_status fedc__infer_CONCAT(const rule_ctx *c, fedc_type *out) {
    const fedc_type *x = operand(c, 0);
    int ax = fedc__axis(fedc__attr_int(c->n, FEDC_ATTR_AXIS, 0), x->rank);
    if (ax < 0) return fail(c, FEDC_EINVAL, "axis is out of range for %s", TYPESTR(x));
    fedc_status st = same_placement(c, &out->placement);
    if (st) return st;
    *out = *x;
    for (int i = 1; i < c->n->nin; i++) {
        const fedc_type *y = operand(c, i);
        bool ok = y->dtype == x->dtype && y->rank == x->rank;
        for (int d = 0; ok && d < x->rank; d++) ok = d == ax || y->dims[d] == x->dims[d];
        if (!ok)
            return fail(c, FEDC_ESHAPE, "operand %d is %s, which does not match %s outside axis %d", i, TYPESTR(y),
                        TYPESTR(x), ax);
        out->dims[ax] += y->dims[ax];
    }
    return FEDC_OK;
}

fedc_status fedc__infer_PAD(const rule_ctx *c, fedc_type *out) {
    const fedc_type *x = operand(c, 0);
    int nlo, nhi;
    const int64_t *lo = fedc__attr_ints(c->n, FEDC_ATTR_LO, &nlo);
    const int64_t *hi = fedc__attr_ints(c->n, FEDC_ATTR_HI, &nhi);
    if (nlo != x->rank || nhi != x->rank)
        return fail(c, FEDC_EINVAL, "lo and hi need %d entries for %s", x->rank, TYPESTR(x));
    *out = *x;
    for (int i = 0; i < x->rank; i++) {
        if (lo[i] < 0 || hi[i] < 0) return fail(c, FEDC_EINVAL, "negative padding on axis %d", i);
        out->dims[i] = x->dims[i] + lo[i] + hi[i];
    }
    return FEDC_OK;
}

/* ------------------------------------------------- algebra and indexing -- */

fedc_status fedc__infer_MATMUL(const rule_ctx *c, fedc_type *out) {
    const fedc_type *a = operand(c, 0), *b = operand(c, 1);
    fedc_status st = require_dtype_float(c, 0);
    if (!st) st = same_placement(c, &out->placement);
    if (st) return st;
    if (a->dtype != b->dtype) return fail(c, FEDC_ETYPE, "dtypes differ: a is %s, b is %s", TYPESTR(a), TYPESTR(b));
    if (a->rank < 2 || b->rank < 2)
        return fail(c, FEDC_ESHAPE, "operands need rank >= 2: a is %s, b is %s", TYPESTR(a), TYPESTR(b));
    bool ta = fedc__attr_int(c->n, FEDC_ATTR_TRANSPOSE_A, 0), tb = fedc__attr_int(c->n, FEDC_ATTR_TRANSPOSE_B, 0);
    int64_t m = a->dims[a->rank - (ta ? 1 : 2)], ka = a->dims[a->rank - (ta ? 2 : 1)];
    int64_t kb = b->dims[b->rank - (tb ? 1 : 2)], n = b->dims[b->rank - (tb ? 2 : 1)];
    if (ka != kb)
        return fail(c, FEDC_ESHAPE, "inner dimensions differ: a is %s%s, b is %s%s", TYPESTR(a),
                    ta ? " (transposed)" : "", TYPESTR(b), tb ? " (transposed)" : "");
    const fedc_type *batched = a->rank >= b->rank ? a : b;
    if (a->rank > 2 && b->rank > 2) {
        bool same = a->rank == b->rank;
        for (int i = 0; same && i < a->rank - 2; i++) same = a->dims[i] == b->dims[i];
        if (!same) return fail(c, FEDC_ESHAPE, "batch dimensions differ: a is %s, b is %s", TYPESTR(a), TYPESTR(b));
    }
    out->dtype = a->dtype;
    out->rank = batched->rank;
    memcpy(out->dims, batched->dims, sizeof out->dims);
    out->dims[out->rank - 2] = m;
    out->dims[out->rank - 1] = n;
    return FEDC_OK;
}

fedc_status fedc__infer_GATHER(const rule_ctx *c, fedc_type *out) {
    const fedc_type *table = operand(c, 0), *idx = operand(c, 1);
    fedc_status st = require_dtype(c, 1, FEDC_I32);
    if (!st) st = same_placement(c, &out->placement);
    if (st) return st;
    if (table->rank < 1) return fail(c, FEDC_ESHAPE, "the table must have rank >= 1, got %s", TYPESTR(table));
    if (idx->rank + table->rank - 1 > FEDC_MAX_RANK)
        return fail(c, FEDC_ESHAPE, "result rank exceeds %d", FEDC_MAX_RANK);
    out->dtype = table->dtype;
    out->rank = 0;
    for (int i = 0; i < idx->rank; i++) out->dims[out->rank++] = idx->dims[i];
    for (int i = 1; i < table->rank; i++) out->dims[out->rank++] = table->dims[i];
    return FEDC_OK;
}

fedc_status fedc__infer_SCATTER_ADD(const rule_ctx *c, fedc_type *out) {
    const fedc_type *upd = operand(c, 0), *idx = operand(c, 1);
    fedc_status st = require_dtype_float(c, 0);
    if (!st) st = require_dtype(c, 1, FEDC_I32);
    if (!st) st = same_placement(c, &out->placement);
    if (st) return st;
    int64_t rows = fedc__attr_int(c->n, FEDC_ATTR_ROWS, -1);
    if (rows < 0) return fail(c, FEDC_EINVAL, "needs rows >= 0");
    if (upd->rank < idx->rank) return fail(c, FEDC_ESHAPE, "updates %s do not start with the index shape %s", TYPESTR(upd), TYPESTR(idx));
    for (int i = 0; i < idx->rank; i++)
        if (upd->dims[i] != idx->dims[i])
            return fail(c, FEDC_ESHAPE, "updates %s do not start with the index shape %s", TYPESTR(upd), TYPESTR(idx));
    out->dtype = upd->dtype;
    out->rank = 1 + upd->rank - idx->rank;
    memset(out->dims, 0, sizeof out->dims);
    out->dims[0] = rows;
    for (int i = idx->rank; i < upd->rank; i++) out->dims[1 + i - idx->rank] = upd->dims[i];
    return FEDC_OK;
}

fedc_status fedc__infer_ONE_HOT(const rule_ctx *c, fedc_type *out) {
    const fedc_type *idx = operand(c, 0);
    fedc_status st = require_dtype(c, 0, FEDC_I32);
    if (st) return st;
    int64_t depth = fedc__attr_int(c->n, FEDC_ATTR_DEPTH, -1);
    if (depth < 0) return fail(c, FEDC_EINVAL, "needs depth >= 0");
    if (idx->rank >= FEDC_MAX_RANK) return fail(c, FEDC_ESHAPE, "result rank exceeds %d", FEDC_MAX_RANK);
    int64_t dt = fedc__attr_int(c->n, FEDC_ATTR_DTYPE, FEDC_F32);
    if (dt < 0 || dt >= FEDC_DTYPE_COUNT) return fail(c, FEDC_EINVAL, "unknown dtype %lld", (long long)dt);
    *out = *idx;
    out->dtype = (fedc_dtype)dt;
    out->dims[out->rank++] = depth;
    return FEDC_OK;
}

/* ---------------------------------------------------- convolution, pools -- */

/* Reads strides, pads and (for pools) window; checks the NHWC operand. */
static fedc_status window_attrs(const rule_ctx *c, int64_t *strides, int64_t *pads, int64_t *window, bool need_window) {
    int ns, np, nw;
    const int64_t *s = fedc__attr_ints(c->n, FEDC_ATTR_STRIDES, &ns);
    const int64_t *pd = fedc__attr_ints(c->n, FEDC_ATTR_PADS, &np);
    const int64_t *w = fedc__attr_ints(c->n, FEDC_ATTR_WINDOW, &nw);
    if (ns != 2 || s[0] < 1 || s[1] < 1) return fail(c, FEDC_EINVAL, "needs strides=[sh,sw] >= 1");
    if (np != 4 || pd[0] < 0 || pd[1] < 0 || pd[2] < 0 || pd[3] < 0)
        return fail(c, FEDC_EINVAL, "needs pads=[top,bottom,left,right] >= 0");
    if (need_window && (nw != 2 || w[0] < 1 || w[1] < 1)) return fail(c, FEDC_EINVAL, "needs window=[kh,kw] >= 1");
    memcpy(strides, s, 2 * sizeof *s);
    memcpy(pads, pd, 4 * sizeof *pd);
    if (need_window) memcpy(window, w, 2 * sizeof *w);
    return FEDC_OK;
}

int64_t fedc__window_out(int64_t in, int64_t k, int64_t stride, int64_t pad_lo, int64_t pad_hi) {
    int64_t span = in + pad_lo + pad_hi - k;
    return span < 0 ? 0 : span / stride + 1;
}

void fedc__same_pads(int64_t h, int64_t w, int64_t kh, int64_t kw, int64_t sh, int64_t sw, fedc_padding padding,
                     int64_t pads[4]) {
    memset(pads, 0, 4 * sizeof *pads);
    if (padding != FEDC_PAD_SAME) return;
    int64_t oh = (h + sh - 1) / sh, ow = (w + sw - 1) / sw;
    int64_t th = (oh - 1) * sh + kh - h, tw = (ow - 1) * sw + kw - w;
    if (th < 0) th = 0;
    if (tw < 0) tw = 0;
    pads[0] = th / 2;
    pads[1] = th - th / 2;
    pads[2] = tw / 2;
    pads[3] = tw - tw / 2;
}

/* The NHWC output type of a window op over x with a kh x kw window. */
static fedc_status window_output(const rule_ctx *c, const fedc_type *x, int64_t kh, int64_t kw, int64_t channels,
                                 fedc_type *out) {
    int64_t strides[2], pads[4];
    fedc_status st = window_attrs(c, strides, pads, NULL, false);
    if (st) return st;
    int64_t oh = fedc__window_out(x->dims[1], kh, strides[0], pads[0], pads[1]);
    int64_t ow = fedc__window_out(x->dims[2], kw, strides[1], pads[2], pads[3]);
    if (oh < 1 || ow < 1)
        return fail(c, FEDC_ESHAPE, "a %lldx%lld window does not fit in %s", (long long)kh, (long long)kw, TYPESTR(x));
    *out = *x;
    out->dims[1] = oh;
    out->dims[2] = ow;
    out->dims[3] = channels;
    return FEDC_OK;
}

fedc_status fedc__infer_CONV2D(const rule_ctx *c, fedc_type *out) {
    const fedc_type *x = operand(c, 0), *w = operand(c, 1);
    fedc_status st = require_dtype_float(c, 0);
    if (!st) st = require_rank(c, 0, 4);
    if (!st) st = require_rank(c, 1, 4);
    if (!st) st = same_placement(c, &out->placement);
    if (st) return st;
    if (w->dtype != x->dtype || w->dims[2] != x->dims[3])
        return fail(c, FEDC_ESHAPE, "filter %s does not match input %s (HWIO filter, NHWC input)", TYPESTR(w), TYPESTR(x));
    return window_output(c, x, w->dims[0], w->dims[1], w->dims[3], out);
}

/* The gradient ops re-derive the forward output shape and check it against dy. */
static fedc_status check_dy(const rule_ctx *c, const fedc_type *fwd_out, int dy_index) {
    const fedc_type *dy = operand(c, dy_index);
    if (dy->dtype != fwd_out->dtype || !fedc_type_same_shape(dy, fwd_out))
        return fail(c, FEDC_ESHAPE, "dy is %s but the forward output is %s", TYPESTR(dy), TYPESTR(fwd_out));
    return FEDC_OK;
}

static fedc_status x_type_from_shape(const rule_ctx *c, fedc_dtype dt, fedc_type *x) {
    int count;
    const int64_t *shape = fedc__attr_ints(c->n, FEDC_ATTR_SHAPE, &count);
    if (count != 4) return fail(c, FEDC_EINVAL, "needs shape=[n,h,w,c] of the forward input");
    fedc_status st = check_dims(c, count, shape, "shape");
    if (st) return st;
    *x = fedc_type_make(dt, 4, shape);
    x->placement = operand(c, 0)->placement;
    return FEDC_OK;
}

fedc_status fedc__infer_CONV2D_INPUT_GRAD(const rule_ctx *c, fedc_type *out) {
    const fedc_type *w = operand(c, 1);
    fedc_status st = require_dtype_float(c, 0);
    if (!st) st = require_rank(c, 0, 4);
    if (!st) st = require_rank(c, 1, 4);
    if (!st) st = x_type_from_shape(c, operand(c, 0)->dtype, out);
    if (st) return st;
    if (w->dims[2] != out->dims[3]) return fail(c, FEDC_ESHAPE, "filter %s does not match input %s", TYPESTR(w), TYPESTR(out));
    fedc_type fwd;
    st = window_output(c, out, w->dims[0], w->dims[1], w->dims[3], &fwd);
    return st ? st : check_dy(c, &fwd, 0);
}

fedc_status fedc__infer_CONV2D_FILTER_GRAD(const rule_ctx *c, fedc_type *out) {
    const fedc_type *x = operand(c, 0), *dy = operand(c, 1);
    int64_t strides[2], pads[4], window[2];
    fedc_status st = require_dtype_float(c, 0);
    if (!st) st = require_rank(c, 0, 4);
    if (!st) st = require_rank(c, 1, 4);
    if (!st) st = window_attrs(c, strides, pads, window, true);
    if (st) return st;
    fedc_type fwd;
    st = window_output(c, x, window[0], window[1], dy->dims[3], &fwd);
    if (!st) st = check_dy(c, &fwd, 1);
    if (st) return st;
    *out = *x;
    int64_t dims[4] = {window[0], window[1], x->dims[3], dy->dims[3]};
    return set_dims(out, 4, dims);
}

static fedc_status pool_common(const rule_ctx *c, const fedc_type *x, fedc_type *out) {
    int64_t strides[2], pads[4], window[2];
    fedc_status st = window_attrs(c, strides, pads, window, true);
    if (st) return st;
    return window_output(c, x, window[0], window[1], x->dims[3], out);
}

fedc_status fedc__infer_MAX_POOL2D(const rule_ctx *c, fedc_type *out) {
    fedc_status st = require_dtype_float(c, 0);
    if (!st) st = require_rank(c, 0, 4);
    return st ? st : pool_common(c, operand(c, 0), out);
}

fedc_status fedc__infer_AVG_POOL2D(const rule_ctx *c, fedc_type *out) { return fedc__infer_MAX_POOL2D(c, out); }

fedc_status fedc__infer_MAX_POOL2D_GRAD(const rule_ctx *c, fedc_type *out) {
    fedc_status st = fedc__infer_MAX_POOL2D(c, out);
    if (!st) st = check_dy(c, out, 1);
    *out = *operand(c, 0);
    return st;
}

fedc_status fedc__infer_AVG_POOL2D_GRAD(const rule_ctx *c, fedc_type *out) {
    fedc_status st = require_dtype_float(c, 0);
    if (!st) st = x_type_from_shape(c, operand(c, 0)->dtype, out);
    fedc_type fwd;
    if (!st) st = pool_common(c, out, &fwd);
    return st ? st : check_dy(c, &fwd, 0);
}

/* ------------------------------------------------------- losses and misc -- */

fedc_status fedc__infer_LOG_SOFTMAX(const rule_ctx *c, fedc_type *out) {
    fedc_status st = require_dtype_float(c, 0);
    if (st) return st;
    if (operand(c, 0)->rank < 1) return fail(c, FEDC_ESHAPE, "needs rank >= 1");
    *out = *operand(c, 0);
    return FEDC_OK;
}

fedc_status fedc__infer_SOFTMAX_XENT(const rule_ctx *c, fedc_type *out) {
    const fedc_type *logits = operand(c, 0), *labels = operand(c, 1);
    fedc_status st = require_dtype_float(c, 0);
    if (!st) st = require_dtype(c, 1, FEDC_I32);
    if (!st) st = same_placement(c, &out->placement);
    if (st) return st;
    bool ok = logits->rank == labels->rank + 1;
    for (int i = 0; ok && i < labels->rank; i++) ok = labels->dims[i] == logits->dims[i];
    if (!ok)
        return fail(c, FEDC_ESHAPE, "labels %s must be the logits' shape %s without the class axis", TYPESTR(labels),
                    TYPESTR(logits));
    if (c->n->nin == 3) {
        const fedc_type *w = operand(c, 2);
        if (w->dtype != logits->dtype || !fedc_type_same_shape(w, labels))
            return fail(c, FEDC_ESHAPE, "weight %s must have the labels' shape %s and the logits' dtype", TYPESTR(w),
                        TYPESTR(labels));
    }
    *out = *labels;
    out->dtype = logits->dtype;
    return FEDC_OK;
}

/* The logits' type; labels and scale as softmax_cross_entropy's labels and weight. */
fedc_status fedc__infer_SOFTMAX_XENT_GRAD(const rule_ctx *c, fedc_type *out) {
    fedc_status st = fedc__infer_SOFTMAX_XENT(c, out);
    if (!st) *out = *operand(c, 0);
    return st;
}

fedc_status fedc__infer_DROPOUT(const rule_ctx *c, fedc_type *out) {
    const fedc_type *key = operand(c, 1);
    fedc_status st = require_dtype_float(c, 0);
    if (st) return st;
    if (key->dtype != FEDC_I32 || key->rank != 1 || key->dims[0] != 4)
        return fail(c, FEDC_ETYPE, "the key must be i32[4], got %s", TYPESTR(key));
    double rate = fedc__attr_float(c->n, FEDC_ATTR_RATE, -1);
    if (!(rate >= 0 && rate < 1)) return fail(c, FEDC_EINVAL, "rate must be in [0, 1), got %g", rate);
    *out = *operand(c, 0);
    return FEDC_OK;
}

/* The shape and dtype attributes' type, at the key's placement. */
fedc_status fedc__infer_RANDOM_NORMAL(const rule_ctx *c, fedc_type *out) {
    const fedc_type *key = operand(c, 0);
    if (key->dtype != FEDC_I32 || key->rank != 1 || key->dims[0] != 4)
        return fail(c, FEDC_ETYPE, "the key must be i32[4], got %s", TYPESTR(key));
    int count;
    const int64_t *shape = fedc__attr_ints(c->n, FEDC_ATTR_SHAPE, &count);
    fedc_status st = check_dims(c, count, shape, "shape");
    if (st) return st;
    *out = c->n->type;
    out->dtype = (fedc_dtype)fedc__attr_int(c->n, FEDC_ATTR_DTYPE, FEDC_F32);
    if ((unsigned)out->dtype >= FEDC_DTYPE_COUNT || !fedc_dtype_is_float(out->dtype))
        return fail(c, FEDC_ETYPE, "dtype must be f32 or f64, got %s", fedc_dtype_name(out->dtype));
    set_dims(out, count, shape);
    out->placement = key->placement;
    return FEDC_OK;
}

fedc_status fedc__infer_RANDOM_UNIFORM(const rule_ctx *c, fedc_type *out) { return fedc__infer_RANDOM_NORMAL(c, out); }

fedc_status fedc__infer_CAST(const rule_ctx *c, fedc_type *out) {
    int64_t dt = fedc__attr_int(c->n, FEDC_ATTR_DTYPE, -1);
    if (dt < 0 || dt >= FEDC_DTYPE_COUNT) return fail(c, FEDC_EINVAL, "needs a dtype");
    *out = *operand(c, 0);
    out->dtype = (fedc_dtype)dt;
    return FEDC_OK;
}

/* ------------------------------------------------------------- dispatch -- */

typedef fedc_status (*infer_fn)(const rule_ctx *c, fedc_type *out);

static const infer_fn rules[FEDC_OP_COUNT] = {
#define FEDC_OP(id, name, min_in, max_in) [FEDC_OP_##id] = fedc__infer_##id,
#include "ir/ops.def"
#undef FEDC_OP
};

fedc_status fedc__infer(const fedc_program *p, const fedc__node *n, fedc_type *out) {
    rule_ctx c = {p, n, fedc__ops[n->op].name};
    for (int i = 0; n->op != FEDC_OP_RESULT && i < n->nin; i++)
        if (operand(&c, i)->dtype == FEDC__TUPLE)
            return fail(&c, FEDC_ETYPE, "operand %d is a map's tuple of results; take one with result", i);
    fedc_type t;
    memset(&t, 0, sizeof t);
    fedc_status st = rules[n->op](&c, &t);
    if (st) return st;
    st = t.dtype == FEDC__TUPLE ? FEDC_OK : check_dims(&c, t.rank, t.dims, "the result");
    if (st) return st;
    for (int i = t.rank; i < FEDC_MAX_RANK; i++) t.dims[i] = 0;
    *out = t;
    return FEDC_OK;
}
