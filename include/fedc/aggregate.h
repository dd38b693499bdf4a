/*
 * fedc/aggregate.h — aggregators: robust and differentially private means of the
 * clients' updates, as pieces of a round program (docs/privacy.md).
 *
 * Each is built from ordinary ops on value trees, so it lands in the right phase
 * when a round is split for deployment (fedc/deploy.h): the norms, the zeroing and
 * the clipping are @clients ops (each client does them to its own update), the
 * noise is drawn at the server, once, on the sum. A round builder gets all of them
 * through fedc_round_aggregate (fedc/fl.h), which applies the algorithm's
 * fedc_aggregation; the pieces below are for builders that compose their own.
 *
 *     per client:  ok_i = ‖Δ_i‖ ≤ B (not NaN/Inf)     Δ_i ← ok_i ? Δ_i : 0     (zeroing)
 *                  Δ_i ← Q(R Δ_i)                   (compression; R: the rotation, if on)
 *                  Δ_i ← Δ_i · C / max(‖Δ_i‖, C)                          (L2 clipping)
 *     server:      mean = (Σ_i Δ_i + N(0, (z C)² I)) / m                  (DP-FedAvg)
 *                  mean ← R⁻¹ mean                  (compression with the rotation)
 *
 * DP-FedAvg is TFF's DifferentiallyPrivateFactory (tff.aggregators, over TF
 * Privacy's GaussianSumQuery in a NormalizedQuery): an unweighted sum of clipped
 * updates, Gaussian noise of stddev z·C on every coordinate, divided by the
 * expected cohort size m. Its adaptive clip is TF Privacy's
 * QuantileAdaptiveClipSumQuery with the geometric update (Andrew et al. 2021).
 * The compression is FedJAX's (fedjax/aggregators/compression.py and
 * walsh_hadamard.py): quantized before the clip, so the clip bounds what is sent.
 */
#ifndef FEDC_AGGREGATE_H
#define FEDC_AGGREGATE_H

#include "fedc/attack.h"
#include "fedc/robust.h"
#include "fedc/tree.h"

