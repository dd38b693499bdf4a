/* A plan's groups (deploy.h): `fedc plan build --groups N` or `--groups
 * dirichlet:N:ALPHA` pins every client of the population to one of N groups, as
 * fedc train --groups does, so that `fedc server --groups N` hands each group's
 * clients to that group's aggregator (groups.h). The plan keeps the rule, not the
 * list: a setting "groups" of "N" or "dirichlet:N:ALPHA", which the server and
 * every aggregator draw again from the plan's population and seed
 * (fedc__client_groups_drawn, fedc train's own code), so the groups are the
 * simulation's on every machine, whatever the population. */
#include <stdlib.h>
#include <string.h>

#include "deploy/deploy.h"
#include "fl/fl.h"

fedc_status fedc__plan_groups_setting(const fedc_train_config *c, int64_t population, char *value, size_t size) {
    value[0] = 0;
    if (c->groups_file)
        return fedc_error(FEDC_EUNSUPPORTED, "plan: --groups-file is not deployed yet; a plan pins its clients to "
                          "groups by --groups N or --groups dirichlet:N:ALPHA, which the server and its aggregators "
                          "draw again from the plan's population and seed");
    if (c->groups_per_round > 0 || c->clients_per_group > 0)
        return fedc_error(FEDC_EUNSUPPORTED, "plan: sampling per level (--groups-per-round, --clients-per-group) is not "
                          "deployed yet: the server draws --clients-per-round clients and orders them by group");
    if (c->groups == 0) return FEDC_OK;
    int32_t *group_of = fedc_malloc((size_t)(population > 0 ? population : 1) * sizeof *group_of);
    if (!group_of) return fedc_error(FEDC_ENOMEM, "plan: out of memory for %lld clients' groups", (long long)population);
    fedc_status st = fedc__client_groups_drawn(population, c->groups, c->groups_alpha, c->seed, group_of);
    fedc_free(group_of);
    if (st) return st;
    snprintf(value, size, "%d", c->groups);
    for (int digits = 15; c->groups_alpha > 0 && digits <= 17; digits++) { /* the shortest that reads back as ALPHA */
        snprintf(value, size, "dirichlet:%d:%.*g", c->groups, digits, c->groups_alpha);
        if (strtod(strrchr(value, ':') + 1, NULL) == c->groups_alpha) break;
    }
    return FEDC_OK;
}

fedc_status fedc_plan_groups(const fedc_plan *p, int32_t **group_of, int *groups) {
    *group_of = NULL, *groups = 0;
    const char *v = fedc_plan_setting(p, "groups"), *pop = fedc_plan_setting(p, "population");
    const char *seed = fedc_plan_setting(p, "seed");
    if (!v) return FEDC_OK;
    long n = 0;
    double alpha = 0;
    int used = 0;
    bool drawn = !strncmp(v, "dirichlet:", 10);
    if ((drawn ? sscanf(v, "dirichlet:%ld:%lf%n", &n, &alpha, &used) != 2 || !(alpha > 0)
               : sscanf(v, "%ld%n", &n, &used) != 1) ||
        v[used] || n < 1 || n > 1 << 20 || !pop || !seed)
        return fedc_error(FEDC_EPARSE, "plan: setting groups \"%.60s\" is not N or dirichlet:N:ALPHA (N from 1, ALPHA "
                          "above 0), or the plan has no population and seed to draw them from", v);
    int64_t clients = strtoll(pop, NULL, 10);
    if (clients < 1 || clients > (int64_t)1 << 31)
        return fedc_error(FEDC_EPARSE, "plan: the population is missing or out of range");
    int32_t *g = fedc_malloc((size_t)clients * sizeof *g);
    if (!g) return fedc_error(FEDC_ENOMEM, "plan: out of memory for %lld clients' groups", (long long)clients);
    fedc_status st = fedc__client_groups_drawn(clients, (int)n, alpha, strtoull(seed, NULL, 10), g);
    if (st) {
        fedc_free(g);
        return st;
    }
    *group_of = g, *groups = (int)n;
    return FEDC_OK;
}
