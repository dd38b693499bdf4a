/* Plans from training jobs, and a client's batches from a plan: the two ends of
 * a deployment that must agree with `fedc train` bit for bit. fedc_plan_build
 * makes the round and the initial server state exactly as the training job
 * does (the same data, model, seed and steps); a client loads its batches for
 * a round with the training job's own fill (shuffled by seed, round and
 * client), so a deployed round sees what the simulated round sees. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "deploy/deploy.h"
#include "fl/plan_data.h"
#include "fl/train.h"

/* The inputs a deployment can give a round: the server state, the client's
 * state (kept by the client), batches, dataset size and whether it was seen,
 * its domain (found by the client as fedc train finds it), the population;
 * and to a warm start, whose cohort is fixed, each client's place in it
 * (meta/index: its slot). */
static bool deployable_input(const char *name, bool warm) {
    static const char *const ok[] = {"x", "y", "mask", "steps", "key", "meta/num_examples", "meta/seen", "meta/domain",
                                     "meta/population"};
    if (!strncmp(name, "server/", 7) || !strncmp(name, "client/", 7)) return true;
    if (warm && !strcmp(name, "meta/index")) return true;
    for (size_t i = 0; i < sizeof ok / sizeof *ok; i++)
        if (!strcmp(name, ok[i])) return true;
    return false;
}

static fedc_status check_inputs(const fedc_program *round, const char *alg, bool warm) {
    for (int i = 0; i < fedc_program_num_inputs(round); i++) {
        const char *name = fedc_program_input_name(round, i);
        if (!deployable_input(name, warm))
            return fedc_error(FEDC_EUNSUPPORTED, "plan: %s's %s reads \"%s\", which a deployment does not give yet "
                              "(client metadata other than meta/num_examples, meta/seen and meta/domain)", alg,
                              warm ? "warm start" : "round", name);
    }
    return FEDC_OK;
}

/* With --client-domains FILE, the plan carries each client's domain as the
 * job finds them (domains.txt, "client_id,domain" lines, hashed with the
 * programs), so that a client's meta/domain is the simulation's; without it a
 * client finds its domain from its own id, by fedc train's rule (EMNIST writer
 * ids, else 0). *out: fedc_malloc'd text, or NULL. */
static fedc_status domains_text(trainer *t, char **out) {
    *out = NULL;
    if (fedc_program_find_input(t->round, "meta/domain") == FEDC_NONE || !t->c->client_domains) return FEDC_OK;
    fedc_status st = fedc__train_client_domains(t);
    int64_t n = fedc_dataset_num_clients(t->train);
    size_t size = 1;
    for (int64_t i = 0; !st && i < n; i++) {
        const char *id = fedc_dataset_client_id(t->train, i);
        if (!id[0] || strpbrk(id, "\n\r") || id[0] == '#')
            return fedc_error(FEDC_EUNSUPPORTED, "plan: client %lld's id \"%s\" cannot be a line of the plan's domains.txt",
                              (long long)i, id);
        size += strlen(id) + 16;
    }
    char *text = st ? NULL : fedc_malloc(size);
    if (!st && !text) st = fedc_error(FEDC_ENOMEM, "plan: out of memory");
    size_t len = 0;
    for (int64_t i = 0; !st && i < n; i++)
        len += (size_t)snprintf(text + len, size - len, "%s,%d\n", fedc_dataset_client_id(t->train, i), (int)t->client_domain[i]);
    if (text) text[len] = '\0';
    *out = text;
    return st;
}

/* The initial server state: the algorithm's server_init on the model, as the
 * training job runs it; outputs named server/<leaf>. */
static fedc_status server_init(trainer *t, fedc_program **init, fedc_executor **ex) {
    fedc_status st = fedc_algorithm_server_init(t->model, &t->alg, init);
    if (!st) st = fedc_executor_create(ex, *init, &(fedc_exec_options){.clients = 1});
    for (int i = 0; !st && i < fedc_model_num_params(t->model); i++) {
        char name[600];
        snprintf(name, sizeof name, "params/%s", fedc_model_param_name(t->model, i));
        if (fedc_program_find_input(*init, name) != FEDC_NONE)
            st = fedc_executor_bind(*ex, name, t->params + fedc_model_param_offset(t->model, i));
    }
    return st ? st : fedc_executor_run(*ex);
}

static void put(fedc__plan_setting *s, int *n, const char *key, const char *fmt, const char *value) {
    s[*n].key = key;
    snprintf(s[*n].value, sizeof s[*n].value, fmt, value);
    (*n)++;
}

