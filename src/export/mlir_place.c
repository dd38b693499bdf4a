/* Sharded placement: slice, pad and concat written as linalg.generic ops. LLVM 19 gives tensor.insert_slice and tensor.extract_slice
 * no sharding interface, so a sharded module writes each of them as a generic
 * over the result's shape that reads x by tensor.extract at (i - lo) and keeps
 * its init (%out) where that falls outside x. The result is annotated for its
 * users (split along the clients axis, or whole on every device): the generic's
 * only operand is its init, from which propagation could infer nothing. */
#include "export/mlir_lower.h"

const char *fedc__mlir_place_index(const lower *l, const char *i, int64_t lo, int64_t n, char *ok, char *out) {
    char k[24], t[24], z[24], top[24], ge[24], lt[24], a[24], b[24], lo_ok[24];
    fedc__mlir_printf(l->m, "      %s = arith.constant %lld : index\n", fedc__mlir_tmp(l->m, k), (long long)lo);
    emit2(l, "arith.subi", i, k, "index", t);
    fedc__mlir_printf(l->m, "      %s = arith.constant 0 : index\n", fedc__mlir_tmp(l->m, z));
    fedc__mlir_printf(l->m, "      %s = arith.constant %lld : index\n", fedc__mlir_tmp(l->m, top), (long long)n);
    fedc__mlir_printf(l->m, "      %s = arith.cmpi sge, %s, %s : index\n", fedc__mlir_tmp(l->m, ge), t, z);
    fedc__mlir_printf(l->m, "      %s = arith.cmpi slt, %s, %s : index\n", fedc__mlir_tmp(l->m, lt), t, top);
    emit2(l, "arith.andi", ge, lt, "i1", lo_ok);
    if (ok[0]) emit2(l, "arith.andi", ok, lo_ok, "i1", a), snprintf(ok, 24, "%s", a);
    else snprintf(ok, 24, "%s", lo_ok);
    char last[24];
    fedc__mlir_printf(l->m, "      %s = arith.constant %lld : index\n", fedc__mlir_tmp(l->m, last), (long long)(n - 1));
    emit2(l, "arith.minsi", emit2(l, "arith.maxsi", t, z, "index", b), last, "index", out);
    return out;
}

void fedc__mlir_place(const lower *l, const fedc__mlir_place_args *a, const char *result) {
    const fedc_type *xt = a->x_shape, *yt = a->y_shape;
    int c = a->clients, loops = c + yt->rank;
    bool annotate = c || yt->rank > 0; /* a rank-0 sharding cannot be written in LLVM 19 (docs/export.md) */
    char map[160], tmp[24], idx[FEDC_MAX_RANK + 1][24], at[FEDC_MAX_RANK + 1][24], ok[24] = "", v[24], r[24];
    identity_map(loops, map, sizeof map);
    const char *elem = fedc__mlir_elem(yt->dtype);
    fedc__mlir_generic g = {.rank = loops, .iters = "pppppppp", .out_map = map, .out_type = a->y_type,
                            .out_elem = elem, .init = a->into, .result_name = annotate ? fedc__mlir_tmp(l->m, tmp) : result};
    fedc__mlir_generic_begin(l->m, &g);
    fedc__mlir_loop_indices(l, loops, idx);
    if (c) snprintf(at[0], 24, "%s", idx[0]);
    for (int d = 0; d < yt->rank; d++) fedc__mlir_place_index(l, idx[c + d], a->lo[d], xt->dims[d], ok, at[c + d]);
    fedc__mlir_extract(l, a->x, a->x_type, at, loops, fedc__mlir_tmp(l->m, v));
    if (!ok[0]) snprintf(r, sizeof r, "%s", v); /* rank 0: nothing to place */
    else fedc__mlir_printf(l->m, "      %s = arith.select %s, %s, %%out : %s\n", fedc__mlir_tmp(l->m, r), ok, v, elem);
    fedc__mlir_generic_end(l->m, &g, r);
    if (annotate) fedc__mlir_annotate_result(l, tmp, result, a->y_type, c);
}

void fedc__mlir_annotate_result(const lower *l, const char *x, const char *result, const char *type, bool clients) {
    fedc__mlir_printf(l->m, "    %s = mesh.shard %s to <@clients_mesh, [[%s]]> annotate_for_users : %s\n", result, x,
                      clients ? "0" : "", type);
}
