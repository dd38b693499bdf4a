/* The placement hierarchy in the executor: server ⊃ groups ⊃ clients.
 *
 * A @groups value is `groups` copies, one per group; a @clients value is one copy
 * per client, the clients ordered by group (group g's are [group_start[g],
 * group_start[g + 1])). broadcast_down copies a value into each member; the
 * aggregations up a level run the flat aggregation's fixed tree (aggregate.c)
 * over each group's clients, or over the groups: so with one group, sum_up and
 * mean_up of a clients value are the flat sum and mean bit for bit, and the level
 * above adds one value (a copy) or divides by 1 (exact). Array ops on @groups
 * values run once per group, in group order; a map at the groups runs its body on
 * each group through the cohort runner (cohort.c), results in group places.
 * Nothing here depends on the number of threads. */
#include <string.h>

#include "exec/executor_plan.h"

/* Group g's clients are [group_start[g], group_start[g + 1]); the ones after
 * the last group are in none (a run checks that they are absent). n = 0: one
 * group of every client. Checked whole before anything changes, so a refused
 * call leaves the groups as they were. */
static fedc_status apply_groups(fedc_executor *ex, int n, const int *sizes, const char *who) {
    if (n < 0 || n > ex->max_groups)
        return fedc_error(FEDC_EINVAL, "%s: %d groups; use 0 (one group) to %d (options.groups)", who, n,
                          ex->max_groups);
    if (n && !sizes) return fedc_error(FEDC_EINVAL, "%s: groups is %d but group_sizes is NULL", who, n);
    int64_t sum = 0;
    for (int g = 0; g < n; g++) {
        if (sizes[g] < 1)
            return fedc_error(FEDC_EINVAL, "%s: group_sizes[%d] is %d; every group needs a client", who, g, sizes[g]);
        if ((sum += sizes[g]) > ex->clients)
            return fedc_error(FEDC_EINVAL, "%s: group_sizes sum past the cohort's %d clients (at group %d)", who,
                              ex->clients, g);
    }
    ex->groups = n ? n : 1;
    ex->group_start[1] = ex->clients;
    for (int g = 0; g < n; g++) ex->group_start[g + 1] = ex->group_start[g] + sizes[g];
    for (int g = 0, i = 0; i < ex->clients; i++) { /* the clients in no group: the last group's, never run */
        while (g + 1 < ex->groups && i >= ex->group_start[g + 1]) g++;
        ex->client_group[i] = g;
    }
    for (int v = 0; v < ex->p->n; v++)
        if (ex->aggs && ex->aggs[v]) ex->aggs[v]->groups = ex->groups;
    return FEDC_OK;
}

fedc_status fedc__hier_create(fedc_executor *ex) {
    const fedc_exec_options *o = &ex->opt;
    if (o->groups < 0) return fedc_error(FEDC_EINVAL, "executor: groups is %d; use 0 (one group) or more", o->groups);
    ex->max_groups = o->groups && ex->clients ? o->groups : 1;
    size_t n = (size_t)ex->max_groups;
    ex->group_start = fedc_calloc(n + 1, sizeof *ex->group_start);
    ex->group_local = fedc_calloc(n, sizeof *ex->group_local);
    ex->group_none = fedc_calloc(n, 1);
    ex->client_group = fedc_calloc((size_t)(ex->clients ? ex->clients : 1), sizeof *ex->client_group);
    if (!ex->group_start || !ex->group_local || !ex->group_none || !ex->client_group)
        return fedc_error(FEDC_ENOMEM, "executor: out of memory for %d groups", ex->max_groups);
    for (int g = 0; g < ex->max_groups; g++) ex->group_local[g] = g;
    return apply_groups(ex, o->groups && ex->clients ? o->groups : 0, o->group_sizes, "executor");
}

fedc_status fedc_executor_set_groups(fedc_executor *ex, int groups, const int *group_sizes) {
    if (!ex->clients && groups) return fedc_error(FEDC_EINVAL, "executor_set_groups: the program has no clients");
    fedc_status st = apply_groups(ex, groups, group_sizes, "executor_set_groups");
    if (!st) fedc__executor_split(ex); /* under MPI, whole groups to ranks */
    return st;
}

fedc_status fedc__hier_check_run(const fedc_executor *ex) {
    for (int i = ex->group_start[ex->groups]; i < ex->clients; i++)
        if (!ex->absent[i])
            return fedc_error(FEDC_EINVAL, "executor_run: client %d is in no group (the %d groups' sizes sum to %d of "
                              "the %d clients); mark the clients after the groups absent (fedc_executor_set_absent)",
                              i, ex->groups, ex->group_start[ex->groups], ex->clients);
    return FEDC_OK;
}

/* A broadcast_down to the clients that only maps read (and that is no output) is
 * not copied: it is its groups operand, which each client reads at its group's
 * place (cohort.c), as broadcast's clients read the server value. Memory stays
 * groups x model. */
void fedc__hier_plan_placement(fedc_executor *ex) {
    const fedc_program *p = ex->p;
    for (int v = 0; v < p->n; v++) {
        const fedc__node *n = &p->nodes[v];
        if (n->op != FEDC_OP_BROADCAST_DOWN || n->type.placement != FEDC_CLIENTS || fedc__is_output(p, v)) continue;
        bool maps_only = true;
        for (int u = v + 1; u < p->n && maps_only; u++)
            for (int i = 0; i < p->nodes[u].nin; i++)
                if (p->nodes[u].in[i] == v && p->nodes[u].op != FEDC_OP_MAP) maps_only = false;
        if (!maps_only) continue;
        ex->plan[v].kind = MEM_ALIAS;
        ex->plan[v].stride = ex->plan[n->in[0]].stride;
        ex->plan[v].by_group = true;
    }
}

