/*
 * bench_transformer_cohorts — FAX's language-model experiment in miniature (issue 20,
 * target 4): FedAvg rounds of a transformer preset with a fixed amount of work per
 * client, for cohorts of 8 to 2,048 clients, on 1 and 2 threads, in one process or
 * over 1 and 2 MPI ranks: seconds a round, seconds a client, tokens a second, FLOPs
 * a round counted analytically, the MFU against this machine's measured sgemm
 * peak, and the peak RSS. FAX (Rush et al. 2023) reports its rounds this way:
 * 2,048 clients, 3.355e7 tokens and 2.293e13 FLOPs a round.
 *
 *     ./build/bench_transformer_cohorts [tiny|small] [--cohorts 8,32,...] [--threads 1,2]
 *                                       [--ranks 1,2] [--steps S] [--batch B] [--rounds R]
 *     (defaults: tiny; cohorts 8,32,128,512,2048; threads 1,2; one process; 4 steps
 *     of batch 4 a client; 2 timed rounds after a warm-up one)
 *
 * Each (threads, cohort) runs in a child process of its own, so its peak RSS is its
 * own: `fedc train` (fedc_train) on synthetic Zipf word ranks, the cohort every
 * client of the data (so every round trains the same clients), each client exactly
 * S x B sequences of the preset's context (S steps of SGD, lr 0.1; the server's
 * SGD at lr 1: FedAvg). With --ranks, each (ranks, threads, cohort) is a job of
 * its own, `mpirun -np RANKS` of this program (FEDC_MPIRUN names the launcher),
 * whose ranks split the cohort (docs/mpi.md). A round's time is the wall time
 * between two on_round calls (batches filled, clients trained, the server's
 * step; the last round's also the closing evaluation fedc_train always runs, kept
 * to one client's forward pass in the training's batches), and beside it the CPU
 * seconds of the process (rank 0's, a share of cohort / ranks clients, under MPI),
 * which a loaded machine disturbs much less. Targets: seconds a client flat from
 * 8 to 2,048 clients (<= 1.1x) and the RSS flat in the cohort.
 *
 * Memory: the clients' data is O(cohort) by nature, so the figures are the peak
 * RSS less it, two ways. "RSS-data" subtracts the bytes the data must take (the
 * synthetic tokens, and the round's batches x, y and mask bound as its @clients
 * inputs), as bench_cohort_memory counts them. "runner" subtracts instead the data
 * set as measured (the heap another child's opening of the same data set takes:
 * each client's record, id and feature table and the dataset's index besides the
 * tokens, with malloc's headers) and the batches: what is left is what
 * fedc_train itself holds, the part that must not grow with the cohort. Under MPI
 * every rank holds the whole data set, and the batch buffers of the whole cohort
 * (zeroed, so resident) though it fills its own clients' only; the figure is the
 * largest rank's.
 *
 * FLOPs: the matmuls of a training step counted as bench_transformer_step counts
 * them (bench_transformer_flops: 6 FLOPs per weight per token, and causal
 * attention), times the round's tokens. The MFU's denominator is the sgemm peak
 * of the cores used (the best of 5 fedc__kernels_sgemm_gflops at 1 thread, times
 * threads x ranks).
 */
#include <malloc.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
    int threads, rounds, ranks; /* ranks 0: one process, no mpirun */
} job;

typedef struct outcome {
    double round_s, cpu_s; /* the median round's wall and CPU seconds (rank 0's process under MPI) */
    size_t peak_rss;       /* the largest rank's under MPI */
} outcome;

/* The round timer, and the process's CPU seconds of each round beside it: on a
 * loaded machine the wall time is shared with others, the CPU time much less so. */
typedef struct round_clocks {
    bench_round_timer wall;
    fedc_status (*wall_on_round)(void *ctx, int round, bool evaluated, const struct fedc_train_result *so_far);
    double cpu_last, cpu[BENCH_MAX_ROUNDS];
} round_clocks;

static fedc_status clocks_on_round(void *ctx, int round, bool evaluated, const struct fedc_train_result *so_far) {
    round_clocks *k = ctx;
    double now = bench_cpu_now();
    if (round >= 1 && round <= BENCH_MAX_ROUNDS) k->cpu[round - 1] = now - k->cpu_last;
    k->cpu_last = now;
    return k->wall_on_round(&k->wall, round, evaluated, so_far);
}

static void clocks_install(round_clocks *k, fedc_train_config *c) {
    bench_round_timer_install(&k->wall, c);
    k->wall_on_round = c->on_round;
    k->cpu_last = bench_cpu_now();
    c->on_round = clocks_on_round;
    c->on_round_ctx = k;
}

/* The data set fedc_train opens for "synthetic:zipf:COHORT:S*B:CONTEXT" (its seed 0). */
static fedc_status open_data(const job *j, fedc_dataset **ds) {
    return fedc_synthetic_zipf(j->cohort, j->steps * j->batch, j->p->context, (int32_t)(j->p->vocab - 4), 1.0, 0, ds);
}

/* The bytes malloc has handed out and not taken back (chunks with their headers). */
static size_t heap_in_use(void) {
    struct mallinfo2 m = mallinfo2();
    return m.uordblks + m.hblkhd;
}