static void put_int(fedc__plan_setting *s, int *n, const char *key, long long v) {
    char buf[32];
    snprintf(buf, sizeof buf, "%lld", v);
    put(s, n, key, "%s", buf);
}

/* What a client needs to load its batches as the training job does, and what
 * the server needs to pick the cohorts. */
static int settings(const trainer *t, fedc__plan_setting *s) {
    const fedc_train_config *c = t->c;
    int n = 0;
    char buf[64];
    put(s, &n, "algorithm", "%s", fedc_algorithm_name(&t->alg));
    put(s, &n, "model", "%s", c->model);
    put(s, &n, "task", "%s", t->task);
    put_int(s, &n, "batch_size", (long long)t->alg.batch_size);
    put_int(s, &n, "max_steps", (long long)t->alg.max_steps);
    put_int(s, &n, "epochs", c->epochs);
    snprintf(buf, sizeof buf, "%llu", (unsigned long long)c->seed);
    put(s, &n, "seed", "%s", buf);
    put_int(s, &n, "population", (long long)fedc_dataset_num_clients(t->train));
    if (c->partition) put(s, &n, "partition", "%s", c->partition);
    if (c->partition || t->train_central) put_int(s, &n, "num_clients", (long long)c->num_clients);
    if (c->holdout > 0) {
        snprintf(buf, sizeof buf, "%.17g", c->holdout);
        put(s, &n, "holdout", "%s", buf);
    }
    if (c->vocab) put(s, &n, "vocab", "%s", c->vocab);
    if (c->vocab_size) put_int(s, &n, "vocab_size", (long long)c->vocab_size);
    if (t->alg.aggregation.secure_sum_bits) put_int(s, &n, "secure_sum_bits", t->alg.aggregation.secure_sum_bits);
    return n;
}

/* The algorithm's warm start (fl.h: a first pass over a cohort before round
 * 1), as fedc train builds it: on its cohort of --clients-per-round clients;
 * *out NULL when the algorithm has none. */
static fedc_status warm_start(trainer *t, fedc_program **out) {
    int k = t->c->clients_per_round;
    int64_t n = fedc_dataset_num_clients(t->train);
    fedc_status st = fedc_algorithm_warm_start(t->model, &t->alg, k > 0 ? k : 1, out);
    if (st || !*out) return st;
    if (k < 1 || k > n)
        st = fedc_error(FEDC_EINVAL, "plan: %s's warm start runs on --clients-per-round %d clients, as fedc train's does, "
                        "but the data has %lld clients", fedc_algorithm_name(&t->alg), k, (long long)n);
    if (!st) st = check_inputs(*out, fedc_algorithm_name(&t->alg), true);
    return st;
}

fedc_status fedc_plan_build(const fedc_train_config *c, const char *dir) {
    trainer t;
    memset(&t, 0, sizeof t);
    t.c = c;
    fedc_program *init = NULL, *client_init = NULL, *warm = NULL;
    fedc_executor *ex = NULL;
    fedc_tensor_entry *e = NULL;
    fedc_status st = fedc__train_open_data(&t);
    if (!st) st = fedc__train_create_model(&t);
    t.alg = c->algorithm;
    if (!st) t.alg.max_steps = fedc__train_max_steps(&t);
    if (!st) st = fedc_algorithm_round(t.model, &t.alg, &t.round);
    if (!st) st = check_inputs(t.round, fedc_algorithm_name(&t.alg), false);
    char *domains = NULL;
    t.k = 1;
    if (!st) st = domains_text(&t, &domains);
    if (!st) st = warm_start(&t, &warm);
    if (!st) st = server_init(&t, &init, &ex);
    if (!st) st = fedc_algorithm_client_init(t.model, &t.alg, &client_init);
    int n = st ? 0 : fedc_program_num_outputs(init);
    if (!st && !(e = fedc_calloc((size_t)n + 1, sizeof *e))) st = fedc_error(FEDC_ENOMEM, "plan: out of memory");
    for (int i = 0; !st && i < n; i++) {
        e[i].name = fedc_program_output_name(init, i);
        st = fedc_executor_output(ex, e[i].name, &e[i].data, &e[i].type);
    }
    fedc__plan_setting s[32];
    int ns = st ? 0 : settings(&t, s);
    if (!st) st = fedc__plan_write(dir, t.round, client_init, warm, c->clients_per_round, domains, s, ns, e, n);
    fedc_free(e), fedc_free(domains);
    fedc_executor_destroy(ex);
    fedc_program_destroy(init);
    fedc_program_destroy(client_init);
    fedc_program_destroy(warm);
    fedc__train_destroy(&t);
    return st;
}

