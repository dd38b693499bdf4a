/* rng_numpy.h — NumPy's legacy RandomState (internal): MT19937 seeded and drawn
 * exactly as numpy.random.RandomState does it, for the FedJAX-compatible shuffles
 * and client samples of `fedc train --rng fedjax` (src/data/rng_numpy.c). */
#ifndef FEDC_DATA_RNG_NUMPY_H
#define FEDC_DATA_RNG_NUMPY_H

#include <stdint.h>

#include "fedc/api.h"

#define FEDC__MT19937_N 624

typedef struct fedc__mt19937 {
    uint32_t key[FEDC__MT19937_N];
    int pos;
} fedc__mt19937;

/* RandomState(seed) for an integer seed (NumPy's mt19937_seed: Knuth's
 * initialisation, MT19937's init_genrand). */
FEDC_INTERNAL_API void fedc__mt19937_seed(fedc__mt19937 *s, uint32_t seed);
/* RandomState(array) (NumPy's mt19937_init_by_array, MT19937's init_by_array). */
FEDC_INTERNAL_API void fedc__mt19937_seed_array(fedc__mt19937 *s, const uint32_t *key, int64_t n);
/* The next 32 bits (genrand_int32). */
FEDC_INTERNAL_API uint32_t fedc__mt19937_next(fedc__mt19937 *s);

/* An integer in [0, max] as NumPy's random_interval draws it (masked rejection),
 * which RandomState.shuffle and permutation use. */
FEDC_INTERNAL_API uint64_t fedc__numpy_interval(fedc__mt19937 *s, uint64_t max);
/* RandomState.randint(low, high) of NumPy's default int64: masked rejection of
 * 32-bit draws when high - low - 1 < 2^32, of 64-bit ones above. */
FEDC_INTERNAL_API int64_t fedc__numpy_randint(fedc__mt19937 *s, int64_t low, int64_t high);
/* RandomState.shuffle(a) of a 1-d array: Fisher-Yates from the last element. */
FEDC_INTERNAL_API void fedc__numpy_shuffle(fedc__mt19937 *s, int64_t *a, int64_t n);

/* FedJAX's get_pseudo_random_state(seed, round_num) (fedjax/core/client_samplers.py):
 * the integer seed of the RandomState that samples round round_num's clients. */
FEDC_INTERNAL_API uint32_t fedc__fedjax_round_seed(uint32_t seed, uint32_t round_num);

#endif
