/*
 * fedc/fl.h — federated learning algorithms as programs, and the training job.
 *
 * An algorithm declares what it keeps and builds one round as a federated program
 * on value trees (fedc/tree.h), so that it reads like its pseudocode:
 *
 *     FedAvg / FedOpt (Reddi et al. 2020), src/fl/fedavg.c:
 *         delta_i, n_i = map(client_update)(broadcast(w), data_i)     // local steps
 *         w, opt = server_opt(w, weighted_mean(delta_i, n_i), opt)   // SGD lr 1: FedAvg
 *
 * What an algorithm declares (fedc_algorithm_def):
 *   - its hyperparameters: name, default, valid range, help (`fedc train
 *     --algorithm NAME --set NAME=VALUE`; `fedc train --algorithm NAME --help`);
 *   - its server state: server_init builds it from the model's parameters as a
 *     tree whose "params" subtree is the model (the default: {params, opt: the
 *     server optimizer's state});
 *   - its per-client state, kept across rounds: client_init builds a never-seen
 *     client's value (NULL: none). The training job keeps it in a file, read and
 *     written for each round's cohort only (docs/client_state.md);
 *   - the per-client metadata it reads: fedc_round_meta inputs (e.g. the client's
 *     dataset size), bound by the training job by name;
 *   - optionally, its own evaluation (each test client at its own model) and a
 *     warm start (a first pass over a cohort that sets the server state);
 * and `fedc train` allocates, binds, checkpoints and resumes all of it by name.
 *
 * The round program's interface (every algorithm's, fedc_algorithm_round):
 *   inputs   server/<leaf>@server     the server state (server/params/<param>: the model)
 *            client/<leaf>@clients    the cohort's client state (stateful algorithms)
 *            group/<leaf>@groups      the round's groups' state (group_init: hierfedopt)
 *            x@clients [steps, batch, ...example], y@clients i32[steps, batch],
 *            mask@clients f32[steps, batch] (1: a real example), steps@clients i32[]
 *            (real batches), key@clients i32[4] (the client's dropout stream this round)
 *            meta/<name>@clients      metadata, as the builder asked for it
 *   outputs  server/<leaf>, client/<leaf>, group/<leaf>: the new states (the inputs' names and types),
 *            train_loss f32[]@server (example-weighted mean), examples f32[]@server
 *
 * A worked example, an algorithm written outside the library (examples/new_algorithm.c
 * has it whole, in 56 lines): FedAvg whose server steps by a hyperparameter `alpha`
 * times the mean delta, over the library's local training.
 *
 *     static const fedc_hparam_def hp[] = {{"alpha", 1.0, 0, 10, "server step, times the mean delta"}};
 *     static fedc_status damped_round(fedc_round *r) {
 *         fedc_program *p = r->p;
 *         fedc_tree *w = fedc_tree_subtree(p, r->server, "params"), *out;  // delta/, examples, loss
 *         fedc_status st = fedc_round_local_training(r, NULL, &out);
 *         if (st) return st;
 *         fedc_value n = fedc_tree_get(p, out, "examples");
 *         fedc_tree *delta = fedc_tree_weighted_mean(p, fedc_tree_subtree(p, out, "delta"),
 *                                                    fedc_round_weight(r, n));
 *         fedc_value step = fedc_scalar(p, FEDC_F32, -fedc_round_hparam(r, "alpha"));
 *         fedc_tree *next = fedc_tree_copy(p, r->server);
 *         fedc_tree_set_tree(p, next, "params", fedc_tree_axpy(p, step, delta, w));
 *         return fedc_round_finish(r, next, NULL, fedc_tree_get(p, out, "loss"), n);
 *     }
 *     static const fedc_algorithm_def damped = {.name = "damped", .summary = "...",
 *         .hparams = hp, .nhparams = 1, .round = damped_round};
 *     fedc_algorithm_register(&damped);   // then found by name: --algorithm damped --set alpha=0.5
 *
 * A stateful algorithm adds server_init and client_init (src/fl/scaffold.c: the
 * server's c and every client's c_i).
 */
#ifndef FEDC_FL_H
#define FEDC_FL_H

#include <stdio.h>

#include "fedc/ad.h"
#include "fedc/aggregate.h"
#include "fedc/data.h"
#include "fedc/exec.h"
#include "fedc/nn.h"
#include "fedc/tree.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct fedc_algorithm fedc_algorithm;

