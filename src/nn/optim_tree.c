/* Optimizers and models on value trees (fedc/tree.h): the state of an optimizer
 * as a tree named by optax's slot names, and a step that takes the parameters,
 * gradients and state whole. Both are the flat functions of optim.c and
 * models.c, with the leaves put in the parameters' order. */
#include <string.h>

#include "core/internal.h"
#include "fedc/nn.h"
#include "fedc/tree.h"
#include "nn/nn.h"

static fedc_type placed(fedc_type t, fedc_placement pl) {
    t.placement = pl;
    return t;
}

/* optax's names of the slots, in fedc_optimizer_step's slot order. */
static const char *slot_name(const fedc_optimizer *o, int k) {
    switch (o->kind) {
    case FEDC_OPT_MOMENTUM: return "trace";
    case FEDC_OPT_ADAGRAD: return "sum_of_squares";
    case FEDC_OPT_RMSPROP: return "nu";
    default: return k == 0 ? "mu" : "nu";
    }
}

fedc_tree *fedc_optimizer_init_tree(const fedc_optimizer *o, fedc_program *p, const fedc_tree *params) {
    int n = fedc_tree_size(params), slots = fedc_optimizer_slots(o);
    fedc_tree *s = params ? fedc_tree_new(p) : NULL;
    for (int k = 0; s && k < slots; k++)
        for (int i = 0; i < n; i++) {
            char name[512];
            snprintf(name, sizeof name, "%s/%s", slot_name(o, k), fedc_tree_name(params, i));
            fedc_type t = fedc_value_type(p, fedc_tree_value(params, i));
            fedc_tree_set(p, s, name, fedc_full(p, t, fedc_optimizer_state_init(o, n, k * n + i)));
        }
    if (s && fedc_optimizer_counts_steps(o)) {
        fedc_type t = fedc_type_scalar(FEDC_F32);
        t.placement = n ? fedc_value_type(p, fedc_tree_value(params, 0)).placement : FEDC_LOCAL;
        fedc_tree_set(p, s, "count", fedc_full(p, t, 0));
    }
    return fedc_program_status(p) ? NULL : s;
}

/* The leaves of t named as params' leaves (under `prefix` when given), in
 * params' order, into out. */
static fedc_status in_order(fedc_program *p, const fedc_tree *params, const fedc_tree *t, const char *prefix,
                            fedc_value *out) {
    for (int i = 0; i < fedc_tree_size(params); i++) {
        char name[512];
        if (prefix) snprintf(name, sizeof name, "%s/%s", prefix, fedc_tree_name(params, i));
        else snprintf(name, sizeof name, "%s", fedc_tree_name(params, i));
        out[i] = fedc_tree_get(p, t, name);
    }
    return fedc_program_status(p);
}

