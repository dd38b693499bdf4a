/* fold as stablehlo.while, as fedc runs it: the loop carries the step t, the
 * carries and the stacked outputs; each step reads row `row` of every sequence
 * (t, or length - 1 - t when reversed; per client inside a map), runs the body,
 * and keeps the new carries and writes row `row` of the outputs only while
 * t < length, so a client's carries stop at its length and the rows past it
 * stay zero. A row is read as a one-hot select summed over the steps (exact:
 * one term is not zero), so every client may read its own. */
#include <string.h>

#include "export/stablehlo.h"

typedef struct sfold {
    const fedc_program *body;
    int k, m, y, c; /* carries, sequences, stacked outputs; c: 1 when per client */
    int64_t steps;
    bool reverse;
    char row[24], flag[24]; /* this step's row and "still running", [clients] or scalar */
    char row_t[64], flag_t[64];
} sfold;

static const fedc_type *body_type(const sfold *f, fedc_value v) { return &f->body->nodes[v].type; }

/* The type of stacked output j, [clients?, steps, ...y]; into buf (of 160). */
static const char *stacked(const lower *l, const sfold *f, int j, char *buf) {
    return fedc__mlir_stacked_type(l->m, f->body, f->k + j, f->steps, f->c, buf);
}

/* (s == row) along dim f->c of a tensor of type `type` (rank dims), and'ed with
 * the running flag when `running`: an i1 tensor, its type into bt. */
static const char *at_row(const lower *l, const sfold *f, const fedc_type *t, bool running, char *bt, char *out) {
    fedc_type it = *t, b = *t;
    it.dtype = FEDC_I32, b.dtype = FEDC_BOOL;
    char its[160], io[24], rb[24], eq[24], fb[24], attr[200];
    fedc__mlir_tensor(l->m, &it, f->c, its, sizeof its), fedc__mlir_tensor(l->m, &b, f->c, bt, 160);
    snprintf(attr, sizeof attr, "iota_dimension = %d : i64", f->c);
    fedc__shlo_op(l->m, fedc__mlir_tmp(l->m, io), "stablehlo.iota", attr, 0, NULL, NULL, its);
    snprintf(attr, sizeof attr, "broadcast_dimensions = array<i64%s>", f->c ? ": 0" : "");
    op1(l, fedc__mlir_tmp(l->m, rb), "stablehlo.broadcast_in_dim", attr, f->row, f->row_t, its);
    fedc__mlir_tmp(l->m, running ? eq : out);
    fedc__mlir_printf(l->m, "    %s = \"stablehlo.compare\"(%s, %s) {comparison_direction = #stablehlo<comparison_direction EQ>, "
                      "compare_type = #stablehlo<comparison_type SIGNED>} : (%s, %s) -> %s\n", running ? eq : out, io, rb,
                      its, its, bt);
    if (!running) return out;
    op1(l, fedc__mlir_tmp(l->m, fb), "stablehlo.broadcast_in_dim", attr, f->flag, f->flag_t, bt);
    op2(l, fedc__mlir_tmp(l->m, out), "stablehlo.and", "", eq, fb, bt, bt);
    return out;
}

