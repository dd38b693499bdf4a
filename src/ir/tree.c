/* Value trees (fedc/tree.h): named leaves in the program's arena, and the
 * operations that take them whole. A tree is a small array of (name, value)
 * pairs; lookups are linear, which is cheap at the sizes trees have (a model's
 * tensors: tens to a few hundred). */
#include <string.h>

#include "fedc/tree.h"
#include "ir/ir.h"

struct fedc_tree {
    fedc_program *p; /* whose values the leaves are, and whose arena holds the tree */
    int n, cap;
    const char **name;
    fedc_value *value;
};

static void *arena_alloc(fedc_program *p, size_t bytes) {
    void *m = fedc_arena_alloc(&p->arena, bytes ? bytes : 1, 16);
    if (!m) fedc_program_fail(p, FEDC_ENOMEM, "tree: out of memory");
    return m;
}

fedc_tree *fedc_tree_new(fedc_program *p) {
    if (!p || p->status) return NULL;
    fedc_tree *t = arena_alloc(p, sizeof *t);
    if (t) memset(t, 0, sizeof *t), t->p = p;
    return t;
}

int fedc_tree_size(const fedc_tree *t) { return t ? t->n : 0; }
const char *fedc_tree_name(const fedc_tree *t, int i) { return t && i >= 0 && i < t->n ? t->name[i] : NULL; }
fedc_value fedc_tree_value(const fedc_tree *t, int i) { return t && i >= 0 && i < t->n ? t->value[i] : FEDC_NONE; }

static int find(const fedc_tree *t, const char *name) {
    for (int i = 0; t && i < t->n; i++)
        if (!strcmp(t->name[i], name)) return i;
    return -1;
}

/* Whether `name` is `prefix` itself or under it ("prefix/..."); *rest is what follows. */
static bool under(const char *name, const char *prefix, const char **rest) {
    size_t k = strlen(prefix);
    if (strncmp(name, prefix, k) || name[k] != '/') return false;
    *rest = name + k + 1;
    return true;
}

/* Appends a leaf (the name already in p's arena or a literal that outlives p). */
static fedc_status append(fedc_program *p, fedc_tree *t, const char *name, fedc_value v) {
    if (t->n == t->cap) { /* grow in the arena: the old arrays stay until the program goes */
        int cap = t->cap ? 2 * t->cap : 8;
        const char **names = arena_alloc(p, (size_t)cap * sizeof *names);
        fedc_value *values = arena_alloc(p, (size_t)cap * sizeof *values);
        if (!names || !values) return FEDC_ENOMEM;
        if (t->n) memcpy(names, t->name, (size_t)t->n * sizeof *names), memcpy(values, t->value, (size_t)t->n * sizeof *values);
        t->name = names, t->value = values, t->cap = cap;
    }
    t->name[t->n] = name;
    t->value[t->n++] = v;
    return FEDC_OK;
}

/* Sets leaf `name` (copied into the arena if new). */
static fedc_status put(fedc_program *p, fedc_tree *t, const char *name, fedc_value v) {
    int i = find(t, name);
    if (i >= 0) {
        t->value[i] = v;
        return FEDC_OK;
    }
    const char *copy = fedc__program_strdup(p, name);
    if (!copy) return fedc_program_fail(p, FEDC_ENOMEM, "tree: out of memory"), FEDC_ENOMEM;
    return append(p, t, copy, v);
}

/* The sticky status, after checking that a call got a tree and a program. */
static fedc_status usable(fedc_program *p, const fedc_tree *t, const char *who) {
    if (!p) return fedc_error(FEDC_EINVAL, "%s: program is NULL", who);
    if (p->status) return p->status;
    if (!t) return fedc_program_fail(p, FEDC_EINVAL, "%s: tree is NULL", who), FEDC_EINVAL;
    if (t->p != p) return fedc_program_fail(p, FEDC_EINVAL, "%s: the tree belongs to another program", who), FEDC_EINVAL;
    return FEDC_OK;
}

fedc_status fedc_tree_set(fedc_program *p, fedc_tree *t, const char *path, fedc_value v) {
    fedc_status st = usable(p, t, "tree_set");
    if (st) return st;
    if (!path || !*path) return fedc_program_fail(p, FEDC_EINVAL, "tree_set: a leaf needs a name"), FEDC_EINVAL;
    if (v == FEDC_NONE || v < 0 || v >= p->n)
        return fedc_program_fail(p, FEDC_EINVAL, "tree_set: \"%s\" is not a value of the program", path), FEDC_EINVAL;
    return put(p, t, path, v);
}

