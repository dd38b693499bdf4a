/* FedJAX's structured Walsh-Hadamard rotation (fedjax/aggregators/walsh_hadamard.py;
 * Suresh et al. 2017, arXiv:1611.00429), as ops of the round program
 * (fedc/aggregate.h): leaf by leaf,
 *
 *     x' = pad(flat x, d)                  d = 2^ceil(log2 n), zeros after the n numbers
 *     y  = H_d (s ⊙ x') / √d               s: random ±1 signs, H_d: the Hadamard matrix
 *     x  = (s ⊙ H_d y / √d)[0 : n]         the inverse (H_d H_d = d I, s ⊙ s = 1)
 *
 * H_d / √d is orthonormal, so the rotation keeps the L2 norm: a clip applied to
 * the rotated update bounds the update's norm alike.
 *
 * The transform is FedJAX's walsh_hadamard_transform: H_d = H_n1 ⊗ ... ⊗ H_nk with
 * every n_i at most 128 (FedJAX's small_n), so that the vector as an array
 * [n1, ..., nk] is transformed by a small dense H_ni along each axis, a matmul
 * (BLAS) per axis instead of log2 d passes of butterflies: a leaf of 2^21 (the
 * EMNIST CNN's dense kernel, padded) is three GEMMs of [128 x 128] by 2^21. */
#include <math.h>

#include "fedc/aggregate.h"
#include "fl/fl.h"

enum { SMALL_N = 128 }; /* FedJAX's small_n: the largest factor H_ni */

/* Sylvester's H_n (n a power of two, at most SMALL_N), scipy.linalg.hadamard's:
 * entry (i, j) is (-1)^popcount(i & j). */
static fedc_value hadamard_matrix(fedc_program *p, int64_t n) {
    float *h = fedc_malloc((size_t)(n * n) * sizeof *h);
    if (!h) return fedc_program_fail(p, FEDC_ENOMEM, "walsh_hadamard: out of memory");
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < n; j++) h[i * n + j] = __builtin_popcountll((unsigned long long)(i & j)) & 1 ? -1.0f : 1.0f;
    fedc_value v = fedc_constant(p, fedc_type_make(FEDC_F32, 2, (int64_t[]){n, n}), h); /* copies h */
    fedc_free(h);
    return v;
}

static bool power_of_two(int64_t n) { return n > 0 && (n & (n - 1)) == 0; }

fedc_value fedc_walsh_hadamard(fedc_program *p, fedc_value x) {
    fedc_type t = fedc_value_type(p, x);
    if (fedc_program_status(p)) return FEDC_NONE;
    if (t.dtype != FEDC_F32 || t.rank != 1 || !power_of_two(t.dims[0]))
        return fedc_program_fail(p, FEDC_ETYPE, "walsh_hadamard: x must be f32[n] with n a power of two");
    int64_t n = t.dims[0], shape[8];
    int k = 0;
    for (int64_t m = n; m > 1; m /= SMALL_N) shape[k++] = m < SMALL_N ? m : SMALL_N; /* FedJAX's shape, */
    for (int i = 0; i < k / 2; i++) { /* reversed: the remainder first */
        int64_t s = shape[i];
        shape[i] = shape[k - 1 - i], shape[k - 1 - i] = s;
    }
    fedc_value y = x;
    int64_t before = 1;
    for (int i = 0; i < k; i++) { /* along axis i: [before, m, after] */
        int64_t m = shape[i], after = n / before / m;
        fedc_value h = hadamard_matrix(p, m);
        if (after == 1) { /* the last axis: [before, m] @ H (H is symmetric) */
            y = fedc_matmul(p, fedc_reshape(p, y, 2, (int64_t[]){before, m}), h, false, false);
        } else { /* H @ [m, after], batched over `before` (the rank-2 H is shared) */
            int64_t dims[3] = {before, m, after};
            y = fedc_matmul(p, h, before == 1 ? fedc_reshape(p, y, 2, dims + 1) : fedc_reshape(p, y, 3, dims), false, false);
        }
        before *= m;
    }
    return fedc_reshape(p, y, 1, &n);
}

/* The rotation's d for a leaf of n numbers: the next power of two. */
static int64_t padded(int64_t n) {
    int64_t d = 1;
    while (d < n) d *= 2;
    return d;
}

/* Leaf k's signs: -1 where its stream's uniform draw is below 1/2 (jax.random's
 * rademacher), f32[d] at the key's placement, broadcast to `like`'s @clients. */
