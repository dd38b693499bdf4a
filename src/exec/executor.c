/* The executor: creates a program's plan (executor_plan.h: where every value
 * lives, which nodes run fused), then runs it without allocating: array ops on
 * server and local values, ops on clients values once per client in client order,
 * maps over the cohort (src/exec/cohort.c) and folds over sequences. */
#include <math.h>
#include <string.h>
#include <time.h>

#include "exec/executor_plan.h"

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
    fedc_exec_options o = {.device = ex->device->name, .profile = ex->opt.profile};
    size_t bytes = 0;
    for (int i = 0; i < fedc__attr_int(n, FEDC_ATTR_CARRIES, 0); i++) bytes += fedc__round_up(fedc_type_bytes(&ex->p->nodes[n->in[i]].type));
    ex->carries[v] = ex->device->buffers->alloc(2 * bytes + 1); /* two halves: read one, write the other */
    if (!ex->carries[v]) return fedc_error(FEDC_ENOMEM, "executor: out of memory for a fold's carries");
    return fedc_executor_create(&ex->folds[v], body, &o);
}

/* Threads run clients; a program without maps has none to run, so its threads go
 * to the kernels of each step (fedc__kernels_set_pool: the same bits either way).
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
        aggregations += fedc__is_aggregation(n->op);
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
    l->by_group = fedc_calloc(w, sizeof *l->by_group);
    return l->by_group && l->base && l->args && l->arg_stride && l->dest_bytes && l->dest && l->agg_out && l->aggs && l->agg_nodes &&
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
    fedc_free(l->by_group);
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
    ex->absent = fedc_calloc((size_t)(ex->clients ? ex->clients : 1), 1);
    ex->local = fedc_calloc((size_t)(ex->clients ? ex->clients : 1), sizeof *ex->local);
    ex->aggs = fedc_calloc((size_t)n, sizeof *ex->aggs);
    if (ex->opt.profile) {
        ex->op_seconds = fedc_calloc(FEDC_OP_COUNT, sizeof *ex->op_seconds);
        ex->op_calls = fedc_calloc(FEDC_OP_COUNT, sizeof *ex->op_calls);
        if (!ex->op_seconds || !ex->op_calls) return fedc_error(FEDC_ENOMEM, "executor: out of memory");
    }
    bool lists = allocate_lists(&ex->lists, lists_width(ex->p));
    if (!ex->plan || !ex->bound || !ex->into || !ex->cohorts || !ex->folds || !ex->carries || !ex->operands || !ex->strides ||
        !ex->dropped || !ex->absent || !ex->local || !ex->aggs || !lists)
        return fedc_error(FEDC_ENOMEM, "executor: out of memory");
    for (int v = 0; v < ex->p->n; v++)
        if (fedc__is_aggregation(ex->p->nodes[v].op)) {
            if (!(ex->aggs[v] = fedc_calloc(1, sizeof *ex->aggs[v]))) return fedc_error(FEDC_ENOMEM, "executor: out of memory");
            ex->aggs[v]->group_start = ex->group_start; /* sum_up and the like run per group */
            ex->aggs[v]->groups = ex->groups;
        }
    fedc__plan_placement(ex);
    fedc_status st = fedc__plan_epilogues(ex);
    if (!st) fedc__plan_pairs(ex), fedc__plan_saved(ex), fedc__plan_pool_select(ex);
    if (!st) st = fedc__plan_memory(ex);
    if (st) return st;
    ex->block = ex->device->buffers->alloc(ex->block_bytes);
    ex->scratch = ex->scratch_bytes ? ex->device->buffers->alloc(ex->scratch_bytes) : NULL;
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
    const fedc__device *device = NULL;
    fedc_status st = fedc_program_verify(program);
    if (!st) st = check_options(program, o);
    if (!st) st = fedc__device_of(o, &device);
    if (!st) st = fedc__device_check(device, program);
    if (!st) st = device->init(device);
    if (st) return st;
    fedc_executor *ex = fedc_calloc(1, sizeof *ex);
    if (!ex) return fedc_error(FEDC_ENOMEM, "executor: out of memory");
    ex->opt = *o;
    /* from here on the device alone says which kernels run (maps' and folds'
     * bodies get its name) */
    ex->opt.device = device->name, ex->opt.reference_kernels = false;
    ex->device = device;
    ex->k = device->kernels;
    ex->clients = federated(program) ? o->clients : 0;
    st = fedc_program_clone(program, &ex->p);
    if (!st) st = fedc__hier_create(ex);
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
    for (int v = 0; ex->carries && v < ex->p->n; v++) ex->device->buffers->free(ex->carries[v]);
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
    fedc__hier_destroy(ex);
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
    fedc_free(ex->absent);
    fedc_free(ex->local);
    fedc_free(ex->work_copy);
    ex->device->buffers->free(ex->block);
    ex->device->buffers->free(ex->scratch);
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