fedc_status fedc_tree_set_tree(fedc_program *p, fedc_tree *t, const char *prefix, const fedc_tree *sub) {
    fedc_status st = usable(p, t, "tree_set_tree");
    if (!st && !sub) st = usable(p, sub, "tree_set_tree");
    for (int i = 0; !st && i < sub->n; i++) {
        char name[512];
        if (prefix && *prefix) snprintf(name, sizeof name, "%s/%s", prefix, sub->name[i]);
        else snprintf(name, sizeof name, "%s", sub->name[i]);
        st = put(p, t, name, sub->value[i]);
    }
    return st;
}

fedc_tree *fedc_tree_copy(fedc_program *p, const fedc_tree *t) {
    fedc_tree *c = usable(p, t, "tree_copy") ? NULL : fedc_tree_new(p);
    for (int i = 0; c && i < t->n; i++)
        if (append(p, c, t->name[i], t->value[i])) return NULL;
    return c;
}

/* "a, b, c" (the first few leaf names), for messages. */
static void list_names(const fedc_tree *t, char *buf, size_t size) {
    size_t used = 0;
    buf[0] = 0;
    for (int i = 0; t && i < t->n && used + 1 < size; i++) {
        int k = snprintf(buf + used, size - used, "%s%s", i ? ", " : "", t->name[i]);
        if (k > 0) used += (size_t)k;
    }
    if (!t || !t->n) snprintf(buf, size, "none");
}

fedc_value fedc_tree_get(fedc_program *p, const fedc_tree *t, const char *path) {
    if (usable(p, t, "tree_get")) return FEDC_NONE;
    int i = path ? find(t, path) : -1;
    if (i >= 0) return t->value[i];
    char names[256];
    list_names(t, names, sizeof names);
    return fedc_program_fail(p, FEDC_EINVAL, "tree_get: no leaf \"%s\" (the tree has %s)", path ? path : "(null)", names);
}

bool fedc_tree_has(const fedc_tree *t, const char *path) {
    const char *rest;
    for (int i = 0; t && path && i < t->n; i++)
        if (!strcmp(t->name[i], path) || under(t->name[i], path, &rest)) return true;
    return false;
}

fedc_tree *fedc_tree_subtree(fedc_program *p, const fedc_tree *t, const char *prefix) {
    if (usable(p, t, "tree_subtree")) return NULL;
    fedc_tree *s = fedc_tree_new(p);
    const char *rest;
    for (int i = 0; s && prefix && i < t->n; i++)
        if (under(t->name[i], prefix, &rest) && append(p, s, rest, t->value[i])) return NULL;
    if (s && !s->n) {
        char names[256];
        list_names(t, names, sizeof names);
        fedc_program_fail(p, FEDC_EINVAL, "tree_subtree: nothing under \"%s\" (the tree has %s)",
                          prefix ? prefix : "(null)", names);
        return NULL;
    }
    return s;
}

/* ---------------------------------------------- inputs and outputs -- */

static void join(char *buf, size_t size, const char *prefix, const char *name) {
    if (prefix && *prefix) snprintf(buf, size, "%s/%s", prefix, name);
    else snprintf(buf, size, "%s", name);
}

/* Inputs prefix/<leaf> of the types of like's leaves (read in like's program),
 * at placement pl (< 0: like's own). */
static fedc_tree *inputs_like(fedc_program *p, const char *prefix, const fedc_tree *like, int pl) {
    if (!p || p->status) return NULL;
    if (!like) return fedc_program_fail(p, FEDC_EINVAL, "tree_input: tree is NULL"), NULL;
    fedc_tree *t = fedc_tree_new(p);
    for (int i = 0; t && i < like->n; i++) {
        char name[512];
        join(name, sizeof name, prefix, like->name[i]);
        fedc_type ty = fedc_value_type(like->p, like->value[i]);
        if (pl >= 0) ty.placement = (fedc_placement)pl;
        fedc_value v = fedc_input(p, name, ty);
        if (v == FEDC_NONE || put(p, t, like->name[i], v)) return NULL;
    }
    return t;
}

fedc_tree *fedc_tree_input(fedc_program *p, const char *prefix, const fedc_tree *like, fedc_placement pl) {
    return inputs_like(p, prefix, like, (int)pl);
}

fedc_tree *fedc_tree_input_same(fedc_program *p, const char *prefix, const fedc_tree *like) {
    return inputs_like(p, prefix, like, -1);
}

fedc_status fedc_tree_output(fedc_program *p, const char *prefix, const fedc_tree *t) {
    fedc_status st = usable(p, t, "tree_output");
    for (int i = 0; !st && i < t->n; i++) {
        char name[512];
        join(name, sizeof name, prefix, t->name[i]);
        st = fedc_program_output(p, name, t->value[i]);
    }
    return st;
}

