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
 * unbiased (E v' = v), L levels per coordinate plus the two floats min and max.
 *
 * In a round (fedc_round_aggregate, src/fl/aggregators.c) each client quantizes
 * its own update with its own stream: its data key (the dropout stream, whose
 * steps count the last word up from 0) plus [0, 0, 0, 2^31], which no step
 * reaches; with rotate, every client rotates by the round's one rotation (signs
 * from the server's key plus [0, 0, 0, 2^31], which the noise's leaves 1, 2, ...
 * never reach) before quantizing, and the server rotates the aggregate back. So a
 * round's bits depend only on (seed, round, client): the same on any number of
 * threads or ranks, and after a resume. */
#include <math.h>
#include <stdlib.h>

#include "fedc/aggregate.h"
#include "fl/fl.h"

/* floor(x) for x >= 0 (truncation), and ceil. */
static fedc_value floor_of(fedc_program *p, fedc_value x) { return fedc_cast(p, fedc_cast(p, x, FEDC_I32), FEDC_F32); }

static fedc_value quantize_leaf(fedc_program *p, fedc_value v, fedc_value key, int levels) {
    fedc_value zero = fedc_scalar(p, FEDC_F32, 0), one = fedc_scalar(p, FEDC_F32, 1);
    fedc_value steps = fedc_scalar(p, FEDC_F32, levels - 1);
    fedc_value lo_v = fedc_neg(p, fedc_reduce_max(p, fedc_neg(p, v), NULL, -1, false));
    fedc_value range = fedc_sub(p, fedc_reduce_max(p, v, NULL, -1, false), lo_v);
    /* where max = min, v - min is 0 and u is 0/1 (FedJAX's nan_to_num of 0/0): a
     * select on the scalar, not on every number */
    fedc_value safe = fedc_select(p, fedc_gt(p, range, zero), range, one);
    fedc_value u = fedc_minimum(p, fedc_maximum(p, fedc_div(p, fedc_sub(p, v, lo_v), safe), zero), one);
    fedc_value scaled = fedc_mul(p, u, steps), below = floor_of(p, scaled);
    fedc_value above = fedc_add(p, below, fedc_cast(p, fedc_gt(p, scaled, below), FEDC_F32));
    fedc_value lo = fedc_div(p, below, steps), hi = fedc_div(p, above, steps);
    fedc_value rounds_up = fedc_gt(p, above, below);
    fedc_value from_lo = fedc_sub(p, u, lo), width = fedc_sub(p, hi, lo);
    fedc_value threshold = fedc_select(p, rounds_up, fedc_div(p, from_lo, width), zero);
    fedc_value draw = fedc_random_uniform(p, key, fedc_value_type(p, v));
    fedc_value q = fedc_select(p, fedc_gt(p, draw, threshold), lo, hi);
    return fedc_add(p, lo_v, fedc_mul(p, q, range));
}

fedc_tree *fedc_aggregate_quantize(fedc_program *p, const fedc_tree *t, fedc_value key, int levels) {
    if (levels < 2)
        return fedc_program_fail(p, FEDC_EINVAL, "aggregate_quantize: %d levels; at least 2", levels), NULL;
    fedc_tree *r = fedc_tree_new(p);
    for (int i = 0; r && i < fedc_tree_size(t); i++) /* leaf i: key + [0, 0, 0, i + 1] */
        fedc_tree_set(p, r, fedc_tree_name(t, i), quantize_leaf(p, fedc_tree_value(t, i), fedc__key_plus(p, key, i + 1), levels));
    return fedc_program_status(p) ? NULL : r;
}

double fedc_aggregate_quantized_bits(int levels, int64_t params, int leaves) {
    return log2((double)levels) * (double)params + 64.0 * (double)leaves;
}

/* ------------------------------------------------------------ settings -- */

enum { MAX_BITS = 24 }; /* a float32 holds 24 bits: more levels than that are not apart */

