/*
 * bench_lstm_step.c — one SGD training step of FedJAX's Shakespeare LSTM
 * (shakespeare_lstm: Embed(90, 8) -> [LSTM(256), tanh] x 2 -> Linear(90)):
 * forward, gradient by fedc_grad, and the update of every parameter, on one
 * thread, against the same model and step in PyTorch
 * (bench/peers/lstm_step_torch.py, the better of 1 and 2 threads). Runs
 * alternate: fedc, torch 1 thread, torch 2 threads, for each of `sets` sets; the
 * figure of each is the median step time of its set (after warm-up steps), and
 * the result is the median over sets. Each also reports its median CPU time per
 * step (the process's): on a loaded machine wall time mostly measures the
 * scheduler, and for 1-thread runs CPU time is the fairer comparison.
 *
 *     ./build/bench_lstm_step [batch ...] [--seq T] [--steps N] [--sets S] [--no-peer]
 *     (default batches 4 and 32, sequence 80, 20 steps, 3 sets)
 *     FEDC_PROFILE=1 also prints fedc's time per op kind.
 *
 * Issue 6's target: fedc >= 1.5x PyTorch's best of 1 and 2 threads. One line
 * "json: {...}" per batch size for bench/harness.py.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/bench.h"
#include "kernels/kernels.h"

enum { WARMUP = 3, MAX_SETS = 64 };

typedef struct step_bench {
    fedc_model *m;
    fedc_program *p, *g;
    fedc_executor *ex;
    int n;
    const char **wrt;
    char (*grad_names)[64];
    float *params, *maskv;
    int32_t *xv, *yv;
} step_bench;

static void setup(step_bench *s, int64_t batch, int64_t seq, bool profile) {
    memset(s, 0, sizeof *s);
    BENCH_FAIL_IF(fedc_model_create(&s->m, "shakespeare_lstm", &(fedc_model_options){.sequence_length = (int)seq}));
    s->n = fedc_model_num_params(s->m);
    BENCH_FAIL_IF(fedc_program_create(&s->p));
    fedc_value *w = calloc((size_t)s->n, sizeof *w);
    s->wrt = calloc((size_t)s->n, sizeof *s->wrt);
    s->grad_names = calloc((size_t)s->n, sizeof *s->grad_names);
    for (int i = 0; i < s->n; i++) {
        s->wrt[i] = fedc_model_param_name(s->m, i);
        snprintf(s->grad_names[i], sizeof s->grad_names[i], "grad_%s", s->wrt[i]);
        w[i] = fedc_input(s->p, s->wrt[i], fedc_model_param_type(s->m, i));
    }
    fedc_value x = fedc_input(s->p, "x", fedc_model_input_type(s->m, batch));
    fedc_value y = fedc_input(s->p, "y", fedc_model_label_type(s->m, batch));
    fedc_value mask = fedc_input(s->p, "mask", fedc_type_make(FEDC_F32, 1, &batch));
    fedc_model_outputs out;
    BENCH_FAIL_IF(fedc_model_apply(s->m, s->p, w, x, y, mask, FEDC_NONE, &out));
    BENCH_FAIL_IF(fedc_program_output(s->p, "loss", out.loss));
    BENCH_FAIL_IF(fedc_grad(s->p, "loss", s->wrt, s->n, &s->g));
    free(w);

    int64_t size = fedc_model_size(s->m), tokens = batch * seq;
    s->params = malloc((size_t)size * sizeof *s->params);
    s->maskv = malloc((size_t)batch * sizeof *s->maskv);
    s->xv = malloc((size_t)tokens * sizeof *s->xv);
    s->yv = malloc((size_t)tokens * sizeof *s->yv);
    BENCH_FAIL_IF(fedc_model_init(s->m, 1, s->params));
    for (int64_t i = 0; i < tokens; i++) s->xv[i] = (int32_t)(1 + (i * 7919) % 89), s->yv[i] = (int32_t)(1 + (i * 104729) % 89);
    for (int64_t i = 0; i < batch; i++) s->maskv[i] = 1;
    fedc_exec_options eo = {.profile = profile};
    BENCH_FAIL_IF(fedc_executor_create(&s->ex, s->g, &eo));
    for (int i = 0; i < s->n; i++)
        BENCH_FAIL_IF(fedc_executor_bind(s->ex, s->wrt[i], s->params + fedc_model_param_offset(s->m, i)));
    BENCH_FAIL_IF(fedc_executor_bind(s->ex, "x", s->xv) || fedc_executor_bind(s->ex, "y", s->yv) ||
                  fedc_executor_bind(s->ex, "mask", s->maskv));
}

static void teardown(step_bench *s) {
    fedc_executor_destroy(s->ex);
    fedc_program_destroy(s->g), fedc_program_destroy(s->p), fedc_model_destroy(s->m);
    free(s->params), free(s->maskv), free(s->xv), free(s->yv), free(s->wrt), free(s->grad_names);
}

static double cpu_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* One step: forward and gradient, then SGD (lr 0.01) on every parameter; adds the
 * step's CPU time to *cpu. */
