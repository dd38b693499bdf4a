/* Derivative rules of the federated primitives and of the ops with bodies: the
 * transpose of each communication (broadcast <-> sum), a map's vjp as a map of its
 * body's vjp, and a fold's as a fold of its body's backward pass over the carries
 * the forward fold recorded. */
#include <string.h>

#include "ad/composite.h"
#include "ad/vjp_rule.h"

/* ------------------------------------------------------------ federated -- */

/* The transposes of the federated primitives (DESIGN.md section 2): broadcast^T is
 * sum, sum^T is broadcast, mean^T is broadcast / n. So the derivative of a program
 * that communicates only through them communicates only through them too. */
fedc_status fedc__vjp_BROADCAST(const fedc__rule *r) { give(r, 0, fedc_sum(r->g, r->ct)); return FEDC_OK; }
fedc_status fedc__vjp_SUM(const fedc__rule *r) { give(r, 0, fedc_broadcast(r->g, r->ct)); return FEDC_OK; }

fedc_status fedc__vjp_MEAN(const fedc__rule *r) {
    fedc_value n = fedc_num_clients(r->g, r->n->type.dtype);
    give(r, 0, fedc_broadcast(r->g, fedc_div(r->g, r->ct, n)));
    return FEDC_OK;
}

/* y = sum_i w_i x_i / W with W = sum_i w_i: dx_i = w_i ct / W and
 * dw_i = <ct, x_i - y> / W; `down` and `up` move values between the levels
 * (broadcast and sum, or broadcast_down and sum_up). */
fedc_status fedc__vjp_weighted_mean_by(const fedc__rule *r, fedc_value (*down)(fedc_program *, fedc_value),
                                       fedc_value (*up)(fedc_program *, fedc_value)) {
    fedc_program *g = r->g;
    fedc_value scaled = down(g, fedc_div(g, r->ct, up(g, X(r, 1))));
    if (needs(r, 0)) give(r, 0, fedc_mul(g, scaled, X(r, 1)));
    if (needs(r, 1)) {
        fedc_value centred = fedc_sub(g, X(r, 0), down(g, Y(r)));
        give(r, 1, fedc_reduce_sum(g, fedc_mul(g, scaled, centred), NULL, -1, false));
    }
    return FEDC_OK;
}

fedc_status fedc__vjp_WEIGHTED_MEAN(const fedc__rule *r) { return fedc__vjp_weighted_mean_by(r, fedc_broadcast, fedc_sum); }

fedc_status fedc__vjp_NUM_CLIENTS(const fedc__rule *r) { return fedc__vjp_none(r); }
fedc_status fedc__vjp_RESULT(const fedc__rule *r) { return fedc__vjp_none(r); } /* the map's rule reads results' cotangents */

/* The cotangent of the map's k-th result: the sum over its result nodes, or zeros
 * at every client (group) when nothing downstream depends on it. */
static fedc_value result_ct(const fedc__rule *r, int k) {
    const fedc_program *src = r->ad->src;
    fedc_value ct = FEDC_NONE;
    for (int u = r->v + 1; u < src->n; u++) {
        const fedc__node *n = &src->nodes[u];
        if (n->op != FEDC_OP_RESULT || n->in[0] != r->v || fedc__attr_int(n, FEDC_ATTR_INDEX, -1) != k) continue;
        if (r->ad->ct[u] != FEDC_NONE) ct = ct == FEDC_NONE ? r->ad->ct[u] : fedc_add(r->g, ct, r->ad->ct[u]);
    }
    if (ct != FEDC_NONE) return ct;
    const fedc_program *body = fedc__body(src, r->n);
    fedc_type t = fedc_value_type(body, fedc_program_output_value(body, k));
    t.placement = FEDC_SERVER;
    fedc_value zeros = fedc_full(r->g, t, 0.0);
    if (r->n->type.placement == FEDC_GROUPS) return fedc_broadcast_down(r->g, zeros); /* a map at the groups */
    return fedc_broadcast(r->g, zeros);
}

/* Inlines `src` into `dst` on fresh inputs named like src's; res gets src's
 * outputs (n = its number of outputs). */
static fedc_status inline_on_inputs(fedc_program *dst, const fedc_program *src, fedc_value *args, fedc_value *res) {
    for (int i = 0; i < fedc_program_num_inputs(src); i++)
        args[i] = fedc_input(dst, fedc_program_input_name(src, i), fedc_value_type(src, fedc_program_input(src, i)));
    return fedc_program_inline(dst, src, args, res);
}

/* The body's derivative as a body: inputs (body inputs, one cotangent per float
 * output), outputs the gradients of the active inputs only. */
