/*
 * bench_emnist_full — FedJAX's EMNIST-62 benchmark at full scale, on synthetic
 * EMNIST-shaped data (issue 7, workload 3): seconds per round, the projected time of
 * 1,500 rounds of 10 clients, and the time to evaluate the full test split.
 *
 *     ./build/bench_emnist_full [rounds] [test_fraction] [threads]   (default 5 1 2)
 *
 * The job (FedJAX's EMNIST benchmark, Reddi et al.'s settings): 3,400 clients with
 * 671,585 training examples in all, 10 clients a round sampled without replacement
 * (fedc_sample_clients), one local epoch of SGD in batches of 20 (lr 10^-1.5, the
 * model's dropout on), the server's Adam (lr 10^-2.5, eps 10^-4) on the averaged
 * update; the CNN is fedc's "cnn" (FedJAX's EMNIST CNN); the round program is the one
 * `fedc train` runs (fedc_algorithm_round). The test split: 77,483 examples over the
 * same 3,400 clients, evaluated pooled (the global model's test metrics do not need
 * the clients apart), as bench_evaluate does: clients of 2 batches of 500.
 *
 * The data is synthetic (uniform pixels, random labels: this measures time, not
 * accuracy), and the client sizes have the shape of FEMNIST's writers: the LEAF
 * split in ../shared/data/femnist-leaf (56 writers, 7 to 330 examples), resampled to
 * 3,400 clients and scaled to the totals above (bench_leaf_shaped_sizes). A round's
 * time includes filling its clients' batches (generating the synthetic examples,
 * about what copying loaded data costs). After one warm-up round, `rounds` rounds
 * are timed; the median projects 1,500 rounds. The evaluation runs once, over
 * `test_fraction` of the test clients (1: all).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/bench.h"
#include "common/emnist.h"

enum { CLIENTS = 3400, PER_ROUND = 10, BATCH = 20, PROJECTED_ROUNDS = 1500, MAX_ROUNDS = 100 };
static const int64_t TRAIN_EXAMPLES = 671585, TEST_EXAMPLES = 77483;
static const char *LEAF = "../shared/data/femnist-leaf/train";

/* Copies output `name` back over `dst` (the next round's input). */
static void take_output(fedc_executor *ex, const char *name, float *dst) {
    const void *data;
    fedc_type t;
    BENCH_FAIL_IF(fedc_executor_output(ex, name, &data, &t));
    memcpy(dst, data, fedc_type_bytes(&t));
}

static double run_round(fedc_executor *ex, cohort_buffers *cb, fedc_server_state *s, const int64_t *sizes,
                        uint32_t r, int64_t *sampled, double *examples) {
    double t0 = bench_now();
    BENCH_FAIL_IF(fedc_sample_clients(CLIENTS, PER_ROUND, 0, r, sampled));
    for (int j = 0; j < PER_ROUND; j++) bench_fill_client(cb, j, (uint64_t)sampled[j], sizes[sampled[j]], 0, r);
    BENCH_FAIL_IF(fedc_executor_run(ex));
    BENCH_FAIL_IF(fedc_server_state_update(s, ex)); /* the new model and server state */
    float e;
    take_output(ex, "examples", &e);
    *examples = e;
    return bench_now() - t0;
}

