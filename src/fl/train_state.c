/* An algorithm's state in the training job, by name, for every algorithm alike:
 *
 *   server  the leaves of fedc_algorithm_server_init's outputs, run once on the
 *           model's initial parameters; server/params/<param> are the model's own
 *           buffer (what evaluation reads and checkpoints keep by the model's names)
 *   client  the cohort's leaves of fedc_algorithm_client_init's outputs: before each
 *           round, every sampled client's record is read from the store (its
 *           client_init value if it has none) and after it, written back (unless
 *           the client was dropped); the store is rank 0's, which broadcasts
 *   meta    meta/num_examples: each sampled client's dataset size; meta/population:
 *           the training data's number of clients; meta/seen: whether a client had a
 *           stored state; meta/domain: its domain (src/fl/train_domains.c);
 *           meta/index: its place in the cohort
 *
 * The round program binds all of them by name (src/fl/fl.h's interface). An
 * algorithm's own evaluation may read the client state too: each test client's
 * is that of the training client of the same id, as of the evaluated round. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fl/client_store.h"
#include "fl/train.h"

static bool is_root(void) { return fedc_mpi_rank() == 0; }

static void free_set(state_set *s) {
    for (int i = 0; i < s->n; i++) fedc_free(s->leaf[i].name), fedc_free(s->leaf[i].saved_as);
    fedc_free(s->leaf);
    fedc_free(s->block);
    memset(s, 0, sizeof *s);
}

/* The leaves of p's outputs under prefix: names and types, no memory yet. */
static fedc_status leaves_of(const fedc_program *p, const char *prefix, state_set *s) {
    size_t k = strlen(prefix);
    int n = fedc_program_num_outputs(p);
    s->leaf = fedc_calloc((size_t)(n ? n : 1), sizeof *s->leaf);
    if (!s->leaf) return fedc_error(FEDC_ENOMEM, "train: out of memory");
    for (int i = 0; i < n; i++) {
        const char *name = fedc_program_output_name(p, i);
        if (strncmp(name, prefix, k) || name[k] != '/') continue;
        state_leaf *l = &s->leaf[s->n++];
        l->type = fedc__placed(fedc_value_type(p, fedc_program_output_value(p, i)), FEDC_LOCAL);
        l->bytes = fedc_type_bytes(&l->type);
        l->name = fedc_calloc(strlen(name + k + 1) + 1, 1);
        if (!l->name) return fedc_error(FEDC_ENOMEM, "train: out of memory");
        strcpy(l->name, name + k + 1);
        s->record_bytes += l->bytes;
    }
    return FEDC_OK;
}

/* The model parameter a server leaf "params/<param>" is, or -1. */
static int model_param(const fedc_model *m, const char *leaf) {
    if (strncmp(leaf, "params/", 7)) return -1;
    for (int i = 0; i < fedc_model_num_params(m); i++)
        if (!strcmp(leaf + 7, fedc_model_param_name(m, i))) return i;
    return -1;
}

/* Copies every output prefix/<leaf> of ex into the leaves' memory. */
static fedc_status take(const fedc_executor *ex, const char *prefix, const state_set *s, int clients) {
    for (int i = 0; i < s->n; i++) {
        char name[600];
        snprintf(name, sizeof name, "%s/%s", prefix, s->leaf[i].name);
        const void *data;
        fedc_status st = fedc_executor_output(ex, name, &data, NULL);
        if (st) return st;
        memcpy(s->leaf[i].data, data, s->leaf[i].bytes * (size_t)clients);
    }
    return FEDC_OK;
}

/* Runs a program of no clients with the model bound as params/<param>. */
static fedc_status run_init(trainer *t, const fedc_program *p, fedc_executor **ex) {
    fedc_exec_options o = {.clients = 1};
    fedc_status st = fedc_executor_create(ex, p, &o);
    for (int i = 0; !st && i < fedc_model_num_params(t->model); i++) {
        char name[600];
        snprintf(name, sizeof name, "params/%s", fedc_model_param_name(t->model, i));
        if (fedc_program_find_input(p, name) != FEDC_NONE)
            st = fedc_executor_bind(*ex, name, t->params + fedc_model_param_offset(t->model, i));
    }
    return st ? st : fedc_executor_run(*ex);
}

