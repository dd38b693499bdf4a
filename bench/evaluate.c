/*
 * bench_evaluate — evaluation of the EMNIST CNN, forward only, in large batches
 * (issue 7, workload 2; the PyTorch peer is bench/peers/evaluate_torch.py).
 *
 *     ./build/bench_evaluate [examples] [batch] [threads] [repeats]   (default 10000 500 2 3)
 *
 * The job: fedc's evaluation program (fedc_evaluation_program, what `fedc eval` and
 * `fedc train`'s evaluations run: logits, loss, argmax, per-client sums) of the "cnn"
 * model (FedJAX's EMNIST CNN, 62 classes, no dropout), over `examples` synthetic
 * 28x28x1 examples held by clients of 2 batches each, evaluated in cohorts of 16
 * clients on `threads` workers. After a warm-up pass, `repeats` passes are timed
 * (time in fedc_executor_run; filling the cohorts is excluded, as the peer's data is
 * in tensors beforehand) and the median is reported, with the FLOP rate of the
 * forward pass counted analytically (bench_cnn_forward_flops).
 */
#include <stdio.h>
#include <stdlib.h>

#include "common/bench.h"
#include "common/emnist.h"

int main(int argc, char **argv) {
    int64_t examples = argc > 1 ? atoll(argv[1]) : 10000, batch = argc > 2 ? atoll(argv[2]) : 500;
    int threads = argc > 3 ? atoi(argv[3]) : 2, repeats = argc > 4 ? atoi(argv[4]) : 3;
    if (examples < 1 || batch < 1 || threads < 1 || repeats < 1 || repeats > 100) {
        fprintf(stderr, "usage: bench_evaluate [examples >= 1] [batch >= 1] [threads >= 1] [repeats in 1..100]\n");
        return 2;
    }
    bench_cnn m;
    bench_cnn_create(&m, 0);
    int64_t nclients = (examples + 2 * batch - 1) / (2 * batch);
    int64_t *sizes = malloc((size_t)nclients * sizeof *sizes);
    BENCH_FAIL_IF(!sizes);
    for (int64_t c = 0; c < nclients; c++) sizes[c] = c + 1 < nclients ? 2 * batch : examples - 2 * batch * c;
    double n, t[100];
    bench_cnn_evaluate(&m, sizes, nclients, batch, threads, &n); /* warm-up */
    for (int r = 0; r < repeats; r++) t[r] = bench_cnn_evaluate(&m, sizes, nclients, batch, threads, &n);
    double s = bench_median(t, repeats), flops = bench_cnn_forward_flops();
    printf("EMNIST CNN evaluation: %.0f examples (%lld clients, batch %lld), %d threads: %.3f s, %.0f examples/s, "
           "%.1f GFLOP/s (%.2f MFLOP per example)\n",
           n, (long long)nclients, (long long)batch, threads, s, n / s, n * flops / s * 1e-9, flops * 1e-6);
    bench_json("evaluate", "\"examples\": %.0f, \"batch\": %lld, \"threads\": %d, \"seconds\": %.6f, "
               "\"examples_per_s\": %.3f, \"gflops\": %.3f, \"forward_flops\": %.0f, \"train_flops\": %.0f",
               n, (long long)batch, threads, s, n / s, n * flops / s * 1e-9, flops, bench_cnn_train_flops());
    free(sizes);
    bench_cnn_destroy(&m);
    return 0;
}
