/* Aggregators (fedc/aggregate.h): robust zeroing, L2 clipping, the Gaussian noise
 * of DP-FedAvg and its adaptive clip, as ops of the round program, and
 * fedc_round_aggregate, which applies an algorithm's fedc_aggregation:
 *
 *     norm_i = ‖Δ_i‖                                       (@clients)
 *     Δ_i = norm_i ≤ B ? Δ_i : 0                           (zeroing; NaN, Inf: 0)
 *     compression: Δ_i ← Q(R Δ_i), norm_i = ‖Δ_i‖          (src/fl/compress.c; R: rotate)
 *     DP:  Δ_i *= C / max(norm_i, C)                        (clipping)
 *          mean = (Σ Δ_i + N(0, (z C)²)) / m                (@server, TFF's NormalizedQuery)
 *          adaptive: C ← C exp(−η (b̄ − γ))                 (server state aggregator/clip)
 *     else mean = weighted_mean(Δ_i, weight_i)
 *     rotate: mean ← R⁻¹ mean                              (@server)
 *
 * Quantizing before the clip keeps the clip a bound on what each client sends, so
 * the noise's sensitivity is unchanged; with rotate the clip and the noise are in
 * the rotated space, where R is orthonormal (the clip bounds ‖R⁻¹ Δ_i‖ alike, and
 * R⁻¹ of isotropic noise is isotropic noise), and R⁻¹ is post-processing.
 *
 * The values TFF and TF Privacy compute, in their order: tf.clip_by_global_norm's
 * t · C / max(norm, C); GaussianSumQuery's noise with the clip of the round's start;
 * QuantileEstimatorQuery's centred bits (1[norm ≤ C] − ½), whose noisy sum over m
 * plus ½ is clamped to [0, 1]. */
#include <math.h>
#include <stdlib.h>

#include "fedc/aggregate.h"
#include "fedc/secure_sum.h"
#include "fl/fl.h"

fedc_aggregation fedc_aggregation_adaptive_defaults(double noise_multiplier) {
    return (fedc_aggregation){.clip = 0.1, .noise_multiplier = noise_multiplier, .adaptive = true,
                              .target_quantile = 0.5, .clip_learning_rate = 0.2, .count_stddev = -1};
}

bool fedc_aggregation_active(const fedc_aggregation *a) {
    return a->zero_norm > 0 || a->clip > 0 || a->secure_sum_bits != 0 || a->compress_bits > 0 ||
           a->robust.kind != FEDC_ROBUST_MEAN || a->attack.kind != FEDC_ATTACK_NONE;
}

fedc_status fedc_aggregation_noise(const fedc_aggregation *a, double m, double *update_multiplier,
                                   double *count_stddev) {
    double z = a->noise_multiplier;
    *update_multiplier = z, *count_stddev = 0;
    if (!a->adaptive || z == 0) return FEDC_OK; /* TFF: no count noise without update noise */
    double sb = a->count_stddev >= 0 ? a->count_stddev : 0.05 * m;
    if (!(z < 2 * sb))
        return fedc_error(FEDC_EINVAL, "aggregation: the count's noise stddev %g (0.05 x %g expected clients unless "
                          "set) is too low for the noise multiplier %g: it must exceed z / 2; raise the count's stddev "
                          "(--dp-adaptive count-stddev=S) or lower the noise", sb, m, z);
    *update_multiplier = 1 / sqrt(1 / (z * z) - 1 / (4 * sb * sb));
    *count_stddev = sb;
    return FEDC_OK;
}

static bool in(double v, double lo, double hi) { return v >= lo && v <= hi; }

/* One "name=value" of an adaptive spec into *out, checked against [lo, hi]. */
static fedc_status spec_value(const char *item, size_t len, const char *name, double lo, double hi, double *out) {
    size_t n = strlen(name);
    char num[64], *end;
    if (len <= n + 1 || strncmp(item, name, n) || item[n] != '=') return FEDC_ENOTFOUND;
    snprintf(num, sizeof num, "%.*s", (int)(len - n - 1), item + n + 1);
    double v = strtod(num, &end);
    if (!num[0] || *end || !in(v, lo, hi) || !isfinite(v))
        return fedc_error(FEDC_EINVAL, "%s needs a number in [%g, %g], not '%s'", name, lo, hi, num);
    *out = v;
    return FEDC_OK;
}

