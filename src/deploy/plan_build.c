/* Plans from training jobs (fedc plan build): fedc_plan_build makes the round
 * and the initial server state exactly as the training job does (the same
 * data, model, seed and steps), through fedc train's own steps (fl/train.h), so
 * that a deployment agrees with `fedc train` bit for bit. The other end, a
 * client's batches from a plan, is plan_data.c. */
#include <stdlib.h>
#include <string.h>

#include "deploy/deploy.h"
#include "fl/fedbuff.h"
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
    if (!warm && !strncmp(name, "async/", 6)) return true; /* sent with an asynchronous task (server_async.c) */
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
    if (fedc__algorithm_is_async(&t->alg)) { /* what `fedc server --async` weighs each report by */
        const fedc_algorithm *a = &t->alg;
        int kind = (int)fedc_algorithm_hparam(a, "staleness");
        char w[128];
        snprintf(w, sizeof w, "%d %.17g %.17g %.17g", kind,
                 fedc_algorithm_hparam(a, kind == FEDC_STALENESS_HINGE ? "hinge_a" : "exponent"),
                 fedc_algorithm_hparam(a, "hinge_b"), fedc_algorithm_hparam(a, "avg_staleness"));
        put(s, &n, "async_staleness", "%s", w);
    }
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

/* An algorithm with a group level of its own (hierfavg, hierfedopt) has
 * @groups values, whose phases (a group's broadcast, its clients' work, its
 * update, group_rounds times a round) no deployment runs yet; but HierFAVG with
 * one group round is FedAvg's round, bit for bit however the clients are
 * grouped (src/fl/hierfavg.c), so its plan is FedAvg's, whose aggregators give
 * it its groups (plan build --groups, fedc server --groups). */
static fedc_status grouped(fedc_algorithm *a) {
    const fedc_algorithm_def *def = fedc__algorithm_def(a);
    if (!def->grouped) return FEDC_OK;
    double rounds = fedc_algorithm_hparam(a, "group_rounds");
    if (!strcmp(def->name, "hierfavg") && rounds == 1) {
        a->def = &fedc_algorithm_fedavg;
        memset(a->hparam_set, 0, sizeof a->hparam_set);
        return FEDC_OK;
    }
    return fedc_error(FEDC_EUNSUPPORTED, "plan: %s with group_rounds=%g has a group level of its own (@groups), whose "
                      "phases are not deployed yet; hierfavg with group_rounds=1 is FedAvg's round, grouped, and "
                      "deploys as FedAvg's with its groups (docs/deployment-aggregators.md)", def->name, rounds);
}

fedc_status fedc_plan_build(const fedc_train_config *c, const char *dir) {
    trainer t;
    memset(&t, 0, sizeof t);
    t.c = c;
    fedc_program *init = NULL, *client_init = NULL, *warm = NULL;
    fedc_executor *ex = NULL;
    fedc_tensor_entry *e = NULL;
    if (c->algorithm.aggregation.attack.kind != FEDC_ATTACK_NONE) /* the simulation's malicious clients */
        return fedc_error(FEDC_EINVAL, "plan: --attack makes simulated clients malicious, for evaluating an aggregator "
                          "in fedc train; a deployment's clients are real processes, so a plan takes none");
    fedc_status st = fedc__train_open_data(&t);
    if (!st) st = fedc__train_create_model(&t);
    t.alg = c->algorithm;
    if (!st) t.alg.max_steps = fedc__train_max_steps(&t);
    if (!st) st = grouped(&t.alg);
    char groups[256] = "";
    if (!st) st = fedc__plan_groups_setting(c, fedc_dataset_num_clients(t.train), groups, sizeof groups);
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
    if (groups[0]) put(s, &ns, "groups", "%s", groups); /* the aggregators' groups (plan_groups.c) */
    if (!st) st = fedc__plan_write(dir, t.round, client_init, warm, c->clients_per_round, domains, s, ns, e, n);
    fedc_free(e), fedc_free(domains);
    fedc_executor_destroy(ex);
    fedc_program_destroy(init);
    fedc_program_destroy(client_init);
    fedc_program_destroy(warm);
    fedc__train_destroy(&t);
    return st;
}
