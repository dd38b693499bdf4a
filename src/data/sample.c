/* Client sampling for federated rounds, and the uniform permutation that the
 * example shuffles (src/data/batch.c) use too.
 *
 * FedJAX's UniformGetClientSampler (google/fedjax, fedjax/core/client_samplers.py)
 * picks round r's clients with RandomState.choice(client_ids, size, replace=False)
 * from a state derived from (seed, round) alone (get_pseudo_random_state), so any
 * round can be redrawn without replaying the earlier ones; fedc_sample_clients does
 * the same with the counter RNG, so the draw is identical on every machine.
 * UniformShuffledClientSampler instead walks a stream of shuffled clients; that is
 * fedc_sample_clients_epochs. fedc_sample_clients_fedjax draws FedJAX's own
 * clients, with NumPy's RandomState (src/data/rng_numpy.c). */
#include <string.h>

#include "data/dataset.h"
#include "data/rng_numpy.h"

/* High bytes of the element indices each sampler draws, so that their uniforms are
 * never the ones a kernel (dropout, at indices from 0) or another sampler draws
 * from a stream with the same key. */
#define ROUND_TAG ((uint64_t)0x43 << 56)
#define EPOCH_TAG ((uint64_t)0x44 << 56)
#define POISSON_TAG ((uint64_t)0x50 << 56)

/* Floyd's algorithm keeps a sorted list, whose inserts cost O(k) each; past this
 * many clients selection sampling's single O(num_clients) pass is cheaper. */
#define FLOYD_MAX 4096

/* A uniform integer in [0, bound) from element i of s. 53-bit uniforms make the
 * bias at most bound / 2^53; the clamp catches a product rounded up to bound. */
static int64_t draw_below(fedc_rng_stream s, uint64_t i, int64_t bound) {
    int64_t j = (int64_t)(fedc_rng_uniform_f64(s, i) * (double)bound);
    return j < bound ? j : bound - 1;
}

