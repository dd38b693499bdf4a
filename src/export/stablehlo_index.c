/* The indexing ops in StableHLO: argmax as a two-operand reduce (value and
 * position; a tie keeps the lower position, as fedc), gather and scatter_add as
 * stablehlo.gather / stablehlo.scatter with their dimension numbers, the
 * clients axis a batching dim of both operands. StableHLO clamps a gather's
 * indices (the nearest row, as the MLIR export reads) and drops a scatter's
 * out of range, where fedc fails; a scatter's sums may run in any order, so
 * they agree with fedc's within rounding. */
#include <math.h>
#include <string.h>

#include "export/stablehlo.h"

/* "[a, b]" of the n values from `first` on. */
static const char *run(int first, int n, char *buf) {
    size_t k = (size_t)snprintf(buf, 80, "[");
    for (int i = 0; i < n && k < 80; i++) k += (size_t)snprintf(buf + k, 80 - k, "%s%d", i ? ", " : "", first + i);
    if (k < 80) snprintf(buf + k, 80 - k, "]");
    return buf;
}

fedc_status fedc__shlo_argmax(const lower *l) {
    fedc_value x = l->n->in[0];
    const fedc_type *t = type_of(l, x);
    int c = lead(l, x), ax = fedc__axis(fedc__attr_int(l->n, FEDC_ATTR_AXIS, 0), t->rank) + c;
    fedc_type it = *t, vt_ = *type_of(l, l->v);
    it.dtype = FEDC_I32, vt_.dtype = t->dtype;
    char xt[160], itt[160], vt[160], ot[160], st[64], io[24], v0[24], i0[24], r[24], attr[64];
    const char *elem = fedc__mlir_elem(t->dtype);
    snprintf(st, sizeof st, "tensor<%s>", elem);
    type_str(l, x, xt), type_str(l, l->v, ot);
    fedc__mlir_tensor(l->m, &it, c, itt, sizeof itt), fedc__mlir_tensor(l->m, &vt_, c, vt, sizeof vt);
    snprintf(attr, sizeof attr, "iota_dimension = %d : i64", ax);
    fedc__shlo_op(l->m, fedc__mlir_tmp(l->m, io), "stablehlo.iota", attr, 0, NULL, NULL, itt);
    fedc__shlo_splat(l->m, t->dtype, -INFINITY, st, v0);
    fedc__shlo_splat(l->m, FEDC_I32, 0, "tensor<i32>", i0);
    char av[24], ai[24], bv[24], bi[24], gt[24], eq[24], lt[24], tie[24], take[24], sv[24], si[24], cmp[160];
    fedc__mlir_tmp(l->m, r), fedc__mlir_tmp(l->m, av), fedc__mlir_tmp(l->m, ai), fedc__mlir_tmp(l->m, bv),
        fedc__mlir_tmp(l->m, bi);
    fedc__mlir_printf(l->m, "    %s:2 = \"stablehlo.reduce\"(%s, %s, %s, %s) ({\n    ^bb0(%s: %s, %s: tensor<i32>, %s: %s, %s: "
                      "tensor<i32>):\n", r, name(l, x), io, v0, i0, av, st, ai, bv, st, bi);
    static const char *const cmp_fmt = "comparison_direction = #stablehlo<comparison_direction %s>, compare_type = "
                                       "#stablehlo<comparison_type %s>";
    const char *kind = t->dtype == FEDC_I32 ? "SIGNED" : "FLOAT";
    snprintf(cmp, sizeof cmp, cmp_fmt, "GT", kind);
    fedc__shlo_op(l->m, fedc__mlir_tmp(l->m, gt), "stablehlo.compare", cmp, 2, (const char *[]){av, bv}, (const char *[]){st, st},
                  "tensor<i1>");
    snprintf(cmp, sizeof cmp, cmp_fmt, "EQ", kind);
    fedc__shlo_op(l->m, fedc__mlir_tmp(l->m, eq), "stablehlo.compare", cmp, 2, (const char *[]){av, bv}, (const char *[]){st, st},
                  "tensor<i1>");
    snprintf(cmp, sizeof cmp, cmp_fmt, "LT", "SIGNED");
    fedc__shlo_op(l->m, fedc__mlir_tmp(l->m, lt), "stablehlo.compare", cmp, 2, (const char *[]){ai, bi},
                  (const char *[]){"tensor<i32>", "tensor<i32>"}, "tensor<i1>");
    op2(l, fedc__mlir_tmp(l->m, tie), "stablehlo.and", "", eq, lt, "tensor<i1>", "tensor<i1>");
    op2(l, fedc__mlir_tmp(l->m, take), "stablehlo.or", "", gt, tie, "tensor<i1>", "tensor<i1>");
    fedc__shlo_op(l->m, fedc__mlir_tmp(l->m, sv), "stablehlo.select", "", 3, (const char *[]){take, av, bv},
                  (const char *[]){"tensor<i1>", st, st}, st);
    fedc__shlo_op(l->m, fedc__mlir_tmp(l->m, si), "stablehlo.select", "", 3, (const char *[]){take, ai, bi},
                  (const char *[]){"tensor<i1>", "tensor<i32>", "tensor<i32>"}, "tensor<i32>");
    fedc__mlir_printf(l->m, "      \"stablehlo.return\"(%s, %s) : (%s, tensor<i32>) -> ()\n    }) {dimensions = array<i64: %d>} "
                      ": (%s, %s, %s, tensor<i32>) -> (%s, %s)\n", sv, si, st, ax, xt, itt, st, vt, ot);
    snprintf(out_name(l), sizeof l->s->name[0], "%s#1", r);
    return l->m->st;
}

