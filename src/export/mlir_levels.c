/* The placement hierarchy in MLIR (docs/export.md, "The groups level"): G groups
 * of K = clients / G clients each, a @groups value a tensor [G, ...], a @clients
 * value [clients, ...] ordered by group. A loop nest over (group g, client k of
 * the group, the value's dims) reads a client's value at row g * K + k (the
 * clients expanded to [G, K, ...]): a step up from the clients reduces over k, a
 * step down to them reads row floordiv K. A step
 * up from the groups is the flat aggregation over the groups axis (mlir_ops.c,
 * with the level's axis of G: fedc__mlir_level).
 *
 * Sharded (a groups x clients mesh, mlir_module.c), the function is one
 * device's: G and K are its row's groups and its share of each group's
 * clients, so the same nests compute its part of each group's sum, which a
 * mesh.all_reduce along the row (mesh axis 1) completes; a step down reads the
 * row's own groups, with nothing to communicate. Counts and means use the
 * whole cohort's numbers. */
#include <string.h>

#include "export/mlir_lower.h"

static bool from_clients(const lower *l) { return type_of(l, l->n->in[0])->placement == FEDC_CLIENTS; }
static long long group_size(const lower *l) { return l->m->cohort / l->m->groups; }
/* K over the whole cohort (per device, group_size is the device's share of it). */
static long long whole_group_size(const lower *l) {
    return fedc__mlir_whole_count(l->m, false) / fedc__mlir_whole_count(l->m, true);
}

/* @clients value u as [G, K, ...] (tensor.expand_shape; linalg derives a nest's
 * bounds only from maps it can invert, which g * K + k is not): its name into
 * out (of 24), its type into type (of 160); false if it has too many dims. */
static bool by_group(const lower *l, fedc_value u, char *type, char *out) {
    const fedc_type *t = type_of(l, u);
    char ut[160];
    if (t->rank + 1 > FEDC_MAX_RANK)
        return unsupported(l, "a @clients value of this rank has no room for the groups axis"), false;
    fedc_type g = *t;
    memmove(g.dims + 1, g.dims, (size_t)t->rank * sizeof g.dims[0]);
    g.dims[0] = group_size(l), g.rank++;
    fedc__mlir m = *l->m;
    m.clients = l->m->groups;
    fedc__mlir_tensor(&m, &g, true, type, 160);
    fedc__mlir_printf(l->m, "    %s = tensor.expand_shape %s [[0, 1]", fedc__mlir_tmp(l->m, out), name(l, u));
    for (int i = 0; i < t->rank; i++) fedc__mlir_printf(l->m, ", [%d]", 2 + i);
    fedc__mlir_printf(l->m, "] output_shape [%d, %lld", l->m->groups, group_size(l));
    for (int i = 0; i < t->rank; i++) fedc__mlir_printf(l->m, ", %lld", (long long)t->dims[i]);
    fedc__mlir_printf(l->m, "] : %s into %s\n", fedc__mlir_type_of(l->m, l->s, u, ut, sizeof ut), type);
    return true;
}

fedc_status fedc__lower_broadcast_down(const lower *l) {
    if (type_of(l, l->n->in[0])->placement != FEDC_GROUPS) return fedc__lower_broadcast(l); /* to the groups */
    char in_map[160];
    snprintf(in_map, sizeof in_map, "d0 floordiv %lld", group_size(l)); /* a client reads its group's row */
    for (int i = 0; i < type_of(l, l->v)->rank; i++) add_loop(in_map, sizeof in_map, 1 + i);
    return fedc__mlir_copy_through(l, in_map);
}

/* result = each group's sum over its clients of x (times w, if given), of type
 * `type`: a nest over (g, k, dims...) reducing k; per device, its part of the
 * sums all-reduced along its row. */
