/* ALIE and IPM in robust_aggregate's store (fedc__robust_aggregate_attacked;
 * fedc/attack.h): the flagged clients' values replaced by an attack made from
 * the others', and cclip's centre taken off every value, before the aggregator
 * runs.
 *
 * Why here. ALIE needs the honest clients' coordinate-wise mean μ and spread σ
 * (IPM their mean) before any malicious update exists. As ops over the cohort
 * (fedc_attack_update) the executor holds every client's update at once; the
 * store already holds them, within its memory budget, so made here the attack
 * costs a block of coordinates, not the cohort's updates.
 *
 * The bits are the ops'. A coordinate's μ and σ² are weighted means over the
 * cohort, summed by the executor's own tree over client indices (aggregate.c,
 * through fedc__agg_begin_as) with the weights 1 − flag (1 for an honest client;
 * a malicious one adds 0 × its value, as weighted_mean does), holes (dropped
 * clients) left out; then one f32 step at a time in the ops' order: d = x − μ,
 * d × d; σ = sqrtf(σ²); ALIE μ − (z σ), IPM (−ε) μ; x − centre. A coordinate's
 * result depends on that coordinate alone, so going a block of coordinates at a
 * time (FEDC__ROBUST_BLOCK, as the aggregators read the store) changes no bit.
 * This file is compiled with -ffp-contract=off (CMakeLists.txt): a fused
 * multiply-add would round once where the ops round twice. */
#include <math.h>

#include "exec/exec.h"
#include "kernels/robust.h"

static float flag_of(const fedc__robust_attack_job *job, int64_t i) {
    return *(const float *)(const void *)((const char *)job->flags + (size_t)i * job->flags_stride);
}

/* out = the cohort's weighted mean (weights 1 − flag) of the block's rows, or,
 * with `mean`, of their squared deviations from it (computed into sq). */
static fedc_status honest_mean(const fedc__robust_attack_job *job, fedc__agg *agg, const float *const *rows,
                               int64_t count, const float *mean, float *sq, float *out) {
    fedc__agg_begin_as(agg, FEDC_OP_WEIGHTED_MEAN, FEDC_F32, count, job->clients, out);
    fedc_status st = FEDC_OK;
    for (int64_t i = 0, j = 0; !st && i < job->clients; i++) {
        bool reported = j < job->set->n && job->client[j] == i;
        const float *x = reported ? rows[j++] : NULL;
        if (x && mean) {
            for (int64_t k = 0; k < count; k++) {
                float d = x[k] - mean[k];
                sq[k] = d * d;
            }
            x = sq;
        }
        float honest = 1.0f - flag_of(job, i);
        st = fedc__agg_add(agg, i, x, &honest);
    }
    return st ? st : fedc__agg_end(agg);
}

/* What the flagged clients send, for the block: from μ and (ALIE) σ². */
static void attack_of(const fedc__robust_attack_job *job, int64_t count, const float *mean, float *var, float *sent) {
    float s = (float)job->value;
    if (job->attack == FEDC__ROBUST_ATTACK_IPM) {
        float minus = -s;
        for (int64_t k = 0; k < count; k++) sent[k] = minus * mean[k];
        return;
    }
    for (int64_t k = 0; k < count; k++) {
        float sd = sqrtf(var[k]);
        float step = s * sd;
        sent[k] = mean[k] - step;
    }
}

/* The block's values as the aggregator gets them: the attack for the flagged
 * clients, each less the centre's coordinates when there is one. */
static fedc_status write_block(const fedc__robust_attack_job *job, const float *const *rows, int64_t lo,
                               int64_t count, const float *sent, float *centered) {
    fedc_status st = FEDC_OK;
    for (int j = 0; !st && j < job->set->n; j++) {
        bool bad = flag_of(job, job->client[j]) > 0.5f;
        if (!bad && !job->center) continue;
        const float *from = bad ? sent : rows[j];
        if (job->center) {
            for (int64_t k = 0; k < count; k++) centered[k] = from[k] - job->center[lo + k];
            from = centered;
        }
        st = job->write(job->write_ctx, j, lo, count, from);
    }
    return st;
}

fedc_status fedc__robust_attack_rows(const fedc__robust_attack_job *job) {
    const fedc__robust_set *s = job->set;
    const float **rows = NULL;
    float *scratch = NULL, *buf = NULL;
    fedc__agg agg = {0};
    fedc_status st = fedc__robust_room(s, s->n, 1, &rows, &scratch);
    if (!st && !(buf = fedc_malloc(4 * FEDC__ROBUST_BLOCK * sizeof *buf)))
        st = fedc_error(FEDC_ENOMEM, "robust_aggregate: no memory for the attack's statistics");
    float *mean = buf, *var = buf + FEDC__ROBUST_BLOCK, *sent = var + FEDC__ROBUST_BLOCK, *more = sent + FEDC__ROBUST_BLOCK;
    for (int64_t b = 0; !st && b * FEDC__ROBUST_BLOCK < s->d; b++) {
        int64_t lo, hi;
        fedc__robust_block(s, b, &lo, &hi);
        st = fedc__robust_fetch(s, NULL, s->n, lo, hi, scratch, rows);
        if (!st) st = honest_mean(job, &agg, rows, hi - lo, NULL, NULL, mean);
        if (!st && job->attack == FEDC__ROBUST_ATTACK_ALIE) st = honest_mean(job, &agg, rows, hi - lo, mean, more, var);
        if (!st) attack_of(job, hi - lo, mean, var, sent);
        if (!st) st = write_block(job, rows, lo, hi - lo, sent, more);
    }
    fedc__agg_free(&agg);
    fedc_free(buf), fedc_free(rows), fedc_free(scratch);
    return st;
}
