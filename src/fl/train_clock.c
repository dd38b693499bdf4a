/* Synchronous rounds under the virtual clock (fedc/clock.h; docs/training.md,
 * "Time"), as a deployed server runs them:
 *
 *     round r starts at virtual time T
 *     cohort = sample(seed, r) of the clients that check in at T   (availability)
 *              ceil(K (1 + over_select)) of them                    (over-selection)
 *     each client's task: steps × seconds_per_step + bytes / bandwidth
 *     kept   = the first K to report (by time, ties by client index), by T + deadline
 *     T     += the K-th report's time, or the deadline if fewer came, or the
 *              last report's when there is no deadline
 *
 * The clients not kept are absent from the round (the executor leaves them out of
 * every aggregate, as it does Poisson sampling's empty slots) and counted as
 * dropped. Without --clock nothing here runs, and the rounds are as before. */
#include <math.h>
#include <stdlib.h>

#include "fl/train.h"

fedc_status fedc__train_clock_setup(trainer *t) {
    const fedc_train_config *c = t->c;
    if (!c->clock) {
        if (c->round_deadline > 0 || c->over_select > 0)
            return fedc_error(FEDC_EINVAL, "train: --%s needs --clock (without one, clients take no time)",
                              c->round_deadline > 0 ? "round-deadline" : "over-select");
        return FEDC_OK;
    }
    if (!(c->round_deadline >= 0) || !(c->over_select >= 0) || !isfinite(c->round_deadline + c->over_select))
        return fedc_error(FEDC_EINVAL, "train: --round-deadline %g and --over-select %g must be >= 0",
                          c->round_deadline, c->over_select);
    if (c->poisson)
        return fedc_error(FEDC_EINVAL, "train: --clock and --sampling poisson do not go together (Poisson sampling "
                          "fixes who joins a round; the clock decides who reports in time)");
    fedc_clock_spec spec;
    fedc_status st = fedc_clock_parse(c->clock, &spec);
    return st ? st : fedc__clock_create(&spec, c->seed, t->train, &t->clock);
}

int fedc__train_clock_slots(const trainer *t, int k) {
    double over = t->c->over_select, n = (double)fedc_dataset_num_clients(t->train);
    if (!(over > 0)) return k;
    double slots = ceil((double)k * (1 + over));
    return slots < n ? (int)slots : (int)n;
}

bool fedc__train_clock_samples(const trainer *t) { return t->clock && fedc__clock_has_availability(t->clock); }

fedc_status fedc__train_clock_sample(trainer *t, int r, int64_t *n) {
    int64_t pop = fedc_dataset_num_clients(t->train), m = 0;
    int64_t *online = fedc_malloc((size_t)pop * sizeof *online), *picked = fedc_malloc((size_t)t->k * sizeof *picked);
    fedc_status st = online && picked ? FEDC_OK : fedc_error(FEDC_ENOMEM, "train: out of memory");
    for (int64_t i = 0; !st && i < pop; i++)
        if (fedc__clock_available(t->clock, i, (uint32_t)r, t->vtime)) online[m++] = i;
    int64_t take = m < t->k ? m : t->k;
    if (!st && take > 0) st = fedc_sample_clients(m, take, t->c->seed, (uint32_t)r, picked);
    for (int64_t i = 0; !st && i < take; i++) t->sampled[i] = online[picked[i]];
    *n = st ? 0 : take;
    fedc_free(online);
    fedc_free(picked);
    return st;
}

typedef struct report {
    double time;
    int64_t client;
    int slot;
} report;

static int by_arrival(const void *a, const void *b) {
    const report *x = a, *y = b;
    if (x->time != y->time) return x->time < y->time ? -1 : 1;
    return (x->client > y->client) - (x->client < y->client);
}

/* The present clients' reports in order of arrival. */
static report *arrivals(const trainer *t) {
    report *order = fedc_malloc((size_t)(t->present > 0 ? t->present : 1) * sizeof *order);
    if (!order) return NULL;
    double bytes = 2.0 * 4.0 * (double)fedc_model_size(t->model); /* the model down, the update up, f32 */
    for (int i = 0; i < t->present; i++) {
        int64_t id = t->sampled[i];
        double steps = (double)fedc__train_client_steps(t, id);
        order[i] = (report){fedc__clock_task_seconds(t->clock, id, steps, bytes), id, i};
    }
    qsort(order, (size_t)t->present, sizeof *order, by_arrival);
    return order;
}

fedc_status fedc__train_clock_round(trainer *t, int r) {
    (void)r;
    const fedc_train_config *c = t->c;
    double deadline = c->round_deadline > 0 ? c->round_deadline : INFINITY, last = 0;
    int want = c->clients_per_round, kept = 0;
    report *order = arrivals(t);
    uint8_t *keep = fedc_calloc((size_t)t->k, 1);
    if (!order || !keep) {
        fedc_free(order), fedc_free(keep);
        return fedc_error(FEDC_ENOMEM, "train: out of memory");
    }
    for (int j = 0; j < t->present && kept < want && order[j].time <= deadline; j++, kept++) {
        keep[order[j].slot] = 1;
        last = order[j].time;
    }
    bool short_of = kept < want && kept < t->present; /* some came too late: the server waited to the deadline */
    t->vtime += short_of && isfinite(deadline) ? deadline : last;
    t->dropped += t->present - kept;
    int at = 0; /* the kept clients into the first slots, in their sampled order */
    for (int i = 0; i < t->present; i++)
        if (keep[i]) t->sampled[at++] = t->sampled[i];
    t->present = kept;
    for (int i = 0; i < t->k; i++) {
        if (i >= kept) t->sampled[i] = 0; /* a valid id, never run nor written */
        t->absent[i] = i >= kept;
        t->client_ids[i] = fedc_dataset_client_id(t->train, t->sampled[i]);
    }
    fedc_free(order);
    fedc_free(keep);
    return fedc_executor_set_absent(t->round_ex, t->absent);
}
