/*
 * fedc/fl.h — federated learning algorithms as programs.
 *
 * An algorithm builds one round as a federated program from a model and its
 * optimizers; each reads like its pseudocode (src/fl/<name>.c):
 *
 *     FedAvg / FedOpt (Reddi et al. 2020):
 *         delta_i, n_i = map(client_update)(broadcast(w), data_i)   // local optimizer steps
 *         w, s = server_opt(w, grad = weighted_mean(delta_i, n_i), s)  // SGD lr 1 = FedAvg
 *     FedSGD: the same with one gradient of each client's whole data
 *     FedProx: FedAvg whose client loss adds mu/2 ||w - w_server||^2
 *
 * The round program's interface (every algorithm has the same one):
 *   inputs   <param>@server ...           the model (fedc_model_param_name order)
 *            server_state<k>@server ...   the server optimizer's state
 *            x@clients   [steps, batch, ...example]   each client's batches
 *            y@clients   i32[steps, batch]
 *            mask@clients f32[steps, batch]    1 for real examples
 *            steps@clients i32[]               how many of the batches are real
 *            key@clients i32[4]                dropout stream of the client this round
 *   outputs  new_<param> ..., new_server_state<k> ...,
 *            train_loss f32[]@server (example-weighted mean), examples f32[]@server
 */
#ifndef FEDC_FL_H
#define FEDC_FL_H

#include <stdio.h>

#include "fedc/ad.h"
#include "fedc/data.h"
#include "fedc/nn.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct fedc_algorithm fedc_algorithm;

/* An algorithm is a name and a function that builds its round (the interface
 * above). The built-in ones are below; an algorithm written elsewhere (in a user's
 * own file, over the public builder API) is added with fedc_algorithm_register and
 * is then found by name like the others, by `fedc_algorithm_find` and the CLI.
 * A round's server_state inputs must be those of a->server_opt: the caller
 * (fedc_train) allocates and initialises them from it. */
typedef struct fedc_algorithm_def {
    const char *name;    /* what `fedc train --algorithm` takes */
    const char *summary; /* one line for --help */
    bool one_pass;       /* each client computes one gradient of all its data (FedSGD): one epoch */
    fedc_status (*round)(const fedc_model *m, const fedc_algorithm *a, fedc_program **out);
} fedc_algorithm_def;

FEDC_API extern const fedc_algorithm_def fedc_algorithm_fedsgd;  /* src/fl/fedsgd.c */
FEDC_API extern const fedc_algorithm_def fedc_algorithm_fedavg;  /* src/fl/fedavg.c; FedOpt with a server optimizer */
FEDC_API extern const fedc_algorithm_def fedc_algorithm_fedprox; /* src/fl/fedprox.c */

struct fedc_algorithm {
    const fedc_algorithm_def *def; /* NULL: FedAvg */
    fedc_optimizer client_opt; /* re-initialised every round */
    fedc_optimizer server_opt; /* applied to the averaged update as a pseudo-gradient */
    double prox_mu;            /* FedProx */
    int64_t batch_size;
    int64_t max_steps;         /* batches per client in the program (padded) */
    bool dropout;              /* train with the model's dropout */
};

/* Adds `def` (which must outlive its use) to the algorithms found by name.
 * EINVAL if the name is taken or def lacks a name or a round builder. */
FEDC_API fedc_status fedc_algorithm_register(const fedc_algorithm_def *def);
/* The algorithm called `name`; NULL (with an error naming the choices) if none. */
FEDC_API const fedc_algorithm_def *fedc_algorithm_find(const char *name);
/* The known algorithms, built-in first, for listing: i in [0, fedc_algorithm_count()). */
FEDC_API int fedc_algorithm_count(void);
FEDC_API const fedc_algorithm_def *fedc_algorithm_at(int i);
/* a's name ("fedavg" when a->def is NULL). */
FEDC_API const char *fedc_algorithm_name(const fedc_algorithm *a);

/* Builds one round of `a` on model `m` (the interface above). */
FEDC_API fedc_status fedc_algorithm_round(const fedc_model *m, const fedc_algorithm *a, fedc_program **out);

/* Builds the evaluation program: inputs <param>@server, x/y/mask/steps@clients as
 * above (no key); outputs loss_sum, correct, count (f32[]@server: sums over the
 * clients' real examples) and per-client loss/correct/count (f32[]@clients) for
 * the per-client accuracy distribution. */
FEDC_API fedc_status fedc_evaluation_program(const fedc_model *m, int64_t batch_size, int64_t max_steps, fedc_program **out);

/* ------------------------------------------------------------------ train -- */

/* What `fedc train` runs: a federated training job from data to metrics. */
typedef struct fedc_train_config {
    const char *data;       /* a dataset path (fedc_dataset_open), or synthetic:zipf:CLIENTS:EXAMPLES[:WORDS[:S]]
                               (fedc_synthetic_zipf word ranks, for stackoverflow) */
    const char *test_data;  /* NULL: none (IDX: the t10k file beside the train file) */
    double holdout;         /* > 0: hold out this fraction of each client's examples, the last ones, as the
                               test split (fedc_dataset_holdout; instead of test_data) */
    fedc_data_format format;
    const char *task;       /* "emnist", "fashion", "heart", "shakespeare", "stackoverflow", "none"; NULL: from
                               the data (synthetic:zipf:... is stackoverflow) */
    const char *partition;  /* centralized data: "iid", "dirichlet:ALPHA", "shards:K" */
    int64_t num_clients;    /* clients to partition centralized data into */
    const char *model;      /* "logistic", "dense", "cnn", "heart", "shakespeare_lstm", "stackoverflow_lstm",
                               "transformer[:PRESET]" (text tasks; its context becomes the task's length) */
    const char *vocab;      /* stackoverflow: the vocabulary file, most frequent word first */
    int64_t vocab_size;     /* stackoverflow: words of it to use (0: 10000); the model has vocab_size + 4 ids */
    fedc_algorithm algorithm; /* kind, optimizers, prox_mu, batch_size, dropout; max_steps 0: derived */
    int epochs;             /* local epochs per round */
    int64_t steps;          /* local steps per round (0: all the epochs' batches) */
    int rounds, clients_per_round;
    uint64_t seed;
    int threads;
    int eval_every;         /* rounds; 0: only at the end */
    int64_t eval_clients;   /* test clients per evaluation, sampled; 0: all */
    int64_t eval_batch_size;
    const char *out_dir;    /* metrics.jsonl, metrics.csv, curves.svg, checkpoint.safetensors */
    int checkpoint_every;   /* rounds; 0: none */
    bool resume;            /* continue from out_dir's checkpoint (docs/training.md: what may differ) */
    bool strict;            /* a client that fails (its data cannot be loaded, or its update is not finite)
                               fails the job; by default it is dropped from its round with a warning */
    bool quiet;             /* no progress lines */
    bool profile;           /* print the time per op kind of the rounds at the end */
    FILE *log;              /* progress and summary (NULL: stdout) */
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

/* Fills a config with the defaults `fedc train --help` documents. */
FEDC_API void fedc_train_defaults(fedc_train_config *c);
FEDC_API fedc_status fedc_train(const fedc_train_config *c, fedc_train_result *result);
/* Evaluates the model in a checkpoint (any safetensors file holding the model's
 * parameters by name) on every client of c->data (with c's task and model). */
FEDC_API fedc_status fedc_evaluate_checkpoint(const fedc_train_config *c, const char *checkpoint, fedc_train_result *result);

#ifdef __cplusplus
}
#endif
#endif /* FEDC_FL_H */