int main(int argc, char **argv) {
    int rounds = argc > 1 ? atoi(argv[1]) : 5, threads = argc > 3 ? atoi(argv[3]) : 2;
    double test_fraction = argc > 2 ? atof(argv[2]) : 1;
    if (rounds < 1 || rounds > MAX_ROUNDS || !(test_fraction > 0 && test_fraction <= 1) || threads < 1) {
        fprintf(stderr, "usage: bench_emnist_full [rounds in 1..%d] [test_fraction in (0, 1]] [threads >= 1]\n",
                MAX_ROUNDS);
        return 2;
    }
    int64_t *train = malloc(CLIENTS * sizeof *train), most = 0, least = TRAIN_EXAMPLES;
    int64_t test_clients = (TEST_EXAMPLES + 999) / 1000, *test = malloc((size_t)test_clients * sizeof *test);
    BENCH_FAIL_IF(!train || !test);
    bench_leaf_shaped_sizes(LEAF, CLIENTS, TRAIN_EXAMPLES, train);
    for (int c = 0; c < CLIENTS; c++) {
        if (train[c] > most) most = train[c];
        if (train[c] < least) least = train[c];
    }
    for (int64_t c = 0; c < test_clients; c++) test[c] = c + 1 < test_clients ? 1000 : TEST_EXAMPLES - 1000 * c;

    bench_cnn m;
    bench_cnn_create(&m, 0);
    fedc_algorithm alg = {.def = &fedc_algorithm_fedavg, .batch_size = BATCH, .dropout = true,
                          .max_steps = (most + BATCH - 1) / BATCH};
    alg.client_opt = fedc_optimizer_defaults(FEDC_OPT_SGD, pow(10, -1.5));
    alg.server_opt = fedc_optimizer_defaults(FEDC_OPT_ADAM, pow(10, -2.5));
    alg.server_opt.eps = 1e-4;
    fedc_server_state *s;
    BENCH_FAIL_IF(fedc_server_state_create(&s, m.model, &alg, m.params));
    fedc_program *round;
    fedc_executor *ex;
    cohort_buffers cb = {0};
    BENCH_FAIL_IF(fedc_algorithm_round(m.model, &alg, &round));
    BENCH_FAIL_IF(fedc_executor_create(&ex, round, &(fedc_exec_options){.clients = PER_ROUND, .threads = threads}));
    BENCH_FAIL_IF(fedc__cohort_buffers_init(&cb, m.model, PER_ROUND, BATCH, alg.max_steps, false) ||
                  fedc__cohort_buffers_bind(&cb, ex, true) || fedc_server_state_bind(s, ex));

    int64_t sampled[PER_ROUND];
    double t[MAX_ROUNDS], ex_round[MAX_ROUNDS], examples = 0;
    double warm = run_round(ex, &cb, s, train, 0, sampled, &examples);
    for (int r = 0; r < rounds; r++) {
        t[r] = run_round(ex, &cb, s, train, (uint32_t)r + 1, sampled, &ex_round[r]);
        examples += ex_round[r];
    }
    double total_t = 0, total_e = 0;
    for (int r = 0; r < rounds; r++) total_t += t[r], total_e += ex_round[r];
    double per_round = bench_median(t, rounds);

    BENCH_FAIL_IF(fedc_server_state_params(s, m.params)); /* the trained model, to evaluate */
    int64_t eval_clients = (int64_t)ceil(test_fraction * (double)test_clients);
    double evaluated, eval_s = bench_cnn_evaluate(&m, test, eval_clients, 500, threads, &evaluated);
    double eval_full = eval_s * (double)TEST_EXAMPLES / evaluated;
    double projected = PROJECTED_ROUNDS * per_round + eval_full;
    printf("EMNIST-62 at full scale (synthetic data): %d clients, %lld train / %lld test examples; client sizes "
           "%lld..%lld; %d threads\n",
           CLIENTS, (long long)TRAIN_EXAMPLES, (long long)TEST_EXAMPLES, (long long)least, (long long)most, threads);
    printf("warm-up round %.3f s; %d rounds: median %.3f s/round, %.0f examples/s (%.0f examples a round on average)\n",
           warm, rounds, per_round, total_e / total_t, total_e / rounds);
    printf("evaluation: %.0f test examples in %.3f s (%.0f examples/s)%s\n", evaluated, eval_s, evaluated / eval_s,
           eval_clients < test_clients ? "; scaled to the full split" : "");
    printf("projected: %d rounds x %.3f s + one evaluation %.1f s = %.0f s (%.2f h)\n", PROJECTED_ROUNDS, per_round,
           eval_full, projected, projected / 3600);
    bench_json("emnist_full", "\"threads\": %d, \"rounds\": %d, \"seconds_per_round\": %.6f, "
               "\"examples_per_s\": %.3f, \"eval_examples\": %.0f, \"eval_seconds_full\": %.3f, "
               "\"projected_seconds\": %.1f",
               threads, rounds, per_round, total_e / total_t, evaluated, eval_full, projected);

    fedc__cohort_buffers_free(&cb);
    fedc_executor_destroy(ex);
    fedc_program_destroy(round);
    fedc_server_state_destroy(s);
    free(train), free(test);
    bench_cnn_destroy(&m);
    return 0;
}
