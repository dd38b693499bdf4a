/* The algorithms by name: the built-in ones, then those registered at run time,
 * and the checks every round shares before an algorithm builds it. */
#define _GNU_SOURCE /* strtod_l */
#include <locale.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "fl/fl.h"

enum { MAX_REGISTERED = 64 };

static const fedc_algorithm_def *const builtin[] = {
    &fedc_algorithm_fedsgd, &fedc_algorithm_fedavg,   &fedc_algorithm_fedprox,         &fedc_algorithm_scaffold,
    &fedc_algorithm_apfl,   &fedc_algorithm_mime,     &fedc_algorithm_mimelite,        &fedc_algorithm_agnostic_fedavg,
    &fedc_algorithm_hypcluster, &fedc_algorithm_fednova, &fedc_algorithm_feddyn,       &fedc_algorithm_diloco,
    &fedc_algorithm_fedbuff,    &fedc_algorithm_fedasync,   &fedc_algorithm_hierfavg,   &fedc_algorithm_hierfedopt,
    &fedc_algorithm_fedbn,
};
enum { NBUILTIN = sizeof builtin / sizeof builtin[0] };

/* Registration is rare (start-up) and lookups are cheap, so one lock serves both. */
static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static const fedc_algorithm_def *registered[MAX_REGISTERED];
static int nregistered;

int fedc_algorithm_count(void) {
    pthread_mutex_lock(&registry_lock);
    int n = NBUILTIN + nregistered;
    pthread_mutex_unlock(&registry_lock);
    return n;
}

const fedc_algorithm_def *fedc_algorithm_at(int i) {
    if (i < 0) return NULL;
    if (i < NBUILTIN) return builtin[i];
    pthread_mutex_lock(&registry_lock);
    const fedc_algorithm_def *d = i - NBUILTIN < nregistered ? registered[i - NBUILTIN] : NULL;
    pthread_mutex_unlock(&registry_lock);
    return d;
}

static const fedc_algorithm_def *lookup(const char *name) {
    for (int i = 0, n = fedc_algorithm_count(); i < n; i++) {
        const fedc_algorithm_def *d = fedc_algorithm_at(i);
        if (d && strcmp(d->name, name) == 0) return d;
    }
    return NULL;
}

/* A definition's hyperparameters are well formed: named once, defaults in range. */
static fedc_status check_hparams(const fedc_algorithm_def *def) {
    if (def->nhparams < 0 || def->nhparams > FEDC_MAX_HPARAMS || (def->nhparams && !def->hparams))
        return fedc_error(FEDC_EINVAL, "algorithm_register: \"%s\" declares %d hyperparameters (0 to %d, with a table)",
                          def->name, def->nhparams, FEDC_MAX_HPARAMS);
    for (int i = 0; i < def->nhparams; i++) {
        const fedc_hparam_def *h = &def->hparams[i];
        if (!h->name || !h->name[0] || strchr(h->name, '='))
            return fedc_error(FEDC_EINVAL, "algorithm_register: \"%s\": hyperparameter %d needs a name without '='",
                              def->name, i);
        if (!(h->min <= h->value && h->value <= h->max))
            return fedc_error(FEDC_EINVAL, "algorithm_register: \"%s\": %s's default %g is outside [%g, %g]", def->name,
                              h->name, h->value, h->min, h->max);
        for (int j = 0; j < i; j++)
            if (!strcmp(def->hparams[j].name, h->name))
                return fedc_error(FEDC_EINVAL, "algorithm_register: \"%s\": two hyperparameters are called %s",
                                  def->name, h->name);
    }
    return FEDC_OK;
}