/* A hyperparameter: `fedc train --set NAME=VALUE`, checked against [min, max]. */
typedef struct fedc_hparam_def {
    const char *name;  /* "mu" */
    double value;      /* the default */
    double min, max;   /* the valid range, both ends included */
    const char *help;  /* one line for --help */
} fedc_hparam_def;

enum { FEDC_MAX_HPARAMS = 16 };

/* How a round weights its clients, in TFF's names: by the examples each trained on
 * this round (the default: TFF's NUM_EXAMPLES, and FedJAX's whenever a client's
 * batches cover its data once), by its dataset's size (FedJAX's FedAvg; the two
 * differ when a last batch wraps or --steps caps a client), or all alike. */
typedef enum fedc_weighting { FEDC_WEIGHT_EXAMPLES, FEDC_WEIGHT_DATASET, FEDC_WEIGHT_UNIFORM } fedc_weighting;
FEDC_API const char *fedc_weighting_name(fedc_weighting w); /* "examples", "dataset", "uniform" */
FEDC_API fedc_status fedc_weighting_parse(const char *name, fedc_weighting *out);

/* What a round builder gets: the round program being built, with its inputs made
 * (the interface above) as trees. */
typedef struct fedc_round {
    const fedc_model *model;
    const fedc_algorithm *alg;
    fedc_program *p;
    fedc_tree *server; /* @server: server/<leaf> inputs, as server_init made them */
    fedc_tree *client; /* @clients: client/<leaf> inputs, as client_init made them; NULL: none */
    fedc_tree *data;   /* @clients: x, y, mask, steps, key */
    int cohort;        /* a warm start's clients (it runs on exactly that many); 0 in a round: any */
    fedc_tree *group;  /* @groups: group/<leaf> inputs, the round's groups' state, as group_init made it; NULL: none */
} fedc_round;

typedef struct fedc_algorithm_def {
    const char *name;    /* what `fedc train --algorithm` takes */
    const char *summary; /* one line for --algorithms */
    const fedc_hparam_def *hparams;
    int nhparams;        /* at most FEDC_MAX_HPARAMS */
    bool one_pass;       /* each client computes one gradient of all its data (FedSGD): one epoch */
    /* The server state at the start, built in p from the model's parameters
     * `params` (@server inputs): a tree with the model under "params". NULL:
     * {params, opt: a->server_opt's state (fedc_optimizer_init_tree)}. */
    fedc_status (*server_init)(const fedc_model *m, const fedc_algorithm *a, fedc_program *p, const fedc_tree *params,
                               fedc_tree **state);
    /* A never-seen client's state: local constants built in p. NULL (the hook,
     * or the *state it sets): none (for this model). */
    fedc_status (*client_init)(const fedc_model *m, const fedc_algorithm *a, fedc_program *p, fedc_tree **state);
    /* Builds the round on r (the interface above), ending with fedc_round_finish. */
    fedc_status (*round)(fedc_round *r);
    /* Builds the evaluation program on r, for an algorithm whose evaluation reads
     * more of its state than the server's model (HypCluster's clusters, APFL's
     * personal models). NULL: fedc_evaluation_program on the server state's params.
     * r->server: inputs server/<leaf>@server; r->client (stateful algorithms): the
     * test clients' state, client/<leaf>@clients, with meta/seen (the state kept
     * for the training client of the same id; client_init's, seen 0, for a client
     * never trained); r->data: x, y, mask, steps @clients (no key), in the
     * evaluation's batches (r->alg: a copy with its batch_size and max_steps, and
     * dropout off); outputs fedc_evaluation_program's, which fedc_round_evaluate
     * makes. */
    fedc_status (*evaluation)(fedc_round *r);
    /* A start from the data (NULL: none): built on r as a round is, with the same
     * inputs and r->cohort set (the program runs on exactly that many clients),
     * its outputs server/<leaf> replace server_init's state (other outputs are
     * ignored). fedc train runs it once, before the first round of a fresh run, on
     * clients_per_round clients drawn for it (HypCluster's k-means++ start). A
     * builder that adds nothing to r->p means no warm start (a hyperparameter
     * turned it off). */
    fedc_status (*warm_start)(fedc_round *r);
    /* Its round uses the groups (@groups; fedc_exec_options.groups): fedc train
     * --groups applies to it (HierFAVG). */
    bool grouped;
    /* A grouped algorithm's never-seen group's state: local constants built in p
     * (NULL, or a tree without leaves: none). Each group of the partition keeps
     * its own across rounds, untouched in a round without it; the round reads
     * the round's groups' as r->group and returns the new one with
     * fedc_round_group_state (hierfedopt: each group's server optimizer). */
    fedc_status (*group_init)(const fedc_model *m, const fedc_algorithm *a, fedc_program *p, fedc_tree **state);
} fedc_algorithm_def;