/* Where node v writes its value: its place in the block, or where the caller
 * asked for it (fedc__executor_compute_into: a fold's next carry, a map's slot). */
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
        if (ex->absent[i]) { /* not in the cohort: zeros, as a dropped client's results */
            memset(out + (size_t)i * bytes, 0, bytes);
            continue;
        }
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

/* A conv2d heading an epilogue chain writes the chain's last value; a matmul its
 * bias add's value (and a gelu of it). */
static fedc_status run_epilogue(fedc_executor *ex, fedc_value v) {
    const epilogue *e = &ex->epi[v];
    gather_operands(ex, &ex->p->nodes[v]);
    fedc__step s = {ex->p, v, &ex->p->nodes[v], ex->k, written(ex, e->out), ex->operands,
                    ex->scratch, ex->clients, ex->strides, ex->dropped, NULL};
    if (ex->p->nodes[v].op == FEDC_OP_MATMUL)
        return fedc__step_run_matmul_bias(&s, value_memory(ex, e->bias), e->act != FEDC_NONE ? written(ex, e->act) : NULL);
    return fedc__step_run_conv_epilogue(&s, value_memory(ex, e->bias), e->relu, e->pool ? &ex->p->nodes[e->out] : NULL);
}

/* The outer node of a pair computes the inner op on the fly. */
static fedc_status run_pair(fedc_executor *ex, fedc_value v) {
    const fedc__node *n = &ex->p->nodes[v], *in = &ex->p->nodes[ex->plan[v].pair];
    fedc_dtype dt = n->type.dtype;
    int64_t count = fedc_type_count(&n->type);
    void *out = written(ex, v);
    fedc_value product = ex->plan[v].product;
    if (n->op == FEDC_OP_SELECT && product != FEDC_NONE) { /* relu's derivative on a pool's gradient */
        gather_operands(ex, &ex->p->nodes[product]);
        fedc__step s = {ex->p, product, &ex->p->nodes[product], ex->k, out, ex->operands, ex->scratch, ex->clients,
                        ex->strides, ex->dropped, NULL};
        return fedc__step_run_pool_grad_select(&s, ex->block + ex->plan[ex->plan[product].saved].saved_offset,
                                               value_memory(ex, in->in[0]), value_memory(ex, in->in[1]),
                                               value_memory(ex, n->in[2]));
    }
    if (n->op == FEDC_OP_SELECT) {
        int64_t sa = fedc_type_count(&ex->p->nodes[n->in[1]].type) == count;
        int64_t sb = fedc_type_count(&ex->p->nodes[n->in[2]].type) == count;
        return ex->k->select_gt(dt, count, value_memory(ex, in->in[0]), value_memory(ex, in->in[1]),
                                value_memory(ex, n->in[1]), sa, value_memory(ex, n->in[2]), sb, out);
    }
    int g = fedc__scalar_of(ex->p, in->in[0], dt) ? 1 : 0;
    if (product != FEDC_NONE) {
        gather_operands(ex, &ex->p->nodes[product]);
        fedc__step s = {ex->p, product, &ex->p->nodes[product], ex->k, out, ex->operands, ex->scratch, ex->clients,
                        ex->strides, ex->dropped, NULL};
        return fedc__step_run_matmul_sub_scaled(&s, value_memory(ex, n->in[0]), value_memory(ex, in->in[1 - g]));
    }
    return ex->k->sub_scaled(dt, count, value_memory(ex, n->in[0]), value_memory(ex, in->in[1 - g]),
                             value_memory(ex, in->in[g]), out);
}

