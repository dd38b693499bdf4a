/* ALIE and IPM in robust_aggregate's store (fedc__robust_aggregate_attacked;
 * fedc/attack.h): the flagged clients' values replaced by an attack made from
 * the others', the zeroing after it (--robust-zero), and cclip's centre taken
 * off every value, before the aggregator runs; and the plain weighted mean over
 * the store, when that is the aggregator.
 *
 * Why here. ALIE needs the honest clients' coordinate-wise mean μ and spread σ
 * (IPM their mean) before any malicious update exists, and a zeroing after it
 * the attack's norm. As ops over the cohort (fedc_attack_update) the executor
 * holds every client's update at once; the store already holds them, within its
 * memory budget, so made here the attack costs a block of coordinates, not the
 * cohort's updates.
 *
 * The bits are the ops'. A coordinate's μ and σ² are weighted means over the
 * cohort, summed by the executor's own tree over client indices (aggregate.c,
 * through fedc__agg_begin_as) with the weights 1 − flag (1 for an honest client;
 * a malicious one adds 0 × its value, as weighted_mean does), holes (dropped
 * clients) left out; then one f32 step at a time in the ops' order: d = x − μ,
 * d × d; σ = sqrtf(σ²); ALIE μ − (z σ), IPM (−ε) μ; x − centre. A coordinate's
 * result depends on that coordinate alone, so going a block of coordinates at a
 * time (FEDC__ROBUST_BLOCK, as the aggregators read the store) changes no bit;
 * the mean of the attacked values is the same tree with the clients' weights.
 * The attack's norm is fedc_aggregate_norm's: each leaf's f32 squares summed in
 * double in coordinate order and rounded to f32 (reduce_sum, both kernel sets),
 * the leaves' sums added in f32 in leaf order, the f32 square root; a block
 * boundary inside a leaf only pauses that running sum. An honest client's flag
 * comes from its own map, as the ops compute it. This file is compiled with
 * -ffp-contract=off (CMakeLists.txt): a fused multiply-add would round once
 * where the ops round twice. */
#include <math.h>

#include "exec/exec.h"
#include "kernels/robust.h"

static float flag_of(const fedc__robust_attack_job *job, int64_t i) {
    return *(const float *)(const void *)((const char *)job->flags + (size_t)i * job->flags_stride);
}

/* out = the cohort's weighted mean (client i's weight: weight[i]) of the block's
 * rows, or, with `mean`, of their squared deviations from it (computed into sq). */