FEDC_API extern const fedc_algorithm_def fedc_algorithm_fedsgd;  /* src/fl/fedsgd.c */
FEDC_API extern const fedc_algorithm_def fedc_algorithm_fedavg;  /* src/fl/fedavg.c; FedOpt with a server optimizer */
FEDC_API extern const fedc_algorithm_def fedc_algorithm_fedprox; /* src/fl/fedprox.c */
FEDC_API extern const fedc_algorithm_def fedc_algorithm_scaffold; /* src/fl/scaffold.c */
FEDC_API extern const fedc_algorithm_def fedc_algorithm_apfl;     /* src/fl/apfl.c */
FEDC_API extern const fedc_algorithm_def fedc_algorithm_mime;     /* src/fl/mime.c */
FEDC_API extern const fedc_algorithm_def fedc_algorithm_mimelite; /* src/fl/mimelite.c */
FEDC_API extern const fedc_algorithm_def fedc_algorithm_agnostic_fedavg; /* src/fl/agnostic_fedavg.c */
FEDC_API extern const fedc_algorithm_def fedc_algorithm_hypcluster;      /* src/fl/hypcluster.c */
FEDC_API extern const fedc_algorithm_def fedc_algorithm_fednova; /* src/fl/fednova.c */
FEDC_API extern const fedc_algorithm_def fedc_algorithm_feddyn;  /* src/fl/feddyn.c; per-client state */
FEDC_API extern const fedc_algorithm_def fedc_algorithm_diloco;  /* src/fl/diloco.c; per-client state */
FEDC_API extern const fedc_algorithm_def fedc_algorithm_fedbuff;  /* src/fl/fedbuff.c; asynchronous (fedc train) */
FEDC_API extern const fedc_algorithm_def fedc_algorithm_fedasync; /* src/fl/fedbuff.c; asynchronous (fedc train) */
FEDC_API extern const fedc_algorithm_def fedc_algorithm_hierfavg; /* src/fl/hierfavg.c; groups (fedc train --groups) */
FEDC_API extern const fedc_algorithm_def fedc_algorithm_hierfedopt; /* src/fl/hierfedopt.c; groups, per-group state */
FEDC_API extern const fedc_algorithm_def fedc_algorithm_fedbn;    /* src/fl/fedbn.c; BatchNorm kept per client */

struct fedc_algorithm {
    const fedc_algorithm_def *def; /* NULL: FedAvg */
    fedc_optimizer client_opt;     /* re-initialised every round, unless the algorithm keeps it */
    fedc_optimizer server_opt;     /* applied to the averaged update as a pseudo-gradient */
    int64_t batch_size;
    int64_t max_steps;             /* batches per client in the program (padded) */
    bool dropout;                  /* train with the model's dropout */
    fedc_weighting weighting;
    /* Hyperparameters set by fedc_algorithm_set (the others read as their
     * defaults): values in def->hparams' order. */
    double hparam[FEDC_MAX_HPARAMS];
    bool hparam_set[FEDC_MAX_HPARAMS];
    /* How fedc_round_aggregate (and so fedc_round_server_opt) averages the updates:
     * robust zeroing, DP-FedAvg's clip and noise (fedc/aggregate.h); all zero: the
     * weighted mean. An adaptive clip adds server/aggregator/clip to the server state. */
    fedc_aggregation aggregation;
};

/* Adds `def` (which must outlive its use) to the algorithms found by name.
 * EINVAL if the name is taken, def lacks a name or a round builder, or its
 * hyperparameters are malformed (a default outside its range, a repeated name). */
