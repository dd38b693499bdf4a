/* train.h — the training job's state, shared by its files (internal). */
#ifndef FEDC_FL_TRAIN_H
#define FEDC_FL_TRAIN_H

#include "fedc/exec.h"
#include "fedc/tasks.h"
#include "fl/fl.h"

/* A cohort's batches, laid out as the round's @clients inputs want them. */
typedef struct cohort_buffers {
    int clients;
    int64_t batch, max_steps, x_elems, y_elems; /* of one client's x and y */
    fedc_dtype x_dtype;  /* f32, or i32 token ids (stored in x's 4-byte elements) */
    float *x, *mask;
    int32_t *y, *steps, *key;
} cohort_buffers;

typedef struct eval_result {
    double loss, accuracy;
    double quantiles[3]; /* of the clients' accuracies: 10th, 50th, 90th percentile */
    int64_t clients;     /* with examples: how many accuracies the quantiles are of */
} eval_result;

typedef struct trainer {
    const fedc_train_config *c;
    fedc_data_format source_format;
    fedc_dataset *train, *test, *train_central;
    fedc_dataset *holdout_source; /* with --holdout: what train and test split */
    char task[16];
    fedc_heart_disease_options heart;
    fedc_shakespeare_options shakespeare;
    fedc_stackoverflow_options stackoverflow;
    fedc_stackoverflow_vocab *so_vocab;
    bool synthetic;         /* synthetic:zipf:... data (word ranks) */
    float heart_mean[FEDC_HEART_DISEASE_FEATURES], heart_std[FEDC_HEART_DISEASE_FEATURES];
    fedc_model *model;
    fedc_algorithm alg;
    float *params;          /* the model, flat */
    float *state_flat;      /* the server optimizer's state, one buffer ... */
    float **state;          /* ... and its slices, server_state<k> */
    int nstate;
    fedc_program *round, *eval;
    fedc_executor *round_ex, *eval_ex;
    cohort_buffers cohort, eval_cohort;
    int64_t *sampled;
    double *work;        /* per sampled client: its SGD steps (balances the ranks) */
    int first_round;        /* 0, or where a resumed run starts */
    FILE *jsonl, *csv;
    double *curve;          /* per evaluated round: round, train_loss, test_loss, test_accuracy */
    double *client_accuracy; /* per evaluated client, for the quantiles */
    int ncurve, cap_curve;
} trainer;

fedc_status fedc__train_open_data(trainer *t);
fedc_status fedc__cohort_buffers_init(cohort_buffers *cb, const fedc_model *m, int clients, int64_t batch,
                                      int64_t max_steps);
void fedc__cohort_buffers_free(cohort_buffers *cb);
fedc_status fedc__cohort_buffers_bind(const cohort_buffers *cb, fedc_executor *ex, bool with_key);
/* Loads clients[0..k) of ds into cb (shuffled and repeated for training, in order
 * for evaluation). */
fedc_status fedc__train_fill(trainer *t, fedc_dataset *ds, const int64_t *clients, int k, cohort_buffers *cb,
                             bool shuffle, uint32_t round);

/* Metrics, curves and checkpoints (src/fl/train_io.c). */
fedc_status fedc__train_open_metrics(trainer *t);
fedc_status fedc__train_log_metrics(trainer *t, int round, double train_loss, const eval_result *e,
                                    double examples_per_s, double seconds);
fedc_status fedc__train_write_curves(const trainer *t);
fedc_status fedc__train_save_checkpoint(const trainer *t, int next_round);
fedc_status fedc__train_load_checkpoint(trainer *t);
/* The model's parameters alone, from any checkpoint with the model's names. */
fedc_status fedc__train_load_params(trainer *t, const char *path);

#endif
