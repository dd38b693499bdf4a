/* The ops with bodies. A map is its body lowered along the clients axis. A fold
 * is an scf.for over the sequences' steps whose iter_args are the carries and
 * the stacked outputs; each step reads row idx of every sequence (t, or
 * length - 1 - t when reversed), runs the body, and keeps the new carries and
 * writes row idx of the outputs only while t < length, so rows past a client's
 * length stay zero and its carries stop changing, as fedc's fold does. Inside a
 * map every client has its own length: the row index and the "still running"
 * flag are per client, [clients] tensors read through the clients loop. */
#include <string.h>

#include "export/mlir_lower.h"

/* A scope over body b of node l->v, its values named %s<id>_<i>. */
static fedc_status body_scope(const lower *l, const fedc_program *b, bool batched, fedc__mlir_scope *s) {
    if (fedc__mlir_scope_init(s, b, batched, l->m->tmp++)) return l->m->st = FEDC_ENOMEM;
    for (int i = 0; i < b->n; i++) snprintf(s->name[i], sizeof s->name[i], "%%s%d_%d", s->id, i);
    return FEDC_OK;
}

/* The result nodes of l->v take the names out(k) writes into them. */
typedef void (*result_name_fn)(int k, const void *ctx, char *name, size_t size);
static void name_results(const lower *l, result_name_fn out, const void *ctx) {
    for (fedc_value u = l->v + 1; u < l->s->p->n; u++) {
        const fedc__node *r = &l->s->p->nodes[u];
        if (r->op != FEDC_OP_RESULT || r->in[0] != l->v) continue;
        out((int)fedc__attr_int(r, FEDC_ATTR_INDEX, 0), ctx, l->s->name[u], sizeof l->s->name[u]);
    }
}

/* Which results of l->v (its body's outputs) the scope needs, into wanted. */
static void wanted_results(const lower *l, bool *wanted, int n) {
    memset(wanted, 0, (size_t)n * sizeof *wanted);
    for (fedc_value u = l->v + 1; u < l->s->p->n; u++) {
        const fedc__node *r = &l->s->p->nodes[u];
        int k = (int)fedc__attr_int(r, FEDC_ATTR_INDEX, 0);
        if (r->op == FEDC_OP_RESULT && r->in[0] == l->v && k >= 0 && k < n && l->s->live[u]) wanted[k] = true;
    }
}

/* ---------------------------------------------------------------- map -- */

static void map_output(int k, const void *ctx, char *name, size_t size) {
    const fedc__mlir_scope *b = ctx;
    snprintf(name, size, "%s", b->name[b->p->outputs[k].value]);
}

fedc_status fedc__lower_map(const lower *l) {
    const fedc_program *body = fedc__body(l->s->p, l->n);
    fedc__mlir_scope b;
    bool *wanted = fedc__list(body->noutputs + 1, sizeof *wanted);
    if (!wanted) return l->m->st = FEDC_ENOMEM;
    if (body_scope(l, body, true, &b)) return fedc_free(wanted), l->m->st;
    wanted_results(l, wanted, body->noutputs);
    b.out_live = wanted;
    for (int i = 0; i < fedc_program_num_inputs(body); i++)
        snprintf(b.name[fedc_program_input(body, i)], sizeof b.name[0], "%s", name(l, l->n->in[i]));
    fedc_status st = fedc__mlir_lower_scope(l->m, &b);
    if (!st) name_results(l, map_output, &b);
    fedc__mlir_scope_free(&b);
    fedc_free(wanted);
    return st;
}

/* --------------------------------------------------------------- fold -- */

typedef struct fold {
    const fedc_program *body;
    int k, m, y;       /* carries, sequences, stacked outputs */
    int64_t steps;
    bool batched, reverse;
    char result[24];   /* the scf.for's name: %r#i is its i-th result */
    char t[24], ti[24]; /* the step, as an index and as an i32 */
    char len[24];      /* the lengths as a tensor (rank 0, or [clients]) */
    char len_type[64], flag_type[64];
    bool unrolled;     /* sharded: the steps written out, no scf.for */
    int64_t step;      /* unrolled: the step being written */
    char (*last)[24];  /* unrolled: the last step's carries and outputs */
    bool *needed;      /* unrolled: the body outputs a wanted result needs, now or at a later step */
    bool *wanted;      /* unrolled: the fold's results that its scope needs (the last step's outputs) */
    bool *body_live;   /* unrolled: the body's values this step's outputs need */
} fold;

/* Unrolled, the outputs that step f->step writes (NULL: all). */
static const bool *step_outputs(const fold *f) { return f->step == f->steps - 1 ? f->wanted : f->needed; }
static bool needed(const fold *f, int i) { return !step_outputs(f) || step_outputs(f)[i]; }
static bool input_live(const fold *f, int i) { return !f->body_live || f->body_live[fedc_program_input(f->body, i)]; }