FEDC_API fedc_status fedc_algorithm_register(const fedc_algorithm_def *def);
/* The algorithm called `name`; NULL (with an error naming the choices) if none. */
FEDC_API const fedc_algorithm_def *fedc_algorithm_find(const char *name);
/* The known algorithms, built-in first, for listing: i in [0, fedc_algorithm_count()). */
FEDC_API int fedc_algorithm_count(void);
FEDC_API const fedc_algorithm_def *fedc_algorithm_at(int i);
/* a's name ("fedavg" when a->def is NULL). */
FEDC_API const char *fedc_algorithm_name(const fedc_algorithm *a);

/* Sets hyperparameter `name` of a's algorithm, checked against its range; the
 * error names the parameter, the range and the algorithm's hyperparameters. */
FEDC_API fedc_status fedc_algorithm_set(fedc_algorithm *a, const char *name, double value);
/* "NAME=VALUE", as --set takes it. */
FEDC_API fedc_status fedc_algorithm_set_text(fedc_algorithm *a, const char *assignment);
/* The value of hyperparameter `name` (its default unless set); NAN, with an
 * error, if the algorithm has none of that name. Round builders use
 * fedc_round_hparam, which fails the round instead. */
FEDC_API double fedc_algorithm_hparam(const fedc_algorithm *a, const char *name);
/* Prints the algorithm's hyperparameters (name, default, range, help) to out. */
FEDC_API void fedc_algorithm_print_hparams(const fedc_algorithm_def *def, FILE *out);

/* The three programs of an algorithm on model m (the interface above):
 * server_init: inputs params/<param>@server, outputs server/<leaf>@server;
 * client_init: no inputs, outputs client/<leaf> (*out NULL: the algorithm keeps no
 * client state); round: the round. */
FEDC_API fedc_status fedc_algorithm_server_init(const fedc_model *m, const fedc_algorithm *a, fedc_program **out);
FEDC_API fedc_status fedc_algorithm_client_init(const fedc_model *m, const fedc_algorithm *a, fedc_program **out);
/* group_init's program: no inputs, outputs group/<leaf> (*out NULL: the algorithm
 * keeps no group state, or none with these settings). */
FEDC_API fedc_status fedc_algorithm_group_init(const fedc_model *m, const fedc_algorithm *a, fedc_program **out);
FEDC_API fedc_status fedc_algorithm_round(const fedc_model *m, const fedc_algorithm *a, fedc_program **out);
/* The algorithm's warm start on a cohort of `clients` (its def's `warm_start`; a
 * round's inputs, outputs server/<leaf>); *out NULL if it has none. */
FEDC_API fedc_status fedc_algorithm_warm_start(const fedc_model *m, const fedc_algorithm *a, int clients,
                                               fedc_program **out);
/* The algorithm's own evaluation program (its def's `evaluation`) over batches of
 * batch_size, max_steps of them; *out NULL if it has none (then fedc_train
 * evaluates with fedc_evaluation_program, binding the model by its names). */
FEDC_API fedc_status fedc_algorithm_evaluation(const fedc_model *m, const fedc_algorithm *a, int64_t batch_size,
                                               int64_t max_steps, fedc_program **out);

/* ------------------------------------------------- building a round -- */

/* Hyperparameter `name` of r's algorithm; if it has none of that name, the round
 * fails (naming it and the ones it has) and the value is NAN. */
FEDC_API double fedc_round_hparam(const fedc_round *r, const char *name);
/* The metadata input meta/<name>, made on first use: "num_examples" (f32[]@clients:
 * each client's dataset size), "population" (f32[]@server: the number of clients
 * in the training data), "seen" (f32[]@clients: 1 for a client whose state was
 * kept, 0 for one that starts from client_init's value: APFL starts a new
 * client's model at the server's) or "domain" (f32[]@clients: a whole number, the
 * client's domain: EMNIST's writer group, or `fedc train --client-domains FILE`)
 * or "index" (f32[]@clients: the client's place in the cohort, 0, 1, ...).
 * An error for a name the training job does not know. */
FEDC_API fedc_value fedc_round_meta(fedc_round *r, const char *name);
/* Each client's weight (f32[]@clients) under r->alg->weighting, given the examples
 * it trained on (f32[]@clients). */