static fedc_status tree_mean(const fedc__robust_set *s, const int *client, int64_t clients, const float *weight,
                             fedc__agg *agg, const float *const *rows, int64_t count, const float *mean, float *sq,
                             float *out) {
    fedc__agg_begin_as(agg, FEDC_OP_WEIGHTED_MEAN, FEDC_F32, count, clients, out);
    fedc_status st = FEDC_OK;
    for (int64_t i = 0, j = 0; !st && i < clients; i++) {
        bool reported = j < s->n && client[j] == i;
        const float *x = reported ? rows[j++] : NULL;
        if (x && mean) {
            for (int64_t k = 0; k < count; k++) {
                float d = x[k] - mean[k];
                sq[k] = d * d;
            }
            x = sq;
        }
        st = fedc__agg_add(agg, i, x, &weight[i]);
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

/* The attack's norm as it is made, a block at a time: the open leaf's running
 * sum of squares, and the leaves' f32 total before it. */
typedef struct attack_norm {
    int64_t leaf, end; /* the open leaf, and where it ends */
    double sum;
    float total;
} attack_norm;

static void close_leaf(attack_norm *a, const fedc__robust_attack_job *job) {
    float leaf = (float)a->sum; /* reduce_sum's (T)(sum / 1) */
    a->total = a->leaf == 0 ? leaf : a->total + leaf;
    a->sum = 0;
    if (++a->leaf < job->leaves) a->end += job->sizes[a->leaf];
}

static void add_squares(attack_norm *a, const fedc__robust_attack_job *job, int64_t lo, int64_t count,
                        const float *sent) {
    for (int64_t k = 0; k < count; k++) {
        while (lo + k >= a->end && a->leaf < job->leaves) close_leaf(a, job);
        float sq = sent[k] * sent[k];
        a->sum += (double)sq;
    }
}

/* The block's values as the aggregator gets them: the attack for the flagged
 * clients (sent; NULL: none), zeros for those `zero` marks (NULL: none), each
 * less the centre's coordinates when there is one (center; NULL: none). */
static fedc_status write_block(const fedc__robust_attack_job *job, const float *const *rows, int64_t lo, int64_t count,
                               const float *sent, const uint8_t *zero, const float *zeros, const float *center,
                               float *centered) {
    fedc_status st = FEDC_OK;
    for (int j = 0; !st && j < job->set->n; j++) {
        bool bad = sent && flag_of(job, job->client[j]) > 0.5f, zeroed = zero && zero[j];
        if (!bad && !zeroed && !center) continue;
        const float *from = zeroed ? zeros : bad ? sent : rows[j];
        if (center) {
            for (int64_t k = 0; k < count; k++) centered[k] = from[k] - center[lo + k];
            from = centered;
        }
        st = job->write(job->write_ctx, j, lo, count, from);
    }
    return st;
}

/* The zeroing, once the attack is in: which reported clients it zeroes (an
 * honest one by its own flag, the value's last number; a flagged one by the
 * attack's norm), their count, and the values written again with the centre. */
static fedc_status zero_rows(const fedc__robust_attack_job *job, const attack_norm *norm, const float **rows,
                             float *scratch, float *zeros, float *centered, int *zeroed) {
    const fedc__robust_set *s = job->set;
    uint8_t *zero = fedc_calloc((size_t)(s->n ? s->n : 1), 1);
    if (!zero) return fedc_error(FEDC_ENOMEM, "robust_aggregate: no memory for the zeroing's flags");
    bool kept = sqrtf(norm->total) <= job->bound; /* NaN: zeroed, as fedc_aggregate_zero */
    fedc_status st = fedc__robust_fetch(s, NULL, s->n, s->d, s->d + 1, scratch, rows);
    for (int j = 0; !st && j < s->n; j++) {
        zero[j] = flag_of(job, job->client[j]) > 0.5f ? !kept : rows[j][0] > 0.5f;
        *zeroed += zero[j];
    }
    for (int64_t k = 0; k < FEDC__ROBUST_BLOCK; k++) zeros[k] = 0;
    for (int64_t b = 0; !st && (*zeroed || job->center) && b * FEDC__ROBUST_BLOCK < s->d; b++) {
        int64_t lo, hi;
        fedc__robust_block(s, b, &lo, &hi);
        st = fedc__robust_fetch(s, NULL, s->n, lo, hi, scratch, rows);
        if (!st) st = write_block(job, rows, lo, hi - lo, NULL, zero, zeros, job->center, centered);
    }
    fedc_free(zero);
    return st;
}

/* The cohort's weights: 1 − flag (the honest clients' statistics), or each
 * reported client's own (NULL flags), into w (clients floats). */
static void weights_of(const fedc__robust_attack_job *job, bool honest, float *w) {
    for (int64_t i = 0; i < job->clients; i++) w[i] = honest ? 1.0f - flag_of(job, i) : 0;
    for (int j = 0; !honest && j < job->set->n; j++) w[job->client[j]] = (float)job->set->w[j];
}

fedc_status fedc__robust_attack_rows(const fedc__robust_attack_job *job, int *zeroed) {
    const fedc__robust_set *s = job->set;
    const float **rows = NULL;
    float *scratch = NULL, *buf = NULL;
    fedc__agg agg = {0};
    attack_norm norm = {.end = job->leaves > 0 ? job->sizes[0] : 0};
    *zeroed = 0;
    fedc_status st = fedc__robust_room(s, s->n, 1, &rows, &scratch);
    if (!st && !(buf = fedc_malloc((4 * FEDC__ROBUST_BLOCK + (size_t)job->clients) * sizeof *buf)))
        st = fedc_error(FEDC_ENOMEM, "robust_aggregate: no memory for the attack's statistics");
    if (!st && job->sizes && job->leaves < 1)
        st = fedc_error(FEDC_EINVAL, "robust_aggregate: a zeroing over an update of no leaves");
    float *mean = buf, *var = buf + FEDC__ROBUST_BLOCK, *sent = var + FEDC__ROBUST_BLOCK, *more = sent + FEDC__ROBUST_BLOCK;
    float *honest = more + FEDC__ROBUST_BLOCK;
    if (!st) weights_of(job, true, honest);
    const float *center = job->sizes ? NULL : job->center; /* with a zeroing, taken off after it */
    for (int64_t b = 0; !st && b * FEDC__ROBUST_BLOCK < s->d; b++) {
        int64_t lo, hi;
        fedc__robust_block(s, b, &lo, &hi);
        st = fedc__robust_fetch(s, NULL, s->n, lo, hi, scratch, rows);
        if (!st) st = tree_mean(s, job->client, job->clients, honest, &agg, rows, hi - lo, NULL, NULL, mean);
        if (!st && job->attack == FEDC__ROBUST_ATTACK_ALIE)
            st = tree_mean(s, job->client, job->clients, honest, &agg, rows, hi - lo, mean, more, var);
        if (!st) attack_of(job, hi - lo, mean, var, sent);
        if (!st && job->sizes) add_squares(&norm, job, lo, hi - lo, sent);
        if (!st) st = write_block(job, rows, lo, hi - lo, sent, NULL, NULL, center, more);
    }
    while (!st && job->sizes && norm.leaf < job->leaves) close_leaf(&norm, job);
    if (!st && job->sizes) st = zero_rows(job, &norm, rows, scratch, mean, more, zeroed);
    fedc__agg_free(&agg);
    fedc_free(buf), fedc_free(rows), fedc_free(scratch);
    return st;
}

fedc_status fedc__robust_mean_rows(const fedc__robust_attack_job *job, float *out) {
    const fedc__robust_set *s = job->set;
    const float **rows = NULL;
    float *scratch = NULL, *w = NULL;
    fedc__agg agg = {0};
    fedc_status st = fedc__robust_room(s, s->n, 1, &rows, &scratch);
    if (!st && !(w = fedc_malloc((size_t)(job->clients ? job->clients : 1) * sizeof *w)))
        st = fedc_error(FEDC_ENOMEM, "robust_aggregate: no memory for %lld clients' weights", (long long)job->clients);
    if (!st) weights_of(job, false, w);
    for (int64_t b = 0; !st && b * FEDC__ROBUST_BLOCK < s->d; b++) {
        int64_t lo, hi;
        fedc__robust_block(s, b, &lo, &hi);
        st = fedc__robust_fetch(s, NULL, s->n, lo, hi, scratch, rows);
        if (!st) st = tree_mean(s, job->client, job->clients, w, &agg, rows, hi - lo, NULL, NULL, out + lo);
    }
    fedc__agg_free(&agg);
    fedc_free(w), fedc_free(rows), fedc_free(scratch);
    return st;
}
