/*
 * src/nn/init.c — the initialisers of the models' parameters, drawn from the
 * counter RNG so that a model's initial values are a pure function of the seed.
 *
 * Haiku's hk.initializers.TruncatedNormal(stddev, mean) returns
 *     stddev * jax.random.truncated_normal(key, -2., 2., shape) + mean
 * (dm-haiku haiku/_src/initializers.py): a standard normal conditioned on the open
 * interval (-2, 2), scaled by stddev as given. It does NOT divide by the standard
 * deviation of the truncated distribution (.87962566103423978); only Haiku's
 * VarianceScaling and jax.nn.initializers.variance_scaling do that, and hk.Linear
 * and hk.Conv2D use TruncatedNormal directly. So the weights' actual standard
 * deviation is 0.8796 * stddev, as in FedJAX's models.
 *
 * JAX samples the truncated normal by inverting the CDF; we redraw instead
 * (rejection), which gives the same distribution.
 */
#include "nn/nn.h"

#include <math.h>

/* P(|z| >= 2) = 0.0455, so 64 attempts all fail with probability 1e-86: the
 * bound is there only so that the loop provably ends. */
#define MAX_ATTEMPTS 64

fedc_rng_stream fedc__nn_init_stream(uint64_t seed, int index) {
    return fedc_rng_stream_make(seed, UINT32_MAX, (uint32_t)index, FEDC_NN_INIT_STEP);
}

/* One standard normal conditioned on |z| < 2: element j of n, attempt a uses the
 * stream's normal number a * n + j. */
static double truncated_unit(fedc_rng_stream s, int64_t n, int64_t j) {
    for (uint64_t a = 0; a < MAX_ATTEMPTS; a++) {
        double z = fedc_rng_normal(s, a * (uint64_t)n + (uint64_t)j);
        if (fabs(z) < 2.0) return z;
    }
    return 0.0;
}

void fedc__nn_truncated_normal(fedc_rng_stream s, double stddev, int64_t n, float *out) {
    for (int64_t j = 0; j < n; j++) out[j] = (float)(stddev * truncated_unit(s, n, j));
}

void fedc__nn_uniform(fedc_rng_stream s, double limit, int64_t n, float *out) {
    for (int64_t j = 0; j < n; j++) out[j] = (float)((2.0 * fedc_rng_uniform_f64(s, (uint64_t)j) - 1.0) * limit);
}
