/* Derivative rules: for each op, its vector-Jacobian product written with IR ops,
 * so that derivatives are programs and can be differentiated again. Each rule reads
 * the node's operands and result (X(i), Y) in the new program and accumulates the
 * cotangent of every active operand. The table at the bottom comes from ops.def. */
#include <string.h>

#include "ad/vjp_rule.h"
#include "ad/composite.h"

typedef fedc__rule rule;

typedef fedc_status (*vjp_fn)(const rule *r);

static fedc_value zero(const rule *r) { return fedc_scalar_like(r->g, r->ct, 0.0); }
static fedc_value scalar(const rule *r, double s) { return fedc_scalar_like(r->g, r->ct, s); }

/* Sums `c` (the broadcast shape) down to `target`'s shape: the transpose of numpy
 * broadcasting. */
static fedc_value unbroadcast(fedc_program *g, fedc_value c, const fedc_type *target) {
    fedc_type ct = fedc_value_type(g, c);
    if (c == FEDC_NONE || fedc_type_same_shape(&ct, target)) return c;
    int axes[FEDC_MAX_RANK], naxes = 0, lead = ct.rank - target->rank;
    for (int i = 0; i < ct.rank; i++)
        if (i < lead || (target->dims[i - lead] == 1 && ct.dims[i] != 1)) axes[naxes++] = i;
    fedc_value s = fedc_reduce_sum(g, c, axes, naxes, false);
    return fedc_reshape(g, s, target->rank, target->dims);
}

static void give_unbroadcast(const rule *r, int i, fedc_value c) { give(r, i, unbroadcast(r->g, c, xtype(r, i))); }

/* Emits op `op` with the src node's own attributes: for rules whose derivative is
 * the same family of op with the same window, strides and pads. */
static fedc_value same_attrs(const rule *r, fedc__op op, fedc_value a, fedc_value b, int nin, const fedc_type *shape_of) {
    fedc__attr attrs[FEDC__MAX_ATTRS];
    int nattr = 0;
    for (int i = 0; i < r->n->nattr; i++)
        if (r->n->attr[i].key != FEDC_ATTR_SHAPE) attrs[nattr++] = r->n->attr[i];
    if (shape_of) attrs[nattr++] = fedc__attr_make_ints(FEDC_ATTR_SHAPE, shape_of->rank, shape_of->dims);
    fedc_value in[2] = {a, b};
    return fedc__emit(r->g, op, in, nin, attrs, nattr, NULL);
}

static fedc_status none(const rule *r) { return fedc__vjp_none(r); }
static fedc_status vjp_INPUT(const rule *r) { return none(r); }
static fedc_status vjp_CONSTANT(const rule *r) { return none(r); }
static fedc_status vjp_IOTA(const rule *r) { return none(r); }
static fedc_status vjp_EQ(const rule *r) { return none(r); }
static fedc_status vjp_NE(const rule *r) { return none(r); }
static fedc_status vjp_LT(const rule *r) { return none(r); }
static fedc_status vjp_LE(const rule *r) { return none(r); }
static fedc_status vjp_GT(const rule *r) { return none(r); }
static fedc_status vjp_GE(const rule *r) { return none(r); }
static fedc_status vjp_ARGMAX(const rule *r) { return none(r); }
static fedc_status vjp_ONE_HOT(const rule *r) { return none(r); }

/* ---------------------------------------------------------- elementwise -- */

static fedc_status vjp_ADD(const rule *r) {
    if (needs(r, 0)) give_unbroadcast(r, 0, r->ct);
    if (needs(r, 1)) give_unbroadcast(r, 1, r->ct);
    return FEDC_OK;
}

static fedc_status vjp_SUB(const rule *r) {
    if (needs(r, 0)) give_unbroadcast(r, 0, r->ct);
    if (needs(r, 1)) give_unbroadcast(r, 1, fedc_neg(r->g, r->ct));
    return FEDC_OK;
}

static fedc_status vjp_MUL(const rule *r) {
    if (needs(r, 0)) give_unbroadcast(r, 0, fedc_mul(r->g, r->ct, X(r, 1)));
    if (needs(r, 1)) give_unbroadcast(r, 1, fedc_mul(r->g, r->ct, X(r, 0)));
    return FEDC_OK;
}

