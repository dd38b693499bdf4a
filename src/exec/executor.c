/* The executor: plans a program's buffers once, then runs it without allocating.
 *
 * Planning walks the program in order. Each computed value gets an offset in one
 * block, at the lowest gap that is free for its whole lifetime (from its definition
 * to its last use); outputs live to the end. A value's memory is released only after
 * the node that last reads it has run, so no kernel ever writes over its operands. */
#include <string.h>

#include "exec/exec.h"

#define ALIGN 64

struct fedc_executor {
    fedc_program *p;         /* our own copy */
    const fedc_kernels *k;
    size_t *offset;          /* per value: offset in `block` (computed values only) */
    const void **bound;      /* per value: the caller's memory for inputs */
    const void **operands;   /* scratch list of operand pointers for one step */
    unsigned char *block;    /* planned memory of every computed value */
    size_t block_bytes, unplanned_bytes;
    void *scratch;           /* kernels' temporary memory (im2col) */
    size_t scratch_bytes;
};

/* ----------------------------------------------------------------- plan -- */

/* A live allocation in the block. */
typedef struct span {
    size_t begin, end;
    fedc_value owner;
} span;

typedef struct planner {
    span *live; /* sorted by begin */
    int nlive;
    size_t high; /* block size so far */
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

static bool computed(const fedc__node *n) { return n->op != FEDC_OP_INPUT && n->op != FEDC_OP_CONSTANT; }

/* last_use[v]: the last node reading v; outputs are read "after the end". */
static void compute_last_use(const fedc_program *p, int *last_use) {
    for (int v = 0; v < p->n; v++) last_use[v] = v;
    for (int v = 0; v < p->n; v++)
        for (int i = 0; i < p->nodes[v].nin; i++) last_use[p->nodes[v].in[i]] = v;
    for (int i = 0; i < p->noutputs; i++) last_use[p->outputs[i].value] = p->n;
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
    compute_last_use(p, last_use);
    for (int v = 0; v < p->n; v++) {
        const fedc__node *node = &p->nodes[v];
        if (computed(node)) {
            size_t bytes = fedc_type_bytes(&node->type);
            ex->offset[v] = place(&pl, v, bytes);
            ex->unplanned_bytes += round_up(bytes ? bytes : 1);
            size_t scratch = fedc__step_scratch(ex->k, p, node);
            if (scratch > ex->scratch_bytes) ex->scratch_bytes = scratch;
        }
        /* Operands whose last reader is v, and v itself if nothing reads it. */
        for (int i = 0; i < node->nin; i++)
            if (last_use[node->in[i]] == v) release(&pl, node->in[i]);
        if (last_use[v] == v) release(&pl, v);
    }
    ex->block_bytes = pl.high;
    fedc_free(last_use);
    fedc_free(pl.live);
    return FEDC_OK;
}

/* -------------------------------------------------------------- lifecycle -- */

static fedc_status allocate(fedc_executor *ex) {
    int n = ex->p->n ? ex->p->n : 1;
    int max_in = 1;
    for (int v = 0; v < ex->p->n; v++)
        if (ex->p->nodes[v].nin > max_in) max_in = ex->p->nodes[v].nin;
    ex->offset = fedc_calloc((size_t)n, sizeof *ex->offset);
    ex->bound = fedc_calloc((size_t)n, sizeof *ex->bound);
    ex->operands = fedc_calloc((size_t)max_in, sizeof *ex->operands);
    if (!ex->offset || !ex->bound || !ex->operands) return fedc_error(FEDC_ENOMEM, "executor: out of memory");
    fedc_status st = plan(ex);
    if (st) return st;
    ex->block = fedc_malloc(ex->block_bytes + ALIGN);
    ex->scratch = ex->scratch_bytes ? fedc_malloc(ex->scratch_bytes) : NULL;
    if (!ex->block || (ex->scratch_bytes && !ex->scratch))
        return fedc_error(FEDC_ENOMEM, "executor: cannot allocate %zu bytes of buffers and %zu of scratch",
                          ex->block_bytes, ex->scratch_bytes);
    return FEDC_OK;
}

fedc_status fedc_executor_create(fedc_executor **out, const fedc_program *program, const fedc_exec_options *options) {
    *out = NULL;
    fedc_status st = fedc_program_verify(program);
    if (st) return st;
    fedc_kernels_init();
    fedc_executor *ex = fedc_calloc(1, sizeof *ex);
    if (!ex) return fedc_error(FEDC_ENOMEM, "executor: out of memory");
    ex->k = options && options->reference_kernels ? &fedc_kernels_ref : &fedc_kernels_fast;
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
    fedc_program_destroy(ex->p);
    fedc_free(ex->offset);
    fedc_free(ex->bound);
    fedc_free(ex->operands);
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
    const fedc__node *n = &ex->p->nodes[v];
    if (n->op == FEDC_OP_INPUT) return ex->bound[v];
    if (n->op == FEDC_OP_CONSTANT) return n->data;
    return ex->block + ex->offset[v];
}

fedc_status fedc_executor_run(fedc_executor *ex) {
    const fedc_program *p = ex->p;
    for (int v = 0; v < p->n; v++) {
        const fedc__node *n = &p->nodes[v];
        if (n->op == FEDC_OP_INPUT && !ex->bound[v])
            return fedc_error(FEDC_EINVAL, "executor_run: input \"%s\" is not bound", n->name);
    }
    for (int v = 0; v < p->n; v++) {
        const fedc__node *n = &p->nodes[v];
        if (!computed(n)) continue;
        for (int i = 0; i < n->nin; i++) ex->operands[i] = value_memory(ex, n->in[i]);
        fedc__step s = {p, v, n, ex->k, ex->block + ex->offset[v], ex->operands, ex->scratch};
        fedc_status st = fedc__step_run(&s);
        if (st) return st;
    }
    return FEDC_OK;
}

fedc_status fedc_executor_output(const fedc_executor *ex, const char *name, const void **data, fedc_type *type) {
    fedc_value v = fedc_program_find_output(ex->p, name);
    if (v == FEDC_NONE) return fedc_error(FEDC_ENOTFOUND, "executor_output: the program has no output \"%s\"", name);
    *data = value_memory(ex, v);
    if (type) *type = ex->p->nodes[v].type;
    return FEDC_OK;
}

size_t fedc_executor_planned_bytes(const fedc_executor *ex) { return ex->block_bytes; }
size_t fedc_executor_unplanned_bytes(const fedc_executor *ex) { return ex->unplanned_bytes; }
