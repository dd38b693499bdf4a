/* Kernel dispatch: for each op, how a node's attributes and operand types become
 * a call of one kernel. The table at the bottom is generated from ops.def, so an op
 * without a run_ function does not compile. */
#include <string.h>

#include "exec/exec.h"

typedef fedc_status (*run_fn)(const fedc__step *s);

fedc__kshape fedc__kshape_of(const fedc_type *t) {
    fedc__kshape s;
    s.rank = t->rank;
    for (int i = 0; i < FEDC_MAX_RANK; i++) s.dims[i] = i < t->rank ? t->dims[i] : 0;
    return s;
}

static const fedc_type *in_type(const fedc__step *s, int i) { return &s->p->nodes[s->n->in[i]].type; }
static fedc__kshape in_shape(const fedc__step *s, int i) { return fedc__kshape_of(in_type(s, i)); }
static fedc__kshape out_shape(const fedc__step *s) { return fedc__kshape_of(&s->n->type); }
static int64_t out_count(const fedc__step *s) { return fedc_type_count(&s->n->type); }
static size_t out_elsize(const fedc__step *s) { return fedc_dtype_size(s->n->type.dtype); }

/* -------------------------------------------------------------- sources -- */

static fedc_status run_INPUT(const fedc__step *s) { (void)s; return FEDC_OK; }    /* bound, not computed */
static fedc_status run_CONSTANT(const fedc__step *s) { (void)s; return FEDC_OK; } /* points at its data */

static fedc_status run_IOTA(const fedc__step *s) {
    fedc__kshape ys = out_shape(s);
    int axis = fedc__axis(fedc__attr_int(s->n, FEDC_ATTR_AXIS, 0), ys.rank);
    return s->k->iota(s->n->type.dtype, &ys, axis, s->out);
}

/* ---------------------------------------------------------- elementwise -- */

static fedc_status binary(const fedc__step *s, fedc__binary_op op) {
    fedc__kshape as = in_shape(s, 0), bs = in_shape(s, 1), os = out_shape(s);
    return s->k->binary(op, in_type(s, 0)->dtype, &as, s->in[0], &bs, s->in[1], &os, s->out);
}

static fedc_status unary(const fedc__step *s, fedc__unary_op op) {
    double param = fedc__attr_float(s->n, FEDC_ATTR_EXPONENT, 0);
    return s->k->unary(op, s->n->type.dtype, out_count(s), s->in[0], s->out, param);
}

static fedc_status run_ADD(const fedc__step *s) { return binary(s, FEDC_B_ADD); }
static fedc_status run_SUB(const fedc__step *s) { return binary(s, FEDC_B_SUB); }
static fedc_status run_MUL(const fedc__step *s) { return binary(s, FEDC_B_MUL); }
static fedc_status run_DIV(const fedc__step *s) { return binary(s, FEDC_B_DIV); }
static fedc_status run_MAXIMUM(const fedc__step *s) { return binary(s, FEDC_B_MAX); }
static fedc_status run_MINIMUM(const fedc__step *s) { return binary(s, FEDC_B_MIN); }
static fedc_status run_EQ(const fedc__step *s) { return binary(s, FEDC_B_EQ); }
static fedc_status run_NE(const fedc__step *s) { return binary(s, FEDC_B_NE); }
static fedc_status run_LT(const fedc__step *s) { return binary(s, FEDC_B_LT); }
static fedc_status run_LE(const fedc__step *s) { return binary(s, FEDC_B_LE); }
static fedc_status run_GT(const fedc__step *s) { return binary(s, FEDC_B_GT); }
static fedc_status run_GE(const fedc__step *s) { return binary(s, FEDC_B_GE); }
static fedc_status run_NEG(const fedc__step *s) { return unary(s, FEDC_U_NEG); }
static fedc_status run_EXP(const fedc__step *s) { return unary(s, FEDC_U_EXP); }
static fedc_status run_LOG(const fedc__step *s) { return unary(s, FEDC_U_LOG); }
static fedc_status run_TANH(const fedc__step *s) { return unary(s, FEDC_U_TANH); }
static fedc_status run_SIGMOID(const fedc__step *s) { return unary(s, FEDC_U_SIGMOID); }
static fedc_status run_RELU(const fedc__step *s) { return unary(s, FEDC_U_RELU); }
static fedc_status run_SQRT(const fedc__step *s) { return unary(s, FEDC_U_SQRT); }
static fedc_status run_SQUARE(const fedc__step *s) { return unary(s, FEDC_U_SQUARE); }
static fedc_status run_POW(const fedc__step *s) { return unary(s, FEDC_U_POW); }

