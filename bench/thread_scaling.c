/*
 * bench_thread_scaling — client training throughput with 1 and 2 worker threads
 * (issue 3: clients run in parallel, with results bitwise identical for any number
 * of threads).
 *
 *     ./build/bench_thread_scaling [clients] [batches] [pairs] [threads]   (default 8 3 7 2)
 *
 * The work: one FedAvg round of the EMNIST CNN (1,206,590 f32 parameters:
 * conv 3x3x1x32 -> relu -> conv 3x3x32x64 -> relu -> max_pool 2x2 -> flatten ->
 * dense 9216x128 -> relu -> dense 128x62; VALID padding; batch 20 of 28x28x1),
 * written as a federated program: broadcast the model, map over clients a fold of
 * SGD steps over the client's batches (the step is the fedc_grad of the CNN's loss,
 * then w - lr * grad), return the delta and a weight, weighted_mean, server update.
 *
 * What is measured: two executors of the same program, one with
 * fedc_exec_options.threads = 1 and one with `threads`, on the same bound inputs.
 * After one warm-up round each, rounds alternate (1, N, 1, N, ...) for `pairs`
 * pairs, so drift in the machine's speed hits both alike; each round's wall time
 * gives examples/second (clients x batches x 20 examples per round), and the
 * medians are compared. Target: >= 1.8x with 2 threads on this 2-core machine.
 * Every round's new model and loss are compared bitwise (memcmp) with the first
 * 1-thread round's: the runtime promises identical bits for any thread count.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "common/bench.h"

enum { BATCH = 20, SIDE = 28, CLASSES = 62, NPARAMS = 8, MAX_PAIRS = 100 };
static const float CLIENT_LR = 0.02f;

static const bench_param PARAMS[NPARAMS] = {
    {"conv1", 4, {3, 3, 1, 32}},  {"conv1_b", 1, {32}},   {"conv2", 4, {3, 3, 32, 64}}, {"conv2_b", 1, {64}},
    {"dense1", 2, {9216, 128}}, {"dense1_b", 1, {128}}, {"dense2", 2, {128, CLASSES}}, {"dense2_b", 1, {CLASSES}},
};

static double cpu_seconds(void) {
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return (double)u.ru_utime.tv_sec + 1e-6 * (double)u.ru_utime.tv_usec + (double)u.ru_stime.tv_sec +
           1e-6 * (double)u.ru_stime.tv_usec;
}

/* CPU seconds the whole machine spent busy so far (every process, and time the
 * hypervisor gave to other guests: steal), from the first line of /proc/stat. */
static double machine_busy_seconds(void) {
    unsigned long long v[8] = {0};
    FILE *f = fopen("/proc/stat", "r");
    if (!f) return 0;
    int got = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5],
                     &v[6], &v[7]);
    fclose(f);
    if (got != 8) return 0;
    /* user nice system [idle iowait] irq softirq steal */
    return (double)(v[0] + v[1] + v[2] + v[5] + v[6] + v[7]) / (double)sysconf(_SC_CLK_TCK);
}

static fedc_type x_type(int batches) { return fedc_type_make(FEDC_F32, 5, (int64_t[]){batches, BATCH, SIDE, SIDE, 1}); }
static fedc_type y_type(int batches) { return fedc_type_make(FEDC_I32, 2, (int64_t[]){batches, BATCH}); }

/* ------------------------------------------------------------ programs -- */

