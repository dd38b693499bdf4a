/*
 * bench_transformer_cohorts — FAX's language-model experiment in miniature (issue 20,
 * target 4): FedAvg rounds of a transformer preset with a fixed amount of work per
 * client, for cohorts of 8 to 2,048 clients, on 1 and 2 threads: seconds a round,
 * seconds a client, tokens a second, FLOPs a round counted analytically, the MFU
 * against this machine's measured sgemm peak, and the peak RSS. FAX (Rush et al.
 * 2023) reports its rounds this way: 2,048 clients, 3.355e7 tokens and 2.293e13
 * FLOPs a round.
 *
 *     ./build/bench_transformer_cohorts [tiny|small] [--cohorts 8,32,...] [--threads 1,2]
 *                                       [--steps S] [--batch B] [--rounds R]
 *     (defaults: tiny; cohorts 8,32,128,512,2048; threads 1,2; 4 steps of batch 4 a
 *     client; 2 timed rounds after a warm-up one)
 *
 * Each (threads, cohort) runs in a child process of its own, so its peak RSS is its
 * own: `fedc train` (fedc_train) on synthetic Zipf word ranks, the cohort every
 * client of the data (so every round trains the same clients), each client exactly
 * S x B sequences of the preset's context (S steps of SGD, lr 0.1; the server's
 * SGD at lr 1: FedAvg). A round's time is the wall time between two on_round calls
 * (batches filled, clients trained, the server's step). Targets: seconds a client
 * flat from 8 to 2,048 clients (<= 1.1x) and the RSS flat in the cohort. The
 * clients' data is O(cohort) by nature (the synthetic tokens, and the round's
 * batches x, y and mask bound as the round's @clients inputs), so the memory
 * figure is the peak RSS less that data, as bench_cohort_memory counts it.
 *
 * FLOPs: the matmuls of a training step counted as bench_transformer_step counts
 * them (bench_transformer_flops: 6 FLOPs per weight per token, and causal
 * attention), times the round's tokens. The MFU's denominator is the sgemm peak
 * of the threads used (fedc__kernels_sgemm_gflops at 1 thread, times the threads).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/bench.h"
#include "kernels/kernels.h"

enum { MAX_COHORTS = 16, MAX_ROUNDS = BENCH_MAX_ROUNDS - 1 };

typedef struct preset {
    const char *name;
    int64_t layers, width, context, vocab;
} preset;

static const preset PRESETS[] = {{"tiny", 2, 32, 16, 90}, {"small", 6, 256, 128, 10004}};

typedef struct job {
    const preset *p;
    int64_t cohort, steps, batch;
    int threads, rounds;
} job;

typedef struct outcome {
    double round_s;
    size_t peak_rss;
} outcome;

/* In the child: trains the job's rounds and reports the median round and the peak RSS. */
static void measure(void *ctx, void *result) {
    const job *j = ctx;
    char data[96], model[32];
    snprintf(data, sizeof data, "synthetic:zipf:%lld:%lld:%lld", (long long)j->cohort, (long long)(j->steps * j->batch),
             (long long)j->p->context);
    snprintf(model, sizeof model, "transformer:%s", j->p->name);
    fedc_train_config c;
    fedc_train_defaults(&c);
    c.data = data;
    c.model = model;
    c.vocab_size = j->p->vocab - 4; /* the task adds PAD, OOV, BOS and EOS */
    c.algorithm.def = fedc_algorithm_find("fedavg");
    c.algorithm.batch_size = j->batch;
    c.algorithm.dropout = false;
    BENCH_FAIL_IF(fedc_optimizer_parse("sgd", 0.1, &c.algorithm.client_opt));
    BENCH_FAIL_IF(fedc_optimizer_parse("sgd", 1.0, &c.algorithm.server_opt));
    c.steps = j->steps;
    c.rounds = j->rounds + 1;
    c.clients_per_round = (int)j->cohort;
    c.threads = j->threads;
    c.eval_every = 0;
    c.eval_clients = 1;
    c.quiet = true;
    c.out_dir = "out/bench/transformer_cohorts";
    bench_round_timer t;
    bench_round_timer_install(&t, &c);
    fedc_train_result res;
    BENCH_FAIL_IF(fedc_train(&c, &res));
    outcome *o = result;
    o->round_s = bench_median(t.seconds + 1, j->rounds);
    o->peak_rss = bench_proc_status_bytes("VmHWM");
}