void fedc__permutation(int64_t *perm, int64_t n, fedc_rng_stream s, uint64_t tag) {
    for (int64_t i = 0; i < n; i++) perm[i] = i;
    for (int64_t i = n - 1; i > 0; i--) {
        int64_t j = draw_below(s, tag + (uint64_t)i, i + 1);
        int64_t t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
}

/* ------------------------------------------------------------ per round -- */

/* The first index in sorted a[0..m) not below v. */
static int64_t lower_bound(const int64_t *a, int64_t m, int64_t v) {
    int64_t lo = 0, hi = m;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (a[mid] < v) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

/* Floyd's algorithm (Bentley & Floyd, "A sample of brilliance", CACM 1987): for
 * j = n-k .. n-1 draw t in [0, j]; take t, or j when t is taken already. Every
 * k-subset is equally likely. out is kept sorted, which is also the membership test. */
static void sample_floyd(int64_t n, int64_t k, fedc_rng_stream s, int64_t *out) {
    for (int64_t m = 0, j = n - k; j < n; j++, m++) {
        int64_t t = draw_below(s, ROUND_TAG + (uint64_t)m, j + 1);
        int64_t pos = lower_bound(out, m, t);
        if (pos < m && out[pos] == t) t = j, pos = m; /* j exceeds everything taken */
        memmove(out + pos + 1, out + pos, (size_t)(m - pos) * sizeof *out);
        out[pos] = t;
    }
}

/* Selection sampling (Knuth, TAOCP vol. 2, 3.4.2, Algorithm S): client i is taken
 * with probability (still needed) / (still left); the output comes out sorted. */
static void sample_selection(int64_t n, int64_t k, fedc_rng_stream s, int64_t *out) {
    for (int64_t i = 0, m = 0; m < k; i++) {
        double u = fedc_rng_uniform_f64(s, ROUND_TAG + (uint64_t)i);
        /* the first test takes every remaining client once all are needed, even if
         * the product rounds up */
        if (k - m >= n - i || (double)(n - i) * u < (double)(k - m)) out[m++] = i;
    }
}

void fedc__sample_stream(int64_t n, int64_t k, fedc_rng_stream s, int64_t *out) {
    if (k <= FLOYD_MAX) sample_floyd(n, k, s, out);
    else sample_selection(n, k, s, out);
}

fedc_status fedc_sample_clients(int64_t num_clients, int64_t per_round, uint64_t seed, uint32_t round,
                                int64_t *out) {
    if (num_clients < 0 || per_round < 0 || per_round > num_clients)
        return fedc_error(FEDC_EINVAL, "sample_clients: cannot draw %lld distinct clients out of %lld",
                          (long long)per_round, (long long)num_clients);
    fedc__sample_stream(num_clients, per_round, fedc_rng_stream_make(seed, round, 0, 0), out);
    return FEDC_OK;
}

/* RandomState.choice(ids, k, replace=False) without p is permutation(n)[:k]:
 * the whole of arange(n) shuffled, its first k taken. */
fedc_status fedc_sample_clients_fedjax(int64_t num_clients, int64_t per_round, uint32_t seed, uint32_t round_num,
                                       int64_t *out) {
    if (num_clients < 0 || per_round < 0 || per_round > num_clients || num_clients > (int64_t)UINT32_MAX)
        return fedc_error(FEDC_EINVAL, "sample_clients_fedjax: cannot draw %lld distinct clients out of %lld",
                          (long long)per_round, (long long)num_clients);
    int64_t *perm = fedc_malloc((size_t)(num_clients ? num_clients : 1) * sizeof *perm);
    if (!perm)
        return fedc_error(FEDC_ENOMEM, "sample_clients_fedjax: out of memory for %lld clients", (long long)num_clients);
    fedc__mt19937 mt;
    fedc__mt19937_seed(&mt, fedc__fedjax_round_seed(seed, round_num));
    for (int64_t i = 0; i < num_clients; i++) perm[i] = i;
    fedc__numpy_shuffle(&mt, perm, num_clients);
    memcpy(out, perm, (size_t)per_round * sizeof *out);
    fedc_free(perm);
    return FEDC_OK;
}

/* Poisson sampling (the sampling DP-FedAvg's accounting assumes): client i joins
 * when its 53-bit uniform of the round's stream is below q, each independently. */
fedc_status fedc_sample_clients_poisson(int64_t num_clients, double q, uint64_t seed, uint32_t round, int64_t max,
                                        int64_t *out, int64_t *n) {
    *n = 0;
    if (num_clients < 0 || !(q >= 0 && q <= 1))
        return fedc_error(FEDC_EINVAL, "sample_clients_poisson: rate %g must be in [0, 1] (and clients %lld >= 0)", q,
                          (long long)num_clients);
    fedc_rng_stream s = fedc_rng_stream_make(seed, round, 0, 0);
    for (int64_t i = 0; i < num_clients; i++) {
        if (!(fedc_rng_uniform_f64(s, POISSON_TAG + (uint64_t)i) < q)) continue;
        if (*n == max)
            return fedc_error(FEDC_ERANGE, "sample_clients_poisson: round %u drew more than %lld clients (rate %g of "
                              "%lld)", round, (long long)max, q, (long long)num_clients);
        out[(*n)++] = i;
    }
    return FEDC_OK;
}

/* -------------------------------------------------------------- epochs -- */

/* Epoch e's order of the clients: a permutation keyed by (seed, e). */
static void epoch_order(int64_t *perm, int64_t n, uint64_t seed, uint32_t epoch) {
    fedc__permutation(perm, n, fedc_rng_stream_make(seed, epoch, 0, 0), EPOCH_TAG);
}

/* Round r takes positions [r * per_round, (r + 1) * per_round) of the endless
 * sequence epoch 0, epoch 1, ..., as FedJAX's UniformShuffledClientSampler takes
 * the next clients of its shuffled stream. The output is in stream order; a round
 * that straddles two epochs can hold a client twice (once from each). Since
 * per_round <= num_clients, a round spans at most two epochs. */
fedc_status fedc_sample_clients_epochs(int64_t num_clients, int64_t per_round, uint64_t seed, uint32_t round,
                                       int64_t *out) {
    if (num_clients < 0 || per_round < 0 || per_round > num_clients)
        return fedc_error(FEDC_EINVAL, "sample_clients_epochs: cannot draw %lld clients a round out of %lld",
                          (long long)per_round, (long long)num_clients);
    if (per_round == 0) return FEDC_OK;
    if (per_round > INT64_MAX / ((int64_t)round + 1))
        return fedc_error(FEDC_ERANGE, "sample_clients_epochs: round %u of %lld clients overflows", round,
                          (long long)per_round);
    int64_t *perm = fedc_malloc((size_t)num_clients * sizeof *perm);
    if (!perm)
        return fedc_error(FEDC_ENOMEM, "sample_clients_epochs: out of memory for %lld clients", (long long)num_clients);
    int64_t first = (int64_t)round * per_round;
    for (int64_t i = 0; i < per_round; i++) {
        int64_t p = first + i;
        /* per_round <= num_clients, so the epoch p / num_clients is at most round */
        if (i == 0 || p % num_clients == 0) epoch_order(perm, num_clients, seed, (uint32_t)(p / num_clients));
        out[i] = perm[p % num_clients];
    }
    fedc_free(perm);
    return FEDC_OK;
}
