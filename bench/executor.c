/*
 * bench_executor.c — the executor's overhead on a GEMM: a one-op program
 * c = matmul(a, b) run through fedc_executor_run, against a raw cblas_sgemm call on
 * the same memory, both single-threaded. Runs alternate (executor, raw, executor,
 * raw, ...) after a warm-up, and the medians are compared.
 *
 *     ./build/bench_executor [n] [pairs]      (default 512, 21)
 *
 * Target (issue 2): overhead < 5% at n = 512.
 */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "common/bench.h"
#include "kernels/kernels.h"

#define CHECK(st)                                                                    \
    do {                                                                             \
        if (st) {                                                                    \
            fprintf(stderr, "bench_executor: %s\n", fedc_errmsg());                  \
            return 1;                                                                \
        }                                                                            \
    } while (0)

int main(int argc, char **argv) {
    int64_t n = argc > 1 ? atoll(argv[1]) : 512;
    int pairs = argc > 2 ? atoi(argv[2]) : 21;
    if (n < 1 || pairs < 1 || pairs > 1000) {
        fprintf(stderr, "usage: bench_executor [n >= 1] [pairs in 1..1000]\n");
        return 2;
    }
    fedc__kernels_init(); /* one BLAS thread, for both sides */

    fedc_type t = fedc_type_make(FEDC_F32, 2, (int64_t[]){n, n});
    fedc_program *p;
    CHECK(fedc_program_create(&p));
    fedc_value a = fedc_input(p, "a", t), b = fedc_input(p, "b", t);
    CHECK(fedc_program_output(p, "c", fedc_matmul(p, a, b, false, false)));
    fedc_executor *ex;
    CHECK(fedc_executor_create(&ex, p, NULL));

    size_t count = (size_t)(n * n);
    float *ad = malloc(count * sizeof *ad), *bd = malloc(count * sizeof *bd), *cd = malloc(count * sizeof *cd);
    for (size_t i = 0; i < count; i++) {
        ad[i] = (float)((i * 7) % 13) / 13.0f;
        bd[i] = (float)((i * 5) % 11) / 11.0f;
    }
    CHECK(fedc_executor_bind(ex, "a", ad));
    CHECK(fedc_executor_bind(ex, "b", bd));

    double *t_exec = malloc((size_t)pairs * sizeof *t_exec), *t_raw = malloc((size_t)pairs * sizeof *t_raw);
    for (int warm = 0; warm < 3; warm++) {
        CHECK(fedc_executor_run(ex));
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)n, (int)n, (int)n, 1.0f, ad, (int)n, bd, (int)n,
                    0.0f, cd, (int)n);
    }
    for (int i = 0; i < pairs; i++) {
        double t0 = bench_now();
        CHECK(fedc_executor_run(ex));
        double t1 = bench_now();
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)n, (int)n, (int)n, 1.0f, ad, (int)n, bd, (int)n,
                    0.0f, cd, (int)n);
        double t2 = bench_now();
        t_exec[i] = t1 - t0;
        t_raw[i] = t2 - t1;
    }
    double me = bench_median(t_exec, pairs), mr = bench_median(t_raw, pairs);
    double flops = 2.0 * (double)n * (double)n * (double)n;
    printf("gemm %lldx%lldx%lld, %d alternating pairs, medians, 1 thread\n", (long long)n, (long long)n, (long long)n,
           pairs);
    printf("  executor     %8.3f ms  %6.1f GFLOP/s\n", 1e3 * me, flops / me * 1e-9);
    printf("  cblas_sgemm  %8.3f ms  %6.1f GFLOP/s\n", 1e3 * mr, flops / mr * 1e-9);
    printf("  overhead     %+7.2f%%   (target < 5%%)\n", 100.0 * (me - mr) / mr);

    free(t_exec);
    free(t_raw);
    free(ad);
    free(bd);
    free(cd);
    fedc_executor_destroy(ex);
    fedc_program_destroy(p);
    return 0;
}
