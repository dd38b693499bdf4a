/* The fold's loop and steps in MLIR (spelling.h; the algorithm is control.c's):
 * an scf.for over the sequences' steps whose iter_args are the carries and the
 * stacked outputs (sharded: the steps written out, control.c), each step's
 * row, flag, reads and writes linalg.generics. Inside a map every client has its
 * own length: the row index and the "still running" flag are [clients]
 * tensors read through the clients loop. */
#include <string.h>

#include "export/mlir_lower.h"
#include "export/spelling.h"

/* The type of stacked output j: [clients?, steps, ...y]. */
static const char *stacked_type(const lower *l, const fedc__fold_loop *f, int j, char *buf) {
    return fedc__mlir_stacked_type(l->m, f->body, f->k + j, f->steps, f->c, buf);
}

/* `name = arith.constant dense<0> : tensor of t` (zero in t's dtype). */
static void zeros_of(const lower *l, const fedc_type *t, const char *type, char *name) {
    char lit[32];
    fedc__mlir_tensor_const(l->m, name, fedc__mlir_literal(t->dtype, 0, lit, sizeof lit), type);
}

/* A generic over [clients?] (or no loop) computing one i32 or i1 per client from
 * the length and the step %ti: the row index, or whether the client still runs. */
static const char *per_client(const lower *l, const fedc__fold_loop *f, bool flag, char *out) {
    char init[24], r[24], one[24], a[24], b[24], zero[24];
    const char *type = flag ? f->flag_type : f->len_type;
    fedc__mlir_tensor_const(l->m, init, flag ? "false" : "0", type);
    fedc__mlir_generic g = {.rank = f->c, .iters = "p", .nin = 1, .in = {f->len}, .in_type = {f->len_type},
                            .in_elem = {"i32"}, .maps = {f->c ? "d0" : ""}, .out_map = f->c ? "d0" : "",
                            .out_type = type, .out_elem = flag ? "i1" : "i32", .init = init,
                            .result_name = fedc__mlir_tmp(l->m, out)};
    fedc__mlir_generic_begin(l->m, &g);
    char step[24];
    const char *ti = f->unrolled ? constant(l, (double)f->step, FEDC_I32, step) : f->ti; /* no constant outside */
    fedc__mlir_tmp(l->m, a);
    fedc__mlir_printf(l->m, "      %s = arith.cmpi slt, %s, %%in0 : i32\n", a, ti); /* t < length */
    if (flag) {
        fedc__mlir_generic_end(l->m, &g, a);
        return out;
    }
    const char *row = ti;
    if (f->reverse) { /* length - 1 - t */
        emit2(l, "arith.subi", emit2(l, "arith.subi", "%in0", constant(l, 1, FEDC_I32, one), "i32", b), ti, "i32", r);
        row = r;
    }
    fedc__mlir_tmp(l->m, b);
    fedc__mlir_printf(l->m, "      %s = arith.select %s, %s, %s : i32\n", b, a, row, constant(l, 0, FEDC_I32, zero));
    fedc__mlir_generic_end(l->m, &g, b);
    return out;
}

/* x_t[c?, ...] = xs[c?, row[c?], ...]: one step's slice of sequence i. */
static const char *step_slice(const lower *l, const fedc__fold_loop *f, int i, const char *row, char *out) {
    fedc_value xs = l->n->in[f->k + i], x = fedc_program_input(f->body, f->k + i);
    const fedc_type *xt = fedc__fold_body_type(f, x);
    int loops = xt->rank + f->c;
    char type[160], xs_type[160], map[160], init[24], idx[FEDC_MAX_RANK + 2][24], at[FEDC_MAX_RANK + 2][24], k[24],
        v[24];
    fedc__mlir_tensor(l->m, xt, f->c, type, sizeof type);
    identity_map(loops, map, sizeof map);
    zeros_of(l, xt, type, init);
    fedc__mlir_generic g = {.rank = loops, .iters = "pppppppp", .nin = 1, .in = {row}, .in_type = {f->len_type},
                            .in_elem = {"i32"}, .maps = {f->c ? "d0" : ""}, .out_map = map, .out_type = type,
                            .out_elem = fedc__mlir_elem(xt->dtype), .init = init, .result_name = fedc__mlir_tmp(l->m, out)};
    fedc__mlir_generic_begin(l->m, &g);
    fedc__mlir_loop_indices(l, loops, idx);
    int n = 0;
    if (f->c) snprintf(at[n++], 24, "%s", idx[0]);
    snprintf(at[n++], 24, "%s", fedc__mlir_clamped_index(l, "%in0", f->steps, k));
    for (int d = 0; d < xt->rank; d++) snprintf(at[n++], 24, "%s", idx[f->c + d]);
    fedc__mlir_extract(l, name(l, xs), fedc__mlir_type_of(l->m, l->s, xs, xs_type, sizeof xs_type), at, n,
                       fedc__mlir_tmp(l->m, v));
    fedc__mlir_generic_end(l->m, &g, v);
    return out;
}