void fedc__hier_destroy(fedc_executor *ex) {
    fedc_free(ex->group_start);
    fedc_free(ex->group_local);
    fedc_free(ex->group_none);
    fedc_free(ex->client_group);
}

static bool is_level_op(fedc__op op) {
    return op == FEDC_OP_BROADCAST_DOWN || op == FEDC_OP_SUM_UP || op == FEDC_OP_MEAN_UP ||
           op == FEDC_OP_WEIGHTED_MEAN_UP || op == FEDC_OP_NUM_GROUPS || op == FEDC_OP_GROUP_SIZE;
}

bool fedc__hier_runs(const fedc__node *n) {
    return is_level_op(n->op) || (n->type.placement == FEDC_GROUPS && !fedc__op_has_body(n->op) &&
                                  n->op != FEDC_OP_RESULT && n->op != FEDC_OP_INPUT);
}

static void write_count(fedc_dtype dt, void *out, int count) {
    if (dt == FEDC_F32) *(float *)out = (float)count;
    else if (dt == FEDC_F64) *(double *)out = (double)count;
    else *(int32_t *)out = count;
}

/* Each member's copy: a server value into each group, a group's into each of its
 * clients (or, a groups constant stored as an output, its one copy into each). */
static void run_broadcast_down(fedc_executor *ex, const fedc__step *s) {
    size_t bytes = fedc_type_bytes(&s->n->type);
    const char *in = s->n->op == FEDC_OP_CONSTANT ? s->n->data : s->in[0];
    size_t stride = s->n->op == FEDC_OP_CONSTANT ? 0 : s->in_stride[0];
    bool to_clients = s->n->type.placement == FEDC_CLIENTS;
    for (int g = 0; g < ex->groups; g++) {
        int first = to_clients ? ex->group_start[g] : g, end = to_clients ? ex->group_start[g + 1] : g + 1;
        for (int i = first; i < end; i++) memcpy((char *)s->out + (size_t)i * bytes, in + (size_t)g * stride, bytes);
    }
}

/* Up a level: from the clients, one tree per group in turn (the accumulator
 * moves on at each group's first client, aggregate.c), the clients dropped in
 * this run left out; from the groups, one tree over the groups. */
static fedc_status run_aggregate_up(fedc_executor *ex, const fedc__step *s) {
    fedc__agg *a = s->agg;
    bool clients = s->n->type.placement == FEDC_GROUPS;
    int members = clients ? ex->group_start[ex->groups] : ex->groups; /* those in no group are absent */
    fedc_status st = FEDC_OK;
    fedc__agg_begin(a, s->n, members, s->out);
    for (int i = 0; !st && i < members; i++) {
        const void *w = s->n->nin == 2 ? (const char *)s->in[1] + (size_t)i * s->in_stride[1] : NULL;
        const void *x = clients && ex->dropped[i] ? NULL : (const char *)s->in[0] + (size_t)i * s->in_stride[0];
        st = fedc__agg_add(a, i, x, w);
    }
    return st ? st : fedc__agg_end(a);
}

/* An array op on @groups values runs once per group, in group order. */
static fedc_status run_per_group(fedc_executor *ex, fedc__step *s) {
    const void **base = ex->lists.base;
    size_t bytes = ex->plan[s->v].stride;
    for (int j = 0; j < s->n->nin; j++) base[j] = ex->operands[j];
    unsigned char *out = s->out;
    fedc_status st = FEDC_OK;
    for (int g = 0; !st && g < ex->groups; g++) {
        for (int j = 0; j < s->n->nin; j++) ex->operands[j] = (const char *)base[j] + (size_t)g * ex->strides[j];
        s->out = out + (size_t)g * bytes;
        st = fedc__step_run(s);
        if (st) {
            char msg[900];
            snprintf(msg, sizeof msg, "%s", fedc_errmsg());
            st = fedc_error(st, "group %d: %s", g, msg);
        }
    }
    s->out = out;
    return st;
}

fedc_status fedc__hier_run(fedc_executor *ex, fedc__step *s) {
    switch (s->n->op) {
    case FEDC_OP_NUM_GROUPS: write_count(s->n->type.dtype, s->out, ex->groups); return FEDC_OK;
    case FEDC_OP_GROUP_SIZE:
        for (int g = 0; g < ex->groups; g++)
            write_count(s->n->type.dtype, (char *)s->out + (size_t)g * fedc_type_bytes(&s->n->type),
                        ex->group_start[g + 1] - ex->group_start[g]);
        return FEDC_OK;
    case FEDC_OP_BROADCAST_DOWN:
    case FEDC_OP_CONSTANT: run_broadcast_down(ex, s); return FEDC_OK;
    case FEDC_OP_SUM_UP:
    case FEDC_OP_MEAN_UP:
    case FEDC_OP_WEIGHTED_MEAN_UP: return run_aggregate_up(ex, s);
    default: return run_per_group(ex, s);
    }
}

void fedc__hier_map_job(const fedc_executor *ex, fedc__map_job *job) {
    job->clients = ex->groups;
    job->nlocal = ex->groups;
    job->local = ex->group_local;
    job->naggs = 0;
    job->drop_failed = false; /* a group that fails fails the run */
    job->dropped = ex->group_none;
    job->absent = ex->group_none;
    job->client_ids = NULL;
    job->work = NULL;
}
