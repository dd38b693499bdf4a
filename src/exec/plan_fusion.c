/* Fusion: chains of nodes that run as one kernel, found once when the executor is
 * planned. Each keeps the bits of the unfused nodes (the fused loops compute the
 * same operations in the same order). */
#include "exec/executor_plan.h"

/* ------------------------------------------------------------ epilogues -- */

/* The one node that reads v (once), or FEDC_NONE: none, several, or v is an output. */
static fedc_value sole_reader(const fedc_program *p, fedc_value v) {
    fedc_value r = FEDC_NONE;
    if (fedc__is_output(p, v)) return FEDC_NONE;
    for (int u = v + 1; u < p->n; u++)
        for (int i = 0; i < p->nodes[u].nin; i++) {
            if (p->nodes[u].in[i] != v) continue;
            if (r != FEDC_NONE) return FEDC_NONE;
            r = u;
        }
    return r;
}

static bool same_type(const fedc_type *a, const fedc_type *b) {
    if (a->dtype != b->dtype || a->rank != b->rank || a->placement != b->placement) return false;
    for (int i = 0; i < a->rank; i++)
        if (a->dims[i] != b->dims[i]) return false;
    return true;
}

/* A plain array in the block, computed by this node (not per client). */
static bool plain(const fedc_executor *ex, fedc_value v) {
    return ex->plan[v].kind == MEM_BLOCK && ex->plan[v].def == v && ex->p->nodes[v].type.placement == FEDC_LOCAL;
}

/* The add(v, bias) that only reads v's value, with bias [v's last dim] computed
 * before v, or FEDC_NONE. */
static fedc_value bias_add(const fedc_executor *ex, fedc_value v) {
    const fedc_program *p = ex->p;
    const fedc__node *n = &p->nodes[v];
    fedc_value add = plain(ex, v) ? sole_reader(p, v) : FEDC_NONE;
    if (add == FEDC_NONE || (n->type.dtype != FEDC_F32 && n->type.dtype != FEDC_F64)) return FEDC_NONE;
    const fedc__node *a = &p->nodes[add];
    if (a->op != FEDC_OP_ADD || a->in[0] != v || a->in[1] >= v || !plain(ex, add) || !same_type(&a->type, &n->type))
        return FEDC_NONE;
    const fedc_type *b = &p->nodes[a->in[1]].type;
    bool ok = b->rank == 1 && b->dims[0] == n->type.dims[n->type.rank - 1] && b->dtype == n->type.dtype &&
              b->placement == FEDC_LOCAL;
    return ok ? add : FEDC_NONE;
}

static fedc_status epilogues_alloc(fedc_executor *ex) {
    if (ex->epi) return FEDC_OK;
    if (!(ex->epi = fedc_malloc((size_t)ex->p->n * sizeof *ex->epi))) return fedc_error(FEDC_ENOMEM, "executor: out of memory");
    for (int u = 0; u < ex->p->n; u++) ex->epi[u] = (epilogue){FEDC_NONE, FEDC_NONE, 0, 0, FEDC_NONE};
    return FEDC_OK;
}

/* conv2d -> add(y, bias [o]) [-> relu] [-> max_pool2d]: the chain's last value is
 * placed when the conv2d runs (its def), so it never overlaps the conv2d's operands. */
static fedc_status conv_epilogue(fedc_executor *ex, fedc_value v) {
    const fedc_program *p = ex->p;
    fedc_value add = bias_add(ex, v);
    if (add == FEDC_NONE) return FEDC_OK;
    fedc_value relu = sole_reader(p, add), out = add, pool;
    if (relu != FEDC_NONE && p->nodes[relu].op == FEDC_OP_RELU && plain(ex, relu)) out = relu;
    pool = sole_reader(p, out);
    if (pool == FEDC_NONE || p->nodes[pool].op != FEDC_OP_MAX_POOL2D || !plain(ex, pool)) pool = FEDC_NONE;
    fedc_status st = epilogues_alloc(ex);
    if (st) return st;
    ex->epi[v] = (epilogue){pool != FEDC_NONE ? pool : out, p->nodes[add].in[1], out == relu, pool != FEDC_NONE,
                            FEDC_NONE};
    ex->plan[v].kind = MEM_NONE;
    if (out == relu) ex->plan[add].kind = MEM_NONE;
    if (pool != FEDC_NONE) ex->plan[out].kind = MEM_NONE, out = pool;
    ex->plan[out].def = v;
    return FEDC_OK;
}

