/* A deployment form run phase by phase in one process (fedc/deploy.h): the
 * check that the form computes what the round does, bit for bit, and the order
 * of work a server and its clients will follow. Values live in one table by
 * name: a server value once, a clients value once per client (clients x its
 * bytes, as the executor binds them). client_work runs for one client at a time
 * on that client's slices; each aggregation adds the clients' values as a server
 * receives them, in client order, into the simulator's own summation tree
 * (fedc__agg_*, src/exec/aggregate.c), so the sums have the simulator's bits. */
#include <string.h>

#include "deploy/deploy.h"
#include "exec/exec.h"

typedef struct entry {
    char *name;
    fedc_type type;  /* as the round has it */
    size_t bytes;    /* of one value (one client's, for @clients) */
    const void *data;
    void *own;       /* the buffer a phase writes; NULL for a bound input */
    bool output;     /* one of the round's outputs, which may be named as an input is (server/<leaf>) */
} entry;

/* A phase's executor and where its inputs and outputs live in the table. */
typedef struct phase_run {
    const fedc_program *q;
    fedc_executor *ex; /* NULL for an aggregation, a phase with no outputs, or one a server does not run */
    int *in, *out;     /* table indices, per input / output of q */
    int *x, *w;        /* an aggregation's: per output, the input it aggregates and its weight (-1: none) */
} phase_run;

struct fedc_deployment_run {
    const fedc_deployment_form *f;
    int clients;
    bool server;       /* a server's run: no clients values held, no broadcast or client_work run */
    entry *table;
    int n, cap;
    phase_run *phases; /* exchanges * FEDC_PHASE_COUNT */
    fedc__agg *agg;    /* one per output of the widest aggregation: they stream side by side */
    int nagg;
    int *kept, nkept;  /* the slots the last selecting robust aggregation kept (nkept -1: none ran) */
};

static int find(const fedc_deployment_run *r, const char *name, bool output) {
    for (int i = 0; i < r->n; i++)
        if (r->table[i].output == output && !strcmp(r->table[i].name, name)) return i;
    return -1;
}

/* The table entry of `name` (added on first use, with a buffer unless it is an
 * input of the round, which is bound); -1 when out of memory. A phase's output
 * named as one of the round's is that output (server_result's server/<leaf> is
 * the new state, not the input of that name). */
static int entry_of(fedc_deployment_run *r, const char *name, bool written) {
    fedc_value out = written ? fedc_program_find_output(r->f->round, name) : FEDC_NONE;
    int i = find(r, name, out != FEDC_NONE);
    if (i >= 0) return i;
    if (r->n == r->cap) {
        int cap = r->cap ? 2 * r->cap : 32;
        entry *t = fedc_realloc(r->table, (size_t)cap * sizeof *t);
        if (!t) return -1;
        r->table = t, r->cap = cap;
    }
    entry *e = &r->table[r->n];
    memset(e, 0, sizeof *e);
    e->output = out != FEDC_NONE;
    if (e->output) e->type = fedc__node_at(r->f->round, out)->type;
    else if (!fedc_deployment_form_value_type(r->f, name, &e->type)) return -1;
    e->bytes = fedc_type_bytes(&e->type);
    e->name = fedc_malloc(strlen(name) + 1);
    if (!e->name) return -1;
    strcpy(e->name, name);
    r->n++;
    if (!e->output && fedc_program_find_input(r->f->round, name) != FEDC_NONE) return r->n - 1;
    if (r->server && e->type.placement == FEDC_CLIENTS) return r->n - 1; /* the clients hold these */
    size_t copies = e->type.placement == FEDC_CLIENTS ? (size_t)r->clients : 1;
    e->own = fedc_malloc(copies * e->bytes + 1);
    e->data = e->own;
    return e->own ? r->n - 1 : -1;
}

/* Which inputs of aggregation phase ph each output aggregates (and weighs by),
 * and room for that many aggregations at once. */