fedc_status fedc_algorithm_register(const fedc_algorithm_def *def) {
    if (!def || !def->name || !def->name[0] || !def->round)
        return fedc_error(FEDC_EINVAL, "algorithm_register: an algorithm needs a name and a round builder");
    fedc_status st = check_hparams(def);
    if (st) return st;
    if (lookup(def->name)) return fedc_error(FEDC_EINVAL, "algorithm_register: \"%s\" is already an algorithm", def->name);
    pthread_mutex_lock(&registry_lock);
    bool full = nregistered == MAX_REGISTERED;
    if (!full) registered[nregistered++] = def;
    pthread_mutex_unlock(&registry_lock);
    if (full) return fedc_error(FEDC_EUNSUPPORTED, "algorithm_register: more than %d algorithms", MAX_REGISTERED);
    return FEDC_OK;
}

const fedc_algorithm_def *fedc_algorithm_find(const char *name) {
    const fedc_algorithm_def *d = name ? lookup(name) : NULL;
    if (d) return d;
    char names[512] = "";
    size_t used = 0;
    for (int i = 0, n = fedc_algorithm_count(); i < n && used < sizeof names; i++) {
        int k = snprintf(names + used, sizeof names - used, "%s%s", i ? ", " : "", fedc_algorithm_at(i)->name);
        if (k > 0) used += (size_t)k;
    }
    fedc_error(FEDC_EINVAL, "unknown algorithm \"%s\" (known: %s; FedAdam, FedYogi, FedAdagrad and FedAvgM are "
               "fedavg with a server optimizer adam|yogi|adagrad|momentum)", name ? name : "(null)", names);
    return NULL;
}

const fedc_algorithm_def *fedc__algorithm_def(const fedc_algorithm *a) {
    return a->def ? a->def : &fedc_algorithm_fedavg;
}

const char *fedc_algorithm_name(const fedc_algorithm *a) { return fedc__algorithm_def(a)->name; }

/* ------------------------------------------------------ hyperparameters -- */

static int hparam_index(const fedc_algorithm_def *def, const char *name) {
    for (int i = 0; name && i < def->nhparams; i++)
        if (!strcmp(def->hparams[i].name, name)) return i;
    return -1;
}

/* "mu, alpha" or "none", for messages. */
static void hparam_names(const fedc_algorithm_def *def, char *buf, size_t size) {
    size_t used = 0;
    snprintf(buf, size, "none");
    for (int i = 0; i < def->nhparams && used < size; i++) {
        int k = snprintf(buf + used, size - used, "%s%s", i ? ", " : "", def->hparams[i].name);
        if (k > 0) used += (size_t)k;
    }
}

static fedc_status no_such_hparam(const fedc_algorithm_def *def, const char *name) {
    char names[256];
    hparam_names(def, names, sizeof names);
    return fedc_error(FEDC_EINVAL, "%s has no hyperparameter \"%s\" (its hyperparameters: %s; `fedc train "
                      "--algorithm %s --help` lists them)", def->name, name ? name : "(null)", names, def->name);
}

fedc_status fedc_algorithm_set(fedc_algorithm *a, const char *name, double value) {
    const fedc_algorithm_def *def = fedc__algorithm_def(a);
    int i = hparam_index(def, name);
    if (i < 0) return no_such_hparam(def, name);
    const fedc_hparam_def *h = &def->hparams[i];
    if (!(h->min <= value && value <= h->max))
        return fedc_error(FEDC_EINVAL, "%s: %s must be in [%g, %g], not %g (%s)", def->name, name, h->min, h->max, value,
                          h->help ? h->help : "");
    a->hparam[i] = value;
    a->hparam_set[i] = true;
    return FEDC_OK;
}

/* A whole finite number in the C locale ("0.5", not "0,5" or "0.5x"). */
static bool parse_number(const char *text, double *out) {
    locale_t c = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
    if (!c) return false;
    char *end;
    *out = strtod_l(text, &end, c);
    freelocale(c);
    return end != text && !*end && isfinite(*out);
}