fedc_status fedc_aggregation_parse_adaptive(const char *spec, fedc_aggregation *a) {
    fedc_aggregation d = fedc_aggregation_adaptive_defaults(a->noise_multiplier);
    d.zero_norm = a->zero_norm, d.expected_clients = a->expected_clients;
    if (a->clip > 0) d.clip = a->clip; /* the initial clip, if given */
    if (!spec || !strcmp(spec, "off")) return FEDC_OK;
    if (strcmp(spec, "on"))
        for (const char *s = spec; *s;) {
            size_t len = strcspn(s, ",");
            fedc_status st = spec_value(s, len, "quantile", 0, 1, &d.target_quantile);
            if (st == FEDC_ENOTFOUND) st = spec_value(s, len, "lr", 0, 1e6, &d.clip_learning_rate);
            if (st == FEDC_ENOTFOUND) st = spec_value(s, len, "count-stddev", 0, 1e12, &d.count_stddev);
            if (st == FEDC_ENOTFOUND)
                return fedc_error(FEDC_EINVAL, "unknown setting '%.*s' (there are: quantile=Q, lr=ETA, count-stddev=S; "
                                  "or on)", (int)len, s);
            if (st) return st;
            s += len + (s[len] == ',');
        }
    *a = d;
    return FEDC_OK;
}

/* ----------------------------------------------------------- secure sum -- */

/* The secure sum's bound: its own, else a fixed clip (a clipped update's elements
 * are within it); 0 when there is none. */
static double secure_bound(const fedc_aggregation *a) {
    return a->secure_sum_bound > 0 ? a->secure_sum_bound : a->clip > 0 && !a->adaptive ? a->clip : 0;
}

static fedc_status check_secure_sum(const fedc_aggregation *a) {
    if (!(in(a->secure_sum_bound, 0, INFINITY) && isfinite(a->secure_sum_bound)))
        return fedc_error(FEDC_EINVAL, "aggregation: the secure sum's bound %g must be finite and > 0 (0: the clip)",
                          a->secure_sum_bound);
    if (a->secure_sum_bits == 0) return FEDC_OK;
    if (secure_bound(a) == 0)
        return fedc_error(FEDC_EINVAL, "aggregation: the secure sum needs a bound on each element (--secure-bound B; "
                          "a fixed --dp-clip C gives B = C, an adaptive clip changes every round)");
    fedc_status st = fedc_secure_sum_check(a->secure_sum_bits, secure_bound(a));
    return st ? fedc_error(st, "aggregation: %s", fedc_errmsg()) : FEDC_OK;
}

/* The weighted mean with its sum made secure: decode(Σ_i enc(w_i Δ_i)) / Σ_i w_i
 * (TFF's MeanFactory over a SecureSumFactory: the clients weight their own
 * values; the weights' sum is the one the round reports as examples anyway). */
static fedc_tree *secure_mean(fedc_round *r, const fedc_aggregation *a, const fedc_tree *update, fedc_value weight) {
    fedc_program *p = r->p;
    fedc_tree *sum = fedc_aggregate_secure_sum(p, fedc_tree_scale(p, update, weight), a->secure_sum_bits, secure_bound(a));
    fedc_value total = fedc_sum(p, weight);
    fedc_tree *mean = fedc_tree_new(p);
    for (int i = 0; sum && mean && i < fedc_tree_size(sum); i++)
        fedc_tree_set(p, mean, fedc_tree_name(sum, i), fedc_div(p, fedc_tree_value(sum, i), total));
    return fedc_program_status(p) ? NULL : mean;
}

/* --------------------------------------------------------------- checks -- */

/* A robust aggregator needs each client's update as sent: not a sum (DP's,
 * secure sum's), not a quantization its distances would measure. */
static fedc_status check_robust(const fedc_aggregation *a) {
    if (a->robust.kind == FEDC_ROBUST_MEAN) return FEDC_OK;
    fedc_status st = fedc_robust_check(&a->robust, 0);
    if (st) return fedc_error(st, "aggregation: %s", fedc_errmsg());
    const char *with = a->clip > 0 ? "a DP clip (--dp-clip)" : a->secure_sum_bits ? "a secure sum (--secure-sum)"
                       : a->compress_bits > 0 ? "compression (--compress)" : NULL;
    if (with)
        return fedc_error(FEDC_EINVAL, "aggregation: the robust aggregator %s needs each client's update as it is, so "
                          "it does not combine with %s", fedc_robust_name(a->robust.kind), with);
    return FEDC_OK;
}

