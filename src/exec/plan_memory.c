/* Memory planning: where every value of a program lives, decided once when the
 * executor is created, so that runs never allocate:
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
 *    value takes one copy per client; bytes a node saves for its derivatives
 *    (dropout's mask, max-pool's argmax) live from it to their last reader. Outputs live to the end. Memory is released
 *    only after the node that last reads it has run, so no kernel writes over its
 *    operands. */
#include <string.h>

#include "exec/executor_plan.h"

/* ------------------------------------------------------------ placement -- */

bool fedc__is_output(const fedc_program *p, fedc_value v) {
    for (int i = 0; i < p->noutputs; i++)
        if (p->outputs[i].value == v) return true;
    return false;
}

/* A value that is there before any node runs: an input, or a constant kept in
 * the program (one that is an output is computed into the block at its step). */
static bool there_from_start(const fedc_program *p, fedc_value v) {
    const fedc__node *n = &p->nodes[v];
    return n->op == FEDC_OP_INPUT || (n->op == FEDC_OP_CONSTANT && !fedc__is_output(p, v));
}

/* A map's result streams when it is not an output and every reader is an
 * aggregation whose other operand is available when the map commits a client:
 * another result of the same map, a value computed before the map, an input or
 * a constant. A result nothing reads streams too, into nothing: it is not kept
 * for the cohort (a map extended with per-client work, src/ir/map_extend.c,
 * leaves the results it read so). */
static bool streams(const fedc_program *p, fedc_value r) {
    fedc_value m = p->nodes[r].in[0];
    if (fedc__is_output(p, r) || p->nodes[m].op != FEDC_OP_MAP || p->nodes[m].type.placement != FEDC_CLIENTS)
        return false; /* a map at the groups stores its results */
    for (int u = r + 1; u < p->n; u++) {
        const fedc__node *n = &p->nodes[u];
        for (int i = 0; i < n->nin; i++) {
            if (n->in[i] != r) continue;
            if (!fedc__is_aggregation(n->op)) return false;
            for (int j = 0; j < n->nin; j++) {
                const fedc__node *o = &p->nodes[n->in[j]];
                bool same_map = o->op == FEDC_OP_RESULT && o->in[0] == m;
                if (!same_map && n->in[j] > m && !there_from_start(p, n->in[j])) return false;
            }
        }
    }
    return true;
}

