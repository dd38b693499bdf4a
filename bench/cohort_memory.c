/*
 * bench_cohort_memory — peak memory and time of one FedAvg round with cohorts of
 * clients of the same size (issue 3: a round's memory is O(model), not O(cohort);
 * issue 7, workload 4: 100, 1,000 and 10,000 clients a round, time linear in the
 * cohort, (RSS - data) at 10,000 <= 1.1 x that at 100).
 *
 *     ./build/bench_cohort_memory [threads] [rounds] [clients...]   (default 2 3 100 1000 10000)
 *
 * The round: the server's model (a 60-64-10 ReLU MLP, 4,554 f32 parameters, on
 * 60 features: small, so that 10,000 clients' data stays under 100 MB) is
 * broadcast; every client runs local SGD over its batches (a fold whose step is the
 * fedc_grad of the model's loss, then w - lr * grad) and returns its model delta
 * and a weight; the server takes the weighted mean of the deltas and subtracts it.
 * Every client has the same data, 2 batches of 20 examples.
 *
 * What is measured: each cohort runs in a child process of its own (fork), so
 * peaks do not mix. The child builds the program, allocates and fills the clients'
 * data (the @clients inputs, clients x data, contiguous, as the executor binds
 * them), creates the executor, runs `rounds` rounds (feeding each round's model to
 * the next) and reads its peak resident set size (VmHWM in /proc/self/status). The
 * clients' data is O(cohort) by nature, not the runtime's doing, so its bytes are
 * subtracted: "RSS - data" is what the runtime (and the process) needs for the
 * round. Target: (RSS - data) at the largest cohort <= 1.1 x that at the smallest.
 *
 * Also printed: seconds per round (median of the rounds), the executor's planned
 * block (fedc_executor_planned_bytes) and the RSS after setup, before the first
 * round.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "common/bench.h"

/* Input features: 60 (issue 7's form), or FEDC_BENCH_FEATURES=784 for issue 3's
 * 784-64-10 MLP (50,890 parameters: partial sums of 0.2 MB show in the RSS). */
static int IN = 60;
enum { HIDDEN = 64, CLASSES = 10, BATCH = 20, BATCHES = 2, NPARAMS = 4, MAX_ROUNDS = 100, MAX_COHORTS = 8 };
static const float CLIENT_LR = 0.05f;

static bench_param PARAMS[NPARAMS] = {
    {"w1", 2, {60, HIDDEN}}, {"b1", 1, {HIDDEN}}, {"w2", 2, {HIDDEN, CLASSES}}, {"b2", 1, {CLASSES}}};

static fedc_type xs_type(void) { return fedc_type_make(FEDC_F32, 3, (int64_t[]){BATCHES, BATCH, IN}); }
static fedc_type ys_type(void) { return fedc_type_make(FEDC_I32, 2, (int64_t[]){BATCHES, BATCH}); }

/* ------------------------------------------------------------ programs -- */

/* loss(x, labels, w1, b1, w2, b2) = mean cross-entropy of relu(x w1 + b1) w2 + b2. */
static fedc_program *build_model(void) {
    fedc_program *p;
    BENCH_FAIL_IF(fedc_program_create(&p));
    fedc_value x = fedc_input(p, "x", fedc_type_make(FEDC_F32, 2, (int64_t[]){BATCH, IN}));
    fedc_value labels = fedc_input(p, "labels", fedc_type_make(FEDC_I32, 1, (int64_t[]){BATCH}));
    fedc_value w[NPARAMS];
    for (int i = 0; i < NPARAMS; i++) w[i] = fedc_input(p, PARAMS[i].name, bench_param_type(&PARAMS[i]));
    fedc_value h = fedc_relu(p, fedc_add(p, fedc_matmul(p, x, w[0], false, false), w[1]));
    fedc_value logits = fedc_add(p, fedc_matmul(p, h, w[2], false, false), w[3]);
    fedc_value loss = fedc_reduce_mean(p, fedc_softmax_cross_entropy(p, logits, labels, FEDC_NONE), NULL, -1, false);
    fedc_program_output(p, "loss", loss);
    BENCH_FAIL_IF(fedc_program_status(p));
    return p;
}

/* ------------------------------------------------------- a measurement -- */

typedef struct measurement {
    int clients;
    double seconds_per_round, first_loss, last_loss;
    size_t peak_rss, setup_rss, data_bytes, planned_bytes, unplanned_bytes;
} measurement;