/* One product of matmul's 2-D b: a 2-D a, or a batched untransposed a (one tall
 * product). */
static bool one_product(const fedc_program *p, const fedc__node *n) {
    const fedc_type *a = &p->nodes[n->in[0]].type, *b = &p->nodes[n->in[1]].type;
    return b->rank == 2 && (a->rank == 2 || (a->rank > 2 && !fedc__attr_int(n, FEDC_ATTR_TRANSPOSE_A, 0)));
}

/* matmul -> add(y, bias [n]) [, gelu(that add)]: the add's value (which a gelu's
 * derivative may read too) and the first gelu of it are both placed when the
 * matmul runs; the product gets no memory. */
static fedc_status matmul_epilogue(fedc_executor *ex, fedc_value v) {
    const fedc_program *p = ex->p;
    fedc_value add = one_product(p, &p->nodes[v]) ? bias_add(ex, v) : FEDC_NONE, act = FEDC_NONE;
    if (add == FEDC_NONE) return FEDC_OK;
    for (fedc_value u = add + 1; act == FEDC_NONE && u < p->n; u++)
        if (p->nodes[u].op == FEDC_OP_GELU && p->nodes[u].in[0] == add && plain(ex, u)) act = u;
    fedc_status st = epilogues_alloc(ex);
    if (st) return st;
    ex->epi[v] = (epilogue){add, p->nodes[add].in[1], 0, 0, act};
    ex->plan[v].kind = MEM_NONE;
    ex->plan[add].def = v;
    if (act != FEDC_NONE) ex->plan[act].def = v;
    return FEDC_OK;
}

/* Finds the chains of a conv2d or a matmul with its bias (conv2d: then relu and
 * max-pool) whose intermediate values only the next link reads, and runs each as
 * one kernel with an epilogue that adds the bias, applies the activation (and
 * pools) while each chunk of output is in cache: the same bits, one pass over the
 * activations instead of two to four. The intermediate values get no memory.
 * Only with kernels that have the epilogue. */
fedc_status fedc__plan_epilogues(fedc_executor *ex) {
    fedc_status st = FEDC_OK;
    for (int v = 0; !st && v < ex->p->n; v++) {
        fedc__op op = ex->p->nodes[v].op;
        if (op == FEDC_OP_CONV2D && ex->k->conv2d_bias_relu) st = conv_epilogue(ex, v);
        if (op == FEDC_OP_MATMUL && ex->k->matmul_bias) st = matmul_epilogue(ex, v);
    }
    return st;
}

/* ---------------------------------------------------------------- pairs -- */

/* One element of dtype dt, on the server side of nothing (a local scalar). */
bool fedc__scalar_of(const fedc_program *p, fedc_value u, fedc_dtype dt) {
    const fedc_type *t = &p->nodes[u].type;
    return t->dtype == dt && t->placement == FEDC_LOCAL && fedc_type_count(t) == 1;
}

/* The inner op of a pair v runs inside v's pass: select(gt(x, s), a, b) with x of
 * v's type, a and b of v's type or scalars; sub(w, mul(s, g)) (or mul(g, s)) with
 * w and g of v's type. s is a scalar in both. */
static fedc_value pair_inner(const fedc_executor *ex, fedc_value v) {
    const fedc_program *p = ex->p;
    const fedc__node *n = &p->nodes[v];
    fedc_dtype dt = n->type.dtype;
    bool select = n->op == FEDC_OP_SELECT && ex->k->select_gt, sub = n->op == FEDC_OP_SUB && ex->k->sub_scaled;
    if ((!select && !sub) || (dt != FEDC_F32 && dt != FEDC_F64) || !plain(ex, v)) return FEDC_NONE;
    fedc_value u = n->in[select ? 0 : 1];
    const fedc__node *in = &p->nodes[u];
    if (in->op != (select ? FEDC_OP_GT : FEDC_OP_MUL) || sole_reader(p, u) != v || !plain(ex, u)) return FEDC_NONE;
    const fedc_type *t = &n->type;
    if (select) {
        for (int i = 1; i < 3; i++)
            if (!same_type(&p->nodes[n->in[i]].type, t) && !fedc__scalar_of(p, n->in[i], dt)) return FEDC_NONE;
        return same_type(&p->nodes[in->in[0]].type, t) && fedc__scalar_of(p, in->in[1], dt) ? u : FEDC_NONE;
    }
    int g = fedc__scalar_of(p, in->in[0], dt) ? 1 : 0; /* the full operand of the mul */
    bool ok = same_type(&p->nodes[n->in[0]].type, t) && same_type(&p->nodes[in->in[g]].type, t) &&
              fedc__scalar_of(p, in->in[1 - g], dt);
    return ok ? u : FEDC_NONE;
}