static fedc_status create_server(trainer *t) {
    fedc_program *init = NULL;
    fedc_executor *ex = NULL;
    state_set *s = &t->server;
    fedc_status st = fedc_algorithm_server_init(t->model, &t->alg, &init);
    if (!st) st = leaves_of(init, "server", s);
    size_t own = 0; /* the bytes of the leaves that are not the model */
    for (int i = 0; !st && i < s->n; i++) own += model_param(t->model, s->leaf[i].name) < 0 ? s->leaf[i].bytes : 0;
    if (!st && !(s->block = fedc_malloc(own ? own : 1))) st = fedc_error(FEDC_ENOMEM, "train: out of memory for the server state");
    char *next = s->block;
    for (int i = 0; !st && i < s->n; i++) { /* checkpoints keep the model by its names, the rest as server/<leaf> */
        state_leaf *l = &s->leaf[i];
        int k = model_param(t->model, l->name);
        l->data = k >= 0 ? (void *)(t->params + fedc_model_param_offset(t->model, k)) : next;
        if (k < 0) next += l->bytes;
        size_t n = strlen(l->name) + 8;
        if (!(l->saved_as = fedc_malloc(n))) st = fedc_error(FEDC_ENOMEM, "train: out of memory");
        else if (k >= 0) snprintf(l->saved_as, n, "%s", fedc_model_param_name(t->model, k));
        else snprintf(l->saved_as, n, "server/%s", l->name);
    }
    if (!st) st = run_init(t, init, &ex);
    if (!st) st = take(ex, "server", s, 1);
    fedc_executor_destroy(ex);
    fedc_program_destroy(init);
    return st;
}

/* "scaffold: c/dense/w f32[784,10]; ...", the record's layout as the store keeps it. */
static char *layout_text(const trainer *t) {
    size_t cap = 64 + (size_t)t->client.n * 640, used = 0;
    char *text = fedc_malloc(cap);
    if (!text) return NULL;
    used += (size_t)snprintf(text, cap, "%s:", fedc_algorithm_name(&t->alg));
    for (int i = 0; i < t->client.n && used < cap; i++) {
        char ty[64];
        used += (size_t)snprintf(text + used, cap - used, " %s %s;", t->client.leaf[i].name,
                                 fedc_type_str(&t->client.leaf[i].type, ty, sizeof ty));
    }
    return text;
}

static fedc_status open_store(trainer *t) {
    char path[4200], *layout = layout_text(t);
    if (!layout) return fedc_error(FEDC_ENOMEM, "train: out of memory");
    snprintf(path, sizeof path, "%s/client_state.fcs", t->c->out_dir);
    fedc_status st = fedc_make_dirs(t->c->out_dir);
    char checkpoint[4200]; /* without one, resuming fails on that, named */
    snprintf(checkpoint, sizeof checkpoint, "%s/checkpoint.safetensors", t->c->out_dir);
    if (!st && t->c->resume && access(checkpoint, F_OK) == 0 && access(path, F_OK) != 0)
        st = fedc_error(FEDC_EIO, "%s: the clients' state that the checkpoint needs is missing (resume with it, or "
                        "train afresh in another --out)", path);
    /* a fresh run replaces what an earlier run in this directory kept (as it does
     * its metrics and checkpoint); a resume forgets what was written after its
     * checkpoint (fedc__train_state_resume) */
    if (!st && !t->c->resume && unlink(path) != 0 && errno != ENOENT)
        st = fedc_error(FEDC_EIO, "%s: cannot remove the last run's client state: %s", path, strerror(errno));
    if (!st) st = fedc__client_store_open(&t->store, path, fedc_dataset_num_clients(t->train), t->client.record_bytes, layout);
    fedc_free(layout);
    return st;
}

/* Memory for k clients' values of s's leaves (each leaf's k values together) and
 * for k records, as the store reads and writes them. */
static fedc_status alloc_cohort(state_set *s, int k, void **records) {
    size_t bytes = s->record_bytes * (size_t)k;
    if (!(s->block = fedc_malloc(bytes ? bytes : 1)) || !(*records = fedc_malloc(bytes ? bytes : 1)))
        return fedc_error(FEDC_ENOMEM, "train: out of memory for %d clients' state", k);
    char *next = s->block;
    for (int i = 0; i < s->n; i++) {
        s->leaf[i].data = next;
        next += s->leaf[i].bytes * (size_t)k;
    }
    return FEDC_OK;
}