static fedc_value signs(fedc_program *p, fedc_value key, int k, int64_t d, fedc_value like) {
    fedc_value u = fedc_random_uniform(p, fedc__key_plus(p, key, k + 1), fedc_type_make(FEDC_F32, 1, &d));
    fedc_value flip = fedc_lt(p, u, fedc_scalar(p, FEDC_F32, 0.5));
    fedc_value minus_one = fedc_scalar(p, FEDC_F32, -1), one = fedc_scalar(p, FEDC_F32, 1);
    fedc_value s = fedc_select(p, flip, minus_one, one);
    bool spread = fedc_value_type(p, like).placement == FEDC_CLIENTS && fedc_value_type(p, key).placement == FEDC_SERVER;
    return spread ? fedc_broadcast(p, s) : s;
}

static fedc_value rotate_leaf(fedc_program *p, fedc_value v, fedc_value key, int k) {
    fedc_type t = fedc_value_type(p, v);
    int64_t n = fedc_type_count(&t), d = padded(n), zero = 0, extra = d - n;
    fedc_value x = fedc_reshape(p, v, 1, &n);
    if (extra) x = fedc_pad(p, x, &zero, &extra);
    fedc_value y = fedc_walsh_hadamard(p, fedc_mul(p, x, signs(p, key, k, d, v)));
    return fedc_mul(p, y, fedc_scalar(p, FEDC_F32, 1 / sqrt((double)d)));
}

static fedc_value unrotate_leaf(fedc_program *p, fedc_value y, fedc_value key, int k, fedc_type like) {
    int64_t n = fedc_type_count(&like), d = padded(n), zero = 0;
    fedc_type t = fedc_value_type(p, y);
    if (fedc_program_status(p)) return FEDC_NONE;
    if (t.rank != 1 || t.dims[0] != d)
        return fedc_program_fail(p, FEDC_ETYPE, "aggregate_unrotate: leaf %d has %lld numbers; its rotation has %lld "
                                 "(the next power of two of its %lld)", k, (long long)fedc_type_count(&t), (long long)d,
                                 (long long)n);
    fedc_value x = fedc_walsh_hadamard(p, y);
    x = fedc_mul(p, x, signs(p, key, k, d, y));
    x = fedc_mul(p, x, fedc_scalar(p, FEDC_F32, 1 / sqrt((double)d)));
    if (d > n) x = fedc_slice(p, x, &zero, &n);
    return fedc_reshape(p, x, like.rank, like.dims);
}

/* Whether t's leaves are all f32; else fails p, naming the first that is not. */
static bool all_f32(fedc_program *p, const fedc_tree *t, const char *what) {
    for (int i = 0; i < fedc_tree_size(t); i++)
        if (fedc_value_type(p, fedc_tree_value(t, i)).dtype != FEDC_F32)
            return fedc_program_fail(p, FEDC_ETYPE, "%s: leaf \"%s\" is not f32", what, fedc_tree_name(t, i)), false;
    return !fedc_program_status(p);
}

fedc_tree *fedc_aggregate_rotate(fedc_program *p, const fedc_tree *t, fedc_value key) {
    if (!all_f32(p, t, "aggregate_rotate")) return NULL;
    fedc_tree *r = fedc_tree_new(p);
    for (int i = 0; r && i < fedc_tree_size(t); i++)
        fedc_tree_set(p, r, fedc_tree_name(t, i), rotate_leaf(p, fedc_tree_value(t, i), key, i));
    return fedc_program_status(p) ? NULL : r;
}

fedc_tree *fedc_aggregate_unrotate(fedc_program *p, const fedc_tree *t, fedc_value key, const fedc_tree *like) {
    if (!all_f32(p, t, "aggregate_unrotate")) return NULL;
    if (fedc_tree_size(t) != fedc_tree_size(like))
        return fedc_program_fail(p, FEDC_EINVAL, "aggregate_unrotate: %d leaves, but `like` has %d", fedc_tree_size(t),
                                 fedc_tree_size(like)), NULL;
    fedc_tree *r = fedc_tree_new(p);
    for (int i = 0; r && i < fedc_tree_size(t); i++)
        fedc_tree_set(p, r, fedc_tree_name(t, i),
                      unrotate_leaf(p, fedc_tree_value(t, i), key, i, fedc_value_type(p, fedc_tree_value(like, i))));
    return fedc_program_status(p) ? NULL : r;
}