FEDC_API fedc_value fedc_round_weight(fedc_round *r, fedc_value examples);
/* The client's objective on one batch, as a program: inputs w/<param> (the model
 * being trained), x, y, mask, key (one batch: [batch, ...]) and the leaves of
 * `extra` (at their local types; NULL: none); outputs loss, the model's masked mean
 * loss plus what `term` adds (NULL: nothing), and count (f32[]: the batch's real
 * examples). With `grad`, also grad_w/<param>. A gradient correction is a term
 * too: <w, c> adds c to the gradient (SCAFFOLD's c - c_i, Mime's c - g_i(x)).
 * The model runs in its training form; a model with state (an imported
 * BatchNorm's running statistics) adds update/<param>, its new values, which
 * fedc_round_local_training takes in place of the optimizer's step. */
typedef fedc_value (*fedc_loss_term)(fedc_program *p, const fedc_round *r, const fedc_tree *w, const fedc_tree *extra);
FEDC_API fedc_status fedc_round_objective(const fedc_round *r, const fedc_tree *extra, fedc_loss_term term, bool grad,
                                          fedc_program **out);

/* How fedc_round_local_training trains each client. */
typedef struct fedc_local_training {
    /* The objective, with grad (fedc_round_objective); NULL: the model's loss. */
    const fedc_program *objective;
    /* @clients values for the objective's extra inputs, by name; "start/<param>"
     * needs none: it is the model the client started from (FedProx's anchor). */
    const fedc_tree *extra;
    /* @clients: the client optimizer's state to start from, as
     * fedc_optimizer_init_tree names it (NULL: a fresh one). */
    const fedc_tree *opt_state;
    /* Every step uses opt_state as it is, and it is not returned (Mime's clients
     * apply the server optimizer's state without updating it). */
    bool frozen_opt_state;
    /* @clients, by parameter name: added to every step's gradient (SCAFFOLD's
     * c - c_i; NULL: none). The same as a loss term <w, offset>, but cheaper: the
     * term costs a pass over the model forward and two back every step (the
     * gradient of a sum is a broadcast), the offset one add. */
    const fedc_tree *gradient_offset;
    /* @clients: the model each client starts from, by parameter name (NULL: the
     * broadcast server params; HypCluster's clients start from their cluster's).
     * delta is start - w_client. */
    const fedc_tree *start;
    /* Also return model/<param>, each client's model after its steps (FedBN keeps
     * its BatchNorm's values, bit for bit rather than as start - delta). */
    bool with_model;
} fedc_local_training;

/* Local training as FedAvg's clients do it, mapped over the cohort: each client
 * starts from the broadcast model r->server's params (or how->start) and steps through its real
 * batches with the client optimizer on the objective's gradient. The result,
 * @clients: delta/<param> = w - w_client, examples (trained on), loss (their
 * mean), steps (f32[]: local steps taken), opt/<leaf> (the optimizer's final
 * state, unless frozen), and model/<param> with how->with_model. `how` NULL: FedAvg's.
 * Under MPI a rank has the data (x, y, mask, steps) of its own clients only: read
 * them inside maps (as this does), and take per-client counts from its results. */
FEDC_API fedc_status fedc_round_local_training(fedc_round *r, const fedc_local_training *how, fedc_tree **out);
/* The mean gradient of each client's batches at the models `w` (@clients, by
 * parameter name; typically fedc_tree_broadcast of the server's params): a fold
 * summing count * gradient over its real batches (FedSGD's client; Mime's full
 * gradient, whose server mean is fedc_tree_weighted_mean(grad, examples)). The
 * result, @clients: grad/<param>, examples, loss (the mean over the examples). */
FEDC_API fedc_status fedc_round_gradients(fedc_round *r, const fedc_tree *w, fedc_tree **out);
/* The server's mean of `update` (@clients, by parameter name) under
 * r->alg->aggregation (fedc/aggregate.h): the weighted mean (weight: f32[]@clients)
 * when it is off; with zeroing, the weighted mean of the zeroed updates; with a
 * clip, DP-FedAvg's unweighted (Σ clipped + noise) / m, weight unused. It adds the
 * outputs fedc/aggregate.h lists; call it once per round. A round that has an
 * aggregation but never calls it fails at fedc_round_finish, naming the algorithm. */
