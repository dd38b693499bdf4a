/* The executor: plans a program's memory once, then runs it without allocating.
 *
 * Planning decides where every value lives:
 *  - inputs in the caller's memory, constants in the program;
 *  - a clients value that is the same for every client (a broadcast: its server
 *    operand; a constant: its one copy in the program) is shared by every client
 *    (stride 0), and is stored one copy per client only when it is an output;
 *  - a reshape (not an output) is its operand's memory, read with a new shape;
 *  - a map's result that only feeds aggregations is streamed: never stored, each
 *    client's copy is added into the aggregation as the client finishes
 *    (src/exec/cohort.c), and those aggregations are computed by the map;
 *  - everything else gets an offset in one block, at the lowest gap free for its
 *    whole lifetime (from the step that writes it to its last reader); a clients
 *    value takes one copy per client. Outputs live to the end. Memory is released
 *    only after the node that last reads it has run, so no kernel writes over its
 *    operands. */
#include <math.h>
#include <string.h>
#include <time.h>

#include "exec/cohort.h"

#define ALIGN 64

typedef enum mem_kind { MEM_NONE, MEM_BOUND, MEM_CONSTANT, MEM_BLOCK, MEM_ALIAS, MEM_STREAMED } mem_kind;

/* A conv2d node that runs with an epilogue (kernels' conv2d_bias_relu): it writes
 * `out`, the last value of its chain conv2d -> add(bias) [-> relu] [-> max_pool2d]. */
typedef struct epilogue {
    fedc_value out; /* FEDC_NONE: the node heads no chain */
    fedc_value bias;
    int relu, pool; /* pool: out is a max_pool2d */
} epilogue;

typedef struct value_plan {
    mem_kind kind;
    size_t offset;         /* MEM_BLOCK */
    size_t stride;         /* clients values: bytes from one client's copy to the next */
    fedc_value fused_into; /* an aggregation computed by this map, or FEDC_NONE */
    fedc_value def;        /* the step that writes it */
    fedc_value pair;       /* the elementwise operand computed in this node's pass (plan_pairs), or FEDC_NONE */
    fedc_value product;    /* a pair's matmul computed in the same pass (plan_pairs), or FEDC_NONE */
} value_plan;

/* The per-node lists of a map or a fold (arguments, result memory, the fused
 * aggregations) and a per-client op's operands for client 0, sized when the
 * executor is created for its widest node, so runs never allocate. */
typedef struct node_lists {
    int width;
    const void **base, **args;
    size_t *arg_stride, *dest_bytes;
    void **dest, **agg_out;
    fedc__agg **aggs; /* the map's aggregations' accumulators (fedc_executor.aggs) */
    const fedc__node **agg_nodes;
    fedc__source *x_src, *w_src;
} node_lists;

struct fedc_executor {
    fedc_program *p; /* our own copy */
    const fedc_kernels *k;
    fedc_exec_options opt;
    int clients;
    value_plan *plan;
    epilogue *epi; /* per value, or NULL when no chain was found */
    const void **bound;
    void **into; /* per value: where a fold's step has this output computed (compute_into), or NULL */
    const void **operands;
    size_t *strides;
    node_lists lists;
    unsigned char *block;
    size_t block_bytes, unplanned_bytes;
    void *scratch;
    size_t scratch_bytes;
    fedc__backend *backend; /* runs clients in parallel */
    fedc__split split;      /* which rank runs which leaves of the cohort */
    int *local, nlocal;     /* the clients this process runs, in increasing order */
    fedc_pool *kernel_pool; /* threads no client uses, lent to the kernels (a program without maps) */
    fedc__cohort **cohorts; /* per value: the runner of a map node */
    fedc_executor **folds;  /* per value: the executor of a fold node's body */
    unsigned char **carries; /* per value: a fold's carries between steps */
    uint8_t *dropped;       /* per client, this run */
    fedc__agg **aggs;       /* per value: the accumulator of an aggregation node */
    double *op_seconds;     /* with options.profile: per op kind, over all runs */
    int64_t *op_calls;
};

/* ------------------------------------------------------------ placement -- */

static bool is_aggregation(fedc__op op) { return op == FEDC_OP_SUM || op == FEDC_OP_MEAN || op == FEDC_OP_WEIGHTED_MEAN; }

static bool is_output(const fedc_program *p, fedc_value v) {
    for (int i = 0; i < p->noutputs; i++)
        if (p->outputs[i].value == v) return true;
    return false;
}

/* A map's result streams when it is not an output and every reader is an
 * aggregation whose other operand is available when the map commits a client:
 * another result of the same map, or a value computed before the map. */
static bool streams(const fedc_program *p, fedc_value r) {
    fedc_value m = p->nodes[r].in[0];
    bool read = false;
    if (is_output(p, r) || p->nodes[m].op != FEDC_OP_MAP) return false;
    for (int u = r + 1; u < p->n; u++) {
        const fedc__node *n = &p->nodes[u];
        for (int i = 0; i < n->nin; i++) {
            if (n->in[i] != r) continue;
            if (!is_aggregation(n->op)) return false;
            read = true;
            for (int j = 0; j < n->nin; j++) {
                const fedc__node *o = &p->nodes[n->in[j]];
                bool same_map = o->op == FEDC_OP_RESULT && o->in[0] == m;
                if (!same_map && n->in[j] > m) return false;
            }
        }
    }
    return read;
}