static int parse_list(const char *s, int64_t *out, int max) {
    int n = 0;
    for (char *end; *s && n < max; s = *end ? end + 1 : end) {
        out[n] = strtoll(s, &end, 10);
        if (end == s || out[n] < 1) return -1;
        n++;
    }
    return n;
}

static int usage(void) {
    fprintf(stderr, "usage: bench_transformer_cohorts [tiny|small] [--cohorts 8,32,...] [--threads 1,2] [--steps S] "
                    "[--batch B] [--rounds R]\n");
    return 2;
}

int main(int argc, char **argv) {
    job j = {&PRESETS[0], 0, 4, 4, 1, 2};
    int64_t cohorts[MAX_COHORTS] = {8, 32, 128, 512, 2048}, threads[4] = {1, 2};
    int ncohorts = 5, nthreads = 2;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "tiny") || !strcmp(a, "small")) j.p = &PRESETS[!strcmp(a, "small")];
        else if (!strcmp(a, "--cohorts") && v) ncohorts = parse_list(argv[++i], cohorts, MAX_COHORTS);
        else if (!strcmp(a, "--threads") && v) nthreads = parse_list(argv[++i], threads, 4);
        else if (!strcmp(a, "--steps") && v) j.steps = atoll(argv[++i]);
        else if (!strcmp(a, "--batch") && v) j.batch = atoll(argv[++i]);
        else if (!strcmp(a, "--rounds") && v) j.rounds = atoi(argv[++i]);
        else return usage();
    }
    if (ncohorts < 1 || nthreads < 1 || j.steps < 1 || j.batch < 1 || j.rounds < 1 || j.rounds > MAX_ROUNDS)
        return usage();
    printf("BLAS kernels: OpenBLAS %s\n", bench_share_blas_core());
    double peak1 = fedc__kernels_sgemm_gflops(512, 10);
    double tokens_client = (double)(j.steps * j.batch * j.p->context);
    double flops_client = bench_transformer_flops(j.p->layers, j.p->width, j.p->context, j.p->vocab, j.steps * j.batch);
    printf("transformer:%s, %lld steps of batch %lld a client: %.0f tokens, %.4g FLOPs a client; sgemm peak %.1f "
           "GFLOP/s a thread\n",
           j.p->name, (long long)j.steps, (long long)j.batch, tokens_client, flops_client, peak1);
    printf("threads  clients  s/round  ms/client  vs first  tokens/s  GFLOP/round  GFLOP/s  MFU  RSS-data MB  vs first\n");
    for (int t = 0; t < nthreads; t++) {
        double first_client = 0, first_rss = 0;
        for (int k = 0; k < ncohorts; k++) {
            j.threads = (int)threads[t];
            j.cohort = cohorts[k];
            outcome o;
            if (bench_in_child(measure, &j, &o, sizeof o)) {
                fprintf(stderr, "bench_transformer_cohorts: the run of %lld clients failed\n", (long long)j.cohort);
                return 1;
            }
            double sequences = (double)(j.cohort * j.steps * j.batch);
            double data = sequences * (double)(3 * 4 * j.p->context + 4); /* tokens, x, y: i32; mask: f32 */
            double per_client = o.round_s / (double)j.cohort, rss = ((double)o.peak_rss - data) / 1e6;
            double gflop = flops_client * (double)j.cohort / 1e9, gflops = gflop / o.round_s;
            if (!k) first_client = per_client, first_rss = rss;
            printf("%7d  %7lld  %7.2f  %9.3f  %7.3fx  %8.0f  %11.2f  %7.1f  %2.0f%%  %11.1f  %7.3fx\n", j.threads,
                   (long long)j.cohort, o.round_s, 1e3 * per_client, per_client / first_client,
                   tokens_client * (double)j.cohort / o.round_s, gflop, gflops,
                   100 * gflops / (peak1 * j.threads), rss, rss / first_rss);
            bench_json("transformer_cohorts",
                       "\"preset\": \"%s\", \"threads\": %d, \"clients\": %lld, \"round_s\": %.4f, \"gflops\": %.2f, "
                       "\"rss_less_data_mb\": %.1f",
                       j.p->name, j.threads, (long long)j.cohort, o.round_s, gflops, rss);
        }
    }
    return 0;
}