/* The matmul whose product an SGD pair v scales (sub(w, mul(s, matmul(a, b)))),
 * when only the mul reads it and it is one 2-D product. */
static fedc_value pair_product(const fedc_executor *ex, fedc_value v, fedc_value u) {
    const fedc_program *p = ex->p;
    if (p->nodes[v].op != FEDC_OP_SUB || !ex->k->matmul_sub_scaled) return FEDC_NONE;
    const fedc__node *mul = &p->nodes[u];
    fedc_value g = mul->in[fedc__scalar_of(p, mul->in[0], p->nodes[v].type.dtype) ? 1 : 0];
    const fedc__node *mm = &p->nodes[g];
    if (mm->op != FEDC_OP_MATMUL || sole_reader(p, g) != u || !plain(ex, g) || mm->type.rank != 2 ||
        p->nodes[mm->in[0]].type.rank != 2 || p->nodes[mm->in[1]].type.rank != 2)
        return FEDC_NONE;
    return g;
}

/* Finds the pairs (relu's derivative, an SGD step) and runs each as one pass of
 * the kernels' select_gt or sub_scaled: the same bits, one pass instead of two,
 * and no memory for the inner value, whose operands stay alive until the outer
 * node runs (compute_last_use). An SGD step whose gradient is a matmul's product
 * that nothing else reads takes the product in the same pass (matmul_sub_scaled):
 * the gradient is never stored. Only with kernels that have the pairs. */
void fedc__plan_pairs(fedc_executor *ex) {
    for (int v = 0; v < ex->p->n; v++) {
        fedc_value u = pair_inner(ex, v);
        if (u == FEDC_NONE) continue;
        ex->plan[v].pair = u;
        ex->plan[u].kind = MEM_NONE;
        fedc_value g = pair_product(ex, v, u);
        if (g == FEDC_NONE) continue;
        ex->plan[v].product = g;
        ex->plan[g].kind = MEM_NONE;
    }
}

/* ---------------------------------------------------------- saved bytes -- */

static bool same_ints(const fedc__node *a, const fedc__node *b, fedc__attr_key key) {
    int na, nb;
    const int64_t *x = fedc__attr_ints(a, key, &na), *y = fedc__attr_ints(b, key, &nb);
    if (na != nb) return false;
    for (int i = 0; i < na; i++)
        if (x[i] != y[i]) return false;
    return true;
}

/* Whether u reads what v saves: a dropout with v's key value, rate and type (v's
 * derivative, the same dropout on the cotangent: vjp_DROPOUT), the gradient of
 * max-pool v (its x, geometry and a dy of v's type), or a softmax cross-entropy
 * gradient of v's logits and labels, or an attention gradient of v's qkv and heads. */
static bool reads_saved(const fedc_program *p, fedc_value v, fedc_value u) {
    const fedc__node *a = &p->nodes[v], *b = &p->nodes[u];
    if (a->op == FEDC_OP_SOFTMAX_XENT)
        return b->op == FEDC_OP_SOFTMAX_XENT_GRAD && b->in[0] == a->in[0] && b->in[1] == a->in[1];
    if (a->op == FEDC_OP_CAUSAL_ATTENTION)
        return b->op == FEDC_OP_CAUSAL_ATTENTION_GRAD && b->in[0] == a->in[0] &&
               fedc__attr_int(b, FEDC_ATTR_HEADS, 1) == fedc__attr_int(a, FEDC_ATTR_HEADS, 1);
    if (a->op == FEDC_OP_DROPOUT)
        return b->op == FEDC_OP_DROPOUT && b->in[1] == a->in[1] && same_type(&b->type, &a->type) &&
               fedc__attr_float(b, FEDC_ATTR_RATE, 0) == fedc__attr_float(a, FEDC_ATTR_RATE, 0);
    return b->op == FEDC_OP_MAX_POOL2D_GRAD && b->in[0] == a->in[0] && same_type(&p->nodes[b->in[1]].type, &a->type) &&
           same_ints(a, b, FEDC_ATTR_WINDOW) && same_ints(a, b, FEDC_ATTR_STRIDES) && same_ints(a, b, FEDC_ATTR_PADS);
}

/* A node that can save bytes for its derivatives: an f32 dropout of a rate in
 * [0, 1) (its mask), an f32 max_pool2d of a window of at most 255 (its argmax), an
 * f32 softmax cross-entropy (each row's max and sum of exponentials), an f32
 * causal attention (each head's softmax weights). */