static double one_step(step_bench *s, double *cpu) {
    double t0 = bench_now(), c0 = cpu_now();
    BENCH_FAIL_IF(fedc_executor_run(s->ex));
    for (int i = 0; i < s->n; i++) {
        const float *gr;
        BENCH_FAIL_IF(fedc_executor_output(s->ex, s->grad_names[i], (const void **)&gr, NULL));
        float *at = s->params + fedc_model_param_offset(s->m, i);
        int64_t k = fedc_model_param_size(s->m, i);
        for (int64_t j = 0; j < k; j++) at[j] -= 0.01f * gr[j];
    }
    *cpu = cpu_now() - c0;
    return bench_now() - t0;
}

/* The median step time (ms) of `steps` steps after the warm-up, and their median
 * CPU time in *cpu_ms (which a loaded machine distorts less than wall time). */
static double fedc_set_ms(step_bench *s, int steps, double *cpu_ms) {
    double t[512], c[512];
    if (steps > 512) steps = 512;
    for (int k = 0; k < WARMUP; k++) one_step(s, &c[0]);
    for (int k = 0; k < steps; k++) t[k] = one_step(s, &c[k]);
    *cpu_ms = bench_median(c, steps) * 1e3;
    return bench_median(t, steps) * 1e3;
}

/* The peer's median step time (ms), or -1 when PyTorch is not there; its median
 * CPU time per step in *cpu_ms. */
static double torch_set_ms(int64_t batch, int64_t seq, int steps, int threads, double *cpu_ms) {
    char cmd[512], line[512];
    snprintf(cmd, sizeof cmd, "/usr/bin/python3 bench/peers/lstm_step_torch.py --batch %lld --seq %lld --steps %d "
             "--warmup %d --threads %d 2>/dev/null", (long long)batch, (long long)seq, steps, WARMUP, threads);
    FILE *f = popen(cmd, "r");
    double ms = -1;
    while (f && fgets(line, sizeof line, f)) {
        const char *at = strstr(line, "step_ms="), *cpu = strstr(line, "cpu_ms=");
        if (at) ms = atof(at + 8);
        if (cpu) *cpu_ms = atof(cpu + 7);
    }
    if (f) pclose(f);
    return ms;
}

static double median_or(double *v, int n) { return n ? bench_median(v, n) : -1; }

