/* The simulation of an asynchronous run (fedbuff, fedasync: src/fl/fedbuff.c): up
 * to C clients (--clients-per-round) in flight, each training on the model version
 * it was given, their reports ordered by the virtual clock; a round is one server
 * step on the next K reports (K: fedbuff's --set buffer, 1 for fedasync).
 *
 *     step r (the model is version r):
 *         until K reports are in:
 *             unless another report is due now, fill the free places at the
 *                 clock's time T with new clients on version r
 *             take the earliest report (ties: the lower client index, then the
 *                 earlier start); T = its time; staleness τ = r - its version
 *         run the round program on them: version r + 1
 *
 * A client's report is due steps × seconds_per_step + bytes / bandwidth after it
 * started (src/fl/clock.c; 0 without --clock). Clients are drawn in blocks of C:
 * dispatch d is client d mod C of fedc_sample_clients(N, C, seed, d / C), skipped
 * if it is in flight (or, with the clock's availability, offline at T); its
 * batches and dropout stream are those of round d / C. So with K = C and no
 * latency every step takes exactly round r's FedAvg cohort, fresh, in FedAvg's
 * order, and FedBuff is FedAvg bit for bit. Same seed, same bits, on any number
 * of threads.
 *
 * A checkpoint holds the clients in flight and the model versions they hold
 * (src/fl/train_async_checkpoint.c), so a resumed run goes on with the same bits. */
#include <math.h>
#include <string.h>

#include "fl/fedbuff.h"
#include "fl/train_async.h"

bool fedc__train_is_async(const trainer *t) { return fedc__algorithm_is_async(&t->c->algorithm); }

fedc_status fedc__train_async_setup(trainer *t) {
    const fedc_train_config *c = t->c;
    const char *name = fedc_algorithm_name(&c->algorithm);
    if (c->poisson || c->round_deadline > 0 || c->over_select > 0)
        return fedc_error(FEDC_EINVAL, "train: %s is asynchronous: --sampling poisson, --round-deadline and "
                          "--over-select are for synchronous rounds", name);
    if (fedc_mpi_size() > 1) return fedc_error(FEDC_EUNSUPPORTED, "train: %s does not run under MPI yet", name);
    struct train_async *a = fedc_calloc(1, sizeof *a);
    if (!a) return fedc_error(FEDC_ENOMEM, "train: out of memory");
    t->async = a;
    a->c = c->clients_per_round;
    double buffer = fedc__algorithm_def(&c->algorithm) == &fedc_algorithm_fedbuff
                        ? fedc_algorithm_hparam(&c->algorithm, "buffer") : 1;
    a->k = buffer >= 1 ? (int)buffer : a->c;
    a->block_no = -1;
    a->flights = fedc_calloc((size_t)a->c, sizeof *a->flights);
    a->snaps = fedc_calloc((size_t)a->c + 1, sizeof *a->snaps);
    a->block = fedc_calloc((size_t)a->c, sizeof *a->block);
    a->weight = fedc_calloc((size_t)a->k, sizeof *a->weight);
    a->rounds = fedc_calloc((size_t)a->k, sizeof *a->rounds);
    a->start = fedc_calloc((size_t)fedc_model_num_params(t->model), sizeof *a->start);
    a->saved = fedc_calloc(4 * (size_t)a->c, sizeof *a->saved);
    a->names = fedc_calloc((size_t)a->c + 1, sizeof *a->names);
    bool ok = a->flights && a->snaps && a->block && a->weight && a->rounds && a->start && a->saved && a->names;
    for (int i = 0; ok && i < fedc_model_num_params(t->model); i++)
        ok = (a->start[i] = fedc_malloc((size_t)(a->k * fedc_model_param_size(t->model, i)) * sizeof(float))) != NULL;
    if (!ok) return fedc_error(FEDC_ENOMEM, "train: out of memory for %s's clients in flight", name);
    return c->replay ? fedc__train_replay_load(t) : FEDC_OK;
}

int fedc__train_async_slots(const trainer *t) { return t->async->k; }

const uint32_t *fedc__train_async_rounds(const trainer *t) { return t->async ? t->async->rounds : NULL; }

void fedc__train_async_free(trainer *t) {
    struct train_async *a = t->async;
    if (!a) return;
    for (int i = 0; a->snaps && i <= a->c; i++) fedc_free(a->snaps[i].params);
    for (int i = 0; a->start && t->model && i < fedc_model_num_params(t->model); i++) fedc_free(a->start[i]);
    fedc_free(a->start), fedc_free(a->flights), fedc_free(a->snaps), fedc_free(a->block);
    fedc_free(a->weight), fedc_free(a->rounds), fedc_free(a->saved), fedc_free(a->names), fedc_free(a->replay);
    if (a->arrivals) fclose(a->arrivals);
    fedc_free(a);
    t->async = NULL;
}

fedc_status fedc__train_async_bind(trainer *t, fedc_executor *ex) {
    struct train_async *a = t->async;
    fedc_status st = fedc_executor_bind(ex, FEDC_ASYNC_WEIGHT, a->weight);
    for (int i = 0; !st && i < fedc_model_num_params(t->model); i++) {
        char name[256];
        snprintf(name, sizeof name, "%s/%s", FEDC_ASYNC_START, fedc_model_param_name(t->model, i));
        st = fedc_executor_bind(ex, name, a->start[i]);
    }
    return st;
}

