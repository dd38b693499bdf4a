/* Reverse-mode AD as a program transform: copy the forward program, then walk it
 * backwards appending, for every node that lies between a wrt input and an output,
 * the ops of its derivative rule (src/ad/vjp_rules.c). */
#include <string.h>

#include "ad/ad.h"

void fedc__ad_accum(fedc__ad *ad, fedc_value u, fedc_value contribution) {
    if (!ad->active[u]) return;
    ad->ct[u] = ad->ct[u] == FEDC_NONE ? contribution : fedc_add(ad->g, ad->ct[u], contribution);
}

/* A value is active when it is a float that depends on a wrt input: only active
 * values get cotangents, so constants, labels and masks cost nothing. */
static void mark_active(const fedc_program *src, const fedc_value *wrt, int nwrt, bool *active) {
    for (int v = 0; v < src->n; v++) active[v] = false;
    for (int i = 0; i < nwrt; i++) active[wrt[i]] = true;
    for (int v = 0; v < src->n; v++) {
        const fedc__node *n = &src->nodes[v];
        if (active[v] || !(fedc_dtype_is_float(n->type.dtype) || n->type.dtype == FEDC__TUPLE)) continue;
        for (int i = 0; i < n->nin; i++) active[v] |= active[n->in[i]];
    }
}

static fedc_status find_wrt(const fedc_program *p, const char *const *names, int n, fedc_value *wrt) {
    for (int i = 0; i < n; i++) {
        wrt[i] = fedc_program_find_input(p, names[i]);
        if (wrt[i] == FEDC_NONE) return fedc_error(FEDC_ENOTFOUND, "grad: the program has no input \"%s\"", names[i]);
        if (!fedc_dtype_is_float(p->nodes[wrt[i]].type.dtype)) {
            char t[64];
            return fedc_error(FEDC_ETYPE, "grad: input \"%s\" is %s; only f32 and f64 inputs have gradients", names[i],
                              fedc_type_str(&p->nodes[wrt[i]].type, t, sizeof t));
        }
    }
    return FEDC_OK;
}

/* Copies src into g: inputs of the same names, then every node. */
static fedc_status copy_forward(fedc_program *g, const fedc_program *src, fedc_value *primal) {
    int nin = fedc_program_num_inputs(src);
    fedc_value *args = fedc_malloc((size_t)(nin ? nin : 1) * sizeof *args);
    if (!args) return fedc_error(FEDC_ENOMEM, "grad: out of memory");
    for (int i = 0; i < nin; i++) {
        fedc_value v = fedc_program_input(src, i);
        args[i] = fedc_input(g, src->nodes[v].name, src->nodes[v].type);
    }
    fedc_status st = fedc__program_inline_map(g, src, args, primal);
    fedc_free(args);
    return st;
}

/* "<prefix><name>", made unique with "_1", "_2", ... if p already has an input or
 * output of that name (a gradient of a program that returns gradients). */
static void unique_name(const fedc_program *p, const char *prefix, const char *name, char *out, size_t size) {
    snprintf(out, size, "%s%s", prefix, name);
    for (int n = 1; fedc_program_find_output(p, out) != FEDC_NONE || fedc_program_find_input(p, out) != FEDC_NONE; n++)
        snprintf(out, size, "%s%s_%d", prefix, name, n);
}

/* Seeds the outputs' cotangents: `seed_of` names the one output seeded with 1
 * (grad), or NULL to give every float output a "ct_<name>" input (vjp). */
static fedc_status seed(fedc__ad *ad, const char *seed_of) {
    const fedc_program *src = ad->src;
    for (int i = 0; i < src->noutputs; i++) {
        const fedc__output *o = &src->outputs[i];
        const fedc_type *t = &src->nodes[o->value].type;
        if (!fedc_dtype_is_float(t->dtype)) continue;
        fedc_value ct;
        if (seed_of) {
            if (strcmp(o->name, seed_of) != 0) continue;
            ct = fedc_full(ad->g, *t, 1.0);
        } else {
            char name[256];
            unique_name(ad->g, "ct_", o->name, name, sizeof name);
            ct = fedc_input(ad->g, name, *t);
        }
        fedc__ad_accum(ad, o->value, ct);
    }
    return fedc_program_status(ad->g);
}

static fedc_status backward(fedc__ad *ad) {
    for (int v = ad->src->n - 1; v >= 0; v--) {
        /* A map has no cotangent of its own: its rule reads its results'. */
        bool map = fedc__op_has_body(ad->src->nodes[v].op);
        if (!ad->active[v] || (ad->ct[v] == FEDC_NONE && !map)) continue;
        fedc_status st = fedc__vjp_rule(ad, v, ad->ct[v]);
        if (!st) st = fedc_program_status(ad->g);
        if (st) return st;
    }
    return FEDC_OK;
}