static fedc_status vjp_DIV(const rule *r) {
    fedc_program *g = r->g;
    if (needs(r, 0)) give_unbroadcast(r, 0, fedc_div(g, r->ct, X(r, 1)));
    if (needs(r, 1)) give_unbroadcast(r, 1, fedc_neg(g, fedc_div(g, fedc_mul(g, r->ct, Y(r)), X(r, 1))));
    return FEDC_OK;
}

/* maximum/minimum: the cotangent goes to the operand that won (to a on ties). */
static fedc_status min_max(const rule *r, fedc_value a_wins) {
    if (needs(r, 0)) give_unbroadcast(r, 0, fedc_select(r->g, a_wins, r->ct, zero(r)));
    if (needs(r, 1)) give_unbroadcast(r, 1, fedc_select(r->g, a_wins, zero(r), r->ct));
    return FEDC_OK;
}
static fedc_status vjp_MAXIMUM(const rule *r) { return min_max(r, fedc_ge(r->g, X(r, 0), X(r, 1))); }
static fedc_status vjp_MINIMUM(const rule *r) { return min_max(r, fedc_le(r->g, X(r, 0), X(r, 1))); }

static fedc_status vjp_NEG(const rule *r) { give(r, 0, fedc_neg(r->g, r->ct)); return FEDC_OK; }
static fedc_status vjp_EXP(const rule *r) { give(r, 0, fedc_mul(r->g, r->ct, Y(r))); return FEDC_OK; }
static fedc_status vjp_LOG(const rule *r) { give(r, 0, fedc_div(r->g, r->ct, X(r, 0))); return FEDC_OK; }

static fedc_status vjp_TANH(const rule *r) { /* ct * (1 - y^2) */
    fedc_program *g = r->g;
    fedc_value one = scalar(r, 1);
    give(r, 0, fedc_mul(g, r->ct, fedc_sub(g, one, fedc_square(g, Y(r)))));
    return FEDC_OK;
}

static fedc_status vjp_SIGMOID(const rule *r) { /* ct * y * (1 - y) */
    fedc_program *g = r->g;
    give(r, 0, fedc_mul(g, r->ct, fedc_mul(g, Y(r), fedc_sub(g, scalar(r, 1), Y(r)))));
    return FEDC_OK;
}

/* ct where y > 0, which is where x > 0 (also for NaN and -0). Reading y rather
 * than x leaves x to its other readers only: a conv -> add(bias) -> relu chain
 * then fuses in training too, and its sum needs no memory of its own. */
static fedc_status vjp_RELU(const rule *r) {
    fedc_value positive = fedc_gt(r->g, Y(r), zero(r));
    give(r, 0, fedc_select(r->g, positive, r->ct, zero(r)));
    return FEDC_OK;
}

static fedc_status vjp_SQRT(const rule *r) { /* ct / (2 y) */
    give(r, 0, fedc_div(r->g, fedc_mul(r->g, r->ct, scalar(r, 0.5)), Y(r)));
    return FEDC_OK;
}

static fedc_status vjp_SQUARE(const rule *r) {
    give(r, 0, fedc_mul(r->g, r->ct, fedc_mul(r->g, X(r, 0), scalar(r, 2))));
    return FEDC_OK;
}

static fedc_status vjp_POW(const rule *r) { /* ct * p * x^(p-1) */
    double p = fedc__attr_float(r->n, FEDC_ATTR_EXPONENT, 1);
    fedc_program *g = r->g;
    fedc_value d = scalar(r, p);
    if (p != 1) d = fedc_mul(g, d, fedc_pow(g, X(r, 0), p - 1));
    give(r, 0, fedc_mul(g, r->ct, d));
    return FEDC_OK;
}

static fedc_status vjp_SELECT(const rule *r) {
    if (needs(r, 1)) give_unbroadcast(r, 1, fedc_select(r->g, X(r, 0), r->ct, zero(r)));
    if (needs(r, 2)) give_unbroadcast(r, 2, fedc_select(r->g, X(r, 0), zero(r), r->ct));
    return FEDC_OK;
}