static fedc_status aggregated_inputs(fedc_deployment_run *r, phase_run *ph) {
    const fedc_program *q = ph->q;
    int nout = fedc_program_num_outputs(q);
    ph->x = fedc_calloc((size_t)nout + 1, sizeof *ph->x);
    ph->w = fedc_calloc((size_t)nout + 1, sizeof *ph->w);
    if (!ph->x || !ph->w) return fedc_error(FEDC_ENOMEM, "deployment_run: out of memory");
    for (int j = 0; j < nout; j++) {
        const fedc__node *n = fedc__node_at(q, fedc_program_output_value(q, j));
        ph->x[j] = ph->w[j] = -1;
        for (int i = 0; i < fedc_program_num_inputs(q); i++) {
            if (fedc_program_input(q, i) == n->in[0]) ph->x[j] = i;
            if (n->nin == 2 && fedc_program_input(q, i) == n->in[1]) ph->w[j] = i;
        }
        if (ph->x[j] < 0 || (n->nin == 2 && ph->w[j] < 0))
            return fedc_error(FEDC_EINTERNAL, "aggregation: output \"%s\" does not aggregate the phase's inputs",
                              fedc_program_output_name(q, j));
    }
    if (nout > r->nagg) {
        fedc__agg *a = fedc_realloc(r->agg, (size_t)nout * sizeof *a);
        if (!a) return fedc_error(FEDC_ENOMEM, "deployment_run: out of memory");
        memset(a + r->nagg, 0, (size_t)(nout - r->nagg) * sizeof *a);
        r->agg = a, r->nagg = nout;
    }
    return FEDC_OK;
}

static fedc_status prepare_phase(fedc_deployment_run *r, phase_run *ph, fedc_phase_kind kind,
                                 const fedc_exec_options *o) {
    const fedc_program *q = ph->q;
    int nin = fedc_program_num_inputs(q), nout = fedc_program_num_outputs(q);
    ph->in = fedc_calloc((size_t)nin + 1, sizeof *ph->in);
    ph->out = fedc_calloc((size_t)nout + 1, sizeof *ph->out);
    if (!ph->in || !ph->out) return fedc_error(FEDC_ENOMEM, "deployment_run: out of memory");
    for (int i = 0; i < nin + nout; i++) {
        const char *name = i < nin ? fedc_program_input_name(q, i) : fedc_program_output_name(q, i - nin);
        int k = entry_of(r, name, i >= nin);
        if (k < 0) return fedc_error(FEDC_ENOMEM, "deployment_run: out of memory for \"%s\"", name);
        if (i < nin) ph->in[i] = k;
        else ph->out[i - nin] = k;
    }
    if (kind == FEDC_PHASE_AGGREGATION) return aggregated_inputs(r, ph);
    if (nout == 0 || (r->server && (kind == FEDC_PHASE_BROADCAST || kind == FEDC_PHASE_CLIENT_WORK))) return FEDC_OK;
    fedc_exec_options eo = {.reference_kernels = o->reference_kernels, .device = o->device, .threads = o->threads, .clients = r->clients};
    return fedc_executor_create(&ph->ex, q, &eo);
}

static fedc_status create_run(fedc_deployment_run **out, const fedc_deployment_form *f, const fedc_exec_options *options,
                              bool server) {
    *out = NULL;
    if (!options || options->clients < 1)
        return fedc_error(FEDC_EINVAL, "deployment_run: options.clients must be the cohort's size (1 or more)");
    fedc_deployment_run *r = fedc_calloc(1, sizeof *r);
    if (!r) return fedc_error(FEDC_ENOMEM, "deployment_run: out of memory");
    r->f = f;
    r->clients = options->clients;
    r->server = server;
    r->nkept = -1;
    int phases = f->exchanges * FEDC_PHASE_COUNT;
    r->phases = fedc_calloc((size_t)phases, sizeof *r->phases);
    fedc_status st = r->phases ? FEDC_OK : fedc_error(FEDC_ENOMEM, "deployment_run: out of memory");
    for (int s = 0; !st && s < phases; s++) {
        r->phases[s].q = f->phase[s];
        st = prepare_phase(r, &r->phases[s], (fedc_phase_kind)(s % FEDC_PHASE_COUNT), options);
    }
    if (st) fedc_deployment_run_destroy(r);
    else *out = r;
    return st;
}

fedc_status fedc_deployment_run_create(fedc_deployment_run **out, const fedc_deployment_form *f,
                                       const fedc_exec_options *options) {
    return create_run(out, f, options, false);
}

fedc_status fedc__deployment_run_create_server(fedc_deployment_run **out, const fedc_deployment_form *f,
                                               const fedc_exec_options *options) {
    return create_run(out, f, options, true);
}