void fedc__plan_placement(fedc_executor *ex) {
    const fedc_program *p = ex->p;
    for (int v = 0; v < p->n; v++) {
        const fedc__node *n = &p->nodes[v];
        value_plan *vp = &ex->plan[v];
        size_t bytes = n->type.dtype == FEDC__TUPLE ? 0 : fedc_type_bytes(&n->type);
        vp->fused_into = FEDC_NONE;
        vp->pair = vp->product = vp->saved = FEDC_NONE;
        vp->def = v;
        vp->stride = n->type.placement == FEDC_CLIENTS || n->type.placement == FEDC_GROUPS ? bytes : 0;
        if (n->op == FEDC_OP_INPUT) vp->kind = MEM_BOUND;
        else if (n->op == FEDC_OP_CONSTANT && !(vp->stride && fedc__is_output(p, v))) vp->kind = MEM_CONSTANT, vp->stride = 0;
        else if (fedc__op_has_body(n->op)) vp->kind = MEM_NONE;
        else if (n->op == FEDC_OP_BROADCAST && !fedc__is_output(p, v)) vp->kind = MEM_ALIAS, vp->stride = 0;
        else if (n->op == FEDC_OP_RESHAPE && !fedc__is_output(p, v)) vp->kind = MEM_ALIAS, vp->stride = ex->plan[n->in[0]].stride;
        else if (n->op == FEDC_OP_RESULT && streams(p, v)) vp->kind = MEM_STREAMED;
        else vp->kind = MEM_BLOCK;
        if (n->op == FEDC_OP_RESULT) vp->def = n->in[0]; /* written while the map runs */
    }
    fedc__hier_plan_placement(ex);
    /* Aggregations reading a streamed result are computed by that map. */
    for (int v = 0; v < p->n; v++) {
        const fedc__node *n = &p->nodes[v];
        if (!fedc__is_aggregation(n->op)) continue;
        for (int i = 0; i < n->nin; i++) {
            if (ex->plan[n->in[i]].kind != MEM_STREAMED) continue;
            ex->plan[v].fused_into = p->nodes[n->in[i]].in[0];
            ex->plan[v].def = ex->plan[v].fused_into;
        }
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


/* First fit: the lowest offset where `bytes` fits between live spans. */
static size_t place(planner *pl, fedc_value owner, size_t bytes) {
    bytes = fedc__round_up(bytes ? bytes : 1);
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

size_t fedc__value_bytes(const fedc_executor *ex, fedc_value v) {
    const fedc_type *t = &ex->p->nodes[v].type;
    size_t bytes = fedc_type_bytes(t);
    if (t->placement == FEDC_GROUPS) return bytes * (size_t)ex->max_groups;
    return t->placement == FEDC_CLIENTS ? bytes * (size_t)ex->clients : bytes;
}

fedc_status fedc__plan_memory(fedc_executor *ex) {
    const fedc_program *p = ex->p;
    int n = p->n ? p->n : 1;
    int *last_use = fedc_malloc(2 * (size_t)n * sizeof *last_use); /* values, then saved bytes */
    planner pl = {fedc_malloc((size_t)(2 * n + 1) * sizeof(span)), 0, 0};
    if (!last_use || !pl.live) {
        fedc_free(last_use);
        fedc_free(pl.live);
        return fedc_error(FEDC_ENOMEM, "executor: out of memory while planning");
    }
    compute_last_use(ex, last_use);
    for (int v = 0; v < p->n; v++) /* saved bytes: last_use[p->n + the node that saves them] */
        last_use[p->n + v] = -1;
    for (int v = 0; v < p->n; v++)
        if (ex->plan[v].saved != FEDC_NONE) last_use[p->n + ex->plan[v].saved] = v;
    for (int v = 0; v < p->n; v++) /* a gradient run inside a pair reads them when the pair runs */
        if (ex->plan[v].product != FEDC_NONE && ex->plan[ex->plan[v].product].saved != FEDC_NONE) {
            int *last = &last_use[p->n + ex->plan[ex->plan[v].product].saved];
            *last = *last > v ? *last : v;
        }
    for (int step = 0; step < p->n; step++) {
        /* Values written at this step: the node, or what a map writes. */
        bool map = fedc__op_has_body(p->nodes[step].op); /* writes its result nodes */
        for (int v = step; v < (map ? p->n : step + 1); v++) {
            if (ex->plan[v].def != step || ex->plan[v].kind != MEM_BLOCK) continue;
            size_t bytes = fedc__value_bytes(ex, v);
            ex->plan[v].offset = place(&pl, v, bytes);
            ex->unplanned_bytes += fedc__round_up(bytes ? bytes : 1);
        }
        for (int i = 0; ex->epi && i < 2; i++) { /* written by this conv2d or matmul */
            fedc_value out = i ? ex->epi[step].act : ex->epi[step].out;
            if (out == FEDC_NONE) continue;
            ex->plan[out].offset = place(&pl, out, fedc__value_bytes(ex, out));
            ex->unplanned_bytes += fedc__round_up(fedc__value_bytes(ex, out));
        }
        if (ex->plan[step].saved == step) { /* its saved bytes, owned by p->n + step */
            size_t bytes = fedc__saved_bytes(p, step);
            ex->plan[step].saved_offset = place(&pl, p->n + step, bytes);
            ex->unplanned_bytes += fedc__round_up(bytes ? bytes : 1);
        }
        size_t scratch = fedc__step_scratch(ex->k, p, &p->nodes[step]);
        if (scratch > ex->scratch_bytes) ex->scratch_bytes = scratch;
        /* Memory whose last reader is this step. */
        const fedc__node *node = &p->nodes[step];
        for (int i = 0; i < node->nin; i++)
            if (last_use[node->in[i]] == step) release(&pl, node->in[i]);
        for (int v = step; v < (map ? p->n : step + 1); v++)
            if (last_use[v] == step && ex->plan[v].def == step) release(&pl, v);
        fedc_value reads = ex->plan[step].product != FEDC_NONE ? ex->plan[step].product : step;
        if (ex->plan[reads].saved != FEDC_NONE && last_use[p->n + ex->plan[reads].saved] == step)
            release(&pl, p->n + ex->plan[reads].saved);
    }
    ex->block_bytes = pl.high;
    fedc_free(last_use);
    fedc_free(pl.live);
    return FEDC_OK;
}
