/* bench.h — what the benchmarks share: timing, medians, and a FedAvg round built
 * from a model program (the same round the tests and examples write by hand, kept
 * here once until the algorithms library provides it). */
#ifndef FEDC_BENCH_H
#define FEDC_BENCH_H

#include <stdio.h>
#include <stdlib.h>

#include "fedc/fedc.h"

/* Exits with the failing line and fedc's message (benchmarks are programs). */
#define BENCH_FAIL_IF(cond)                                                                          \
    do {                                                                                             \
        if (cond) {                                                                                  \
            fprintf(stderr, "%s: line %d: %s\n", __FILE__, __LINE__, fedc_errmsg());                 \
            exit(1);                                                                                 \
        }                                                                                            \
    } while (0)

double bench_now(void);                 /* monotonic seconds */
double bench_cpu_now(void);             /* the process's CPU seconds (all threads) */

/* Sets up fedc's kernels and gives the PyTorch peers this process starts the same
 * OpenBLAS kernels (OPENBLAS_CORETYPE, unless set already: fedc moves OpenBLAS
 * off a generic core it fell back to, src/kernels/fast_blas.c, and the peer's
 * OpenBLAS would fall back the same way). Returns the core's name. */
const char *bench_share_blas_core(void);
double bench_median(double *v, int n);  /* sorts v */
/* Matmul FLOPs of training the transformer language model (docs/models.md) on
 * `sequences` sequences of `context` tokens: forward and backward. */
/* The wall time of each round of fedc_train: seconds[r] for round r (0-based),
 * from the end of the round before it (or the start); install before fedc_train. */
enum { BENCH_MAX_ROUNDS = 64 };
typedef struct bench_round_timer {
    double last, seconds[BENCH_MAX_ROUNDS];
    int rounds;
} bench_round_timer;
void bench_round_timer_install(bench_round_timer *t, fedc_train_config *c);

double bench_transformer_flops(int64_t layers, int64_t width, int64_t context, int64_t vocab, int64_t sequences);

/* One line of JSON on stdout for bench/run: {"bench": name, <fields>} where fields is
 * a printf format of "key": value pairs. */
void bench_json(const char *name, const char *fields, ...) __attribute__((format(printf, 2, 3)));

/* A line "Key:   123 kB" of /proc/self/status (VmHWM, VmRSS), in bytes; 0 if absent. */
size_t bench_proc_status_bytes(const char *key);
/* Runs measure(ctx, result) in a forked child (so that its peak memory is its own)
 * and copies its result_bytes of result back through a pipe; 0 on success, -1 if
 * the child failed. */
int bench_in_child(void (*measure)(void *ctx, void *result), void *ctx, void *result, size_t result_bytes);

typedef struct bench_param {
    const char *name;
    int rank;
    int64_t dims[4];
} bench_param;

/* What a FedAvg round needs to know about the model: its parameters (inputs of
 * `model` with these names), the per-client data (inputs "x" and "labels" of
 * `model` are one batch; xs and ys are a client's stacked batches), and the
 * clients' learning rate. */
typedef struct bench_fedavg {
    const bench_param *params;
    int nparams;
    fedc_type xs, ys;
    float client_lr;
} bench_fedavg;

fedc_type bench_param_type(const bench_param *p);
fedc_type bench_placed(fedc_type t, fedc_placement pl);

/* The round: inputs <param>@server..., xs@clients, ys@clients, batches (i32[]@clients);
 * every client folds SGD steps (gradient of `model`'s output "loss") over its first
 * `batches` batches; outputs new_<param> = param - weighted_mean(delta, batches)
 * and "loss" (the clients' mean step loss, weighted alike). */
fedc_program *bench_fedavg_round(const fedc_program *model, const bench_fedavg *f);

#endif
