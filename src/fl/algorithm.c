/* The algorithms by name: the built-in ones, then those registered at run time,
 * and the checks every round shares before an algorithm builds it. */
#include <pthread.h>
#include <string.h>

#include "fl/fl.h"

enum { MAX_REGISTERED = 64 };

static const fedc_algorithm_def *const builtin[] = {
    &fedc_algorithm_fedsgd, &fedc_algorithm_fedavg, &fedc_algorithm_fedprox,
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

fedc_status fedc_algorithm_register(const fedc_algorithm_def *def) {
    if (!def || !def->name || !def->name[0] || !def->round)
        return fedc_error(FEDC_EINVAL, "algorithm_register: an algorithm needs a name and a round builder");
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

static const fedc_algorithm_def *def_of(const fedc_algorithm *a) {
    return a->def ? a->def : &fedc_algorithm_fedavg;
}

const char *fedc_algorithm_name(const fedc_algorithm *a) { return def_of(a)->name; }

static fedc_status check(const fedc_model *m, const fedc_algorithm *a) {
    const char *name = fedc_algorithm_name(a);
    if (a->batch_size < 1) return fedc_error(FEDC_EINVAL, "%s: batch size %lld < 1", name, (long long)a->batch_size);
    if (a->max_steps < 1) return fedc_error(FEDC_EINVAL, "%s: max steps %lld < 1", name, (long long)a->max_steps);
    if (fedc_model_num_params(m) > FEDC__FL_MAX_PARAMS)
        return fedc_error(FEDC_EUNSUPPORTED, "%s: the model has more than %d parameter tensors", name,
                          FEDC__FL_MAX_PARAMS);
    return FEDC_OK;
}

fedc_status fedc_algorithm_round(const fedc_model *m, const fedc_algorithm *a, fedc_program **out) {
    *out = NULL;
    fedc_status st = check(m, a);
    return st ? st : def_of(a)->round(m, a, out);
}
