/* fl.h — what the algorithms share (internal): the client's loss and its
 * gradient as programs, the round's interface, and the server's update. */
#ifndef FEDC_FL_INTERNAL_H
#define FEDC_FL_INTERNAL_H

#include <string.h>

#include "core/internal.h"
#include "fedc/fl.h"

/* The most parameter tensors an algorithm takes: well above the models' own
 * limit (the transformer "base" preset has 150; with Adam's two slots per tensor a
 * round has about 3 values per tensor). The builders keep their per-parameter
 * lists on the heap (fedc__values), so only this number bounds them. */
enum { FEDC__FL_MAX_PARAMS = 1024 };

/* t with placement pl. */
static inline fedc_type fedc__placed(fedc_type t, fedc_placement pl) {
    t.placement = pl;
    return t;
}

/* t with a leading axis of `steps` (a client's batches stacked). */
static inline fedc_type fedc__stacked(fedc_type t, int64_t steps) {
    memmove(t.dims + 1, t.dims, sizeof t.dims - sizeof t.dims[0]);
    t.dims[0] = steps;
    t.rank++;
    return t;
}

/* The client's objective on one batch, as a program:
 *   inputs  <param>..., x [batch, ...], y i32[batch], mask f32[batch], key i32[4],
 *           and for FedProx also anchor_<param>... (the server's model)
 *   outputs loss (the model's masked mean, plus mu/2 ||w - anchor||^2 for FedProx),
 *           count (f32[]: examples in the batch)
 * and, with `grad`, its gradient: outputs loss, count, grad_<param>... */
fedc_status fedc__fl_objective(const fedc_model *m, const fedc_algorithm *a, bool grad, fedc_program **out);

/* The round's inputs (fl.h's interface), added to p in order. */
typedef struct fedc__round_inputs {
    int nparams, nstate;
    fedc_value *params, *state;        /* nparams and nstate, one heap block */
    fedc_value x, y, mask, steps, key; /* @clients */
} fedc__round_inputs;
fedc_status fedc__fl_round_inputs(fedc_program *p, const fedc_model *m, const fedc_algorithm *a, fedc__round_inputs *in);
void fedc__fl_round_inputs_free(fedc__round_inputs *in);

/* The server's half: new params and state from the clients' updates (the
 * pseudo-gradient, @clients, one per param), weighted by `weight`; adds the round's
 * outputs (new_<param>, new_server_state<k>, train_loss, examples). */
fedc_status fedc__fl_server_update(fedc_program *p, const fedc_model *m, const fedc_algorithm *a,
                                   const fedc__round_inputs *in, const fedc_value *updates, fedc_value weight,
                                   fedc_value client_loss);

/* A client body's inputs, in the map's argument order: the params (to w), then
 * one client's x, y, mask, steps and key (local types of the round's `in`). */
typedef struct fedc__client_inputs {
    fedc_value x, y, mask, steps, key;
} fedc__client_inputs;
void fedc__fl_client_inputs(fedc_program *p, const fedc_model *m, const fedc_program *round,
                            const fedc__round_inputs *in, fedc_value *w, fedc__client_inputs *ci);

/* Builds an algorithm's client, the map's body: (params..., x, y, mask, steps, key)
 * -> (update_<param>..., examples, loss); `round` and `in` give the input types. */
typedef fedc_status (*fedc__client_builder)(const fedc_model *m, const fedc_algorithm *a, const fedc_program *round,
                                            const fedc__round_inputs *in, fedc_program **client);
/* The round every algorithm shares: its inputs, map(client)(broadcast(params)...,
 * data), and the server's update with the clients' updates. */
fedc_status fedc__fl_assemble(const fedc_model *m, const fedc_algorithm *a, fedc__client_builder build,
                              fedc_program **out);

/* The i32[4] dropout key of step t: key + [0, 0, 0, t]. */
fedc_value fedc__fl_step_key(fedc_program *p, fedc_value key, fedc_value t);

/* Whether the client's objective has FedProx's proximal term. */
static inline bool fedc__fl_proximal(const fedc_algorithm *a) { return a->def == &fedc_algorithm_fedprox; }

/* FedAvg's round, which FedProx shares (src/fl/fedavg.c). */
fedc_status fedc__fedavg_round(const fedc_model *m, const fedc_algorithm *a, fedc_program **out);

#endif
