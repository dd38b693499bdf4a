/* fedc train --groups: every training client in a group (fedc_train_client_groups:
 * contiguous ranges, a Dirichlet draw or a client_id,group file), for an
 * algorithm whose round uses them (HierFAVG). Each round's cohort is ordered by
 * group, and the round's groups are the groups with a client in it: the
 * executor's groups change from round to round (fedc_executor_set_groups), its
 * memory sized once for the most a round can have.
 *
 * The cohort is drawn one of two ways:
 *   - as without groups (clients_per_round of all the clients, or Poisson), then
 *     ordered by group, a stable sort: the uniform draw comes out in client order,
 *     so with contiguous groups the order (and FedAvg's bits) is unchanged;
 *   - per level: G of the groups with clients, keyed by (seed, round), then up to
 *     K of each drawn group's clients, keyed by (seed, round, group); the cohort's
 *     G x K slots hold them one group after another, the slots left over absent. */
#include <math.h>
#include <stdlib.h>

#include "data/dataset.h"
#include "fl/train.h"

/* The `step` words of the per-level draws' streams, apart from every other
 * stream of the seed (the clients' data keys are step 0). */
enum { STEP_GROUPS = 0x67727031, STEP_GROUP_CLIENTS = 0x67727032 };

static bool per_level(const fedc_train_config *c) { return c->groups_per_round > 0 || c->clients_per_group > 0; }

/* Why the cohort cannot be grouped, or NULL. */
static const char *cannot_group(const trainer *t) {
    const fedc_train_config *c = t->c;
    if (t->async) return "an asynchronous algorithm";
    if (c->over_select > 0) return "--over-select (its late clients leave gaps)";
    if (!per_level(c)) return NULL;
    if (c->poisson) return "--sampling poisson and sampling per level (--groups-per-round, --clients-per-group)";
    if (c->clock) return "--clock and sampling per level (--groups-per-round, --clients-per-group)";
    if (c->algorithm.aggregation.noise_multiplier > 0)
        return "DP noise and sampling per level (the accountant needs one sampling rate for every client)";
    return NULL;
}

/* The groups' clients, in increasing order: group g's are members[start[g] ..
 * start[g + 1]); and the groups that have any, in t->nonempty. */
static fedc_status index_members(trainer *t) {
    int n = t->groups;
    int64_t clients = fedc_dataset_num_clients(t->train);
    t->group_start = fedc_calloc((size_t)n + 1, sizeof *t->group_start);
    t->group_members = fedc_malloc((size_t)(clients ? clients : 1) * sizeof *t->group_members);
    t->nonempty = fedc_malloc((size_t)n * sizeof *t->nonempty);
    if (!t->group_start || !t->group_members || !t->nonempty)
        return fedc_error(FEDC_ENOMEM, "train: out of memory for %d groups", n);
    for (int64_t i = 0; i < clients; i++) t->group_start[t->group_of[i] + 1]++;
    for (int g = 0; g < n; g++) {
        if (t->group_start[g + 1]) t->nonempty[t->nnonempty++] = g;
        t->group_start[g + 1] += t->group_start[g];
    }
    int64_t *fill = fedc_malloc((size_t)n * sizeof *fill);
    if (!fill) return fedc_error(FEDC_ENOMEM, "train: out of memory for %d groups", n);
    for (int g = 0; g < n; g++) fill[g] = t->group_start[g];
    for (int64_t i = 0; i < clients; i++) t->group_members[fill[t->group_of[i]]++] = i;
    fedc_free(fill);
    return FEDC_OK;
}

/* Per level: the G groups and up to K clients a group that a round draws, and
 * the cohort's slots (G x K). */