static fedc_status create_clients(trainer *t, int k) {
    fedc_program *init = NULL;
    fedc_executor *ex = NULL;
    state_set *s = &t->client;
    fedc_status st = fedc_algorithm_client_init(t->model, &t->alg, &init);
    if (st || !init) return st; /* a stateless algorithm */
    st = leaves_of(init, "client", s);
    if (!st) st = alloc_cohort(s, k, &t->records);
    if (!st && !(t->client_default = fedc_malloc(s->record_bytes)))
        st = fedc_error(FEDC_ENOMEM, "train: out of memory for the cohort's client state");
    if (!st) st = run_init(t, init, &ex);
    size_t at = 0; /* the default record: the leaves of client_init, one after another */
    for (int i = 0; !st && i < s->n; i++) {
        char name[600];
        const void *data;
        snprintf(name, sizeof name, "client/%s", s->leaf[i].name);
        st = fedc_executor_output(ex, name, &data, NULL);
        if (!st) memcpy((char *)t->client_default + at, data, s->leaf[i].bytes), at += s->leaf[i].bytes;
    }
    fedc_executor_destroy(ex);
    fedc_program_destroy(init);
    if (!st && is_root()) st = open_store(t);
    return st;
}

fedc_status fedc__train_state_create(trainer *t, int k) {
    fedc_status st = create_server(t);
    if (!st) st = create_clients(t, k);
    if (!st) st = fedc__train_group_state_create(t);
    if (!st && (!(t->meta_examples = fedc_calloc((size_t)k, sizeof *t->meta_examples)) ||
                !(t->meta_seen = fedc_calloc((size_t)k, sizeof *t->meta_seen)) ||
                !(t->meta_index = fedc_calloc((size_t)k, sizeof *t->meta_index)) ||
                !(t->meta_malicious = fedc_calloc((size_t)k, sizeof *t->meta_malicious))))
        st = fedc_error(FEDC_ENOMEM, "train: out of memory");
    for (int i = 0; !st && i < k; i++) t->meta_index[i] = (float)i;
    return st;
}

void fedc__train_state_free(trainer *t) {
    fedc__client_store_close(t->store);
    t->store = NULL;
    fedc__train_group_state_free(t);
    free_set(&t->server);
    free_set(&t->client);
    free_set(&t->eval_client);
    fedc_free(t->client_default);
    fedc_free(t->records);
    fedc_free(t->eval_records);
    fedc_free(t->eval_seen);
    fedc_free(t->eval_train_client);
    t->eval_records = NULL, t->eval_seen = NULL, t->eval_train_client = NULL;
    fedc_free(t->meta_examples);
    fedc_free(t->meta_seen);
    fedc_free(t->meta_index);
    fedc_free(t->meta_malicious);
    fedc_free(t->meta_domain);
    fedc_free(t->client_domain);
    t->client_default = t->records = NULL;
    t->meta_examples = t->meta_seen = t->meta_index = t->meta_malicious = t->meta_domain = t->client_domain = NULL;
}

static fedc_status bind_set(fedc_executor *ex, const char *prefix, const state_set *s) {
    fedc_status st = FEDC_OK;
    for (int i = 0; !st && i < s->n; i++) {
        char name[600];
        snprintf(name, sizeof name, "%s/%s", prefix, s->leaf[i].name);
        st = fedc_executor_bind(ex, name, s->leaf[i].data);
    }
    return st;
}

fedc_status fedc__train_state_bind(trainer *t, fedc_executor *ex, const fedc_program *round) {
    fedc_status st = bind_set(ex, "server", &t->server);
    if (!st) st = bind_set(ex, "client", &t->client);
    if (!st) st = fedc__train_group_state_bind(t, ex, round);
    t->meta_population = (float)fedc_dataset_num_clients(t->train);
    const struct {
        const char *name;
        void *data;
    } meta[] = {{"meta/num_examples", t->meta_examples}, {"meta/population", &t->meta_population},
                {"meta/seen", t->meta_seen}, {"meta/index", t->meta_index}, {FEDC_ATTACK_MALICIOUS, t->meta_malicious}};
    for (size_t i = 0; !st && i < sizeof meta / sizeof meta[0]; i++)
        if (fedc_program_find_input(round, meta[i].name) != FEDC_NONE) st = fedc_executor_bind(ex, meta[i].name, meta[i].data);
    if (!st && fedc_program_find_input(round, "meta/domain") != FEDC_NONE && !t->client_domain)
        st = fedc__train_client_domains(t);
    if (!st && t->meta_domain && fedc_program_find_input(round, "meta/domain") != FEDC_NONE)
        st = fedc_executor_bind(ex, "meta/domain", t->meta_domain);
    return st;
}