/* ----------------------------------------------------------- reductions -- */

/* The cotangent of a reduction reshaped to keepdims form, so it broadcasts back. */
static fedc_value keepdims_ct(const rule *r) {
    const fedc_type *x = xtype(r, 0);
    int count;
    const int64_t *axes = fedc__attr_ints(r->n, FEDC_ATTR_AXES, &count);
    int64_t dims[FEDC_MAX_RANK];
    for (int i = 0; i < x->rank; i++) dims[i] = x->dims[i];
    for (int i = 0; i < count; i++) dims[fedc__axis(axes[i], x->rank)] = 1;
    return fedc_reshape(r->g, r->ct, x->rank, dims);
}

static fedc_value spread(const rule *r, fedc_value keep) {
    const fedc_type *x = xtype(r, 0);
    return fedc_broadcast_to(r->g, keep, x->rank, x->dims);
}

static fedc_status vjp_REDUCE_SUM(const rule *r) { give(r, 0, spread(r, keepdims_ct(r))); return FEDC_OK; }

static fedc_status vjp_REDUCE_MEAN(const rule *r) {
    int64_t reduced = fedc_type_count(xtype(r, 0)) / (fedc_type_count(&r->n->type) ? fedc_type_count(&r->n->type) : 1);
    fedc_value keep = keepdims_ct(r);
    give(r, 0, spread(r, fedc_div(r->g, keep, scalar(r, (double)reduced))));
    return FEDC_OK;
}

/* The cotangent is shared equally by the elements that attain the maximum. */
static fedc_status vjp_REDUCE_MAX(const rule *r) {
    fedc_program *g = r->g;
    const fedc_type *x = xtype(r, 0);
    int count;
    const int64_t *ax = fedc__attr_ints(r->n, FEDC_ATTR_AXES, &count);
    int axes[FEDC_MAX_RANK];
    for (int i = 0; i < count; i++) axes[i] = (int)ax[i];
    fedc_value y_keep = fedc_reduce_max(g, X(r, 0), axes, count, true);
    fedc_value hit = fedc_cast(g, fedc_eq(g, X(r, 0), y_keep), x->dtype);
    fedc_value share = fedc_div(g, hit, fedc_reduce_sum(g, hit, axes, count, true));
    give(r, 0, fedc_mul(g, spread(r, keepdims_ct(r)), share));
    return FEDC_OK;
}

/* --------------------------------------------------------------- shapes -- */

static fedc_status vjp_RESHAPE(const rule *r) {
    give(r, 0, fedc_reshape(r->g, r->ct, xtype(r, 0)->rank, xtype(r, 0)->dims));
    return FEDC_OK;
}

static fedc_status vjp_BROADCAST_TO(const rule *r) { give_unbroadcast(r, 0, r->ct); return FEDC_OK; }

static fedc_status vjp_TRANSPOSE(const rule *r) {
    int count, inverse[FEDC_MAX_RANK];
    const int64_t *perm = fedc__attr_ints(r->n, FEDC_ATTR_PERM, &count);
    for (int i = 0; i < count; i++) inverse[perm[i]] = i;
    give(r, 0, fedc_transpose(r->g, r->ct, inverse));
    return FEDC_OK;
}

static fedc_status vjp_SLICE(const rule *r) {
    const fedc_type *x = xtype(r, 0);
    int count;
    const int64_t *start = fedc__attr_ints(r->n, FEDC_ATTR_START, &count);
    int64_t hi[FEDC_MAX_RANK];
    for (int i = 0; i < x->rank; i++) hi[i] = x->dims[i] - start[i] - r->n->type.dims[i];
    give(r, 0, fedc_pad(r->g, r->ct, start, hi));
    return FEDC_OK;
}

static fedc_status vjp_PAD(const rule *r) {
    const fedc_type *x = xtype(r, 0);
    int count;
    const int64_t *lo = fedc__attr_ints(r->n, FEDC_ATTR_LO, &count);
    int64_t limit[FEDC_MAX_RANK];
    for (int i = 0; i < x->rank; i++) limit[i] = lo[i] + x->dims[i];
    give(r, 0, fedc_slice(r->g, r->ct, lo, limit));
    return FEDC_OK;
}

