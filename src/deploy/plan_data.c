/* A deployed client's batches, from a plan (deploy/plan_data.h): the training
 * job's data opened with the plan's settings, and each client's batches for a
 * round filled by fedc train's own fill (shuffled by seed, round and client),
 * so that a deployed round sees what the simulated round sees. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "deploy/deploy.h"
#include "deploy/plan_data.h"
#include "fl/train.h"

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

void fedc__plan_client_seen(fedc__plan_client *c, bool seen) { c->seen = seen ? 1.0f : 0.0f; }

int64_t fedc__plan_client_id(const fedc__plan_client *c) { return c->id; }

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