/* Runs in a child: everything one cohort's rounds need, then the peak. */
static measurement measure(int clients, int threads, int rounds) {
    measurement m = {.clients = clients};
    if (clients == 0) { /* the baseline: the process as forked, before any fedc work */
        m.peak_rss = bench_proc_status_bytes("VmHWM");
        return m;
    }
    fedc_program *model = build_model();
    bench_fedavg f = {PARAMS, NPARAMS, xs_type(), ys_type(), CLIENT_LR};
    fedc_program *round = bench_fedavg_round(model, &f);
    fedc_program_destroy(model);

    /* One client's data (2 batches of 20 examples, seeded), copied to every client. */
    size_t x_per = (size_t)BATCHES * BATCH * IN, y_per = (size_t)BATCHES * BATCH;
    float *xs = malloc((size_t)clients * x_per * sizeof *xs);
    int32_t *ys = malloc((size_t)clients * y_per * sizeof *ys), *batches = malloc((size_t)clients * sizeof *batches);
    BENCH_FAIL_IF(!xs || !ys || !batches);
    fedc_rng_stream data = fedc_rng_stream_make(1, 0, 0, 0);
    for (size_t j = 0; j < x_per; j++) xs[j] = fedc_rng_uniform_f32(data, j);
    for (size_t j = 0; j < y_per; j++) ys[j] = (int32_t)(j * 7 % CLASSES);
    for (int c = 1; c < clients; c++) {
        memcpy(xs + (size_t)c * x_per, xs, x_per * sizeof *xs);
        memcpy(ys + (size_t)c * y_per, ys, y_per * sizeof *ys);
    }
    for (int c = 0; c < clients; c++) batches[c] = BATCHES;
    m.data_bytes = (size_t)clients * (x_per * sizeof *xs + y_per * sizeof *ys + sizeof *batches);

    /* The server model: Glorot-uniform weights, zero biases. */
    float *w[NPARAMS];
    fedc_rng_stream init = fedc_rng_stream_make(2, 0, 0, 0);
    for (int i = 0; i < NPARAMS; i++) {
        fedc_type t = bench_param_type(&PARAMS[i]);
        w[i] = calloc((size_t)fedc_type_count(&t), sizeof(float));
        BENCH_FAIL_IF(!w[i]);
        if (t.rank == 2) {
            double limit = sqrt(6.0 / (double)(t.dims[0] + t.dims[1]));
            for (int64_t j = 0; j < fedc_type_count(&t); j++)
                w[i][j] = (float)(limit * (2.0 * fedc_rng_uniform_f64(init, (uint64_t)j) - 1.0));
        }
    }

    fedc_executor *ex;
    fedc_exec_options o = {.clients = clients, .threads = threads};
    BENCH_FAIL_IF(fedc_executor_create(&ex, round, &o));
    for (int i = 0; i < NPARAMS; i++) BENCH_FAIL_IF(fedc_executor_bind(ex, PARAMS[i].name, w[i]));
    BENCH_FAIL_IF(fedc_executor_bind(ex, "xs", xs) || fedc_executor_bind(ex, "ys", ys) ||
            fedc_executor_bind(ex, "batches", batches));
    m.planned_bytes = fedc_executor_planned_bytes(ex);
    m.unplanned_bytes = fedc_executor_unplanned_bytes(ex);
    m.setup_rss = bench_proc_status_bytes("VmRSS");

    double t[MAX_ROUNDS];
    for (int r = 0; r < rounds; r++) {
        double t0 = bench_now();
        BENCH_FAIL_IF(fedc_executor_run(ex));
        t[r] = bench_now() - t0;
        const float *loss;
        BENCH_FAIL_IF(fedc_executor_output(ex, "loss", (const void **)&loss, NULL));
        if (r == 0) m.first_loss = *loss;
        m.last_loss = *loss;
        for (int i = 0; i < NPARAMS; i++) { /* the next round starts from this one's model */
            char name[32];
            const void *nw;
            fedc_type ty;
            snprintf(name, sizeof name, "new_%s", PARAMS[i].name);
            BENCH_FAIL_IF(fedc_executor_output(ex, name, &nw, &ty));
            memcpy(w[i], nw, fedc_type_bytes(&ty));
        }
    }
    m.seconds_per_round = bench_median(t, rounds);
    m.peak_rss = bench_proc_status_bytes("VmHWM");

    fedc_executor_destroy(ex);
    fedc_program_destroy(round);
    for (int i = 0; i < NPARAMS; i++) free(w[i]);
    free(xs), free(ys), free(batches);
    return m;
}

/* One cohort's measurement in a child of its own (bench_in_child). */
typedef struct cohort_args {
    int clients, threads, rounds;
} cohort_args;

static void measure_cohort(void *ctx, void *result) {
    const cohort_args *a = ctx;
    *(measurement *)result = measure(a->clients, a->threads, a->rounds);
}

static int measure_in_child(int clients, int threads, int rounds, measurement *out) {
    cohort_args a = {clients, threads, rounds};
    return bench_in_child(measure_cohort, &a, out, sizeof *out);
}

static double mib(size_t b) { return (double)b / (1024.0 * 1024.0); }

