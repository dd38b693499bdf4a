/* fl.h — what the algorithms and the training job share (internal). */
#ifndef FEDC_FL_INTERNAL_H
#define FEDC_FL_INTERNAL_H

#include <string.h>

#include "core/internal.h"
#include "fedc/fl.h"

/* The most parameter tensors an algorithm takes: well above the models' own
 * limit (the transformer "base" preset has 150; with Adam's two slots per tensor a
 * round has about 3 values per tensor). */
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

/* The i32[4] dropout key of step t: key + [0, 0, 0, t]. */
fedc_value fedc__fl_step_key(fedc_program *p, fedc_value key, fedc_value t);

/* A client's fold over its batches (src/fl/local_fold.c). A step body carries
 * the counters loss_sum, count (f32), t (i32: the step) and key (the client's
 * dropout stream), and takes one batch, x, y and mask, as the objective's inputs
 * are typed. */
typedef struct fedc__step {
    fedc_value loss_sum, count, t, key;
} fedc__step;
void fedc__step_inputs(fedc_program *p, fedc__step *s);
fedc_tree *fedc__step_batch(fedc_program *p, const fedc_program *objective);
/* The counters' outputs after a batch whose mean loss is `loss` over `count`
 * examples; then the program's status. */
fedc_status fedc__step_outputs(fedc_program *p, const fedc__step *s, fedc_value loss, fedc_value count);
/* Runs `step` over the client's real batches (data's x, y, mask and steps), from
 * `carries` and zeroed counters (added to it) and data's key: the results by name. */
fedc_tree *fedc__fold_batches(fedc_program *p, const fedc_program *step, fedc_tree *carries, const fedc_tree *data);
/* The client's outputs examples (the fold's count) and loss (its mean). */
fedc_status fedc__fold_outputs(fedc_program *p, const fedc_tree *res);
/* Ends a builder: *out = p if st and p's status are FEDC_OK, else p is destroyed. */
fedc_status fedc__fl_done(fedc_program *p, fedc_status st, fedc_program **out);

/* key + [0, 0, 0, k]: the k-th stream after key's (i32 addition wraps; the
 * aggregators' streams, src/fl/aggregators.c). */
fedc_value fedc__key_plus(fedc_program *p, fedc_value key, int32_t k);

/* Compression in fedc_round_aggregate (src/fl/compress.c): r's settings checked;
 * each client's update rotated (with r's rotate, by the round's rotation from
 * server_key) and quantized; the aggregate rotated back and the bits a client sent
 * output as aggregator/bits. */
fedc_status fedc__compress_check(const fedc_aggregation *a);
/* A robust aggregator's aggregate of update (src/fl/robust_round.c), the
 * malicious clients (bad, FEDC_NONE: none) sending the round's attack: of a kind
 * each computes alone (fedc__attack_per_client) in the clients' map, ALIE or IPM
 * (fedc__attack_from_honest) in the aggregator's store; zeroed when its norm is
 * above `zero` (> 0; 0: none) after the attack, in the map too; the values its clients read
 * made before their map, so that the map can take them (called as the round's
 * inputs are made); its server state (cclip's centre) added to a state whose
 * "params" are the model. */
fedc_tree *fedc__robust_round(fedc_round *r, const fedc_tree *update, fedc_value weight, fedc_value bad, double zero);
fedc_status fedc__robust_round_inputs(fedc_round *r);
/* The round's malicious flags (FEDC_ATTACK_MALICIOUS, made at the first call), and
 * whether a's attack is one each client computes from its own update alone
 * (sign_flip, scale, gaussian; src/fl/attack.c), or one made from the honest
 * clients' statistics (alie, ipm). */
fedc_value fedc__attack_malicious(fedc_program *p);
bool fedc__attack_per_client(const fedc_attack *a);
bool fedc__attack_from_honest(const fedc_attack *a);
fedc_status fedc__robust_server_state(fedc_program *p, const fedc_aggregation *a, fedc_tree *state);
fedc_tree *fedc__compress_update(fedc_round *r, const fedc_tree *update, fedc_value server_key);
/* Each client's data key (i32[4]@clients): r->data's, or the program's "key" input. */
fedc_value fedc__round_client_key(fedc_round *r);
fedc_tree *fedc__compress_finish(fedc_round *r, fedc_tree *mean, const fedc_tree *update, fedc_value server_key);

/* FedAvg's server half on local training's results `out` (delta/, examples,
 * loss): the server optimizer on the weighted mean delta, then fedc_round_finish
 * (FedAvg's and FedProx's end). */
fedc_status fedc__fedavg_finish(fedc_round *r, const fedc_tree *out);
/* A round's @groups output of each group's train loss (HierFAVG's; fedc train
 * writes it in the metrics). */
#define FEDC_GROUP_LOSS "group_loss"
/* The hierarchical rounds' shared steps (src/fl/hierfavg.c): the hyperparameter
 * group_rounds E, checked (a whole number); group round e (from 0), each client
 * training from its group's model w_g (@groups) with its dropout stream moved
 * past the earlier group rounds' steps, into *out (local training's results:
 * delta/, examples, loss @clients); and the FEDC_GROUP_LOSS output of out: each
 * group's weighted mean of its clients' losses. */
