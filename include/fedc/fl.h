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

typedef enum fedc_algorithm_kind {
    FEDC_ALG_FEDSGD,
    FEDC_ALG_FEDAVG, /* with a server optimizer other than SGD(1): FedOpt (FedAdam, FedYogi, ...) */
    FEDC_ALG_FEDPROX,
    FEDC_ALG_COUNT
} fedc_algorithm_kind;

typedef struct fedc_algorithm {
    fedc_algorithm_kind kind;
    fedc_optimizer client_opt; /* re-initialised every round */
    fedc_optimizer server_opt; /* applied to the averaged update as a pseudo-gradient */
    double prox_mu;            /* FedProx */
    int64_t batch_size;
    int64_t max_steps;         /* batches per client in the program (padded) */
    bool dropout;              /* train with the model's dropout */
} fedc_algorithm;

const char *fedc_algorithm_name(fedc_algorithm_kind kind); /* "fedsgd", "fedavg", "fedprox" */
fedc_status fedc_algorithm_parse(const char *name, fedc_algorithm_kind *out);

/* Builds one round of `a` on model `m` (the interface above). */
fedc_status fedc_algorithm_round(const fedc_model *m, const fedc_algorithm *a, fedc_program **out);

/* Builds the evaluation program: inputs <param>@server, x/y/mask/steps@clients as
 * above (no key); outputs loss_sum, correct, count (f32[]@server: sums over the
 * clients' real examples) and per-client loss/correct/count (f32[]@clients) for
 * the per-client accuracy distribution. */
fedc_status fedc_evaluation_program(const fedc_model *m, int64_t batch_size, int64_t max_steps, fedc_program **out);

/* ------------------------------------------------------------------ train -- */

/* What `fedc train` runs: a federated training job from data to metrics. */
typedef struct fedc_train_config {
    const char *data;       /* a dataset path (fedc_dataset_open) */
    const char *test_data;  /* NULL: none (IDX: the t10k file beside the train file) */
    fedc_data_format format;
    const char *task;       /* "emnist", "fashion", "heart", "none"; NULL: from the data */
    const char *partition;  /* centralized data: "iid", "dirichlet:ALPHA", "shards:K" */
    int64_t num_clients;    /* clients to partition centralized data into */
    const char *model;      /* "logistic", "dense", "cnn", "heart" */
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
    bool resume;            /* continue from out_dir's checkpoint */
    bool quiet;             /* no progress lines */
    bool profile;           /* print the time per op kind of the rounds at the end */
    FILE *log;              /* progress and summary (NULL: stdout) */
} fedc_train_config;

typedef struct fedc_train_result {
    int rounds_run;
    double train_loss, test_loss, test_accuracy; /* last evaluated */
    double accuracy_quantiles[3]; /* of the test clients' accuracies: p10, median, p90 */
    double seconds, examples_per_s;
} fedc_train_result;

/* Fills a config with the defaults `fedc train --help` documents. */
void fedc_train_defaults(fedc_train_config *c);
fedc_status fedc_train(const fedc_train_config *c, fedc_train_result *result);
/* Evaluates the model in a checkpoint (any safetensors file holding the model's
 * parameters by name) on every client of c->data (with c's task and model). */
fedc_status fedc_evaluate_checkpoint(const fedc_train_config *c, const char *checkpoint, fedc_train_result *result);

#ifdef __cplusplus
}
#endif
#endif /* FEDC_FL_H */