/* A node that saves bytes for its derivatives, or reads them (plan_saved). */
static fedc_status run_saved(fedc_executor *ex, fedc_value v) {
    const fedc__node *n = &ex->p->nodes[v];
    gather_operands(ex, n);
    fedc__step s = {ex->p, v, n, ex->k, written(ex, v), ex->operands, ex->scratch, ex->clients, ex->strides,
                    ex->dropped, NULL};
    return fedc__step_run_saved(&s, ex->block + ex->plan[ex->plan[v].saved].saved_offset, ex->plan[v].saved == v);
}

static fedc_status run_node_timed(fedc_executor *ex, fedc_value v) {
    const fedc__node *n = &ex->p->nodes[v];
    value_plan *vp = &ex->plan[v];
    if (n->op == FEDC_OP_MAP) return run_map(ex, v);
    if (n->op == FEDC_OP_FOLD) return run_fold(ex, v);
    if (ex->epi && ex->epi[v].out != FEDC_NONE) return run_epilogue(ex, v);
    if (vp->kind != MEM_BLOCK || vp->fused_into != FEDC_NONE || n->op == FEDC_OP_RESULT || vp->def != v) return FEDC_OK;
    if (vp->pair != FEDC_NONE) return run_pair(ex, v);
    if (vp->saved != FEDC_NONE) return run_saved(ex, v);
    gather_operands(ex, n);
    fedc__step s = {ex->p, v, n, ex->k, written(ex, v), ex->operands, ex->scratch, ex->clients, ex->strides,
                    ex->dropped, ex->aggs[v]};
    if (fedc__hier_runs(n)) return fedc__hier_run(ex, &s); /* a level's primitive, or @groups values */
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
    if (ex->clients) memcpy(ex->dropped, ex->absent, (size_t)ex->clients); /* absent: left out of everything */
    fedc_status groups = fedc__hier_check_run(ex);
    if (groups) return groups;
    fedc_pool *outer = ex->kernel_pool ? fedc__kernels_set_pool(ex->kernel_pool) : NULL;
    fedc_status st = FEDC_OK;
    for (int v = 0; !st && v < p->n; v++) st = run_node(ex, v);
    if (ex->kernel_pool) fedc__kernels_set_pool(outer);
    fedc_status synced = ex->device->synchronize(ex->device);
    return st ? st : synced;
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
            bytes[k] = fedc__value_bytes(ex, v);
        }
    }
}