static void plan_placement(fedc_executor *ex) {
    const fedc_program *p = ex->p;
    for (int v = 0; v < p->n; v++) {
        const fedc__node *n = &p->nodes[v];
        value_plan *vp = &ex->plan[v];
        size_t bytes = n->type.dtype == FEDC__TUPLE ? 0 : fedc_type_bytes(&n->type);
        vp->fused_into = FEDC_NONE;
        vp->pair = vp->product = FEDC_NONE;
        vp->def = v;
        vp->stride = n->type.placement == FEDC_CLIENTS ? bytes : 0;
        if (n->op == FEDC_OP_INPUT) vp->kind = MEM_BOUND;
        else if (n->op == FEDC_OP_CONSTANT && !(vp->stride && is_output(p, v))) vp->kind = MEM_CONSTANT, vp->stride = 0;
        else if (fedc__op_has_body(n->op)) vp->kind = MEM_NONE;
        else if (n->op == FEDC_OP_BROADCAST && !is_output(p, v)) vp->kind = MEM_ALIAS, vp->stride = 0;
        else if (n->op == FEDC_OP_RESHAPE && !is_output(p, v)) vp->kind = MEM_ALIAS, vp->stride = ex->plan[n->in[0]].stride;
        else if (n->op == FEDC_OP_RESULT && streams(p, v)) vp->kind = MEM_STREAMED;
        else vp->kind = MEM_BLOCK;
        if (n->op == FEDC_OP_RESULT) vp->def = n->in[0]; /* written while the map runs */
    }
    /* Aggregations reading a streamed result are computed by that map. */
    for (int v = 0; v < p->n; v++) {
        const fedc__node *n = &p->nodes[v];
        if (!is_aggregation(n->op)) continue;
        for (int i = 0; i < n->nin; i++) {
            if (ex->plan[n->in[i]].kind != MEM_STREAMED) continue;
            ex->plan[v].fused_into = p->nodes[n->in[i]].in[0];
            ex->plan[v].def = ex->plan[v].fused_into;
        }
    }
}

/* ------------------------------------------------------------ epilogues -- */

/* The one node that reads v (once), or FEDC_NONE: none, several, or v is an output. */
static fedc_value sole_reader(const fedc_program *p, fedc_value v) {
    fedc_value r = FEDC_NONE;
    if (is_output(p, v)) return FEDC_NONE;
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

/* Finds the chains conv2d -> add(y, bias [o]) [-> relu] [-> max_pool2d] whose
 * intermediate values only the next link reads, and runs each as one conv2d with an
 * epilogue that adds the bias, applies the relu and pools while each chunk of
 * output is in cache: the same bits, one pass over the activations instead of four. The intermediate values get no
 * memory; the chain's last value is placed when the conv2d runs (its def), so it
 * never overlaps the conv2d's operands. Only with kernels that have the epilogue. */
static fedc_status plan_epilogues(fedc_executor *ex) {
    const fedc_program *p = ex->p;
    for (int v = 0; ex->k->conv2d_bias_relu && v < p->n; v++) {
        const fedc__node *n = &p->nodes[v];
        fedc_value add = n->op == FEDC_OP_CONV2D && plain(ex, v) ? sole_reader(p, v) : FEDC_NONE;
        if (add == FEDC_NONE || (n->type.dtype != FEDC_F32 && n->type.dtype != FEDC_F64)) continue;
        const fedc__node *a = &p->nodes[add];
        if (a->op != FEDC_OP_ADD || a->in[0] != v || a->in[1] >= v || !plain(ex, add) || !same_type(&a->type, &n->type))
            continue;
        const fedc_type *b = &p->nodes[a->in[1]].type;
        if (b->rank != 1 || b->dims[0] != n->type.dims[3] || b->dtype != n->type.dtype || b->placement != FEDC_LOCAL)
            continue;
        fedc_value relu = sole_reader(p, add), out = add, pool;
        if (relu != FEDC_NONE && p->nodes[relu].op == FEDC_OP_RELU && plain(ex, relu)) out = relu;
        pool = sole_reader(p, out);
        if (pool == FEDC_NONE || p->nodes[pool].op != FEDC_OP_MAX_POOL2D || !plain(ex, pool)) pool = FEDC_NONE;
        if (!ex->epi) {
            if (!(ex->epi = fedc_malloc((size_t)p->n * sizeof *ex->epi)))
                return fedc_error(FEDC_ENOMEM, "executor: out of memory");
            for (int u = 0; u < p->n; u++) ex->epi[u] = (epilogue){FEDC_NONE, FEDC_NONE, 0, 0};
        }
        ex->epi[v] = (epilogue){pool != FEDC_NONE ? pool : out, a->in[1], out == relu, pool != FEDC_NONE};
        ex->plan[v].kind = MEM_NONE;
        if (out == relu) ex->plan[add].kind = MEM_NONE;
        if (pool != FEDC_NONE) ex->plan[out].kind = MEM_NONE, out = pool;
        ex->plan[out].def = v;
    }
    return FEDC_OK;
}

/* ---------------------------------------------------------------- pairs -- */

/* One element of dtype dt, on the server side of nothing (a local scalar). */
static bool scalar_of(const fedc_program *p, fedc_value u, fedc_dtype dt) {
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
            if (!same_type(&p->nodes[n->in[i]].type, t) && !scalar_of(p, n->in[i], dt)) return FEDC_NONE;
        return same_type(&p->nodes[in->in[0]].type, t) && scalar_of(p, in->in[1], dt) ? u : FEDC_NONE;
    }
    int g = scalar_of(p, in->in[0], dt) ? 1 : 0; /* the full operand of the mul */
    bool ok = same_type(&p->nodes[n->in[0]].type, t) && same_type(&p->nodes[in->in[g]].type, t) &&
              scalar_of(p, in->in[1 - g], dt);
    return ok ? u : FEDC_NONE;
}

/* The matmul whose product an SGD pair v scales (sub(w, mul(s, matmul(a, b)))),
 * when only the mul reads it and it is one 2-D product. */