static fedc_status body_vjp(const fedc_program *body, const char *const *wrt, int nwrt, fedc_program **out) {
    fedc_program *v = NULL, *b = NULL;
    fedc_value *args = NULL, *res = NULL;
    fedc_status st = fedc_vjp(body, wrt, nwrt, &v);
    if (!st) st = fedc_program_create(&b);
    if (!st) {
        int nout = fedc_program_num_outputs(v);
        args = fedc__list(fedc_program_num_inputs(v), sizeof *args);
        res = fedc__list(nout, sizeof *res);
        st = args && res ? inline_on_inputs(b, v, args, res) : FEDC_ENOMEM;
        for (int i = nout - nwrt; !st && i < nout; i++) st = fedc_program_output(b, fedc_program_output_name(v, i), res[i]);
        if (!st) st = fedc_program_dce(b);
    }
    fedc_free(args);
    fedc_free(res);
    fedc_program_destroy(v);
    if (st) {
        fedc_program_destroy(b);
        return st;
    }
    *out = b;
    return FEDC_OK;
}

/* The lists of a map's transpose, one allocation each, sized by the node. */
typedef struct map_lists {
    const char **wrt;
    int *which;
    fedc_value *args, *grads;
} map_lists;

static fedc_status map_transpose(const fedc__rule *r, const fedc_program *body, map_lists *l) {
    int nwrt = 0, nargs = 0;
    for (int j = 0; j < r->n->nin; j++) {
        if (needs(r, j) && fedc_dtype_is_float(xtype(r, j)->dtype)) {
            l->wrt[nwrt] = fedc_program_input_name(body, j);
            l->which[nwrt++] = j;
        }
    }
    if (!nwrt) return FEDC_OK;
    for (int j = 0; j < r->n->nin; j++) l->args[nargs++] = X(r, j);
    for (int k = 0; k < body->noutputs; k++) {
        fedc_type t = fedc_value_type(body, fedc_program_output_value(body, k));
        if (fedc_dtype_is_float(t.dtype)) l->args[nargs++] = result_ct(r, k);
    }
    fedc_program *gb;
    fedc_status st = body_vjp(body, l->wrt, nwrt, &gb);
    if (st) return st;
    st = fedc_map(r->g, gb, l->args, nargs, l->grads);
    fedc_program_destroy(gb);
    for (int i = 0; !st && i < nwrt; i++) give(r, l->which[i], l->grads[i]);
    return st;
}

/* map(f)^T = map(f^T): each client runs the body's derivative on its own
 * arguments and cotangents. */
fedc_status fedc__vjp_MAP(const fedc__rule *r) {
    const fedc_program *body = fedc__body(r->ad->src, r->n);
    int nin = r->n->nin;
    map_lists l = {fedc__list(nin, sizeof(const char *)), fedc__list(nin, sizeof(int)),
                   fedc__list(nin + body->noutputs, sizeof(fedc_value)), fedc__list(nin, sizeof(fedc_value))};
    fedc_status st = l.wrt && l.which && l.args && l.grads ? map_transpose(r, body, &l) : FEDC_ENOMEM;
    fedc_free(l.wrt);
    fedc_free(l.which);
    fedc_free(l.args);
    fedc_free(l.grads);
    return st;
}

/* --------------------------------------------------------------- fold -- */

/* The cotangent of a fold's k-th result (summed over its result nodes), or zeros
 * of the result's type. */
static fedc_value fold_result_ct(const fedc__rule *r, int k) {
    const fedc_program *src = r->ad->src;
    fedc_value ct = FEDC_NONE, any = FEDC_NONE;
    for (int u = r->v + 1; u < src->n; u++) {
        const fedc__node *n = &src->nodes[u];
        if (n->op != FEDC_OP_RESULT || n->in[0] != r->v || fedc__attr_int(n, FEDC_ATTR_INDEX, -1) != k) continue;
        any = u;
        if (r->ad->ct[u] != FEDC_NONE) ct = ct == FEDC_NONE ? r->ad->ct[u] : fedc_add(r->g, ct, r->ad->ct[u]);
    }
    if (ct != FEDC_NONE) return ct;
    if (any != FEDC_NONE) return fedc_full(r->g, src->nodes[any].type, 0.0);
    /* No result node: the type is the body output's (stacked for a per-step one). */
    const fedc_program *body = fedc__body(src, r->n);
    fedc_type t = fedc_value_type(body, fedc_program_output_value(body, k));
    int carries = (int)fedc__attr_int(r->n, FEDC_ATTR_CARRIES, 0);
    if (k >= carries) {
        memmove(t.dims + 1, t.dims, sizeof t.dims - sizeof t.dims[0]);
        t.dims[0] = xtype(r, carries)->dims[0];
        t.rank++;
    }
    t.placement = r->n->type.placement;
    return fedc_full(r->g, t, 0.0);
}