fedc_status fedc_algorithm_set_text(fedc_algorithm *a, const char *assignment) {
    const char *eq = assignment ? strchr(assignment, '=') : NULL;
    if (!eq || eq == assignment || !eq[1])
        return fedc_error(FEDC_EINVAL, "--set takes NAME=VALUE, not \"%s\"", assignment ? assignment : "(null)");
    char name[64];
    if ((size_t)(eq - assignment) >= sizeof name) return no_such_hparam(fedc__algorithm_def(a), assignment);
    memcpy(name, assignment, (size_t)(eq - assignment));
    name[eq - assignment] = 0;
    double v;
    if (!parse_number(eq + 1, &v))
        return fedc_error(FEDC_EINVAL, "--set %s: \"%s\" is not a number", name, eq + 1);
    return fedc_algorithm_set(a, name, v);
}

double fedc_algorithm_hparam(const fedc_algorithm *a, const char *name) {
    const fedc_algorithm_def *def = fedc__algorithm_def(a);
    int i = hparam_index(def, name);
    if (i < 0) return no_such_hparam(def, name), NAN;
    return a->hparam_set[i] ? a->hparam[i] : def->hparams[i].value;
}

void fedc_algorithm_print_hparams(const fedc_algorithm_def *def, FILE *out) {
    fprintf(out, "%s: %s\n", def->name, def->summary ? def->summary : "");
    if (!def->nhparams) fprintf(out, "  no hyperparameters of its own\n");
    for (int i = 0; i < def->nhparams; i++) {
        const fedc_hparam_def *h = &def->hparams[i];
        fprintf(out, "  --set %s=X  %s (default %g, in [%g, %g])\n", h->name, h->help ? h->help : "", h->value, h->min,
                h->max);
    }
}

/* ------------------------------------------------------------ programs -- */

static fedc_status check(const fedc_model *m, const fedc_algorithm *a) {
    const char *name = fedc_algorithm_name(a);
    if (a->batch_size < 1) return fedc_error(FEDC_EINVAL, "%s: batch size %lld < 1", name, (long long)a->batch_size);
    if (a->max_steps < 1) return fedc_error(FEDC_EINVAL, "%s: max steps %lld < 1", name, (long long)a->max_steps);
    if (fedc_model_num_params(m) > FEDC__FL_MAX_PARAMS)
        return fedc_error(FEDC_EUNSUPPORTED, "%s: the model has more than %d parameter tensors", name,
                          FEDC__FL_MAX_PARAMS);
    return FEDC_OK;
}

fedc_tree *fedc__server_state(fedc_program *p, const fedc_tree *params, const fedc_optimizer *opt) {
    fedc_tree *state = fedc_tree_new(p);
    if (!state) return NULL;
    fedc_tree_set_tree(p, state, "params", params);
    fedc_tree_set_tree(p, state, "opt", fedc_optimizer_init_tree(opt, p, params));
    return state;
}

fedc_status fedc_algorithm_server_init(const fedc_model *m, const fedc_algorithm *a, fedc_program **out) {
    *out = NULL;
    const fedc_algorithm_def *def = fedc__algorithm_def(a);
    fedc_program *p;
    fedc_status st = fedc_program_create(&p);
    if (st) return st;
    fedc_tree *params = fedc_model_input_tree(m, p, "params", FEDC_SERVER), *state = NULL;
    if (def->server_init) st = params ? def->server_init(m, a, p, params, &state) : fedc_program_status(p);
    else state = fedc__server_state(p, params, &a->server_opt); /* the model and the server optimizer's state */
    if (!st && a->aggregation.adaptive) /* the adaptive clip's start (src/fl/aggregators.c) */
        st = fedc_tree_set(p, state, FEDC_AGGREGATE_CLIP,
                           fedc_full(p, fedc__placed(fedc_type_scalar(FEDC_F32), FEDC_SERVER), a->aggregation.clip));
    if (!st && !fedc_tree_has(state, "params"))
        st = fedc_error(FEDC_EINVAL, "%s: the server state has no \"params\" (the model)", def->name);
    if (!st) st = fedc__robust_server_state(p, &a->aggregation, state); /* cclip's centre */
    if (!st) st = fedc_tree_output(p, "server", state);
    return fedc__fl_done(p, st, out);
}

