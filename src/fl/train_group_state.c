/* A grouped algorithm's per-group state in the training job (fedc_algorithm_def's
 * group_init; hierfedopt's server optimizers): every group of the partition keeps
 * its own, in memory (groups x state, as the groups' models are), from
 * group_init's value at the start. Before each round the round's groups' values
 * are copied into the round's group/<leaf> inputs, in the round's group order
 * (t->round_group_id), and after it the round's outputs back: a group the round
 * did not draw keeps its state as it was. A checkpoint holds each leaf as one
 * tensor group/<leaf> of [groups, ...leaf], so that a resume continues bitwise. */
#include <math.h>
#include <string.h>

#include "fl/train.h"

struct train_group_state {
    int groups;   /* of the partition (1 without --groups: one group of every client) */
    int slots;    /* the most groups a round has: the round inputs' values */
    state_set now; /* the round's groups' values, each leaf's `slots` values together */
    void **all;   /* per leaf: every group's values, groups x the leaf's type */
    fedc_type *all_type; /* per leaf: [groups, ...leaf] */
};

static fedc_status no_memory(void) { return fedc_error(FEDC_ENOMEM, "train: out of memory for the groups' state"); }

/* The leaves of group_init's outputs and their memory, every group's from `init`. */
static fedc_status allocate(train_group_state *g, const fedc_program *init, const fedc_executor *ex) {
    int n = fedc_program_num_outputs(init);
    state_set *s = &g->now;
    s->leaf = fedc_calloc((size_t)n, sizeof *s->leaf);
    g->all = fedc_calloc((size_t)n, sizeof *g->all);
    g->all_type = fedc_calloc((size_t)n, sizeof *g->all_type);
    if (!s->leaf || !g->all || !g->all_type) return no_memory();
    for (; s->n < n; s->n++) {
        state_leaf *l = &s->leaf[s->n];
        const char *name = fedc_program_output_name(init, s->n); /* group/<leaf> */
        l->type = fedc__placed(fedc_value_type(init, fedc_program_output_value(init, s->n)), FEDC_LOCAL);
        l->bytes = fedc_type_bytes(&l->type);
        if (l->type.rank == FEDC_MAX_RANK)
            return fedc_error(FEDC_EUNSUPPORTED, "train: the group state \"%s\" has rank %d; a checkpoint keeps it "
                              "with one more dimension, the groups", name, FEDC_MAX_RANK);
        int64_t dims[FEDC_MAX_RANK] = {g->groups};
        memcpy(dims + 1, l->type.dims, (size_t)l->type.rank * sizeof *dims);
        g->all_type[s->n] = fedc_type_make(l->type.dtype, l->type.rank + 1, dims);
        l->saved_as = fedc_malloc(strlen(name) + 1);
        l->name = fedc_malloc(strlen(name) + 1);
        l->data = fedc_malloc(l->bytes * (size_t)g->slots + 1);
        g->all[s->n] = fedc_malloc(l->bytes * (size_t)g->groups + 1);
        if (!l->saved_as || !l->name || !l->data || !g->all[s->n]) return no_memory();
        strcpy(l->saved_as, name);
        strcpy(l->name, name);
        const void *value;
        fedc_status st = fedc_executor_output(ex, name, &value, NULL);
        for (int k = 0; !st && k < g->groups; k++) memcpy((char *)g->all[s->n] + (size_t)k * l->bytes, value, l->bytes);
        if (st) return st;
    }
    return FEDC_OK;
}

fedc_status fedc__train_group_state_create(trainer *t) {
    fedc_program *init = NULL;
    fedc_executor *ex = NULL;
    fedc_status st = fedc_algorithm_group_init(t->model, &t->alg, &init);
    if (st || !init) return st; /* no group state */
    train_group_state *g = t->group_state = fedc_calloc(1, sizeof *g);
    if (!g) st = no_memory();
    if (!st) {
        g->groups = t->groups ? t->groups : 1;
        g->slots = t->groups ? t->round_groups : 1; /* fedc__train_groups_cohort's most */
        st = fedc_executor_create(&ex, init, &(fedc_exec_options){.clients = 1});
    }
    if (!st) st = fedc_executor_run(ex);
    if (!st) st = allocate(g, init, ex);
    fedc_executor_destroy(ex);
    fedc_program_destroy(init);
    return st;
}