void fedc_deployment_run_destroy(fedc_deployment_run *r) {
    if (!r) return;
    for (int s = 0; r->phases && s < r->f->exchanges * FEDC_PHASE_COUNT; s++) {
        fedc_executor_destroy(r->phases[s].ex);
        fedc_free(r->phases[s].in), fedc_free(r->phases[s].out);
        fedc_free(r->phases[s].x), fedc_free(r->phases[s].w);
    }
    for (int i = 0; i < r->n; i++) fedc_free(r->table[i].name), fedc_free(r->table[i].own);
    for (int j = 0; j < r->nagg; j++) fedc__agg_free(&r->agg[j]);
    fedc_free(r->agg), fedc_free(r->kept), fedc_free(r->table), fedc_free(r->phases), fedc_free(r);
}

fedc_status fedc_deployment_run_bind(fedc_deployment_run *r, const char *name, const void *data) {
    int i = find(r, name, false);
    if (fedc_program_find_input(r->f->round, name) == FEDC_NONE)
        return fedc_error(FEDC_ENOTFOUND, "deployment_run_bind: the round has no input \"%s\"", name);
    if (!data) return fedc_error(FEDC_EINVAL, "deployment_run_bind: data for input \"%s\" is NULL", name);
    if (i >= 0) r->table[i].data = data; /* an input no phase reads has no entry */
    return FEDC_OK;
}

/* Slice `client` of entry k (a server or local value: the whole of it). */
static const void *at(const fedc_deployment_run *r, int k, int client) {
    const entry *e = &r->table[k];
    return e->type.placement == FEDC_CLIENTS ? (const char *)e->data + (size_t)client * e->bytes : e->data;
}

/* Runs a phase's executor on the table (client >= 0: one client's slices) and
 * copies its outputs back (a broadcast's @clients outputs whole). */
static fedc_status run_executor(fedc_deployment_run *r, const phase_run *ph, int client) {
    fedc_status st = FEDC_OK;
    for (int i = 0; !st && i < fedc_program_num_inputs(ph->q); i++)
        st = fedc_executor_bind(ph->ex, fedc_program_input_name(ph->q, i), at(r, ph->in[i], client < 0 ? 0 : client));
    if (!st) st = fedc_executor_run(ph->ex);
    for (int i = 0; !st && i < fedc_program_num_outputs(ph->q); i++) {
        const void *y;
        st = fedc_executor_output(ph->ex, fedc_program_output_name(ph->q, i), &y, NULL);
        entry *e = &r->table[ph->out[i]];
        size_t copies = e->type.placement == FEDC_CLIENTS && client < 0 ? (size_t)r->clients : 1;
        if (!st) memcpy((char *)e->own + (size_t)(client < 0 ? 0 : client) * e->bytes, y, copies * e->bytes);
    }
    return st;
}

/* client_work, one client after another, as each phone would. */
static fedc_status run_clients(fedc_deployment_run *r, const phase_run *ph) {
    for (int i = 0; i < r->clients; i++) {
        fedc_status st = run_executor(r, ph, i);
        if (st) {
            char msg[900];
            snprintf(msg, sizeof msg, "%s", fedc_errmsg());
            return fedc_error(st, "client_work: client %d: %s", i, msg);
        }
    }
    return FEDC_OK;
}

/* Each aggregate: the clients' values added in client order into the tree;
 * a client not `present` (NULL: all are) is left out, as the simulator leaves
 * out a dropped client. The server's streaming aggregation, fed from the table. */
static fedc_status run_aggregation(fedc_deployment_run *r, int exchange, const uint8_t *present) {
    const phase_run *ph = &r->phases[fedc__deploy_slot(exchange, FEDC_PHASE_AGGREGATION)];
    int nin = fedc_program_num_inputs(ph->q);
    const void *in[4096];
    if (nin > 4096) return fedc_error(FEDC_EUNSUPPORTED, "aggregation: more than 4096 inputs");
    fedc_status st = fedc__deployment_agg_begin(r, exchange);
    for (int i = 0; !st && i < r->clients; i++) {
        for (int k = 0; k < nin; k++) in[k] = at(r, ph->in[k], i);
        st = fedc__deployment_agg_add(r, exchange, i, !present || present[i] ? in : NULL);
    }
    return st ? st : fedc__deployment_agg_end(r, exchange);
}