static fedc_status run_SELECT(const fedc__step *s) {
    fedc__kshape cs = in_shape(s, 0), as = in_shape(s, 1), bs = in_shape(s, 2), os = out_shape(s);
    return s->k->select(s->n->type.dtype, &cs, s->in[0], &as, s->in[1], &bs, s->in[2], &os, s->out);
}

/* ----------------------------------------------------------- reductions -- */

static fedc_status reduce(const fedc__step *s, fedc_reduce_op op) {
    fedc__kshape xs = in_shape(s, 0);
    int count;
    const int64_t *axes = fedc__attr_ints(s->n, FEDC_ATTR_AXES, &count);
    unsigned mask = 0;
    for (int i = 0; i < count; i++) mask |= 1u << fedc__axis(axes[i], xs.rank);
    return s->k->reduce(op, s->n->type.dtype, &xs, mask, s->in[0], s->out);
}

static fedc_status run_REDUCE_SUM(const fedc__step *s) { return reduce(s, FEDC_R_SUM); }
static fedc_status run_REDUCE_MEAN(const fedc__step *s) { return reduce(s, FEDC_R_MEAN); }
static fedc_status run_REDUCE_MAX(const fedc__step *s) { return reduce(s, FEDC_R_MAX); }

static fedc_status run_ARGMAX(const fedc__step *s) {
    const fedc_type *x = in_type(s, 0);
    int axis = fedc__axis(fedc__attr_int(s->n, FEDC_ATTR_AXIS, -1), x->rank);
    int64_t outer = 1, inner = 1;
    for (int i = 0; i < axis; i++) outer *= x->dims[i];
    for (int i = axis + 1; i < x->rank; i++) inner *= x->dims[i];
    return s->k->argmax(x->dtype, outer, x->dims[axis], inner, s->in[0], s->out);
}

/* --------------------------------------------------------------- shapes -- */

static fedc_status run_RESHAPE(const fedc__step *s) {
    memcpy(s->out, s->in[0], fedc_type_bytes(&s->n->type));
    return FEDC_OK;
}

static fedc_status run_BROADCAST_TO(const fedc__step *s) {
    fedc__kshape xs = in_shape(s, 0), ys = out_shape(s);
    return s->k->broadcast_to(out_elsize(s), &xs, s->in[0], &ys, s->out);
}

static fedc_status run_TRANSPOSE(const fedc__step *s) {
    fedc__kshape xs = in_shape(s, 0);
    int count, perm[FEDC_MAX_RANK];
    const int64_t *p = fedc__attr_ints(s->n, FEDC_ATTR_PERM, &count);
    for (int i = 0; i < count; i++) perm[i] = (int)p[i];
    return s->k->transpose(out_elsize(s), &xs, perm, s->in[0], s->out);
}

static fedc_status run_SLICE(const fedc__step *s) {
    fedc__kshape xs = in_shape(s, 0), ys = out_shape(s);
    int count;
    const int64_t *start = fedc__attr_ints(s->n, FEDC_ATTR_START, &count);
    return s->k->slice(out_elsize(s), &xs, start, s->in[0], &ys, s->out);
}