fedc_status fedc__hier_group_rounds(fedc_round *r, int *rounds);
fedc_status fedc__hier_group_round(fedc_round *r, const fedc_tree *w_g, int e, fedc_tree **out);
fedc_status fedc__hier_group_loss(fedc_round *r, const fedc_tree *out);
/* The server's pseudo-gradient after E > 1 group rounds of plain SGD groups:
 * the groups' drift before the last group round (w - w_g, weighted by the
 * groups' weights) plus η times the last one's flat weighted mean of the
 * clients' deltas, `out`'s, weighted by n (fedc_round_weight of its examples);
 * eta FEDC_NONE: η = 1 (no scaling op). */
fedc_tree *fedc__hier_flat_grad(fedc_round *r, const fedc_tree *w_g, const fedc_tree *out, fedc_value n,
                                fedc_value eta);
/* The server optimizer's step on the pseudo-gradient grad (@server): r->server
 * with new params and opt (fedc_round_server_opt without the aggregation). */
fedc_tree *fedc__server_step(fedc_round *r, const fedc_tree *grad);

/* fedc_round_gradients with a given objective (fedc_round_objective's interface,
 * with grad) instead of the model's: Mime's tests differentiate FedJAX's loss. */
fedc_status fedc__round_gradients_with(fedc_round *r, const fedc_program *objective, const fedc_tree *w,
                                      fedc_tree **out);

/* Adds the model's forward pass on one batch to p: inputs w/<param> (into *w),
 * x, y, mask and key (the dropout stream, used when r's algorithm trains with
 * dropout), outputs in *o (src/fl/round.c). `training`: the model's training
 * form (an imported BatchNorm on the batch's statistics; o->updates). */
fedc_status fedc__model_on_batch(const fedc_round *r, fedc_program *p, bool training, fedc_tree **w,
                                 fedc_model_outputs *o);

/* r->data: the round's inputs x, y, mask, steps (and key) @clients, typed by r's
 * model and algorithm's batch_size and max_steps (src/fl/algorithm.c). */
fedc_status fedc__round_data(fedc_round *r, bool key);
/* The model's objective on one batch, for evaluation: fedc__model_on_batch's
 * inputs, outputs loss, count and correct (src/fl/evaluate.c). */
fedc_status fedc__model_objective(const fedc_round *r, fedc_program **out);
/* Each client's sums over its batches r->data at its model w (@clients): loss_sum,
 * correct, count (f32[]@clients), with fedc_round_evaluate's objective. */
fedc_tree *fedc__client_sums(fedc_round *r, const fedc_tree *w, const fedc_program *objective);
/* An evaluation's sums, by name: over a client's real examples. */
extern const char *const fedc__eval_sums[3]; /* "loss_sum", "correct", "count" */
/* The evaluation program's outputs from the per-client sums `res` (@clients, by
 * fedc__eval_sums' names): each summed over the clients (and over its own axis
 * when a slot holds several clients: `packed`), and as it is, client_<name>. */
fedc_status fedc__eval_outputs(fedc_program *p, const fedc_tree *res, bool packed);
/* A server state {params, opt: opt's initial state for params} (the default
 * server_init's, with the algorithm's own optimizer: DiLoCo's outer Nesterov,
 * FedAsync's SGD of rate α). */
fedc_tree *fedc__server_state(fedc_program *p, const fedc_tree *params, const fedc_optimizer *opt);
/* a's definition (FedAvg's when a->def is NULL). */
FEDC_INTERNAL_API const fedc_algorithm_def *fedc__algorithm_def(const fedc_algorithm *a);


/* The groups of `clients` clients that --groups N (alpha 0: contiguous ranges)
 * or --groups dirichlet:N:ALPHA (keyed by seed) gives, as fedc_train_client_groups
 * does: also a deployment's, from its plan (src/deploy/plan_groups.c). */
FEDC_INTERNAL_API fedc_status fedc__client_groups_drawn(int64_t clients, int n, double alpha, uint64_t seed, int32_t *group_of);
/* clients[0..n) ordered by their groups (group_of[client], of `groups`), stably:
 * the order fedc train runs a grouped round in, and the one a deployment hands
 * each group's clients to its aggregator in. Group g's clients are then
 * [first[g], first[g + 1]) (first: groups + 1 ints); scratch: n. */
FEDC_INTERNAL_API void fedc__order_by_group(const int32_t *group_of, int groups, int64_t *clients, int n,
                                            int64_t *scratch, int *first);

/* One "client_id,NUMBER" line of a per-client file (--groups-file, --client-domains),
 * cut at its last comma: *id the client (in text), *value a whole number in
 * [0, top]; else an error naming path:line and `what` ("group", "domain"), with
 * `hint` after the range (src/fl/group_partition.c). */
fedc_status fedc__parse_client_line(const char *path, size_t line, char *text, const char *what, long top,
                                    const char *hint, const char **id, long *value);

#endif