fedc_status fedc_aggregation_check(const fedc_aggregation *a) {
    if (!(in(a->zero_norm, 0, INFINITY) && isfinite(a->zero_norm)))
        return fedc_error(FEDC_EINVAL, "aggregation: the zeroing norm %g must be finite and > 0 (0: off)", a->zero_norm);
    if (!(in(a->clip, 0, INFINITY) && isfinite(a->clip)))
        return fedc_error(FEDC_EINVAL, "aggregation: the clip %g must be finite and > 0 (0: off)", a->clip);
    if (!(in(a->noise_multiplier, 0, INFINITY) && isfinite(a->noise_multiplier)))
        return fedc_error(FEDC_EINVAL, "aggregation: the noise multiplier %g must be finite and >= 0", a->noise_multiplier);
    if (a->noise_multiplier > 0 && a->clip == 0)
        return fedc_error(FEDC_EINVAL, "aggregation: noise (multiplier %g) needs a clip: its stddev is z x clip",
                          a->noise_multiplier);
    if (a->adaptive && a->clip == 0) return fedc_error(FEDC_EINVAL, "aggregation: an adaptive clip needs an initial clip > 0");
    if (a->adaptive && !in(a->target_quantile, 0, 1))
        return fedc_error(FEDC_EINVAL, "aggregation: the target quantile %g must be in [0, 1]", a->target_quantile);
    if (a->adaptive && !(in(a->clip_learning_rate, 0, INFINITY) && isfinite(a->clip_learning_rate)))
        return fedc_error(FEDC_EINVAL, "aggregation: the clip's learning rate %g must be finite and >= 0",
                          a->clip_learning_rate);
    if (a->adaptive && !(a->count_stddev < 0 || isfinite(a->count_stddev)))
        return fedc_error(FEDC_EINVAL, "aggregation: the count's noise stddev %g must be finite", a->count_stddev);
    if (!(in(a->expected_clients, 0, INFINITY) && isfinite(a->expected_clients)))
        return fedc_error(FEDC_EINVAL, "aggregation: the expected clients %g must be finite and > 0 (0: the cohort's "
                          "size)", a->expected_clients);
    if (!(a->attack.fraction >= 0 && a->attack.fraction <= 1))
        return fedc_error(FEDC_EINVAL, "aggregation: the attackers' fraction %g must be in [0, 1]", a->attack.fraction);
    fedc_status st = check_robust(a);
    if (!st) st = check_secure_sum(a);
    double zu, sb;
    if (!st && a->expected_clients > 0) st = fedc_aggregation_noise(a, a->expected_clients, &zu, &sb);
    return st ? st : fedc__compress_check(a);
}

/* ------------------------------------------------------------- the pieces -- */

fedc_value fedc_aggregate_norm(fedc_program *p, const fedc_tree *t) { return fedc_sqrt(p, fedc_tree_sq_norm(p, t)); }

fedc_tree *fedc_aggregate_zero(fedc_program *p, const fedc_tree *t, fedc_value norm, fedc_value bound,
                               fedc_value *zeroed) {
    /* NaN compares false and an Inf norm exceeds any finite bound: both are zeroed */
    fedc_value ok = fedc_le(p, norm, bound), zero = fedc_scalar(p, FEDC_F32, 0);
    if (zeroed) *zeroed = fedc_select(p, ok, zero, fedc_scalar(p, FEDC_F32, 1));
    fedc_tree *r = fedc_tree_new(p);
    for (int i = 0; r && i < fedc_tree_size(t); i++)
        fedc_tree_set(p, r, fedc_tree_name(t, i), fedc_select(p, ok, fedc_tree_value(t, i), zero));
    return fedc_program_status(p) ? NULL : r;
}

fedc_tree *fedc_aggregate_clip(fedc_program *p, const fedc_tree *t, fedc_value norm, fedc_value clip) {
    return fedc_tree_scale(p, t, fedc_div(p, clip, fedc_maximum(p, norm, clip)));
}

fedc_value fedc__key_plus(fedc_program *p, fedc_value key, int32_t k) {
    int32_t add[4] = {0, 0, 0, k};
    fedc_type t = fedc_type_make(FEDC_I32, 1, (int64_t[]){4});
    return fedc_add(p, key, fedc_constant(p, t, add));
}

fedc_tree *fedc_aggregate_noise(fedc_program *p, const fedc_tree *t, fedc_value key, fedc_value stddev) {
    fedc_tree *r = fedc_tree_new(p);
    for (int i = 0; r && i < fedc_tree_size(t); i++) {
        fedc_value v = fedc_tree_value(t, i);
        fedc_value n = fedc_random_normal(p, fedc__key_plus(p, key, i + 1), fedc_value_type(p, v));
        fedc_tree_set(p, r, fedc_tree_name(t, i), fedc_add(p, v, fedc_mul(p, stddev, n)));
    }
    return fedc_program_status(p) ? NULL : r;
}