FEDC_API fedc_tree *fedc_round_aggregate(fedc_round *r, const fedc_tree *update, fedc_value weight);
/* FedOpt's server half: w, opt = server_opt(w, fedc_round_aggregate(update, weight), opt)
 * on r->server's params and opt (update: @clients, by parameter name; weight:
 * f32[]@clients). The new server state: r->server with those two replaced. */
FEDC_API fedc_tree *fedc_round_server_opt(fedc_round *r, const fedc_tree *update, fedc_value weight);
/* Evaluates each client at its own model `w` (@clients, by parameter name; the
 * server's is fedc_tree_broadcast of its params) on its batches r->data with
 * `objective` (inputs w/<param>, x, y, mask [, key]; outputs loss, its mean loss,
 * count and correct; NULL: the model's). Adds the evaluation's outputs: loss_sum,
 * correct, count (f32[]@server: sums over the clients' real examples) and
 * client_loss_sum, client_correct, client_count (f32[]@clients). */
FEDC_API fedc_status fedc_round_evaluate(fedc_round *r, const fedc_tree *w, const fedc_program *objective);
/* Adds the round's outputs: server/<leaf> from `server` (r->server's leaves and
 * types), client/<leaf> from `client` (@clients; NULL when stateless), train_loss
 * (the mean of loss@clients weighted by examples@clients) and examples (their sum). */
FEDC_API fedc_status fedc_round_finish(fedc_round *r, const fedc_tree *server, const fedc_tree *client, fedc_value loss,
                                       fedc_value examples);
/* Adds the round's new group state, outputs group/<leaf> from `group` (@groups;
 * r->group's leaves and types). A round with r->group calls it before
 * fedc_round_finish, which fails the round otherwise. */
FEDC_API fedc_status fedc_round_group_state(fedc_round *r, const fedc_tree *group);

/* ------------------------------------------------ driving rounds by hand -- */

/* An algorithm's server state between rounds, for a program that runs round
 * programs itself (fedc_train does this, and the client state, on its own):
 *
 *     fedc_server_state *s;
 *     fedc_server_state_create(&s, m, &alg, params);   // server_init on the model
 *     fedc_server_state_bind(s, round_ex);             // server/<leaf> inputs
 *     for (...) { fedc_executor_run(round_ex); fedc_server_state_update(s, round_ex); }
 *     fedc_server_state_params(s, params);             // the trained model, flat
 */
typedef struct fedc_server_state fedc_server_state;
FEDC_API fedc_status fedc_server_state_create(fedc_server_state **out, const fedc_model *m, const fedc_algorithm *a,
                                              const float *params);
FEDC_API void fedc_server_state_destroy(fedc_server_state *s); /* safe on NULL */
FEDC_API fedc_status fedc_server_state_bind(fedc_server_state *s, fedc_executor *round);
/* Takes the round's outputs server/<leaf> as the state (bound inputs see it). */
FEDC_API fedc_status fedc_server_state_update(fedc_server_state *s, const fedc_executor *round);
/* The model's parameters in the state, flat in fedc_model_param_offset order. */
FEDC_API fedc_status fedc_server_state_params(const fedc_server_state *s, float *params);

/* Builds the evaluation program: inputs <param>@server, x/y/mask/steps@clients as
 * above (no key); outputs loss_sum, correct, count (f32[]@server: sums over the
 * clients' real examples) and per-client loss/correct/count (f32[]@clients) for
 * the per-client accuracy distribution. */
FEDC_API fedc_status fedc_evaluation_program(const fedc_model *m, int64_t batch_size, int64_t max_steps, fedc_program **out);
/* The same with up to `segments` clients sharing each @clients slot, their
 * examples one after another in its batches (src/fl/evaluate_packed.c): one more
 * input, segment@clients i32[max_steps, batch_size] (the row's client, its place
 * in the slot), and the per-client outputs f32[segments]@clients, one per place. */
FEDC_API fedc_status fedc_evaluation_program_packed(const fedc_model *m, int64_t batch_size, int64_t max_steps,
                                                    int segments, fedc_program **out);

/* ------------------------------------------------------------------ train -- */

struct fedc_train_result; /* below: what fedc_train returns, and on_round sees */

/* fedc_train_config's rng. */
typedef enum fedc_rng_kind { FEDC_RNG_COUNTER, FEDC_RNG_FEDJAX } fedc_rng_kind;