/* The body extended to also return its incoming carries as per-step outputs, so a
 * fold of it records the carry before every step (what the backward pass reads). */
static fedc_status recording_body(const fedc_program *body, int k, fedc_program **out) {
    fedc_program *b;
    fedc_status st = fedc_program_create(&b);
    if (st) return st;
    fedc_value *args = fedc__list(fedc_program_num_inputs(body), sizeof *args);
    fedc_value *res = fedc__list(body->noutputs, sizeof *res);
    st = args && res ? inline_on_inputs(b, body, args, res) : FEDC_ENOMEM;
    for (int j = 0; !st && j < body->noutputs; j++) st = fedc_program_output(b, fedc_program_output_name(body, j), res[j]);
    for (int i = 0; !st && i < k; i++) {
        char name[48]; /* unique even when the body already records (a second derivative) */
        int n = 0;
        do snprintf(name, sizeof name, "fedc_carry_in%d_%d", i, n++);
        while (fedc_program_find_output(b, name) != FEDC_NONE);
        st = fedc_program_output(b, name, args[i]);
    }
    fedc_free(args);
    fedc_free(res);
    if (st) fedc_program_destroy(b);
    else *out = b;
    return st;
}

/* The backward step: inputs (cotangents of the float carries; then the sequences:
 * the carries before the step, the step's inputs, the cotangents of its float
 * per-step outputs), outputs (cotangents of the carries before the step, then of
 * the active float step inputs). Built by inlining the body's vjp. */
typedef struct fold_shape {
    int k, m, ny;        /* carries, sequences, per-step outputs */
    bool *fc, *fy, *ax;  /* float carry, float per-step output, active float step input */
} fold_shape;

static bool fold_wrt(const fold_shape *fs, int i) { return i < fs->k ? fs->fc[i] : fs->ax[i - fs->k]; }

/* The backward body's inputs and the vjp's arguments, in the order above. */
static void backward_inputs(fedc_program *b, const fedc_program *body, const fold_shape *fs, fedc_value *ctc,
                            fedc_value *seq, fedc_value *cty, fedc_value *args, int *nargs) {
    char name[40];
    for (int i = 0; i < fs->k; i++) {
        snprintf(name, sizeof name, "ct_carry%d", i);
        if (fs->fc[i]) ctc[i] = fedc_input(b, name, fedc_value_type(body, fedc_program_input(body, i)));
    }
    for (int i = 0; i < fs->k + fs->m; i++) {
        snprintf(name, sizeof name, "step_in%d", i);
        seq[i] = fedc_input(b, name, fedc_value_type(body, fedc_program_input(body, i)));
    }
    for (int j = 0; j < fs->ny; j++) {
        snprintf(name, sizeof name, "ct_y%d", j);
        if (fs->fy[j]) cty[j] = fedc_input(b, name, fedc_value_type(body, fedc_program_output_value(body, fs->k + j)));
    }
    *nargs = 0;
    for (int i = 0; i < fs->k + fs->m; i++) args[(*nargs)++] = seq[i];
    for (int o = 0; o < body->noutputs; o++) {
        if (o < fs->k ? !fs->fc[o] : !fs->fy[o - fs->k]) continue;
        args[(*nargs)++] = o < fs->k ? ctc[o] : cty[o - fs->k];
    }
}

static fedc_status backward_body(const fedc_program *body, const fold_shape *fs, fedc_program **out) {
    int km = fs->k + fs->m;
    const char **wrt = fedc__list(km, sizeof *wrt);
    if (!wrt) return FEDC_ENOMEM;
    int nwrt = 0;
    for (int i = 0; i < km; i++)
        if (fold_wrt(fs, i)) wrt[nwrt++] = fedc_program_input_name(body, i);
    fedc_program *v = NULL, *b = NULL;
    fedc_status st = fedc_vjp(body, wrt, nwrt, &v);
    fedc_free(wrt);
    if (!st) st = fedc_program_create(&b);
    if (st) {
        fedc_program_destroy(v);
        return st;
    }
    /* ctc [k], seq [k + m], cty [ny], args [k + m + k + ny], res [v's outputs] */
    int nlist = fs->k + km + fs->ny + km + fs->k + fs->ny + fedc_program_num_outputs(v);
    fedc_value *list = fedc__list(nlist, sizeof *list);
    if (!list) st = FEDC_ENOMEM;
    fedc_value *ctc = list, *seq = ctc + fs->k, *cty = seq + km, *args = cty + fs->ny, *res = args + km + fs->k + fs->ny;
    int nargs = 0;
    if (!st) backward_inputs(b, body, fs, ctc, seq, cty, args, &nargs);
    if (!st) st = fedc_program_inline(b, v, args, res);
    int g = body->noutputs; /* v's outputs: body's, then the gradients in wrt order */
    for (int i = 0; !st && i < km; i++) {
        if (!fold_wrt(fs, i)) continue;
        char name[40];
        snprintf(name, sizeof name, "ct_in%d", i);
        st = fedc_program_output(b, name, res[g++]);
    }
    if (!st) st = fedc_program_dce(b);
    fedc_free(list);
    fedc_program_destroy(v);
    if (st) fedc_program_destroy(b);
    else *out = b;
    return st;
}