/* A second result node for the same output (a program may hold one) gets a copy. */
static void copy_duplicate_results(fedc_executor *ex, fedc_value b, void *const *dest) {
    for (int v = b + 1; v < ex->p->n; v++) {
        const fedc__node *u = &ex->p->nodes[v];
        if (u->op != FEDC_OP_RESULT || u->in[0] != b || ex->plan[v].kind != MEM_BLOCK) continue;
        void *mine = ex->block + ex->plan[v].offset, *first = dest[fedc__attr_int(u, FEDC_ATTR_INDEX, 0)];
        if (mine != first) memcpy(mine, first, fedc__value_bytes(ex, v));
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

/* A robust_aggregate's attack operands, for its store: known before map m runs
 * (a result of m, which streams, cannot be one: the store would not have it). */
static void robust_attackers(const fedc_executor *ex, fedc_value m, const fedc__node *u, fedc__agg *a) {
    const void *in[6] = {NULL};
    size_t stride[6] = {0};
    for (int k = 2; k < u->nin && k < 6; k++) {
        fedc__source s = source_of(ex, m, u->in[k]);
        in[k] = s.base, stride[k] = s.stride;
    }
    fedc__agg_robust_attackers(a, ex->p, u, in, stride);
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
        l->by_group[j] = ex->plan[n->in[j]].by_group;
    }
    result_memory(ex, m, dest, l->dest_bytes, l->width);
    for (int v = m + 1; v < p->n; v++) {
        const fedc__node *u = &p->nodes[v];
        if (ex->plan[v].fused_into != m) continue;
        agg_nodes[naggs] = u;
        aggs[naggs] = ex->aggs[v];
        agg_out[naggs] = ex->block + ex->plan[v].offset;
        x_src[naggs] = source_of(ex, m, u->in[0]);
        w_src[naggs] = u->nin >= 2 ? source_of(ex, m, u->in[1]) : (fedc__source){-1, NULL, 0};
        robust_attackers(ex, m, u, aggs[naggs]);
        naggs++;
    }
    fedc__backend *b = ex->backend;
    fedc__map_job job = {ex->clients, ex->nlocal, ex->local, n->nin, args, arg_stride, dest, naggs, aggs, agg_nodes,
                         agg_out, x_src, w_src, ex->opt.check_finite, ex->opt.on_client_failure == FEDC_DROP_CLIENT,
                         ex->dropped, ex->opt.client_ids, ex->absent, ex->work, l->by_group, ex->client_group};
    if (n->type.placement == FEDC_GROUPS) { /* a map at the groups: every group here, in group places */
        fedc__hier_map_job(ex, &job);
        fedc_status st = fedc__cohort_run(ex->cohorts[m], b, &job);
        if (!st) copy_duplicate_results(ex, m, dest);
        return st;
    }
    fedc_status st = b->agree(b, fedc__cohort_run(ex->cohorts[m], b, &job));
    /* join the ranks' blocks: stored results, who was dropped, the aggregations */
    for (int k = 0; !st && k < l->width; k++)
        if (dest[k]) st = b->allgather(b, dest[k], dest_bytes[k] / (size_t)ex->clients, &ex->split);
    if (!st && job.drop_failed) st = b->allgather(b, ex->dropped, 1, &ex->split);
    if (!st) st = b->combine(b, aggs, naggs, &ex->split);
    if (!st) copy_duplicate_results(ex, m, dest);
    return st;
}

/* --------------------------------------------------------------- folds -- */


void fedc__executor_compute_into(fedc_executor *ex, int j, void *to) {
    fedc_value v = ex->p->outputs[j].value;
    const value_plan *vp = &ex->plan[v];
    bool own = vp->kind == MEM_BLOCK && vp->def == v && vp->fused_into == FEDC_NONE &&
               ex->p->nodes[v].op != FEDC_OP_RESULT && !fedc__op_has_body(ex->p->nodes[v].op);
    ex->into[v] = own ? to : NULL;
}

/* One step t: the body reads the carries (the fold's initial values at the first
 * step, `in` after) and row t of each sequence; the new carries go to `out`, or
 * at the last step to the fold's results (where it keeps them), and the per-step outputs
 * to row t. The body's outputs may be its inputs (a carry passed through, or
 * recorded), so the two carry buffers must differ. */
static fedc_status fold_step(fedc_executor *ex, fedc_value f, int64_t t, void *const *dest, const unsigned char *in,
                             unsigned char *out, bool first, bool last) {
    const fedc__node *n = &ex->p->nodes[f];
    const fedc_program *body = fedc__body(ex->p, n);
    fedc_executor *sub = ex->folds[f];
    int k = (int)fedc__attr_int(n, FEDC_ATTR_CARRIES, 0), m = n->nin - k - 1;
    for (int i = 0; i < k + m; i++) {
        const fedc_type *a = &ex->p->nodes[n->in[i]].type;
        const void *at = in;
        if (i < k) {
            if (first) at = value_memory(ex, n->in[i]);
            in += fedc__round_up(fedc_type_bytes(a));
        } else {
            at = (const char *)value_memory(ex, n->in[i]) + (size_t)t * (fedc_type_bytes(a) / (size_t)a->dims[0]);
        }
        fedc_executor_bind(sub, fedc_program_input_name(body, i), at);
    }
    unsigned char *carry = out;
    for (int j = 0; j < k; j++) {
        fedc__executor_compute_into(sub, j, last && dest[j] ? dest[j] : carry);
        carry += fedc__round_up(fedc_type_bytes(&ex->p->nodes[n->in[j]].type));
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
            void *to = last && dest[j] ? dest[j] : carry;
            if (y != to) memcpy(to, y, bytes);
            carry += fedc__round_up(bytes);
        } else if (dest[j]) {
            memcpy((char *)dest[j] + (size_t)t * bytes, y, bytes);
        }
    }
    return st;
}