/* x_t = sum over the steps of (s == row ? xs : 0): this step's row of xs. */
static void read_row(const lower *l, const sfold *f, const char *xs, const fedc_type *seq, const char *out_t, char *out) {
    char xt[160], bt[160], eq[24], z[24], sel[24], init[24], a[24], b[24], r[24], st[64];
    fedc__mlir_tensor(l->m, seq, f->c, xt, sizeof xt);
    at_row(l, f, seq, false, bt, eq);
    fedc__shlo_splat(l->m, seq->dtype, 0, xt, z);
    fedc__shlo_op(l->m, fedc__mlir_tmp(l->m, sel), "stablehlo.select", "", 3, (const char *[]){eq, xs, z},
                  (const char *[]){bt, xt, xt}, xt);
    snprintf(st, sizeof st, "tensor<%s>", fedc__mlir_elem(seq->dtype));
    fedc__shlo_splat(l->m, seq->dtype, 0, st, init);
    fedc__mlir_tmp(l->m, a), fedc__mlir_tmp(l->m, b), fedc__mlir_tmp(l->m, r), fedc__mlir_tmp(l->m, out);
    fedc__mlir_printf(l->m, "    %s = \"stablehlo.reduce\"(%s, %s) ({\n    ^bb0(%s: %s, %s: %s):\n", out, sel, init, a, st, b, st);
    op2(l, r, "stablehlo.add", "", a, b, st, st);
    fedc__mlir_printf(l->m, "      \"stablehlo.return\"(%s) : (%s) -> ()\n    }) {dimensions = array<i64: %d>} : (%s, %s) -> %s\n",
                      r, st, f->c, xt, st, out_t);
}

/* The step's row and flag from t and the lengths. */
static void row_and_flag(const lower *l, sfold *f, const char *t, const char *len) {
    char tb[24], one[24], lm[24], r[24], z[24], attr[200], ft[160];
    snprintf(attr, sizeof attr, "broadcast_dimensions = array<i64>");
    op1(l, fedc__mlir_tmp(l->m, tb), "stablehlo.broadcast_in_dim", attr, t, "tensor<i32>", f->row_t);
    fedc__mlir_tmp(l->m, f->flag);
    fedc__mlir_printf(l->m, "    %s = \"stablehlo.compare\"(%s, %s) {comparison_direction = #stablehlo<comparison_direction LT>, "
                      "compare_type = #stablehlo<comparison_type SIGNED>} : (%s, %s) -> %s\n", f->flag, tb, len, f->row_t,
                      f->row_t, f->flag_t);
    const char *row = tb;
    if (f->reverse) { /* length - 1 - t */
        fedc__shlo_splat(l->m, FEDC_I32, 1, f->row_t, one);
        op2(l, fedc__mlir_tmp(l->m, lm), "stablehlo.subtract", "", len, one, f->row_t, f->row_t);
        op2(l, row = fedc__mlir_tmp(l->m, r), "stablehlo.subtract", "", lm, tb, f->row_t, f->row_t);
    }
    fedc__shlo_splat(l->m, FEDC_I32, 0, f->row_t, z); /* a client past its length reads row 0, as fedc's index */
    snprintf(ft, sizeof ft, "%s", f->flag_t);
    fedc__mlir_tmp(l->m, f->row);
    fedc__shlo_op(l->m, f->row, "stablehlo.select", "", 3, (const char *[]){f->flag, row, z},
                  (const char *[]){ft, f->row_t, f->row_t}, f->row_t);
}

/* The while's types: t, then the carries, then the stacked outputs. */
static void print_types(const lower *l, const sfold *f) {
    char t[160];
    fedc__mlir_printf(l->m, "tensor<i32>");
    for (int i = 0; i < f->k; i++) fedc__mlir_printf(l->m, ", %s", type_str(l, l->n->in[i], t));
    for (int j = 0; j < f->y; j++) fedc__mlir_printf(l->m, ", %s", stacked(l, f, j, t));
}

