/* The lowerings of the network ops: log_softmax and softmax cross-entropy (with
 * its gradient) over fedc's row log-sum-exp, gather, one_hot, argmax and
 * matmul. */
#include <string.h>

#include "export/mlir_lower.h"

/* ------------------------------------------------------ softmax family -- */

/* lse[r] = m[r] + log(sum_c exp(x[r, c] - m[r])), m the row's max, over the last
 * axis: fedc's row_logsumexp. Names the result in `lse`, its type in `type`. */
static fedc_status row_logsumexp(const lower *l, fedc_value x, char *lse, char *type) {
    fedc_type rows = *type_of(l, x);
    rows.rank--;
    bool c = clients(l, x);
    int loops = type_of(l, x)->rank + c;
    const char *elem = fedc__mlir_elem(rows.dtype);
    char mx[24], sum[24], init[24], xt[160], all[160], part[160], iters[16] = {0}, d[24], e[24], r[24];
    fedc__mlir_tensor(l->m, &rows, c, type, 160);
    if (fedc__mlir_reduce(l, x, 1u << (loops - 1), false, true, fedc__mlir_tmp(l->m, mx), type)) return l->m->st;
    for (int i = 0; i < loops; i++) iters[i] = i == loops - 1 ? 'r' : 'p';
    identity_map(loops, all, sizeof all);
    rows_map(loops, part, sizeof part);
    fedc__mlir_tensor_const(l->m, init, "0.0", type);
    fedc__mlir_generic g = {.rank = loops, .iters = iters, .nin = 2, .in = {name(l, x), mx},
                            .in_type = {fedc__mlir_type_of(l->m, l->s, x, xt, sizeof xt), type}, .in_elem = {elem, elem},
                            .maps = {all, part}, .out_map = part, .out_type = type, .out_elem = elem, .init = init,
                            .result_name = fedc__mlir_tmp(l->m, sum)};
    fedc__mlir_generic_begin(l->m, &g);
    emit2(l, "arith.addf", emit1(l, "math.exp", emit2(l, "arith.subf", "%in0", "%in1", elem, d), elem, e), "%out", elem, r);
    fedc__mlir_generic_end(l->m, &g, r);
    fedc__mlir_tensor_const(l->m, init, "0.0", type);
    fedc__mlir_generic h = {.rank = loops - 1, .iters = "pppppppp", .nin = 2, .in = {mx, sum}, .in_type = {type, type},
                            .in_elem = {elem, elem}, .maps = {part, part}, .out_map = part, .out_type = type,
                            .out_elem = elem, .init = init, .result_name = fedc__mlir_tmp(l->m, lse)};
    fedc__mlir_generic_begin(l->m, &h);
    emit2(l, "arith.addf", "%in0", emit1(l, "math.log", "%in1", elem, d), elem, r);
    fedc__mlir_generic_end(l->m, &h, r);
    return l->m->st;
}

/* A loop nest over v's shape whose operands are x (whole) and then row values
 * (the last loop dropped): log_softmax and softmax_cross_entropy_grad. */
static void rows_generic(const lower *l, fedc__mlir_generic *g, char maps[2][160], char *types, int nrows,
                         const char *const *row_names, const char *const *row_types, const char *const *row_elems,
                         char *init) {
    bool c = clients(l, l->v);
    int loops = type_of(l, l->v)->rank + c;
    identity_map(loops, maps[0], 160);
    rows_map(loops, maps[1], 160);
    *g = (fedc__mlir_generic){.rank = loops, .iters = "pppppppp", .nin = 1 + nrows, .in = {name(l, l->n->in[0])},
                              .in_type = {fedc__mlir_type_of(l->m, l->s, l->n->in[0], types, 160)},
                              .in_elem = {fedc__mlir_elem(type_of(l, l->n->in[0])->dtype)}, .maps = {maps[0]},
                              .out_map = maps[0], .out_type = types + 160,
                              .out_elem = fedc__mlir_elem(type_of(l, l->v)->dtype), .result_name = name(l, l->v)};
    fedc__mlir_type_of(l->m, l->s, l->v, types + 160, 160);
    for (int i = 0; i < nrows; i++) {
        g->in[1 + i] = row_names[i], g->in_type[1 + i] = row_types[i], g->maps[1 + i] = maps[1];
        g->in_elem[1 + i] = row_elems[i];
    }
    g->init = fedc__mlir_splat(l->m, l->s, l->v, 0, init);
}