fedc_status fedc_optimizer_step_tree(const fedc_optimizer *o, fedc_program *p, fedc_value lr, const fedc_tree *params,
                                     const fedc_tree *grads, const fedc_tree *state, fedc_tree **new_params,
                                     fedc_tree **new_state) {
    *new_params = NULL;
    if (new_state) *new_state = NULL;
    fedc_status st = fedc_program_status(p);
    if (st) return st;
    if (!params || !grads || !state)
        return fedc_program_fail(p, FEDC_EINVAL, "optimizer_step_tree: params, grads and state are needed"), FEDC_EINVAL;
    int n = fedc_tree_size(params), slots = fedc_optimizer_slots(o), ns = fedc_optimizer_state_size(o, n);
    fedc_value *v = fedc__values(3 * n + 2 * ns);
    if (!v) return fedc_program_fail(p, FEDC_ENOMEM, "optimizer_step_tree: out of memory"), FEDC_ENOMEM;
    fedc_value *w = v, *g = w + n, *s = g + n, *nw = s + ns, *nstate = nw + n;
    for (int i = 0; i < n; i++) w[i] = fedc_tree_value(params, i);
    st = in_order(p, params, grads, NULL, g);
    for (int k = 0; !st && k < slots; k++) st = in_order(p, params, state, slot_name(o, k), s + k * n);
    if (!st && fedc_optimizer_counts_steps(o)) s[n * slots] = fedc_tree_get(p, state, "count");
    if (!st) st = fedc_optimizer_step(o, p, lr, n, w, g, s, nw, nstate);
    fedc_tree *np = st ? NULL : fedc_tree_new(p), *nst = st ? NULL : fedc_tree_new(p);
    for (int i = 0; np && i < n; i++) fedc_tree_set(p, np, fedc_tree_name(params, i), nw[i]);
    for (int k = 0; nst && k < slots; k++)
        for (int i = 0; i < n; i++) {
            char name[512];
            snprintf(name, sizeof name, "%s/%s", slot_name(o, k), fedc_tree_name(params, i));
            fedc_tree_set(p, nst, name, nstate[k * n + i]);
        }
    if (nst && fedc_optimizer_counts_steps(o)) fedc_tree_set(p, nst, "count", nstate[n * slots]);
    fedc_free(v);
    st = fedc_program_status(p);
    if (!st) {
        *new_params = np;
        if (new_state) *new_state = nst;
    }
    return st;
}

fedc_tree *fedc_model_input_tree(const fedc_model *m, fedc_program *p, const char *prefix, fedc_placement pl) {
    fedc_tree *t = fedc_tree_new(p);
    for (int i = 0; t && i < fedc_model_num_params(m); i++) {
        char name[512];
        const char *leaf = fedc_model_param_name(m, i);
        if (prefix && *prefix) snprintf(name, sizeof name, "%s/%s", prefix, leaf);
        else snprintf(name, sizeof name, "%s", leaf);
        fedc_type ty = fedc_model_param_type(m, i);
        ty.placement = pl;
        fedc_tree_set(p, t, leaf, fedc_input(p, name, ty));
    }
    return fedc_program_status(p) ? NULL : t;
}

fedc_tree *fedc_model_full_tree(const fedc_model *m, fedc_program *p, fedc_placement pl, double value) {
    fedc_tree *t = fedc_tree_new(p);
    for (int i = 0; t && i < fedc_model_num_params(m); i++)
        fedc_tree_set(p, t, fedc_model_param_name(m, i), fedc_full(p, placed(fedc_model_param_type(m, i), pl), value));
    return fedc_program_status(p) ? NULL : t;
}

static fedc_status apply_tree(const fedc_model *m, fedc_program *p, const fedc_tree *params, fedc_value x,
                              fedc_value y, fedc_value mask, fedc_value dropout_key, bool training,
                              fedc_model_outputs *out) {
    fedc_status st = fedc_program_status(p);
    if (st) return st;
    int n = fedc_model_num_params(m);
    fedc_value *w = fedc__values(n);
    if (!w) return fedc_program_fail(p, FEDC_ENOMEM, "model_apply_tree: out of memory"), FEDC_ENOMEM;
    for (int i = 0; i < n; i++) w[i] = fedc_tree_get(p, params, fedc_model_param_name(m, i));
    st = fedc_program_status(p);
    if (!st) st = fedc__model_apply(m, p, w, x, y, mask, dropout_key, training, out);
    fedc_free(w);
    return st;
}

fedc_status fedc_model_apply_tree(const fedc_model *m, fedc_program *p, const fedc_tree *params, fedc_value x,
                                  fedc_value y, fedc_value mask, fedc_value dropout_key, fedc_model_outputs *out) {
    return apply_tree(m, p, params, x, y, mask, dropout_key, false, out);
}

fedc_status fedc_model_apply_tree_training(const fedc_model *m, fedc_program *p, const fedc_tree *params,
                                           fedc_value x, fedc_value y, fedc_value mask, fedc_value dropout_key,
                                           fedc_model_outputs *out) {
    return apply_tree(m, p, params, x, y, mask, dropout_key, true, out);
}
