/*
 * bench_kernels — how close the fast convolution gets to this machine's GEMM
 * peak. Prints single-thread sgemm GFLOP/s on 512^3, then the GFLOP/s of a
 * training step's convolution work on the EMNIST CNN's two conv layers (batch
 * 20: 28x28x1 -> 3x3x32 valid -> 26x26x32 -> 3x3x64 valid -> 24x24x64) and its
 * fraction of that peak. Each conv pass counts 2*n*oh*ow*kh*kw*c*o FLOPs; a layer
 * runs forward, input grad and filter grad, except the first, whose input grad a
 * real backward pass never needs. Times are the best of several repeats, per pass.
 * Then the first dense layer's three products at batch 20 ([20, 9216] @ [9216,
 * 128], its input gradient dy @ W^T and weight gradient x^T @ dy), the same way
 * (FEDC_ROWS_GEMM=0 sends them all to OpenBLAS).
 *
 *     ./build/bench_kernels            the above
 *     ./build/bench_kernels peak [T]   the machine's FP32 peak: OpenBLAS's sgemm on 1 thread
 *                                      and on T threads (default: all cores) each running
 *                                      its own sgemms at once with a 1-thread BLAS, as
 *                                      fedc's workers do; then an FMA loop of the widest
 *                                      vector ISA the CPU has (common/fma_peak.h) on 1 and
 *                                      T threads; the peak is the higher of the two. Prints
 *                                      a json line for bench/run.
 */
#include <cblas.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <string.h>
#include <time.h>

#include "kernels/kernels.h"
#include "common/bench.h"
#include "common/fma_peak.h"

#define REPEATS 20

/* The calling thread's CPU seconds: the machine may be shared, and a pass's
 * time on a loaded core counts the other processes' slices in wall time. */