/* loss(x, labels, params...) = mean cross-entropy of the CNN's logits. */
static fedc_program *build_model(void) {
    fedc_program *p;
    BENCH_FAIL_IF(fedc_program_create(&p));
    fedc_value x = fedc_input(p, "x", fedc_type_make(FEDC_F32, 4, (int64_t[]){BATCH, SIDE, SIDE, 1}));
    fedc_value labels = fedc_input(p, "labels", fedc_type_make(FEDC_I32, 1, (int64_t[]){BATCH}));
    fedc_value w[NPARAMS];
    for (int i = 0; i < NPARAMS; i++) w[i] = fedc_input(p, PARAMS[i].name, bench_param_type(&PARAMS[i]));
    fedc_value h = fedc_relu(p, fedc_add(p, fedc_conv2d(p, x, w[0], 1, 1, FEDC_PAD_VALID), w[1]));
    h = fedc_relu(p, fedc_add(p, fedc_conv2d(p, h, w[2], 1, 1, FEDC_PAD_VALID), w[3]));
    h = fedc_max_pool2d(p, h, 2, 2, 2, 2, FEDC_PAD_VALID);
    h = fedc_reshape(p, h, 2, (int64_t[]){BATCH, 9216});
    h = fedc_relu(p, fedc_add(p, fedc_matmul(p, h, w[4], false, false), w[5]));
    fedc_value logits = fedc_add(p, fedc_matmul(p, h, w[6], false, false), w[7]);
    fedc_value loss = fedc_reduce_mean(p, fedc_softmax_cross_entropy(p, logits, labels, FEDC_NONE), NULL, -1, false);
    fedc_program_output(p, "loss", loss);
    BENCH_FAIL_IF(fedc_program_status(p));
    return p;
}

/* ----------------------------------------------------------- the runs -- */

/* The round's outputs (new_<p>..., loss), in one buffer, for bitwise comparison. */
typedef struct outputs {
    int n;
    const char *names[NPARAMS + 1];
    size_t bytes[NPARAMS + 1], total;
} outputs;

static void outputs_init(outputs *o) {
    static char names[NPARAMS][32];
    o->n = NPARAMS + 1;
    o->total = 0;
    for (int i = 0; i < NPARAMS; i++) {
        fedc_type t = bench_param_type(&PARAMS[i]);
        snprintf(names[i], sizeof names[i], "new_%s", PARAMS[i].name);
        o->names[i] = names[i];
        o->bytes[i] = fedc_type_bytes(&t);
    }
    o->names[NPARAMS] = "loss";
    o->bytes[NPARAMS] = sizeof(float);
    for (int i = 0; i < o->n; i++) o->total += o->bytes[i];
}

static void outputs_copy(const outputs *o, const fedc_executor *ex, unsigned char *dst) {
    for (int i = 0; i < o->n; i++) {
        const void *data;
        BENCH_FAIL_IF(fedc_executor_output(ex, o->names[i], &data, NULL));
        memcpy(dst, data, o->bytes[i]);
        dst += o->bytes[i];
    }
}

/* Runs one round on `ex`; returns its wall time, its CPU time in *cpu, the cores
 * that everything else on the machine used meanwhile in *others, and checks its
 * outputs against `ref` (counting mismatches in *differ). */
static double timed_round(fedc_executor *ex, const outputs *o, const unsigned char *ref, unsigned char *tmp,
                          int *differ, double *cpu, double *others) {
    double m0 = machine_busy_seconds(), c0 = cpu_seconds(), t0 = bench_now();
    BENCH_FAIL_IF(fedc_executor_run(ex));
    double t = bench_now() - t0;
    *cpu = cpu_seconds() - c0;
    *others = (machine_busy_seconds() - m0 - *cpu) / t;
    if (*others < 0) *others = 0; /* /proc/stat counts in ticks: round-off */
    outputs_copy(o, ex, tmp);
    if (memcmp(tmp, ref, o->total) != 0) (*differ)++;
    return t;
}