fedc_status fedc_aggregation_parse_compress(const char *spec, fedc_aggregation *a) {
    if (!spec || !strcmp(spec, "off")) {
        a->compress_bits = 0, a->compress_rotate = false;
        return FEDC_OK;
    }
    size_t method = strcspn(spec, ":");
    if (!strcmp(spec, "uniform"))
        return fedc_error(FEDC_EINVAL, "compression 'uniform' needs its bits: uniform:BITS (BITS 1 to %d)", MAX_BITS);
    if (method != 7 || strncmp(spec, "uniform", 7))
        return fedc_error(FEDC_EINVAL, "compression '%s': unknown method '%.*s' (there is: uniform:BITS or "
                          "uniform:BITS,rotate; or off)", spec, (int)method, spec);
    const char *bits = spec + method + 1, *rest = bits + strcspn(bits, ",");
    char *end;
    long b = strtol(bits, &end, 10);
    if (end != rest || bits[0] < '0' || bits[0] > '9' || b < 1 || b > MAX_BITS)
        return fedc_error(FEDC_EINVAL, "compression '%s': BITS must be a whole number from 1 to %d (2^BITS levels; a "
                          "float32 holds %d bits), not '%.*s'", spec, MAX_BITS, MAX_BITS, (int)(rest - bits), bits);
    bool rotate = false;
    for (const char *s = rest; *s;) {
        s++; /* the comma */
        size_t len = strcspn(s, ",");
        if (len != 6 || strncmp(s, "rotate", 6))
            return fedc_error(FEDC_EINVAL, "compression '%s': unknown setting '%.*s' (there is: rotate)", spec, (int)len, s);
        rotate = true;
        s += len;
    }
    a->compress_bits = (int)b, a->compress_rotate = rotate;
    return FEDC_OK;
}

fedc_status fedc__compress_check(const fedc_aggregation *a) {
    if (a->compress_bits < 0 || a->compress_bits > MAX_BITS)
        return fedc_error(FEDC_EINVAL, "aggregation: compression to %d bits: from 1 to %d (0: off)", a->compress_bits,
                          MAX_BITS);
    if (a->compress_rotate && a->compress_bits == 0)
        return fedc_error(FEDC_EINVAL, "aggregation: the rotation is part of the compression: set its bits too");
    return FEDC_OK;
}

/* ------------------------------------------------------------ the round -- */

/* key + [0, 0, 0, 2^31]: the compression's streams. */
static fedc_value salted(fedc_program *p, fedc_value key) { return fedc__key_plus(p, key, INT32_MIN); }

/* Each client's data key: r->data's, or the program's "key" input (a round built
 * by hand, without r->data). */
fedc_value fedc__round_client_key(fedc_round *r) {
    if (r->data && fedc_tree_has(r->data, "key")) return fedc_tree_get(r->p, r->data, "key");
    fedc_value v = fedc_program_find_input(r->p, "key");
    fedc_type t = fedc__placed(fedc_type_make(FEDC_I32, 1, (int64_t[]){4}), FEDC_CLIENTS);
    return v != FEDC_NONE ? v : fedc_input(r->p, "key", t);
}

fedc_tree *fedc__compress_update(fedc_round *r, const fedc_tree *update, fedc_value server_key) {
    fedc_program *p = r->p;
    const fedc_aggregation *a = &r->alg->aggregation;
    const fedc_tree *t = update;
    if (a->compress_rotate) t = fedc_aggregate_rotate(p, update, salted(p, server_key));
    return t ? fedc_aggregate_quantize(p, t, salted(p, fedc__round_client_key(r)), 1 << a->compress_bits) : NULL;
}

fedc_tree *fedc__compress_finish(fedc_round *r, fedc_tree *mean, const fedc_tree *update, fedc_value server_key) {
    fedc_program *p = r->p;
    const fedc_aggregation *a = &r->alg->aggregation;
    int64_t params = 0;
    for (int i = 0; i < fedc_tree_size(update); i++) {
        fedc_type t = fedc_value_type(p, fedc_tree_value(update, i));
        params += fedc_type_count(&t);
    }
    double bits = fedc_aggregate_quantized_bits(1 << a->compress_bits, params, fedc_tree_size(update));
    fedc_program_output(p, "aggregator/bits", fedc_full(p, fedc__placed(fedc_type_scalar(FEDC_F64), FEDC_SERVER), bits));
    if (!mean || !a->compress_rotate) return mean;
    return fedc_aggregate_unrotate(p, mean, salted(p, server_key), update);
}