/* ----------------------------------------------------- a client's batches -- */

struct fedc__plan_data {
    fedc_train_config c;
    trainer t;
    pthread_mutex_t lock; /* the dataset is read by one client at a time */
    char data[4096], model[64], task[16], partition[256], vocab[4096];
};

struct fedc__plan_client {
    fedc__plan_data *d;
    int64_t id;
    cohort_buffers cb;
    float num_examples;
    float seen; /* meta/seen: 1 once the client's state has been committed */
};

static fedc_status setting_int(const fedc_plan *p, const char *key, int64_t lo, int64_t hi, int64_t *out, bool need) {
    const char *v = fedc_plan_setting(p, key);
    if (!v && !need) return FEDC_OK;
    char *end = NULL;
    long long x = v ? strtoll(v, &end, 10) : 0;
    if (!v || *end || end == v || x < lo || x > hi)
        return fedc_error(FEDC_EPARSE, "plan: setting %s is %s%s%s; it needs a whole number from %lld to %lld", key,
                          v ? "\"" : "missing", v ? v : "", v ? "\"" : "", (long long)lo, (long long)hi);
    *out = x;
    return FEDC_OK;
}

/* The training job's configuration for this client's data, from the plan. */
static fedc_status config_of(const fedc_plan *p, fedc__plan_data *d, const char *data) {
    fedc_train_config *c = &d->c;
    fedc_train_defaults(c);
    int64_t batch = 0, epochs = 0, num_clients = c->num_clients, vocab_size = 0;
    const char *model = fedc_plan_setting(p, "model"), *task = fedc_plan_setting(p, "task");
    const char *seed = fedc_plan_setting(p, "seed"), *part = fedc_plan_setting(p, "partition");
    const char *hold = fedc_plan_setting(p, "holdout"), *vocab = fedc_plan_setting(p, "vocab");
    if (!model || !task || !seed) return fedc_error(FEDC_EPARSE, "plan: settings model, task and seed are needed");
    char *end;
    c->seed = strtoull(seed, &end, 10);
    if (*end || end == seed || seed[0] == '-') return fedc_error(FEDC_EPARSE, "plan: setting seed \"%s\" is not a number", seed);
    fedc_status st = setting_int(p, "batch_size", 1, 10000, &batch, true);
    if (!st) st = setting_int(p, "epochs", 1, 10000, &epochs, true);
    if (!st) st = setting_int(p, "num_clients", 1, 1 << 20, &num_clients, false);
    if (!st) st = setting_int(p, "vocab_size", 1, (1 << 20) - 4, &vocab_size, false);
    if (st) return st;
    snprintf(d->data, sizeof d->data, "%s", data);
    snprintf(d->model, sizeof d->model, "%s", model);
    snprintf(d->task, sizeof d->task, "%s", task);
    c->data = d->data, c->model = d->model, c->task = d->task;
    c->algorithm.batch_size = batch, c->epochs = (int)epochs, c->num_clients = num_clients, c->vocab_size = vocab_size;
    if (part) c->partition = strcpy(d->partition, part);
    if (vocab) c->vocab = strcpy(d->vocab, vocab);
    if (hold) c->holdout = strtod(hold, &end);
    if (hold && (*end || !(c->holdout > 0 && c->holdout < 1)))
        return fedc_error(FEDC_EPARSE, "plan: setting holdout \"%s\" is not a fraction in (0, 1)", hold);
    return FEDC_OK;
}

fedc_status fedc__plan_data_open(const fedc_plan *p, const char *data, fedc__plan_data **out) {
    *out = NULL;
    fedc__plan_data *d = fedc_calloc(1, sizeof *d);
    if (!d) return fedc_error(FEDC_ENOMEM, "client: out of memory");
    int64_t max_steps = 0;
    fedc_status st = config_of(p, d, data);
    if (!st) st = setting_int(p, "max_steps", 1, 1000000, &max_steps, true);
    d->t.c = &d->c;
    if (!st) st = fedc__train_open_data(&d->t);
    if (!st) st = fedc__train_create_model(&d->t);
    d->t.alg = d->c.algorithm;
    d->t.alg.max_steps = max_steps;
    d->t.k = 1;
    size_t nd = 0;
    const char *domains = fedc__plan_domains(p, &nd);
    if (!st && domains) st = fedc__train_client_domains_text(&d->t, domains, nd, "the plan's domains.txt");
    else if (!st && fedc_program_find_input(fedc_plan_round(p), "meta/domain") != FEDC_NONE)
        st = fedc__train_client_domains(&d->t); /* every client's, as fedc train finds them */
    pthread_mutex_init(&d->lock, NULL);
    if (st) fedc__plan_data_destroy(d);
    else *out = d;
    return st;
}

