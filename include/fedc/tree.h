/*
 * fedc/tree.h — value trees: a program's values under path names, taken whole.
 *
 * A model's parameters, an optimizer's state and an algorithm's state are many
 * tensors that travel together. A tree holds them as leaves named by paths
 * ("conv1/w", "opt/m/conv1/w"), as JAX's pytrees are nested dicts, and every
 * operation below takes a tree whole: broadcast it, map a body over it, average it,
 * subtract two of them, differentiate with respect to one. So an algorithm reads
 * like its pseudocode and never indexes a parameter list:
 *
 *     fedc_tree *w = fedc_tree_subtree(p, server, "params");        // @server
 *     fedc_tree *args = fedc_tree_new(p);
 *     fedc_tree_set_tree(p, args, "w", fedc_tree_broadcast(p, w));  // @clients
 *     fedc_tree_set_tree(p, args, "", data);                        // x, y, mask, steps, key
 *     fedc_tree *out = fedc_tree_map(p, client_update, args);       // by input name
 *     fedc_tree *delta = fedc_tree_weighted_mean(p, fedc_tree_subtree(p, out, "delta"),
 *                                                fedc_tree_get(p, out, "examples"));
 *     fedc_tree *next = fedc_tree_sub(p, w, delta);
 *
 * Trees belong to the program they are built in: their memory is the program's
 * (nothing to free), and they stay valid until the program is destroyed or
 * rewritten (fedc_program_dce renumbers values). Errors are sticky, as with the
 * value builders: a call that fails records the error in the program and returns
 * NULL (or FEDC_NONE), every call given a NULL tree returns NULL, and
 * fedc_program_status() is asked once at the end.
 *
 * Leaves keep the order they were added in; two trees combine leaf by leaf by
 * name (they must have the same names, in any order: the result has the first
 * one's order). A path's parts are separated by '/'; the subtree at "w" is the
 * leaves named "w/...", with "w/" taken off.
 */
#ifndef FEDC_TREE_H
#define FEDC_TREE_H

#include "fedc/program.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct fedc_tree fedc_tree;

/* ------------------------------------------------------- building trees -- */

/* An empty tree of p. */
FEDC_API fedc_tree *fedc_tree_new(fedc_program *p);
/* Sets the leaf at `path` to v (replacing a leaf of that name). */
FEDC_API fedc_status fedc_tree_set(fedc_program *p, fedc_tree *t, const char *path, fedc_value v);
/* Sets every leaf of `sub` under `prefix` ("" or NULL: at the top, by its own names). */
FEDC_API fedc_status fedc_tree_set_tree(fedc_program *p, fedc_tree *t, const char *prefix, const fedc_tree *sub);
/* A copy of t (so that setting leaves of one leaves the other as it was). */
FEDC_API fedc_tree *fedc_tree_copy(fedc_program *p, const fedc_tree *t);

/* ------------------------------------------------------------- reading -- */

FEDC_API int fedc_tree_size(const fedc_tree *t); /* leaves; 0 for NULL */
FEDC_API const char *fedc_tree_name(const fedc_tree *t, int i);
FEDC_API fedc_value fedc_tree_value(const fedc_tree *t, int i);
/* The leaf at `path`; FEDC_NONE, with an error naming the path and the leaves
 * there are, if there is none. */
FEDC_API fedc_value fedc_tree_get(fedc_program *p, const fedc_tree *t, const char *path);
/* Whether t has a leaf at `path` or leaves under it. */
FEDC_API bool fedc_tree_has(const fedc_tree *t, const char *path);
/* The leaves under `prefix`, with "prefix/" taken off; an error if there are none. */
FEDC_API fedc_tree *fedc_tree_subtree(fedc_program *p, const fedc_tree *t, const char *prefix);

/* ---------------------------------------------- programs' inputs and outputs -- */

/* Inputs of p named prefix/<leaf> with the types of `like`'s leaves (`like` may
 * belong to another program) at placement `pl`; the tree of them, by leaf name. */