fedc_status fedc__train_state_take_server(trainer *t, const fedc_executor *ex) { return take(ex, "server", &t->server, 1); }

/* ---------------------------------------------------------- the rounds -- */

/* Rank 0 reads the records of clients ids[0..k) (-1: a client with none) as of
 * the start of round r, or the default record, into `records`; every rank gets
 * them, scattered into s's leaves, and seen[i] = whether client i had one. */
static fedc_status read_records(trainer *t, int r, int k, const int64_t *ids, void *records, state_set *s, float *seen) {
    void **dst = fedc_malloc((size_t)k * sizeof *dst);
    bool *found = fedc_calloc((size_t)k, sizeof *found);
    int64_t *kept = fedc_malloc((size_t)k * sizeof *kept);
    fedc_status st = dst && found && kept ? FEDC_OK : fedc_error(FEDC_ENOMEM, "train: out of memory");
    int n = 0; /* the clients that can have a record, first */
    for (int i = 0; !st && i < k; i++)
        if (ids[i] >= 0) dst[n] = (char *)records + (size_t)i * s->record_bytes, kept[n++] = ids[i];
    if (!st && is_root()) st = fedc__client_store_read(t->store, (uint32_t)r, n, kept, dst, found);
    for (int i = k - 1, j = n - 1; !st && is_root() && i >= 0; i--) { /* found[] back in the cohort's order */
        bool had = ids[i] >= 0 && found[j--];
        if (!had) memcpy((char *)records + (size_t)i * s->record_bytes, t->client_default, s->record_bytes);
        seen[i] = had;
    }
    fedc_free(dst);
    fedc_free(found);
    fedc_free(kept);
    st = fedc_mpi_agree(st);
    if (!st) st = fedc_mpi_broadcast(records, s->record_bytes * (size_t)k);
    if (!st) st = fedc_mpi_broadcast(seen, (size_t)k * sizeof *seen);
    for (int i = 0; !st && i < k; i++) {
        size_t at = 0;
        for (int j = 0; j < s->n; j++) {
            memcpy((char *)s->leaf[j].data + (size_t)i * s->leaf[j].bytes,
                   (char *)records + (size_t)i * s->record_bytes + at, s->leaf[j].bytes);
            at += s->leaf[j].bytes;
        }
    }
    return st;
}

fedc_status fedc__train_state_before_round(trainer *t, int r) {
    int k = t->k;
    for (int i = 0; i < k; i++) t->meta_examples[i] = (float)fedc_dataset_client_examples(t->train, t->sampled[i]);
    for (int i = 0; i < k; i++) /* the population's malicious clients, by id (fedc/attack.h) */
        t->meta_malicious[i] = fedc_attack_malicious(&t->alg.aggregation.attack, t->c->seed, t->sampled[i]);
    for (int i = 0; t->meta_domain && i < k; i++) t->meta_domain[i] = t->client_domain[t->sampled[i]];
    fedc__train_group_state_before_round(t);
    return t->client.n ? read_records(t, r, k, t->sampled, t->records, &t->client, t->meta_seen) : FEDC_OK;
}

/* ---------------------------------------------- the evaluation's clients -- */

typedef struct id_index {
    const char *id;
    int64_t client;
} id_index;

static int cmp_id(const void *a, const void *b) {
    return strcmp(((const id_index *)a)->id, ((const id_index *)b)->id);
}