static bool can_save(const fedc_executor *ex, fedc_value v) {
    const fedc__node *n = &ex->p->nodes[v];
    if (n->type.dtype != FEDC_F32 || !plain(ex, v) || ex->plan[v].saved != FEDC_NONE) return false;
    if (n->op == FEDC_OP_SOFTMAX_XENT) return ex->k->softmax_xent_save && ex->k->softmax_xent_grad_apply;
    if (n->op == FEDC_OP_CAUSAL_ATTENTION) return ex->k->causal_attention_save && ex->k->causal_attention_grad_apply;
    if (n->op == FEDC_OP_DROPOUT) {
        double rate = fedc__attr_float(n, FEDC_ATTR_RATE, 0);
        return ex->k->dropout_save && ex->k->dropout_apply && rate >= 0 && rate < 1;
    }
    int count;
    const int64_t *window = fedc__attr_ints(n, FEDC_ATTR_WINDOW, &count);
    return n->op == FEDC_OP_MAX_POOL2D && ex->k->max_pool2d_save && ex->k->max_pool2d_grad_apply && count == 2 &&
           window[0] * window[1] <= 255;
}

/* A select pair (relu's derivative, select(gt(x, s), a, b)) whose full operand a
 * is a max-pool gradient reading a saved argmax, read by nothing else, and whose b
 * is a scalar: the gradient runs inside the select's pass (max_pool2d_grad_select_gt)
 * and is never stored; its saved argmax lives until the select runs (plan_memory).
 * Only with kernels that have it. */
void fedc__plan_pool_select(fedc_executor *ex) {
    const fedc_program *p = ex->p;
    for (int v = 0; ex->k->max_pool2d_grad_select_gt && v < p->n; v++) {
        const fedc__node *n = &p->nodes[v];
        if (ex->plan[v].pair == FEDC_NONE || n->op != FEDC_OP_SELECT || n->type.dtype != FEDC_F32) continue;
        fedc_value g = n->in[1], saver = ex->plan[g].saved;
        bool ok = p->nodes[g].op == FEDC_OP_MAX_POOL2D_GRAD && saver != FEDC_NONE && saver != g && plain(ex, g) &&
                  sole_reader(p, g) == v && same_type(&p->nodes[g].type, &n->type) &&
                  fedc__scalar_of(p, n->in[2], FEDC_F32);
        if (!ok) continue;
        ex->plan[v].product = g;
        ex->plan[g].kind = MEM_NONE;
    }
}

size_t fedc__saved_bytes(const fedc_program *p, fedc_value v) {
    const fedc__node *n = &p->nodes[v];
    size_t count = (size_t)fedc_type_count(&n->type);
    if (n->op == FEDC_OP_SOFTMAX_XENT) return 2 * sizeof(float) * count;
    if (n->op != FEDC_OP_CAUSAL_ATTENTION) return count;
    const fedc_type *qkv = &p->nodes[n->in[0]].type; /* [batch, seq, 3 width]: P is [batch, heads, seq, seq] */
    int64_t heads = fedc__attr_int(n, FEDC_ATTR_HEADS, 1);
    return (size_t)(qkv->dims[0] * heads) * (size_t)(qkv->dims[1] * qkv->dims[1]) * sizeof(float);
}

/* Finds the forward ops whose derivatives would compute again what the forward
 * knew: a dropout's mask (its derivative is the same dropout on the cotangent),
 * max-pool's argmax (its gradient finds each window's maximum again) and the
 * softmax cross-entropy's row maxima and sums (its gradient's first two passes over
 * the logits) and attention's softmax weights (its gradient's first product and
 * softmax per head). The forward saves them (fedc__saved_bytes, in the block, from it to
 * its last reader, plan_memory) and the derivatives read them: the same bits
 * without the Philox blocks, the second pass over the pool's input, the loss
 * gradient's max and scaling passes or attention's recomputed weights. Only with kernels that save them. */
void fedc__plan_saved(fedc_executor *ex) {
    const fedc_program *p = ex->p;
    for (int v = 0; v < p->n; v++) {
        if (!can_save(ex, v)) continue;
        for (int u = v + 1; u < p->n; u++)
            if (ex->plan[u].saved == FEDC_NONE && ex->plan[u].pair == FEDC_NONE && reads_saved(p, v, u) && plain(ex, u))
                ex->plan[v].saved = v, ex->plan[u].saved = v;
    }
}