/* What `fedc train` runs: a federated training job from data to metrics. */
typedef struct fedc_train_config {
    const char *data;       /* a dataset path (fedc_dataset_open), or synthetic:zipf:CLIENTS:EXAMPLES[:WORDS[:S]]
                               (fedc_synthetic_zipf word ranks, for stackoverflow; EXAMPLES may be
                               MIN+lognormal(MU,SIGMA): fedc_synthetic_zipf_lognormal) */
    const char *test_data;  /* NULL: none (IDX: the t10k file beside the train file) */
    double holdout;         /* > 0: hold out this fraction of each client's examples, the last ones, as the
                               test split (fedc_dataset_holdout; instead of test_data) */
    fedc_data_format format;
    const char *task;       /* "emnist", "fashion", "heart", "shakespeare", "stackoverflow", "none"
                               (fedc_train_tasks()); NULL: from the data (synthetic:zipf:... is stackoverflow) */
    const char *client_domains; /* "client_id,domain" lines: each client's meta/domain (NULL: EMNIST writer
                               ids' domains, else 0; src/fl/train_domains.c) */
    const char *partition;  /* centralized data: "iid", "dirichlet:ALPHA", "shards:K" */
    int64_t num_clients;    /* clients to partition centralized data into */
    const char *model;      /* "logistic", "dense", "cnn", "heart", "shakespeare_lstm", "stackoverflow_lstm",
                               "transformer[:PRESET]" (text tasks; its context becomes the task's length) */
    const char *vocab;      /* stackoverflow: the vocabulary file, most frequent word first */
    int64_t vocab_size;     /* stackoverflow: words of it to use (0: 10000); the model has vocab_size + 4 ids */
    fedc_algorithm algorithm; /* kind, optimizers, hyperparameters, batch_size, dropout; max_steps 0: derived */
    int epochs;             /* local epochs per round */
    int64_t steps;          /* local steps per round (0: all the epochs' batches) */
    int rounds, clients_per_round;
    uint64_t seed;
    int threads;
    int eval_every;         /* rounds; 0: only at the end */
    int64_t eval_clients;   /* test clients per evaluation, sampled; 0: all */
    int64_t eval_batch_size;
    bool eval_unpacked;     /* one test client per evaluation slot (default: several share batches; the same counts) */
    const char *out_dir;    /* metrics.jsonl, metrics.csv, curves.svg, checkpoint.safetensors */
    int checkpoint_every;   /* rounds; 0: none */
    bool resume;            /* continue from out_dir's checkpoint (docs/training.md: what may differ) */
    bool strict;            /* a client that fails (its data cannot be loaded, or its update is not finite)
                               fails the job; by default it is dropped from its round with a warning */
    bool quiet;             /* no progress lines */
    bool profile;           /* print the time per op kind of the rounds at the end */
    bool poisson;           /* Poisson client sampling: each client joins a round independently with probability
                               sampling_rate (0: clients_per_round / clients, so that clients_per_round is the
                               expected cohort); false: exactly clients_per_round (docs/privacy.md) */
    double sampling_rate;
    double dp_delta;        /* with DP noise (algorithm.aggregation): the δ of the ε that metrics.jsonl reports;
                               0: 1 / the training data's clients (docs/privacy.md) */
    FILE *log;              /* progress and summary (NULL: stdout) */
    /* Called after every round (on rank 0 of an MPI job), once its evaluation and
     * checkpoint are done: `round` counts from 1, `evaluated` says whether this round
     * was evaluated, and `so_far` holds the figures as fedc_train would return them
     * now (train_loss this round's; the test figures the last evaluation's, NAN before
     * the first). A non-zero status stops the job, which returns it (with the
     * callback's message, if it set one). NULL: none. The Python package's
     * per-round callback is one. */
    fedc_status (*on_round)(void *ctx, int round, bool evaluated, const struct fedc_train_result *so_far);
    void *on_round_ctx;
    /* Time (fedc/clock.h; docs/training.md, "Time"): the clients' speeds, bandwidths
     * and availability (NULL: none; rounds take no virtual time); a round's deadline
     * in virtual seconds, its clients that would report later dropped (0: none); and
     * over-selection, ceil(clients_per_round × (1 + over_select)) clients selected,
     * the first clients_per_round to report kept (0: none). */
    const char *clock;
    double round_deadline, over_select;
    /* fedbuff, fedasync: the order of reports from an arrival log (a run's
     * RUN/arrivals.jsonl; docs/algorithms.md) instead of the clock (NULL: the clock's). */
    const char *replay;
    /* Groups (docs/training.md, "Groups"), for an algorithm whose round uses them
     * (hierfavg): every training client in one of `groups` groups
     * (fedc_train_client_groups): contiguous ranges of the clients in the data's
     * order, sizes as equal as can be (the first ones one larger); with
     * groups_alpha > 0, shares of the clients drawn from Dirichlet(groups_alpha)
     * (fedc_partition_groups_dirichlet, keyed by seed); or groups_file's
     * "client_id,group" lines (groups 0: its largest group + 1). 0 groups and no
     * file: one group of every client. A round's cohort is ordered by group. */
    int groups;
    double groups_alpha;
    const char *groups_file;
    /* Sampling per level: each round, groups_per_round of the groups that have
     * clients (0: all of them), then up to clients_per_group of each one's
     * clients (0: all), each draw keyed by (seed, round); either one set replaces
     * clients_per_round. Neither: clients_per_round clients drawn as without
     * groups, and the groups are those with a client among them. */
    int groups_per_round, clients_per_group;
    /* Whose random draws pick the clients and shuffle their examples: fedc's counter
     * RNG keyed by (seed, round, client) (FEDC_RNG_COUNTER, the default), or
     * FedJAX's (FEDC_RNG_FEDJAX, `--rng fedjax`): NumPy's RandomState as
     * UniformGetClientSampler(fd, clients_per_round, seed) draws round r + 1 and as
     * ShuffleRepeatBatchHParams(seed=seed) shuffles every client's examples, so a run
     * sees FedJAX's clients and batches (seed below 2^32; fixed sampling only;
     * docs/training.md). */
    fedc_rng_kind rng;
    bool frozen_batchnorm;  /* an onnx: model's BatchNorm trains in its inference form, its running statistics
                               kept as they are (fedc_model_options.frozen_batchnorm; docs/onnx.md) */
} fedc_train_config;