fedc_status fedc_deployment_run_run(fedc_deployment_run *r) {
    for (int i = 0; i < r->n; i++)
        if (!r->table[i].data)
            return fedc_error(FEDC_EINVAL, "deployment_run: input \"%s\" is not bound", r->table[i].name);
    for (int s = 0; s < r->f->exchanges * FEDC_PHASE_COUNT; s++) {
        const phase_run *ph = &r->phases[s];
        fedc_phase_kind kind = (fedc_phase_kind)(s % FEDC_PHASE_COUNT);
        fedc_status st = FEDC_OK;
        if (kind == FEDC_PHASE_AGGREGATION) st = run_aggregation(r, s / FEDC_PHASE_COUNT, NULL);
        else if (ph->ex && kind == FEDC_PHASE_CLIENT_WORK) st = run_clients(r, ph);
        else if (ph->ex) st = run_executor(r, ph, -1);
        if (st) {
            char msg[900];
            snprintf(msg, sizeof msg, "%s", fedc_errmsg());
            return fedc_error(st, "deployment_run: exchange %d, %s: %s", s / FEDC_PHASE_COUNT, fedc_phase_name(kind), msg);
        }
    }
    return FEDC_OK;
}

fedc_status fedc_deployment_run_output(const fedc_deployment_run *r, const char *name, const void **data,
                                       fedc_type *type) {
    fedc_value v = fedc_program_find_output(r->f->round, name);
    int k = v == FEDC_NONE ? -1 : find(r, name, true);
    if (k < 0) return fedc_error(FEDC_ENOTFOUND, "deployment_run_output: the round has no output \"%s\"", name);
    *data = r->table[k].data;
    if (type) *type = fedc__node_at(r->f->round, v)->type;
    return FEDC_OK;
}

/* ------------------------------------------------- the server's side (deploy.h) -- */

fedc_status fedc__deployment_run_phase(fedc_deployment_run *r, int exchange, fedc_phase_kind kind, const uint8_t *present) {
    const phase_run *ph = &r->phases[fedc__deploy_slot(exchange, kind)];
    fedc_status st = FEDC_OK;
    if (kind == FEDC_PHASE_AGGREGATION) st = run_aggregation(r, exchange, present);
    else if (kind == FEDC_PHASE_CLIENT_WORK) st = fedc_error(FEDC_EINVAL, "deployment_run: client_work runs on the clients");
    else if (ph->ex) st = run_executor(r, ph, -1);
    if (st) {
        char msg[900];
        snprintf(msg, sizeof msg, "%s", fedc_errmsg());
        return fedc_error(st, "exchange %d, %s: %s", exchange, fedc_phase_name(kind), msg);
    }
    return FEDC_OK;
}

void *fedc__deployment_run_buffer(fedc_deployment_run *r, const char *name, bool output, fedc_type *type) {
    int k = find(r, name, output);
    if (k < 0 || !r->table[k].own) return NULL;
    if (type) *type = r->table[k].type;
    return r->table[k].own;
}

/* The streaming aggregation (deploy.h): one fedc__agg per output, fed slot by slot. */
fedc_status fedc__deployment_agg_begin(fedc_deployment_run *r, int exchange) {
    const phase_run *ph = &r->phases[fedc__deploy_slot(exchange, FEDC_PHASE_AGGREGATION)];
    for (int j = 0; j < fedc_program_num_outputs(ph->q); j++) {
        entry *e = &r->table[ph->out[j]];
        fedc__agg_begin(&r->agg[j], fedc__node_at(ph->q, fedc_program_output_value(ph->q, j)), r->clients, e->own);
    }
    return FEDC_OK;
}

fedc_status fedc__deployment_agg_add(fedc_deployment_run *r, int exchange, int slot, const void *const *inputs) {
    const phase_run *ph = &r->phases[fedc__deploy_slot(exchange, FEDC_PHASE_AGGREGATION)];
    fedc_status st = FEDC_OK;
    for (int j = 0; !st && j < fedc_program_num_outputs(ph->q); j++)
        st = fedc__agg_add(&r->agg[j], slot, inputs ? inputs[ph->x[j]] : NULL,
                           inputs && ph->w[j] >= 0 ? inputs[ph->w[j]] : NULL);
    return st;
}

/* Keeps the slots output j's Krum, Multi-Krum or Bulyan kept, when it is one:
 * the next exchange's aggregation reuses the accumulator. */
