/*
 * bench_algorithm_cost — the time of one round of every algorithm against
 * FedAvg's, on the same cohort (issue 15: "the cost of a SCAFFOLD or Mime round
 * measured against FedAvg's, and explained").
 *
 *     ./build/bench_algorithm_cost [threads] [rounds] [clients] [batches] [algorithm]
 *                                  (default 2 5 10 5, every algorithm)
 *
 * The job: fedc's "cnn" model (FedJAX's EMNIST CNN, 1.2M parameters), a cohort of
 * `clients` clients of `batches` full batches of 20 synthetic EMNIST examples each,
 * client SGD lr 0.03 (Adam 0.001 for an algorithm that refuses SGD: DiLoCo), server
 * SGD lr 1. Each algorithm's round program is built as
 * `fedc train` builds it; its server state comes from fedc_server_state, its
 * per-client state inputs (client/<leaf>) from its client_init values (every
 * client a new one), its metadata inputs are bound. One warm-up round, then the
 * median of `rounds` rounds of fedc_executor_run; the state is fed back between
 * rounds. Printed: seconds per round and the ratio to FedAvg's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/bench.h"
#include "common/emnist.h"

enum { BATCH = 20, MAX_ROUNDS = 50 };

/* The client/<leaf> inputs: client_init's values, one copy per client. */
typedef struct client_inputs {
    int n;
    char **name;
    void **data;
} client_inputs;

static void client_inputs_make(client_inputs *ci, const fedc_model *m, const fedc_algorithm *a, int clients) {
    memset(ci, 0, sizeof *ci);
    fedc_program *init = NULL;
    BENCH_FAIL_IF(fedc_algorithm_client_init(m, a, &init));
    if (!init) return;
    fedc_executor *ex;
    BENCH_FAIL_IF(fedc_executor_create(&ex, init, NULL) || fedc_executor_run(ex));
    ci->n = fedc_program_num_outputs(init);
    ci->name = calloc((size_t)ci->n, sizeof *ci->name);
    ci->data = calloc((size_t)ci->n, sizeof *ci->data);
    BENCH_FAIL_IF(!ci->name || !ci->data);
    for (int i = 0; i < ci->n; i++) {
        const void *v;
        fedc_type t;
        BENCH_FAIL_IF(fedc_executor_output(ex, fedc_program_output_name(init, i), &v, &t));
        size_t bytes = fedc_type_bytes(&t);
        ci->name[i] = strdup(fedc_program_output_name(init, i));
        ci->data[i] = malloc(bytes * (size_t)clients);
        BENCH_FAIL_IF(!ci->name[i] || !ci->data[i]);
        for (int c = 0; c < clients; c++) memcpy((char *)ci->data[i] + (size_t)c * bytes, v, bytes);
    }
    fedc_executor_destroy(ex);
    fedc_program_destroy(init);
}

static void client_inputs_free(client_inputs *ci) {
    for (int i = 0; i < ci->n; i++) free(ci->name[i]), free(ci->data[i]);
    free(ci->name), free(ci->data);
}

/* Binds the metadata inputs the round has (every client new, in domain 0). */
static void bind_meta(fedc_executor *ex, const fedc_program *round, const float *examples, const float *zeros,
                      const float *population) {
    const char *names[4] = {"meta/num_examples", "meta/seen", "meta/population", "meta/domain"};
    const float *data[4] = {examples, zeros, population, zeros};
    for (int i = 0; i < 4; i++)
        if (fedc_program_find_input(round, names[i]) != FEDC_NONE) BENCH_FAIL_IF(fedc_executor_bind(ex, names[i], data[i]));
}

/* The median seconds of one of def's rounds, or a negative number if it cannot run
 * with these settings (said why). */