fedc_status fedc__lower_log_softmax(const lower *l) {
    char lse[24], lse_type[160], maps[2][160], types[320], init[24], r[24];
    if (row_logsumexp(l, l->n->in[0], lse, lse_type)) return l->m->st;
    fedc__mlir_generic g;
    const char *elem = fedc__mlir_elem(type_of(l, l->v)->dtype);
    rows_generic(l, &g, maps, types, 1, (const char *[]){lse}, (const char *[]){lse_type}, &elem, init);
    fedc__mlir_generic_begin(l->m, &g);
    emit2(l, "arith.subf", "%in0", "%in1", g.out_elem, r);
    fedc__mlir_generic_end(l->m, &g, r);
    return l->m->st;
}

/* loss[r] = w[r] * (lse[r] - x[r, label[r]]), the label's logit read with
 * tensor.extract at the row's indices. */
fedc_status fedc__lower_softmax_xent(const lower *l) {
    fedc_value x = l->n->in[0];
    const fedc_type *xt = type_of(l, x);
    bool c = clients(l, l->v);
    int loops = type_of(l, l->v)->rank + c;
    char lse[24], lse_type[160], map[160], lt[160], wt[160], out_type[160], init[24];
    if (row_logsumexp(l, x, lse, lse_type)) return l->m->st;
    identity_map(loops, map, sizeof map);
    const char *elem = fedc__mlir_elem(xt->dtype);
    fedc__mlir_generic g = {.rank = loops, .iters = "pppppppp", .nin = l->n->nin, .in = {lse, name(l, l->n->in[1])},
                            .in_type = {lse_type, fedc__mlir_type_of(l->m, l->s, l->n->in[1], lt, sizeof lt)},
                            .in_elem = {elem, "i32", elem}, .maps = {map, map, map}, .out_map = map,
                            .out_type = fedc__mlir_type_of(l->m, l->s, l->v, out_type, sizeof out_type),
                            .out_elem = elem, .result_name = name(l, l->v)};
    if (l->n->nin == 3) g.in[2] = name(l, l->n->in[2]), g.in_type[2] = fedc__mlir_type_of(l->m, l->s, l->n->in[2], wt, sizeof wt);
    g.init = fedc__mlir_splat(l->m, l->s, l->v, 0, init);
    fedc__mlir_generic_begin(l->m, &g);
    char idx[FEDC_MAX_RANK + 1][24], k[24], v[24], nll[24], r[24];
    for (int i = 0; i < loops; i++) {
        fedc__mlir_tmp(l->m, idx[i]);
        fedc__mlir_printf(l->m, "      %s = linalg.index %d : index\n", idx[i], i);
    }
    fedc__mlir_clamped_index(l, "%in1", xt->dims[xt->rank - 1], k);
    char xtype[160];
    fedc__mlir_tmp(l->m, v);
    fedc__mlir_printf(l->m, "      %s = tensor.extract %s[", v, name(l, x));
    for (int i = 0; i < loops; i++) fedc__mlir_printf(l->m, "%s, ", idx[i]);
    fedc__mlir_printf(l->m, "%s] : %s\n", k, fedc__mlir_type_of(l->m, l->s, x, xtype, sizeof xtype));
    emit2(l, "arith.subf", "%in0", v, elem, nll);
    if (l->n->nin == 3) emit2(l, "arith.mulf", "%in2", nll, elem, r);
    fedc__mlir_generic_end(l->m, &g, l->n->nin == 3 ? r : nll);
    return l->m->st;
}

/* dlogits[r, c] = scale[r] * (exp(x[r, c] - lse[r]) - [c == label[r]]). */
fedc_status fedc__lower_softmax_xent_grad(const lower *l) {
    char lse[24], lse_type[160], maps[2][160], types[320], init[24], lt[160], st[160];
    if (row_logsumexp(l, l->n->in[0], lse, lse_type)) return l->m->st;
    fedc__mlir_generic g;
    const char *rows[3] = {lse, name(l, l->n->in[1]), name(l, l->n->in[2])};
    const char *rtypes[3] = {lse_type, fedc__mlir_type_of(l->m, l->s, l->n->in[1], lt, sizeof lt),
                             fedc__mlir_type_of(l->m, l->s, l->n->in[2], st, sizeof st)};
    const char *elem = fedc__mlir_elem(type_of(l, l->v)->dtype), *relems[3] = {elem, "i32", elem};
    rows_generic(l, &g, maps, types, 3, rows, rtypes, relems, init);
    char ci[24], eq[24], hot[24], d[24], p[24], q[24], r[24];
    fedc__mlir_generic_begin(l->m, &g);
    loop_index_i32(l, g.rank - 1, ci);
    fedc__mlir_tmp(l->m, eq);
    fedc__mlir_printf(l->m, "      %s = arith.cmpi eq, %s, %%in2 : i32\n", eq, ci);
    fedc__mlir_tmp(l->m, hot);
    fedc__mlir_printf(l->m, "      %s = arith.uitofp %s : i1 to %s\n", hot, eq, elem);
    emit1(l, "math.exp", emit2(l, "arith.subf", "%in0", "%in1", elem, d), elem, p);
    emit2(l, "arith.mulf", "%in3", emit2(l, "arith.subf", p, hot, elem, q), elem, r);
    fedc__mlir_generic_end(l->m, &g, r);
    return l->m->st;
}


