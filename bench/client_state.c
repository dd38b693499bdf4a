/*
 * bench_client_state — peak memory, disk use and time of stateful rounds over the
 * per-client state store (src/fl/client_store.c; issue 15: "peak RSS flat
 * (<= 1.1x) from 1,000 to 100,000 stateful clients with a small model").
 *
 *     ./build/bench_client_state [rounds] [clients...]   (default 20 1000 10000 100000)
 *
 * Each population runs in a child process of its own (fork), so peaks do not mix.
 * The child creates a store in a fresh temporary directory (under $TMPDIR, else
 * /tmp) for one record per client of the 60-64-10 MLP's size (4,554 f32, as in
 * bench_cohort_memory: a SCAFFOLD control variate of that model), then runs
 * `rounds` rounds of: sample a cohort of 10 clients (fedc_sample_clients), read
 * their records as of the round, apply a small update (c = 0.9 c + 0.1 g, g a
 * function of the client, round and position), write them; after every 5th
 * round it syncs the store and protects the next round, as the runner does at a
 * checkpoint (ms/round is the median round; the mean includes those syncs).
 * It then times resume() (a scan of the whole index) and reads its
 * peak resident set size (VmHWM), the file's apparent size and its bytes on disk
 * (st_blocks * 512), and deletes the store.
 *
 * Target: peak RSS at the largest population <= 1.1 x that at the smallest.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/bench.h"
#include "fl/client_store.h"

enum { RECORD_FLOATS = 60 * 64 + 64 + 64 * 10 + 10, COHORT = 10, MAX_ROUNDS = 1000, MAX_POPS = 8, CHECKPOINT_EVERY = 5 };

typedef struct measurement {
    int64_t clients, with_state;
    double seconds_per_round, mean_seconds, resume_seconds, checksum;
    size_t peak_rss, open_rss;
    long long file_bytes, disk_bytes;
} measurement;

/* One round: the cohort's records read, updated, written. */
static void run_round(fedc__client_store *s, int64_t clients, uint32_t r, float *rec) {
    int64_t ids[COHORT];
    void *dst[COHORT];
    const void *src[COHORT];
    bool found[COHORT];
    BENCH_FAIL_IF(fedc_sample_clients(clients, COHORT, 15, r, ids));
    for (int i = 0; i < COHORT; i++) dst[i] = rec + (size_t)i * RECORD_FLOATS, src[i] = dst[i];
    BENCH_FAIL_IF(fedc__client_store_read(s, r, COHORT, ids, dst, found));
    for (int i = 0; i < COHORT; i++) {
        float *c = rec + (size_t)i * RECORD_FLOATS;
        if (!found[i]) memset(c, 0, RECORD_FLOATS * sizeof *c);
        for (int k = 0; k < RECORD_FLOATS; k++) /* axpy of a stand-in for the round's correction */
            c[k] = 0.9f * c[k] + 0.1f * (float)((ids[i] + r + (uint32_t)k) % 13) * 0.01f;
    }
    BENCH_FAIL_IF(fedc__client_store_write(s, r, COHORT, ids, src));
    if ((r + 1) % CHECKPOINT_EVERY == 0) {
        BENCH_FAIL_IF(fedc__client_store_sync(s));
        BENCH_FAIL_IF(fedc__client_store_checkpoint(s, r + 1));
    }
}