/* Each test client's training client: the one of the same id, or -1. */
static fedc_status match_test_clients(trainer *t, const fedc_dataset *test) {
    int64_t n = fedc_dataset_num_clients(test), m = fedc_dataset_num_clients(t->train);
    id_index *index = fedc_malloc((size_t)(m ? m : 1) * sizeof *index);
    t->eval_train_client = fedc_malloc((size_t)(n ? n : 1) * sizeof *t->eval_train_client);
    if (!index || !t->eval_train_client) {
        fedc_free(index);
        return fedc_error(FEDC_ENOMEM, "evaluate: out of memory for %lld test clients", (long long)n);
    }
    int64_t used = 0;
    for (int64_t i = 0; i < m; i++)
        if (fedc_dataset_client_id(t->train, i)) index[used++] = (id_index){fedc_dataset_client_id(t->train, i), i};
    qsort(index, (size_t)used, sizeof *index, cmp_id);
    for (int64_t i = 0; i < n; i++) {
        id_index key = {fedc_dataset_client_id(test, i), -1};
        const id_index *hit = key.id && used ? bsearch(&key, index, (size_t)used, sizeof *index, cmp_id) : NULL;
        t->eval_train_client[i] = test == t->train ? i : hit ? hit->client : -1;
    }
    fedc_free(index);
    return FEDC_OK;
}

/* An evaluation that reads client/<leaf> gets the test clients' state: the
 * cohort's leaves, its meta/seen and each test client's training client. */
static fedc_status create_eval_clients(trainer *t, const fedc_dataset *test, int ek) {
    state_set *s = &t->eval_client;
    if (!(s->leaf = fedc_calloc((size_t)t->client.n, sizeof *s->leaf)))
        return fedc_error(FEDC_ENOMEM, "evaluate: out of memory");
    for (; s->n < t->client.n; s->n++) {
        state_leaf *l = &s->leaf[s->n];
        *l = t->client.leaf[s->n];
        l->saved_as = NULL;
        if (!(l->name = fedc_malloc(strlen(t->client.leaf[s->n].name) + 1)))
            return fedc_error(FEDC_ENOMEM, "evaluate: out of memory");
        strcpy(l->name, t->client.leaf[s->n].name);
    }
    s->record_bytes = t->client.record_bytes;
    fedc_status st = alloc_cohort(s, ek, &t->eval_records);
    if (!st && !(t->eval_seen = fedc_calloc((size_t)ek, sizeof *t->eval_seen)))
        st = fedc_error(FEDC_ENOMEM, "evaluate: out of memory");
    return st ? st : match_test_clients(t, test);
}

fedc_status fedc__train_state_bind_eval(trainer *t, fedc_executor *ex, const fedc_dataset *test, int ek) {
    fedc_status st = bind_set(ex, "server", &t->server);
    char first[600];
    snprintf(first, sizeof first, "client/%s", t->client.n ? t->client.leaf[0].name : "");
    if (st || !t->client.n || fedc_program_find_input(t->eval, first) == FEDC_NONE) return st;
    st = create_eval_clients(t, test, ek);
    if (!st) st = bind_set(ex, "client", &t->eval_client);
    if (!st && fedc_program_find_input(t->eval, "meta/seen") != FEDC_NONE)
        st = fedc_executor_bind(ex, "meta/seen", t->eval_seen);
    return st;
}

fedc_status fedc__train_state_before_eval(trainer *t, int r, const int64_t *test_clients, int ek) {
    if (!t->eval_client.n) return FEDC_OK;
    int64_t ids[64];
    if (ek > 64) return fedc_error(FEDC_EINVAL, "evaluate: %d clients at a time, at most 64", ek);
    for (int i = 0; i < ek; i++) ids[i] = t->eval_train_client[test_clients[i]];
    return read_records(t, r + 1, ek, ids, t->eval_records, &t->eval_client, t->eval_seen);
}

/* Rank 0 gathers the new records of the clients that were not dropped and
 * writes them. */