/* The loop body: the step on block arguments %w<id>_0 (t), _1.. (carries, then ys). */
static fedc_status step(const lower *l, sfold *f, int id) {
    char t[24], len_name[40];
    snprintf(t, sizeof t, "%%w%d_0", id);
    snprintf(len_name, sizeof len_name, "%s", name(l, l->n->in[l->n->nin - 1]));
    row_and_flag(l, f, t, len_name);
    fedc__mlir_scope b;
    if (fedc__mlir_scope_init(&b, f->body, f->c != 0, l->m->tmp++)) return l->m->st = FEDC_ENOMEM;
    for (int i = 0; i < f->body->n; i++) snprintf(b.name[i], sizeof b.name[i], "%%s%d_%d", b.id, i);
    for (int i = 0; i < f->k; i++) snprintf(b.name[fedc_program_input(f->body, i)], sizeof b.name[0], "%%w%d_%d", id, 1 + i);
    for (int i = 0; i < f->m; i++) {
        fedc_type seq = *type_of(l, l->n->in[f->k + i]);
        seq.placement = FEDC_LOCAL;
        char xt[160];
        fedc_value x = fedc_program_input(f->body, f->k + i);
        read_row(l, f, name(l, l->n->in[f->k + i]), &seq, fedc__mlir_tensor(l->m, body_type(f, x), f->c, xt, sizeof xt),
                 b.name[x]);
    }
    fedc_status st = fedc__shlo_lower_scope(l->m, &b);
    char (*next)[24] = fedc__list(f->k + f->y + 1, sizeof *next);
    for (int i = 0; !st && next && i < f->k + f->y; i++) {
        char vt[160], bt[160], mask[24], yb[24], attr[200], old[40];
        bool carry = i < f->k;
        const fedc_type *bt_src = body_type(f, f->body->outputs[i].value);
        snprintf(old, sizeof old, "%%w%d_%d", id, 1 + i);
        if (carry) fedc__mlir_tensor(l->m, bt_src, f->c, vt, sizeof vt);
        else stacked(l, f, i - f->k, vt);
        fedc_type shape = *bt_src;
        if (!carry) { /* the stacked output's shape, for the mask */
            memmove(shape.dims + 1, shape.dims, sizeof shape.dims - sizeof shape.dims[0]);
            shape.dims[0] = f->steps, shape.rank++;
        }
        const char *value = b.name[f->body->outputs[i].value];
        if (carry) {
            fedc_type fb = shape;
            fb.dtype = FEDC_BOOL;
            fedc__mlir_tensor(l->m, &fb, f->c, bt, sizeof bt);
            snprintf(attr, sizeof attr, "broadcast_dimensions = array<i64%s>", f->c ? ": 0" : "");
            op1(l, fedc__mlir_tmp(l->m, mask), "stablehlo.broadcast_in_dim", attr, f->flag, f->flag_t, bt);
        } else {
            at_row(l, f, &shape, true, bt, mask);
            int64_t map[FEDC_MAX_RANK + 1];
            int n = 0;
            char list[160], yt[160];
            if (f->c) map[n++] = 0;
            for (int d = 0; d < bt_src->rank; d++) map[n++] = f->c + 1 + d;
            snprintf(attr, sizeof attr, "broadcast_dimensions = %s", i64s(map, n, list));
            op1(l, fedc__mlir_tmp(l->m, yb), "stablehlo.broadcast_in_dim", attr, value,
                fedc__mlir_tensor(l->m, bt_src, f->c, yt, sizeof yt), vt);
            value = yb;
        }
        fedc__shlo_op(l->m, fedc__mlir_tmp(l->m, next[i]), "stablehlo.select", "", 3, (const char *[]){mask, value, old},
                      (const char *[]){bt, vt, vt}, vt);
    }
    char one[24], t1[24];
    fedc__shlo_splat(l->m, FEDC_I32, 1, "tensor<i32>", one);
    op2(l, fedc__mlir_tmp(l->m, t1), "stablehlo.add", "", t, one, "tensor<i32>", "tensor<i32>");
    fedc__mlir_printf(l->m, "    \"stablehlo.return\"(%s", t1);
    for (int i = 0; next && i < f->k + f->y; i++) fedc__mlir_printf(l->m, ", %s", next[i]);
    fedc__mlir_printf(l->m, ") : (");
    print_types(l, f);
    fedc__mlir_printf(l->m, ") -> ()\n");
    fedc_free(next);
    fedc__mlir_scope_free(&b);
    return st ? st : l->m->st;
}