static fedc_status level_sizes(trainer *t) {
    const fedc_train_config *c = t->c;
    int64_t largest = 0;
    for (int g = 0; g < t->groups; g++)
        if (t->group_start[g + 1] - t->group_start[g] > largest) largest = t->group_start[g + 1] - t->group_start[g];
    if (c->groups_per_round > t->nnonempty)
        return fedc_error(FEDC_EINVAL, "train: --groups-per-round %d, but only %d groups have clients",
                          c->groups_per_round, t->nnonempty);
    t->level_groups = c->groups_per_round ? c->groups_per_round : t->nnonempty;
    t->level_clients = c->clients_per_group && c->clients_per_group < largest ? c->clients_per_group : (int)largest;
    int64_t slots = (int64_t)t->level_groups * t->level_clients;
    if (slots > (1 << 20))
        return fedc_error(FEDC_EINVAL, "train: %d groups a round x %d clients a group is %lld slots, more than "
                          "1048576; draw fewer (--groups-per-round, --clients-per-group)", t->level_groups,
                          t->level_clients, (long long)slots);
    t->group_slots = (int)slots;
    return FEDC_OK;
}

fedc_status fedc__train_groups_setup(trainer *t) {
    const fedc_train_config *c = t->c;
    if (c->groups == 0 && !c->groups_file) {
        if (per_level(c))
            return fedc_error(FEDC_EINVAL, "train: --groups-per-round and --clients-per-group need groups (--groups, "
                              "--groups-file)");
        return FEDC_OK;
    }
    const fedc_algorithm_def *def = fedc__algorithm_def(&c->algorithm);
    if (!def->grouped)
        return fedc_error(FEDC_EINVAL, "train: --groups: %s has no group level; use an algorithm whose round uses the "
                          "groups (--algorithm hierfavg)", def->name);
    const char *why = cannot_group(t);
    if (why) return fedc_error(FEDC_EUNSUPPORTED, "train: --groups cannot be used with %s", why);
    int64_t clients = fedc_dataset_num_clients(t->train);
    t->group_of = fedc_malloc((size_t)(clients ? clients : 1) * sizeof *t->group_of);
    if (!t->group_of) return fedc_error(FEDC_ENOMEM, "train: out of memory for %lld clients' groups", (long long)clients);
    fedc_status st = fedc_train_client_groups(c, t->train, t->group_of, &t->groups);
    if (!st) st = index_members(t);
    if (!st && per_level(c)) st = level_sizes(t);
    return st;
}

fedc_status fedc__train_groups_cohort(trainer *t) {
    if (!t->groups) return FEDC_OK;
    int most = t->group_slots ? t->level_groups : t->nnonempty < t->k ? t->nnonempty : t->k;
    t->round_groups = most;
    t->round_group_id = fedc_malloc((size_t)most * sizeof *t->round_group_id);
    t->round_group_sizes = fedc_malloc((size_t)most * sizeof *t->round_group_sizes);
    t->group_scratch = fedc_malloc((size_t)t->k * sizeof *t->group_scratch);
    t->group_first = fedc_malloc(((size_t)t->groups + 1) * sizeof *t->group_first);
    if (!t->round_group_id || !t->round_group_sizes || !t->group_scratch || !t->group_first)
        return fedc_error(FEDC_ENOMEM, "train: out of memory for %d groups", most);
    /* the executor's first groups, before any round draws its own: the slots in
     * `most` contiguous ranges (a valid grouping of every slot) */
    for (int g = 0; g < most; g++) {
        t->round_group_id[g] = g;
        t->round_group_sizes[g] = t->k / most + (g < t->k % most);
    }
    return FEDC_OK;
}

/* Round r per level: the groups, then each one's clients, into the first slots
 * (n of them), one group after another. */