static fedc_status run_CONCAT(const fedc__step *s) {
    fedc__kshape shapes[64];
    for (int i = 0; i < s->n->nin; i++) shapes[i] = in_shape(s, i);
    int axis = fedc__axis(fedc__attr_int(s->n, FEDC_ATTR_AXIS, 0), s->n->type.rank);
    return s->k->concat(out_elsize(s), s->n->nin, shapes, s->in, axis, s->out);
}

static fedc_status run_PAD(const fedc__step *s) {
    fedc__kshape xs = in_shape(s, 0), ys = out_shape(s);
    int count;
    const int64_t *lo = fedc__attr_ints(s->n, FEDC_ATTR_LO, &count);
    return s->k->pad(out_elsize(s), &xs, lo, s->in[0], &ys, s->out);
}

/* ------------------------------------------------- algebra and indexing -- */

/* A matmul node's product: batch (c's leading dims) x [m, k] @ [k, n]. */
typedef struct matmul_shape {
    int64_t batch, m, n, k;
    int ta, tb;
} matmul_shape;

static matmul_shape matmul_shape_of(const fedc__step *s) {
    const fedc_type *a = in_type(s, 0), *c = &s->n->type;
    matmul_shape sh = {1, c->dims[c->rank - 2], c->dims[c->rank - 1], 0,
                       (int)fedc__attr_int(s->n, FEDC_ATTR_TRANSPOSE_A, 0),
                       (int)fedc__attr_int(s->n, FEDC_ATTR_TRANSPOSE_B, 0)};
    sh.k = a->dims[a->rank - (sh.ta ? 2 : 1)];
    for (int i = 0; i < c->rank - 2; i++) sh.batch *= c->dims[i];
    return sh;
}

static fedc_status run_MATMUL(const fedc__step *s) {
    matmul_shape sh = matmul_shape_of(s);
    return s->k->matmul(s->n->type.dtype, sh.batch, sh.m, sh.n, sh.k, sh.ta, sh.tb, s->in[0], in_type(s, 0)->rank > 2,
                        s->in[1], in_type(s, 1)->rank > 2, s->out);
}

fedc_status fedc__step_run_matmul_sub_scaled(const fedc__step *s, const void *w, const void *scale) {
    matmul_shape sh = matmul_shape_of(s);
    return s->k->matmul_sub_scaled(s->n->type.dtype, sh.m, sh.n, sh.k, sh.ta, sh.tb, s->in[0], s->in[1], w, scale,
                                   s->out);
}

fedc_status fedc__step_run_matmul_bias(const fedc__step *s, const void *bias, void *act) {
    matmul_shape sh = matmul_shape_of(s);
    return s->k->matmul_bias(s->n->type.dtype, sh.batch * sh.m, sh.n, sh.k, sh.ta, sh.tb, s->in[0], s->in[1], bias,
                             s->out, act);
}

static fedc_status run_GATHER(const fedc__step *s) {
    const fedc_type *table = in_type(s, 0);
    int64_t width = fedc_type_count(table) / (table->dims[0] ? table->dims[0] : 1);
    if (table->dims[0] == 0) width = 0;
    return s->k->gather(out_elsize(s), table->dims[0], width, s->in[0], fedc_type_count(in_type(s, 1)), s->in[1], s->out);
}

static fedc_status run_SCATTER_ADD(const fedc__step *s) {
    int64_t rows = s->n->type.dims[0];
    int64_t width = rows ? out_count(s) / rows : 0;
    return s->k->scatter_add(s->n->type.dtype, rows, width, fedc_type_count(in_type(s, 1)), s->in[1], s->in[0], s->out);
}

static fedc_status run_ONE_HOT(const fedc__step *s) {
    return s->k->one_hot(s->n->type.dtype, fedc_type_count(in_type(s, 0)), s->in[0],
                         fedc__attr_int(s->n, FEDC_ATTR_DEPTH, 0), s->out);
}

/* ---------------------------------------------------- convolution, pools -- */

