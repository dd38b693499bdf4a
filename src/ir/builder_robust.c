/* The robust_aggregate op (include/fedc/robust.h): its builder, which keeps an
 * aggregator's settings as the node's attributes, reading them back, and its type
 * rule. The aggregators themselves are src/kernels/robust*.c, their settings
 * src/core/robust_spec.c. */
#include "ir/rule.h"

fedc_value fedc_robust_aggregate(fedc_program *p, fedc_value x, fedc_value w, const fedc_robust *r) {
    fedc_value in[2] = {x, w};
    int64_t ints[5] = {r->kind, r->f, r->m, r->iterations, r->memory_mb};
    fedc__attr a[4] = {fedc__attr_make_ints(FEDC_ATTR_ROBUST, 5, ints)};
    int n = 1; /* the settings the kind reads (an op holds at most four attributes) */
    if (r->kind == FEDC_ROBUST_TRIMMED_MEAN) a[n++] = fedc__attr_make_float(FEDC_ATTR_BETA, r->beta);
    if (r->kind == FEDC_ROBUST_GEOMED) a[n++] = fedc__attr_make_float(FEDC_ATTR_NU, r->nu);
    if (r->kind == FEDC_ROBUST_GEOMED) a[n++] = fedc__attr_make_float(FEDC_ATTR_TOLERANCE, r->tolerance);
    if (r->kind == FEDC_ROBUST_CCLIP) a[n++] = fedc__attr_make_float(FEDC_ATTR_TAU, r->tau);
    return fedc__emit(p, FEDC_OP_ROBUST_AGGREGATE, in, 2, a, n, NULL);
}

fedc_robust fedc__robust_of(const fedc__node *n) {
    int count = 0;
    const int64_t *v = fedc__attr_ints(n, FEDC_ATTR_ROBUST, &count);
    fedc_robust r = fedc_robust_defaults(count == 5 ? (fedc_robust_kind)v[0] : FEDC_ROBUST_MEAN);
    if (count == 5) r.f = (int)v[1], r.m = (int)v[2], r.iterations = (int)v[3], r.memory_mb = (int)v[4];
    r.beta = fedc__attr_float(n, FEDC_ATTR_BETA, r.beta);
    r.nu = fedc__attr_float(n, FEDC_ATTR_NU, r.nu);
    r.tolerance = fedc__attr_float(n, FEDC_ATTR_TOLERANCE, r.tolerance);
    r.tau = fedc__attr_float(n, FEDC_ATTR_TAU, r.tau);
    return r;
}

/* robust_aggregate: f32[d]@clients and its f32[]@clients weights to f32[d]@server,
 * with settings an aggregator can take (fedc_robust_check). */
fedc_status fedc__infer_ROBUST_AGGREGATE(const rule_ctx *c, fedc_type *out) {
    const fedc_type *x = operand(c, 0), *w = operand(c, 1);
    if (x->placement != FEDC_CLIENTS || x->dtype != FEDC_F32 || x->rank != 1)
        return fail(c, FEDC_ETYPE, "operand is %s; robust_aggregate takes one f32 vector per client (f32[d]@clients)",
                    TYPESTR(x));
    if (w->placement != FEDC_CLIENTS || w->rank != 0 || w->dtype != FEDC_F32)
        return fail(c, FEDC_ETYPE, "the weight is %s; it must be one f32 scalar per client (f32[]@clients)", TYPESTR(w));
    fedc_robust r = fedc__robust_of(c->n);
    if (fedc_robust_check(&r, 0)) return fail(c, FEDC_EINVAL, "%s", fedc_errmsg());
    *out = *x;
    out->placement = FEDC_SERVER;
    return FEDC_OK;
}