static double time_rounds(const fedc_algorithm_def *def, bench_cnn *m, int threads, int rounds, int clients,
                          int64_t batches) {
    fedc_algorithm a = {.def = def, .client_opt = fedc_optimizer_defaults(FEDC_OPT_SGD, 0.03),
                        .server_opt = fedc_optimizer_defaults(FEDC_OPT_SGD, 1.0), .batch_size = BATCH,
                        .max_steps = batches, .dropout = true};
    fedc_program *round = NULL;
    if (fedc_algorithm_round(m->model, &a, &round)) { /* DiLoCo's inner optimizer is AdamW: SGD is refused */
        a.client_opt = fedc_optimizer_defaults(FEDC_OPT_ADAM, 0.001);
        if (fedc_algorithm_round(m->model, &a, &round)) {
            printf("%-16s cannot run here: %s\n", def->name, fedc_errmsg());
            return -1;
        }
        printf("%-16s (with the client optimizer adam)\n", def->name);
    }
    fedc_executor *ex;
    cohort_buffers cb = {0};
    fedc_server_state *s;
    client_inputs ci;
    BENCH_FAIL_IF(fedc_executor_create(&ex, round, &(fedc_exec_options){.clients = clients, .threads = threads}));
    BENCH_FAIL_IF(fedc__cohort_buffers_init(&cb, m->model, clients, BATCH, batches, false) ||
                  fedc__cohort_buffers_bind(&cb, ex, true));
    BENCH_FAIL_IF(fedc_server_state_create(&s, m->model, &a, m->params) || fedc_server_state_bind(s, ex));
    client_inputs_make(&ci, m->model, &a, clients);
    for (int i = 0; i < ci.n; i++) BENCH_FAIL_IF(fedc_executor_bind(ex, ci.name[i], ci.data[i]));
    float *examples = malloc((size_t)clients * sizeof *examples), *seen = calloc((size_t)clients, sizeof *seen);
    float population = 1000;
    BENCH_FAIL_IF(!examples || !seen);
    for (int j = 0; j < clients; j++) examples[j] = (float)(batches * BATCH);
    bind_meta(ex, round, examples, seen, &population);
    double t[MAX_ROUNDS];
    for (int r = 0; r <= rounds; r++) {
        for (int j = 0; j < clients; j++) bench_fill_client(&cb, j, (uint64_t)j, batches * BATCH, 0, (uint32_t)r);
        double t0 = bench_now();
        BENCH_FAIL_IF(fedc_executor_run(ex));
        if (r > 0) t[r - 1] = bench_now() - t0; /* round 0 warms up */
        BENCH_FAIL_IF(fedc_server_state_update(s, ex));
    }
    double median = bench_median(t, rounds);
    free(examples), free(seen);
    client_inputs_free(&ci);
    fedc_server_state_destroy(s);
    fedc__cohort_buffers_free(&cb);
    fedc_executor_destroy(ex);
    fedc_program_destroy(round);
    return median;
}

int main(int argc, char **argv) {
    int threads = argc > 1 ? atoi(argv[1]) : 2, rounds = argc > 2 ? atoi(argv[2]) : 5;
    int clients = argc > 3 ? atoi(argv[3]) : 10;
    int64_t batches = argc > 4 ? atoll(argv[4]) : 5;
    const char *only = argc > 5 ? argv[5] : NULL; /* one algorithm (and FedAvg), or all */
    if (threads < 1 || rounds < 1 || rounds > MAX_ROUNDS || clients < 1 || batches < 1) {
        fprintf(stderr, "usage: bench_algorithm_cost [threads >= 1] [rounds in 1..%d] [clients >= 1] [batches >= 1]\n",
                MAX_ROUNDS);
        return 2;
    }
    bench_cnn m;
    bench_cnn_create(&m, 0);
    printf("one round of each algorithm: the EMNIST CNN, %d clients x %lld batches of %d, %d threads, median of %d\n",
           clients, (long long)batches, BATCH, threads, rounds);
    double fedavg = time_rounds(&fedc_algorithm_fedavg, &m, threads, rounds, clients, batches);
    printf("%-16s %8.3f s/round  1.00x\n", "fedavg", fedavg);
    for (int i = 0; i < fedc_algorithm_count(); i++) {
        const fedc_algorithm_def *def = fedc_algorithm_at(i);
        if (def == &fedc_algorithm_fedavg || (only && strcmp(def->name, only))) continue;
        double s = time_rounds(def, &m, threads, rounds, clients, batches);
        if (s < 0) continue;
        printf("%-16s %8.3f s/round  %.2fx\n", def->name, s, s / fedavg);
        bench_json("algorithm_cost", "\"algorithm\": \"%s\", \"threads\": %d, \"clients\": %d, \"batches\": %lld, "
                   "\"seconds_per_round\": %.6f, \"vs_fedavg\": %.4f",
                   def->name, threads, clients, (long long)batches, s, s / fedavg);
    }
    bench_cnn_destroy(&m);
    return 0;
}