/* The program's inputs or outputs under prefix, by their names less the prefix.
 * The tree is the program's, though the program is read only here: building on
 * the tree later adds to that program. */
static fedc_tree *named(const fedc_program *cp, const char *prefix, bool outputs) {
    fedc_program *p = (fedc_program *)cp; /* the arena grows; the program's ops do not change */
    fedc_tree *t = fedc_tree_new(p);
    int n = outputs ? fedc_program_num_outputs(p) : fedc_program_num_inputs(p);
    for (int i = 0; t && i < n; i++) {
        const char *name = outputs ? fedc_program_output_name(p, i) : fedc_program_input_name(p, i), *rest = name;
        fedc_value v = outputs ? fedc_program_output_value(p, i) : fedc_program_input(p, i);
        if ((!prefix || !*prefix || under(name, prefix, &rest)) && append(p, t, rest, v)) return NULL;
    }
    return t;
}

fedc_tree *fedc_tree_of_inputs(const fedc_program *p, const char *prefix) { return named(p, prefix, false); }
fedc_tree *fedc_tree_of_outputs(const fedc_program *p, const char *prefix) { return named(p, prefix, true); }

/* ---------------------------------------------------- calling programs -- */

/* args' leaf for each input of `callee`, in the callee's order. */
static fedc_value *arguments(fedc_program *p, const char *who, const fedc_program *callee, const fedc_tree *args) {
    if (usable(p, args, who)) return NULL;
    int n = fedc_program_num_inputs(callee);
    fedc_value *in = fedc__values(n);
    if (!in) return fedc_program_fail(p, FEDC_ENOMEM, "%s: out of memory", who), NULL;
    for (int i = 0; i < n; i++) {
        int k = find(args, fedc_program_input_name(callee, i));
        if (k < 0) {
            char names[256];
            list_names(args, names, sizeof names);
            fedc_program_fail(p, FEDC_EINVAL, "%s: no argument for the input \"%s\" (the arguments are %s)", who,
                              fedc_program_input_name(callee, i), names);
            fedc_free(in);
            return NULL;
        }
        in[i] = args->value[k];
    }
    return in;
}

/* The tree of `callee`'s outputs by name, from their values `res`. */
static fedc_tree *results(fedc_program *p, const fedc_program *callee, const fedc_value *res) {
    fedc_tree *t = fedc_tree_new(p);
    for (int i = 0; t && i < fedc_program_num_outputs(callee); i++)
        if (put(p, t, fedc_program_output_name(callee, i), res[i])) return NULL;
    return t;
}

/* Inlines or maps `callee` with args by name. */
static fedc_tree *call(fedc_program *p, const fedc_program *callee, const fedc_tree *args, bool map) {
    const char *who = map ? "tree_map" : "tree_call";
    if (!callee) return usable(p, args, who) ? NULL : (fedc_program_fail(p, FEDC_EINVAL, "%s: program is NULL", who), NULL);
    fedc_value *in = arguments(p, who, callee, args);
    fedc_value *res = in ? fedc__values(fedc_program_num_outputs(callee)) : NULL;
    fedc_status st = !in ? FEDC_EINVAL : res ? FEDC_OK : FEDC_ENOMEM;
    if (!st) st = map ? fedc_map(p, callee, in, fedc_program_num_inputs(callee), res) : fedc_program_inline(p, callee, in, res);
    if (st && !p->status) fedc__program_fail(p, st);
    fedc_tree *t = st ? NULL : results(p, callee, res);
    fedc_free(in);
    fedc_free(res);
    return t;
}

fedc_tree *fedc_tree_call(fedc_program *p, const fedc_program *callee, const fedc_tree *args) {
    return call(p, callee, args, false);
}

fedc_tree *fedc_tree_map(fedc_program *p, const fedc_program *body, const fedc_tree *args) {
    return call(p, body, args, true);
}

/* The body reordered as fedc_fold wants it: inputs carries then sequences, outputs
 * the carries' next values then the per-step results. */
