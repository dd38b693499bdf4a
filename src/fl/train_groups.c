/* fedc train --groups N: the round's cohort split into N groups of contiguous
 * slots (the executor's groups, fedc_exec_options.groups), for an algorithm whose
 * round uses them (HierFAVG). The sizes are as equal as can be, the first
 * k mod N groups one client larger, so that a run's grouping depends only on N and
 * the cohort's size. */
#include <math.h>

#include "fl/train.h"

/* Why the cohort's slots cannot be grouped by position, or NULL. */
static const char *slots_vary(const trainer *t) {
    const fedc_train_config *c = t->c;
    if (c->poisson) return "--sampling poisson (its cohort's size varies)";
    if (t->async) return "an asynchronous algorithm";
    if (c->over_select > 0) return "--over-select (its late clients leave gaps)";
    return NULL;
}

fedc_status fedc__train_groups_setup(trainer *t) {
    const fedc_train_config *c = t->c;
    int n = c->groups;
    if (n == 0) return FEDC_OK;
    const fedc_algorithm_def *def = fedc__algorithm_def(&c->algorithm);
    if (n < 0) return fedc_error(FEDC_EINVAL, "train: --groups %d; use 1 or more", n);
    if (!def->grouped)
        return fedc_error(FEDC_EINVAL, "train: --groups: %s has no group level; use an algorithm whose round uses the "
                          "groups (--algorithm hierfavg)", def->name);
    const char *why = slots_vary(t);
    if (why) return fedc_error(FEDC_EUNSUPPORTED, "train: --groups cannot be used with %s", why);
    if (n > t->k)
        return fedc_error(FEDC_EINVAL, "train: --groups %d is more groups than the round's %d clients "
                          "(--clients-per-round); every group needs a client", n, t->k);
    t->group_sizes = fedc_malloc((size_t)n * sizeof *t->group_sizes);
    if (!t->group_sizes) return fedc_error(FEDC_ENOMEM, "train: out of memory for %d groups", n);
    for (int g = 0; g < n; g++) t->group_sizes[g] = t->k / n + (g < t->k % n);
    t->groups = n;
    return FEDC_OK;
}

fedc_status fedc__train_groups_json(const trainer *t, char *buf, size_t size) {
    buf[0] = 0;
    if (t->present == 0 || fedc_program_find_output(t->round, FEDC_GROUP_LOSS) == FEDC_NONE)
        return FEDC_OK; /* no round program ran, or it has no groups' figures */
    const float *loss;
    fedc_status st = fedc_executor_output(t->round_ex, FEDC_GROUP_LOSS, (const void **)&loss, NULL);
    if (st) return st;
    int n = t->groups ? t->groups : 1;
    size_t used = (size_t)snprintf(buf, size, ", \"group_loss\": [");
    for (int g = 0; g < n && used < size; g++) /* JSON has no NaN: a group whose loss is not finite is null */
        used += isfinite(loss[g]) ? (size_t)snprintf(buf + used, size - used, "%s%.9g", g ? ", " : "", (double)loss[g])
                                  : (size_t)snprintf(buf + used, size - used, "%snull", g ? ", " : "");
    if (used < size) used += (size_t)snprintf(buf + used, size - used, "]");
    return used < size ? FEDC_OK : fedc_error(FEDC_EINVAL, "train: %d groups' losses do not fit a metrics row", n);
}