static fedc_status vjp_CONCAT(const rule *r) {
    const fedc_type *y = &r->n->type;
    int axis = fedc__axis(fedc__attr_int(r->n, FEDC_ATTR_AXIS, 0), y->rank);
    int64_t start[FEDC_MAX_RANK] = {0}, limit[FEDC_MAX_RANK];
    for (int i = 0; i < y->rank; i++) limit[i] = y->dims[i];
    for (int i = 0; i < r->n->nin; i++) {
        limit[axis] = start[axis] + xtype(r, i)->dims[axis];
        if (needs(r, i)) give(r, i, fedc_slice(r->g, r->ct, start, limit));
        start[axis] = limit[axis];
    }
    return FEDC_OK;
}

/* ------------------------------------------------- algebra and indexing -- */

/* C = op(A) op(B): dop(A) = dC op(B)^T and dop(B) = op(A)^T dC, expressed with the
 * transpose flags so no transpose is materialised. A rank-2 operand shared across
 * batches gets the sum over the batch (unbroadcast). */
/* x [..., m, k] @ w [k, n]: a dense layer on a batch of sequences. */
static bool shared_weight(const rule *r, bool ta) { return !ta && xtype(r, 0)->rank > 2 && xtype(r, 1)->rank == 2; }

/* The weight's gradient as one GEMM over all the rows, x^T ct with x [rows, k]
 * and ct [rows, n] (transposed for a transposed weight), rather than one product
 * per batch element summed after: the same sum, one pass, no [batch, k, n] value. */
static fedc_value weight_grad(const rule *r) {
    fedc_program *g = r->g;
    const fedc_type *at = xtype(r, 0);
    int64_t rows = fedc_type_count(at) / at->dims[at->rank - 1];
    fedc_type ct = fedc_value_type(g, r->ct);
    fedc_value a2 = fedc_reshape(g, X(r, 0), 2, (int64_t[]){rows, at->dims[at->rank - 1]});
    fedc_value c2 = fedc_reshape(g, r->ct, 2, (int64_t[]){rows, ct.dims[ct.rank - 1]});
    bool tb = fedc__attr_int(r->n, FEDC_ATTR_TRANSPOSE_B, 0);
    return tb ? fedc_matmul(g, c2, a2, true, false) : fedc_matmul(g, a2, c2, true, false);
}

static fedc_status vjp_MATMUL(const rule *r) {
    fedc_program *g = r->g;
    bool ta = fedc__attr_int(r->n, FEDC_ATTR_TRANSPOSE_A, 0), tb = fedc__attr_int(r->n, FEDC_ATTR_TRANSPOSE_B, 0);
    fedc_value a = X(r, 0), b = X(r, 1), c = r->ct;
    if (needs(r, 0)) {
        fedc_value da = ta ? fedc_matmul(g, b, c, tb, true) : fedc_matmul(g, c, b, false, !tb);
        give_unbroadcast(r, 0, da);
    }
    if (needs(r, 1) && shared_weight(r, ta)) {
        give(r, 1, weight_grad(r));
    } else if (needs(r, 1)) {
        fedc_value db = tb ? fedc_matmul(g, c, a, true, ta) : fedc_matmul(g, a, c, !ta, false);
        give_unbroadcast(r, 1, db);
    }
    return FEDC_OK;
}

static fedc_status vjp_GATHER(const rule *r) {
    give(r, 0, fedc_scatter_add(r->g, r->ct, X(r, 1), xtype(r, 0)->dims[0]));
    return FEDC_OK;
}

static fedc_status vjp_SCATTER_ADD(const rule *r) {
    give(r, 0, fedc_gather(r->g, r->ct, X(r, 1)));
    return FEDC_OK;
}

/* ---------------------------------------------------- convolution, pools -- */

/* The three conv ops are bilinear and each is the adjoint of the others in one
 * argument, so their derivatives close over {conv2d, input_grad, filter_grad}. */
