/* fma_peak.c — the FMA loop of fma_peak.h. Each lane of each accumulator runs
 * a = a * m + c, which converges to c / (1 - m) (no overflow, no denormals); the
 * accumulators are independent, more of them than FMA latency times FMA ports
 * (4 x 2 on the cores this runs on), so the loop is bound by FMA throughput
 * alone. The sum of the lanes is returned so that the compiler keeps the work. */
#include "common/fma_peak.h"

#include <immintrin.h>
#include <pthread.h>
#include <stdint.h>
#include <time.h>

#include "common/bench.h"

enum { MAX_THREADS = 64, ZMM_ACC = 16, YMM_ACC = 12 };

__attribute__((target("avx512f"))) static float loop_avx512(int64_t iters) {
    __m512 a[ZMM_ACC], m = _mm512_set1_ps(0.999f), c = _mm512_set1_ps(1e-3f);
    for (int k = 0; k < ZMM_ACC; k++) a[k] = _mm512_set1_ps((float)k);
    for (int64_t i = 0; i < iters; i++)
        for (int k = 0; k < ZMM_ACC; k++) a[k] = _mm512_fmadd_ps(a[k], m, c);
    for (int k = 1; k < ZMM_ACC; k++) a[0] = _mm512_add_ps(a[0], a[k]);
    return _mm512_reduce_add_ps(a[0]);
}

__attribute__((target("avx2,fma"))) static float loop_avx2(int64_t iters) {
    __m256 a[YMM_ACC], m = _mm256_set1_ps(0.999f), c = _mm256_set1_ps(1e-3f);
    for (int k = 0; k < YMM_ACC; k++) a[k] = _mm256_set1_ps((float)k);
    for (int64_t i = 0; i < iters; i++)
        for (int k = 0; k < YMM_ACC; k++) a[k] = _mm256_fmadd_ps(a[k], m, c);
    for (int k = 1; k < YMM_ACC; k++) a[0] = _mm256_add_ps(a[0], a[k]);
    float lanes[8];
    _mm256_storeu_ps(lanes, a[0]);
    return lanes[0] + lanes[1] + lanes[2] + lanes[3] + lanes[4] + lanes[5] + lanes[6] + lanes[7];
}

static int isa(void) {
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) return 2;
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") ? 1 : 0;
}

const char *bench_fma_isa(void) {
    static const char *const names[] = {"none", "avx2+fma", "avx512f"};
    return names[isa()];
}

/* FLOPs of one iteration of the loop for the ISA in use. */
static double flops_per_iter(void) {
    int i = isa();
    return i == 2 ? 2.0 * 16 * ZMM_ACC : i == 1 ? 2.0 * 8 * YMM_ACC : 0;
}

static float run_loop(int64_t iters) { return isa() == 2 ? loop_avx512(iters) : loop_avx2(iters); }

typedef struct fma_job {
    int64_t iters;
    pthread_barrier_t *start;
    double seconds, cpu_seconds;
    volatile float sink;
} fma_job;

static double thread_cpu_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void *fma_worker(void *arg) {
    fma_job *job = arg;
    job->sink = run_loop(job->iters / 64); /* warm-up: wakes the core and its vector unit */
    pthread_barrier_wait(job->start);
    double t0 = bench_now(), c0 = thread_cpu_now();
    job->sink = run_loop(job->iters);
    job->cpu_seconds = thread_cpu_now() - c0;
    job->seconds = bench_now() - t0;
    return NULL;
}

/* GFLOP/s of one run: all FLOPs over the slowest thread's wall time; and into
 * *per_cpu the sum of each thread's FLOPs over its own CPU time, what the cores
 * do while this process has them (a loaded machine lowers the first only). */
static double one_run(int threads, int64_t iters, double *per_cpu) {
    pthread_t tid[MAX_THREADS];
    fma_job jobs[MAX_THREADS];
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, (unsigned)threads);
    for (int i = 0; i < threads; i++) {
        jobs[i] = (fma_job){.iters = iters, .start = &start};
        if (pthread_create(&tid[i], NULL, fma_worker, &jobs[i]) != 0) { /* the others wait at the barrier */
            fprintf(stderr, "bench: cannot start FMA thread %d of %d\n", i + 1, threads);
            exit(1);
        }
    }
    double slowest = 0;
    for (int i = 0; i < threads; i++) pthread_join(tid[i], NULL);
    pthread_barrier_destroy(&start);
    *per_cpu = 0;
    for (int i = 0; i < threads; i++) {
        slowest = jobs[i].seconds > slowest ? jobs[i].seconds : slowest;
        if (jobs[i].cpu_seconds > 0) *per_cpu += flops_per_iter() * (double)iters / jobs[i].cpu_seconds * 1e-9;
    }
    return slowest > 0 ? flops_per_iter() * (double)iters * threads / slowest * 1e-9 : 0;
}

double bench_fma_gflops(int threads, double seconds, int repeats, double *cpu_gflops) {
    *cpu_gflops = 0;
    if (!isa() || threads < 1 || threads > MAX_THREADS) return 0;
    /* Calibrate on one thread: iterations for `seconds` at the rate of a short run. */
    int64_t probe = 1 << 22;
    double t0 = bench_now();
    volatile float sink = run_loop(probe);
    (void)sink;
    double dt = bench_now() - t0;
    int64_t iters = dt > 0 ? (int64_t)((double)probe * seconds / dt) : probe;
    double best = 0;
    for (int r = 0; r < repeats; r++) {
        double cpu, g = one_run(threads, iters, &cpu);
        best = g > best ? g : best;
        *cpu_gflops = cpu > *cpu_gflops ? cpu : *cpu_gflops;
    }
    return best;
}