/* In a child: what opening the job's data set takes from the heap (after a data
 * set of one client, so that what fedc sets up once is not counted). Its heap, not
 * its RSS: the child may reuse pages its parent freed, which its RSS already has. */
static void measure_data(void *ctx, void *result) {
    job one = *(const job *)ctx;
    one.cohort = 1;
    fedc_dataset *ds;
    BENCH_FAIL_IF(open_data(&one, &ds));
    fedc_dataset_destroy(ds);
    size_t before = heap_in_use();
    BENCH_FAIL_IF(open_data(ctx, &ds));
    *(size_t *)result = heap_in_use() - before;
    fedc_dataset_destroy(ds);
}

/* Trains the job's rounds and reports the median round (rank 0's) and the peak RSS. */
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
    c.eval_every = 0;   /* fedc_train still evaluates after the last round, in its time: */
    c.eval_clients = 1; /* one client in batches of the training's, so it costs under a client */
    c.eval_batch_size = j->batch;
    c.quiet = true;
    c.out_dir = "out/bench/transformer_cohorts";
    round_clocks k;
    clocks_install(&k, &c);
    fedc_train_result res;
    BENCH_FAIL_IF(fedc_train(&c, &res));
    outcome *o = result;
    bool timed = k.wall.rounds > j->rounds; /* on_round runs on rank 0 only */
    o->round_s = timed ? bench_median(k.wall.seconds + 1, j->rounds) : NAN;
    o->cpu_s = timed ? bench_median(k.cpu + 1, j->rounds) : NAN;
    o->peak_rss = bench_proc_status_bytes("VmHWM");
}

/* A rank of an mpirun job (--one COHORT): trains, and prints its line for run_mpi. */
static int one_rank(job *j) {
    BENCH_FAIL_IF(fedc_mpi_init());
    outcome o;
    measure(j, &o);
    printf("rank %d: %.6f %.6f %zu\n", fedc_mpi_rank(), o.round_s, o.cpu_s, o.peak_rss);
    fflush(stdout);
    return fedc_mpi_finalize() ? 1 : 0;
}

/* Runs the job as `mpirun -np ranks` of this program; 0 on success. */
static int run_mpi(const job *j, outcome *o) {
    char self[4096], cmd[4600];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n < 1) return -1;
    self[n] = '\0';
    const char *mpirun = getenv("FEDC_MPIRUN") ? getenv("FEDC_MPIRUN") : "mpirun";
    /* Open MPI binds each of a few ranks to one core: a rank's second thread would share it. */
    snprintf(cmd, sizeof cmd, "%s --oversubscribe %s -np %d '%s' %s --steps %lld --batch %lld --rounds %d --threads %d "
             "--one %lld", mpirun, j->threads > 1 ? "--bind-to none" : "", j->ranks, self, j->p->name,
             (long long)j->steps, (long long)j->batch, j->rounds, j->threads, (long long)j->cohort);
    fflush(stdout);
    FILE *f = popen(cmd, "r");
    char line[256];
    int ranks = 0;
    *o = (outcome){NAN, NAN, 0};
    while (f && fgets(line, sizeof line, f)) {
        int r;
        double s, cpu;
        size_t rss;
        if (sscanf(line, "rank %d: %lf %lf %zu", &r, &s, &cpu, &rss) != 4) continue;
        ranks++;
        if (r == 0) o->round_s = s, o->cpu_s = cpu;
        if (rss > o->peak_rss) o->peak_rss = rss;
    }
    int status = f ? pclose(f) : -1;
    return status == 0 && ranks == j->ranks && isfinite(o->round_s) ? 0 : -1;
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
    fprintf(stderr, "usage: bench_transformer_cohorts [tiny|small] [--cohorts 8,32,...] [--threads 1,2] [--ranks 1,2] "
                    "[--steps S] [--batch B] [--rounds R]\n");
    return 2;
}

/* The first cohort's figures, which the others' are compared with. */
typedef struct baseline {
    double per_client, cpu_client, rss, runner;
} baseline;