/* Geometry from the NHWC input type x, the filter's kh, kw, o and the attributes. */
static fedc__conv_geom conv_geom(const fedc__node *n, const fedc_type *x, int64_t kh, int64_t kw, int64_t o,
                                const fedc_type *y) {
    int count;
    const int64_t *strides = fedc__attr_ints(n, FEDC_ATTR_STRIDES, &count);
    const int64_t *pads = fedc__attr_ints(n, FEDC_ATTR_PADS, &count);
    fedc__conv_geom g = {x->dims[0], x->dims[1], x->dims[2], x->dims[3], kh, kw, o,
                        strides[0], strides[1], pads[0], pads[2], y->dims[1], y->dims[2]};
    return g;
}

/* The geometry of a conv-family node, whichever of the three it is. */
static fedc__conv_geom conv_geom_of(const fedc_program *p, const fedc__node *n) {
    const fedc_type *a = &p->nodes[n->in[0]].type, *b = &p->nodes[n->in[1]].type;
    if (n->op == FEDC_OP_CONV2D) return conv_geom(n, a, b->dims[0], b->dims[1], b->dims[3], &n->type);
    if (n->op == FEDC_OP_CONV2D_INPUT_GRAD) return conv_geom(n, &n->type, b->dims[0], b->dims[1], b->dims[3], a);
    return conv_geom(n, a, n->type.dims[0], n->type.dims[1], n->type.dims[3], b); /* filter grad: x, dy */
}

static fedc_status run_CONV2D(const fedc__step *s) {
    fedc__conv_geom g = conv_geom_of(s->p, s->n);
    return s->k->conv2d(s->n->type.dtype, &g, s->in[0], s->in[1], s->out, s->scratch);
}

static fedc_status run_CONV2D_INPUT_GRAD(const fedc__step *s) {
    fedc__conv_geom g = conv_geom_of(s->p, s->n);
    return s->k->conv2d_input_grad(s->n->type.dtype, &g, s->in[0], s->in[1], s->out, s->scratch);
}

static fedc_status run_CONV2D_FILTER_GRAD(const fedc__step *s) {
    fedc__conv_geom g = conv_geom_of(s->p, s->n);
    return s->k->conv2d_filter_grad(s->n->type.dtype, &g, s->in[0], s->in[1], s->out, s->scratch);
}

static fedc__pool_geom pool_geom(const fedc__node *n, const fedc_type *x, const fedc_type *y) {
    int count;
    const int64_t *window = fedc__attr_ints(n, FEDC_ATTR_WINDOW, &count);
    const int64_t *strides = fedc__attr_ints(n, FEDC_ATTR_STRIDES, &count);
    const int64_t *pads = fedc__attr_ints(n, FEDC_ATTR_PADS, &count);
    fedc__pool_geom g = {x->dims[0], x->dims[1], x->dims[2], x->dims[3], window[0], window[1],
                        strides[0], strides[1], pads[0], pads[2], y->dims[1], y->dims[2]};
    return g;
}

fedc_status fedc__step_run_conv_epilogue(const fedc__step *s, const void *bias, int relu, const fedc__node *pool) {
    fedc__conv_geom g = conv_geom_of(s->p, s->n);
    fedc__pool_geom pg = pool ? pool_geom(pool, &s->n->type, &pool->type) : (fedc__pool_geom){0};
    return s->k->conv2d_bias_relu(s->n->type.dtype, &g, s->in[0], s->in[1], bias, relu, pool ? &pg : NULL, s->out,
                                  s->scratch);
}

static fedc_status run_MAX_POOL2D(const fedc__step *s) {
    fedc__pool_geom g = pool_geom(s->n, in_type(s, 0), &s->n->type);
    return s->k->max_pool2d(s->n->type.dtype, &g, s->in[0], s->out);
}

static fedc_status run_AVG_POOL2D(const fedc__step *s) {
    fedc__pool_geom g = pool_geom(s->n, in_type(s, 0), &s->n->type);
    return s->k->avg_pool2d(s->n->type.dtype, &g, s->in[0], s->out);
}

