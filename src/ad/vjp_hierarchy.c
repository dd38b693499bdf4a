/* Derivative rules of the hierarchy's primitives (src/ir/hierarchy.c): each is the
 * transpose of the move one level the other way, as for the flat primitives
 * (vjp_federated.c): broadcast_down^T is sum_up, sum_up^T is broadcast_down, and
 * mean_up^T is broadcast_down of the cotangent over the level's size. So the
 * derivative of a hierarchical program communicates level by level too, and with
 * one group the size above the groups is 1 (a division by 1 is exact): the
 * derivative of the one-group program is the flat one's, bit for bit. */
#include "ad/vjp_rule.h"

fedc_status fedc__vjp_BROADCAST_DOWN(const fedc__rule *r) { give(r, 0, fedc_sum_up(r->g, r->ct)); return FEDC_OK; }
fedc_status fedc__vjp_SUM_UP(const fedc__rule *r) { give(r, 0, fedc_broadcast_down(r->g, r->ct)); return FEDC_OK; }

/* The number of members each value of `above` averages: a group's clients (above
 * @groups) or the groups (above @server). */
static fedc_value members(fedc_program *g, const fedc_type *above) {
    return above->placement == FEDC_GROUPS ? fedc_group_size(g, above->dtype) : fedc_num_groups(g, above->dtype);
}

fedc_status fedc__vjp_MEAN_UP(const fedc__rule *r) {
    give(r, 0, fedc_broadcast_down(r->g, fedc_div(r->g, r->ct, members(r->g, &r->n->type))));
    return FEDC_OK;
}

/* as weighted_mean's, a level up */
fedc_status fedc__vjp_WEIGHTED_MEAN_UP(const fedc__rule *r) {
    return fedc__vjp_weighted_mean_by(r, fedc_broadcast_down, fedc_sum_up);
}
