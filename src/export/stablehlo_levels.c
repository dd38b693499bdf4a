/* The placement hierarchy in StableHLO (docs/federated.md, "Hierarchies";
 * docs/export.md): G groups of K = clients / G clients each. A @groups value has
 * a leading groups axis [G, ...]; a @clients value stays [clients, ...], its
 * clients ordered by group, so that it reads as [G, K, ...] reshaped. A step
 * down from the groups spreads each group's value over its K clients; a step up
 * from the clients reduces that reshape over its K axis (dim 1), one group per
 * row; a step up from the groups to the server is the flat aggregation over the
 * groups axis (stablehlo_ops.c, with the level's axis of G: fedc__mlir_level).
 * Sharded over a groups x clients mesh (stablehlo.c), XLA's partitioner makes
 * the first an all-reduce along each mesh row and the second one across them. */
#include <string.h>

#include "export/stablehlo.h"

static bool from_clients(const lower *l) { return type_of(l, l->n->in[0])->placement == FEDC_CLIENTS; }
static int64_t group_size(const lower *l) { return l->m->cohort / l->m->groups; }

/* The tensor type of shape t behind the axes [G, K] (per_group) or [G], into
 * buf (of 160); false if that is more dims than a type has. */
static bool grouped_type(const lower *l, const fedc_type *t, bool per_group, char *buf) {
    int lead = per_group ? 2 : 1;
    if (t->rank + lead > FEDC_MAX_RANK) return false;
    fedc_type u = *t;
    memmove(u.dims + lead, u.dims, (size_t)t->rank * sizeof u.dims[0]);
    u.dims[0] = l->m->groups;
    if (per_group) u.dims[1] = group_size(l);
    u.rank += lead;
    fedc__mlir_tensor(l->m, &u, false, buf, 160);
    return true;
}

/* Operand u, a @clients value, read as [G, K, ...]: into out (of 24), its type
 * into type; false (the export failed) if it has no room for the two axes. */
static bool by_group(const lower *l, fedc_value u, char *type, char *out) {
    char ut[160];
    if (!grouped_type(l, type_of(l, u), true, type)) {
        unsupported(l, "a @clients value of this rank has no room for the groups and clients axes");
        return false;
    }
    op1(l, fedc__mlir_tmp(l->m, out), "stablehlo.reshape", "", name(l, u), type_str(l, u, ut), type);
    return true;
}

/* x (of type xt, xrank dims) spread to type `to`: its first nlead dims are the
 * result's first (the groups axis, or [G, K]), the rest land after the result's
 * first `skip` dims. */
static void spread(const lower *l, const char *x, const char *xt, int xrank, int nlead, int skip, const char *to,
                   char *out) {
    int64_t dims[FEDC_MAX_RANK];
    char attr[200], list[160];
    for (int i = 0; i < xrank; i++) dims[i] = i < nlead ? i : i + skip - nlead;
    snprintf(attr, sizeof attr, "broadcast_dimensions = %s", i64s(dims, xrank, list));
    op1(l, fedc__mlir_tmp(l->m, out), "stablehlo.broadcast_in_dim", attr, x, xt, to);
}

fedc_status fedc__shlo_broadcast_down(const lower *l) {
    fedc_value x = l->n->in[0];
    if (type_of(l, x)->placement != FEDC_GROUPS) return fedc__shlo_broadcast(l); /* server to groups: as to the clients */
    char gt[160], xt[160], vt[160], spread_x[24];
    if (!grouped_type(l, type_of(l, l->v), true, gt))
        return unsupported(l, "a @clients value of this rank has no room for the groups and clients axes");
    /* each group's value to its K clients, [G, ...] -> [G, K, ...], then the clients in a row */
    spread(l, name(l, x), type_str(l, x, xt), type_of(l, x)->rank + 1, 1, 2, gt, spread_x);
    op1(l, out_name(l), "stablehlo.reshape", "", spread_x, gt, type_str(l, l->v, vt));
    return l->m->st;
}

/* sum_up and mean_up: from the groups, the flat sum and mean over their axis;
 * from the clients, each group's K clients summed (times 1 / K for the mean, as
 * fedc multiplies by the inverse of the count). */
fedc_status fedc__shlo_sum_up(const lower *l) {
    if (!from_clients(l)) return fedc__shlo_sum(l);
    char gt[160], vt[160], xg[24], r[24];
    if (!by_group(l, l->n->in[0], gt, xg)) return l->m->st;
    bool mean = l->n->op == FEDC_OP_MEAN_UP;
    const char *summed = mean ? fedc__mlir_tmp(l->m, r) : out_name(l);
    fedc__shlo_reduce_dims(l, xg, gt, type_of(l, l->v)->dtype, 1u << 1, type_of(l, l->v)->rank + 2, false,
                      type_str(l, l->v, vt), summed);
    if (mean) fedc__shlo_scale(l, summed, 1.0 / (double)group_size(l), out_name(l));
    return l->m->st;
}

/* weighted_mean_up(x, w): from the groups, the flat weighted mean over their
 * axis; from the clients, per group sum_k w_k x_k * (1 / sum_k w_k). */
fedc_status fedc__shlo_weighted_mean_up(const lower *l) {
    if (!from_clients(l)) return fedc__shlo_weighted_mean(l);
    fedc_value x = l->n->in[0], w = l->n->in[1];
    fedc_dtype dt = type_of(l, x)->dtype;
    int rank = type_of(l, x)->rank;
    char xgt[160], wgt[160], vt[160], g1[160], xg[24], wg[24], ws[24], wx[24], num[24], den[24], one[24], inv[24],
        invs[24];
    if (!by_group(l, x, xgt, xg) || !by_group(l, w, wgt, wg)) return l->m->st;
    type_str(l, l->v, vt);
    spread(l, wg, wgt, 2, 2, 2, xgt, ws); /* each client's weight over its value */
    op2(l, fedc__mlir_tmp(l->m, wx), "stablehlo.multiply", "", xg, ws, xgt, xgt);
    fedc__shlo_reduce_dims(l, wx, xgt, dt, 1u << 1, rank + 2, false, vt, fedc__mlir_tmp(l->m, num));
    grouped_type(l, &(fedc_type){.dtype = dt}, false, g1); /* [G] */
    fedc__shlo_reduce_dims(l, wg, wgt, dt, 1u << 1, 2, false, g1, fedc__mlir_tmp(l->m, den));
    fedc__shlo_splat(l->m, dt, 1, g1, one);
    op2(l, fedc__mlir_tmp(l->m, inv), "stablehlo.divide", "", one, den, g1, g1);
    spread(l, inv, g1, 1, 1, 1, vt, invs);
    op2(l, out_name(l), "stablehlo.multiply", "", num, invs, vt, vt);
    return l->m->st;
}

fedc_status fedc__shlo_num_groups(const lower *l) {
    char t[160];
    fedc__shlo_splat(l->m, type_of(l, l->v)->dtype, l->m->groups, type_str(l, l->v, t), out_name(l));
    return l->m->st;
}

fedc_status fedc__shlo_group_size(const lower *l) { /* every group of K clients: the export's groups are equal */
    char t[160];
    fedc__shlo_splat(l->m, type_of(l, l->v)->dtype, (double)group_size(l), type_str(l, l->v, t), out_name(l));
    return l->m->st;
}