static fedc_status fold_body(const fedc_program *body, const fedc_tree *carries, const fedc_tree *xs, fedc_program **out) {
    fedc_program *w;
    fedc_status st = fedc_program_create(&w);
    if (st) return st;
    fedc_tree *args = fedc_tree_new(w);
    const fedc_tree *parts[2] = {carries, xs};
    for (int k = 0; k < 2; k++)
        for (int i = 0; args && i < parts[k]->n; i++) {
            fedc_value in = fedc_program_find_input(body, parts[k]->name[i]);
            if (in == FEDC_NONE) {
                fedc_program_fail(w, FEDC_EINVAL, "tree_fold: the body has no input \"%s\" (a %s)", parts[k]->name[i],
                                  k ? "sequence" : "carry");
                break;
            }
            fedc_tree_set(w, args, parts[k]->name[i], fedc_input(w, parts[k]->name[i], fedc_value_type(body, in)));
        }
    fedc_tree *res = fedc_tree_call(w, body, args);
    for (int i = 0; res && i < carries->n; i++) {
        if (find(res, carries->name[i]) < 0) {
            fedc_program_fail(w, FEDC_EINVAL, "tree_fold: the body has no output \"%s\" for the carry of that name",
                              carries->name[i]);
            break;
        }
        fedc_program_output(w, carries->name[i], res->value[find(res, carries->name[i])]);
    }
    for (int i = 0; res && i < res->n; i++)
        if (find(carries, res->name[i]) < 0) fedc_program_output(w, res->name[i], res->value[i]);
    st = fedc_program_status(w);
    if (st) fedc_program_destroy(w);
    else *out = w;
    return st;
}

fedc_tree *fedc_tree_fold(fedc_program *p, const fedc_program *body, const fedc_tree *carries, const fedc_tree *xs,
                          fedc_value length) {
    if (usable(p, carries, "tree_fold") || usable(p, xs, "tree_fold")) return NULL;
    if (!body) return fedc_program_fail(p, FEDC_EINVAL, "tree_fold: body is NULL"), NULL;
    fedc_program *w = NULL;
    fedc_status st = fold_body(body, carries, xs, &w);
    if (st) return fedc_program_fail(p, st, "%s", fedc_errmsg()), NULL; /* the body's error becomes p's */
    int nc = carries->n, nx = xs->n, nout = fedc_program_num_outputs(w);
    fedc_value *in = fedc__values(nc + nx + nout), *res = in ? in + nc + nx : NULL;
    fedc_tree *t = NULL;
    if (!in) fedc_program_fail(p, FEDC_ENOMEM, "tree_fold: out of memory");
    if (in) memcpy(in, carries->value, (size_t)nc * sizeof *in), memcpy(in + nc, xs->value, (size_t)nx * sizeof *in);
    if (in && !fedc_fold(p, w, in, nc, in + nc, nx, length, res)) t = results(p, w, res);
    fedc_free(in);
    fedc_program_destroy(w);
    return t;
}

/* ------------------------------------------------- leaf-by-leaf operations -- */

typedef fedc_value (*unary_fn)(fedc_program *p, fedc_value x, fedc_value arg);
typedef fedc_value (*binary_fn)(fedc_program *p, fedc_value a, fedc_value b);

static fedc_tree *each(fedc_program *p, const char *who, const fedc_tree *t, unary_fn f, fedc_value arg) {
    fedc_tree *r = usable(p, t, who) ? NULL : fedc_tree_new(p);
    for (int i = 0; r && i < t->n; i++) {
        fedc_value v = f(p, t->value[i], arg);
        if (v == FEDC_NONE || append(p, r, t->name[i], v)) return NULL;
    }
    return r;
}

/* b's leaf of each of a's names: the two must have the same names. */
static fedc_tree *pairwise(fedc_program *p, const char *who, const fedc_tree *a, const fedc_tree *b, binary_fn f) {
    if (usable(p, a, who) || usable(p, b, who)) return NULL;
    if (a->n != b->n)
        return fedc_program_fail(p, FEDC_EINVAL, "%s: the trees have %d and %d leaves", who, a->n, b->n), NULL;
    fedc_tree *r = fedc_tree_new(p);
    for (int i = 0; r && i < a->n; i++) {
        int k = i < b->n && !strcmp(a->name[i], b->name[i]) ? i : find(b, a->name[i]);
        if (k < 0) return fedc_program_fail(p, FEDC_EINVAL, "%s: the second tree has no leaf \"%s\"", who, a->name[i]), NULL;
        fedc_value v = f(p, a->value[i], b->value[k]);
        if (v == FEDC_NONE || append(p, r, a->name[i], v)) return NULL;
    }
    return r;
}

