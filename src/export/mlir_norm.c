/* Layer norm over the last axis, as fedc computes it: per row, mean = sum(x) / C,
 * var = sum((x - mean)^2) / C (two passes), rstd = 1 / sqrt(var + eps); then
 * y = xhat gamma + beta with xhat = (x - mean) rstd; its input gradient, with
 * g = dy gamma, is rstd (g - mean(g) - xhat mean(g xhat)); its parameter gradient
 * is [sum over rows of dy xhat; sum over rows of dy]. Each pass is a
 * linalg.generic over x's shape whose operands are x-shaped (FULL), one value per
 * row (ROW) or one per column (COL: gamma, beta, the parameter sums). */
#include <string.h>

#include "export/mlir_lower.h"

typedef enum shape_kind { FULL, ROW, COL } shape_kind;

/* An operand of a pass: its SSA name, its type and how it is read. */
typedef struct operand {
    char name[40], type[160];
    shape_kind kind;
    bool clients;
} operand;

/* What a pass computes: an x-shaped value, a sum per row, or a sum per column. */
typedef enum pass_kind { ELEMENTWISE, ROW_SUM, COLUMN_SUM } pass_kind;

typedef struct norm {
    const fedc_type *t; /* x's type */
    bool c;             /* the pass has the clients loop */
    int loops;
    double cols, eps;
    fedc_dtype dt;
    const char *elem;
    operand x;
} norm;

/* A pass in progress: the generic and the storage its fields point into. */
typedef struct pass {
    fedc__mlir_generic g;
    pass_kind kind;
    char maps[8][160], out_map[160], iters[16], init[24], result[40], out_type[160];
} pass;

static operand node_operand(const lower *l, fedc_value u, shape_kind kind) {
    operand o = {.kind = kind, .clients = clients(l, u)};
    snprintf(o.name, sizeof o.name, "%s", name(l, u));
    fedc__mlir_type_of(l->m, l->s, u, o.type, sizeof o.type);
    return o;
}

/* An operand the passes make: a per-row or per-column tensor, named fresh. */
static operand made_operand(const lower *l, const norm *nm, shape_kind kind) {
    operand o = {.kind = kind, .clients = nm->c};
    fedc_type t = *nm->t;
    if (kind == ROW) t.rank--;
    if (kind == COL) t = fedc_type_make(nm->dt, 1, &nm->t->dims[nm->t->rank - 1]);
    fedc__mlir_tensor(l->m, &t, nm->c, o.type, sizeof o.type);
    fedc__mlir_tmp(l->m, o.name);
    return o;
}

static void norm_init(const lower *l, norm *nm) {
    fedc_value x = l->n->in[0];
    nm->t = type_of(l, x), nm->c = clients(l, x), nm->dt = nm->t->dtype;
    nm->loops = nm->t->rank + nm->c;
    nm->cols = (double)nm->t->dims[nm->t->rank - 1];
    nm->eps = fedc__attr_float(l->n, FEDC_ATTR_EPS, 1e-5);
    nm->elem = fedc__mlir_elem(nm->dt);
    nm->x = node_operand(l, x, FULL);
}

static void map_of(const norm *nm, shape_kind kind, bool has_clients, char *buf) {
    int last = nm->loops - 1;
    buf[0] = 0;
    if (nm->c && has_clients) add_loop(buf, 160, 0);
    if (kind == COL) add_loop(buf, 160, last);
    else
        for (int i = nm->c; i < (kind == ROW ? last : nm->loops); i++) add_loop(buf, 160, i);
}

