/* The placement hierarchy in MLIR (docs/export.md, "The groups level"): G groups
 * of K = clients / G clients each, a @groups value a tensor [G, ...], a @clients
 * value [clients, ...] ordered by group. A loop nest over (group g, client k of
 * the group, the value's dims) reads a client's value at row g * K + k (the
 * clients expanded to [G, K, ...]): a step up from the clients reduces over k, a
 * step down to them reads row floordiv K. A step
 * up from the groups is the flat aggregation over the groups axis (mlir_ops.c,
 * with the level's axis of G: fedc__mlir_level).
 *
 * Sharded (a groups x clients mesh, mlir_module.c), neither the reshape nor a
 * map of g * K + k or of floordiv has a sharding interface (LLVM's partitioner
 * takes only linalg maps that are projected permutations), so the two steps
 * read a constant instead, each client's group [C] (split like the clients):
 * a step up is a generic over (client, group, dims...) that adds a client's
 * value into its own group's row only, its clients loop a reduction split over
 * the mesh, which the partitioner makes a local sum and an all-reduce; a step
 * down is one over (client, group, dims...) that selects its group's row of
 * the groups' value, whole on every device. */
#include <string.h>

#include "export/mlir_lower.h"

static bool from_clients(const lower *l) { return type_of(l, l->n->in[0])->placement == FEDC_CLIENTS; }
static long long group_size(const lower *l) { return l->m->cohort / l->m->groups; }

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

/* Sharded: an i32 constant of n entries, entry i = i / per (the group of each
 * client, per = K; or each group's number, per = 1), annotated for its users as
 * split over `axes`; its name into out (of 24), its type into type (of 64). */
static const char *group_numbers(const lower *l, int n, int per, const char *axes, char *type, char *out) {
    char hoisted[24], *lit = fedc_malloc((size_t)n * 8 + 8);
    int32_t *g = fedc_malloc((size_t)n * sizeof *g);
    snprintf(type, 64, "tensor<%dxi32>", n);
    if (!lit || !g) {
        fedc_free(lit), fedc_free(g);
        l->m->st = FEDC_ENOMEM;
        return "%none";
    }
    for (int i = 0; i < n; i++) g[i] = i / per;
    memcpy(lit, "\"0x", 3);
    fedc__mlir_hex((const uint8_t *)g, (size_t)n * sizeof *g, lit + 3);
    strcat(lit, "\"");
    fedc__mlir_tensor_const(l->m, hoisted, lit, type);
    fedc_free(lit), fedc_free(g);
    return fedc__mlir_annotate_use(l->m, hoisted, type, axes, out);
}

/* Sharded: the body's `r = %out + (client's group == group ? term : 0)` of a
 * generic over (client, group, ...): the partitioner recognises a reduction only
 * by its combiner applied last, and the group loop's index is a number read
 * from an operand, since it is the global one only while that loop is whole. */
static const char *add_if_own_group(const lower *l, const char *gid, const char *g, const char *term, fedc_dtype dt,
                                    char *r) {
    char eq[24], zero[24], t[24];
    const char *elem = fedc__mlir_elem(dt);
    fedc__mlir_printf(l->m, "      %s = arith.cmpi eq, %s, %s : i32\n", fedc__mlir_tmp(l->m, eq), gid, g);
    constant(l, 0, dt, zero);
    fedc__mlir_printf(l->m, "      %s = arith.select %s, %s, %s : %s\n", fedc__mlir_tmp(l->m, t), eq, term, zero, elem);
    const char *add = fedc_dtype_is_float(dt) ? "arith.addf" : dt == FEDC_BOOL ? "arith.ori" : "arith.addi";
    return emit2(l, add, t, "%out", elem, r);
}

/* Sharded: a generic over (client, group, dims...) that sums x (of type xt, split
 * over x_axes; its map xmap) into result (of type vt, through out_map) where the
 * client is in the group: the clients' numbers split over gid_axes, the groups'
 * over g_axes. The loop split over the mesh is a reduction's, whose partial sums
 * the partitioner all-reduces; the result is annotated whole, then split over
 * `axes` for its users. */
typedef struct membership_sum {
    const char *x, *xt, *x_axes, *xmap, *w, *wt;
    const char *gid_axes, *g_axes, *iters, *out_map, *vt, *axes;
} membership_sum;