static fedc_status vjp_CONV2D(const rule *r) {
    const fedc_type *w = xtype(r, 1);
    if (needs(r, 0)) give(r, 0, same_attrs(r, FEDC_OP_CONV2D_INPUT_GRAD, r->ct, X(r, 1), 2, xtype(r, 0)));
    if (needs(r, 1)) {
        fedc__attr attrs[3] = {*fedc__attr_find(r->n, FEDC_ATTR_STRIDES), *fedc__attr_find(r->n, FEDC_ATTR_PADS),
                               fedc__attr_make_ints(FEDC_ATTR_WINDOW, 2, w->dims)};
        fedc_value in[2] = {X(r, 0), r->ct};
        give(r, 1, fedc__emit(r->g, FEDC_OP_CONV2D_FILTER_GRAD, in, 2, attrs, 3, NULL));
    }
    return FEDC_OK;
}

static fedc_status vjp_CONV2D_INPUT_GRAD(const rule *r) { /* dx = input_grad(dy, w) */
    const fedc_type *w = xtype(r, 1);
    if (needs(r, 0)) give(r, 0, same_attrs(r, FEDC_OP_CONV2D, r->ct, X(r, 1), 2, NULL));
    if (needs(r, 1)) {
        fedc__attr attrs[3] = {*fedc__attr_find(r->n, FEDC_ATTR_STRIDES), *fedc__attr_find(r->n, FEDC_ATTR_PADS),
                               fedc__attr_make_ints(FEDC_ATTR_WINDOW, 2, w->dims)};
        fedc_value in[2] = {r->ct, X(r, 0)};
        give(r, 1, fedc__emit(r->g, FEDC_OP_CONV2D_FILTER_GRAD, in, 2, attrs, 3, NULL));
    }
    return FEDC_OK;
}

static fedc_status vjp_CONV2D_FILTER_GRAD(const rule *r) { /* dw = filter_grad(x, dy) */
    if (needs(r, 0)) {
        fedc__attr attrs[3] = {*fedc__attr_find(r->n, FEDC_ATTR_STRIDES), *fedc__attr_find(r->n, FEDC_ATTR_PADS),
                               fedc__attr_make_ints(FEDC_ATTR_SHAPE, 4, xtype(r, 0)->dims)};
        fedc_value in[2] = {X(r, 1), r->ct};
        give(r, 0, fedc__emit(r->g, FEDC_OP_CONV2D_INPUT_GRAD, in, 2, attrs, 3, NULL));
    }
    if (needs(r, 1)) {
        fedc__attr attrs[2] = {*fedc__attr_find(r->n, FEDC_ATTR_STRIDES), *fedc__attr_find(r->n, FEDC_ATTR_PADS)};
        fedc_value in[2] = {X(r, 0), r->ct};
        give(r, 1, fedc__emit(r->g, FEDC_OP_CONV2D, in, 2, attrs, 2, NULL));
    }
    return FEDC_OK;
}

static fedc_status vjp_MAX_POOL2D(const rule *r) {
    give(r, 0, same_attrs(r, FEDC_OP_MAX_POOL2D_GRAD, X(r, 0), r->ct, 2, NULL));
    return FEDC_OK;
}

static fedc_status vjp_MAX_POOL2D_GRAD(const rule *r) {
    (void)r;
    return fedc_error(FEDC_EUNSUPPORTED, "grad: max_pool2d_grad has no derivative rule yet "
                      "(second derivatives through max pooling are not supported)");
}

static fedc_status vjp_AVG_POOL2D(const rule *r) {
    give(r, 0, same_attrs(r, FEDC_OP_AVG_POOL2D_GRAD, r->ct, FEDC_NONE, 1, xtype(r, 0)));
    return FEDC_OK;
}

static fedc_status vjp_AVG_POOL2D_GRAD(const rule *r) { /* linear; its adjoint is the pool itself */
    give(r, 0, same_attrs(r, FEDC_OP_AVG_POOL2D, r->ct, FEDC_NONE, 1, NULL));
    return FEDC_OK;
}

/* ------------------------------------------------------- losses and misc -- */

static fedc_status vjp_LOG_SOFTMAX(const rule *r) { /* ct - softmax * sum(ct) */
    fedc_program *g = r->g;
    int last = -1;
    fedc_value total = fedc_reduce_sum(g, r->ct, &last, 1, true);
    give(r, 0, fedc_sub(g, r->ct, fedc_mul(g, fedc_exp(g, Y(r)), total)));
    return FEDC_OK;
}

