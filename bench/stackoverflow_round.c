/*
 * bench_stackoverflow_round — FedJAX's Stack Overflow next-word benchmark at full
 * scale (issue 20, target 3): seconds per round of `fedc train`, the projected time
 * of FedJAX's 1,500 rounds, and the same rounds in PyTorch
 * (bench/peers/stackoverflow_round_torch.py), on the same clients.
 *
 *     ./build/bench_stackoverflow_round [rounds] [threads] [--clients N] [--no-peer]
 *     (default 2 rounds after a warm-up one, 2 threads, 1,000 clients)
 *
 * The job is FedJAX's experiments/fed_avg/fed_avg.STACKOVERFLOW_WORD.flags: the
 * word LSTM (fedc's stackoverflow_lstm, FedJAX's create_lstm_model: 4,050,748
 * parameters), 50 clients a round, one local epoch of SGD (lr 0.5) in batches of
 * 16 sentences of 20 words, at most 500 steps, the server's Adam (lr 0.02, b1 0.9,
 * b2 0.999, eps 1e-8) on the averaged update.
 *
 * The data is synthetic: Zipfian words, and client sizes heavy-tailed as the real
 * split's are. TFF's Stack Overflow train split has 342,477 users, 135,818,730
 * sentences (396.6 a user), none with fewer than 100 (TFF drops such users). Here
 * client k holds 100 + floor(exp(4.57 + 1.5 z_k)) sentences, z_k standard normal
 * (fedc_synthetic_zipf_lognormal): a mean of about 397 with a long tail, so a few
 * clients of a cohort run the 500-step cap while most run 7 to 40 steps. The real
 * distribution would come from TFF's stackoverflow_train.sqlite (a count of the
 * examples of each client); this is an assumption of its shape, not a fit.
 *
 * Both sides train the same cohorts: the clients fedc_sample_clients draws for
 * each round (what `fedc train` samples), with each one's steps min(ceil(n / 16),
 * 500), written to a JSON file the peer reads. Round r's time is the wall time
 * between the end of round r - 1 and round r (fedc_train's on_round; batches
 * filled, clients trained, the server's step), after one warm-up round. FLOPs per
 * round are counted analytically as FAX counts them (docs/benchmarks.md): 6 x
 * parameters touched per token for the dense layers and the recurrence (the
 * embedding is a lookup), times the 320 positions of a step.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/bench.h"

enum { PER_ROUND = 50, BATCH = 16, WORDS = 20, MAX_STEPS = 500, MIN_SENTENCES = 100, MAX_ROUNDS = BENCH_MAX_ROUNDS - 1 };
enum { VOCAB = 10004, EMBED = 96, HIDDEN = 670, PROJECTED_ROUNDS = 1500 };
static const double SIZE_MU = 4.57, SIZE_SIGMA = 1.5;
static const char *COHORTS = "out/bench/stackoverflow_cohorts.json";

/* Training FLOPs of one SGD step: forward 2 FLOPs a weight a position, backward 4. */
static double step_flops(void) {
    double lstm = 4.0 * HIDDEN * (EMBED + HIDDEN), dense = (double)HIDDEN * EMBED, out = (double)EMBED * VOCAB;
    return 6.0 * (lstm + dense + out) * BATCH * WORDS;
}

/* Writes each round's cohort (client, sentences, steps) for the peer; returns the
 * rounds' total steps in steps[r]. */
static void write_cohorts(int64_t clients, int rounds, int64_t *steps) {
    fedc_dataset *ds;
    BENCH_FAIL_IF(fedc_synthetic_zipf_lognormal(clients, MIN_SENTENCES, SIZE_MU, SIZE_SIGMA, 1, 10000, 1.0, 0, &ds));
    FILE *f = fopen(COHORTS, "w");
    if (!f) {
        fprintf(stderr, "bench_stackoverflow_round: cannot write %s\n", COHORTS);
        exit(1);
    }
    fprintf(f, "{\"batch\": %d, \"words\": %d, \"rounds\": [", BATCH, WORDS);
    for (int r = 0; r < rounds; r++) {
        int64_t sampled[PER_ROUND];
        BENCH_FAIL_IF(fedc_sample_clients(clients, PER_ROUND, 0, (uint32_t)r, sampled));
        fprintf(f, "%s[", r ? ", " : "");
        steps[r] = 0;
        for (int j = 0; j < PER_ROUND; j++) {
            int64_t n = fedc_dataset_client_examples(ds, sampled[j]), s = (n + BATCH - 1) / BATCH;
            if (s > MAX_STEPS) s = MAX_STEPS;
            steps[r] += s;
            fprintf(f, "%s[%lld, %lld]", j ? ", " : "", (long long)n, (long long)s);
        }
        fprintf(f, "]");
    }
    fprintf(f, "]}\n");
    fclose(f);
    fedc_dataset_destroy(ds);
}