static fedc_value broadcast1(fedc_program *p, fedc_value x, fedc_value arg) { return (void)arg, fedc_broadcast(p, x); }
static fedc_value sum1(fedc_program *p, fedc_value x, fedc_value arg) { return (void)arg, fedc_sum(p, x); }
static fedc_value mean1(fedc_program *p, fedc_value x, fedc_value arg) { return (void)arg, fedc_mean(p, x); }
static fedc_value weighted_mean1(fedc_program *p, fedc_value x, fedc_value w) { return fedc_weighted_mean(p, x, w); }
static fedc_value scale1(fedc_program *p, fedc_value x, fedc_value s) { return fedc_mul(p, x, s); }
static fedc_value broadcast_down1(fedc_program *p, fedc_value x, fedc_value arg) { return (void)arg, fedc_broadcast_down(p, x); }
static fedc_value sum_up1(fedc_program *p, fedc_value x, fedc_value arg) { return (void)arg, fedc_sum_up(p, x); }
static fedc_value mean_up1(fedc_program *p, fedc_value x, fedc_value arg) { return (void)arg, fedc_mean_up(p, x); }
static fedc_value weighted_mean_up1(fedc_program *p, fedc_value x, fedc_value w) { return fedc_weighted_mean_up(p, x, w); }

fedc_tree *fedc_tree_broadcast(fedc_program *p, const fedc_tree *t) { return each(p, "tree_broadcast", t, broadcast1, FEDC_NONE); }
fedc_tree *fedc_tree_sum(fedc_program *p, const fedc_tree *t) { return each(p, "tree_sum", t, sum1, FEDC_NONE); }
fedc_tree *fedc_tree_mean(fedc_program *p, const fedc_tree *t) { return each(p, "tree_mean", t, mean1, FEDC_NONE); }
fedc_tree *fedc_tree_weighted_mean(fedc_program *p, const fedc_tree *t, fedc_value w) {
    return each(p, "tree_weighted_mean", t, weighted_mean1, w);
}
fedc_tree *fedc_tree_scale(fedc_program *p, const fedc_tree *t, fedc_value s) { return each(p, "tree_scale", t, scale1, s); }
fedc_tree *fedc_tree_broadcast_down(fedc_program *p, const fedc_tree *t) {
    return each(p, "tree_broadcast_down", t, broadcast_down1, FEDC_NONE);
}
fedc_tree *fedc_tree_sum_up(fedc_program *p, const fedc_tree *t) { return each(p, "tree_sum_up", t, sum_up1, FEDC_NONE); }
fedc_tree *fedc_tree_mean_up(fedc_program *p, const fedc_tree *t) { return each(p, "tree_mean_up", t, mean_up1, FEDC_NONE); }
fedc_tree *fedc_tree_weighted_mean_up(fedc_program *p, const fedc_tree *t, fedc_value w) {
    return each(p, "tree_weighted_mean_up", t, weighted_mean_up1, w);
}

fedc_tree *fedc_tree_add(fedc_program *p, const fedc_tree *a, const fedc_tree *b) { return pairwise(p, "tree_add", a, b, fedc_add); }
fedc_tree *fedc_tree_sub(fedc_program *p, const fedc_tree *a, const fedc_tree *b) { return pairwise(p, "tree_sub", a, b, fedc_sub); }
fedc_tree *fedc_tree_mul(fedc_program *p, const fedc_tree *a, const fedc_tree *b) { return pairwise(p, "tree_mul", a, b, fedc_mul); }

fedc_tree *fedc_tree_axpy(fedc_program *p, fedc_value s, const fedc_tree *x, const fedc_tree *y) {
    return fedc_tree_add(p, fedc_tree_scale(p, x, s), y);
}

fedc_tree *fedc_tree_full_like(fedc_program *p, const fedc_tree *t, double value) {
    fedc_tree *r = usable(p, t, "tree_full_like") ? NULL : fedc_tree_new(p);
    for (int i = 0; r && i < t->n; i++) {
        fedc_value v = fedc_full(p, fedc_value_type(p, t->value[i]), value);
        if (v == FEDC_NONE || append(p, r, t->name[i], v)) return NULL;
    }
    return r;
}

/* The sum over leaves of sum(leaf), f32[]. */
static fedc_value total(fedc_program *p, const fedc_tree *t) {
    fedc_value s = FEDC_NONE;
    for (int i = 0; t && i < t->n; i++) {
        fedc_value v = fedc_reduce_sum(p, t->value[i], NULL, -1, false);
        s = s == FEDC_NONE ? v : fedc_add(p, s, v);
    }
    return s == FEDC_NONE && t && !p->status ? fedc_program_fail(p, FEDC_EINVAL, "tree_dot: the tree is empty") : s;
}

fedc_value fedc_tree_dot(fedc_program *p, const fedc_tree *a, const fedc_tree *b) {
    return total(p, pairwise(p, "tree_dot", a, b, fedc_mul));
}

fedc_value fedc_tree_sq_norm(fedc_program *p, const fedc_tree *t) { return fedc_tree_dot(p, t, t); }