#ifdef __cplusplus
extern "C" {
#endif

/* How a round aggregates its clients' updates (all zero: the plain weighted mean). */
typedef struct fedc_aggregation {
    /* > 0: zero every client update whose L2 norm exceeds it or that holds a NaN
     * or an Inf (TFF's zeroing_factory); the weight stays. 0: off. */
    double zero_norm;
    /* > 0: DP-FedAvg: clip each update to this L2 norm (the initial clip when
     * adaptive), sum unweighted, add noise, divide by expected_clients. 0: off. */
    double clip;
    double noise_multiplier;  /* z >= 0: the noise's stddev is z × clip (adaptive: z_Δ × clip) */
    /* The clip adapts to a quantile of the update norms (Andrew et al. 2021): */
    bool adaptive;
    double target_quantile;   /* γ in [0, 1] (TFF: 0.5) */
    double clip_learning_rate; /* η >= 0 (TFF: 0.2) */
    double count_stddev;      /* σ_b of the noise on the count of unclipped clients; < 0: TFF's
                                 default, 0.05 m (0 when z is 0) */
    /* m: the expected number of clients a round (TFF's clients_per_round); 0: the
     * cohort's size, as the round runs. */
    double expected_clients;
    /* Compression (FedJAX's, src/fl/compress.c and src/fl/rotate.c): each client's
     * update quantized before any clip (docs/privacy.md gives the order). */
    int compress_bits;    /* > 0: to 2^compress_bits levels a leaf (uniform stochastic
                             quantization), 1 to 24; 0: off */
    bool compress_rotate; /* with compress_bits: the structured Walsh-Hadamard rotation
                             first, its inverse on the aggregate */
    /* Secure sum (fedc/secure_sum.h): > 0, the sum in the mean (the weighted sum,
     * or DP's sum of clipped updates) is each client's term clipped to
     * [-secure_sum_bound, secure_sum_bound] elementwise, in secure_sum_bits-bit fixed
     * point, summed modulo 2^32 and decoded: the arithmetic of secure aggregation.
     * 0: off. */
    int secure_sum_bits;
    double secure_sum_bound; /* > 0; 0: the clip (a fixed --dp-clip) */
    /* A Byzantine-robust aggregator (fedc/robust.h; --aggregator) in place of the
     * weighted mean, over each client's whole update flattened (src/fl/robust_round.c);
     * after zeroing, and not with a clip, a secure sum or compression. Zero: the mean. */
    fedc_robust robust;
    /* Byzantine clients, for evaluation (fedc/attack.h; --attack, --attackers): the
     * cohort's malicious clients (input meta/malicious) send the attack's update. */
    fedc_attack attack;
} fedc_aggregation;

/* TFF's adaptive defaults: γ 0.5, η 0.2, initial clip 0.1, σ_b = 0.05 m. */
FEDC_API fedc_aggregation fedc_aggregation_adaptive_defaults(double noise_multiplier);
/* Turns on a's adaptive clip from "on" (TFF's defaults) or a comma list of
 * quantile=Q, lr=ETA, count-stddev=S (the others TFF's): a's clip, if set, stays
 * as the initial clip (else 0.1), its noise and zeroing stay. "off" or NULL: a as
 * it is. EINVAL naming the bad item. */
FEDC_API fedc_status fedc_aggregation_parse_adaptive(const char *spec, fedc_aggregation *a);
/* Sets a's compression from "uniform:BITS" or "uniform:BITS,rotate" (BITS 1 to
 * 24: 2^BITS levels), as --compress takes it; "off" or NULL: none. EINVAL naming
 * the bad part; a is unchanged then. */
FEDC_API fedc_status fedc_aggregation_parse_compress(const char *spec, fedc_aggregation *a);
/* Whether a aggregates other than by the plain weighted mean. */
FEDC_API bool fedc_aggregation_active(const fedc_aggregation *a);
/* EINVAL, naming the field and its range, if a's fields are out of range; for an
 * adaptive clip with noise, also if z >= 2 σ_b (TFF's condition: the count's noise
 * would use up the budget). */
FEDC_API fedc_status fedc_aggregation_check(const fedc_aggregation *a);
/* The noise multipliers that an adaptive clip uses (TFF's
 * adaptive_clip_noise_params): z_Δ = (z⁻² − (2σ_b)⁻²)^(−1/2) on the update and σ_b
 * on the count (m: the expected clients). z = 0: both 0. Without adaptive: z, 0. */
FEDC_API fedc_status fedc_aggregation_noise(const fedc_aggregation *a, double m, double *update_multiplier,
                                            double *count_stddev);

/* ------------------------------------------------------------- the pieces -- */

/* Names in the round program (fedc_round_aggregate). Inputs: FEDC_AGGREGATE_KEY,
 * i32[4]@server, the stream the server's noise is drawn from (made when there is
 * noise; `fedc train` binds it to its own stream of (seed, round)); the adaptive
 * clip, server/FEDC_AGGREGATE_CLIP (f32[]@server server state, kept and
 * checkpointed by name as every leaf of the server state is). Outputs, f32[]@server:
 * FEDC_AGGREGATE_DONE (the clients aggregated), aggregator/zeroed (with zeroing),
 * aggregator/clip and aggregator/noise_stddev (with a clip: this round's clip and
 * the stddev of the noise on the sum), aggregator/unclipped_fraction (adaptive: b̄);
 * with compression, aggregator/bits (f64[]@server: the bits a client sends,
 * fedc_aggregate_quantized_bits). The key is made with compression too: the
 * rotation's signs are drawn from its stream plus [0, 0, 0, 2^31] (below the
 * noise's), and each client quantizes with its own data key ("key", the dropout
 * stream, whose steps count the last word from 0) plus [0, 0, 0, 2^31]. */
#define FEDC_AGGREGATE_KEY "aggregator/key"
#define FEDC_AGGREGATE_CLIP "aggregator/clip"
#define FEDC_AGGREGATE_DONE "aggregator/clients"
/* Centered clipping's centre, the previous round's aggregate (f32[D]@server server
 * state, D the model's numbers; zeros at the start). */
#define FEDC_ROBUST_CENTER "aggregator/center"

/* t (f32 leaves, @clients) quantized client by client and leaf by leaf to `levels`
 * levels between the leaf's min and max, by FedJAX's uniform stochastic
 * quantization (src/fl/compress.c: unbiased, stochastic rounding); leaf k's draws
 * from the stream of `key` (i32[4]@clients, each client's own) plus
 * [0, 0, 0, k + 1]. A leaf with `levels` or fewer evenly spaced values (or all
 * equal) comes back unchanged. */
FEDC_API fedc_tree *fedc_aggregate_quantize(fedc_program *p, const fedc_tree *t, fedc_value key, int levels);
/* The bits a client sends for a model of `params` numbers in `leaves` tensors so
 * quantized: log2(levels) per number and two 32-bit floats per leaf (FedJAX's
 * CompressionState.num_bits per client). */
FEDC_API double fedc_aggregate_quantized_bits(int levels, int64_t params, int leaves);

/* FedJAX's structured rotation (walsh_hadamard.py's structured_rotation_pytree):
 * each leaf of t (f32, any shape; @clients or @server) flattened, zero-padded to d
 * = the next power of two of its size, multiplied by random signs (leaf k's from
 * the stream of `key` plus [0, 0, 0, k + 1]: -1 where the uniform draw is below
 * 1/2) and by H_d / sqrt(d): leaves f32[d], the L2 norm kept. key: i32[4] @server
 * (one rotation for every client, as FedJAX's rotated quantizer has) or at t's
 * placement. */
FEDC_API fedc_tree *fedc_aggregate_rotate(fedc_program *p, const fedc_tree *t, fedc_value key);
/* The inverse (inverse_structured_rotation_pytree): t's leaves (f32[d]) by H_d /
 * sqrt(d) and the same signs, cut to the sizes and shapes of `like`'s leaves (the
 * tree that was rotated; only its types are read). */
FEDC_API fedc_tree *fedc_aggregate_unrotate(fedc_program *p, const fedc_tree *t, fedc_value key, const fedc_tree *like);
/* The Walsh-Hadamard transform H_n x, unnormalised (FedJAX's
 * walsh_hadamard_transform): x f32[n], n a power of two, any placement; a matmul
 * by a Hadamard matrix of at most 128 x 128 along each axis of x as [n1, ..., nk]. */
FEDC_API fedc_value fedc_walsh_hadamard(fedc_program *p, fedc_value x);

/* Each client's L2 norm over all of t's leaves (f32[]@clients): sqrt(Σ leaf²). */
FEDC_API fedc_value fedc_aggregate_norm(fedc_program *p, const fedc_tree *t);
/* t (@clients) with every client whose norm (fedc_aggregate_norm) exceeds `bound`,
 * or is NaN or Inf, replaced by zeros; *zeroed (if not NULL): f32[]@clients, 1 for
 * those clients, else 0. bound: f32[], local or @clients. */
FEDC_API fedc_tree *fedc_aggregate_zero(fedc_program *p, const fedc_tree *t, fedc_value norm, fedc_value bound,
                                        fedc_value *zeroed);
/* t (@clients) scaled client by client by clip / max(norm, clip), as
 * tf.clip_by_global_norm: each client's norm becomes at most clip. clip: f32[],
 * local or @clients. */
FEDC_API fedc_tree *fedc_aggregate_clip(fedc_program *p, const fedc_tree *t, fedc_value norm, fedc_value clip);
/* t (f32 leaves, @server) plus stddev × N(0, 1) on every element, leaf k's noise
 * from the stream of `key` (i32[4]@server) plus [0, 0, 0, k + 1] (so that the
 * count's noise can take key itself). stddev: f32[]@server. */
FEDC_API fedc_tree *fedc_aggregate_noise(fedc_program *p, const fedc_tree *t, fedc_value key, fedc_value stddev);
/* The adaptive clip's update, at the server (TF Privacy's QuantileEstimatorQuery,
 * geometric): with unclipped = Σ_i (1[norm_i ≤ clip] − ½) + N(0, σ_b²) (from key's
 * stream, element 0), b̄ = clamp(unclipped / m + ½, 0, 1) and the new clip
 * max(clip · exp(−η (b̄ − γ)), 0). *fraction (if not NULL): b̄. norm: @clients;
 * clip: f32[]@server; count_stddev and m: f32[]@server; key FEDC_NONE: no noise. */
FEDC_API fedc_value fedc_aggregate_adapt_clip(fedc_program *p, fedc_value norm, fedc_value clip, fedc_value key,
                                              fedc_value count_stddev, fedc_value m, double target_quantile,
                                              double learning_rate, fedc_value *fraction);

#ifdef __cplusplus
}
#endif
#endif /* FEDC_AGGREGATE_H */