/* loss = w * (logsumexp(z) - z[label]): dz = (softmax(z) - onehot) * w * ct,
 * dw = ct * unweighted loss. */
static fedc_status vjp_SOFTMAX_XENT(const rule *r) {
    fedc_program *g = r->g;
    const fedc_type *z = xtype(r, 0);
    bool weighted = r->n->nin == 3;
    fedc_value scale = weighted ? fedc_mul(g, r->ct, X(r, 2)) : r->ct;
    (void)z;
    if (needs(r, 0)) give(r, 0, fedc_softmax_cross_entropy_grad(g, X(r, 0), X(r, 1), scale));
    if (weighted && needs(r, 2))
        give(r, 2, fedc_mul(g, r->ct, fedc_softmax_cross_entropy(g, X(r, 0), X(r, 1), FEDC_NONE)));
    return FEDC_OK;
}

/* dz = s (p - onehot) with p = softmax(z). Linear in s: ct_s = sum_c ct (p -
 * onehot). Through p: dp = p (dz - <p, dz>), so ct_z = p (u - <p, u>) with
 * u = s ct. */
static fedc_status vjp_SOFTMAX_XENT_GRAD(const rule *r) {
    fedc_program *g = r->g;
    const fedc_type *z = xtype(r, 0);
    int last = -1;
    int64_t dims[FEDC_MAX_RANK];
    memcpy(dims, z->dims, sizeof dims);
    dims[z->rank - 1] = 1;
    if (needs(r, 2)) {
        fedc_value ones = fedc_full(g, *xtype(r, 2), 1.0);
        fedc_value diff = fedc_softmax_cross_entropy_grad(g, X(r, 0), X(r, 1), ones);
        give(r, 2, fedc_reduce_sum(g, fedc_mul(g, r->ct, diff), &last, 1, false));
    }
    if (needs(r, 0)) {
        fedc_value p = fedc_exp(g, fedc_log_softmax(g, X(r, 0)));
        fedc_value u = fedc_mul(g, r->ct, fedc_reshape(g, X(r, 2), z->rank, dims));
        fedc_value pu = fedc_reduce_sum(g, fedc_mul(g, p, u), &last, 1, true);
        give(r, 0, fedc_mul(g, p, fedc_sub(g, u, pu)));
    }
    return FEDC_OK;
}

/* The mask is a pure function of (key, position), so the same dropout applied to
 * the cotangent is the derivative. */
static fedc_status vjp_DROPOUT(const rule *r) {
    give(r, 0, fedc_dropout(r->g, r->ct, X(r, 1), fedc__attr_float(r->n, FEDC_ATTR_RATE, 0)));
    return FEDC_OK;
}

/* A source: its values do not depend on the key's. */
static fedc_status vjp_RANDOM_NORMAL(const rule *r) { return none(r); }
static fedc_status vjp_RANDOM_UNIFORM(const rule *r) { return none(r); }

static fedc_status vjp_CAST(const rule *r) {
    if (fedc_dtype_is_float(xtype(r, 0)->dtype)) give(r, 0, fedc_cast(r->g, r->ct, xtype(r, 0)->dtype));
    return FEDC_OK;
}

/* ------------------------------------------------------------ federated -- */

/* broadcast, sum, mean, weighted_mean, num_clients, map and fold: vjp_federated.c. */
static fedc_status vjp_BROADCAST(const rule *r) { return fedc__vjp_BROADCAST(r); }
static fedc_status vjp_SUM(const rule *r) { return fedc__vjp_SUM(r); }
static fedc_status vjp_MEAN(const rule *r) { return fedc__vjp_MEAN(r); }
static fedc_status vjp_WEIGHTED_MEAN(const rule *r) { return fedc__vjp_WEIGHTED_MEAN(r); }
static fedc_status vjp_NUM_CLIENTS(const rule *r) { return fedc__vjp_NUM_CLIENTS(r); }
static fedc_status vjp_RESULT(const rule *r) { return fedc__vjp_RESULT(r); }
static fedc_status vjp_MAP(const rule *r) { return fedc__vjp_MAP(r); }
static fedc_status vjp_FOLD(const rule *r) { return fedc__vjp_FOLD(r); }
static fedc_status vjp_ROBUST_AGGREGATE(const rule *r) {
    (void)r; /* a selection and a sort: no derivative a round would use */
    return fedc_error(FEDC_EUNSUPPORTED, "grad: robust_aggregate has no derivative rule");
}