void fedc__train_group_state_free(trainer *t) {
    train_group_state *g = t->group_state;
    if (!g) return;
    for (int i = 0; i < g->now.n; i++) {
        state_leaf *l = &g->now.leaf[i];
        fedc_free(l->name), fedc_free(l->saved_as), fedc_free(l->data), fedc_free(g->all[i]);
    }
    fedc_free(g->now.leaf), fedc_free(g->all), fedc_free(g->all_type);
    fedc_free(g);
    t->group_state = NULL;
}

fedc_status fedc__train_group_state_bind(trainer *t, fedc_executor *ex, const fedc_program *round) {
    const train_group_state *g = t->group_state;
    fedc_status st = FEDC_OK;
    for (int i = 0; g && !st && i < g->now.n; i++) /* a warm start reads none */
        if (fedc_program_find_input(round, g->now.leaf[i].name) != FEDC_NONE)
            st = fedc_executor_bind(ex, g->now.leaf[i].name, g->now.leaf[i].data);
    return st;
}

/* The round's group j's id in the partition. */
static int group_id(const trainer *t, int j) { return t->groups ? t->round_group_id[j] : 0; }
static int round_groups(const trainer *t) { return t->groups ? t->round_groups : 1; }

void fedc__train_group_state_before_round(trainer *t) {
    const train_group_state *g = t->group_state;
    for (int i = 0; g && i < g->now.n; i++) {
        const state_leaf *l = &g->now.leaf[i];
        for (int j = 0; j < round_groups(t); j++)
            memcpy((char *)l->data + (size_t)j * l->bytes, (const char *)g->all[i] + (size_t)group_id(t, j) * l->bytes,
                   l->bytes);
    }
}

fedc_status fedc__train_group_state_after_round(trainer *t) {
    const train_group_state *g = t->group_state;
    for (int i = 0; g && i < g->now.n; i++) {
        const state_leaf *l = &g->now.leaf[i];
        const void *v;
        fedc_status st = fedc_executor_output(t->round_ex, l->name, &v, NULL);
        if (st) return st;
        for (int j = 0; j < round_groups(t); j++)
            memcpy((char *)g->all[i] + (size_t)group_id(t, j) * l->bytes, (const char *)v + (size_t)j * l->bytes,
                   l->bytes);
    }
    return FEDC_OK;
}

int fedc__train_group_state_entries(const trainer *t, fedc_tensor_entry *e) {
    const train_group_state *g = t->group_state;
    if (!g) return 0;
    for (int i = 0; e && i < g->now.n; i++) e[i] = (fedc_tensor_entry){g->now.leaf[i].saved_as, g->all_type[i], g->all[i]};
    return g->now.n;
}

fedc_status fedc__train_group_state_restore(trainer *t, const fedc_safetensors *s) {
    const train_group_state *g = t->group_state;
    for (int i = 0; g && i < g->now.n; i++) {
        const char *name = g->now.leaf[i].saved_as;
        fedc_tensor_entry e;
        fedc_status st = fedc_safetensors_find(s, name, &e);
        if (st) return st;
        if (e.type.dtype != g->all_type[i].dtype || !fedc_type_same_shape(&e.type, &g->all_type[i])) {
            char a[64], b[64];
            return fedc_error(FEDC_EPARSE, "checkpoint: \"%s\" is %s, the %s state of %d groups needs %s", name,
                              fedc_type_str(&e.type, a, sizeof a), fedc_algorithm_name(&t->alg), g->groups,
                              fedc_type_str(&g->all_type[i], b, sizeof b));
        }
        memcpy(g->all[i], e.data, fedc_type_bytes(&e.type));
    }
    return FEDC_OK;
}

fedc_status fedc__train_group_state_broadcast(trainer *t) {
    const train_group_state *g = t->group_state;
    fedc_status st = FEDC_OK;
    for (int i = 0; g && !st && i < g->now.n; i++) st = fedc_mpi_broadcast(g->all[i], fedc_type_bytes(&g->all_type[i]));
    return st;
}

bool fedc__train_group_state_nonfinite(const trainer *t, char *what, size_t size, int64_t *at) {
    const train_group_state *g = t->group_state;
    for (int i = 0; g && i < g->now.n; i++) {
        if (g->all_type[i].dtype != FEDC_F32) continue;
        const float *v = g->all[i];
        for (int64_t j = 0; j < fedc_type_count(&g->all_type[i]); j++) {
            if (isfinite(v[j])) continue;
            snprintf(what, size, "%s", g->now.leaf[i].saved_as);
            *at = j;
            return true;
        }
    }
    return false;
}