/* Outputs: the forward outputs under their names, then grad_<w> for each w. */
static fedc_status add_outputs(fedc__ad *ad, const fedc_value *wrt, int nwrt) {
    const fedc_program *src = ad->src;
    fedc_status st = FEDC_OK;
    for (int i = 0; !st && i < src->noutputs; i++)
        st = fedc_program_output(ad->g, src->outputs[i].name, ad->primal[src->outputs[i].value]);
    for (int i = 0; !st && i < nwrt; i++) {
        const fedc__node *w = &src->nodes[wrt[i]];
        fedc_value grad = ad->ct[wrt[i]];
        if (grad == FEDC_NONE) grad = fedc_full(ad->g, w->type, 0.0); /* the outputs do not depend on it */
        char name[256];
        unique_name(ad->g, "grad_", w->name, name, sizeof name);
        st = fedc_program_output(ad->g, name, grad);
    }
    return st;
}

static fedc_status transform(const fedc_program *src, const char *seed_of, const char *const *wrt_names, int nwrt,
                             fedc_program **out) {
    *out = NULL;
    fedc_status st = fedc_program_verify(src);
    if (st) return st;
    int n = src->n ? src->n : 1;
    fedc_value *wrt = fedc_malloc((size_t)(nwrt ? nwrt : 1) * sizeof *wrt);
    fedc_value *primal = fedc_malloc((size_t)n * sizeof *primal);
    fedc_value *ct = fedc_malloc((size_t)n * sizeof *ct);
    bool *active = fedc_malloc((size_t)n * sizeof *active);
    fedc_program *g = NULL;
    if (!wrt || !primal || !ct || !active) st = fedc_error(FEDC_ENOMEM, "grad: out of memory");
    if (!st) st = find_wrt(src, wrt_names, nwrt, wrt);
    if (!st) st = fedc_program_create(&g);
    if (!st) {
        for (int v = 0; v < src->n; v++) ct[v] = FEDC_NONE;
        mark_active(src, wrt, nwrt, active);
        fedc__ad ad = {g, src, primal, ct, active};
        st = copy_forward(g, src, primal);
        if (!st) st = seed(&ad, seed_of);
        if (!st) st = backward(&ad);
        if (!st) st = add_outputs(&ad, wrt, nwrt);
        if (!st) st = fedc_program_dce(g);
    }
    fedc_free(wrt);
    fedc_free(primal);
    fedc_free(ct);
    fedc_free(active);
    if (st) {
        fedc_program_destroy(g);
        return st;
    }
    *out = g;
    return FEDC_OK;
}

fedc_status fedc_vjp(const fedc_program *p, const char *const *wrt, int nwrt, fedc_program **out) {
    return transform(p, NULL, wrt, nwrt, out);
}

fedc_status fedc_grad(const fedc_program *p, const char *of, const char *const *wrt, int nwrt, fedc_program **out) {
    *out = NULL;
    fedc_value v = fedc_program_find_output(p, of);
    if (v == FEDC_NONE) return fedc_error(FEDC_ENOTFOUND, "grad: the program has no output \"%s\"", of);
    const fedc_type *t = &p->nodes[v].type;
    if (t->rank != 0 || !fedc_dtype_is_float(t->dtype)) {
        char s[64];
        return fedc_error(FEDC_ETYPE, "grad: output \"%s\" is %s; grad needs a scalar f32 or f64 (use vjp otherwise)",
                          of, fedc_type_str(t, s, sizeof s));
    }
    return transform(p, of, wrt, nwrt, out);
}

fedc_status fedc_grad_tree(const fedc_program *p, const char *of, const char *wrt_prefix, fedc_program **out) {
    *out = NULL;
    size_t k = wrt_prefix ? strlen(wrt_prefix) : 0;
    int n = fedc_program_num_inputs(p), nwrt = 0;
    const char **wrt = fedc_calloc((size_t)n + 1, sizeof *wrt);
    if (!wrt) return fedc_error(FEDC_ENOMEM, "grad_tree: out of memory");
    for (int i = 0; i < n; i++) {
        const char *name = fedc_program_input_name(p, i);
        if (k && !strncmp(name, wrt_prefix, k) && name[k] == '/') wrt[nwrt++] = name;
    }
    fedc_status st = nwrt ? fedc_grad(p, of, wrt, nwrt, out)
                          : fedc_error(FEDC_ENOTFOUND, "grad_tree: the program has no input under \"%s\"",
                                       wrt_prefix ? wrt_prefix : "(null)");
    fedc_free(wrt);
    return st;
}