int main(int argc, char **argv) {
    int threads = argc > 1 ? atoi(argv[1]) : 2, rounds = argc > 2 ? atoi(argv[2]) : 3;
    if (getenv("FEDC_BENCH_FEATURES")) IN = atoi(getenv("FEDC_BENCH_FEATURES"));
    PARAMS[0].dims[0] = IN;
    int ncohorts = argc > 3 ? argc - 3 : 3, cohorts[MAX_COHORTS + 1] = {100, 1000, 10000};
    for (int k = 0; argc > 3 && k < ncohorts && k < MAX_COHORTS; k++) cohorts[k] = atoi(argv[3 + k]);
    bool ok = IN >= 1 && threads >= 1 && rounds >= 1 && rounds <= MAX_ROUNDS && ncohorts >= 2 && ncohorts <= MAX_COHORTS;
    for (int k = 0; ok && k < ncohorts; k++) ok = cohorts[k] >= 1;
    if (!ok) {
        fprintf(stderr, "usage: bench_cohort_memory [threads >= 1] [rounds in 1..%d] [clients >= 1 ...(2..%d cohorts)]\n",
                MAX_ROUNDS, MAX_COHORTS);
        return 2;
    }
    printf("command: ");
    for (int i = 0; i < argc; i++) printf("%s%s", argv[i], i + 1 < argc ? " " : "\n");
    double load[3] = {0};
    FILE *la = fopen("/proc/loadavg", "r");
    if (la) {
        if (fscanf(la, "%lf %lf %lf", &load[0], &load[1], &load[2]) != 3) load[0] = load[1] = load[2] = -1;
        fclose(la);
    }
    printf("nproc %ld, load %.2f %.2f %.2f\n", sysconf(_SC_NPROCESSORS_ONLN), load[0], load[1], load[2]);
    printf("FedAvg round: MLP %d-%d-%d (%d f32 params), %d local SGD steps of batch %d per client, "
           "%d threads, %d rounds per cohort (fork per cohort)\n\n",
           IN, HIDDEN, CLASSES, IN * HIDDEN + HIDDEN + HIDDEN * CLASSES + CLASSES, BATCHES, BATCH, threads, rounds);

    /* The last measurement is the baseline: a child that measures its peak as soon as it is forked. */
    measurement m[MAX_COHORTS + 1];
    cohorts[ncohorts] = 0;
    for (int k = 0; k <= ncohorts; k++) {
        if (measure_in_child(cohorts[k], threads, rounds, &m[k])) {
            fprintf(stderr, "bench_cohort_memory: the measurement of %d clients failed\n", cohorts[k]);
            return 1;
        }
    }
    printf("%8s %12s %14s %12s %12s %12s %14s %14s %12s\n", "clients", "s/round", "ms per client", "peak RSS", "data",
           "RSS - data", "planned block", "no-reuse sum", "setup RSS");
    for (int k = 0; k < ncohorts; k++)
        printf("%8d %12.4f %14.4f %8.2f MiB %8.2f MiB %8.2f MiB %10.2f MiB %10.2f MiB %8.2f MiB\n", m[k].clients,
               m[k].seconds_per_round, 1e3 * m[k].seconds_per_round / m[k].clients, mib(m[k].peak_rss),
               mib(m[k].data_bytes), mib(m[k].peak_rss - m[k].data_bytes), mib(m[k].planned_bytes),
               mib(m[k].unplanned_bytes), mib(m[k].setup_rss));
    for (int k = 0; k < ncohorts; k++)
        printf("loss (weighted mean over clients), %d clients: %.4f -> %.4f\n", cohorts[k], m[k].first_loss,
               m[k].last_loss);
    const measurement *lo = &m[0], *hi = &m[ncohorts - 1];
    double ratio = (double)(hi->peak_rss - hi->data_bytes) / (double)(lo->peak_rss - lo->data_bytes);
    printf("\n(RSS - data) ratio, %d vs %d clients: %.3f   (target <= 1.1: %s)\n", hi->clients, lo->clients, ratio,
           ratio <= 1.1 ? "met" : "MISSED");
    /* Stricter: without the process's own pages (libc, OpenBLAS, the binary) either. */
    size_t base = m[ncohorts].peak_rss;
    double strict = (double)(hi->peak_rss - hi->data_bytes - base) / (double)(lo->peak_rss - lo->data_bytes - base);
    printf("process baseline (peak RSS of a child that does nothing): %.2f MiB\n", mib(base));
    printf("(RSS - data - baseline): %.2f MiB vs %.2f MiB, ratio %.3f\n", mib(hi->peak_rss - hi->data_bytes - base),
           mib(lo->peak_rss - lo->data_bytes - base), strict);
    /* Linear time: the time per client of the largest cohort over that of the smallest. */
    double linear = (hi->seconds_per_round / hi->clients) / (lo->seconds_per_round / lo->clients);
    printf("time per client, %d vs %d clients: ratio %.3f (1 = linear)\n", hi->clients, lo->clients, linear);
    bench_json("cohort_memory", "\"threads\": %d, \"clients\": [%d, %d], \"seconds_per_round\": [%.6f, %.6f], "
               "\"rss_minus_data_mib\": [%.3f, %.3f], \"rss_ratio\": %.4f, \"time_per_client_ratio\": %.4f",
               threads, lo->clients, hi->clients, lo->seconds_per_round, hi->seconds_per_round,
               mib(lo->peak_rss - lo->data_bytes), mib(hi->peak_rss - hi->data_bytes), ratio, linear);
    return 0;
}