/* ------------------------------------------------------------ indexing -- */

/* y[c?, i..., w...] = table[c?, idx[c?, i...], w...]. */
fedc_status fedc__lower_gather(const lower *l) {
    fedc_value table = l->n->in[0], ix = l->n->in[1];
    const fedc_type *it = type_of(l, ix), *tt = type_of(l, table);
    bool c = clients(l, l->v);
    int loops = type_of(l, l->v)->rank + c;
    char imap[160] = {0}, out_map[160], itype[160], ttype[160], out_type[160], init[24], idx[FEDC_MAX_RANK + 2][24];
    char k[24], r[24], at[FEDC_MAX_RANK + 2][24];
    if (c) add_loop(imap, sizeof imap, 0);
    for (int i = 0; i < it->rank; i++) add_loop(imap, sizeof imap, c + i);
    identity_map(loops, out_map, sizeof out_map);
    fedc__mlir_generic g = {.rank = loops, .iters = "pppppppp", .nin = 1, .in = {name(l, ix)},
                            .in_type = {fedc__mlir_type_of(l->m, l->s, ix, itype, sizeof itype)}, .in_elem = {"i32"},
                            .maps = {imap}, .out_map = out_map,
                            .out_type = fedc__mlir_type_of(l->m, l->s, l->v, out_type, sizeof out_type),
                            .out_elem = fedc__mlir_elem(tt->dtype), .result_name = name(l, l->v)};
    g.init = fedc__mlir_splat(l->m, l->s, l->v, 0, init);
    fedc__mlir_generic_begin(l->m, &g);
    fedc__mlir_loop_indices(l, loops, idx);
    int n = 0;
    if (c) snprintf(at[n++], 24, "%s", idx[0]);
    snprintf(at[n++], 24, "%s", fedc__mlir_clamped_index(l, "%in0", tt->dims[0], k));
    for (int i = 1; i < tt->rank; i++) snprintf(at[n++], 24, "%s", idx[c + it->rank + i - 1]);
    fedc__mlir_extract(l, name(l, table), fedc__mlir_type_of(l->m, l->s, table, ttype, sizeof ttype), at, n, fedc__mlir_tmp(l->m, r));
    fedc__mlir_generic_end(l->m, &g, r);
    return l->m->st;
}

static void body_one_hot(const lower *l, char *result) {
    fedc_dtype dt = type_of(l, l->v)->dtype;
    char ji[24], eq[24];
    loop_index_i32(l, type_of(l, l->v)->rank + clients(l, l->v) - 1, ji);
    fedc__mlir_tmp(l->m, eq);
    fedc__mlir_printf(l->m, "      %s = arith.cmpi eq, %s, %%in0 : i32\n", eq, ji);
    if (dt == FEDC_BOOL) {
        snprintf(result, 24, "%s", eq);
        return;
    }
    fedc__mlir_tmp(l->m, result);
    fedc__mlir_printf(l->m, "      %s = %s %s : i1 to %s\n", result, fedc_dtype_is_float(dt) ? "arith.uitofp" : "arith.extui",
                      eq, fedc__mlir_elem(dt));
}

/* one_hot: the index read once per row, the class from the last loop. */
fedc_status fedc__lower_one_hot(const lower *l) {
    char types[320], maps[2][160], init[24], result[24];
    bool c = clients(l, l->v);
    int loops = type_of(l, l->v)->rank + c;
    rows_map(loops, maps[0], sizeof maps[0]);
    identity_map(loops, maps[1], sizeof maps[1]);
    fedc__mlir_generic g = {.rank = loops, .iters = "pppppppp", .nin = 1, .in = {name(l, l->n->in[0])},
                            .in_type = {fedc__mlir_type_of(l->m, l->s, l->n->in[0], types, 160)}, .in_elem = {"i32"},
                            .maps = {maps[0]}, .out_map = maps[1],
                            .out_type = fedc__mlir_type_of(l->m, l->s, l->v, types + 160, 160),
                            .out_elem = fedc__mlir_elem(type_of(l, l->v)->dtype), .result_name = name(l, l->v)};
    g.init = fedc__mlir_splat(l->m, l->s, l->v, 0, init);
    fedc__mlir_generic_begin(l->m, &g);
    body_one_hot(l, result);
    fedc__mlir_generic_end(l->m, &g, result);
    return l->m->st;
}