static double cpu_seconds(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

typedef struct layer {
    fedc__conv_geom g;
    int input_grad; /* whether backward needs dx */
    float *x, *w, *y, *dy, *dx, *dw;
    void *scratch;
} layer;

static float *array(int64_t n) {
    float *p = fedc_malloc((size_t)n * sizeof(float));
    for (int64_t i = 0; p && i < n; i++) p[i] = (float)((i * 7919) % 1013 - 506) / 506.0f;
    return p;
}

static int layer_init(layer *l, int64_t n, int64_t h, int64_t c, int64_t o, int input_grad) {
    fedc__conv_geom g = {.n = n, .h = h, .w = h, .c = c, .kh = 3, .kw = 3, .o = o, .sh = 1,
                        .sw = 1, .oh = h - 2, .ow = h - 2};
    int64_t nx = n * h * h * c, nw = 9 * c * o, ny = n * g.oh * g.ow * o;
    *l = (layer){.g = g, .input_grad = input_grad};
    l->x = array(nx), l->w = array(nw), l->y = array(ny), l->dy = array(ny);
    l->dx = array(nx), l->dw = array(nw);
    l->scratch = fedc_malloc(fedc__kernels_fast.conv2d_scratch(&g, FEDC_F32) + 1);
    return l->x && l->w && l->y && l->dy && l->dx && l->dw && l->scratch;
}

static void layer_free(layer *l) {
    fedc_free(l->x), fedc_free(l->w), fedc_free(l->y), fedc_free(l->dy);
    fedc_free(l->dx), fedc_free(l->dw), fedc_free(l->scratch);
}

static double layer_flops(const layer *l) {
    const fedc__conv_geom *g = &l->g;
    double pass = 2.0 * (double)(g->n * g->oh * g->ow * g->kh * g->kw * g->c * g->o);
    return pass * (l->input_grad ? 3 : 2);
}

/* The layer's pass `pass` (0 forward, 1 input grad, 2 filter grad) through k. */
static fedc_status layer_pass(const fedc__kernels *k, const layer *l, int pass) {
    if (pass == 0) return k->conv2d(FEDC_F32, &l->g, l->x, l->w, l->y, l->scratch);
    if (pass == 1) return k->conv2d_input_grad(FEDC_F32, &l->g, l->dy, l->w, l->dx, l->scratch);
    return k->conv2d_filter_grad(FEDC_F32, &l->g, l->x, l->dy, l->dw, l->scratch);
}

/* Best time of each pass over REPEATS rounds of forward + backward (best[1] stays
 * 0 for a layer without input grad); returns the sum of the bests, < 0 on error. */
static double layer_time(const fedc__kernels *k, const layer *l, double best[3]) {
    best[0] = best[1] = best[2] = 0;
    for (int r = 0; r < REPEATS; r++)
        for (int pass = 0; pass < 3; pass++) {
            if (pass == 1 && !l->input_grad) continue;
            double t0 = cpu_seconds();
            fedc_status st = layer_pass(k, l, pass);
            double t = cpu_seconds() - t0;
            if (st) {
                fprintf(stderr, "bench_kernels: %s\n", fedc_errmsg());
                return -1;
            }
            if (r == 0 || t < best[pass]) best[pass] = t;
        }
    return best[0] + best[1] + best[2];
}

/* The EMNIST CNN's first dense layer at batch 20: best of REPEATS per product. */
static int dense_time(void) {
    enum { B = 20, IN = 9216, OUT = 128 };
    const fedc__kernels *k = &fedc__kernels_fast;
    float *x = array(B * IN), *w = array(IN * OUT), *y = array(B * OUT), *dx = array(B * IN), *dw = array(IN * OUT);
    double best[3] = {0, 0, 0};
    int ok = x && w && y && dx && dw;
    for (int r = 0; ok && r < REPEATS; r++)
        for (int pass = 0; pass < 3; pass++) {
            double t0 = cpu_seconds();
            fedc_status st = pass == 0   ? k->matmul(FEDC_F32, 1, B, OUT, IN, 0, 0, x, 0, w, 0, y)
                             : pass == 1 ? k->matmul(FEDC_F32, 1, B, IN, OUT, 0, 1, y, 0, w, 0, dx)
                                         : k->matmul(FEDC_F32, 1, IN, OUT, B, 1, 0, x, 0, y, 0, dw);
            double t = cpu_seconds() - t0;
            ok = !st;
            if (r == 0 || t < best[pass]) best[pass] = t;
        }
    if (ok)
        printf("dense layer 1 ([20, 9216] -> 128): fwd %.3f, dx (dy @ W^T) %.3f, dw %.3f ms\n", best[0] * 1e3,
               best[1] * 1e3, best[2] * 1e3);
    fedc_free(x), fedc_free(w), fedc_free(y), fedc_free(dx), fedc_free(dw);
    return ok;
}

/* ------------------------------------------------------------ the peak -- */

/* The peak is the best of three sizes: OpenBLAS's AVX-512 sgemm runs faster on
 * 1024^3 than on 512^3 (packing is a larger share of a smaller product), and an
 * MFU measured against too low a peak would flatter fedc. Each size runs about
 * 10^10 FLOPs per worker. */
static const int peak_sizes[] = {512, 1024, 2048};
enum { PEAK_FLOPS_PER_WORKER = 10000000000, MAX_PEAK_THREADS = 64 };
static pthread_barrier_t peak_barrier;

typedef struct peak_job {
    int n, repeats;
    double seconds;
} peak_job;

/* One worker: warms up, waits for all, runs its sgemms; records its seconds. */
static void *peak_worker(void *arg) {
    peak_job *job = arg;
    int n = job->n;
    size_t count = (size_t)n * (size_t)n;
    float *a = fedc_malloc(3 * count * sizeof(float));
    if (!a) return NULL;
    for (size_t i = 0; i < 3 * count; i++) a[i] = (float)(i % 7) * 0.25f;
    float *b = a + count, *c = b + count;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1, a, n, b, n, 0, c, n);
    pthread_barrier_wait(&peak_barrier);
    double t0 = fedc_seconds();
    for (int r = 0; r < job->repeats; r++)
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1, a, n, b, n, 0, c, n);
    job->seconds = fedc_seconds() - t0;
    fedc_free(a);
    return NULL;
}

/* GFLOP/s of `threads` workers running n^3 sgemms at once: all their FLOPs over
 * the slowest one's time. */
static double peak_gflops(int threads, int n) {
    pthread_t tid[MAX_PEAK_THREADS];
    peak_job jobs[MAX_PEAK_THREADS];
    double per = 2.0 * n * n * (double)n, slowest = 0;
    int repeats = (int)(PEAK_FLOPS_PER_WORKER / per) > 3 ? (int)(PEAK_FLOPS_PER_WORKER / per) : 3;
    pthread_barrier_init(&peak_barrier, NULL, (unsigned)threads);
    for (int i = 0; i < threads; i++) {
        jobs[i] = (peak_job){n, repeats, 0};
        pthread_create(&tid[i], NULL, peak_worker, &jobs[i]);
    }
    for (int i = 0; i < threads; i++) pthread_join(tid[i], NULL);
    pthread_barrier_destroy(&peak_barrier);
    for (int i = 0; i < threads; i++) slowest = jobs[i].seconds > slowest ? jobs[i].seconds : slowest;
    return slowest > 0 ? per * repeats * threads / slowest * 1e-9 : 0;
}