fedc_value fedc_aggregate_adapt_clip(fedc_program *p, fedc_value norm, fedc_value clip, fedc_value key,
                                     fedc_value count_stddev, fedc_value m, double target_quantile,
                                     double learning_rate, fedc_value *fraction) {
    fedc_value half = fedc_scalar(p, FEDC_F32, 0.5), zero = fedc_scalar(p, FEDC_F32, 0);
    fedc_value one = fedc_scalar(p, FEDC_F32, 1);
    fedc_value minus_half = fedc_scalar(p, FEDC_F32, -0.5);
    fedc_value below = fedc_select(p, fedc_le(p, norm, fedc_broadcast(p, clip)), half, minus_half);
    fedc_value sum = fedc_sum(p, below);
    if (key != FEDC_NONE) /* no noise: none drawn, and no key needed */
        sum = fedc_add(p, sum, fedc_mul(p, count_stddev, fedc_random_normal(p, key, fedc_value_type(p, sum))));
    fedc_value b = fedc_minimum(p, one, fedc_maximum(p, zero, fedc_add(p, fedc_div(p, sum, m), half)));
    if (fraction) *fraction = b;
    fedc_value rate = fedc_scalar(p, FEDC_F32, learning_rate), target = fedc_scalar(p, FEDC_F32, target_quantile);
    fedc_value step = fedc_mul(p, rate, fedc_sub(p, b, target));
    return fedc_maximum(p, fedc_mul(p, clip, fedc_exp(p, fedc_neg(p, step))), zero);
}

/* ------------------------------------------------------------- the round -- */

static fedc_value server_scalar(fedc_program *p, double v) {
    return fedc_full(p, fedc__placed(fedc_type_scalar(FEDC_F32), FEDC_SERVER), v);
}

static fedc_value noise_key(fedc_round *r) {
    fedc_value v = fedc_program_find_input(r->p, FEDC_AGGREGATE_KEY);
    fedc_type t = fedc__placed(fedc_type_make(FEDC_I32, 1, (int64_t[]){4}), FEDC_SERVER);
    return v != FEDC_NONE ? v : fedc_input(r->p, FEDC_AGGREGATE_KEY, t);
}

/* DP-FedAvg's mean of `update` (@clients): clipped, summed, noised, over m. */
static fedc_tree *dp_mean(fedc_round *r, const fedc_aggregation *a, const fedc_tree *update, fedc_value norm) {
    fedc_program *p = r->p;
    double m = a->expected_clients, zu = 0, sb = 0;
    fedc_value mv = m > 0 ? server_scalar(p, m) : fedc_num_clients(p, FEDC_F32);
    if (m > 0 && fedc_aggregation_noise(a, m, &zu, &sb)) return fedc_program_fail(p, FEDC_EINVAL, "%s", fedc_errmsg()), NULL;
    if (m == 0 && a->adaptive && a->noise_multiplier > 0)
        return fedc_program_fail(p, FEDC_EINVAL, "aggregation: an adaptive clip with noise needs the expected clients "
                                 "(the count's noise and z_delta depend on it)"), NULL;
    if (!a->adaptive) zu = a->noise_multiplier;
    fedc_value clip = a->adaptive ? fedc_tree_get(p, r->server, FEDC_AGGREGATE_CLIP) : server_scalar(p, a->clip);
    fedc_tree *clipped = fedc_aggregate_clip(p, update, norm, fedc_broadcast(p, clip));
    fedc_value stddev = fedc_mul(p, clip, server_scalar(p, zu));
    fedc_tree *sum = a->secure_sum_bits ? fedc_aggregate_secure_sum(p, clipped, a->secure_sum_bits, secure_bound(a))
                                        : fedc_tree_sum(p, clipped);
    if (zu > 0) sum = fedc_aggregate_noise(p, sum, noise_key(r), stddev);
    fedc_program_output(p, "aggregator/clip", clip);
    fedc_program_output(p, "aggregator/noise_stddev", stddev);
    if (a->adaptive) {
        fedc_value frac, key = sb > 0 ? noise_key(r) : FEDC_NONE;
        fedc_value next = fedc_aggregate_adapt_clip(p, norm, clip, key, server_scalar(p, sb), mv, a->target_quantile,
                                                    a->clip_learning_rate, &frac);
        fedc_program_output(p, "aggregator/unclipped_fraction", frac);
        fedc_program_output(p, "server/" FEDC_AGGREGATE_CLIP, next);
    }
    fedc_tree *mean = fedc_tree_new(p);
    for (int i = 0; mean && i < fedc_tree_size(sum); i++)
        fedc_tree_set(p, mean, fedc_tree_name(sum, i), fedc_div(p, fedc_tree_value(sum, i), mv));
    return fedc_program_status(p) ? NULL : mean;
}