/* argmax along `axis`: the maximum first, then the least position holding it (so
 * the first maximum wins, as in fedc; a NaN maximum gives the axis' length). */
fedc_status fedc__lower_argmax(const lower *l) {
    fedc_value x = l->n->in[0];
    const fedc_type *xt = type_of(l, x);
    bool c = clients(l, x);
    int ax = fedc__axis(fedc__attr_int(l->n, FEDC_ATTR_AXIS, -1), xt->rank) + c, loops = xt->rank + c;
    fedc_type rows = *type_of(l, l->v);
    rows.dtype = xt->dtype;
    char mx_type[160], mx[24], xmap[160], rmap[160] = {0}, iters[16] = {0}, xtype[160], out_type[160], init[24], lit[32];
    fedc__mlir_tensor(l->m, &rows, c, mx_type, sizeof mx_type);
    if (fedc__mlir_reduce(l, x, 1u << ax, false, true, fedc__mlir_tmp(l->m, mx), mx_type)) return l->m->st;
    for (int i = 0; i < loops; i++) {
        iters[i] = i == ax ? 'r' : 'p';
        if (i != ax) add_loop(rmap, sizeof rmap, i);
    }
    identity_map(loops, xmap, sizeof xmap);
    const char *elem = fedc__mlir_elem(xt->dtype);
    fedc__mlir_generic g = {.rank = loops, .iters = iters, .nin = 2, .in = {name(l, x), mx},
                            .in_type = {fedc__mlir_type_of(l->m, l->s, x, xtype, sizeof xtype), mx_type},
                            .in_elem = {elem, elem}, .maps = {xmap, rmap}, .out_map = rmap,
                            .out_type = fedc__mlir_type_of(l->m, l->s, l->v, out_type, sizeof out_type),
                            .out_elem = "i32", .result_name = name(l, l->v)};
    fedc__mlir_tensor_const(l->m, init, fedc__mlir_literal(FEDC_I32, (double)xt->dims[ax - c], lit, sizeof lit), out_type);
    g.init = init;
    fedc__mlir_generic_begin(l->m, &g);
    char ii[24], eq[24], lt[24], both[24], r[24];
    loop_index_i32(l, ax, ii);
    fedc__mlir_tmp(l->m, eq);
    fedc__mlir_printf(l->m, "      %s = %s, %%in0, %%in1 : %s\n", eq, fedc_dtype_is_float(xt->dtype) ? "arith.cmpf oeq" : "arith.cmpi eq",
                      elem);
    fedc__mlir_tmp(l->m, lt);
    fedc__mlir_printf(l->m, "      %s = arith.cmpi slt, %s, %%out : i32\n", lt, ii);
    emit2(l, "arith.andi", eq, lt, "i1", both);
    fedc__mlir_tmp(l->m, r);
    fedc__mlir_printf(l->m, "      %s = arith.select %s, %s, %%out : i32\n", r, both, ii);
    fedc__mlir_generic_end(l->m, &g, r);
    return l->m->st;
}

/* y[c?, r, w...] = sum over i... with idx[c?, i...] = r of updates[c?, i..., w...]:
 * loops r, w... then the index positions i... as reductions, in their order. */