static int peak(int threads) {
    if (threads < 1 || threads > MAX_PEAK_THREADS) {
        fprintf(stderr, "usage: bench_kernels peak [threads in 1..%d]\n", MAX_PEAK_THREADS);
        return 2;
    }
    fedc__kernels_init(); /* OpenBLAS on one thread: each worker is one */
    double one = 0, all = 0;
    int one_n = 0, all_n = 0;
    for (size_t k = 0; k < sizeof peak_sizes / sizeof *peak_sizes; k++) {
        int n = peak_sizes[k];
        double g1 = peak_gflops(1, n), ga = peak_gflops(threads, n);
        printf("sgemm %d^3 (OpenBLAS core %s): 1 thread %.1f GFLOP/s, %d threads %.1f GFLOP/s (%.2fx)\n", n,
               openblas_get_corename(), g1, threads, ga, ga / g1);
        if (g1 > one) one = g1, one_n = n;
        if (ga > all) all = ga, all_n = n;
    }
    printf("sgemm peak (best size): 1 thread %.1f GFLOP/s (%d^3), %d threads %.1f GFLOP/s (%d^3)\n", one, one_n,
           threads, all, all_n);
    double cpu1, cpu_all, fma1 = bench_fma_gflops(1, 0.5, 3, &cpu1), fma_all = bench_fma_gflops(threads, 0.5, 3, &cpu_all);
    printf("FMA loop (%s): 1 thread %.1f GFLOP/s, %d threads %.1f GFLOP/s (per CPU second: %.1f, %.1f)\n",
           bench_fma_isa(), fma1, threads, fma_all, cpu1, cpu_all);
    /* The highest figure: a loaded machine lowers the wall figures, never the CPU ones. */
    double peak1 = fmax(fmax(fma1, cpu1), one), peak_all = fmax(fmax(fma_all, cpu_all), all);
    printf("FP32 peak (the highest of these): 1 thread %.1f GFLOP/s, %d threads %.1f GFLOP/s\n", peak1, threads,
           peak_all);
    bench_json("sgemm_peak",
               "\"n\": %d, \"n_all\": %d, \"gflops_1\": %.3f, \"threads\": %d, \"gflops_all\": %.3f, \"blas_core\": \"%s\", "
               "\"fma_isa\": \"%s\", \"fma_gflops_1\": %.3f, \"fma_gflops_all\": %.3f, \"fma_cpu_gflops_1\": %.3f, "
               "\"fma_cpu_gflops_all\": %.3f, \"peak_gflops_1\": %.3f, \"peak_gflops_all\": %.3f",
               one_n, all_n, one, threads, all, openblas_get_corename(), bench_fma_isa(), fma1, fma_all, cpu1, cpu_all,
               peak1, peak_all);
    return 0;
}

int main(int argc, char **argv) {
    if (argc > 1 && !strcmp(argv[1], "peak")) return peak(argc > 2 ? atoi(argv[2]) : (int)sysconf(_SC_NPROCESSORS_ONLN));
    fedc__kernels_init();
    double peak = fedc__kernels_sgemm_gflops(512, 10);
    printf("sgemm 512^3, 1 thread: %.1f GFLOP/s\n", peak);
    layer layers[2];
    int ok = layer_init(&layers[0], 20, 28, 1, 32, 0);
    ok = layer_init(&layers[1], 20, 26, 32, 64, 1) && ok;
    double flops = 0, secs = 0;
    for (int i = 0; ok && i < 2; i++) {
        double best[3], t = layer_time(&fedc__kernels_fast, &layers[i], best);
        if (t <= 0) ok = 0;
        double gf = layer_flops(&layers[i]) / t * 1e-9;
        printf("conv layer %d (%s): %.3f ms, %.1f GFLOP/s, %.0f%% of sgemm peak "
               "(fwd %.3f, dx %.3f, dw %.3f ms)\n", i + 1,
               i ? "26x26x32 -> 24x24x64, fwd + dx + dw" : "28x28x1 -> 26x26x32, fwd + dw",
               t * 1e3, gf, 100 * gf / peak, best[0] * 1e3, best[1] * 1e3, best[2] * 1e3);
        flops += layer_flops(&layers[i]), secs += t;
    }
    if (ok)
        printf("conv total: %.3f ms, %.1f GFLOP/s, %.0f%% of sgemm peak\n", secs * 1e3,
               flops / secs * 1e-9, 100 * flops / secs * 1e-9 / peak);
    layer_free(&layers[0]), layer_free(&layers[1]);
    ok = ok && dense_time();
    return ok ? 0 : 1;
}