int main(int argc, char **argv) {
    int clients = argc > 1 ? atoi(argv[1]) : 8, batches = argc > 2 ? atoi(argv[2]) : 3;
    int pairs = argc > 3 ? atoi(argv[3]) : 7, threads = argc > 4 ? atoi(argv[4]) : 2;
    if (clients < 1 || batches < 1 || pairs < 1 || pairs > MAX_PAIRS || threads < 2) {
        fprintf(stderr, "usage: bench_thread_scaling [clients >= 1] [batches >= 1] [pairs in 1..%d] [threads >= 2]\n",
                MAX_PAIRS);
        return 2;
    }
    printf("command: ");
    for (int i = 0; i < argc; i++) printf("%s%s", argv[i], i + 1 < argc ? " " : "\n");
    double load[3] = {-1, -1, -1};
    FILE *la = fopen("/proc/loadavg", "r");
    if (la) {
        if (fscanf(la, "%lf %lf %lf", &load[0], &load[1], &load[2]) != 3) load[0] = -1;
        fclose(la);
    }
    printf("nproc %ld, load %.2f %.2f %.2f\n", sysconf(_SC_NPROCESSORS_ONLN), load[0], load[1], load[2]);

    fedc_program *model = build_model();
    bench_fedavg f = {PARAMS, NPARAMS, x_type(batches), y_type(batches), CLIENT_LR};
    fedc_program *round = bench_fedavg_round(model, &f);
    fedc_program_destroy(model);
    int64_t nparams = 0;
    for (int i = 0; i < NPARAMS; i++) {
        fedc_type t = bench_param_type(&PARAMS[i]);
        nparams += fedc_type_count(&t);
    }
    printf("EMNIST CNN, %lld f32 params; %d clients x %d batches of %d (28x28x1) = %d examples per round; "
           "1 warm-up pair, %d alternating pairs (1 vs %d threads)\n\n",
           (long long)nparams, clients, batches, BATCH, clients * batches * BATCH, pairs, threads);

    /* Data: seeded uniform pixels and labels, different for every client. */
    fedc_type xt = x_type(batches), yt = y_type(batches);
    size_t x_per = (size_t)fedc_type_count(&xt), y_per = (size_t)fedc_type_count(&yt);
    float *xs = malloc((size_t)clients * x_per * sizeof *xs);
    int32_t *ys = malloc((size_t)clients * y_per * sizeof *ys), *nb = malloc((size_t)clients * sizeof *nb);
    BENCH_FAIL_IF(!xs || !ys || !nb);
    fedc_rng_stream data = fedc_rng_stream_make(3, 0, 0, 0);
    for (size_t j = 0; j < (size_t)clients * x_per; j++) xs[j] = fedc_rng_uniform_f32(data, j);
    for (size_t j = 0; j < (size_t)clients * y_per; j++)
        ys[j] = (int32_t)(fedc_rng_block(data, (uint64_t)1 << 40 | j).c[0] % CLASSES);
    for (int c = 0; c < clients; c++) nb[c] = batches;

    /* The server model: Glorot-uniform weights (fan in/out of the HWIO filters and
     * dense matrices), zero biases. */
    float *w[NPARAMS];
    fedc_rng_stream init = fedc_rng_stream_make(4, 0, 0, 0);
    for (int i = 0; i < NPARAMS; i++) {
        fedc_type t = bench_param_type(&PARAMS[i]);
        int64_t n = fedc_type_count(&t);
        w[i] = calloc((size_t)n, sizeof(float));
        BENCH_FAIL_IF(!w[i]);
        if (t.rank > 1) {
            int64_t receptive = t.rank == 4 ? t.dims[0] * t.dims[1] : 1;
            double fan_in = (double)(receptive * t.dims[t.rank - 2]);
            double fan_out = (double)(receptive * t.dims[t.rank - 1]);
            double limit = sqrt(6.0 / (fan_in + fan_out));
            for (int64_t j = 0; j < n; j++)
                w[i][j] = (float)(limit * (2.0 * fedc_rng_uniform_f64(init, (uint64_t)i << 32 | (uint64_t)j) - 1.0));
        }
    }

    /* Two executors of the same program, on the same inputs. */
    fedc_executor *ex[2];
    int nthreads[2] = {1, threads};
    for (int k = 0; k < 2; k++) {
        fedc_exec_options o = {.clients = clients, .threads = nthreads[k]};
        BENCH_FAIL_IF(fedc_executor_create(&ex[k], round, &o));
        for (int i = 0; i < NPARAMS; i++) BENCH_FAIL_IF(fedc_executor_bind(ex[k], PARAMS[i].name, w[i]));
        BENCH_FAIL_IF(fedc_executor_bind(ex[k], "xs", xs) || fedc_executor_bind(ex[k], "ys", ys) ||
                fedc_executor_bind(ex[k], "batches", nb));
    }

    outputs o;
    outputs_init(&o);
    unsigned char *ref = malloc(o.total), *tmp = malloc(o.total);
    BENCH_FAIL_IF(!ref || !tmp);
    /* Warm-up: the first 1-thread round gives the reference bits. */
    int differ = 0;
    double t0 = bench_now();
    BENCH_FAIL_IF(fedc_executor_run(ex[0]));
    double warm1 = bench_now() - t0;
    outputs_copy(&o, ex[0], ref);
    double cpu[2][MAX_PAIRS], others[2][MAX_PAIRS];
    double warm2 = timed_round(ex[1], &o, ref, tmp, &differ, &cpu[1][0], &others[1][0]);

    /* The measured pairs. CPU time (all threads) over wall time says whether the
     * threads were busy: about 2 with 2 threads, unless they wait (on each other,
     * or for a core that another process holds); the machine's other load says
     * whether another process held one. */
    double t[2][MAX_PAIRS];
    for (int r = 0; r < pairs; r++)
        for (int k = 0; k < 2; k++) t[k][r] = timed_round(ex[k], &o, ref, tmp, &differ, &cpu[k][r], &others[k][r]);

    double examples = (double)clients * batches * BATCH;
    printf("warm-up: 1 thread %.3f s, %d threads %.3f s\n", warm1, threads, warm2);
    for (int k = 0; k < 2; k++) {
        printf("threads=%d  round times, s (other load, cores):", nthreads[k]);
        for (int r = 0; r < pairs; r++) printf(" %.3f (%.2f)", t[k][r], others[k][r]);
        printf("\n");
    }
    double m1 = bench_median(t[0], pairs), m2 = bench_median(t[1], pairs);
    printf("\nmedians:\n%8s %10s %12s %20s %16s %14s\n", "threads", "s/round", "examples/s", "ms/SGD step/thread",
           "CPU s / wall s", "other load");
    double worst_other = 0;
    for (int k = 0; k < 2; k++) {
        double m = k ? m2 : m1, busy[MAX_PAIRS];
        for (int r = 0; r < pairs; r++) busy[r] = cpu[k][r] / t[k][r];
        double other = bench_median(others[k], pairs);
        if (other > worst_other) worst_other = other;
        printf("%8d %10.3f %12.1f %20.2f %16.2f %8.2f cores\n", nthreads[k], m, examples / m,
               1e3 * m / (clients * batches) * nthreads[k], bench_median(busy, pairs), other);
    }
    double speedup = m1 / m2;
    printf("\nspeedup, %d threads vs 1 (median examples/s): %.2fx   (target >= 1.8x: %s)\n", threads, speedup,
           speedup >= 1.8 ? "met" : "MISSED");
    if (worst_other > 0.1)
        printf("NOISY: other processes used %.2f cores (median) during the rounds; %d threads cannot all run. "
               "Rerun on an idle machine.\n",
               worst_other, threads);
    /* The same from the pairs that nothing else disturbed (other load < 0.1 cores
     * in both rounds): the ratio of each such pair's times, and their median. */
    double clean[MAX_PAIRS];
    int nclean = 0;
    for (int r = 0; r < pairs; r++)
        if (others[0][r] < 0.1 && others[1][r] < 0.1) clean[nclean++] = t[0][r] / t[1][r];
    if (nclean)
        printf("undisturbed pairs: %d of %d, median speedup of a pair %.2fx\n", nclean, pairs, bench_median(clean, nclean));
    else
        printf("undisturbed pairs: none of %d\n", pairs);
    const float *loss;
    BENCH_FAIL_IF(fedc_executor_output(ex[0], "loss", (const void **)&loss, NULL));
    printf("outputs (new model, %zu bytes, and loss %.5f) bitwise identical across all %d rounds of 1 and %d "
           "threads: %s\n",
           o.total, *loss, 2 * pairs + 2, threads, differ ? "NO" : "yes");

    for (int k = 0; k < 2; k++) fedc_executor_destroy(ex[k]);
    fedc_program_destroy(round);
    for (int i = 0; i < NPARAMS; i++) free(w[i]);
    free(xs), free(ys), free(nb), free(ref), free(tmp);
    return differ ? 1 : 0;
}