/* new where the client still runs, else old (a carry that stops changing). */
static const char *keep_running(const lower *l, const fedc__fold_loop *f, const fedc_type *t, const char *flag, const char *next,
                                const char *old, char *out) {
    int loops = t->rank + f->c;
    char type[160], map[160], init[24], r[24];
    fedc__mlir_tensor(l->m, t, f->c, type, sizeof type);
    identity_map(loops, map, sizeof map);
    zeros_of(l, t, type, init);
    const char *elem = fedc__mlir_elem(t->dtype);
    fedc__mlir_generic g = {.rank = loops, .iters = "pppppppp", .nin = 3, .in = {flag, next, old},
                            .in_type = {f->flag_type, type, type}, .in_elem = {"i1", elem, elem},
                            .maps = {f->c ? "d0" : "", map, map}, .out_map = map, .out_type = type, .out_elem = elem,
                            .init = init, .result_name = fedc__mlir_tmp(l->m, out)};
    fedc__mlir_generic_begin(l->m, &g);
    fedc__mlir_tmp(l->m, r);
    fedc__mlir_printf(l->m, "      %s = arith.select %%in0, %%in1, %%in2 : %s\n", r, elem);
    fedc__mlir_generic_end(l->m, &g, r);
    return out;
}

/* ys[c?, s, ...] = (s == row[c?] && running[c?]) ? y[c?, ...] : ys[c?, s, ...]. */
static const char *write_row(const lower *l, const fedc__fold_loop *f, int j, const char *flag, const char *row, const char *y,
                             const char *ys, char *out) {
    const fedc_type *yt = fedc__fold_body_type(f, f->body->outputs[f->k + j].value);
    int loops = yt->rank + 1 + f->c, s = f->c;
    char type[160], ytype[160], all[160], ymap[160] = {0}, cmap[8], init[24], si[24], hit[24], both[24], r[24];
    stacked_type(l, f, j, type);
    fedc__mlir_tensor(l->m, yt, f->c, ytype, sizeof ytype);
    identity_map(loops, all, sizeof all);
    for (int i = 0; i < loops; i++)
        if (i != s) add_loop(ymap, sizeof ymap, i);
    snprintf(cmap, sizeof cmap, "%s", f->c ? "d0" : "");
    zeros_of(l, yt, type, init);
    const char *elem = fedc__mlir_elem(yt->dtype);
    fedc__mlir_generic g = {.rank = loops, .iters = "pppppppp", .nin = 4, .in = {ys, y, row, flag},
                            .in_type = {type, ytype, f->len_type, f->flag_type}, .in_elem = {elem, elem, "i32", "i1"},
                            .maps = {all, ymap, cmap, cmap}, .out_map = all, .out_type = type, .out_elem = elem,
                            .init = init, .result_name = fedc__mlir_tmp(l->m, out)};
    fedc__mlir_generic_begin(l->m, &g);
    loop_index_i32(l, s, si);
    fedc__mlir_tmp(l->m, hit);
    fedc__mlir_printf(l->m, "      %s = arith.cmpi eq, %s, %%in2 : i32\n", hit, si);
    emit2(l, "arith.andi", hit, "%in3", "i1", both);
    fedc__mlir_tmp(l->m, r);
    fedc__mlir_printf(l->m, "      %s = arith.select %s, %%in1, %%in0 : %s\n", r, both, elem);
    fedc__mlir_generic_end(l->m, &g, r);
    return out;
}

static void zeros(const lower *l, const fedc__fold_loop *f, int j, char *out) {
    char type[160];
    zeros_of(l, fedc__fold_body_type(f, f->body->outputs[f->k + j].value), stacked_type(l, f, j, type), out);
}

static void row_and_flag(const lower *l, fedc__fold_loop *f, bool flag, bool row) {
    if (flag) per_client(l, f, true, f->flag);
    if (row) per_client(l, f, false, f->row);
}

static void read_row(const lower *l, const fedc__fold_loop *f, int i, char *out) { step_slice(l, f, i, f->row, out); }

static void keep_step(const lower *l, const fedc__fold_loop *f, int i, const char *value, const char *old, char *out) {
    keep_running(l, f, fedc__fold_body_type(f, f->body->outputs[i].value), f->flag, value, old, out);
}

static void write_step(const lower *l, const fedc__fold_loop *f, int j, const char *value, const char *old, char *out) {
    write_row(l, f, j, f->flag, f->row, value, old, out);
}

static void loop_begin(const lower *l, fedc__fold_loop *f, int n, const char *const *inits, const char *const *types,
                       char (*iter)[24]) {
    fedc__mlir_for_begin(l->m, f->steps, n, inits, types, f->result, f->t, f->ti, iter);
}

static void loop_end(const lower *l, const fedc__fold_loop *f, int n, char (*next)[24], const char *const *types) {
    (void)f;
    fedc__mlir_for_end(l->m, n, next, types);
}

static void result(const fedc__fold_loop *f, int k, char *name, size_t size) { snprintf(name, size, "%s#%d", f->result, k); }

const fedc__fold_spelling fedc__mlir_fold_spelling = {
    .loop_begin = loop_begin, .zeros = zeros, .row_and_flag = row_and_flag, .read_row = read_row, .keep = keep_step,
    .write = write_step, .loop_end = loop_end, .result = result,
};