/* Runs a fold's steps. Its carries take no copy in or out: the first step reads
 * the initial values where they are and the last writes the results (4.8 MB each
 * way for a client of the EMNIST CNN). That last step still reads the fold's
 * operands, which is safe because the memory plan places a fold's results while
 * its operands are live (plan_memory.c), so the two never share memory. */
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
    for (int i = 0; i < k; i++) half += fedc__round_up(fedc_type_bytes(&ex->p->nodes[n->in[i]].type));
    unsigned char *cur = ex->carries[f], *next = cur + half;
    for (int j = k; j < body->noutputs; j++) /* rows past the length stay zero */
        if (dest[j]) memset(dest[j], 0, dest_bytes[j]);
    bool reverse = fedc__attr_int(n, FEDC_ATTR_REVERSE, 0) != 0;
    for (int64_t s = 0; s < length; s++) {
        fedc_status st = fold_step(ex, f, reverse ? length - 1 - s : s, dest, cur, next, s == 0, s == length - 1);
        unsigned char *swap = cur;
        cur = next;
        next = swap;
        if (st) {
            char msg[900];
            snprintf(msg, sizeof msg, "%s", fedc_errmsg());
            return fedc_error(st, "%%%d (fold) at step %lld: %s", f, (long long)(reverse ? length - 1 - s : s), msg);
        }
    }
    for (int i = 0; i < k && length == 0; i++) /* no step: the results are the initial values */
        if (dest[i]) memcpy(dest[i], value_memory(ex, n->in[i]), fedc_type_bytes(&ex->p->nodes[n->in[i]].type));
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
    /* the copy is kept for the executor's life: fedc train balances every round */
    if (work && !ex->work_copy &&
        !(ex->work_copy = fedc_malloc((size_t)(ex->clients ? ex->clients : 1) * sizeof *ex->work_copy)))
        return fedc_error(FEDC_ENOMEM, "executor_balance: out of memory for %d clients' work", ex->clients);
    if (work) memcpy(ex->work_copy, work, (size_t)ex->clients * sizeof *work);
    ex->work = work ? ex->work_copy : NULL;
    fedc__executor_split(ex);
    return FEDC_OK;
}

void fedc__executor_split(fedc_executor *ex) {
    int rank = ex->backend ? ex->backend->rank : 0, ranks = ex->backend ? ex->backend->ranks : 1;
    bool in_groups = ex->clients && (ex->groups > 1 || ex->group_start[1] < ex->clients); /* else one tree */
    if (in_groups) fedc__split_groups(&ex->split, ex->clients, ranks, ex->group_start, ex->groups, ex->work);
    else if (ex->work) fedc__split_balanced(&ex->split, ex->clients, ranks, ex->work);
    else fedc__split_even(&ex->split, ex->clients, ranks);
    ex->nlocal = fedc__split_clients(&ex->split, rank, ex->local);
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

int fedc_executor_robust_kept(const fedc_executor *ex, int *clients, int max) {
    for (int v = 0; ex->aggs && v < ex->p->n; v++) {
        const fedc__agg *a = ex->aggs[v];
        if (!a || ex->p->nodes[v].op != FEDC_OP_ROBUST_AGGREGATE) continue;
        for (int i = 0; i < a->robust_nkept && i < max; i++) clients[i] = a->robust_kept[i];
        return a->robust_nkept;
    }
    return 0;
}

int fedc_executor_dropped(const fedc_executor *ex, int *clients, int max) {
    int count = 0;
    for (int i = 0; i < ex->clients; i++)
        if (ex->dropped[i] && !ex->absent[i] && count++ < max) clients[count - 1] = i;
    return count;
}

fedc_status fedc_executor_set_absent(fedc_executor *ex, const uint8_t *absent) {
    if (!ex->clients) return fedc_error(FEDC_EINVAL, "executor_set_absent: the program has no clients");
    for (int i = 0; i < ex->clients; i++) ex->absent[i] = absent && absent[i];
    return FEDC_OK;
}