/* Runs in a child: a store of `clients`, `rounds` rounds, then the measures. */
static measurement measure(int64_t clients, int rounds) {
    measurement m = {.clients = clients};
    if (clients == 0) { /* the baseline: the process as forked */
        m.peak_rss = bench_proc_status_bytes("VmHWM");
        return m;
    }
    const char *tmp = getenv("TMPDIR");
    char dir[512], path[600];
    snprintf(dir, sizeof dir, "%s/fedc-bench-state-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    BENCH_FAIL_IF(!mkdtemp(dir));
    snprintf(path, sizeof path, "%s/clients.store", dir);
    fedc__client_store *s;
    BENCH_FAIL_IF(fedc__client_store_open(&s, path, clients, RECORD_FLOATS * sizeof(float),
                                          "bench: scaffold c of mlp 60-64-10 f32[4554]"));
    float *rec = malloc((size_t)COHORT * RECORD_FLOATS * sizeof *rec);
    BENCH_FAIL_IF(!rec);
    m.open_rss = bench_proc_status_bytes("VmRSS");
    double t[MAX_ROUNDS];
    for (int r = 0; r < rounds; r++) {
        double t0 = bench_now();
        run_round(s, clients, (uint32_t)r, rec);
        t[r] = bench_now() - t0;
    }
    for (int r = 0; r < rounds; r++) m.mean_seconds += t[r] / rounds;
    m.seconds_per_round = bench_median(t, rounds);
    for (int k = 0; k < COHORT * RECORD_FLOATS; k++) m.checksum += rec[k];
    double t0 = bench_now();
    BENCH_FAIL_IF(fedc__client_store_resume(s, (uint32_t)rounds));
    m.resume_seconds = bench_now() - t0;
    m.with_state = fedc__client_store_count(s);
    m.peak_rss = bench_proc_status_bytes("VmHWM");
    struct stat sb;
    BENCH_FAIL_IF(stat(path, &sb) != 0);
    m.file_bytes = (long long)sb.st_size;
    m.disk_bytes = (long long)sb.st_blocks * 512;
    fedc__client_store_close(s);
    free(rec);
    unlink(path);
    rmdir(dir);
    return m;
}

/* One population's measurement in a child of its own (bench_in_child). */
typedef struct population {
    int64_t clients;
    int rounds;
} population;

static void measure_population(void *ctx, void *result) {
    const population *p = ctx;
    *(measurement *)result = measure(p->clients, p->rounds);
}

static double mib(double b) { return b / (1024.0 * 1024.0); }

int main(int argc, char **argv) {
    int rounds = argc > 1 ? atoi(argv[1]) : 20, npops = argc > 2 ? argc - 2 : 3;
    int64_t pops[MAX_POPS + 1] = {1000, 10000, 100000};
    for (int k = 0; argc > 2 && k < npops && k < MAX_POPS; k++) pops[k] = atoll(argv[2 + k]);
    bool ok = rounds >= 1 && rounds <= MAX_ROUNDS && npops >= 2 && npops <= MAX_POPS;
    for (int k = 0; ok && k < npops; k++) ok = pops[k] >= COHORT;
    if (!ok) {
        fprintf(stderr, "usage: bench_client_state [rounds in 1..%d] [clients >= %d ...(2..%d populations)]\n",
                MAX_ROUNDS, COHORT, MAX_POPS);
        return 2;
    }
    printf("command: ");
    for (int i = 0; i < argc; i++) printf("%s%s", argv[i], i + 1 < argc ? " " : "\n");
    printf("record: %d f32 (%zu bytes, the 60-64-10 MLP), cohort %d, %d rounds, sync + checkpoint every %d rounds "
           "(fork per population)\n\n", RECORD_FLOATS, RECORD_FLOATS * sizeof(float), COHORT, rounds, CHECKPOINT_EVERY);
    measurement m[MAX_POPS + 1];
    pops[npops] = 0; /* the last child is the baseline */
    for (int k = 0; k <= npops; k++)
        if (bench_in_child(measure_population, &(population){pops[k], rounds}, &m[k], sizeof m[k])) {
            fprintf(stderr, "bench_client_state: the measurement of %lld clients failed\n", (long long)pops[k]);
            return 1;
        }
    printf("%9s %11s %10s %10s %12s %12s %14s %12s %10s %12s\n", "clients", "with state", "ms/round", "mean ms",
           "peak RSS", "RSS at open", "file (apparent)", "on disk", "resume ms", "checksum");
    for (int k = 0; k < npops; k++)
        printf("%9lld %11lld %10.3f %10.3f %8.2f MiB %8.2f MiB %10.1f MiB %8.2f MiB %10.3f %12.4f\n", (long long)m[k].clients,
               (long long)m[k].with_state, 1e3 * m[k].seconds_per_round, 1e3 * m[k].mean_seconds, mib((double)m[k].peak_rss),
               mib((double)m[k].open_rss), mib((double)m[k].file_bytes), mib((double)m[k].disk_bytes),
               1e3 * m[k].resume_seconds, m[k].checksum);
    const measurement *lo = &m[0], *hi = &m[npops - 1];
    double ratio = (double)hi->peak_rss / (double)lo->peak_rss;
    printf("\npeak RSS ratio, %lld vs %lld clients: %.3f   (target <= 1.1: %s)\n", (long long)hi->clients,
           (long long)lo->clients, ratio, ratio <= 1.1 ? "met" : "MISSED");
    printf("process baseline (peak RSS of a child that does nothing): %.2f MiB\n", mib((double)m[npops].peak_rss));
    bench_json("client_state", "\"rounds\": %d, \"clients\": [%lld, %lld], \"peak_rss_mib\": [%.3f, %.3f], "
               "\"rss_ratio\": %.4f, \"ms_per_round\": [%.4f, %.4f], \"disk_mib\": [%.3f, %.3f]",
               rounds, (long long)lo->clients, (long long)hi->clients, mib((double)lo->peak_rss),
               mib((double)hi->peak_rss), ratio, 1e3 * lo->seconds_per_round, 1e3 * hi->seconds_per_round,
               mib((double)lo->disk_bytes), mib((double)hi->disk_bytes));
    return 0;
}
