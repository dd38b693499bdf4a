/* The ops with bodies, for both targets. A map is its body lowered along the
 * clients axis. A fold is a loop over the sequences' steps carrying the carries
 * and the stacked outputs; each step reads row idx of every sequence (t, or
 * length - 1 - t when reversed), runs the body, and keeps the new carries and
 * writes row idx of the outputs only while t < length, so rows past a client's
 * length stay zero and its carries stop changing, as fedc's fold does. Inside a
 * map every client has its own length: the row index and the "still running"
 * flag are per client. The loop and the step's reads and writes are each
 * target's (spelling.h: mlir_fold.c, stablehlo_fold.c). */
#include <string.h>

#include "export/spelling.h"

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

/* Which results of l->v (its body's outputs) the scope needs, into wanted
 * (every one where the scope marks none: StableHLO's lowers every value). */
static void wanted_results(const lower *l, bool *wanted, int n) {
    memset(wanted, 0, (size_t)n * sizeof *wanted);
    for (fedc_value u = l->v + 1; u < l->s->p->n; u++) {
        const fedc__node *r = &l->s->p->nodes[u];
        int k = (int)fedc__attr_int(r, FEDC_ATTR_INDEX, 0);
        if (r->op == FEDC_OP_RESULT && r->in[0] == l->v && k >= 0 && k < n && (!l->s->live || l->s->live[u])) wanted[k] = true;
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
    fedc_status st = l->spell->lower_scope(l->m, &b);
    if (!st) name_results(l, map_output, &b);
    fedc__mlir_scope_free(&b);
    fedc_free(wanted);
    return st;
}

/* --------------------------------------------------------------- fold -- */

/* Unrolled, the outputs that step f->step writes (NULL: all). */
static const bool *step_outputs(const fedc__fold_loop *f) {
    if (!f->unrolled) return NULL;
    return f->step == f->steps - 1 ? f->wanted : f->needed;
}
static bool needed(const fedc__fold_loop *f, int i) { return !step_outputs(f) || step_outputs(f)[i]; }
static bool input_live(const fedc__fold_loop *f, int i) { return !f->body_live || f->body_live[fedc_program_input(f->body, i)]; }

/* One step: the body on the carries and this step's rows, then the kept
 * carries and the written rows, yielded; unrolled (f->unrolled), they become
 * the next step's iter instead. */
static fedc_status fold_step(const lower *l, fedc__fold_loop *f, char (*iter)[24]) {
    const fedc__fold_spelling *sp = f->spell;
    if (f->unrolled) fedc__mlir_liveness(f->body, step_outputs(f), f->body_live, true);
    bool any_output = false, any_row = false;
    for (int i = 0; i < f->k + f->y; i++) any_output |= needed(f, i), any_row |= i >= f->k && needed(f, i);
    for (int i = 0; i < f->m; i++) any_row |= input_live(f, f->k + i);
    sp->row_and_flag(l, f, any_output, any_row);
    fedc__mlir_scope b;
    if (body_scope(l, f->body, f->c, &b)) return l->m->st;
    b.out_live = step_outputs(f);
    for (int i = 0; i < f->k; i++) snprintf(b.name[fedc_program_input(f->body, i)], sizeof b.name[0], "%s", iter[i]);
    for (int i = 0; i < f->m; i++)
        if (input_live(f, f->k + i)) sp->read_row(l, f, i, b.name[fedc_program_input(f->body, f->k + i)]);
    fedc_status st = l->spell->lower_scope(l->m, &b);
    char (*next)[24] = fedc__list(f->k + f->y, sizeof *next);
    for (int i = 0; !st && next && i < f->k + f->y; i++) snprintf(next[i], 24, "%s", iter[i]); /* unneeded: unchanged */
    for (int i = 0; !st && next && i < f->k; i++)
        if (needed(f, i)) sp->keep(l, f, i, b.name[f->body->outputs[i].value], iter[i], next[i]);
    for (int j = 0; !st && next && j < f->y; j++)
        if (needed(f, f->k + j))
            sp->write(l, f, j, b.name[f->body->outputs[f->k + j].value], iter[f->k + j], next[f->k + j]);
    if (f->unrolled)
        for (int i = 0; next && i < f->k + f->y; i++) snprintf(iter[i], 24, "%s", next[i]);
    else if (next) sp->loop_end(l, f, f->k + f->y, next, f->types);
    fedc_free(next);
    fedc__mlir_scope_free(&b);
    return st ? st : next ? l->m->st : (l->m->st = FEDC_ENOMEM);
}

static void fold_output(int k, const void *ctx, char *name, size_t size) {
    const fedc__fold_loop *f = ctx;
    if (f->unrolled) snprintf(name, size, "%s", f->last[k]);
    else f->spell->result(f, k, name, size);
}

/* Sharded, the fold is its steps written out one after another (the count is
 * static): LLVM 19's sharding propagation has no interface for scf.for, while
 * every op of a step is a linalg.generic it partitions. */
static fedc_status fold_unrolled(const lower *l, fedc__fold_loop *f, char (*iter)[24]) {
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
        if (i < f->k) snprintf(iter[i], 24, "%s", name(l, l->n->in[i]));
        else if (want[i]) f->spell->zeros(l, f, i - f->k, iter[i]);
    }
    fedc_status st = FEDC_OK;
    for (f->step = 0; !st && f->step < f->steps; f->step++) st = fold_step(l, f, iter);
    f->last = iter;
    if (!st) name_results(l, fold_output, f);
    fedc_free(want), fedc_free(final), fedc_free(live);
    return l->m->st;
}