FEDC_API fedc_tree *fedc_tree_input(fedc_program *p, const char *prefix, const fedc_tree *like, fedc_placement pl);
/* The same with `like`'s own placements. */
FEDC_API fedc_tree *fedc_tree_input_same(fedc_program *p, const char *prefix, const fedc_tree *like);
/* Names every leaf of t as an output prefix/<leaf> ("" or NULL: by the leaf name). */
FEDC_API fedc_status fedc_tree_output(fedc_program *p, const char *prefix, const fedc_tree *t);
/* p's inputs, or outputs, whose names are under `prefix` ("" or NULL: all of them),
 * as a tree (a program built elsewhere read as trees). The tree is kept in p's
 * arena, which grows: not for a program that other threads read meanwhile. */
FEDC_API fedc_tree *fedc_tree_of_inputs(const fedc_program *p, const char *prefix);
FEDC_API fedc_tree *fedc_tree_of_outputs(const fedc_program *p, const char *prefix);

/* ---------------------------------------------------- calling programs -- */

/* Inlines `callee` into p with its inputs taken from `args` by name (every input
 * needs a leaf of that name; other leaves are ignored). The result is the callee's
 * outputs by name. */
FEDC_API fedc_tree *fedc_tree_call(fedc_program *p, const fedc_program *callee, const fedc_tree *args);
/* fedc_map by name: `args` holds a @clients leaf for each input of the body. */
FEDC_API fedc_tree *fedc_tree_map(fedc_program *p, const fedc_program *body, const fedc_tree *args);
/* fedc_fold by name: the body's inputs are the leaves of `carries` and of `xs`
 * (sequences, stacked on a leading axis); its outputs named as a carry are the
 * carry's next value (every carry needs one), the others are per-step results.
 * The result has the final carries and the stacked per-step results, by name. */
FEDC_API fedc_tree *fedc_tree_fold(fedc_program *p, const fedc_program *body, const fedc_tree *carries,
                                   const fedc_tree *xs, fedc_value length);

/* ------------------------------------------------- leaf-by-leaf operations -- */

FEDC_API fedc_tree *fedc_tree_broadcast(fedc_program *p, const fedc_tree *t);
FEDC_API fedc_tree *fedc_tree_sum(fedc_program *p, const fedc_tree *t);
FEDC_API fedc_tree *fedc_tree_mean(fedc_program *p, const fedc_tree *t);
FEDC_API fedc_tree *fedc_tree_weighted_mean(fedc_program *p, const fedc_tree *t, fedc_value w);
/* The hierarchy's moves one level (program.h: broadcast_down, sum_up, ...), leaf by leaf. */
FEDC_API fedc_tree *fedc_tree_broadcast_down(fedc_program *p, const fedc_tree *t);
FEDC_API fedc_tree *fedc_tree_sum_up(fedc_program *p, const fedc_tree *t);
FEDC_API fedc_tree *fedc_tree_mean_up(fedc_program *p, const fedc_tree *t);
FEDC_API fedc_tree *fedc_tree_weighted_mean_up(fedc_program *p, const fedc_tree *t, fedc_value w);

FEDC_API fedc_tree *fedc_tree_add(fedc_program *p, const fedc_tree *a, const fedc_tree *b);
FEDC_API fedc_tree *fedc_tree_sub(fedc_program *p, const fedc_tree *a, const fedc_tree *b);
FEDC_API fedc_tree *fedc_tree_mul(fedc_program *p, const fedc_tree *a, const fedc_tree *b);
/* s * t for a scalar value s (of the leaves' dtype, placed as they are). */
FEDC_API fedc_tree *fedc_tree_scale(fedc_program *p, const fedc_tree *t, fedc_value s);
/* s * x + y: the step w - lr * g is fedc_tree_axpy(p, -lr, g, w). */
FEDC_API fedc_tree *fedc_tree_axpy(fedc_program *p, fedc_value s, const fedc_tree *x, const fedc_tree *y);
/* Constants of t's types (and placements) filled with `value`. */
FEDC_API fedc_tree *fedc_tree_full_like(fedc_program *p, const fedc_tree *t, double value);
/* sum over leaves of sum(a * b), and of sum(t * t): f32[] scalars, placed as the leaves. */
FEDC_API fedc_value fedc_tree_dot(fedc_program *p, const fedc_tree *a, const fedc_tree *b);
FEDC_API fedc_value fedc_tree_sq_norm(fedc_program *p, const fedc_tree *t);

#ifdef __cplusplus
}
#endif
#endif /* FEDC_TREE_H */