static void train(int64_t clients, int rounds, int threads, bench_round_timer *t) {
    char data[128];
    snprintf(data, sizeof data, "synthetic:zipf:%lld:%d+lognormal(%g,%g)", (long long)clients, MIN_SENTENCES, SIZE_MU,
             SIZE_SIGMA);
    fedc_train_config c;
    fedc_train_defaults(&c);
    c.data = data;
    c.model = "stackoverflow_lstm";
    c.algorithm.def = fedc_algorithm_find("fedavg");
    c.algorithm.batch_size = BATCH;
    BENCH_FAIL_IF(fedc_optimizer_parse("sgd", 0.5, &c.algorithm.client_opt));
    BENCH_FAIL_IF(fedc_optimizer_parse("adam", 0.02, &c.algorithm.server_opt));
    c.algorithm.server_opt.eps = 1e-8;
    c.epochs = 1;
    c.steps = MAX_STEPS;
    c.rounds = rounds;
    c.clients_per_round = PER_ROUND;
    c.threads = threads;
    c.eval_every = 0;
    c.eval_clients = 1; /* the run's closing evaluation, kept short: this measures training */
    c.quiet = true;
    c.out_dir = "out/bench/stackoverflow_round";
    bench_round_timer_install(t, &c);
    fedc_train_result res;
    BENCH_FAIL_IF(fedc_train(&c, &res));
}

/* The peer's median seconds a round over rounds 1..rounds-1, or -1. */
static double run_peer(int threads) {
    char cmd[512];
    snprintf(cmd, sizeof cmd, "/usr/bin/python3 bench/peers/stackoverflow_round_torch.py --cohorts %s --threads %d",
             COHORTS, threads);
    FILE *p = popen(cmd, "r");
    double median = -1;
    char line[512];
    while (p && fgets(line, sizeof line, p)) {
        fputs(line, stdout);
        sscanf(line, "torch median_s=%lf", &median);
    }
    if (p) pclose(p);
    return median;
}

int main(int argc, char **argv) {
    int rounds = 2, threads = 2;
    int64_t clients = 1000;
    bool peer = true;
    for (int i = 1, pos = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--no-peer")) peer = false;
        else if (!strcmp(argv[i], "--clients") && i + 1 < argc) clients = atoll(argv[++i]);
        else if (pos == 0 && atoi(argv[i]) > 0) rounds = atoi(argv[i]), pos++;
        else if (pos == 1 && atoi(argv[i]) > 0) threads = atoi(argv[i]), pos++;
        else {
            fprintf(stderr, "usage: bench_stackoverflow_round [rounds] [threads] [--clients N] [--no-peer]\n");
            return 2;
        }
    }
    if (rounds > MAX_ROUNDS - 1 || clients < PER_ROUND) {
        fprintf(stderr, "bench_stackoverflow_round: at most %d rounds, at least %d clients\n", MAX_ROUNDS - 1, PER_ROUND);
        return 2;
    }
    printf("BLAS kernels: OpenBLAS %s, for fedc and the peer\n", bench_share_blas_core());
    int64_t steps[MAX_ROUNDS + 1];
    write_cohorts(clients, rounds + 1, steps);
    bench_round_timer t;
    train(clients, rounds + 1, threads, &t);
    double flops = step_flops(), times[MAX_ROUNDS];
    for (int r = 0; r <= rounds; r++)
        printf("fedc round %d: %lld steps, %.1f s, %.2f GFLOP/s%s\n", r, (long long)steps[r], t.seconds[r],
               (double)steps[r] * flops / t.seconds[r] / 1e9, r ? "" : " (warm-up)");
    for (int r = 1; r <= rounds; r++) times[r - 1] = t.seconds[r];
    double fedc_s = bench_median(times, rounds);
    printf("fedc: median %.1f s a round on %d threads; %d rounds projected %.2f h\n", fedc_s, threads,
           PROJECTED_ROUNDS, fedc_s * PROJECTED_ROUNDS / 3600);
    double torch_s = peer ? run_peer(threads) : -1;
    if (torch_s > 0) printf("speedup over PyTorch: %.2fx (target >= 2x)\n", torch_s / fedc_s);
    bench_json("stackoverflow_round", "\"fedc_s\": %.3f, \"torch_s\": %.3f, \"threads\": %d, \"step_gflop\": %.4f",
               fedc_s, torch_s, threads, flops / 1e9);
    return 0;
}