fedc_status fedc__lower_scatter_add(const lower *l) {
    fedc_value up = l->n->in[0], ix = l->n->in[1];
    const fedc_type *it = type_of(l, ix), *yt = type_of(l, l->v);
    bool c = clients(l, l->v);
    int width = yt->rank - 1, loops = c + yt->rank + it->rank, first_i = c + yt->rank;
    char iters[16] = {0}, umap[160] = {0}, imap[160] = {0}, out_map[160], ut[160], itype[160], out_type[160], init[24];
    for (int i = 0; i < loops; i++) iters[i] = i < first_i ? 'p' : 'r';
    if (c) add_loop(umap, sizeof umap, 0), add_loop(imap, sizeof imap, 0);
    for (int i = 0; i < it->rank; i++) add_loop(umap, sizeof umap, first_i + i), add_loop(imap, sizeof imap, first_i + i);
    for (int i = 0; i < width; i++) add_loop(umap, sizeof umap, c + 1 + i);
    identity_map(c + yt->rank, out_map, sizeof out_map);
    const char *elem = fedc__mlir_elem(yt->dtype);
    fedc__mlir_generic g = {.rank = loops, .iters = iters, .nin = 2, .in = {name(l, up), name(l, ix)},
                            .in_type = {fedc__mlir_type_of(l->m, l->s, up, ut, sizeof ut),
                                        fedc__mlir_type_of(l->m, l->s, ix, itype, sizeof itype)},
                            .in_elem = {elem, "i32"}, .maps = {umap, imap}, .out_map = out_map,
                            .out_type = fedc__mlir_type_of(l->m, l->s, l->v, out_type, sizeof out_type),
                            .out_elem = elem, .result_name = name(l, l->v)};
    g.init = fedc__mlir_splat(l->m, l->s, l->v, 0, init);
    fedc__mlir_generic_begin(l->m, &g);
    char ri[24], hit[24], zero[24], sel[24], r[24];
    loop_index_i32(l, c, ri);
    fedc__mlir_tmp(l->m, hit);
    fedc__mlir_printf(l->m, "      %s = arith.cmpi eq, %%in1, %s : i32\n", hit, ri);
    fedc__mlir_tmp(l->m, sel);
    fedc__mlir_printf(l->m, "      %s = arith.select %s, %%in0, %s : %s\n", sel, hit, constant(l, 0, yt->dtype, zero), elem);
    emit2(l, "arith.addf", "%out", sel, elem, r);
    fedc__mlir_generic_end(l->m, &g, r);
    return l->m->st;
}

/* ------------------------------------------------------------- matmul -- */

/* y[..., i, j] = sum_k a[..., i, k] b[..., k, j] (either transposed), a rank-2
 * operand shared by every batch entry; loops: clients, batch..., i, j, k. */
fedc_status fedc__lower_matmul(const lower *l) {
    fedc_value a = l->n->in[0], b = l->n->in[1];
    const fedc_type *t = type_of(l, l->v), *ta = type_of(l, a), *tb = type_of(l, b);
    bool c = clients(l, l->v);
    int lead = c, batch = t->rank - 2, loops = lead + t->rank + 1;
    int I = lead + batch, J = I + 1, K = J + 1;
    bool tra = fedc__attr_int(l->n, FEDC_ATTR_TRANSPOSE_A, 0), trb = fedc__attr_int(l->n, FEDC_ATTR_TRANSPOSE_B, 0);
    char amap[160] = {0}, bmap[160] = {0}, out_map[160], iters[16] = {0}, at[160], bt[160], ot[160], init[24], p[24],
         r[24];
    for (int i = 0; i < loops; i++) iters[i] = i == K ? 'r' : 'p';
    for (int w = 0; w < 2; w++) {
        const fedc_type *tw = w ? tb : ta;
        char *map = w ? bmap : amap;
        if (c && clients(l, w ? b : a)) add_loop(map, 160, 0);
        for (int i = 0; i < tw->rank - 2; i++) add_loop(map, 160, lead + i);
        int row = w ? K : I, col = w ? J : K;
        bool tr = w ? trb : tra;
        add_loop(map, 160, tr ? col : row);
        add_loop(map, 160, tr ? row : col);
    }
    out_map[0] = 0;
    for (int i = 0; i < loops - 1; i++) add_loop(out_map, sizeof out_map, i);
    const char *elem = fedc__mlir_elem(t->dtype);
    fedc__mlir_generic g = {.rank = loops, .iters = iters, .nin = 2, .in = {name(l, a), name(l, b)},
                            .in_type = {fedc__mlir_type_of(l->m, l->s, a, at, sizeof at),
                                        fedc__mlir_type_of(l->m, l->s, b, bt, sizeof bt)},
                            .in_elem = {elem, elem}, .maps = {amap, bmap}, .out_map = out_map,
                            .out_type = fedc__mlir_type_of(l->m, l->s, l->v, ot, sizeof ot), .out_elem = elem,
                            .result_name = name(l, l->v)};
    g.init = fedc__mlir_splat(l->m, l->s, l->v, 0, init);
    fedc__mlir_generic_begin(l->m, &g);
    emit2(l, "arith.addf", "%out", emit2(l, "arith.mulf", "%in0", "%in1", elem, p), elem, r);
    fedc__mlir_generic_end(l->m, &g, r);
    return l->m->st;
}