/* The two folds of the transpose, given the recording and backward bodies:
 * fwd [rec's outputs], ops [the wider of the two folds' operands], bres [k + m]. */
static fedc_status fold_transpose(const fedc__rule *r, const fold_shape *fs, const fedc_program *rec,
                                  const fedc_program *back, fedc_value *fwd, fedc_value *ops, fedc_value *bres) {
    const fedc_program *body = fedc__body(r->ad->src, r->n);
    int n = 0;
    for (int i = 0; i < r->n->nin; i++) ops[i] = X(r, i);
    bool reverse = fedc__attr_int(r->n, FEDC_ATTR_REVERSE, 0) != 0;
    fedc_status st = fedc__fold(r->g, rec, ops, r->n->nin, fs->k, reverse, fwd);
    if (st) return st;
    /* backward operands: carry cotangents; then carries before each step, the step
     * inputs, the per-step outputs' cotangents; then the length */
    for (int i = 0; i < fs->k; i++)
        if (fs->fc[i]) ops[n++] = fold_result_ct(r, i);
    int kb = n;
    for (int i = 0; i < fs->k; i++) ops[n++] = fwd[body->noutputs + i];
    for (int j = 0; j < fs->m; j++) ops[n++] = X(r, fs->k + j);
    for (int j = 0; j < fs->ny; j++)
        if (fs->fy[j]) ops[n++] = fold_result_ct(r, fs->k + j);
    ops[n++] = X(r, r->n->nin - 1);
    st = fedc__fold(r->g, back, ops, n, kb, !reverse, bres);
    int at = 0;
    for (int i = 0; !st && i < fs->k + fs->m; i++) {
        if (!fold_wrt(fs, i)) continue;
        if (needs(r, i)) give(r, i, bres[at]);
        at++;
    }
    return st;
}

/* fold^T: record the carries with a fold in the same direction, then fold the
 * body's vjp over the steps in the opposite direction, carrying the carries'
 * cotangents and stacking the step inputs' cotangents. Carries are stored (one per
 * step), not recomputed. */
fedc_status fedc__vjp_FOLD(const fedc__rule *r) {
    const fedc_program *body = fedc__body(r->ad->src, r->n);
    fold_shape fs = {(int)fedc__attr_int(r->n, FEDC_ATTR_CARRIES, 0), 0, 0, NULL, NULL, NULL};
    fs.m = r->n->nin - fs.k - 1;
    fs.ny = body->noutputs - fs.k;
    bool *flags = fedc__list(fs.k + fs.m + fs.ny, sizeof *flags);
    /* fwd [body's outputs + k], ops [nin + 2k + m + ny + 1 covers both folds], bres [k + m] */
    int nfwd = body->noutputs + fs.k, nops = r->n->nin + 2 * fs.k + fs.m + fs.ny + 1;
    fedc_value *list = fedc__list(nfwd + nops + fs.k + fs.m, sizeof *list);
    if (!flags || !list) {
        fedc_free(flags);
        fedc_free(list);
        return FEDC_ENOMEM;
    }
    fs.fc = flags, fs.ax = flags + fs.k, fs.fy = flags + fs.k + fs.m;
    for (int i = 0; i < fs.k; i++) fs.fc[i] = fedc_dtype_is_float(xtype(r, i)->dtype);
    for (int j = 0; j < fs.m; j++) fs.ax[j] = needs(r, fs.k + j) && fedc_dtype_is_float(xtype(r, fs.k + j)->dtype);
    for (int j = 0; j < fs.ny; j++)
        fs.fy[j] = fedc_dtype_is_float(fedc_value_type(body, fedc_program_output_value(body, fs.k + j)).dtype);

    fedc_program *rec = NULL, *back = NULL;
    fedc_status st = recording_body(body, fs.k, &rec);
    if (!st) st = backward_body(body, &fs, &back);
    if (!st) st = fold_transpose(r, &fs, rec, back, list, list + nfwd, list + nfwd + nops);
    fedc_program_destroy(rec);
    fedc_program_destroy(back);
    fedc_free(flags);
    fedc_free(list);
    return st;
}