fedc_status fedc__train_async_snapshot(trainer *t, int version, int *out, bool *fresh) {
    struct train_async *a = t->async;
    int free_at = -1;
    for (int i = 0; i <= a->c; i++) {
        if (a->snaps[i].refs > 0 && a->snaps[i].version == version) return *out = i, *fresh = false, FEDC_OK;
        if (a->snaps[i].refs == 0 && free_at < 0) free_at = i;
    }
    if (free_at < 0) /* c in flight hold at most c versions, of c + 1: only a replayed log can hold more */
        return fedc_error(FEDC_EINVAL, "train: more than %d model versions held by clients in flight at once "
                          "(--clients-per-round %d)", a->c, a->c);
    snapshot *s = &a->snaps[free_at];
    size_t n = (size_t)fedc_model_size(t->model);
    if (!s->params && !(s->params = fedc_malloc(n * sizeof *s->params)))
        return fedc_error(FEDC_ENOMEM, "train: out of memory for a model version");
    s->version = version;
    *out = free_at, *fresh = true;
    return FEDC_OK;
}

/* The snapshot of the current model, version `version` (made on first use). */
static fedc_status current_snapshot(trainer *t, int version, int *out) {
    bool fresh;
    fedc_status st = fedc__train_async_snapshot(t, version, out, &fresh);
    if (!st && fresh)
        memcpy(t->async->snaps[*out].params, t->params, (size_t)fedc_model_size(t->model) * sizeof(float));
    return st;
}

static bool in_flight(const struct train_async *a, int64_t client) {
    for (int i = 0; i < a->nflights; i++)
        if (a->flights[i].client == client) return true;
    return false;
}

/* The next client to start, at the clock's time, on version r: the next
 * dispatch's, or after C candidates in a row that cannot start, none (-1). */
static fedc_status next_client(trainer *t, int r, int64_t *client, uint64_t *dispatch) {
    struct train_async *a = t->async;
    int64_t n = fedc_dataset_num_clients(t->train);
    for (int tries = 0; tries < a->c; tries++) {
        uint64_t d = a->dispatched++;
        int64_t b = (int64_t)(d / (uint64_t)a->c);
        if (b != a->block_no) {
            fedc_status st = fedc_sample_clients(n, a->c, t->c->seed, (uint32_t)b, a->block);
            if (st) return st;
            a->block_no = b;
        }
        int64_t id = a->block[d % (uint64_t)a->c];
        bool online = !t->clock || fedc__clock_available(t->clock, id, (uint32_t)b, t->vtime);
        if (!in_flight(a, id) && online) return *client = id, *dispatch = d, FEDC_OK;
    }
    (void)r;
    *client = -1;
    return FEDC_OK;
}

static fedc_status dispatch(trainer *t, int r) {
    struct train_async *a = t->async;
    double bytes = 2.0 * 4.0 * (double)fedc_model_size(t->model);
    while (a->nflights < a->c) {
        int64_t id;
        uint64_t d;
        int snap = 0;
        fedc_status st = next_client(t, r, &id, &d);
        if (!st && id >= 0) st = current_snapshot(t, r, &snap);
        if (st || id < 0) return st;
        double steps = (double)fedc__train_client_steps(t, id);
        double took = t->clock ? fedc__clock_task_seconds(t->clock, id, steps, bytes) : 0;
        a->snaps[snap].refs++;
        a->flights[a->nflights++] = (flight){id, d, r, snap, t->vtime + took};
    }
    return FEDC_OK;
}

static bool earlier(const flight *x, const flight *y) {
    if (x->due != y->due) return x->due < y->due;
    if (x->client != y->client) return x->client < y->client;
    return x->dispatch < y->dispatch;
}

/* Report f into slot `slot`: its client, round, staleness weight and model
 * version, logged to arrivals.jsonl. */
fedc_status fedc__train_async_take(trainer *t, int r, int slot, flight f) {
    struct train_async *a = t->async;
    t->vtime = f.due;
    t->sampled[slot] = f.client;
    a->rounds[slot] = (uint32_t)(f.dispatch / (uint64_t)a->c);
    a->weight[slot] = (float)fedc__staleness_of(&t->alg, (double)(r - f.version));
    const float *model = a->snaps[f.snapshot].params;
    for (int i = 0; i < fedc_model_num_params(t->model); i++) {
        int64_t size = fedc_model_param_size(t->model, i);
        memcpy(a->start[i] + (size_t)(slot * size), model + fedc_model_param_offset(t->model, i),
               (size_t)size * sizeof(float));
    }
    a->snaps[f.snapshot].refs--;
    return fedc__train_arrivals_log(t, r, &f);
}

/* The earliest report into slot `slot`. */
static fedc_status take_report(trainer *t, int r, int slot) {
    struct train_async *a = t->async;
    int first = 0;
    for (int i = 1; i < a->nflights; i++)
        if (earlier(&a->flights[i], &a->flights[first])) first = i;
    flight f = a->flights[first];
    a->flights[first] = a->flights[--a->nflights];
    return fedc__train_async_take(t, r, slot, f);
}

static bool due_now(const struct train_async *a, double now) {
    for (int i = 0; i < a->nflights; i++)
        if (a->flights[i].due <= now) return true;
    return false;
}

fedc_status fedc__train_async_next(trainer *t, int r) {
    struct train_async *a = t->async;
    if (t->c->replay) return fedc__train_replay_next(t, r);
    for (int slot = 0; slot < a->k; slot++) {
        fedc_status st = due_now(a, t->vtime) ? FEDC_OK : dispatch(t, r);
        if (st) return st;
        if (a->nflights == 0)
            return fedc_error(FEDC_EINVAL, "step %d: no client can start at virtual time %g (none is available: see "
                              "--clock's availability)", r + 1, t->vtime);
        if ((st = take_report(t, r, slot))) return st;
        t->client_ids[slot] = fedc_dataset_client_id(t->train, t->sampled[slot]);
    }
    t->present = a->k;
    return FEDC_OK;
}
