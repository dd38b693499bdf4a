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
    fedc_executor *ex; /* NULL for an aggregation or a phase with no outputs */
    int *in, *out;     /* table indices, per input / output of q */
} phase_run;

struct fedc_deployment_run {
    const fedc_deployment_form *f;
    int clients;
    entry *table;
    int n, cap;
    phase_run *phases; /* exchanges * FEDC_PHASE_COUNT */
    fedc__agg agg;
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
    size_t copies = e->type.placement == FEDC_CLIENTS ? (size_t)r->clients : 1;
    e->own = fedc_malloc(copies * e->bytes + 1);
    e->data = e->own;
    return e->own ? r->n - 1 : -1;
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
    if (kind == FEDC_PHASE_AGGREGATION || nout == 0) return FEDC_OK;
    fedc_exec_options eo = {.reference_kernels = o->reference_kernels, .threads = o->threads, .clients = r->clients};
    return fedc_executor_create(&ph->ex, q, &eo);
}

fedc_status fedc_deployment_run_create(fedc_deployment_run **out, const fedc_deployment_form *f,
                                       const fedc_exec_options *options) {
    *out = NULL;
    if (!options || options->clients < 1)
        return fedc_error(FEDC_EINVAL, "deployment_run: options.clients must be the cohort's size (1 or more)");
    fedc_deployment_run *r = fedc_calloc(1, sizeof *r);
    if (!r) return fedc_error(FEDC_ENOMEM, "deployment_run: out of memory");
    r->f = f;
    r->clients = options->clients;
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

void fedc_deployment_run_destroy(fedc_deployment_run *r) {
    if (!r) return;
    for (int s = 0; r->phases && s < r->f->exchanges * FEDC_PHASE_COUNT; s++) {
        fedc_executor_destroy(r->phases[s].ex);
        fedc_free(r->phases[s].in), fedc_free(r->phases[s].out);
    }
    for (int i = 0; i < r->n; i++) fedc_free(r->table[i].name), fedc_free(r->table[i].own);
    fedc__agg_free(&r->agg);
    fedc_free(r->table), fedc_free(r->phases), fedc_free(r);
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
 * out a dropped client. */
static fedc_status run_aggregation(fedc_deployment_run *r, const phase_run *ph, const uint8_t *present) {
    for (int j = 0; j < fedc_program_num_outputs(ph->q); j++) {
        const fedc__node *n = fedc__node_at(ph->q, fedc_program_output_value(ph->q, j));
        int x = -1, w = -1;
        for (int i = 0; i < fedc_program_num_inputs(ph->q); i++) {
            if (fedc_program_input(ph->q, i) == n->in[0]) x = ph->in[i];
            if (n->nin == 2 && fedc_program_input(ph->q, i) == n->in[1]) w = ph->in[i];
        }
        if (x < 0 || (n->nin == 2 && w < 0))
            return fedc_error(FEDC_EINTERNAL, "aggregation: output \"%s\" does not aggregate the phase's inputs",
                              fedc_program_output_name(ph->q, j));
        fedc__agg_begin(&r->agg, n, r->clients, r->table[ph->out[j]].own);
        fedc_status st = FEDC_OK;
        for (int i = 0; !st && i < r->clients; i++) {
            bool in = !present || present[i];
            st = fedc__agg_add(&r->agg, i, in ? at(r, x, i) : NULL, in && w >= 0 ? at(r, w, i) : NULL);
        }
        if (!st) st = fedc__agg_end(&r->agg);
        if (st) return st;
    }
    return FEDC_OK;
}

fedc_status fedc_deployment_run_run(fedc_deployment_run *r) {
    for (int i = 0; i < r->n; i++)
        if (!r->table[i].data)
            return fedc_error(FEDC_EINVAL, "deployment_run: input \"%s\" is not bound", r->table[i].name);
    for (int s = 0; s < r->f->exchanges * FEDC_PHASE_COUNT; s++) {
        const phase_run *ph = &r->phases[s];
        fedc_phase_kind kind = (fedc_phase_kind)(s % FEDC_PHASE_COUNT);
        fedc_status st = FEDC_OK;
        if (kind == FEDC_PHASE_AGGREGATION) st = run_aggregation(r, ph, NULL);
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
    if (kind == FEDC_PHASE_AGGREGATION) st = run_aggregation(r, ph, present);
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