static fedc_status run_MAX_POOL2D_GRAD(const fedc__step *s) {
    fedc__pool_geom g = pool_geom(s->n, in_type(s, 0), in_type(s, 1));
    return s->k->max_pool2d_grad(s->n->type.dtype, &g, s->in[0], s->in[1], s->out);
}

fedc_status fedc__step_run_pool_grad_select(const fedc__step *s, const uint8_t *arg, const void *x, const void *gt,
                                           const void *otherwise) {
    fedc__pool_geom g = pool_geom(s->n, in_type(s, 0), in_type(s, 1));
    return s->k->max_pool2d_grad_select_gt(s->n->type.dtype, &g, arg, s->in[1], x, gt, otherwise, s->out);
}

static fedc_status run_AVG_POOL2D_GRAD(const fedc__step *s) {
    fedc__pool_geom g = pool_geom(s->n, &s->n->type, in_type(s, 0));
    return s->k->avg_pool2d_grad(s->n->type.dtype, &g, s->in[0], s->out);
}

/* ------------------------------------------------------- losses and misc -- */

static fedc_status run_LOG_SOFTMAX(const fedc__step *s) {
    const fedc_type *x = in_type(s, 0);
    int64_t cols = x->dims[x->rank - 1];
    int64_t rows = cols ? fedc_type_count(x) / cols : 0;
    return s->k->log_softmax(x->dtype, rows, cols, s->in[0], s->out);
}

static fedc_status run_SOFTMAX_XENT(const fedc__step *s) {
    const fedc_type *logits = in_type(s, 0);
    int64_t classes = logits->dims[logits->rank - 1];
    const void *w = s->n->nin == 3 ? s->in[2] : NULL;
    return s->k->softmax_xent(logits->dtype, out_count(s), classes, s->in[0], s->in[1], w, s->out);
}

static fedc_status run_SOFTMAX_XENT_GRAD(const fedc__step *s) {
    const fedc_type *logits = in_type(s, 0);
    int64_t classes = logits->dims[logits->rank - 1];
    return s->k->softmax_xent_grad(logits->dtype, out_count(s) / (classes ? classes : 1), classes, s->in[0], s->in[1],
                                   s->in[2], s->out);
}

/* The stream an i32[4] key value names (fedc_rng_stream: the Philox key, then the
 * upper counter words). */
static fedc_rng_stream key_stream(const void *key_value) {
    const int32_t *key = key_value;
    return (fedc_rng_stream){{{(uint32_t)key[0], (uint32_t)key[1]}}, (uint32_t)key[2], (uint32_t)key[3]};
}

static fedc_status run_DROPOUT(const fedc__step *s) {
    return s->k->dropout(s->n->type.dtype, out_count(s), s->in[0], key_stream(s->in[1]),
                         fedc__attr_float(s->n, FEDC_ATTR_RATE, 0), s->out);
}

static fedc__attn_geom attn_geom(const fedc_program *p, const fedc__node *n) {
    const fedc_type *qkv = &p->nodes[n->in[0]].type;
    int64_t heads = fedc__attr_int(n, FEDC_ATTR_HEADS, 1);
    fedc__attn_geom g = {qkv->dims[0], qkv->dims[1], heads, qkv->dims[2] / (3 * heads)};
    return g;
}

/* Attention saving its heads' softmax weights, or its gradient reading them. */
static fedc_status run_attention_saved(const fedc__step *s, float *probs) {
    fedc__attn_geom g = attn_geom(s->p, s->n);
    if (s->n->op == FEDC_OP_CAUSAL_ATTENTION)
        return s->k->causal_attention_save(s->n->type.dtype, &g, s->in[0], s->out, s->scratch, probs);
    return s->k->causal_attention_grad_apply(s->n->type.dtype, &g, s->in[0], s->in[1], s->out, s->scratch, probs);
}