/* Begins a pass over x's shape reading `ops` (as %in0, ...) into `out`. */
static void pass_begin(const lower *l, const norm *nm, pass *p, pass_kind kind, const operand *ops, int n,
                       const operand *out) {
    int last = nm->loops - 1;
    p->kind = kind;
    for (int i = 0; i < nm->loops; i++)
        p->iters[i] = (kind == ROW_SUM && i == last) || (kind == COLUMN_SUM && i >= nm->c && i < last) ? 'r' : 'p';
    p->iters[nm->loops] = 0;
    map_of(nm, out->kind, true, p->out_map);
    snprintf(p->result, sizeof p->result, "%.39s", out->name);
    snprintf(p->out_type, sizeof p->out_type, "%.159s", out->type);
    fedc__mlir_tensor_const(l->m, p->init, "0.0", p->out_type);
    p->g = (fedc__mlir_generic){.rank = nm->loops, .iters = p->iters, .nin = n, .out_map = p->out_map,
                                .out_type = p->out_type, .out_elem = nm->elem, .init = p->init, .result_name = p->result};
    for (int i = 0; i < n; i++) {
        map_of(nm, ops[i].kind, ops[i].clients, p->maps[i]);
        p->g.in[i] = ops[i].name, p->g.in_type[i] = ops[i].type, p->g.in_elem[i] = nm->elem, p->g.maps[i] = p->maps[i];
    }
    fedc__mlir_generic_begin(l->m, &p->g);
}

/* Yields `value`, or for a sum %out + value. */
static void pass_end(const lower *l, const norm *nm, const pass *p, const char *value) {
    char r[24];
    if (p->kind != ELEMENTWISE) value = emit2(l, "arith.addf", "%out", value, nm->elem, r);
    fedc__mlir_generic_end(l->m, &p->g, value);
}

/* The row sums S = sum x and SS = sum (x - S/C)^2. */
static void row_stats(const lower *l, const norm *nm, operand *s, operand *ss) {
    pass p;
    char inv[24], mean[24], d[24], dd[24];
    *s = made_operand(l, nm, ROW), *ss = made_operand(l, nm, ROW);
    pass_begin(l, nm, &p, ROW_SUM, &nm->x, 1, s);
    pass_end(l, nm, &p, "%in0");
    operand ops[2] = {nm->x, *s};
    pass_begin(l, nm, &p, ROW_SUM, ops, 2, ss);
    emit2(l, "arith.mulf", "%in1", constant(l, 1.0 / nm->cols, nm->dt, inv), nm->elem, mean);
    emit2(l, "arith.subf", "%in0", mean, nm->elem, d);
    pass_end(l, nm, &p, emit2(l, "arith.mulf", d, d, nm->elem, dd));
}

/* In a body whose %in0, %in1, %in2 are x, S, SS: xhat, and rstd into `rstd`. */
static const char *xhat(const lower *l, const norm *nm, char *rstd, char *out) {
    char inv[24], mean[24], var[24], e[24], ve[24], sq[24], one[24], d[24];
    constant(l, 1.0 / nm->cols, nm->dt, inv);
    emit2(l, "arith.mulf", "%in1", inv, nm->elem, mean);
    emit2(l, "arith.mulf", "%in2", inv, nm->elem, var);
    emit2(l, "arith.addf", var, constant(l, nm->eps, nm->dt, e), nm->elem, ve);
    emit1(l, "math.sqrt", ve, nm->elem, sq);
    emit2(l, "arith.divf", constant(l, 1, nm->dt, one), sq, nm->elem, rstd);
    emit2(l, "arith.subf", "%in0", mean, nm->elem, d);
    return emit2(l, "arith.mulf", d, rstd, nm->elem, out);
}

/* y = xhat gamma + beta. */
fedc_status fedc__lower_layer_norm(const lower *l) {
    norm nm;
    norm_init(l, &nm);
    operand s, ss, y = node_operand(l, l->v, FULL);
    row_stats(l, &nm, &s, &ss);
    operand ops[5] = {nm.x, s, ss, node_operand(l, l->n->in[1], COL), node_operand(l, l->n->in[2], COL)};
    pass p;
    char rstd[24], xh[24], a[24], b[24];
    pass_begin(l, &nm, &p, ELEMENTWISE, ops, 5, &y);
    xhat(l, &nm, rstd, xh);
    pass_end(l, &nm, &p, emit2(l, "arith.addf", emit2(l, "arith.mulf", xh, "%in3", nm.elem, a), "%in4", nm.elem, b));
    return l->m->st;
}

