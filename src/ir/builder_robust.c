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
                                           fedc_value center, fedc_value bound, fedc_value sizes) {
    if (attack != FEDC__ROBUST_ATTACK_ALIE && attack != FEDC__ROBUST_ATTACK_IPM)
        return fedc_program_fail(p, FEDC_EINVAL, "robust_aggregate: attack %d is neither ALIE nor IPM", (int)attack);
    if ((bound == FEDC_NONE) != (sizes == FEDC_NONE))
        return fedc_program_fail(p, FEDC_EINVAL, "robust_aggregate: a zeroing's bound and sizes go together");
    fedc_value in[6] = {x, w, flags};
    int n = 3;
    if (center != FEDC_NONE) in[n++] = center;
    if (bound != FEDC_NONE) in[n++] = bound, in[n++] = sizes;
    return emit(p, in, n, r, attack, value);
}

fedc__robust_operands fedc__robust_operands_of(const fedc__node *n) {
    bool zeroing = n->nin >= 5, center = n->nin == 4 || n->nin == 6;
    return (fedc__robust_operands){.flags = n->nin > 2 ? 2 : -1, .center = center ? 3 : -1,
                                   .bound = zeroing ? n->nin - 2 : -1, .sizes = zeroing ? n->nin - 1 : -1};
}

/* A zeroing's bound (an f32 scalar) and leaf sizes (an i32[L] constant, adding
 * up to x's d numbers less the flag). */
static fedc_status check_zeroing(const rule_ctx *c, fedc__robust_operands o, int64_t d) {
    const fedc_type *b = operand(c, o.bound), *z = operand(c, o.sizes);
    const fedc__node *sizes = &c->p->nodes[c->n->in[o.sizes]];
    if (b->placement == FEDC_CLIENTS || b->rank != 0 || b->dtype != FEDC_F32)
        return fail(c, FEDC_ETYPE, "the zeroing's bound is %s; it must be one f32 scalar at the server", TYPESTR(b));
    if (z->placement == FEDC_CLIENTS || z->rank != 1 || z->dtype != FEDC_I32 || sizes->op != FEDC_OP_CONSTANT)
        return fail(c, FEDC_ETYPE, "the zeroing's leaf sizes are %s; they must be an i32 vector constant", TYPESTR(z));
    int64_t total = 0;
    for (int64_t i = 0; i < z->dims[0]; i++) {
        int32_t n = ((const int32_t *)sizes->data)[i];
        if (n < 0) return fail(c, FEDC_EINVAL, "the zeroing's leaf %lld has %d numbers", (long long)i, (int)n);
        total += n;
    }
    if (total != d - 1)
        return fail(c, FEDC_EINVAL, "the zeroing's leaves hold %lld numbers; the operand %lld values, then the flag",
                    (long long)total, (long long)(d - 1));
    return FEDC_OK;
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
    fedc__robust_operands o = fedc__robust_operands_of(c->n);
    if (o.flags >= 0) {
        const fedc_type *f = operand(c, o.flags);
        if (f->placement != FEDC_CLIENTS || f->rank != 0 || f->dtype != FEDC_F32)
            return fail(c, FEDC_ETYPE, "the attack's flags are %s; they must be one f32 scalar per client (f32[]@clients)",
                        TYPESTR(f));
    }
    int64_t d = x->dims[0] - (o.bound >= 0); /* with a zeroing, the values and then the flag */
    if (o.center >= 0) {
        const fedc_type *m = operand(c, o.center);
        if (m->placement != FEDC_SERVER || m->rank != 1 || m->dtype != FEDC_F32 || m->dims[0] != d)
            return fail(c, FEDC_ETYPE, "the centre is %s; it must be one f32[%lld]@server", TYPESTR(m), (long long)d);
    }
    if (o.bound >= 0) {
        fedc_status st = check_zeroing(c, o, x->dims[0]);
        if (st) return st;
    }
    *out = *x;
    out->placement = FEDC_SERVER;
    return FEDC_OK;
}