/* The loss saving its rows' max and sum, or its gradient reading them. */
static fedc_status run_xent_saved(const fedc__step *s, float *stats) {
    const fedc_type *logits = in_type(s, 0);
    int64_t classes = logits->dims[logits->rank - 1];
    if (s->n->op == FEDC_OP_SOFTMAX_XENT)
        return s->k->softmax_xent_save(logits->dtype, out_count(s), classes, s->in[0], s->in[1],
                                       s->n->nin == 3 ? s->in[2] : NULL, s->out, stats);
    return s->k->softmax_xent_grad_apply(logits->dtype, out_count(s) / (classes ? classes : 1), classes, s->in[0],
                                         s->in[1], s->in[2], stats, s->out);
}

fedc_status fedc__step_run_saved(const fedc__step *s, uint8_t *bytes, bool save) {
    fedc_dtype dt = s->n->type.dtype;
    float *floats = (float *)(void *)bytes; /* at a multiple of 64 in the block: float-aligned */
    if (s->n->op == FEDC_OP_SOFTMAX_XENT || s->n->op == FEDC_OP_SOFTMAX_XENT_GRAD) return run_xent_saved(s, floats);
    if (s->n->op == FEDC_OP_CAUSAL_ATTENTION || s->n->op == FEDC_OP_CAUSAL_ATTENTION_GRAD)
        return run_attention_saved(s, floats);
    if (s->n->op == FEDC_OP_MAX_POOL2D) {
        fedc__pool_geom g = pool_geom(s->n, in_type(s, 0), &s->n->type);
        return s->k->max_pool2d_save(dt, &g, s->in[0], s->out, bytes);
    }
    if (s->n->op == FEDC_OP_MAX_POOL2D_GRAD) {
        fedc__pool_geom g = pool_geom(s->n, in_type(s, 0), in_type(s, 1));
        return s->k->max_pool2d_grad_apply(dt, &g, bytes, s->in[1], s->out);
    }
    double rate = fedc__attr_float(s->n, FEDC_ATTR_RATE, 0);
    if (save) return s->k->dropout_save(dt, out_count(s), s->in[0], key_stream(s->in[1]), rate, s->out, bytes);
    return s->k->dropout_apply(dt, out_count(s), s->in[0], bytes, rate, s->out);
}

static fedc_status run_RANDOM_NORMAL(const fedc__step *s) {
    return s->k->random_normal(s->n->type.dtype, out_count(s), key_stream(s->in[0]), s->out);
}

static fedc_status run_RANDOM_UNIFORM(const fedc__step *s) {
    return s->k->random_uniform(s->n->type.dtype, out_count(s), key_stream(s->in[0]), s->out);
}

static fedc_status run_CAST(const fedc__step *s) {
    return s->k->cast(in_type(s, 0)->dtype, s->n->type.dtype, out_count(s), s->in[0], s->out);
}

/* ---------------------------------------------------------- federated -- */

/* broadcast aliases its operand (the executor points every client at the server
 * value); map runs in the cohort runner (src/exec/cohort.c) and fold in the
 * executor (run_fold), which also write the result nodes: none computes here. */
static fedc_status run_BROADCAST(const fedc__step *s) { (void)s; return FEDC_OK; }
static fedc_status run_MAP(const fedc__step *s) { (void)s; return FEDC_OK; }
static fedc_status run_FOLD(const fedc__step *s) { (void)s; return FEDC_OK; }
static fedc_status run_RESULT(const fedc__step *s) { (void)s; return FEDC_OK; }

/* Aggregations of a materialised clients value: client i's value is at
 * s->in[0] + i * stride (and its weight likewise in s->in[1]), added in the
 * tree's order (src/exec/aggregate.c); clients dropped in this run are left out. */