void fedc__plan_data_destroy(fedc__plan_data *d) {
    if (!d) return;
    fedc__train_destroy(&d->t);
    pthread_mutex_destroy(&d->lock);
    fedc_free(d);
}

int64_t fedc__plan_data_clients(const fedc__plan_data *d) { return fedc_dataset_num_clients(d->t.train); }

fedc_status fedc__plan_client_create(fedc__plan_data *d, int64_t id, fedc__plan_client **out) {
    *out = NULL;
    if (id < 0 || id >= fedc__plan_data_clients(d))
        return fedc_error(FEDC_EINVAL, "client: --client %lld, but %s has clients 0 to %lld", (long long)id, d->data,
                          (long long)fedc__plan_data_clients(d) - 1);
    if (d->t.client_domain && d->t.client_domain[id] < 0)
        return fedc_error(FEDC_EINVAL, "client %lld (\"%s\") has no domain in the plan's domains.txt", (long long)id,
                          fedc_dataset_client_id(d->t.train, id));
    fedc__plan_client *c = fedc_calloc(1, sizeof *c);
    if (!c) return fedc_error(FEDC_ENOMEM, "client: out of memory");
    c->d = d, c->id = id;
    c->num_examples = (float)fedc_dataset_client_examples(d->t.train, id);
    *out = c; /* its buffers are made when it loads its batches */
    return FEDC_OK;
}

void fedc__plan_client_release(fedc__plan_client *c) {
    if (c) fedc__cohort_buffers_free(&c->cb);
}

void fedc__plan_client_destroy(fedc__plan_client *c) {
    if (!c) return;
    fedc__cohort_buffers_free(&c->cb);
    fedc_free(c);
}

void fedc__plan_client_seen(fedc__plan_client *c) { c->seen = 1; }

const char *fedc__plan_client_name(const fedc__plan_client *c) { return fedc_dataset_client_id(c->d->t.train, c->id); }

/* The client's inputs by name, in its buffers (x, y, mask, steps, key, meta/...). */
const void *fedc__plan_client_input(const fedc__plan_client *c, const char *name) {
    const struct {
        const char *name;
        const void *data;
    } in[] = {{"x", c->cb.x}, {"y", c->cb.y}, {"mask", c->cb.mask}, {"steps", c->cb.steps}, {"key", c->cb.key},
              {"meta/num_examples", &c->num_examples}, {"meta/seen", &c->seen},
              {"meta/domain", c->d->t.client_domain ? &c->d->t.client_domain[c->id] : NULL}};
    for (size_t i = 0; i < sizeof in / sizeof *in; i++)
        if (!strcmp(name, in[i].name)) return in[i].data;
    return NULL;
}

fedc_status fedc__plan_client_load(fedc__plan_client *c, uint32_t round, fedc_executor *ex, const fedc_program *q) {
    if (!c->cb.x) {
        fedc_status st = fedc__cohort_buffers_init(&c->cb, c->d->t.model, 1, c->d->t.alg.batch_size, c->d->t.alg.max_steps,
                                                   false);
        if (st) return st;
    }
    pthread_mutex_lock(&c->d->lock);
    bool strict = c->d->c.strict;
    c->d->c.strict = true; /* a client whose data fail says so, rather than training on NaN */
    fedc_status st = fedc__train_fill(&c->d->t, c->d->t.train, &c->id, 1, &c->cb, true, round);
    c->d->c.strict = strict;
    pthread_mutex_unlock(&c->d->lock);
    static const char *const names[] = {"x", "y", "mask", "steps", "key", "meta/num_examples", "meta/seen", "meta/domain"};
    for (size_t i = 0; !st && i < sizeof names / sizeof *names; i++)
        if (fedc_program_find_input(q, names[i]) != FEDC_NONE)
            st = fedc_executor_bind(ex, names[i], fedc__plan_client_input(c, names[i]));
    return st;
}