/* The indices with a trailing dim of 1 (StableHLO's index vector), into out. */
static const char *index_vector(const lower *l, fedc_value ix, char *type, char *out) {
    fedc_type t = *type_of(l, ix);
    t.dims[t.rank++] = 1;
    char it[160];
    fedc__mlir_tensor(l->m, &t, lead(l, ix), type, 160);
    op1(l, fedc__mlir_tmp(l->m, out), "stablehlo.reshape", "", name(l, ix), type_str(l, ix, it), type);
    return out;
}

/* y[c?, i..., w...] = table[c?, idx[c?, i...], w...]. */
fedc_status fedc__shlo_gather(const lower *l) {
    fedc_value table = l->n->in[0], ix = l->n->in[1];
    const fedc_type *tt = type_of(l, table);
    int c = lead(l, table), ni = type_of(l, ix)->rank, nw = tt->rank - 1;
    char tts[160], its[160], vt[160], iv[24], attr[1000], offs[80], sizes[160], one[80], coll[80];
    index_vector(l, ix, its, iv);
    int64_t slice[FEDC_MAX_RANK + 1];
    int k = 0;
    if (c) slice[k++] = 1;
    slice[k++] = 1;
    for (int d = 1; d < tt->rank; d++) slice[k++] = tt->dims[d];
    snprintf(attr, sizeof attr, "dimension_numbers = #stablehlo.gather<offset_dims = %s, collapsed_slice_dims = %s, "
             "%s%sstart_index_map = %s, index_vector_dim = %d>, indices_are_sorted = false, slice_sizes = %s",
             run(c + ni, nw, offs), run(c, 1, coll), c ? "operand_batching_dims = [0], " : "",
             c ? "start_indices_batching_dims = [0], " : "", run(c, 1, one), c + ni, i64s(slice, k, sizes));
    fedc__shlo_op(l->m, out_name(l), "stablehlo.gather", attr, 2, (const char *[]){name(l, table), iv},
                  (const char *[]){type_str(l, table, tts), its}, type_str(l, l->v, vt));
    return l->m->st;
}

/* out[c?, n, w...] = sum over i of up[c?, i..., w...] where idx[c?, i...] = n. */
fedc_status fedc__shlo_scatter_add(const lower *l) {
    fedc_value up = l->n->in[0], ix = l->n->in[1];
    const fedc_type *y = type_of(l, l->v);
    int c = lead(l, up), ni = type_of(l, ix)->rank, nw = y->rank - 1;
    char ut[160], its[160], vt[160], st[64], iv[24], z[24], a[24], b[24], r[24], attr[1000], win[80], ins[80], map[80];
    index_vector(l, ix, its, iv);
    type_str(l, l->v, vt);
    fedc__shlo_splat(l->m, y->dtype, 0, vt, z);
    snprintf(st, sizeof st, "tensor<%s>", fedc__mlir_elem(y->dtype));
    snprintf(attr, sizeof attr, "indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<"
             "update_window_dims = %s, inserted_window_dims = %s, %s%sscatter_dims_to_operand_dims = %s, index_vector_dim = "
             "%d>, unique_indices = false", run(c + ni, nw, win), run(c, 1, ins), c ? "input_batching_dims = [0], " : "",
             c ? "scatter_indices_batching_dims = [0], " : "", run(c, 1, map), c + ni);
    fedc__mlir_tmp(l->m, a), fedc__mlir_tmp(l->m, b), fedc__mlir_tmp(l->m, r);
    fedc__mlir_printf(l->m, "    %s = \"stablehlo.scatter\"(%s, %s, %s) ({\n    ^bb0(%s: %s, %s: %s):\n", out_name(l), z, iv,
                      name(l, up), a, st, b, st);
    op2(l, r, "stablehlo.add", "", a, b, st, st);
    fedc__mlir_printf(l->m, "      \"stablehlo.return\"(%s) : (%s) -> ()\n    }) {%s} : (%s, %s, %s) -> %s\n", r, st, attr, vt,
                      its, type_str(l, up, ut), vt);
    return l->m->st;
}