static fedc_status aggregate(const fedc__step *s) {
    fedc__agg *a = s->agg;
    fedc_status st = FEDC_OK;
    fedc__agg_begin(a, s->n, s->clients, s->out);
    fedc__agg_robust_attackers(a, s->p, s->n, s->in, s->in_stride);
    for (int i = 0; !st && i < s->clients; i++) {
        bool left_out = s->dropped && s->dropped[i];
        const void *w = s->n->nin >= 2 ? (const char *)s->in[1] + (size_t)i * s->in_stride[1] : NULL;
        st = fedc__agg_add(a, i, left_out ? NULL : (const char *)s->in[0] + (size_t)i * s->in_stride[0], w);
    }
    return st ? st : fedc__agg_end(a);
}

static fedc_status run_SUM(const fedc__step *s) { return aggregate(s); }
static fedc_status run_MEAN(const fedc__step *s) { return aggregate(s); }
static fedc_status run_WEIGHTED_MEAN(const fedc__step *s) { return aggregate(s); }
static fedc_status run_ROBUST_AGGREGATE(const fedc__step *s) { return aggregate(s); }

/* The hierarchy's primitives run in the executor, which knows the groups
 * (src/exec/hierarchy.c). */
static fedc_status level_op(const fedc__step *s) {
    return fedc_error(FEDC_EINTERNAL, "%%%d (%s) runs in the executor (hierarchy.c), not as a kernel", s->v,
                      fedc__ops[s->n->op].name);
}
static fedc_status run_BROADCAST_DOWN(const fedc__step *s) { return level_op(s); }
static fedc_status run_SUM_UP(const fedc__step *s) { return level_op(s); }
static fedc_status run_MEAN_UP(const fedc__step *s) { return level_op(s); }
static fedc_status run_WEIGHTED_MEAN_UP(const fedc__step *s) { return level_op(s); }
static fedc_status run_NUM_GROUPS(const fedc__step *s) { return level_op(s); }
static fedc_status run_GROUP_SIZE(const fedc__step *s) { return level_op(s); }

static fedc_status run_NUM_CLIENTS(const fedc__step *s) {
    switch (s->n->type.dtype) {
    case FEDC_F32: *(float *)s->out = (float)s->clients; break;
    case FEDC_F64: *(double *)s->out = (double)s->clients; break;
    default: *(int32_t *)s->out = s->clients; break;
    }
    return FEDC_OK;
}

/* --------------------------------------------------- transformer layers -- */

static fedc_status run_GELU(const fedc__step *s) {
    return s->k->gelu(s->n->type.dtype, out_count(s), s->in[0], s->out);
}

static fedc_status run_GELU_GRAD(const fedc__step *s) {
    return s->k->gelu_grad(s->n->type.dtype, out_count(s), s->in[0], s->in[1], s->out);
}

/* x viewed as [rows, cols], cols its last axis. */
static void norm_rows(const fedc_type *x, int64_t *rows, int64_t *cols) {
    *cols = x->dims[x->rank - 1];
    *rows = *cols ? fedc_type_count(x) / *cols : 0;
}

static fedc_status run_LAYER_NORM(const fedc__step *s) {
    int64_t rows, cols;
    norm_rows(in_type(s, 0), &rows, &cols);
    return s->k->layer_norm(s->n->type.dtype, rows, cols, s->in[0], s->in[1], s->in[2],
                            fedc__attr_float(s->n, FEDC_ATTR_EPS, 0), s->out);
}

static fedc_status run_LAYER_NORM_GRAD(const fedc__step *s) {
    int64_t rows, cols;
    norm_rows(in_type(s, 0), &rows, &cols);
    return s->k->layer_norm_grad(s->n->type.dtype, rows, cols, s->in[0], s->in[1], s->in[2],
                                 fedc__attr_float(s->n, FEDC_ATTR_EPS, 0), s->out);
}

static fedc_status run_LAYER_NORM_PARAM_GRAD(const fedc__step *s) {
    int64_t rows, cols;
    norm_rows(in_type(s, 0), &rows, &cols);
    return s->k->layer_norm_param_grad(s->n->type.dtype, rows, cols, s->in[0], s->in[1],
                                       fedc__attr_float(s->n, FEDC_ATTR_EPS, 0), s->out);
}