fedc_status fedc__train_groups_sample(trainer *t, int r, int64_t *n) {
    const fedc_train_config *c = t->c;
    int64_t *pick = t->group_scratch; /* which of the groups with clients */
    int G = t->level_groups;
    if (G < t->nnonempty) fedc__sample_stream(t->nnonempty, G, fedc_rng_stream_make(c->seed, (uint32_t)r, 0, STEP_GROUPS), pick);
    else
        for (int j = 0; j < G; j++) pick[j] = j;
    int64_t at = 0;
    for (int j = 0; j < G; j++) {
        int g = t->nonempty[pick[j]];
        int64_t first = t->group_start[g], size = t->group_start[g + 1] - first;
        int64_t take = size < t->level_clients ? size : t->level_clients;
        int64_t *into = t->sampled + at;
        if (take < size)
            fedc__sample_stream(size, take, fedc_rng_stream_make(c->seed, (uint32_t)r, (uint32_t)g, STEP_GROUP_CLIENTS),
                                into);
        else
            for (int64_t k = 0; k < take; k++) into[k] = k;
        for (int64_t k = 0; k < take; k++) into[k] = t->group_members[first + into[k]];
        at += take;
    }
    *n = at;
    return FEDC_OK;
}

/* The round's present clients ordered by group (stably), and its groups: each
 * run of one group's clients. */
fedc_status fedc__train_groups_round(trainer *t) {
    int n = t->present, groups = 0;
    fedc__order_by_group(t->group_of, t->groups, t->sampled, n, t->group_scratch, t->group_first);
    for (int i = 0; i < n; i++) t->client_ids[i] = fedc_dataset_client_id(t->train, t->sampled[i]);
    for (int g = 0; g < t->groups; g++)
        if (t->group_first[g + 1] > t->group_first[g]) {
            t->round_group_id[groups] = g;
            t->round_group_sizes[groups++] = t->group_first[g + 1] - t->group_first[g];
        }
    t->round_groups = groups;
    return fedc_executor_set_groups(t->round_ex, groups, t->round_group_sizes);
}

void fedc__train_groups_free(trainer *t) {
    fedc_free(t->group_of);
    fedc_free(t->group_start);
    fedc_free(t->group_members);
    fedc_free(t->nonempty);
    fedc_free(t->round_group_id);
    fedc_free(t->round_group_sizes);
    fedc_free(t->group_scratch);
    fedc_free(t->group_first);
}

/* ", \"name\": [a, b, ...]" of n ints into buf at *used. */
static void int_list(char *buf, size_t size, size_t *used, const char *name, const int *v, int n) {
    if (*used < size) *used += (size_t)snprintf(buf + *used, size - *used, ", \"%s\": [", name);
    for (int g = 0; g < n && *used < size; g++) *used += (size_t)snprintf(buf + *used, size - *used, "%s%d", g ? ", " : "", v[g]);
    if (*used < size) *used += (size_t)snprintf(buf + *used, size - *used, "]");
}

fedc_status fedc__train_groups_json(const trainer *t, char *buf, size_t size) {
    buf[0] = 0;
    if (t->present == 0 || fedc_program_find_output(t->round, FEDC_GROUP_LOSS) == FEDC_NONE)
        return FEDC_OK; /* no round program ran, or it has no groups' figures */
    const float *loss;
    fedc_status st = fedc_executor_output(t->round_ex, FEDC_GROUP_LOSS, (const void **)&loss, NULL);
    if (st) return st;
    int n = t->groups ? t->round_groups : 1;
    size_t used = 0;
    if (t->groups) { /* which groups the round had, and how many of each one's clients */
        int_list(buf, size, &used, "groups", t->round_group_id, n);
        int_list(buf, size, &used, "group_clients", t->round_group_sizes, n);
    }
    if (used < size) used += (size_t)snprintf(buf + used, size - used, ", \"group_loss\": [");
    for (int g = 0; g < n && used < size; g++) /* JSON has no NaN: a group whose loss is not finite is null */
        used += isfinite(loss[g]) ? (size_t)snprintf(buf + used, size - used, "%s%.9g", g ? ", " : "", (double)loss[g])
                                  : (size_t)snprintf(buf + used, size - used, "%snull", g ? ", " : "");
    if (used < size) used += (size_t)snprintf(buf + used, size - used, "]");
    return used < size ? FEDC_OK : fedc_error(FEDC_EINVAL, "train: %d groups' figures do not fit a metrics row", n);
}