static void run_batch(int64_t batch, int64_t seq, int steps, int sets, bool peer, bool profile) {
    step_bench s;
    setup(&s, batch, seq, profile);
    double fedc_ms[MAX_SETS], fedc_cpu[MAX_SETS], torch_ms[2][MAX_SETS], torch_cpu[2][MAX_SETS];
    int ntorch[2] = {0, 0};
    printf("shakespeare_lstm step: batch %lld, sequence %lld, %lld parameters; %d sets of %d steps after %d warm-up\n",
           (long long)batch, (long long)seq, (long long)fedc_model_size(s.m), sets, steps, WARMUP);
    for (int r = 0; r < sets; r++) {
        fedc_ms[r] = fedc_set_ms(&s, steps, &fedc_cpu[r]);
        printf("  set %d: fedc 1 thread %.2f ms (cpu %.2f)", r + 1, fedc_ms[r], fedc_cpu[r]);
        for (int th = 1; peer && th <= 2; th++) {
            double cpu = -1, ms = torch_set_ms(batch, seq, steps, th, &cpu);
            if (ms > 0) torch_ms[th - 1][ntorch[th - 1]] = ms, torch_cpu[th - 1][ntorch[th - 1]++] = cpu;
            printf(", torch %d thread%s %.2f ms (cpu %.2f)", th, th > 1 ? "s" : "", ms, cpu);
        }
        printf("\n");
        fflush(stdout);
    }
    double f = bench_median(fedc_ms, sets), fc = bench_median(fedc_cpu, sets);
    double t1 = median_or(torch_ms[0], ntorch[0]), t2 = median_or(torch_ms[1], ntorch[1]);
    double c1 = median_or(torch_cpu[0], ntorch[0]), c2 = median_or(torch_cpu[1], ntorch[1]);
    double best = t1 > 0 && (t2 <= 0 || t1 <= t2) ? t1 : t2;
    int best_threads = best == t1 ? 1 : 2;
    printf("fedc  %.2f ms/step (1 thread, median of sets; cpu %.2f ms)\n", f, fc);
    if (best > 0)
        printf("torch %.2f ms/step (1 thread %.2f, cpu %.2f; 2 threads %.2f, cpu %.2f; best %d)\n"
               "ratio torch / fedc = %.2f (target >= 1.5: %s); 1-thread cpu time ratio %.2f\n",
               best, t1, c1, t2, c2, best_threads, best / f, best / f >= 1.5 ? "met" : "NOT met", c1 > 0 ? c1 / fc : -1.0);
    else if (peer)
        printf("torch: not available (/usr/bin/python3 with torch)\n");
    bench_json("lstm_step", "\"batch\": %lld, \"seq\": %lld, \"fedc_ms\": %.4f, \"fedc_cpu_ms\": %.4f, "
               "\"torch_ms_1\": %.4f, \"torch_cpu_ms_1\": %.4f, \"torch_ms_2\": %.4f, \"torch_cpu_ms_2\": %.4f, "
               "\"ratio\": %.4f", (long long)batch, (long long)seq, f, fc, t1, c1, t2, c2, best > 0 ? best / f : -1.0);
    if (profile) fedc_executor_profile(s.ex, stdout);
    teardown(&s);
}

int main(int argc, char **argv) {
    int64_t batches[8], seq = 80;
    int nb = 0, steps = 20, sets = 3;
    bool peer = true;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--seq") && i + 1 < argc) seq = atoll(argv[++i]);
        else if (!strcmp(argv[i], "--steps") && i + 1 < argc) steps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--sets") && i + 1 < argc) sets = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--no-peer")) peer = false;
        else if (nb < 8 && atoll(argv[i]) > 0) batches[nb++] = atoll(argv[i]);
        else {
            fprintf(stderr, "usage: bench_lstm_step [batch ...] [--seq T] [--steps N] [--sets S] [--no-peer]\n");
            return 2;
        }
    }
    if (nb == 0) batches[nb++] = 4, batches[nb++] = 32;
    if (steps < 1) steps = 1;
    if (sets < 1) sets = 1;
    if (sets > MAX_SETS) sets = MAX_SETS;
    fedc_kernels_init();
    for (int i = 0; i < nb; i++) run_batch(batches[i], seq, steps, sets, peer, getenv("FEDC_PROFILE") != NULL);
    return 0;
}