fedc_status fedc_algorithm_client_init(const fedc_model *m, const fedc_algorithm *a, fedc_program **out) {
    *out = NULL;
    const fedc_algorithm_def *def = fedc__algorithm_def(a);
    if (!def->client_init) return FEDC_OK;
    fedc_program *p;
    fedc_status st = fedc_program_create(&p);
    if (st) return st;
    fedc_tree *state = NULL;
    st = def->client_init(m, a, p, &state);
    if (!st && !state) { /* none for this model (fedbn's, of a model without BatchNorm) */
        fedc_program_destroy(p);
        return FEDC_OK;
    }
    if (!st && !fedc_tree_size(state))
        st = fedc_error(FEDC_EINVAL, "%s: client_init made no client state (leave it NULL for none)", def->name);
    if (!st) st = fedc_tree_output(p, "client", state);
    return fedc__fl_done(p, st, out);
}

fedc_status fedc_algorithm_group_init(const fedc_model *m, const fedc_algorithm *a, fedc_program **out) {
    *out = NULL;
    const fedc_algorithm_def *def = fedc__algorithm_def(a);
    if (!def->group_init) return FEDC_OK;
    if (!def->grouped)
        return fedc_error(FEDC_EINVAL, "%s: group_init needs a grouped algorithm (its round has the groups)", def->name);
    fedc_program *p;
    fedc_status st = fedc_program_create(&p);
    if (st) return st;
    fedc_tree *state = NULL;
    st = def->group_init(m, a, p, &state);
    if (!st) st = fedc_program_status(p);
    if (!st && !fedc_tree_size(state)) { /* none with these settings (hierfedopt's SGD) */
        fedc_program_destroy(p);
        return FEDC_OK;
    }
    if (!st) st = fedc_tree_output(p, "group", state);
    return fedc__fl_done(p, st, out);
}

fedc_status fedc__round_data(fedc_round *r, bool key) {
    fedc_program *p = r->p;
    const fedc_model *m = r->model;
    const fedc_algorithm *a = r->alg;
    fedc_type xt = fedc__stacked(fedc_model_input_type(m, a->batch_size), a->max_steps);
    fedc_type yt = fedc__stacked(fedc_model_label_type(m, a->batch_size), a->max_steps);
    int64_t sb[2] = {a->max_steps, a->batch_size};
    r->data = fedc_tree_new(p);
    fedc_tree_set(p, r->data, "x", fedc_input(p, "x", fedc__placed(xt, FEDC_CLIENTS)));
    fedc_tree_set(p, r->data, "y", fedc_input(p, "y", fedc__placed(yt, FEDC_CLIENTS)));
    fedc_tree_set(p, r->data, "mask", fedc_input(p, "mask", fedc__placed(fedc_type_make(FEDC_F32, 2, sb), FEDC_CLIENTS)));
    fedc_tree_set(p, r->data, "steps", fedc_input(p, "steps", fedc__placed(fedc_type_scalar(FEDC_I32), FEDC_CLIENTS)));
    if (key)
        fedc_tree_set(p, r->data, "key",
                      fedc_input(p, "key", fedc__placed(fedc_type_make(FEDC_I32, 1, (int64_t[]){4}), FEDC_CLIENTS)));
    return fedc_program_status(p);
}

/* The round's inputs (fl.h's interface) into r; group_init NULL: none (an
 * evaluation reads no group state). */
static fedc_status round_inputs(fedc_round *r, const fedc_program *server_init, const fedc_program *client_init,
                                const fedc_program *group_init, bool key) {
    fedc_program *p = r->p;
    r->server = fedc_tree_input(p, "server", fedc_tree_of_outputs(server_init, "server"), FEDC_SERVER);
    r->client = client_init ? fedc_tree_input(p, "client", fedc_tree_of_outputs(client_init, "client"), FEDC_CLIENTS)
                            : NULL;
    r->group = group_init ? fedc_tree_input(p, "group", fedc_tree_of_outputs(group_init, "group"), FEDC_GROUPS) : NULL;
    fedc_status st = fedc__round_data(r, key);
    return st ? st : fedc__robust_round_inputs(r); /* before the clients' map, which may take them */
}