static fedc_value pair_product(const fedc_executor *ex, fedc_value v, fedc_value u) {
    const fedc_program *p = ex->p;
    if (p->nodes[v].op != FEDC_OP_SUB || !ex->k->matmul_sub_scaled) return FEDC_NONE;
    const fedc__node *mul = &p->nodes[u];
    fedc_value g = mul->in[scalar_of(p, mul->in[0], p->nodes[v].type.dtype) ? 1 : 0];
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
static void plan_pairs(fedc_executor *ex) {
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

/* ----------------------------------------------------------------- plan -- */

typedef struct span {
    size_t begin, end;
    fedc_value owner;
} span;

typedef struct planner {
    span *live; /* sorted by begin */
    int nlive;
    size_t high;
} planner;

static size_t round_up(size_t n) { return (n + ALIGN - 1) & ~(size_t)(ALIGN - 1); }

/* First fit: the lowest offset where `bytes` fits between live spans. */
static size_t place(planner *pl, fedc_value owner, size_t bytes) {
    bytes = round_up(bytes ? bytes : 1);
    size_t at = 0;
    int i = 0;
    for (; i < pl->nlive; i++) {
        if (pl->live[i].begin >= at + bytes) break;
        if (pl->live[i].end > at) at = pl->live[i].end;
    }
    memmove(&pl->live[i + 1], &pl->live[i], (size_t)(pl->nlive - i) * sizeof *pl->live);
    pl->live[i] = (span){at, at + bytes, owner};
    pl->nlive++;
    if (at + bytes > pl->high) pl->high = at + bytes;
    return at;
}

static void release(planner *pl, fedc_value owner) {
    for (int i = 0; i < pl->nlive; i++) {
        if (pl->live[i].owner == owner) {
            memmove(&pl->live[i], &pl->live[i + 1], (size_t)(pl->nlive - i - 1) * sizeof *pl->live);
            pl->nlive--;
            return;
        }
    }
}

/* last_use[v]: the last step reading v (outputs: after the end). A broadcast or
 * a reshape shares its operand's memory, so it keeps the operand alive. */
static void compute_last_use(const fedc_executor *ex, int *last_use) {
    const fedc_program *p = ex->p;
    for (int v = 0; v < p->n; v++) last_use[v] = ex->plan[v].def;
    for (int v = 0; v < p->n; v++)
        for (int i = 0; i < p->nodes[v].nin; i++)
            if (last_use[p->nodes[v].in[i]] < v) last_use[p->nodes[v].in[i]] = v;
    for (int i = 0; i < p->noutputs; i++) last_use[p->outputs[i].value] = p->n;
    for (int v = 0; v < p->n; v++) /* a pair's inner operands are read when the outer node runs */
        for (int j = 0; j < 2; j++) {
            fedc_value u = j ? ex->plan[v].product : ex->plan[v].pair;
            for (int i = 0; u != FEDC_NONE && i < p->nodes[u].nin; i++)
                if (last_use[p->nodes[u].in[i]] < v) last_use[p->nodes[u].in[i]] = v;
        }
    for (int v = p->n - 1; v >= 0; v--)
        if (ex->plan[v].kind == MEM_ALIAS && last_use[p->nodes[v].in[0]] < last_use[v])
            last_use[p->nodes[v].in[0]] = last_use[v];
}

static size_t value_bytes(const fedc_executor *ex, fedc_value v) {
    const fedc_type *t = &ex->p->nodes[v].type;
    size_t bytes = fedc_type_bytes(t);
    return t->placement == FEDC_CLIENTS ? bytes * (size_t)ex->clients : bytes;
}

static fedc_status plan(fedc_executor *ex) {
    const fedc_program *p = ex->p;
    int n = p->n ? p->n : 1;
    int *last_use = fedc_malloc((size_t)n * sizeof *last_use);
    planner pl = {fedc_malloc((size_t)(n + 1) * sizeof(span)), 0, 0};
    if (!last_use || !pl.live) {
        fedc_free(last_use);
        fedc_free(pl.live);
        return fedc_error(FEDC_ENOMEM, "executor: out of memory while planning");
    }
    compute_last_use(ex, last_use);
    for (int step = 0; step < p->n; step++) {
        /* Values written at this step: the node, or what a map writes. */
        bool map = fedc__op_has_body(p->nodes[step].op); /* writes its result nodes */
        for (int v = step; v < (map ? p->n : step + 1); v++) {
            if (ex->plan[v].def != step || ex->plan[v].kind != MEM_BLOCK) continue;
            size_t bytes = value_bytes(ex, v);
            ex->plan[v].offset = place(&pl, v, bytes);
            ex->unplanned_bytes += round_up(bytes ? bytes : 1);
        }
        fedc_value out = ex->epi ? ex->epi[step].out : FEDC_NONE; /* written by this conv2d */
        if (out != FEDC_NONE) {
            ex->plan[out].offset = place(&pl, out, value_bytes(ex, out));
            ex->unplanned_bytes += round_up(value_bytes(ex, out));
        }
        size_t scratch = fedc__step_scratch(ex->k, p, &p->nodes[step]);
        if (scratch > ex->scratch_bytes) ex->scratch_bytes = scratch;
        /* Memory whose last reader is this step. */
        const fedc__node *node = &p->nodes[step];
        for (int i = 0; i < node->nin; i++)
            if (last_use[node->in[i]] == step) release(&pl, node->in[i]);
        for (int v = step; v < (map ? p->n : step + 1); v++)
            if (last_use[v] == step && ex->plan[v].def == step) release(&pl, v);
    }
    ex->block_bytes = pl.high;
    fedc_free(last_use);
    fedc_free(pl.live);
    return FEDC_OK;
}

/* ------------------------------------------------------------ lifecycle -- */

static bool federated(const fedc_program *p) {
    for (int v = 0; v < p->n; v++)
        if (p->nodes[v].type.placement != FEDC_LOCAL) return true;
    return false;
}

/* A fold runs its body with an executor of its own, and keeps its carries in a
 * buffer of its own between steps. */
static fedc_status create_fold(fedc_executor *ex, fedc_value v) {
    const fedc__node *n = &ex->p->nodes[v];
    const fedc_program *body = fedc__body(ex->p, n);
    fedc_exec_options o = {.reference_kernels = ex->opt.reference_kernels, .profile = ex->opt.profile};
    size_t bytes = 0;
    for (int i = 0; i < fedc__attr_int(n, FEDC_ATTR_CARRIES, 0); i++) bytes += round_up(fedc_type_bytes(&ex->p->nodes[n->in[i]].type));
    ex->carries[v] = fedc_malloc(2 * bytes + 1); /* two halves: read one, write the other */
    if (!ex->carries[v]) return fedc_error(FEDC_ENOMEM, "executor: out of memory for a fold's carries");
    return fedc_executor_create(&ex->folds[v], body, &o);
}

/* Threads run clients; a program without maps has none to run, so its threads go
 * to the kernels of each step (fedc_kernels_set_pool: the same bits either way).
 * A cohort smaller than the threads leaves the rest to its clients' kernels. */
static fedc_status create_cohorts(fedc_executor *ex) {
    int workers = ex->opt.threads > 1 ? ex->opt.threads : 1;
    if (ex->clients > 0 && workers > ex->clients) workers = ex->clients;
    bool any = false;
    for (int v = 0; v < ex->p->n; v++) {
        if (ex->p->nodes[v].op != FEDC_OP_FOLD) continue;
        fedc_status st = create_fold(ex, v);
        if (st) return st;
    }
    for (int v = 0; v < ex->p->n; v++) any |= ex->p->nodes[v].op == FEDC_OP_MAP;
    if (!any) return workers > 1 ? fedc_pool_create(&ex->kernel_pool, workers) : FEDC_OK;
    fedc_status st = ex->opt.mpi && fedc_mpi_size() > 1 ? fedc__backend_mpi(&ex->backend, workers)
                                                        : fedc__backend_threads(&ex->backend, workers);
    for (int v = 0; !st && v < ex->p->n; v++) {
        const fedc__node *n = &ex->p->nodes[v];
        if (n->op == FEDC_OP_MAP) st = fedc__cohort_create(&ex->cohorts[v], fedc__body(ex->p, n), workers, &ex->opt);
    }
    return st;
}

/* The widest node: its operands, its body's results, or the aggregations a map
 * may compute (at most every aggregation of the program). */
static int lists_width(const fedc_program *p) {
    int width = 1, aggregations = 0;
    for (int v = 0; v < p->n; v++) {
        const fedc__node *n = &p->nodes[v];
        if (n->nin > width) width = n->nin;
        if (fedc__op_has_body(n->op) && fedc__body(p, n)->noutputs > width) width = fedc__body(p, n)->noutputs;
        aggregations += is_aggregation(n->op);
    }
    return aggregations > width ? aggregations : width;
}

static bool allocate_lists(node_lists *l, int width) {
    size_t w = (size_t)width;
    l->width = width;
    l->base = fedc_calloc(w, sizeof *l->base);
    l->args = fedc_calloc(w, sizeof *l->args);
    l->arg_stride = fedc_calloc(w, sizeof *l->arg_stride);
    l->dest_bytes = fedc_calloc(w, sizeof *l->dest_bytes);
    l->dest = fedc_calloc(w, sizeof *l->dest);
    l->agg_out = fedc_calloc(w, sizeof *l->agg_out);
    l->aggs = fedc_calloc(w, sizeof *l->aggs);
    l->agg_nodes = fedc_calloc(w, sizeof *l->agg_nodes);
    l->x_src = fedc_calloc(w, sizeof *l->x_src);
    l->w_src = fedc_calloc(w, sizeof *l->w_src);
    return l->base && l->args && l->arg_stride && l->dest_bytes && l->dest && l->agg_out && l->aggs && l->agg_nodes &&
           l->x_src && l->w_src;
}

static void free_lists(node_lists *l) {
    fedc_free(l->base);
    fedc_free(l->args);
    fedc_free(l->arg_stride);
    fedc_free(l->dest_bytes);
    fedc_free(l->dest);
    fedc_free(l->agg_out);
    fedc_free(l->aggs);
    fedc_free(l->agg_nodes);
    fedc_free(l->x_src);
    fedc_free(l->w_src);
}

static fedc_status allocate(fedc_executor *ex) {
    int n = ex->p->n ? ex->p->n : 1;
    int max_in = 1;
    for (int v = 0; v < ex->p->n; v++)
        if (ex->p->nodes[v].nin > max_in) max_in = ex->p->nodes[v].nin;
    ex->plan = fedc_calloc((size_t)n, sizeof *ex->plan);
    ex->bound = fedc_calloc((size_t)n, sizeof *ex->bound);
    ex->into = fedc_calloc((size_t)n, sizeof *ex->into);
    ex->cohorts = fedc_calloc((size_t)n, sizeof *ex->cohorts);
    ex->folds = fedc_calloc((size_t)n, sizeof *ex->folds);
    ex->carries = fedc_calloc((size_t)n, sizeof *ex->carries);
    ex->operands = fedc_calloc((size_t)max_in, sizeof *ex->operands);
    ex->strides = fedc_calloc((size_t)max_in, sizeof *ex->strides);
    ex->dropped = fedc_calloc((size_t)(ex->clients ? ex->clients : 1), 1);
    ex->local = fedc_calloc((size_t)(ex->clients ? ex->clients : 1), sizeof *ex->local);
    ex->aggs = fedc_calloc((size_t)n, sizeof *ex->aggs);
    if (ex->opt.profile) {
        ex->op_seconds = fedc_calloc(FEDC_OP_COUNT, sizeof *ex->op_seconds);
        ex->op_calls = fedc_calloc(FEDC_OP_COUNT, sizeof *ex->op_calls);
        if (!ex->op_seconds || !ex->op_calls) return fedc_error(FEDC_ENOMEM, "executor: out of memory");
    }
    bool lists = allocate_lists(&ex->lists, lists_width(ex->p));
    if (!ex->plan || !ex->bound || !ex->into || !ex->cohorts || !ex->folds || !ex->carries || !ex->operands || !ex->strides ||
        !ex->dropped || !ex->local || !ex->aggs || !lists)
        return fedc_error(FEDC_ENOMEM, "executor: out of memory");
    for (int v = 0; v < ex->p->n; v++)
        if (is_aggregation(ex->p->nodes[v].op) && !(ex->aggs[v] = fedc_calloc(1, sizeof *ex->aggs[v])))
            return fedc_error(FEDC_ENOMEM, "executor: out of memory");
    plan_placement(ex);
    fedc_status st = plan_epilogues(ex);
    if (!st) plan_pairs(ex);
    if (!st) st = plan(ex);
    if (st) return st;
    ex->block = fedc_malloc(ex->block_bytes);
    ex->scratch = ex->scratch_bytes ? fedc_malloc(ex->scratch_bytes) : NULL;
    if (!ex->block || (ex->scratch_bytes && !ex->scratch))
        return fedc_error(FEDC_ENOMEM, "executor: cannot allocate %zu bytes of buffers and %zu of scratch",
                          ex->block_bytes, ex->scratch_bytes);
    st = create_cohorts(ex);
    return st ? st : fedc_executor_balance(ex, NULL);
}

static fedc_status check_options(const fedc_program *p, const fedc_exec_options *o) {
    if (o->threads < 0) return fedc_error(FEDC_EINVAL, "executor: threads is %d; use 0 or more", o->threads);
    if (o->clients < 0) return fedc_error(FEDC_EINVAL, "executor: clients is %d; use 0 or more", o->clients);
    if (federated(p) && o->clients < 1)
        return fedc_error(FEDC_EINVAL, "executor: the program has federated values; set options.clients to the "
                          "cohort's size");
    return FEDC_OK;
}

fedc_status fedc_executor_create(fedc_executor **out, const fedc_program *program, const fedc_exec_options *options) {
    *out = NULL;
    fedc_exec_options defaults = {0};
    const fedc_exec_options *o = options ? options : &defaults;
    fedc_status st = fedc_program_verify(program);
    if (!st) st = check_options(program, o);
    if (st) return st;
    fedc_kernels_init();
    fedc_executor *ex = fedc_calloc(1, sizeof *ex);
    if (!ex) return fedc_error(FEDC_ENOMEM, "executor: out of memory");
    ex->opt = *o;
    ex->clients = federated(program) ? o->clients : 0;
    ex->k = o->reference_kernels ? &fedc_kernels_ref : &fedc_kernels_fast;
    st = fedc_program_clone(program, &ex->p);
    if (!st) st = allocate(ex);
    if (st) {
        fedc_executor_destroy(ex);
        return st;
    }
    *out = ex;
    return FEDC_OK;
}

void fedc_executor_destroy(fedc_executor *ex) {
    if (!ex) return;
    for (int v = 0; ex->cohorts && v < ex->p->n; v++) fedc__cohort_destroy(ex->cohorts[v]);
    for (int v = 0; ex->folds && v < ex->p->n; v++) fedc_executor_destroy(ex->folds[v]);
    for (int v = 0; ex->carries && v < ex->p->n; v++) fedc_free(ex->carries[v]);
    fedc_free(ex->folds);
    fedc_free(ex->carries);
    fedc_free(ex->op_seconds);
    fedc_free(ex->op_calls);
    fedc__backend_destroy(ex->backend);
    for (int v = 0; ex->aggs && v < ex->p->n; v++) {
        if (ex->aggs[v]) fedc__agg_free(ex->aggs[v]);
        fedc_free(ex->aggs[v]);
    }
    fedc_free(ex->aggs);
    fedc_pool_destroy(ex->kernel_pool);
    fedc_program_destroy(ex->p);
    fedc_free(ex->plan);
    fedc_free(ex->epi);
    fedc_free(ex->bound);
    fedc_free(ex->into);
    fedc_free(ex->cohorts);
    fedc_free(ex->operands);
    fedc_free(ex->strides);
    free_lists(&ex->lists);
    fedc_free(ex->dropped);
    fedc_free(ex->local);
    fedc_free(ex->block);
    fedc_free(ex->scratch);
    fedc_free(ex);
}

/* ------------------------------------------------------------------ run -- */

fedc_status fedc_executor_bind(fedc_executor *ex, const char *name, const void *data) {
    fedc_value v = fedc_program_find_input(ex->p, name);
    if (v == FEDC_NONE) return fedc_error(FEDC_ENOTFOUND, "executor_bind: the program has no input \"%s\"", name);
    if (!data) return fedc_error(FEDC_EINVAL, "executor_bind: data for input \"%s\" is NULL", name);
    ex->bound[v] = data;
    return FEDC_OK;
}

static const void *value_memory(const fedc_executor *ex, fedc_value v) {
    for (;;) {
        const value_plan *vp = &ex->plan[v];
        switch (vp->kind) {
        case MEM_BOUND: return ex->bound[v];
        case MEM_CONSTANT: return ex->p->nodes[v].data;
        case MEM_BLOCK: return ex->into[v] ? ex->into[v] : ex->block + vp->offset;
        case MEM_ALIAS: v = ex->p->nodes[v].in[0]; continue;
        default: return NULL;
        }
    }
}

/* Where node v writes its value: its place in the block, or where a fold's step
 * asked for it (compute_into). */
static void *written(const fedc_executor *ex, fedc_value v) {
    return ex->into[v] ? ex->into[v] : ex->block + ex->plan[v].offset;
}

static void gather_operands(fedc_executor *ex, const fedc__node *n) {
    for (int i = 0; i < n->nin; i++) {
        ex->operands[i] = value_memory(ex, n->in[i]);
        ex->strides[i] = ex->plan[n->in[i]].stride;
    }
}

static fedc_status client_failed(fedc_executor *ex, int i, fedc_status st) {
    if (ex->opt.on_client_failure == FEDC_DROP_CLIENT) {
        ex->dropped[i] = 1;
        return FEDC_OK;
    }
    char msg[900];
    snprintf(msg, sizeof msg, "%s", fedc_errmsg());
    const char *id = ex->opt.client_ids ? ex->opt.client_ids[i] : NULL;
    return fedc_error(st, "client %d%s%s%s: %s", i, id ? " (\"" : "", id ? id : "", id ? "\")" : "", msg);
}

/* An array op on clients values runs once per client, in client order. */
static fedc_status run_per_client(fedc_executor *ex, fedc__step *s) {
    const void **base = ex->lists.base;
    size_t bytes = ex->plan[s->v].stride;
    for (int j = 0; j < s->n->nin; j++) base[j] = ex->operands[j];
    unsigned char *out = s->out;
    for (int i = 0; i < ex->clients; i++) {
        for (int j = 0; j < s->n->nin; j++) ex->operands[j] = (const char *)base[j] + (size_t)i * ex->strides[j];
        s->out = out + (size_t)i * bytes;
        fedc_status st = fedc__step_run(s);
        if (st && (st = client_failed(ex, i, st))) return st;
    }
    return FEDC_OK;
}

/* A broadcast or a clients constant that is an output is stored: one copy per client. */
static void run_stored_uniform(fedc_executor *ex, fedc__step *s) {
    const void *one = s->n->op == FEDC_OP_CONSTANT ? s->n->data : ex->operands[0];
    size_t bytes = ex->plan[s->v].stride;
    for (int i = 0; i < ex->clients; i++) memcpy((char *)s->out + (size_t)i * bytes, one, bytes);
}

static fedc_status run_map(fedc_executor *ex, fedc_value m);
static fedc_status run_fold(fedc_executor *ex, fedc_value f);

static fedc_status run_node_timed(fedc_executor *ex, fedc_value v);

/* A node, timed when profiling. Maps and folds are not counted themselves: their
 * bodies' executors count what they run. */
static fedc_status run_node(fedc_executor *ex, fedc_value v) {
    fedc__op op = ex->p->nodes[v].op;
    if (!ex->op_seconds || fedc__op_has_body(op)) return run_node_timed(ex, v);
    double t0 = fedc_seconds();
    fedc_status st = run_node_timed(ex, v);
    ex->op_seconds[op] += fedc_seconds() - t0;
    ex->op_calls[op]++;
    return st;
}

/* A conv2d heading an epilogue chain writes the chain's last value. */
static fedc_status run_epilogue(fedc_executor *ex, fedc_value v) {
    const epilogue *e = &ex->epi[v];
    gather_operands(ex, &ex->p->nodes[v]);
    fedc__step s = {ex->p, v, &ex->p->nodes[v], ex->k, written(ex, e->out), ex->operands,
                    ex->scratch, ex->clients, ex->strides, ex->dropped, NULL};
    return fedc__step_run_conv_epilogue(&s, value_memory(ex, e->bias), e->relu, e->pool ? &ex->p->nodes[e->out] : NULL);
}

/* The outer node of a pair computes the inner op on the fly. */
static fedc_status run_pair(fedc_executor *ex, fedc_value v) {
    const fedc__node *n = &ex->p->nodes[v], *in = &ex->p->nodes[ex->plan[v].pair];
    fedc_dtype dt = n->type.dtype;
    int64_t count = fedc_type_count(&n->type);
    void *out = written(ex, v);
    if (n->op == FEDC_OP_SELECT) {
        int64_t sa = fedc_type_count(&ex->p->nodes[n->in[1]].type) == count;
        int64_t sb = fedc_type_count(&ex->p->nodes[n->in[2]].type) == count;
        return ex->k->select_gt(dt, count, value_memory(ex, in->in[0]), value_memory(ex, in->in[1]),
                                value_memory(ex, n->in[1]), sa, value_memory(ex, n->in[2]), sb, out);
    }
    int g = scalar_of(ex->p, in->in[0], dt) ? 1 : 0;
    fedc_value product = ex->plan[v].product;
    if (product != FEDC_NONE) {
        gather_operands(ex, &ex->p->nodes[product]);
        fedc__step s = {ex->p, product, &ex->p->nodes[product], ex->k, out, ex->operands, ex->scratch, ex->clients,
                        ex->strides, ex->dropped, NULL};
        return fedc__step_run_matmul_sub_scaled(&s, value_memory(ex, n->in[0]), value_memory(ex, in->in[1 - g]));
    }
    return ex->k->sub_scaled(dt, count, value_memory(ex, n->in[0]), value_memory(ex, in->in[1 - g]),
                             value_memory(ex, in->in[g]), out);
}

static fedc_status run_node_timed(fedc_executor *ex, fedc_value v) {
    const fedc__node *n = &ex->p->nodes[v];
    value_plan *vp = &ex->plan[v];
    if (n->op == FEDC_OP_MAP) return run_map(ex, v);
    if (n->op == FEDC_OP_FOLD) return run_fold(ex, v);
    if (ex->epi && ex->epi[v].out != FEDC_NONE) return run_epilogue(ex, v);
    if (vp->kind != MEM_BLOCK || vp->fused_into != FEDC_NONE || n->op == FEDC_OP_RESULT || vp->def != v) return FEDC_OK;
    if (vp->pair != FEDC_NONE) return run_pair(ex, v);
    gather_operands(ex, n);
    fedc__step s = {ex->p, v, n, ex->k, written(ex, v), ex->operands, ex->scratch, ex->clients, ex->strides,
                    ex->dropped, ex->aggs[v]};
    if (n->op == FEDC_OP_BROADCAST || n->op == FEDC_OP_CONSTANT) {
        run_stored_uniform(ex, &s);
        return FEDC_OK;
    }
    if (n->type.placement == FEDC_CLIENTS) return run_per_client(ex, &s);
    return fedc__step_run(&s);
}

fedc_status fedc_executor_run(fedc_executor *ex) {
    const fedc_program *p = ex->p;
    for (int v = 0; v < p->n; v++) {
        const fedc__node *n = &p->nodes[v];
        if (n->op == FEDC_OP_INPUT && !ex->bound[v])
            return fedc_error(FEDC_EINVAL, "executor_run: input \"%s\" is not bound", n->name);
    }
    if (ex->clients) memset(ex->dropped, 0, (size_t)ex->clients);
    fedc_pool *outer = ex->kernel_pool ? fedc_kernels_set_pool(ex->kernel_pool) : NULL;
    fedc_status st = FEDC_OK;
    for (int v = 0; !st && v < p->n; v++) st = run_node(ex, v);
    if (ex->kernel_pool) fedc_kernels_set_pool(outer);
    return st;
}

/* ------------------------------------------------------------ results -- */

/* The memory of node b's (a map's or a fold's) result nodes: dest[k] for output
 * k, and its size; NULL when no result node stores output k. */
static void result_memory(const fedc_executor *ex, fedc_value b, void **dest, size_t *bytes, int max) {
    for (int k = 0; k < max; k++) dest[k] = NULL, bytes[k] = 0;
    for (int v = b + 1; v < ex->p->n; v++) {
        const fedc__node *u = &ex->p->nodes[v];
        int64_t k = fedc__attr_int(u, FEDC_ATTR_INDEX, 0);
        if (u->op == FEDC_OP_RESULT && u->in[0] == b && ex->plan[v].kind == MEM_BLOCK && k < max && !dest[k]) {
            dest[k] = ex->block + ex->plan[v].offset;
            bytes[k] = value_bytes(ex, v);
        }
    }
}

/* A second result node for the same output (a program may hold one) gets a copy. */
static void copy_duplicate_results(fedc_executor *ex, fedc_value b, void *const *dest) {
    for (int v = b + 1; v < ex->p->n; v++) {
        const fedc__node *u = &ex->p->nodes[v];
        if (u->op != FEDC_OP_RESULT || u->in[0] != b || ex->plan[v].kind != MEM_BLOCK) continue;
        void *mine = ex->block + ex->plan[v].offset, *first = dest[fedc__attr_int(u, FEDC_ATTR_INDEX, 0)];
        if (mine != first) memcpy(mine, first, value_bytes(ex, v));
    }
}

/* --------------------------------------------------------------- maps -- */

/* Where an aggregation fused into map m reads an operand: a result of m, or
 * memory computed before m (which may be another map's stored result). */
static fedc__source source_of(const fedc_executor *ex, fedc_value m, fedc_value operand) {
    const fedc__node *o = &ex->p->nodes[operand];
    if (o->op == FEDC_OP_RESULT && o->in[0] == m) {
        fedc__source s = {(int)fedc__attr_int(o, FEDC_ATTR_INDEX, 0), NULL, 0};
        return s;
    }
    fedc__source s = {-1, value_memory(ex, operand), ex->plan[operand].stride};
    return s;
}

static fedc_status run_map(fedc_executor *ex, fedc_value m) {
    const fedc_program *p = ex->p;
    const fedc__node *n = &p->nodes[m];
    node_lists *l = &ex->lists;
    const void **args = l->args;
    size_t *arg_stride = l->arg_stride, *dest_bytes = l->dest_bytes;
    void **dest = l->dest, **agg_out = l->agg_out;
    fedc__agg **aggs = l->aggs;
    const fedc__node **agg_nodes = l->agg_nodes;
    fedc__source *x_src = l->x_src, *w_src = l->w_src;
    int naggs = 0;
    for (int j = 0; j < n->nin; j++) {
        args[j] = value_memory(ex, n->in[j]);
        arg_stride[j] = ex->plan[n->in[j]].stride;
    }
    result_memory(ex, m, dest, l->dest_bytes, l->width);
    for (int v = m + 1; v < p->n; v++) {
        const fedc__node *u = &p->nodes[v];
        if (ex->plan[v].fused_into != m) continue;
        agg_nodes[naggs] = u;
        aggs[naggs] = ex->aggs[v];
        agg_out[naggs] = ex->block + ex->plan[v].offset;
        x_src[naggs] = source_of(ex, m, u->in[0]);
        w_src[naggs] = u->nin == 2 ? source_of(ex, m, u->in[1]) : (fedc__source){-1, NULL, 0};
        naggs++;
    }
    fedc__backend *b = ex->backend;
    fedc__map_job job = {ex->clients, ex->nlocal, ex->local, n->nin, args, arg_stride, dest, naggs, aggs, agg_nodes,
                         agg_out, x_src, w_src, ex->opt.check_finite, ex->opt.on_client_failure == FEDC_DROP_CLIENT,
                         ex->dropped, ex->opt.client_ids};
    fedc_status st = b->agree(b, fedc__cohort_run(ex->cohorts[m], b, &job));
    /* join the ranks' blocks: stored results, who was dropped, the aggregations */
    for (int k = 0; !st && k < l->width; k++)
        if (dest[k]) st = b->allgather(b, dest[k], dest_bytes[k] / (size_t)ex->clients, &ex->split);
    if (!st && job.drop_failed) st = b->allgather(b, ex->dropped, 1, &ex->split);
    if (!st) st = b->combine(b, aggs, naggs);
    if (!st) copy_duplicate_results(ex, m, dest);
    return st;
}

/* --------------------------------------------------------------- folds -- */


/* Has the body's output j computed straight into `to` (a carry of the next step)
 * when the body computes it into memory of its own; a carry the body passes
 * through, or computes in a fused chain, is copied after the step as before.
 * For the EMNIST CNN this saves copying the 4.8 MB of parameters at every SGD step. */
static void compute_into(fedc_executor *sub, int j, void *to) {
    fedc_value v = sub->p->outputs[j].value;
    const value_plan *vp = &sub->plan[v];
    bool own = vp->kind == MEM_BLOCK && vp->def == v && vp->fused_into == FEDC_NONE &&
               sub->p->nodes[v].op != FEDC_OP_RESULT && !fedc__op_has_body(sub->p->nodes[v].op);
    sub->into[v] = own ? to : NULL;
}

/* One step t: the body reads the carries (from `in`) and row t of each sequence;
 * the new carries go to `out` and the per-step outputs to row t. The body's outputs
 * may be its inputs (a carry passed through, or recorded), so the two carry
 * buffers must differ. */
static fedc_status fold_step(fedc_executor *ex, fedc_value f, int64_t t, void *const *dest, unsigned char *in,
                             unsigned char *out) {
    const fedc__node *n = &ex->p->nodes[f];
    const fedc_program *body = fedc__body(ex->p, n);
    fedc_executor *sub = ex->folds[f];
    int k = (int)fedc__attr_int(n, FEDC_ATTR_CARRIES, 0), m = n->nin - k - 1;
    unsigned char *carry = in;
    for (int i = 0; i < k + m; i++) {
        const fedc_type *a = &ex->p->nodes[n->in[i]].type;
        const void *at = carry;
        if (i < k) carry += round_up(fedc_type_bytes(a));
        else at = (const char *)value_memory(ex, n->in[i]) + (size_t)t * (fedc_type_bytes(a) / (size_t)a->dims[0]);
        fedc_executor_bind(sub, fedc_program_input_name(body, i), at);
    }
    carry = out;
    for (int j = 0; j < k; j++) {
        compute_into(sub, j, carry);
        carry += round_up(fedc_type_bytes(&ex->p->nodes[n->in[j]].type));
    }
    fedc_status st = fedc_executor_run(sub);
    carry = out;
    for (int j = 0; !st && j < body->noutputs; j++) {
        const void *y = NULL;
        fedc_type yt = {0};
        st = fedc_executor_output(sub, fedc_program_output_name(body, j), &y, &yt);
        if (st) break;
        size_t bytes = fedc_type_bytes(&yt);
        if (j < k) {
            if (y != carry) memcpy(carry, y, bytes);
            carry += round_up(bytes);
        } else if (dest[j]) {
            memcpy((char *)dest[j] + (size_t)t * bytes, y, bytes);
        }
    }
    return st;
}

static fedc_status run_fold(fedc_executor *ex, fedc_value f) {
    const fedc__node *n = &ex->p->nodes[f];
    const fedc_program *body = fedc__body(ex->p, n);
    int k = (int)fedc__attr_int(n, FEDC_ATTR_CARRIES, 0);
    int64_t steps = ex->p->nodes[n->in[k]].type.dims[0];
    int32_t length = *(const int32_t *)value_memory(ex, n->in[n->nin - 1]);
    if (length < 0 || length > steps)
        return fedc_error(FEDC_ERANGE, "%%%d (fold): length %d is outside [0, %lld], the sequences' leading dimension",
                          f, (int)length, (long long)steps);
    void **dest = ex->lists.dest;
    size_t *dest_bytes = ex->lists.dest_bytes;
    result_memory(ex, f, dest, dest_bytes, ex->lists.width);
    size_t half = 0;
    for (int i = 0; i < k; i++) half += round_up(fedc_type_bytes(&ex->p->nodes[n->in[i]].type));
    unsigned char *cur = ex->carries[f], *next = cur + half, *carry = cur;
    for (int i = 0; i < k; i++) { /* carries start as the initial values */
        size_t bytes = fedc_type_bytes(&ex->p->nodes[n->in[i]].type);
        memcpy(carry, value_memory(ex, n->in[i]), bytes);
        carry += round_up(bytes);
    }
    for (int j = k; j < body->noutputs; j++) /* rows past the length stay zero */
        if (dest[j]) memset(dest[j], 0, dest_bytes[j]);
    bool reverse = fedc__attr_int(n, FEDC_ATTR_REVERSE, 0) != 0;
    for (int64_t s = 0; s < length; s++) {
        fedc_status st = fold_step(ex, f, reverse ? length - 1 - s : s, dest, cur, next);
        unsigned char *swap = cur;
        cur = next;
        next = swap;
        if (st) {
            char msg[900];
            snprintf(msg, sizeof msg, "%s", fedc_errmsg());
            return fedc_error(st, "%%%d (fold) at step %lld: %s", f, (long long)(reverse ? length - 1 - s : s), msg);
        }
    }
    carry = cur;
    for (int i = 0; i < k; i++) {
        size_t bytes = fedc_type_bytes(&ex->p->nodes[n->in[i]].type);
        if (dest[i]) memcpy(dest[i], carry, bytes);
        carry += round_up(bytes);
    }
    copy_duplicate_results(ex, f, dest);
    return FEDC_OK;
}

/* -------------------------------------------------------------- results -- */

fedc_status fedc_executor_output(const fedc_executor *ex, const char *name, const void **data, fedc_type *type) {
    fedc_value v = fedc_program_find_output(ex->p, name);
    if (v == FEDC_NONE) return fedc_error(FEDC_ENOTFOUND, "executor_output: the program has no output \"%s\"", name);
    *data = value_memory(ex, v);
    if (type) *type = ex->p->nodes[v].type;
    return FEDC_OK;
}

fedc_status fedc_executor_balance(fedc_executor *ex, const double *work) {
    for (int i = 0; work && i < ex->clients; i++)
        if (!isfinite(work[i]) || work[i] < 0)
            return fedc_error(FEDC_EINVAL, "executor_balance: client %d's work is %g; use a finite number >= 0", i,
                              work[i]);
    int rank = ex->backend ? ex->backend->rank : 0, ranks = ex->backend ? ex->backend->ranks : 1;
    if (work) fedc__split_balanced(&ex->split, ex->clients, ranks, work);
    else fedc__split_even(&ex->split, ex->clients, ranks);
    ex->nlocal = fedc__split_clients(&ex->split, rank, ex->local);
    return FEDC_OK;
}

int fedc_executor_local_clients(const fedc_executor *ex, int *clients, int max) {
    for (int k = 0; k < ex->nlocal && k < max; k++) clients[k] = ex->local[k];
    return ex->nlocal;
}

void fedc_executor_block(const fedc_executor *ex, int *first, int *end) {
    *first = ex->nlocal ? ex->local[0] : 0;
    *end = ex->nlocal ? ex->local[ex->nlocal - 1] + 1 : 0;
}

size_t fedc_executor_planned_bytes(const fedc_executor *ex) { return ex->block_bytes; }
size_t fedc_executor_unplanned_bytes(const fedc_executor *ex) { return ex->unplanned_bytes; }

/* Adds ex's profile and its bodies' into seconds/calls. */
static void collect_profile(const fedc_executor *ex, double *seconds, int64_t *calls) {
    for (int i = 0; i < FEDC_OP_COUNT; i++) seconds[i] += ex->op_seconds[i], calls[i] += ex->op_calls[i];
    for (int v = 0; v < ex->p->n; v++) {
        if (ex->folds[v]) collect_profile(ex->folds[v], seconds, calls);
        if (!ex->cohorts[v]) continue;
        int n;
        fedc_executor *const *workers = fedc__cohort_executors(ex->cohorts[v], &n);
        for (int w = 0; w < n; w++) collect_profile(workers[w], seconds, calls);
    }
}

fedc_status fedc_executor_profile(const fedc_executor *ex, FILE *out) {
    if (!ex->op_seconds) return fedc_error(FEDC_EINVAL, "executor_profile: the executor was created without profile");
    double seconds[FEDC_OP_COUNT] = {0}, total = 0;
    int64_t calls[FEDC_OP_COUNT] = {0};
    int order[FEDC_OP_COUNT], n = 0;
    collect_profile(ex, seconds, calls);
    for (int i = 0; i < FEDC_OP_COUNT; i++) {
        total += seconds[i];
        if (calls[i]) order[n++] = i;
    }
    for (int i = 1; i < n; i++) /* most expensive first */
        for (int j = i; j > 0 && seconds[order[j]] > seconds[order[j - 1]]; j--) {
            int tmp = order[j];
            order[j] = order[j - 1];
            order[j - 1] = tmp;
        }
    fprintf(out, "%-24s %10s %10s %7s %12s\n", "op", "calls", "seconds", "share", "us/call");
    for (int k = 0; k < n; k++) {
        int i = order[k];
        fprintf(out, "%-24s %10lld %10.3f %6.1f%% %12.1f\n", fedc__ops[i].name, (long long)calls[i], seconds[i],
                total > 0 ? 100 * seconds[i] / total : 0, 1e6 * seconds[i] / (double)calls[i]);
    }
    fprintf(out, "%-24s %10s %10.3f\n", "total", "", total);
    return FEDC_OK;
}

int fedc_executor_dropped(const fedc_executor *ex, int *clients, int max) {
    int count = 0;
    for (int i = 0; i < ex->clients; i++)
        if (ex->dropped[i] && count++ < max) clients[count - 1] = i;
    return count;
}
