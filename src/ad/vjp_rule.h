/* vjp_rule.h — one application of a derivative rule (internal): what the per-op
 * rules (vjp_rules.c) and the rules of the federated primitives, map and fold
 * (vjp_federated.c) read and write. */
#ifndef FEDC_AD_VJP_RULE_H
#define FEDC_AD_VJP_RULE_H

#include "ad/ad.h"

typedef struct fedc__rule {
    fedc__ad *ad;
    fedc_program *g;
    const fedc__node *n; /* the src node */
    fedc_value v;        /* its src value */
    fedc_value ct;       /* its cotangent, in g */
} fedc__rule;

/* Operand i and the result, in the new program; operand i's src type; whether
 * operand i needs a cotangent; accumulating c into operand i's cotangent. */
static inline fedc_value X(const fedc__rule *r, int i) { return r->ad->primal[r->n->in[i]]; }
static inline fedc_value Y(const fedc__rule *r) { return r->ad->primal[r->v]; }
static inline const fedc_type *xtype(const fedc__rule *r, int i) { return &r->ad->src->nodes[r->n->in[i]].type; }
static inline bool needs(const fedc__rule *r, int i) { return r->ad->active[r->n->in[i]]; }
static inline void give(const fedc__rule *r, int i, fedc_value c) { fedc__ad_accum(r->ad, r->n->in[i], c); }
/* Ops without derivatives (integer or boolean results, or sources). */
static inline fedc_status fedc__vjp_none(const fedc__rule *r) { (void)r; return FEDC_OK; }

/* The rules of vjp_federated.c. */
fedc_status fedc__vjp_BROADCAST(const fedc__rule *r);
fedc_status fedc__vjp_SUM(const fedc__rule *r);
fedc_status fedc__vjp_MEAN(const fedc__rule *r);
fedc_status fedc__vjp_WEIGHTED_MEAN(const fedc__rule *r);
/* weighted_mean's transpose with `down` and `up` the moves between its levels. */
fedc_status fedc__vjp_weighted_mean_by(const fedc__rule *r, fedc_value (*down)(fedc_program *, fedc_value),
                                       fedc_value (*up)(fedc_program *, fedc_value));
fedc_status fedc__vjp_NUM_CLIENTS(const fedc__rule *r);
fedc_status fedc__vjp_RESULT(const fedc__rule *r);
fedc_status fedc__vjp_MAP(const fedc__rule *r);
fedc_status fedc__vjp_FOLD(const fedc__rule *r);
/* The rules of vjp_hierarchy.c. */
fedc_status fedc__vjp_BROADCAST_DOWN(const fedc__rule *r);
fedc_status fedc__vjp_SUM_UP(const fedc__rule *r);
fedc_status fedc__vjp_MEAN_UP(const fedc__rule *r);
fedc_status fedc__vjp_WEIGHTED_MEAN_UP(const fedc__rule *r);

#endif
