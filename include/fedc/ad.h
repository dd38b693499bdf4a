/*
 * fedc/ad.h — automatic differentiation as a program transform.
 *
 * The derivative of a program is again a program, built from the same ops, so it
 * can be printed, run, and differentiated again (Hessian-vector products are the
 * gradient of a gradient's inner product with a vector).
 *
 *     fedc_program *g;
 *     const char *wrt[] = {"w1", "w2"};
 *     fedc_grad(model, "loss", wrt, 2, &g);
 *     // g has model's inputs; its outputs are model's outputs plus "grad_w1", "grad_w2".
 *
 * A generated name that the program already uses gets a suffix ("grad_w_1"), so
 * the gradient of a program that returns "grad_w" is still well formed.
 *
 * Only floating-point values carry derivatives; integer and bool values (labels,
 * masks, indices) are constants to AD. Ops without a derivative (argmax, one_hot,
 * comparisons) pass none. A few ops have no rule for their own derivative: the
 * transform says which when a program needs one.
 */
#ifndef FEDC_AD_H
#define FEDC_AD_H

#include "fedc/program.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Reverse mode (vector-Jacobian product). The result program has the inputs of `p`
 * plus one cotangent input per floating-point output o, named "ct_<o>" and of o's
 * type; its outputs are p's outputs plus "grad_<w>" for each name in `wrt`:
 * the sum over outputs o of ct_o^T d o / d w. */
FEDC_API fedc_status fedc_vjp(const fedc_program *p, const char *const *wrt, int nwrt, fedc_program **out);

/* The gradient of the scalar floating-point output `of` with respect to the inputs
 * named in `wrt`. The result program has p's inputs; its outputs are p's outputs
 * plus "grad_<w>" for each w. */
FEDC_API fedc_status fedc_grad(const fedc_program *p, const char *of, const char *const *wrt, int nwrt,
                      fedc_program **out);

/* Forward mode (Jacobian-vector product). The result program has the inputs of
 * `p` plus one tangent input "tangent_<w>" per name in `wrt` (of w's type); its
 * outputs are p's outputs plus "tangent_<o>" for each floating-point output o: the
 * directional derivative sum_w d o / d w . tangent_w.
 *
 * It is built by transposing the reverse-mode program (the vjp is linear in its
 * cotangents, and the transpose of a linear map is its gradient), so it covers
 * every op and primitive that reverse mode covers, including map and fold, and
 * agrees with reverse mode by construction; it costs about two reverse passes. */
FEDC_API fedc_status fedc_jvp(const fedc_program *p, const char *const *wrt, int nwrt, fedc_program **out);

/* The gradient of `of` with respect to every input whose name is under
 * `wrt_prefix` (a tree of inputs, fedc/tree.h): fedc_grad with those names, so
 * its outputs add "grad_<prefix>/<leaf>", which fedc_tree_subtree(p, results,
 * "grad_<prefix>") reads back as a tree. An error if no input is under it. */
FEDC_API fedc_status fedc_grad_tree(const fedc_program *p, const char *of, const char *wrt_prefix, fedc_program **out);

#ifdef __cplusplus
}
#endif
#endif /* FEDC_AD_H */