/* The loop over the steps, from the carries and zeros of the stacked outputs;
 * f->types and f->type_buf (which the caller frees) its carried values' types. */
static void fold_begin(const lower *l, fedc__fold_loop *f, char (*iter)[24]) {
    int n = f->k + f->y;
    char (*zeros)[24] = fedc__list(f->y + 1, sizeof *zeros), (*type)[160] = fedc__list(n + 1, sizeof *type);
    const char **inits = fedc__list(n + 1, sizeof *inits), **types = fedc__list(n + 1, sizeof *types);
    f->types = types;
    if (zeros && type && inits && types) {
        for (int j = 0; j < f->y; j++) f->spell->zeros(l, f, j, zeros[j]);
        for (int i = 0; i < n; i++) {
            if (i < f->k) fedc__mlir_type_of(l->m, l->s, l->n->in[i], type[i], 160);
            else fedc__mlir_stacked_type(l->m, f->body, i, f->steps, f->c, type[i]);
            types[i] = type[i], inits[i] = i < f->k ? name(l, l->n->in[i]) : zeros[i - f->k];
        }
        f->spell->loop_begin(l, f, n, inits, types, iter);
    } else l->m->st = FEDC_ENOMEM;
    fedc_free(zeros), fedc_free(inits);
    f->type_buf = type;
}

fedc_status fedc__lower_fold(const lower *l) {
    fedc__fold_loop f = {.spell = l->spell->fold, .body = fedc__body(l->s->p, l->n),
                         .k = (int)fedc__attr_int(l->n, FEDC_ATTR_CARRIES, 0)};
    f.m = l->n->nin - f.k - 1, f.y = f.body->noutputs - f.k;
    fedc_value lengths = l->n->in[l->n->nin - 1];
    f.c = fedc__mlir_has_clients(l->s, lengths);
    f.reverse = fedc__attr_int(l->n, FEDC_ATTR_REVERSE, 0) != 0;
    if (f.m == 0) return unsupported(l, "a fold without sequences");
    f.steps = type_of(l, l->n->in[f.k])->dims[0]; /* a client's sequence: [steps, ...] */
    snprintf(f.len, sizeof f.len, "%s", name(l, lengths));
    snprintf(f.len_type, sizeof f.len_type, f.c ? "tensor<%dxi32>" : "tensor<i32>", l->m->clients);
    snprintf(f.flag_type, sizeof f.flag_type, f.c ? "tensor<%dxi1>" : "tensor<i1>", l->m->clients);
    char (*iter)[24] = fedc__list(f.k + f.y + 1, sizeof *iter);
    if (!iter) return l->m->st = FEDC_ENOMEM;
    f.unrolled = l->m->hoisted != NULL;
    if (f.unrolled) {
        fold_unrolled(l, &f, iter);
        fedc_free(iter);
        return l->m->st;
    }
    fold_begin(l, &f, iter);
    fedc_status st = l->m->st ? l->m->st : fold_step(l, &f, iter);
    if (!st) name_results(l, fold_output, &f);
    fedc_free(iter), fedc_free(f.type_buf), fedc_free(f.types);
    return l->m->st;
}