static void group_sum(const lower *l, fedc_value x, const fedc_value *w, const char *type, const char *result) {
    int rank = type_of(l, x)->rank;
    char iters[16] = "pr", xmap[160], out_map[160] = "d0", xt[160], wt[160], xg[24], wg[24], init[24], a[24], b[24];
    char part[24];
    for (int i = 0; i < rank; i++) iters[2 + i] = 'p', add_loop(out_map, sizeof out_map, 2 + i);
    identity_map(rank + 2, xmap, sizeof xmap);
    if (!by_group(l, x, xt, xg) || (w && !by_group(l, *w, wt, wg))) return;
    const char *elem = fedc__mlir_elem(type_of(l, x)->dtype);
    fedc__mlir_generic g = {.rank = rank + 2, .iters = iters, .nin = w ? 2 : 1, .in = {xg, w ? wg : NULL},
                            .in_type = {xt, w ? wt : NULL},
                            .in_elem = {elem, elem}, .maps = {xmap, "d0, d1"}, .out_map = out_map, .out_type = type,
                            .out_elem = elem, .result_name = l->m->mesh_rows ? fedc__mlir_tmp(l->m, part) : result};
    bool f = fedc_dtype_is_float(type_of(l, x)->dtype); /* a weighted mean's operands are floats */
    g.init = fedc__mlir_tensor_const(l->m, init, f ? "0.0" : "0", type);
    fedc__mlir_generic_begin(l->m, &g);
    const char *term = w ? emit2(l, "arith.mulf", "%in0", "%in1", elem, a) : "%in0";
    fedc__mlir_generic_end(l->m, &g, emit2(l, f ? "arith.addf" : "arith.addi", term, "%out", elem, b));
    if (l->m->mesh_rows) fedc__mlir_all_reduce(l->m, part, type, "1", result);
}

/* sum_up and mean_up: from the groups, the flat sum and mean over their axis;
 * from the clients, each group's sum (times 1 / K for the mean, as fedc
 * multiplies by the inverse of the count). */
fedc_status fedc__lower_sum_up(const lower *l) {
    if (!from_clients(l)) return fedc__lower_sum(l);
    char type[160], sum[24];
    bool mean = l->n->op == FEDC_OP_MEAN_UP;
    fedc__mlir_type_of(l->m, l->s, l->v, type, sizeof type);
    group_sum(l, l->n->in[0], NULL, type, mean ? fedc__mlir_tmp(l->m, sum) : name(l, l->v));
    return mean ? fedc__mlir_scale(l, sum, type, 1.0 / (double)whole_group_size(l)) : l->m->st;
}

/* weighted_mean_up(x, w): from the groups, the flat weighted mean over their
 * axis; from the clients, per group sum_k w_k x_k * (1 / sum_k w_k). */
fedc_status fedc__lower_weighted_mean_up(const lower *l) {
    if (!from_clients(l)) return fedc__lower_weighted_mean(l);
    fedc_value x = l->n->in[0], w = l->n->in[1];
    const fedc_type *t = type_of(l, l->v);
    const char *elem = fedc__mlir_elem(t->dtype);
    char type[160], gtype[64], num[24], den[24], map[160], init[24], one[24], inv[24], r[24];
    fedc__mlir_type_of(l->m, l->s, l->v, type, sizeof type);
    snprintf(gtype, sizeof gtype, "tensor<%dx%s>", l->m->groups, elem);
    group_sum(l, x, &w, type, fedc__mlir_tmp(l->m, num));
    group_sum(l, w, NULL, gtype, fedc__mlir_tmp(l->m, den)); /* the weights' sum, [G] */
    identity_map(t->rank + 1, map, sizeof map);
    fedc__mlir_generic gd = {.rank = t->rank + 1, .iters = "pppppppp", .nin = 2, .in = {num, den},
                             .in_type = {type, gtype}, .in_elem = {elem, elem}, .maps = {map, "d0"}, .out_map = map,
                             .out_type = type, .out_elem = elem, .result_name = name(l, l->v)};
    gd.init = fedc__mlir_splat(l->m, l->s, l->v, 0, init);
    fedc__mlir_generic_begin(l->m, &gd);
    emit2(l, "arith.divf", constant(l, 1, t->dtype, one), "%in1", elem, inv);
    fedc__mlir_generic_end(l->m, &gd, emit2(l, "arith.mulf", "%in0", inv, elem, r));
    return l->m->st;
}

fedc_status fedc__lower_num_groups(const lower *l) { return fedc__mlir_count_const(l, fedc__mlir_whole_count(l->m, true)); }
fedc_status fedc__lower_group_size(const lower *l) { return fedc__mlir_count_const(l, (int)whole_group_size(l)); }
