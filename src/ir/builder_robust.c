/* The robust_aggregate op (include/fedc/robust.h): its builder, which keeps an
 * aggregator's settings as the node's attributes, reading them back, and its type
 * rule. The aggregators themselves are src/kernels/robust*.c, their settings
 * src/core/robust_spec.c; an attack made in its store, src/exec/aggregate_attack.c. */
#include "ir/rule.h"

enum { SETTINGS = 5 }; /* the robust ints: kind, f, m, iterations, memory_mb; then an attack's kind */

static fedc_value emit(fedc_program *p, const fedc_value *in, int nin, const fedc_robust *r,
                       fedc__robust_attack attack, double value) {
    int64_t ints[SETTINGS + 1] = {r->kind, r->f, r->m, r->iterations, r->memory_mb, attack};
    fedc__attr a[4] = {fedc__attr_make_ints(FEDC_ATTR_ROBUST, attack ? SETTINGS + 1 : SETTINGS, ints)};
    int n = 1; /* the settings the kind reads (an op holds at most four attributes) */
    if (r->kind == FEDC_ROBUST_TRIMMED_MEAN) a[n++] = fedc__attr_make_float(FEDC_ATTR_BETA, r->beta);
    if (r->kind == FEDC_ROBUST_GEOMED) a[n++] = fedc__attr_make_float(FEDC_ATTR_NU, r->nu);
    if (r->kind == FEDC_ROBUST_GEOMED) a[n++] = fedc__attr_make_float(FEDC_ATTR_TOLERANCE, r->tolerance);
    if (r->kind == FEDC_ROBUST_CCLIP) a[n++] = fedc__attr_make_float(FEDC_ATTR_TAU, r->tau);
    if (attack) a[n++] = fedc__attr_make_float(FEDC_ATTR_ATTACK, value);
    return fedc__emit(p, FEDC_OP_ROBUST_AGGREGATE, in, nin, a, n, NULL);
}

fedc_value fedc_robust_aggregate(fedc_program *p, fedc_value x, fedc_value w, const fedc_robust *r) {
    return emit(p, (fedc_value[]){x, w}, 2, r, FEDC__ROBUST_ATTACK_NONE, 0);
}

fedc_value fedc__robust_aggregate_attacked(fedc_program *p, fedc_value x, fedc_value w, const fedc_robust *r,
                                           fedc__robust_attack attack, double value, fedc_value flags,
                                           fedc_value center) {
    if (attack != FEDC__ROBUST_ATTACK_ALIE && attack != FEDC__ROBUST_ATTACK_IPM)
        return fedc_program_fail(p, FEDC_EINVAL, "robust_aggregate: attack %d is neither ALIE nor IPM", (int)attack);
    return emit(p, (fedc_value[]){x, w, flags, center}, center == FEDC_NONE ? 3 : 4, r, attack, value);
}

fedc_robust fedc__robust_of(const fedc__node *n) {
    int count = 0;
    const int64_t *v = fedc__attr_ints(n, FEDC_ATTR_ROBUST, &count);
    fedc_robust r = fedc_robust_defaults(count >= SETTINGS ? (fedc_robust_kind)v[0] : FEDC_ROBUST_MEAN);
    if (count >= SETTINGS) r.f = (int)v[1], r.m = (int)v[2], r.iterations = (int)v[3], r.memory_mb = (int)v[4];
    r.beta = fedc__attr_float(n, FEDC_ATTR_BETA, r.beta);
    r.nu = fedc__attr_float(n, FEDC_ATTR_NU, r.nu);
    r.tolerance = fedc__attr_float(n, FEDC_ATTR_TOLERANCE, r.tolerance);
    r.tau = fedc__attr_float(n, FEDC_ATTR_TAU, r.tau);
    return r;
}

fedc__robust_attack fedc__robust_attack_of(const fedc__node *n, double *value) {
    int count = 0;
    const int64_t *v = fedc__attr_ints(n, FEDC_ATTR_ROBUST, &count);
    *value = fedc__attr_float(n, FEDC_ATTR_ATTACK, 0);
    return count > SETTINGS ? (fedc__robust_attack)v[SETTINGS] : FEDC__ROBUST_ATTACK_NONE;
}

/* robust_aggregate: f32[d]@clients and its f32[]@clients weights to f32[d]@server,
 * with settings an aggregator can take (fedc_robust_check); with an attack, its
 * flags f32[]@clients and an optional centre f32[d]@server. */
fedc_status fedc__infer_ROBUST_AGGREGATE(const rule_ctx *c, fedc_type *out) {
    const fedc_type *x = operand(c, 0), *w = operand(c, 1);
    if (x->placement != FEDC_CLIENTS || x->dtype != FEDC_F32 || x->rank != 1)
        return fail(c, FEDC_ETYPE, "operand is %s; robust_aggregate takes one f32 vector per client (f32[d]@clients)",
                    TYPESTR(x));
    if (w->placement != FEDC_CLIENTS || w->rank != 0 || w->dtype != FEDC_F32)
        return fail(c, FEDC_ETYPE, "the weight is %s; it must be one f32 scalar per client (f32[]@clients)", TYPESTR(w));
    fedc_robust r = fedc__robust_of(c->n);
    if (fedc_robust_check(&r, 0)) return fail(c, FEDC_EINVAL, "%s", fedc_errmsg());
    double value;
    fedc__robust_attack attack = fedc__robust_attack_of(c->n, &value);
    if ((attack != FEDC__ROBUST_ATTACK_NONE) != (c->n->nin > 2) || attack < 0 || attack > FEDC__ROBUST_ATTACK_IPM)
        return fail(c, FEDC_EINVAL, "an attack (ALIE or IPM) and its flags go together (attack %d, %d operands)",
                    (int)attack, c->n->nin);
    if (c->n->nin > 2) {
        const fedc_type *f = operand(c, 2);
        if (f->placement != FEDC_CLIENTS || f->rank != 0 || f->dtype != FEDC_F32)
            return fail(c, FEDC_ETYPE, "the attack's flags are %s; they must be one f32 scalar per client (f32[]@clients)",
                        TYPESTR(f));
    }
    if (c->n->nin > 3) {
        const fedc_type *m = operand(c, 3);
        if (m->placement != FEDC_SERVER || m->rank != 1 || m->dtype != FEDC_F32 || m->dims[0] != x->dims[0])
            return fail(c, FEDC_ETYPE, "the centre is %s; it must be one f32[%lld]@server", TYPESTR(m),
                        (long long)x->dims[0]);
    }
    *out = *x;
    out->placement = FEDC_SERVER;
    return FEDC_OK;
}