/* dx = rstd (g - mean(g) - xhat mean(g xhat)), g = dy gamma: two more row sums. */
fedc_status fedc__lower_layer_norm_grad(const lower *l) {
    norm nm;
    norm_init(l, &nm);
    operand s, ss, dx = node_operand(l, l->v, FULL);
    row_stats(l, &nm, &s, &ss);
    operand gamma = node_operand(l, l->n->in[1], COL), dy = node_operand(l, l->n->in[2], FULL);
    operand mg = made_operand(l, &nm, ROW), mgx = made_operand(l, &nm, ROW);
    operand ops[7] = {nm.x, s, ss, gamma, dy, mg, mgx};
    pass p;
    char rstd[24], xh[24], g[24], gx[24], inv[24], m1[24], m2[24], t[24], u[24], v[24], w[24];
    for (int k = 0; k < 2; k++) { /* mg = sum g, mgx = sum g xhat */
        pass_begin(l, &nm, &p, ROW_SUM, ops, 5, k ? &mgx : &mg);
        emit2(l, "arith.mulf", "%in4", "%in3", nm.elem, g);
        if (k) xhat(l, &nm, rstd, xh);
        pass_end(l, &nm, &p, k ? emit2(l, "arith.mulf", g, xh, nm.elem, gx) : g);
    }
    pass_begin(l, &nm, &p, ELEMENTWISE, ops, 7, &dx);
    xhat(l, &nm, rstd, xh);
    emit2(l, "arith.mulf", "%in4", "%in3", nm.elem, g);
    constant(l, 1.0 / nm.cols, nm.dt, inv);
    emit2(l, "arith.mulf", "%in5", inv, nm.elem, m1);
    emit2(l, "arith.mulf", "%in6", inv, nm.elem, m2);
    emit2(l, "arith.subf", g, m1, nm.elem, t);
    emit2(l, "arith.subf", t, emit2(l, "arith.mulf", xh, m2, nm.elem, u), nm.elem, v);
    pass_end(l, &nm, &p, emit2(l, "arith.mulf", rstd, v, nm.elem, w));
    return l->m->st;
}

/* [2, C]: row 0 the sum over rows of dy xhat (d gamma), row 1 of dy (d beta). */
fedc_status fedc__lower_layer_norm_param_grad(const lower *l) {
    norm nm;
    norm_init(l, &nm);
    operand s, ss, dy = node_operand(l, l->n->in[1], FULL), sums[2] = {made_operand(l, &nm, COL), made_operand(l, &nm, COL)};
    row_stats(l, &nm, &s, &ss);
    operand ops[4] = {nm.x, s, ss, dy};
    pass p;
    char rstd[24], xh[24], d[24];
    for (int k = 0; k < 2; k++) {
        pass_begin(l, &nm, &p, COLUMN_SUM, ops, 4, &sums[k]);
        if (k == 0) xhat(l, &nm, rstd, xh);
        pass_end(l, &nm, &p, k == 0 ? emit2(l, "arith.mulf", "%in3", xh, nm.elem, d) : "%in3");
    }
    char zeros[24], row0[24], type[160];
    fedc__mlir_splat(l->m, l->s, l->v, 0, zeros);
    fedc__mlir_type_of(l->m, l->s, l->v, type, sizeof type);
    for (int k = 0; k < 2; k++) { /* insert each sum as row k */
        const char *into = k ? row0 : zeros, *result = k ? name(l, l->v) : fedc__mlir_tmp(l->m, row0);
        if (nm.c)
            fedc__mlir_printf(l->m, "    %s = tensor.insert_slice %s into %s[0, %d, 0] [%d, 1, %lld] [1, 1, 1] : %s into %s\n",
                              result, sums[k].name, into, k, l->m->clients, (long long)nm.cols, sums[k].type, type);
        else
            fedc__mlir_printf(l->m, "    %s = tensor.insert_slice %s into %s[%d, 0] [1, %lld] [1, 1] : %s into %s\n", result,
                              sums[k].name, into, k, (long long)nm.cols, sums[k].type, type);
    }
    return l->m->st;
}