/* FEDC_AGGREGATE_DONE: the clients aggregated. */
static void output_done(fedc_program *p) {
    fedc_program_output(p, FEDC_AGGREGATE_DONE, fedc_sum(p, fedc_full(p, fedc__placed(fedc_type_scalar(FEDC_F32), FEDC_CLIENTS), 1)));
}

fedc_tree *fedc_round_aggregate(fedc_round *r, const fedc_tree *update, fedc_value weight) {
    fedc_program *p = r->p;
    const fedc_aggregation *a = &r->alg->aggregation;
    if (!fedc_aggregation_active(a)) return fedc_tree_weighted_mean(p, update, weight);
    if (fedc_aggregation_check(a)) return fedc_program_fail(p, FEDC_EINVAL, "%s", fedc_errmsg()), NULL;
    if (fedc_program_find_output(p, FEDC_AGGREGATE_DONE) != FEDC_NONE)
        return fedc_program_fail(p, FEDC_EINVAL, "%s: the round aggregates twice with --dp-clip, --robust-zero or --compress; "
                                 "each round may call fedc_round_aggregate once", fedc_algorithm_name(r->alg)), NULL;
    /* a robust round makes the attack and the zeroing in what its clients stream to the aggregator: each client
     * in the clients' map, but ALIE and IPM, and a zeroing after them, in the aggregator's store; so does the
     * plain mean after ALIE or IPM, unless a DP clip, a secure sum or compression needs their ops */
    bool robust = a->robust.kind != FEDC_ROBUST_MEAN;
    bool stored = fedc__attack_from_honest(&a->attack) && a->clip == 0 && a->secure_sum_bits == 0 &&
                  a->compress_bits == 0;
    bool streamed = robust || stored;
    fedc_value bad = FEDC_NONE;
    if (a->attack.kind != FEDC_ATTACK_NONE) { /* the malicious clients send their attack instead */
        bad = fedc__attack_malicious(p);
        if (!streamed) update = fedc_attack_update(p, &a->attack, update, bad, fedc__round_client_key(r));
        fedc_program_output(p, "aggregator/attackers", fedc_sum(p, bad)); /* the cohort's malicious clients */
        if (!update) return NULL;
    }
    if (streamed) {
        output_done(p);
        bool sent_attacked = fedc__attack_per_client(&a->attack) || fedc__attack_from_honest(&a->attack);
        return fedc__robust_round(r, update, weight, sent_attacked ? bad : FEDC_NONE, a->zero_norm);
    }
    bool clip_raw = a->clip > 0 && a->compress_bits == 0; /* else the clip takes the quantized update's norm */
    fedc_value norm = a->zero_norm > 0 || clip_raw ? fedc_aggregate_norm(p, update) : FEDC_NONE;
    if (a->zero_norm > 0) {
        fedc_value zeroed;
        update = fedc_aggregate_zero(p, update, norm, fedc_scalar(p, FEDC_F32, a->zero_norm), &zeroed);
        fedc_value kept = fedc_le(p, norm, fedc_scalar(p, FEDC_F32, a->zero_norm));
        norm = fedc_select(p, kept, norm, fedc_scalar(p, FEDC_F32, 0));
        fedc_program_output(p, "aggregator/zeroed", fedc_sum(p, zeroed));
    }
    const fedc_tree *sent = update; /* what each client sends: compressed, then clipped */
    fedc_value key = a->compress_rotate ? noise_key(r) : FEDC_NONE;
    if (a->compress_bits > 0) {
        sent = fedc__compress_update(r, update, key);
        if (sent && a->clip > 0) norm = fedc_aggregate_norm(p, sent); /* the clip bounds the quantized update */
    }
    output_done(p);
    if (!sent) return NULL;
    fedc_tree *mean = a->clip > 0            ? dp_mean(r, a, sent, norm)
                      : a->secure_sum_bits ? secure_mean(r, a, sent, weight)
                                           : fedc_tree_weighted_mean(p, sent, weight);
    return a->compress_bits > 0 ? fedc__compress_finish(r, mean, update, key) : mean;
}