/* Both attention ops have qkv [batch, seq, 3 * heads * d] as operand 0. */
static fedc_status run_CAUSAL_ATTENTION(const fedc__step *s) {
    fedc__attn_geom g = attn_geom(s->p, s->n);
    return s->k->causal_attention(s->n->type.dtype, &g, s->in[0], s->out, s->scratch);
}

static fedc_status run_CAUSAL_ATTENTION_GRAD(const fedc__step *s) {
    fedc__attn_geom g = attn_geom(s->p, s->n);
    return s->k->causal_attention_grad(s->n->type.dtype, &g, s->in[0], s->in[1], s->out, s->scratch);
}

/* ------------------------------------------------------------ recurrent -- */

/* T, B and H of an lstm-family node, from operand `i` = [T, B, .] and wh = [H, 4H]. */
static void lstm_sizes(const fedc__step *s, int64_t *T, int64_t *B, int64_t *H) {
    const fedc_type *x = in_type(s, 0), *wh = in_type(s, s->n->nin - 1);
    *T = x->dims[0], *B = x->dims[1], *H = wh->dims[0];
}

static fedc_status run_LSTM(const fedc__step *s) {
    int64_t T, B, H;
    lstm_sizes(s, &T, &B, &H);
    return s->k->lstm(s->n->type.dtype, T, B, H, s->in[0], s->in[1], s->out);
}

static fedc_status run_LSTM_GRAD(const fedc__step *s) {
    int64_t T, B, H;
    lstm_sizes(s, &T, &B, &H);
    return s->k->lstm_grad(s->n->type.dtype, T, B, H, s->in[0], s->in[1], s->in[2], s->out, s->scratch);
}

static fedc_status run_LSTM_TANGENT(const fedc__step *s) {
    int64_t T, B, H;
    lstm_sizes(s, &T, &B, &H);
    return s->k->lstm_tangent(s->n->type.dtype, T, B, H, s->in[0], s->in[1], s->in[2], s->out, s->scratch);
}

/* ------------------------------------------------------------- dispatch -- */

static const run_fn runners[FEDC_OP_COUNT] = {
#define FEDC_OP(id, name, min_in, max_in) [FEDC_OP_##id] = run_##id,
#include "ir/ops.def"
#undef FEDC_OP
};

fedc_status fedc__step_run(const fedc__step *s) {
    fedc_status st = runners[s->n->op](s);
    if (st) { /* say which node failed, keeping the kernel's own message */
        char msg[900];
        snprintf(msg, sizeof msg, "%s", fedc_errmsg());
        return fedc_error(st, "%%%d (%s): %s", s->v, fedc__ops[s->n->op].name, msg);
    }
    return FEDC_OK;
}

size_t fedc__step_scratch(const fedc__kernels *k, const fedc_program *p, const fedc__node *n) {
    if (n->op == FEDC_OP_CAUSAL_ATTENTION || n->op == FEDC_OP_CAUSAL_ATTENTION_GRAD) {
        fedc__attn_geom g = attn_geom(p, n);
        return k->attention_scratch(n->type.dtype, &g);
    }
    if (n->op == FEDC_OP_LSTM_GRAD || n->op == FEDC_OP_LSTM_TANGENT) {
        const fedc_type *x = &p->nodes[n->in[0]].type, *wh = &p->nodes[n->in[2]].type;
        return FEDC_LSTM_SCRATCH(x->dims[1], wh->dims[0]);
    }
    if (n->op != FEDC_OP_CONV2D && n->op != FEDC_OP_CONV2D_INPUT_GRAD && n->op != FEDC_OP_CONV2D_FILTER_GRAD) return 0;
    fedc__conv_geom g = conv_geom_of(p, n);
    return k->conv2d_scratch(&g, n->type.dtype);
}