/* A round's program, built by `build` (the round, or the warm start on `cohort`
 * clients). */
static fedc_status round_program(const fedc_model *m, const fedc_algorithm *a, fedc_status (*build)(fedc_round *),
                                 int cohort, fedc_program **out) {
    *out = NULL;
    const fedc_algorithm_def *def = fedc__algorithm_def(a);
    fedc_program *server_init = NULL, *client_init = NULL, *group_init = NULL, *p = NULL;
    fedc_status st = check(m, a);
    if (!st) st = fedc_algorithm_server_init(m, a, &server_init);
    if (!st) st = fedc_algorithm_client_init(m, a, &client_init);
    if (!st && !cohort) st = fedc_algorithm_group_init(m, a, &group_init);
    if (!st) st = fedc_program_create(&p);
    fedc_round r = {.model = m, .alg = a, .p = p, .cohort = cohort};
    if (!st) st = round_inputs(&r, server_init, client_init, group_init, true);
    if (!st) st = build(&r);
    if (!st) st = fedc_program_status(p);
    if (!st && cohort && fedc_program_num_outputs(p) == 0) { /* the warm start is off (a hyperparameter says so) */
        fedc_program_destroy(p);
        p = NULL;
    }
    if (!st && p && fedc_program_find_output(p, "train_loss") == FEDC_NONE)
        st = fedc_error(FEDC_EINVAL, "%s: the %s builder did not call fedc_round_finish", def->name,
                        cohort ? "warm start" : "round");
    fedc_program_destroy(server_init);
    fedc_program_destroy(client_init);
    fedc_program_destroy(group_init);
    return p ? fedc__fl_done(p, st, out) : st;
}

fedc_status fedc_algorithm_round(const fedc_model *m, const fedc_algorithm *a, fedc_program **out) {
    return round_program(m, a, fedc__algorithm_def(a)->round, 0, out);
}

fedc_status fedc_algorithm_warm_start(const fedc_model *m, const fedc_algorithm *a, int clients, fedc_program **out) {
    *out = NULL;
    const fedc_algorithm_def *def = fedc__algorithm_def(a);
    if (!def->warm_start) return FEDC_OK;
    if (clients < 1) return fedc_error(FEDC_EINVAL, "%s: a warm start needs at least one client", def->name);
    return round_program(m, a, def->warm_start, clients, out);
}

fedc_status fedc_algorithm_evaluation(const fedc_model *m, const fedc_algorithm *a, int64_t batch_size,
                                      int64_t max_steps, fedc_program **out) {
    *out = NULL;
    const fedc_algorithm_def *def = fedc__algorithm_def(a);
    if (!def->evaluation) return FEDC_OK;
    if (batch_size < 1 || max_steps < 1) return fedc_error(FEDC_EINVAL, "evaluation: batch size and steps must be >= 1");
    fedc_algorithm eval = *a; /* the evaluation's batches, no dropout */
    eval.batch_size = batch_size, eval.max_steps = max_steps, eval.dropout = false;
    fedc_program *server_init = NULL, *client_init = NULL, *p = NULL;
    fedc_status st = fedc_algorithm_server_init(m, a, &server_init);
    if (!st) st = fedc_algorithm_client_init(m, a, &client_init);
    if (!st) st = fedc_program_create(&p);
    fedc_round r = {.model = m, .alg = &eval, .p = p};
    if (!st) st = round_inputs(&r, server_init, client_init, NULL, false);
    if (!st) st = def->evaluation(&r);
    if (!st) st = fedc_program_status(p);
    if (!st && fedc_program_find_output(p, "client_count") == FEDC_NONE)
        st = fedc_error(FEDC_EINVAL, "%s: the evaluation builder made no client_count output", def->name);
    fedc_program_destroy(server_init);
    fedc_program_destroy(client_init);
    return fedc__fl_done(p, st, out);
}