/* One row of the table (and its JSON line). */
static void report(const job *j, const outcome *o, size_t data_set, double peak1, baseline *first) {
    double sequences = (double)(j->cohort * j->steps * j->batch), ctx = (double)j->p->context;
    double tokens = sequences * 4 * ctx, batches = sequences * (2 * 4 * ctx + 4); /* x, y: i32; mask: f32 */
    double cores = (double)j->threads * (j->ranks ? j->ranks : 1), share = j->ranks ? 1.0 / j->ranks : 1.0;
    double per_client = o->round_s / (double)j->cohort;
    double cpu_client = o->cpu_s / ((double)j->cohort * share); /* rank 0 trains cohort / ranks of them */
    double rss = ((double)o->peak_rss - tokens - batches) / 1e6;
    double runner = ((double)o->peak_rss - (double)data_set - batches) / 1e6;
    double flops = bench_transformer_flops(j->p->layers, j->p->width, j->p->context, j->p->vocab, j->steps * j->batch);
    double gflop = flops * (double)j->cohort / 1e9, gflops = gflop / o->round_s;
    if (first->per_client == 0) *first = (baseline){per_client, cpu_client, rss, runner};
    char ranks[8] = "-";
    if (j->ranks) snprintf(ranks, sizeof ranks, "%d", j->ranks);
    printf("%5s  %7d  %7lld  %8.2f  %9.3f  %7.3fx  %9.3f  %7.3fx  %8.0f  %11.2f  %7.1f  %3.0f%%  %8.1f  %6.3fx  %8.2f  "
           "%9.2f  %6.3fx\n",
           ranks, j->threads, (long long)j->cohort, o->round_s, 1e3 * per_client, per_client / first->per_client,
           1e3 * cpu_client, cpu_client / first->cpu_client, sequences * ctx / o->round_s, gflop, gflops,
           100 * gflops / (peak1 * cores), rss, rss / first->rss, (double)data_set / 1e6, runner,
           runner / first->runner);
    bench_json("transformer_cohorts",
               "\"preset\": \"%s\", \"ranks\": %d, \"threads\": %d, \"clients\": %lld, \"round_s\": %.4f, "
               "\"cpu_ms_client\": %.3f, \"gflops\": %.2f, \"rss_less_data_mb\": %.1f, \"data_set_mb\": %.2f, "
               "\"runner_mb\": %.2f",
               j->p->name, j->ranks, j->threads, (long long)j->cohort, o->round_s, 1e3 * cpu_client, gflops, rss,
               (double)data_set / 1e6, runner);
}

int main(int argc, char **argv) {
    job j = {&PRESETS[0], 0, 4, 4, 1, 2, 0};
    int64_t cohorts[MAX_COHORTS] = {8, 32, 128, 512, 2048}, threads[4] = {1, 2}, ranks[4] = {0}, one = 0;
    int ncohorts = 5, nthreads = 2, nranks = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "tiny") || !strcmp(a, "small")) j.p = &PRESETS[!strcmp(a, "small")];
        else if (!strcmp(a, "--cohorts") && v) ncohorts = parse_list(argv[++i], cohorts, MAX_COHORTS);
        else if (!strcmp(a, "--threads") && v) nthreads = parse_list(argv[++i], threads, 4);
        else if (!strcmp(a, "--ranks") && v) nranks = parse_list(argv[++i], ranks, 4);
        else if (!strcmp(a, "--steps") && v) j.steps = atoll(argv[++i]);
        else if (!strcmp(a, "--batch") && v) j.batch = atoll(argv[++i]);
        else if (!strcmp(a, "--rounds") && v) j.rounds = atoi(argv[++i]);
        else if (!strcmp(a, "--one") && v) one = atoll(argv[++i]); /* run_mpi's ranks */
        else return usage();
    }
    if (ncohorts < 1 || nthreads < 1 || nranks < 1 || j.steps < 1 || j.batch < 1 || j.rounds < 1 ||
        j.rounds > MAX_ROUNDS)
        return usage();
    if (one > 0) return j.cohort = one, j.threads = (int)threads[0], one_rank(&j);
    setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 0); /* mpirun refuses root (CI) without these */
    setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 0);
    printf("BLAS kernels: OpenBLAS %s\n", bench_share_blas_core());
    double peak1 = 0; /* the best of 5: on a loaded machine one measurement may be short of the peak */
    for (int i = 0; i < 5; i++) peak1 = fmax(peak1, fedc__kernels_sgemm_gflops(512, 10));
    double tokens_client = (double)(j.steps * j.batch * j.p->context);
    double flops_client = bench_transformer_flops(j.p->layers, j.p->width, j.p->context, j.p->vocab, j.steps * j.batch);
    printf("transformer:%s, %lld steps of batch %lld a client: %.0f tokens, %.4g FLOPs a client; sgemm peak %.1f "
           "GFLOP/s a thread\n",
           j.p->name, (long long)j.steps, (long long)j.batch, tokens_client, flops_client, peak1);
    printf("ranks  threads  clients  s/round  ms/client  vs first  CPU ms/client  vs first  tokens/s  GFLOP/round  "
           "GFLOP/s  MFU  RSS-data  vs first  data set  runner MB  vs first\n");
    for (int r = 0; r < nranks; r++)
        for (int t = 0; t < nthreads; t++) {
            baseline first = {0, 0, 0, 0};
            for (int k = 0; k < ncohorts; k++) {
                j.ranks = (int)ranks[r], j.threads = (int)threads[t], j.cohort = cohorts[k];
                outcome o;
                size_t data_set = 0;
                if (bench_in_child(measure_data, &j, &data_set, sizeof data_set) ||
                    (j.ranks ? run_mpi(&j, &o) : bench_in_child(measure, &j, &o, sizeof o))) {
                    fprintf(stderr, "bench_transformer_cohorts: the run of %lld clients failed%s\n",
                            (long long)j.cohort,
                            j.ranks ? " (under mpirun: needs fedc built with MPI and mpirun, or FEDC_MPIRUN)" : "");
                    return 1;
                }
                report(&j, &o, data_set, peak1, &first);
            }
        }
    return 0;
}