static void sum_by_membership(const lower *l, const membership_sum *a, fedc_dtype dt, const char *result) {
    char xs[24], ws[24], gid[24], gix[24], gidt[64], gixt[64], init[24], t[24], r[24], sum[24], whole[24], lit[32];
    const char *elem = fedc__mlir_elem(dt);
    const char *xin = fedc__mlir_annotate_use(l->m, a->x, a->xt, a->x_axes, xs);
    const char *win = a->w ? fedc__mlir_annotate_use(l->m, a->w, a->wt, fedc__mlir_split_axes(l->m, false), ws) : NULL;
    group_numbers(l, l->m->cohort, (int)group_size(l), a->gid_axes, gidt, gid);
    group_numbers(l, l->m->groups, 1, a->g_axes, gixt, gix);
    int n = 0;
    fedc__mlir_generic g = {.rank = (int)strlen(a->iters), .iters = a->iters, .out_map = a->out_map, .out_type = a->vt,
                            .out_elem = elem, .result_name = fedc__mlir_tmp(l->m, sum)};
    g.in[n] = xin, g.in_type[n] = a->xt, g.in_elem[n] = elem, g.maps[n++] = a->xmap;
    if (win) g.in[n] = win, g.in_type[n] = a->wt, g.in_elem[n] = elem, g.maps[n++] = "d0";
    g.in[n] = gid, g.in_type[n] = gidt, g.in_elem[n] = "i32", g.maps[n++] = "d0";
    g.in[n] = gix, g.in_type[n] = gixt, g.in_elem[n] = "i32", g.maps[n++] = "d1";
    g.nin = n;
    g.init = fedc__mlir_tensor_const(l->m, init, fedc__mlir_literal(dt, 0, lit, sizeof lit), a->vt);
    fedc__mlir_generic_begin(l->m, &g);
    const char *term = win ? emit2(l, "arith.mulf", "%in0", "%in1", elem, t) : "%in0";
    char gin[8], gxin[8];
    snprintf(gin, sizeof gin, "%%in%d", n - 2), snprintf(gxin, sizeof gxin, "%%in%d", n - 1);
    fedc__mlir_generic_end(l->m, &g, add_if_own_group(l, gin, gxin, term, dt, r));
    fedc__mlir_printf(l->m, "    %s = mesh.shard %s to <@clients_mesh, [[]]> : %s\n", fedc__mlir_tmp(l->m, whole), sum,
                      a->vt);
    fedc__mlir_printf(l->m, "    %s = mesh.shard %s to <@clients_mesh, [[%s]]> annotate_for_users : %s\n", result, whole,
                      a->axes, a->vt);
}

/* The loops (client, group, dims...) of a sum over the clients of a value of
 * `rank` dims: their kinds into iters (of 16), the maps of a value at the
 * clients and of one at the groups (of 160). */
static void membership_loops(int rank, char *iters, char *at_clients, char *at_groups) {
    snprintf(iters, 16, "rp");
    snprintf(at_clients, 160, "d0"), snprintf(at_groups, 160, "d1");
    for (int i = 0; i < rank; i++) iters[2 + i] = 'p', add_loop(at_clients, 160, 2 + i), add_loop(at_groups, 160, 2 + i);
    iters[2 + rank] = 0;
}

/* Sharded broadcast_down to the clients: v[c, ...] = x[group of c, ...], x whole
 * on every device (a @groups input is; a @groups value split over the rows is
 * gathered), read by tensor.extract at the client's group. Not a sum over the
 * groups split over the rows: LLVM 22's partitioner crashes on that generic. */
static fedc_status broadcast_down_sharded(const lower *l) {
    fedc_value x = l->n->in[0];
    int rank = type_of(l, l->v)->rank;
    char xt[160], vt[160], gidt[64], xw[24], gid[24], init[24], map[160], idx[FEDC_MAX_RANK + 1][24],
        at[FEDC_MAX_RANK + 1][24], r[24];
    identity_map(rank + 1, map, sizeof map);
    fedc__mlir_type_of(l->m, l->s, x, xt, sizeof xt);
    const char *xin = fedc__mlir_replicated_use(l->m, name(l, x), xt, xw), *elem = fedc__mlir_elem(type_of(l, x)->dtype);
    group_numbers(l, l->m->cohort, (int)group_size(l), fedc__mlir_split_axes(l->m, false), gidt, gid);
    fedc__mlir_generic g = {.rank = rank + 1, .iters = "pppppppp", .nin = 1, .in = {gid}, .in_type = {gidt},
                            .in_elem = {"i32"}, .maps = {"d0"}, .out_map = map,
                            .out_type = fedc__mlir_type_of(l->m, l->s, l->v, vt, sizeof vt), .out_elem = elem,
                            .init = fedc__mlir_splat(l->m, l->s, l->v, 0, init), .result_name = name(l, l->v)};
    fedc__mlir_generic_begin(l->m, &g);
    fedc__mlir_loop_indices(l, rank + 1, idx);
    fedc__mlir_clamped_index(l, "%in0", l->m->groups, at[0]);
    for (int i = 0; i < rank; i++) snprintf(at[1 + i], 24, "%s", idx[1 + i]);
    fedc__mlir_extract(l, xin, xt, at, rank + 1, fedc__mlir_tmp(l->m, r));
    fedc__mlir_generic_end(l->m, &g, r);
    return l->m->st;
}