fedc_status fedc__shlo_fold(const lower *l) {
    sfold f = {.body = fedc__body(l->s->p, l->n), .k = (int)fedc__attr_int(l->n, FEDC_ATTR_CARRIES, 0)};
    f.m = l->n->nin - f.k - 1, f.y = f.body->noutputs - f.k;
    f.c = lead(l, l->n->in[l->n->nin - 1]);
    f.reverse = fedc__attr_int(l->n, FEDC_ATTR_REVERSE, 0) != 0;
    if (f.m == 0) return unsupported(l, "a fold without sequences");
    f.steps = type_of(l, l->n->in[f.k])->dims[0];
    snprintf(f.row_t, sizeof f.row_t, f.c ? "tensor<%dxi32>" : "tensor<i32>", l->m->clients);
    snprintf(f.flag_t, sizeof f.flag_t, f.c ? "tensor<%dxi1>" : "tensor<i1>", l->m->clients);
    int id = l->m->tmp++, n = 1 + f.k + f.y;
    char t0[24], result[24], (*zeros)[24] = fedc__list(f.y + 1, sizeof *zeros), type[160];
    if (!zeros) return l->m->st = FEDC_ENOMEM;
    fedc__shlo_splat(l->m, FEDC_I32, 0, "tensor<i32>", t0);
    for (int j = 0; j < f.y; j++)
        fedc__shlo_splat(l->m, body_type(&f, f.body->outputs[f.k + j].value)->dtype, 0, stacked(l, &f, j, type), zeros[j]);
    fedc__mlir_tmp(l->m, result);
    fedc__mlir_printf(l->m, "    %s:%d = \"stablehlo.while\"(%s", result, n, t0);
    for (int i = 0; i < f.k; i++) fedc__mlir_printf(l->m, ", %s", name(l, l->n->in[i]));
    for (int j = 0; j < f.y; j++) fedc__mlir_printf(l->m, ", %s", zeros[j]);
    fedc__mlir_printf(l->m, ") ({\n    ^bb0(");
    for (int pass = 0; pass < 2; pass++) { /* the condition's region, then the body's: the same block arguments */
        for (int i = 0; i < n; i++) {
            if (i == 0) fedc__mlir_printf(l->m, "%%w%d_0: tensor<i32>", id);
            else if (i <= f.k) fedc__mlir_printf(l->m, ", %%w%d_%d: %s", id, i, type_str(l, l->n->in[i - 1], type));
            else fedc__mlir_printf(l->m, ", %%w%d_%d: %s", id, i, stacked(l, &f, i - 1 - f.k, type));
        }
        fedc__mlir_printf(l->m, "):\n");
        if (pass == 1) break;
        char k[24], lt[24];
        fedc__shlo_splat(l->m, FEDC_I32, (double)f.steps, "tensor<i32>", k);
        fedc__mlir_tmp(l->m, lt);
        fedc__mlir_printf(l->m, "    %s = \"stablehlo.compare\"(%%w%d_0, %s) {comparison_direction = "
                          "#stablehlo<comparison_direction LT>, compare_type = #stablehlo<comparison_type SIGNED>} : "
                          "(tensor<i32>, tensor<i32>) -> tensor<i1>\n    \"stablehlo.return\"(%s) : (tensor<i1>) -> ()\n"
                          "    }, {\n    ^bb0(", lt, id, k, lt);
    }
    fedc_status st = step(l, &f, id);
    fedc__mlir_printf(l->m, "    }) : (");
    print_types(l, &f);
    fedc__mlir_printf(l->m, ") -> (");
    print_types(l, &f);
    fedc__mlir_printf(l->m, ")\n");
    for (fedc_value u = l->v + 1; !st && u < l->s->p->n; u++) { /* result k: the while's result 1 + k */
        const fedc__node *r = &l->s->p->nodes[u];
        if (r->op == FEDC_OP_RESULT && r->in[0] == l->v)
            snprintf(l->s->name[u], sizeof l->s->name[u], "%.23s#%d", result, 1 + (int)fedc__attr_int(r, FEDC_ATTR_INDEX, 0));
    }
    fedc_free(zeros);
    return st ? st : l->m->st;
}