static const fedc_type *body_type(const fold *f, fedc_value v) { return &f->body->nodes[v].type; }

/* The type of stacked output j: [clients?, steps, ...y]. */
static const char *stacked_type(const lower *l, const fold *f, int j, char *buf) {
    return fedc__mlir_stacked_type(l->m, f->body, f->k + j, f->steps, f->batched, buf);
}

/* `name = arith.constant dense<0> : tensor of t` (zero in t's dtype). */
static void zeros_of(const lower *l, const fedc_type *t, const char *type, char *name) {
    char lit[32];
    fedc__mlir_tensor_const(l->m, name, fedc__mlir_literal(t->dtype, 0, lit, sizeof lit), type);
}

/* A generic over [clients?] (or no loop) computing one i32 or i1 per client from
 * the length and the step %ti: the row index, or whether the client still runs. */
static const char *per_client(const lower *l, const fold *f, bool flag, char *out) {
    char init[24], r[24], one[24], a[24], b[24], zero[24];
    const char *type = flag ? f->flag_type : f->len_type;
    fedc__mlir_tensor_const(l->m, init, flag ? "false" : "0", type);
    fedc__mlir_generic g = {.rank = f->batched, .iters = "p", .nin = 1, .in = {f->len}, .in_type = {f->len_type},
                            .in_elem = {"i32"}, .maps = {f->batched ? "d0" : ""}, .out_map = f->batched ? "d0" : "",
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
static const char *step_slice(const lower *l, const fold *f, int i, const char *row, char *out) {
    fedc_value xs = l->n->in[f->k + i], x = fedc_program_input(f->body, f->k + i);
    const fedc_type *xt = body_type(f, x);
    int loops = xt->rank + f->batched;
    char type[160], xs_type[160], map[160], init[24], idx[FEDC_MAX_RANK + 2][24], at[FEDC_MAX_RANK + 2][24], k[24],
        v[24];
    fedc__mlir_tensor(l->m, xt, f->batched, type, sizeof type);
    identity_map(loops, map, sizeof map);
    zeros_of(l, xt, type, init);
    fedc__mlir_generic g = {.rank = loops, .iters = "pppppppp", .nin = 1, .in = {row}, .in_type = {f->len_type},
                            .in_elem = {"i32"}, .maps = {f->batched ? "d0" : ""}, .out_map = map, .out_type = type,
                            .out_elem = fedc__mlir_elem(xt->dtype), .init = init, .result_name = fedc__mlir_tmp(l->m, out)};
    fedc__mlir_generic_begin(l->m, &g);
    fedc__mlir_loop_indices(l, loops, idx);
    int n = 0;
    if (f->batched) snprintf(at[n++], 24, "%s", idx[0]);
    snprintf(at[n++], 24, "%s", fedc__mlir_clamped_index(l, "%in0", f->steps, k));
    for (int d = 0; d < xt->rank; d++) snprintf(at[n++], 24, "%s", idx[f->batched + d]);
    fedc__mlir_extract(l, name(l, xs), fedc__mlir_type_of(l->m, l->s, xs, xs_type, sizeof xs_type), at, n,
                       fedc__mlir_tmp(l->m, v));
    fedc__mlir_generic_end(l->m, &g, v);
    return out;
}

/* new where the client still runs, else old (a carry that stops changing). */
static const char *keep_running(const lower *l, const fold *f, const fedc_type *t, const char *flag, const char *next,
                                const char *old, char *out) {
    int loops = t->rank + f->batched;
    char type[160], map[160], init[24], r[24];
    fedc__mlir_tensor(l->m, t, f->batched, type, sizeof type);
    identity_map(loops, map, sizeof map);
    zeros_of(l, t, type, init);
    const char *elem = fedc__mlir_elem(t->dtype);
    fedc__mlir_generic g = {.rank = loops, .iters = "pppppppp", .nin = 3, .in = {flag, next, old},
                            .in_type = {f->flag_type, type, type}, .in_elem = {"i1", elem, elem},
                            .maps = {f->batched ? "d0" : "", map, map}, .out_map = map, .out_type = type, .out_elem = elem,
                            .init = init, .result_name = fedc__mlir_tmp(l->m, out)};
    fedc__mlir_generic_begin(l->m, &g);
    fedc__mlir_tmp(l->m, r);
    fedc__mlir_printf(l->m, "      %s = arith.select %%in0, %%in1, %%in2 : %s\n", r, elem);
    fedc__mlir_generic_end(l->m, &g, r);
    return out;
}

/* ys[c?, s, ...] = (s == row[c?] && running[c?]) ? y[c?, ...] : ys[c?, s, ...]. */
static const char *write_row(const lower *l, const fold *f, int j, const char *flag, const char *row, const char *y,
                             const char *ys, char *out) {
    const fedc_type *yt = body_type(f, f->body->outputs[f->k + j].value);
    int loops = yt->rank + 1 + f->batched, s = f->batched;
    char type[160], ytype[160], all[160], ymap[160] = {0}, cmap[8], init[24], si[24], hit[24], both[24], r[24];
    stacked_type(l, f, j, type);
    fedc__mlir_tensor(l->m, yt, f->batched, ytype, sizeof ytype);
    identity_map(loops, all, sizeof all);
    for (int i = 0; i < loops; i++)
        if (i != s) add_loop(ymap, sizeof ymap, i);
    snprintf(cmap, sizeof cmap, "%s", f->batched ? "d0" : "");
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

/* One step: the body on the carries and this step's slices, then the kept
 * carries and the written rows, yielded; unrolled (f->unrolled), they become
 * the next step's iter instead. */
static fedc_status fold_step(const lower *l, const fold *f, char (*iter)[24]) {
    char flag[24], row[24];
    if (!f->unrolled) fedc__mlir_printf(l->m, "      %s = arith.index_cast %s : index to i32\n", f->ti, f->t);
    if (f->unrolled) fedc__mlir_liveness(f->body, step_outputs(f), f->body_live, true);
    bool any_output = false, any_row = false;
    for (int i = 0; i < f->k + f->y; i++) any_output |= needed(f, i), any_row |= i >= f->k && needed(f, i);
    for (int i = 0; i < f->m; i++) any_row |= input_live(f, f->k + i);
    if (any_output) per_client(l, f, true, flag);
    if (any_row) per_client(l, f, false, row);
    fedc__mlir_scope b;
    if (body_scope(l, f->body, f->batched, &b)) return l->m->st;
    b.out_live = step_outputs(f);
    for (int i = 0; i < f->k; i++) snprintf(b.name[fedc_program_input(f->body, i)], sizeof b.name[0], "%s", iter[i]);
    for (int i = 0; i < f->m; i++)
        if (input_live(f, f->k + i)) step_slice(l, f, i, row, b.name[fedc_program_input(f->body, f->k + i)]);
    fedc_status st = fedc__mlir_lower_scope(l->m, &b);
    char (*next)[24] = fedc__list(f->k + f->y, sizeof *next);
    for (int i = 0; !st && next && i < f->k + f->y; i++) snprintf(next[i], 24, "%s", iter[i]); /* unneeded: unchanged */
    for (int i = 0; !st && next && i < f->k; i++)
        if (needed(f, i))
            keep_running(l, f, body_type(f, f->body->outputs[i].value), flag, b.name[f->body->outputs[i].value],
                         iter[i], next[i]);
    for (int j = 0; !st && next && j < f->y; j++)
        if (needed(f, f->k + j))
            write_row(l, f, j, flag, row, b.name[f->body->outputs[f->k + j].value], iter[f->k + j], next[f->k + j]);
    if (f->unrolled) {
        for (int i = 0; next && i < f->k + f->y; i++) snprintf(iter[i], 24, "%s", next[i]);
        fedc_free(next);
        fedc__mlir_scope_free(&b);
        return st ? st : next ? l->m->st : (l->m->st = FEDC_ENOMEM);
    }
    fedc__mlir_printf(l->m, "      scf.yield");
    for (int i = 0; next && i < f->k + f->y; i++) fedc__mlir_printf(l->m, "%s %s", i ? "," : "", next[i]);
    fedc__mlir_printf(l->m, " : ");
    for (int i = 0; next && i < f->k + f->y; i++) {
        char type[160];
        if (i < f->k) fedc__mlir_tensor(l->m, body_type(f, f->body->outputs[i].value), f->batched, type, sizeof type);
        else stacked_type(l, f, i - f->k, type);
        fedc__mlir_printf(l->m, "%s%s", i ? ", " : "", type);
    }
    fedc__mlir_printf(l->m, "\n");
    fedc_free(next);
    fedc__mlir_scope_free(&b);
    return st ? st : next ? l->m->st : (l->m->st = FEDC_ENOMEM);
}

static void fold_output(int k, const void *ctx, char *name, size_t size) {
    const fold *f = ctx;
    if (f->unrolled) snprintf(name, size, "%s", f->last[k]);
    else snprintf(name, size, "%s#%d", f->result, k);
}

/* Sharded, the fold is its steps written out one after another (the count is
 * static): LLVM 19's sharding propagation has no interface for scf.for, while
 * every op of a step is a linalg.generic it partitions. */
static fedc_status fold_unrolled(const lower *l, fold *f, char (*iter)[24]) {
    int n = f->k + f->y;
    bool *want = fedc__list(n + 1, sizeof *want), *final = fedc__list(n + 1, sizeof *final),
         *live = fedc__list(f->body->n + 1, sizeof *live);
    if (!want || !final || !live) return fedc_free(want), fedc_free(final), fedc_free(live), l->m->st = FEDC_ENOMEM;
    /* The wanted results, and the carries that a later step needs for them. */
    wanted_results(l, final, n);
    memcpy(want, final, (size_t)n * sizeof *want);
    fedc__mlir_fold_needed(f->body, f->k, want, live);
    f->needed = want, f->wanted = final, f->body_live = live;
    /* the carries' first values, and zeros for the stacked outputs wanted (an unused
     * argument, as an unused zeros constant would be, crashes LLVM 19's spmdization) */
    for (int i = 0; i < n; i++) {
        char type[160];
        if (i < f->k) snprintf(iter[i], 24, "%s", name(l, l->n->in[i]));
        else if (want[i]) zeros_of(l, body_type(f, f->body->outputs[i].value), stacked_type(l, f, i - f->k, type), iter[i]);
    }
    fedc_status st = FEDC_OK;
    for (f->step = 0; !st && f->step < f->steps; f->step++) st = fold_step(l, f, iter);
    f->last = iter;
    if (!st) name_results(l, fold_output, f);
    fedc_free(want), fedc_free(final), fedc_free(live);
    return l->m->st;
}

fedc_status fedc__lower_fold(const lower *l) {
    fold f = {.body = fedc__body(l->s->p, l->n), .k = (int)fedc__attr_int(l->n, FEDC_ATTR_CARRIES, 0)};
    f.m = l->n->nin - f.k - 1, f.y = f.body->noutputs - f.k;
    f.batched = clients(l, l->n->in[l->n->nin - 1]);
    f.reverse = fedc__attr_int(l->n, FEDC_ATTR_REVERSE, 0) != 0;
    f.steps = f.m ? type_of(l, l->n->in[f.k])->dims[0] : 0; /* a client's sequence: [steps, ...] */
    if (f.m == 0) return unsupported(l, "a fold without sequences");
    snprintf(f.len, sizeof f.len, "%s", name(l, l->n->in[l->n->nin - 1]));
    snprintf(f.len_type, sizeof f.len_type, f.batched ? "tensor<%dxi32>" : "tensor<i32>", l->m->clients);
    snprintf(f.flag_type, sizeof f.flag_type, f.batched ? "tensor<%dxi1>" : "tensor<i1>", l->m->clients);
    char (*iter)[24] = fedc__list(f.k + f.y, sizeof *iter), c0[24], c1[24], cs[24], type[160];
    if (!iter) return l->m->st = FEDC_ENOMEM;
    if (l->m->hoisted) {
        f.unrolled = true;
        fold_unrolled(l, &f, iter);
        fedc_free(iter);
        return l->m->st;
    }
    char (*zeros)[24] = fedc__list(f.y + 1, sizeof *zeros);
    for (int j = 0; zeros && j < f.y; j++)
        zeros_of(l, body_type(&f, f.body->outputs[f.k + j].value), stacked_type(l, &f, j, type), zeros[j]);
    fedc__mlir_tmp(l->m, c0), fedc__mlir_tmp(l->m, c1), fedc__mlir_tmp(l->m, cs);
    fedc__mlir_printf(l->m, "    %s = arith.constant 0 : index\n    %s = arith.constant 1 : index\n"
                      "    %s = arith.constant %lld : index\n", c0, c1, cs, (long long)f.steps);
    fedc__mlir_tmp(l->m, f.result);
    fedc__mlir_tmp(l->m, f.t), fedc__mlir_tmp(l->m, f.ti);
    fedc__mlir_printf(l->m, "    %s:%d = scf.for %s = %s to %s step %s iter_args(", f.result, f.k + f.y, f.t, c0, cs, c1);
    for (int i = 0; i < f.k + f.y; i++) {
        fedc__mlir_tmp(l->m, iter[i]);
        fedc__mlir_printf(l->m, "%s%s = %s", i ? ", " : "", iter[i], i < f.k ? name(l, l->n->in[i]) : zeros ? zeros[i - f.k] : "?");
    }
    fedc__mlir_printf(l->m, ") -> (");
    for (int i = 0; i < f.k + f.y; i++) {
        if (i < f.k) fedc__mlir_type_of(l->m, l->s, l->n->in[i], type, sizeof type);
        else stacked_type(l, &f, i - f.k, type);
        fedc__mlir_printf(l->m, "%s%s", i ? ", " : "", type);
    }
    fedc__mlir_printf(l->m, ") {\n");
    fedc_status st = zeros ? fold_step(l, &f, iter) : (l->m->st = FEDC_ENOMEM);
    fedc__mlir_printf(l->m, "    }\n");
    if (!st) name_results(l, fold_output, &f);
    fedc_free(iter);
    fedc_free(zeros);
    return l->m->st;
}