/* The hierarchy's primitives: vjp_hierarchy.c; the level sizes are sources. */
static fedc_status vjp_BROADCAST_DOWN(const rule *r) { return fedc__vjp_BROADCAST_DOWN(r); }
static fedc_status vjp_SUM_UP(const rule *r) { return fedc__vjp_SUM_UP(r); }
static fedc_status vjp_MEAN_UP(const rule *r) { return fedc__vjp_MEAN_UP(r); }
static fedc_status vjp_WEIGHTED_MEAN_UP(const rule *r) { return fedc__vjp_WEIGHTED_MEAN_UP(r); }
static fedc_status vjp_NUM_GROUPS(const rule *r) { return none(r); }
static fedc_status vjp_GROUP_SIZE(const rule *r) { return none(r); }

/* --------------------------------------------------- transformer layers -- */

/* The fused ops' derivatives are the fused backward ops. The backward ops' own
 * derivatives (second order, and forward mode, which transposes the vjp) use a
 * closed form where it is short and the composite form (ir/decompose.c)
 * elsewhere. */
static fedc_status vjp_GELU(const rule *r) { give(r, 0, fedc_gelu_grad(r->g, X(r, 0), r->ct)); return FEDC_OK; }

static fedc_status vjp_GELU_GRAD(const rule *r) { /* dx = dy * gelu'(x): linear in dy */
    if (needs(r, 1)) give(r, 1, fedc_gelu_grad(r->g, X(r, 0), r->ct));
    return fedc__composite_vjp(r->ad, r->v, r->ct, 1u);
}

static fedc_value ones_like_vector(const rule *r, int i) { return fedc_full(r->g, *xtype(r, i), 1.0); }

static fedc_status vjp_LAYER_NORM(const rule *r) {
    fedc_program *g = r->g;
    double eps = fedc__attr_float(r->n, FEDC_ATTR_EPS, 0);
    if (needs(r, 0)) give(r, 0, fedc_layer_norm_grad(g, X(r, 0), X(r, 1), r->ct, eps));
    if (needs(r, 1) || needs(r, 2)) {
        int64_t c = xtype(r, 1)->dims[0];
        fedc_value pg = fedc_layer_norm_param_grad(g, X(r, 0), r->ct, eps);
        for (int i = 1; i <= 2; i++)
            if (needs(r, i))
                give(r, i, fedc_reshape(g, fedc_slice(g, pg, (int64_t[]){i - 1, 0}, (int64_t[]){i, c}), 1, &c));
    }
    return FEDC_OK;
}

/* dx = A (gamma dy) with A = layer_norm_grad(x, 1, .) symmetric, so the
 * cotangent of dy is gamma A ct; x and gamma go through the composite form. */
static fedc_status vjp_LAYER_NORM_GRAD(const rule *r) {
    double eps = fedc__attr_float(r->n, FEDC_ATTR_EPS, 0);
    if (needs(r, 2))
        give(r, 2, fedc_mul(r->g, X(r, 1), fedc_layer_norm_grad(r->g, X(r, 0), ones_like_vector(r, 1), r->ct, eps)));
    return fedc__composite_vjp(r->ad, r->v, r->ct, 3u);
}

/* [dgamma; dbeta] = [sum dy xhat; sum dy]: the cotangent of dy is xhat ct0 + ct1. */
static fedc_status vjp_LAYER_NORM_PARAM_GRAD(const rule *r) {
    fedc_program *g = r->g;
    if (needs(r, 1)) {
        double eps = fedc__attr_float(r->n, FEDC_ATTR_EPS, 0);
        int64_t c = r->n->type.dims[1];
        fedc_type vt = fedc_type_make(xtype(r, 0)->dtype, 1, &c);
        fedc_value ones = fedc_full(g, vt, 1.0), zeros = fedc_full(g, vt, 0.0);
        fedc_value xhat = fedc_layer_norm(g, X(r, 0), ones, zeros, eps);
        fedc_value c0 = fedc_reshape(g, fedc_slice(g, r->ct, (int64_t[]){0, 0}, (int64_t[]){1, c}), 1, &c);
        fedc_value c1 = fedc_reshape(g, fedc_slice(g, r->ct, (int64_t[]){1, 0}, (int64_t[]){2, c}), 1, &c);
        give(r, 1, fedc_add(g, fedc_mul(g, xhat, c0), c1));
    }
    return fedc__composite_vjp(r->ad, r->v, r->ct, 1u);
}