typedef struct fedc_train_result {
    int rounds_run;
    bool already_complete; /* resumed a run that had run all its rounds: nothing was trained, and the
                              figures are its metrics' last row */
    int64_t dropped;       /* clients dropped from their rounds so far (the whole run, resumes included) */
    double train_loss, test_loss, test_accuracy; /* last evaluated */
    double accuracy_quantiles[3]; /* of the test clients' accuracies: p10, median, p90 */
    int64_t clients_evaluated;    /* test clients with examples in the last evaluation: the quantiles' sample */
    double seconds, examples_per_s;
} fedc_train_result;

/* sizeof(fedc_train_config) and sizeof(fedc_train_result), for bindings that mirror
 * the two structs (the Python package refuses to run on a library whose sizes
 * differ from its copies'). */
FEDC_API size_t fedc_train_config_size(void);
FEDC_API size_t fedc_train_result_size(void);
/* Fills a config with the defaults `fedc train --help` documents. */
FEDC_API void fedc_train_defaults(fedc_train_config *c);
/* The tasks a config may name, "emnist|fashion|heart|shakespeare|stackoverflow|none"
 * (src/fl/task.c's table). */
FEDC_API const char *fedc_train_tasks(void);
FEDC_API fedc_status fedc_train(const fedc_train_config *c, fedc_train_result *result);
/* The groups of train's clients as c says (groups, groups_alpha with seed,
 * groups_file; above): group_of[i] for each client i of train, in its order, and
 * the number of groups (0 when c gives none, group_of untouched). A file's
 * errors name it and the line: a client the data does not have, one listed
 * twice, a group that is not a whole number in [0, groups); a training client
 * with no line names the client. */
FEDC_API fedc_status fedc_train_client_groups(const fedc_train_config *c, const fedc_dataset *train, int32_t *group_of,
                                              int *groups);
/* Evaluates the model in a checkpoint (any safetensors file holding the model's
 * parameters by name) on every client of c->data (with c's task and model). */
FEDC_API fedc_status fedc_evaluate_checkpoint(const fedc_train_config *c, const char *checkpoint, fedc_train_result *result);

#ifdef __cplusplus
}
#endif
#endif /* FEDC_FL_H */
