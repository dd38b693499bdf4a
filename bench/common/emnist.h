/* emnist.h — the EMNIST CNN jobs the end-to-end benchmarks share (bench_evaluate,
 * bench_emnist_full): fedc's "cnn" model (FedJAX's EMNIST CNN, 62 classes), its
 * evaluation and FedAvg round programs as `fedc train` builds them, cohort buffers
 * filled with synthetic EMNIST-shaped examples, and the analytic FLOP count of one
 * example. Synthetic pixels are uniform in [0, 1) from a seeded xorshift (cheap, so
 * filling a cohort costs about what copying loaded data does); labels are uniform
 * in 0..61. */
#ifndef FEDC_BENCH_EMNIST_H
#define FEDC_BENCH_EMNIST_H

#include "fl/train.h"
#include "fedc/fedc.h"

typedef struct bench_cnn {
    fedc_model *model;
    float *params; /* fedc_model_size floats, initialised by fedc_model_init(seed) */
} bench_cnn;

void bench_cnn_create(bench_cnn *m, uint64_t seed);
void bench_cnn_destroy(bench_cnn *m);
fedc_status bench_cnn_bind(const bench_cnn *m, fedc_executor *ex);

/* FLOPs of the CNN on one example, multiply-adds counted as 2: the forward pass
 * (convolutions and dense layers) and the training step (forward + backward: every
 * layer's weight gradient and input gradient, except the first layer's input
 * gradient, which backprop never needs). Elementwise work is not counted. */
double bench_cnn_forward_flops(void);
double bench_cnn_train_flops(void);

/* Fills client slot j of cb with `n` synthetic examples of client `client`
 * (ceil(n / batch) batches, the last one masked), at most cb->max_steps batches;
 * key from (seed, round, client) as fedc train does. */
void bench_fill_client(cohort_buffers *cb, int j, uint64_t client, int64_t n, uint64_t seed, uint32_t round);

/* Evaluates the model on clients of the given sizes (synthetic examples), in cohorts
 * of up to 16 clients of up to max_steps batches of `batch`, with `threads`
 * workers; returns the seconds spent in fedc_executor_run (filling excluded) and the
 * examples evaluated in *examples. */
double bench_cnn_evaluate(const bench_cnn *m, const int64_t *sizes, int64_t nclients, int64_t batch, int threads,
                          double *examples);

/* Client sizes shaped like FEMNIST's writers (the LEAF split in `leaf_dir`, one
 * client per writer), resampled to `nclients` clients (client c takes writer
 * c mod writers) and scaled so that they sum to `total`, each at least 1. */
void bench_leaf_shaped_sizes(const char *leaf_dir, int64_t nclients, int64_t total, int64_t *sizes);

#endif