static fedc_status note_kept(fedc_deployment_run *r, const phase_run *ph, int j) {
    const fedc__node *n = fedc__node_at(ph->q, fedc_program_output_value(ph->q, j));
    if (n->op != FEDC_OP_ROBUST_AGGREGATE || !fedc_robust_selects(r->agg[j].robust_settings.kind)) return FEDC_OK;
    if (!r->kept && !(r->kept = fedc_malloc((size_t)r->clients * sizeof *r->kept)))
        return fedc_error(FEDC_ENOMEM, "aggregation: no memory for the kept clients");
    r->nkept = r->agg[j].robust_nkept < r->clients ? r->agg[j].robust_nkept : r->clients;
    memcpy(r->kept, r->agg[j].robust_kept, (size_t)r->nkept * sizeof *r->kept);
    return FEDC_OK;
}

fedc_status fedc__deployment_agg_end(fedc_deployment_run *r, int exchange) {
    const phase_run *ph = &r->phases[fedc__deploy_slot(exchange, FEDC_PHASE_AGGREGATION)];
    fedc_status st = FEDC_OK;
    for (int j = 0; !st && j < fedc_program_num_outputs(ph->q); j++) {
        st = fedc__agg_end(&r->agg[j]);
        if (!st) st = note_kept(r, ph, j);
    }
    return st;
}

int fedc__deployment_run_kept(const fedc_deployment_run *r, const int **slots) {
    *slots = r->kept;
    return r->nkept;
}

int fedc__deployment_run_broadcasts(fedc_deployment_run *r, int exchange, fedc_tensor_entry *t, int max) {
    const phase_run *ph = &r->phases[fedc__deploy_slot(exchange, FEDC_PHASE_BROADCAST)];
    int n = 0;
    for (int j = 0; j < fedc_program_num_outputs(ph->q) && n < max; j++) {
        const fedc__node *b = fedc__node_at(ph->q, fedc_program_output_value(ph->q, j));
        for (int i = 0; i < fedc_program_num_inputs(ph->q); i++) {
            if (b->op != FEDC_OP_BROADCAST || fedc_program_input(ph->q, i) != b->in[0]) continue;
            fedc_type type = b->type;
            type.placement = FEDC_LOCAL;
            t[n++] = (fedc_tensor_entry){fedc_program_output_name(ph->q, j), type, r->table[ph->in[i]].data};
            break;
        }
    }
    return n;
}

/* ------------------------------------------- aggregators' blocks (deploy.h, groups.h) -- */

int fedc__deployment_agg_outputs(fedc_deployment_run *r, int exchange) {
    return fedc_program_num_outputs(r->phases[fedc__deploy_slot(exchange, FEDC_PHASE_AGGREGATION)].q);
}

fedc_status fedc__deployment_agg_blocks(fedc_deployment_run *r, int exchange, int j, fedc__group_block *out, int *n,
                                        size_t *bytes) {
    (void)exchange;
    fedc__agg *a = &r->agg[j];
    fedc_status st = fedc__agg_close(a);
    if (!st && a->depth > FEDC__GROUP_MAX_BLOCKS)
        st = fedc_error(FEDC_EINTERNAL, "aggregator: %d blocks of a partial sum", a->depth);
    for (int k = 0; !st && k < a->depth; k++) {
        const fedc__partial *p = &a->stack[k];
        out[k] = (fedc__group_block){p->first, p->level, p->clients, p->weight, p->clients ? p->data : NULL};
    }
    *n = st ? 0 : a->depth, *bytes = a->bytes;
    return st;
}

fedc_status fedc__deployment_agg_push(fedc_deployment_run *r, int exchange, int j, fedc__group_block b) {
    (void)exchange;
    fedc__agg *a = &r->agg[j];
    fedc_status st = fedc__agg_close(a); /* the slots before, left out one by one, end a leaf */
    if (st || !b.clients) return st ? st : fedc__agg_push(a, (fedc__partial){b.first, b.level, 0, 0, NULL});
    void *data = fedc__agg_buffer(a);
    if (!data) return fedc_error(FEDC_ENOMEM, "server: out of memory for a group's partial sum of %zu bytes", a->bytes);
    memcpy(data, b.data, a->bytes);
    return fedc__agg_push(a, (fedc__partial){b.first, b.level, b.clients, b.weight, data});
}

int64_t fedc__deployment_leaf_of(int64_t clients, int64_t i) { return fedc__agg_leaf_of(clients, i); }
int64_t fedc__deployment_leaf_start(int64_t clients, int64_t j) { return fedc__agg_leaf_start(clients, (int)j); }
