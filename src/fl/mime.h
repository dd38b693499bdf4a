/* mime.h — Mime's and MimeLite's rounds on a given client objective, and the
 * pieces the two share (internal).
 *
 * The rounds (src/fl/mime.c, src/fl/mimelite.c) pass the model's objective
 * (fedc_round_objective with grad); tests/test_mime.c passes FedJAX's test loss
 * (mean of x * w, a model fedc has not got), so that FedJAX's unit tests run on
 * the same code as `fedc train --algorithm mime`. */
#ifndef FEDC_FL_MIME_H
#define FEDC_FL_MIME_H

#include "fl/fl.h"

/* A round of Mime, or of MimeLite, ending with fedc_round_finish. `objective` has
 * fedc_round_objective's interface (inputs w/<param>, x, y, mask, key; outputs
 * loss, count, grad_w/<param>). `diagnostics`: NULL, or set to FedJAX's client
 * diagnostics (@clients): delta_l2_norm, and with MimeLite's clipping
 * clipped_delta_l2_norm. */
fedc_status fedc__mime_round_with(fedc_round *r, const fedc_program *objective, fedc_tree **diagnostics);
fedc_status fedc__mimelite_round_with(fedc_round *r, const fedc_program *objective, fedc_tree **diagnostics);

/* Mime's clients: local training from the server's params with the base
 * optimizer's state r->server/opt applied but not updated, on the gradient
 * g(w) - g(x) + c per batch (x: the server's params, c: `server_grads`, @server).
 * The result is fedc_round_local_training's (delta, examples, loss). */
fedc_status fedc__mime_client_training(fedc_round *r, const fedc_program *objective, const fedc_tree *server_grads,
                                       fedc_tree **out);

/* ------------------------------------------------- shared by the two -- */

/* Fails the round unless the server optimizer is the default (sgd, lr 1): the
 * server steps by server_learning_rate and keeps the base optimizer's state. */
fedc_status fedc__mime_check(fedc_round *r);
/* The full-batch gradient at the server's params (@server): each client's mean
 * gradient over its batches, weighted by the examples in them. */
fedc_status fedc__mime_server_grads(fedc_round *r, const fedc_program *objective, fedc_tree **grads);
/* The base optimizer's state as the clients take it (frozen): r->server's opt,
 * broadcast; NULL when it has none (SGD), which local training reads as none. */
fedc_tree *fedc__mime_client_opt_state(fedc_round *r);
/* FedJAX's client diagnostics of `delta` (@clients), and delta clipped to global
 * norm `clip` (0: not clipped) as the result; `diagnostics` may be NULL. */
fedc_tree *fedc__mime_clip(fedc_round *r, const fedc_tree *delta, double clip, fedc_tree **diagnostics);
/* The server's update and the round's end:
 *     params -= server_learning_rate * weighted_mean(delta, num_examples)
 *     opt = base_optimizer.apply(server_grads, opt)   (its params update discarded)
 * with `trained` (local training's result) giving the loss and examples. */
fedc_status fedc__mime_finish(fedc_round *r, const fedc_tree *server_grads, const fedc_tree *delta,
                              const fedc_tree *trained);
/* round(r, the model's objective, NULL): the two algorithms' round builders. */
typedef fedc_status (*fedc__mime_round_fn)(fedc_round *r, const fedc_program *objective, fedc_tree **diagnostics);
fedc_status fedc__mime_on_model(fedc_round *r, fedc__mime_round_fn round);
/* Both algorithms' server state: {params, opt: the client optimizer's state}. */
fedc_status fedc__mime_server_init(const fedc_model *m, const fedc_algorithm *a, fedc_program *p,
                                   const fedc_tree *params, fedc_tree **state);

#endif
