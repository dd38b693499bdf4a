/* The training job's side of the aggregators (fedc/aggregate.h): the settings
 * checked and completed before the round is built, the server's noise stream
 * bound and drawn each round (it also gives the compression's rotation), the
 * aggregator's outputs read back, and the ε the run has spent so far and the bits
 * a client sent for metrics.jsonl (docs/privacy.md).
 *
 * The noise stream is keyed by (seed XOR a tag, round), a Philox key no client's
 * stream (keyed by the seed) has, so the server's noise never reuses a client's
 * dropout or shuffle bits, and a resumed round draws the noise it drew before. */
#include <math.h>
#include <stdio.h>

#include "fedc/privacy.h"
#include "fl/train.h"

#define NOISE_SEED_TAG 0x4E4F495345000000ull /* "NOISE" */

fedc_status fedc__train_privacy_setup(trainer *t) {
    fedc_aggregation *a = &t->alg.aggregation;
    train_privacy *p = &t->privacy;
    p->clip = p->noise_stddev = p->zeroed = p->fraction = p->bits = p->attackers = NAN;
    if (!fedc_aggregation_active(a)) return FEDC_OK;
    if (a->clip > 0 && a->expected_clients == 0) a->expected_clients = t->expected_clients; /* TFF's m */
    fedc_status st = fedc_aggregation_check(a);
    if (!st) st = fedc_aggregation_noise(a, a->expected_clients, &p->z_update, &p->z_count);
    if (st) return fedc_error(st, "train: %s", fedc_errmsg());
    p->z_count *= 2; /* the count's bits are centred, sensitivity 1/2: σ_b / (1/2) */
    double n = (double)fedc_dataset_num_clients(t->train);
    p->q = t->sampling_q;
    p->delta = t->c->dp_delta > 0 ? t->c->dp_delta : 1 / n;
    if (!(p->delta > 0 && p->delta < 1))
        return fedc_error(FEDC_EINVAL, "train: --dp-delta %g must be in (0, 1)", p->delta);
    return FEDC_OK;
}

fedc_status fedc__train_privacy_bind(trainer *t) {
    if (fedc_program_find_input(t->round, FEDC_AGGREGATE_KEY) == FEDC_NONE) return FEDC_OK;
    return fedc_executor_bind(t->round_ex, FEDC_AGGREGATE_KEY, t->privacy.key);
}

void fedc__train_privacy_before_round(trainer *t, int r) {
    fedc_rng_stream s = fedc_rng_stream_make(t->c->seed ^ NOISE_SEED_TAG, (uint32_t)r, 0, 0);
    int32_t *k = t->privacy.key;
    k[0] = (int32_t)s.key.k[0], k[1] = (int32_t)s.key.k[1], k[2] = (int32_t)s.c2, k[3] = (int32_t)s.c3;
    /* The quantizer reads the clients' data keys outside the map: under MPI every
     * rank needs every client's (docs/mpi.md), not only the ones it loaded. */
    if (t->alg.aggregation.compress_bits > 0)
        for (int i = 0; i < t->present; i++) fedc__train_client_key(t, (uint32_t)r, t->sampled[i], t->cohort.key + 4 * i);
}

/* Output `name` of the round (f32 or f64) as a double; NAN when the round has none. */
static fedc_status read_output(const trainer *t, const char *name, double *out) {
    *out = NAN;
    fedc_value o = fedc_program_find_output(t->round, name);
    if (o == FEDC_NONE) return FEDC_OK;
    const void *v;
    fedc_status st = fedc_executor_output(t->round_ex, name, &v, NULL);
    if (!st) *out = fedc_value_type(t->round, o).dtype == FEDC_F64 ? *(const double *)v : *(const float *)v;
    return st;
}

fedc_status fedc__train_privacy_after_round(trainer *t) {
    train_privacy *p = &t->privacy;
    fedc_status st = read_output(t, "aggregator/clip", &p->clip);
    if (!st) st = read_output(t, "aggregator/noise_stddev", &p->noise_stddev);
    if (!st) st = read_output(t, "aggregator/zeroed", &p->zeroed);
    if (!st) st = read_output(t, "aggregator/unclipped_fraction", &p->fraction);
    if (!st) st = read_output(t, "aggregator/bits", &p->bits);
    if (!st) st = read_output(t, "aggregator/attackers", &p->attackers);
    return st;
}

/* ε after `rounds` rounds: the update's noise and, with an adaptive clip, the
 * count's, composed over the rounds (RDP adds), at the sampling rate q. */
static fedc_status epsilon(const train_privacy *p, int rounds, double *eps) {
    fedc_privacy_accountant *acc;
    fedc_status st = fedc_privacy_accountant_create(&acc, NULL, 0);
    if (st) return st;
    st = fedc_privacy_accountant_add(acc, p->q, p->z_update, rounds);
    if (!st && p->z_count > 0) st = fedc_privacy_accountant_add(acc, p->q, p->z_count, rounds);
    double order;
    if (!st) st = fedc_privacy_accountant_epsilon(acc, p->delta, FEDC_RDP_IMPROVED, eps, &order);
    fedc_privacy_accountant_destroy(acc);
    return st;
}

/* ", \"name\": value" for a finite value; nothing for NAN. */
static void member(char *buf, size_t size, size_t *used, const char *name, double v) {
    if (isnan(v) || *used >= size) return;
    int n = isfinite(v) ? snprintf(buf + *used, size - *used, ", \"%s\": %.9g", name, v)
                        : snprintf(buf + *used, size - *used, ", \"%s\": null", name);
    if (n > 0) *used += (size_t)n;
}

fedc_status fedc__train_privacy_json(const trainer *t, int rounds, char *buf, size_t size) {
    const train_privacy *p = &t->privacy;
    size_t used = 0;
    buf[0] = 0;
    member(buf, size, &used, "dp_clip", p->clip);
    member(buf, size, &used, "dp_noise_stddev", p->noise_stddev);
    member(buf, size, &used, "dp_unclipped_fraction", p->fraction);
    member(buf, size, &used, "zeroed", p->zeroed);
    member(buf, size, &used, "attackers", p->attackers); /* the last round's malicious clients (--attack) */
    member(buf, size, &used, "compress_bits", p->bits);          /* a client's, this round */
    member(buf, size, &used, "compress_num_bits", p->bits * rounds); /* FedJAX's num_bits: over the rounds */
    if (p->z_update > 0) {
        double eps;
        fedc_status st = epsilon(p, rounds, &eps);
        if (st) return st;
        member(buf, size, &used, "epsilon", eps);
        member(buf, size, &used, "delta", p->delta);
    }
    return FEDC_OK;
}