fedc_status fedc__lower_broadcast_down(const lower *l) {
    if (type_of(l, l->n->in[0])->placement != FEDC_GROUPS && !l->m->mesh_rows)
        return fedc__lower_broadcast(l); /* to the groups */
    if (type_of(l, l->n->in[0])->placement != FEDC_GROUPS) { /* sharded: whole on every device, as a @groups input */
        char type[160], whole[24];
        if (fedc__lower_broadcast(l)) return l->m->st;
        fedc__mlir_type_of(l->m, l->s, l->v, type, sizeof type);
        fedc__mlir_printf(l->m, "    %s = mesh.shard %s to <@clients_mesh, [[]]> : %s\n", fedc__mlir_tmp(l->m, whole),
                          name(l, l->v), type);
        snprintf(l->s->name[l->v], sizeof l->s->name[l->v], "%s", whole);
        return l->m->st;
    }
    if (l->m->mesh_rows) return broadcast_down_sharded(l);
    char in_map[160];
    snprintf(in_map, sizeof in_map, "d0 floordiv %lld", group_size(l)); /* a client reads its group's row */
    for (int i = 0; i < type_of(l, l->v)->rank; i++) add_loop(in_map, sizeof in_map, 1 + i);
    return fedc__mlir_copy_through(l, in_map);
}

/* result = each group's sum over its clients of x (times w, if given), of type
 * `type`: a nest over (g, k, dims...) reducing k. */
/* Sharded: each group's sum over its clients, the clients' part of the sum on
 * each device all-reduced, then split over the rows. */
static void group_sum_sharded(const lower *l, fedc_value x, const fedc_value *w, const char *type, const char *result) {
    char iters[16], at_c[160], at_g[160], xt[160], wt[160];
    membership_loops(type_of(l, x)->rank, iters, at_c, at_g);
    const char *split = fedc__mlir_split_axes(l->m, false);
    membership_sum a = {.x = name(l, x), .xt = fedc__mlir_type_of(l->m, l->s, x, xt, sizeof xt), .x_axes = split,
                        .xmap = at_c, .w = w ? name(l, *w) : NULL,
                        .wt = w ? fedc__mlir_type_of(l->m, l->s, *w, wt, sizeof wt) : NULL, .gid_axes = split,
                        .g_axes = "", .iters = iters, .out_map = at_g, .vt = type,
                        .axes = fedc__mlir_split_axes(l->m, true)};
    sum_by_membership(l, &a, type_of(l, x)->dtype, result);
}

static void group_sum(const lower *l, fedc_value x, const fedc_value *w, const char *type, const char *result) {
    if (l->m->mesh_rows) return group_sum_sharded(l, x, w, type, result);
    int rank = type_of(l, x)->rank;
    char iters[16] = "pr", xmap[160], out_map[160] = "d0", xt[160], wt[160], xg[24], wg[24], init[24], a[24], b[24];
    for (int i = 0; i < rank; i++) iters[2 + i] = 'p', add_loop(out_map, sizeof out_map, 2 + i);
    identity_map(rank + 2, xmap, sizeof xmap);
    if (!by_group(l, x, xt, xg) || (w && !by_group(l, *w, wt, wg))) return;
    const char *elem = fedc__mlir_elem(type_of(l, x)->dtype);
    fedc__mlir_generic g = {.rank = rank + 2, .iters = iters, .nin = w ? 2 : 1, .in = {xg, w ? wg : NULL},
                            .in_type = {xt, w ? wt : NULL},
                            .in_elem = {elem, elem}, .maps = {xmap, "d0, d1"}, .out_map = out_map, .out_type = type,
                            .out_elem = elem, .result_name = result};
    bool f = fedc_dtype_is_float(type_of(l, x)->dtype); /* a weighted mean's operands are floats */
    g.init = fedc__mlir_tensor_const(l->m, init, f ? "0.0" : "0", type);
    fedc__mlir_generic_begin(l->m, &g);
    const char *term = w ? emit2(l, "arith.mulf", "%in0", "%in1", elem, a) : "%in0";
    fedc__mlir_generic_end(l->m, &g, emit2(l, f ? "arith.addf" : "arith.addi", term, "%out", elem, b));
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
    return mean ? fedc__mlir_scale(l, sum, type, 1.0 / (double)group_size(l)) : l->m->st;
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

fedc_status fedc__lower_num_groups(const lower *l) { return fedc__mlir_count_const(l, l->m->groups); }
fedc_status fedc__lower_group_size(const lower *l) { return fedc__mlir_count_const(l, (int)group_size(l)); }