static fedc_status vjp_CAUSAL_ATTENTION(const rule *r) {
    give(r, 0, fedc_causal_attention_grad(r->g, X(r, 0), r->ct, (int)fedc__attr_int(r->n, FEDC_ATTR_HEADS, 1)));
    return FEDC_OK;
}

static fedc_status vjp_CAUSAL_ATTENTION_GRAD(const rule *r) { return fedc__composite_vjp(r->ad, r->v, r->ct, 3u); }

/* ------------------------------------------------------------ recurrent -- */

/* trace = lstm(xw, wh): the preactivations' cotangent is BPTT's result, and wh's
 * is one GEMM over every step, sum_t h[t-1]^T @ dxw[t], with h[-1] = 0. */
static fedc_status vjp_LSTM(const rule *r) {
    fedc_program *g = r->g;
    const fedc_type *xw = xtype(r, 0);
    int64_t T = xw->dims[0], B = xw->dims[1], H = xw->dims[2] / 4;
    fedc_value dxw = fedc_lstm_grad(g, Y(r), r->ct, X(r, 1));
    if (needs(r, 0)) give(r, 0, dxw);
    if (!needs(r, 1)) return FEDC_OK;
    if (T == 0) {
        give(r, 1, fedc_full(g, *xtype(r, 1), 0.0));
        return FEDC_OK;
    }
    fedc_value h = fedc_slice(g, Y(r), (int64_t[]){0, 0, 0}, (int64_t[]){T - 1, B, H});
    fedc_value h_prev = fedc_pad(g, h, (int64_t[]){1, 0, 0}, (int64_t[]){0, 0, 0});
    fedc_value a = fedc_reshape(g, h_prev, 2, (int64_t[]){T * B, H});
    fedc_value d = fedc_reshape(g, dxw, 2, (int64_t[]){T * B, 4 * H});
    give(r, 1, fedc_matmul(g, a, d, true, false));
    return FEDC_OK;
}

/* lstm_grad and lstm_tangent are linear in operand 1 and each other's transpose
 * there (that is what makes jvp through lstm work); their derivatives in the trace
 * and the weights (second derivatives of lstm) are not written yet. */
static fedc_status lstm_second_order(const rule *r) {
    return fedc_error(FEDC_EUNSUPPORTED, "grad: %s has no derivative rule in the trace or the weights yet "
                      "(second derivatives through lstm are not supported)", fedc__ops[r->n->op].name);
}

static fedc_status vjp_LSTM_GRAD(const rule *r) {
    if (needs(r, 0) || needs(r, 2)) return lstm_second_order(r);
    give(r, 1, fedc_lstm_tangent(r->g, X(r, 0), r->ct, X(r, 2)));
    return FEDC_OK;
}

static fedc_status vjp_LSTM_TANGENT(const rule *r) {
    if (needs(r, 0) || needs(r, 2)) return lstm_second_order(r);
    give(r, 1, fedc_lstm_grad(r->g, X(r, 0), r->ct, X(r, 2)));
    return FEDC_OK;
}

/* ------------------------------------------------------------- dispatch -- */

static const vjp_fn rules[FEDC_OP_COUNT] = {
#define FEDC_OP(id, name, min_in, max_in) [FEDC_OP_##id] = vjp_##id,
#include "ir/ops.def"
#undef FEDC_OP
};

fedc_status fedc__vjp_rule(fedc__ad *ad, fedc_value v, fedc_value ct) {
    rule r = {ad, ad->g, &ad->src->nodes[v], v, ct};
    return rules[r.n->op](&r);
}