static fedc_status write_cohort(trainer *t, int r, int k) {
    state_set *s = &t->client;
    int *dropped = fedc_malloc((size_t)k * sizeof *dropped), nd = dropped ? fedc_executor_dropped(t->round_ex, dropped, k) : 0;
    const void **src = fedc_malloc((size_t)k * sizeof *src), **leaf = fedc_malloc((size_t)s->n * sizeof *leaf);
    int64_t *ids = fedc_malloc((size_t)k * sizeof *ids);
    fedc_status st = dropped && src && leaf && ids ? FEDC_OK : fedc_error(FEDC_ENOMEM, "train: out of memory");
    for (int j = 0; !st && j < s->n; j++) { /* each leaf's output, the cohort's values one after another */
        char name[600];
        snprintf(name, sizeof name, "client/%s", s->leaf[j].name);
        st = fedc_executor_output(t->round_ex, name, &leaf[j], NULL);
    }
    int n = 0;
    for (int i = 0, d = 0; !st && i < k; i++) {
        if (d < nd && dropped[d] == i) { /* its state stays as it was */
            d++;
            continue;
        }
        if (t->absent[i]) continue; /* not in this round's (Poisson) cohort */
        char *rec = (char *)t->records + (size_t)n * s->record_bytes;
        size_t at = 0;
        for (int j = 0; j < s->n; at += s->leaf[j].bytes, j++)
            memcpy(rec + at, (const char *)leaf[j] + (size_t)i * s->leaf[j].bytes, s->leaf[j].bytes);
        src[n] = rec, ids[n++] = t->sampled[i];
    }
    if (!st) st = fedc__client_store_write(t->store, (uint32_t)r, n, ids, (const void *const *)src);
    fedc_free(dropped);
    fedc_free(src);
    fedc_free(leaf);
    fedc_free(ids);
    return st;
}

fedc_status fedc__train_state_after_round(trainer *t, int r) {
    fedc_status st = take(t->round_ex, "server", &t->server, 1);
    if (!st) st = fedc__train_group_state_after_round(t);
    if (!st && t->client.n) st = fedc_mpi_agree(is_root() ? write_cohort(t, r, t->k) : FEDC_OK);
    return st;
}

/* ---------------------------------------------- checkpoints and resume -- */

int fedc__train_state_entries(const trainer *t, fedc_tensor_entry *e) {
    int n = 0;
    for (int i = 0; i < t->server.n; i++, n++) {
        const state_leaf *l = &t->server.leaf[i];
        if (e) e[n] = (fedc_tensor_entry){l->saved_as, l->type, l->data};
    }
    return n + fedc__train_group_state_entries(t, e ? e + n : NULL);
}

fedc_status fedc__train_state_restore(trainer *t, const fedc_safetensors *s) {
    for (int i = 0; i < t->server.n; i++) {
        const state_leaf *l = &t->server.leaf[i];
        fedc_tensor_entry e;
        const char *name = l->saved_as;
        fedc_status st = fedc_safetensors_find(s, name, &e);
        if (st) return st;
        if (e.type.dtype != l->type.dtype || !fedc_type_same_shape(&e.type, &l->type)) {
            char a[64], b[64];
            return fedc_error(FEDC_EPARSE, "checkpoint: \"%s\" is %s, the %s state needs %s", name,
                              fedc_type_str(&e.type, a, sizeof a), fedc_algorithm_name(&t->alg),
                              fedc_type_str(&l->type, b, sizeof b));
        }
        memcpy(l->data, e.data, l->bytes);
    }
    return fedc__train_group_state_restore(t, s);
}

fedc_status fedc__train_state_broadcast(trainer *t) {
    fedc_status st = FEDC_OK;
    for (int i = 0; !st && i < t->server.n; i++) st = fedc_mpi_broadcast(t->server.leaf[i].data, t->server.leaf[i].bytes);
    return st ? st : fedc__train_group_state_broadcast(t);
}

fedc_status fedc__train_state_sync(trainer *t) { return t->store ? fedc__client_store_sync(t->store) : FEDC_OK; }

fedc_status fedc__train_state_checkpointed(trainer *t, int next_round) {
    return t->store ? fedc__client_store_checkpoint(t->store, (uint32_t)next_round) : FEDC_OK;
}

fedc_status fedc__train_state_resume(trainer *t, int next_round) {
    return t->store ? fedc__client_store_resume(t->store, (uint32_t)next_round) : FEDC_OK;
}

bool fedc__train_nonfinite(const trainer *t, char *what, size_t size, int64_t *at) {
    for (int i = 0; i < t->server.n; i++) {
        const state_leaf *l = &t->server.leaf[i];
        if (l->type.dtype != FEDC_F32) continue;
        const float *v = l->data;
        for (size_t j = 0; j < l->bytes / sizeof(float); j++) {
            if (isfinite(v[j])) continue;
            snprintf(what, size, "%s", l->saved_as);
            *at = (int64_t)j;
            return true;
        }
    }
    return fedc__train_group_state_nonfinite(t, what, size, at);
}
