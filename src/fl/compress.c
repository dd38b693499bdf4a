/* Compression of the clients' updates (fedc/aggregate.h): FedJAX's uniform
 * stochastic quantization (fedjax/aggregators/compression.py,
 * uniform_stochastic_quantize; Suresh et al. 2017, arXiv:1611.00429), leaf by
 * leaf and client by client, in the round program:
 *
 *     u = clamp((v - min v) / (max v - min v), 0, 1)       (0 where max = min)
 *     lo = floor(u (L - 1)) / (L - 1), hi = ceil(u (L - 1)) / (L - 1)
 *     q = U[0,1) > (u - lo) / (hi - lo) ? lo : hi           (0 where hi = lo: q = lo)
 *     v' = min v + q (max v - min v)
 *
 * unbiased (E v' = v), L levels per coordinate plus the two floats min and max. */
#include <math.h>

#include "fedc/aggregate.h"
#include "fl/fl.h"

/* floor(x) for x >= 0 (truncation), and ceil. */
static fedc_value floor_of(fedc_program *p, fedc_value x) { return fedc_cast(p, fedc_cast(p, x, FEDC_I32), FEDC_F32); }

static fedc_value quantize_leaf(fedc_program *p, fedc_value v, fedc_value key, int levels) {
    fedc_value zero = fedc_scalar(p, FEDC_F32, 0), one = fedc_scalar(p, FEDC_F32, 1);
    fedc_value steps = fedc_scalar(p, FEDC_F32, levels - 1);
    fedc_value lo_v = fedc_neg(p, fedc_reduce_max(p, fedc_neg(p, v), NULL, -1, false));
    fedc_value range = fedc_sub(p, fedc_reduce_max(p, v, NULL, -1, false), lo_v);
    fedc_value u = fedc_div(p, fedc_sub(p, v, lo_v), range);
    u = fedc_select(p, fedc_gt(p, range, zero), fedc_minimum(p, fedc_maximum(p, u, zero), one), zero);
    fedc_value scaled = fedc_mul(p, u, steps), below = floor_of(p, scaled);
    fedc_value above = fedc_add(p, below, fedc_cast(p, fedc_gt(p, scaled, below), FEDC_F32));
    fedc_value lo = fedc_div(p, below, steps), hi = fedc_div(p, above, steps);
    fedc_value threshold = fedc_select(p, fedc_gt(p, above, below), fedc_div(p, fedc_sub(p, u, lo), fedc_sub(p, hi, lo)), zero);
    fedc_value draw = fedc_random_uniform(p, key, fedc_value_type(p, v));
    fedc_value q = fedc_select(p, fedc_gt(p, draw, threshold), lo, hi);
    return fedc_add(p, lo_v, fedc_mul(p, q, range));
}

fedc_tree *fedc_aggregate_quantize(fedc_program *p, const fedc_tree *t, fedc_value key, int levels) {
    if (levels < 2)
        return fedc_program_fail(p, FEDC_EINVAL, "aggregate_quantize: %d levels; at least 2", levels), NULL;
    fedc_tree *r = fedc_tree_new(p);
    for (int i = 0; r && i < fedc_tree_size(t); i++) { /* leaf i: key + [0, 0, 0, i + 1] */
        int32_t add[4] = {0, 0, 0, i + 1};
        fedc_value k = fedc_add(p, key, fedc_constant(p, fedc_type_make(FEDC_I32, 1, (int64_t[]){4}), add));
        fedc_tree_set(p, r, fedc_tree_name(t, i), quantize_leaf(p, fedc_tree_value(t, i), k, levels));
    }
    return fedc_program_status(p) ? NULL : r;
}

double fedc_aggregate_quantized_bits(int levels, int64_t params, int leaves) {
    return log2((double)levels) * (double)params + 64.0 * (double)leaves;
}
