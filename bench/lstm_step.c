/*
 * bench_lstm_step.c — one SGD training step of FedJAX's Shakespeare LSTM
 * (shakespeare_lstm: Embed(90, 8) -> [LSTM(256), tanh] x 2 -> Linear(90)):
 * forward, gradient by fedc_grad, and the update of every parameter, fedc at 1
 * and at 2 threads (a program without clients lends its threads to the kernels:
 * GEMMs and the recurrence cut into blocks fixed by the shapes, the same bits),
 * against the same model and step in PyTorch (bench/peers/lstm_step_torch.py)
 * at 1 and 2 threads; each side's figure is its better thread count. Runs
 * alternate: fedc 1 thread, fedc 2 threads, torch 1 thread, torch 2 threads, for
 * each of `sets` sets; the figure of each is the median step time of its set
 * (after warm-up steps), and the result is the median over sets. Each also
 * reports its median CPU time per step (the process's): on a loaded machine wall
 * time mostly measures the scheduler, and for 1-thread runs CPU time is the
 * fairer comparison.
 *
 * Both sides run OpenBLAS: the peer is given the kernels (OPENBLAS_CORETYPE)
 * fedc chose, so that a CPU OpenBLAS does not recognise (fast_blas.c) slows
 * neither side; set OPENBLAS_CORETYPE to choose them for both.
 *
 *     ./build/bench_lstm_step [batch ...] [--seq T] [--steps N] [--sets S] [--threads 1|2] [--no-peer]
 *     (default batches 4 and 32, sequence 80, 20 steps, 3 sets, fedc at 1 and 2 threads)
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
    fedc_executor *ex[2]; /* 1 and 2 threads; NULL when not run */
    int n;
    const char **wrt;
    char (*grad_names)[64];
    float *params, *maskv;
    int32_t *xv, *yv;
} step_bench;

static void setup(step_bench *s, int64_t batch, int64_t seq, int only_threads, bool profile) {
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
    for (int t = 0; t < 2; t++) {
        if (only_threads && only_threads != t + 1) continue;
        fedc_exec_options eo = {.threads = t + 1, .profile = profile};
        fedc_executor *ex;
        BENCH_FAIL_IF(fedc_executor_create(&ex, s->g, &eo));
        for (int i = 0; i < s->n; i++)
            BENCH_FAIL_IF(fedc_executor_bind(ex, s->wrt[i], s->params + fedc_model_param_offset(s->m, i)));
        BENCH_FAIL_IF(fedc_executor_bind(ex, "x", s->xv) || fedc_executor_bind(ex, "y", s->yv) ||
                      fedc_executor_bind(ex, "mask", s->maskv));
        s->ex[t] = ex;
    }
}

static void teardown(step_bench *s) {
    fedc_executor_destroy(s->ex[0]), fedc_executor_destroy(s->ex[1]);
    fedc_program_destroy(s->g), fedc_program_destroy(s->p), fedc_model_destroy(s->m);
    free(s->params), free(s->maskv), free(s->xv), free(s->yv), free(s->wrt), free(s->grad_names);
}

/* One step: forward and gradient, then SGD (lr 0.01) on every parameter; adds the
 * step's CPU time to *cpu. */
static double one_step(step_bench *s, fedc_executor *ex, double *cpu) {
    double t0 = bench_now(), c0 = bench_cpu_now();
    BENCH_FAIL_IF(fedc_executor_run(ex));
    for (int i = 0; i < s->n; i++) {
        const float *gr;
        BENCH_FAIL_IF(fedc_executor_output(ex, s->grad_names[i], (const void **)&gr, NULL));
        float *at = s->params + fedc_model_param_offset(s->m, i);
        int64_t k = fedc_model_param_size(s->m, i);
        for (int64_t j = 0; j < k; j++) at[j] -= 0.01f * gr[j];
    }
    *cpu = bench_cpu_now() - c0;
    return bench_now() - t0;
}

/* The median step time (ms) of `steps` steps after the warm-up, and their median
 * CPU time in *cpu_ms (which a loaded machine distorts less than wall time). */
static double fedc_set_ms(step_bench *s, fedc_executor *ex, int steps, double *cpu_ms) {
    double t[512], c[512];
    if (steps > 512) steps = 512;
    for (int k = 0; k < WARMUP; k++) one_step(s, ex, &c[0]);
    for (int k = 0; k < steps; k++) t[k] = one_step(s, ex, &c[k]);
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

/* The better (lower) of two medians, either missing (-1); its index in *which. */
static double better(double a, double b, int *which) {
    *which = a > 0 && (b <= 0 || a <= b) ? 0 : 1;
    return *which ? b : a;
}

static void run_batch(int64_t batch, int64_t seq, int steps, int sets, int only_threads, bool peer, bool profile) {
    step_bench s;
    setup(&s, batch, seq, only_threads, profile);
    double ms[2][2][MAX_SETS], cpu[2][2][MAX_SETS]; /* [fedc, torch][threads - 1][set] */
    int count[2][2] = {{0, 0}, {0, 0}};
    printf("shakespeare_lstm step: batch %lld, sequence %lld, %lld parameters; %d sets of %d steps after %d warm-up\n",
           (long long)batch, (long long)seq, (long long)fedc_model_size(s.m), sets, steps, WARMUP);
    for (int r = 0; r < sets; r++) {
        printf("  set %d:", r + 1);
        for (int th = 1; th <= 2; th++) {
            if (!s.ex[th - 1]) continue;
            int k = count[0][th - 1]++;
            ms[0][th - 1][k] = fedc_set_ms(&s, s.ex[th - 1], steps, &cpu[0][th - 1][k]);
            printf(" fedc %d thread%s %.2f ms (cpu %.2f),", th, th > 1 ? "s" : "", ms[0][th - 1][k], cpu[0][th - 1][k]);
        }
        for (int th = 1; peer && th <= 2; th++) {
            double c = -1, m = torch_set_ms(batch, seq, steps, th, &c);
            if (m > 0) ms[1][th - 1][count[1][th - 1]] = m, cpu[1][th - 1][count[1][th - 1]++] = c;
            printf(" torch %d thread%s %.2f ms (cpu %.2f),", th, th > 1 ? "s" : "", m, c);
        }
        printf("\n");
        fflush(stdout);
    }
    double med[2][2], mcpu[2][2], best[2];
    int best_threads[2];
    for (int side = 0; side < 2; side++) {
        for (int th = 0; th < 2; th++)
            med[side][th] = median_or(ms[side][th], count[side][th]), mcpu[side][th] = median_or(cpu[side][th], count[side][th]);
        best[side] = better(med[side][0], med[side][1], &best_threads[side]);
        best_threads[side]++;
    }
    printf("fedc  %.2f ms/step (1 thread %.2f, cpu %.2f; 2 threads %.2f, cpu %.2f; best %d)\n", best[0], med[0][0],
           mcpu[0][0], med[0][1], mcpu[0][1], best_threads[0]);
    if (best[1] > 0)
        printf("torch %.2f ms/step (1 thread %.2f, cpu %.2f; 2 threads %.2f, cpu %.2f; best %d)\n"
               "ratio torch / fedc = %.2f (target >= 1.5: %s); 1-thread cpu time ratio %.2f\n",
               best[1], med[1][0], mcpu[1][0], med[1][1], mcpu[1][1], best_threads[1], best[1] / best[0],
               best[1] / best[0] >= 1.5 ? "met" : "NOT met", mcpu[1][0] > 0 && mcpu[0][0] > 0 ? mcpu[1][0] / mcpu[0][0] : -1.0);
    else if (peer)
        printf("torch: not available (/usr/bin/python3 with torch)\n");
    bench_json("lstm_step", "\"batch\": %lld, \"seq\": %lld, \"blas_core\": \"%s\", \"fedc_ms\": %.4f, \"fedc_threads\": %d, "
               "\"fedc_ms_1\": %.4f, \"fedc_cpu_ms\": %.4f, \"fedc_ms_2\": %.4f, \"fedc_cpu_ms_2\": %.4f, "
               "\"torch_ms_1\": %.4f, \"torch_cpu_ms_1\": %.4f, \"torch_ms_2\": %.4f, \"torch_cpu_ms_2\": %.4f, "
               "\"ratio\": %.4f", (long long)batch, (long long)seq, fedc__kernels_blas_core(), best[0], best_threads[0],
               med[0][0], mcpu[0][0], med[0][1], mcpu[0][1], med[1][0], mcpu[1][0], med[1][1], mcpu[1][1],
               best[1] > 0 ? best[1] / best[0] : -1.0);
    for (int th = 0; profile && th < 2; th++)
        if (s.ex[th]) printf("profile, %d thread%s:\n", th + 1, th ? "s" : ""), fedc_executor_profile(s.ex[th], stdout);
    teardown(&s);
}

int main(int argc, char **argv) {
    int64_t batches[8], seq = 80;
    int nb = 0, steps = 20, sets = 3, only_threads = 0;
    bool peer = true;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--seq") && i + 1 < argc) seq = atoll(argv[++i]);
        else if (!strcmp(argv[i], "--steps") && i + 1 < argc) steps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--sets") && i + 1 < argc) sets = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--threads") && i + 1 < argc) only_threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--no-peer")) peer = false;
        else if (nb < 8 && atoll(argv[i]) > 0) batches[nb++] = atoll(argv[i]);
        else {
            fprintf(stderr, "usage: bench_lstm_step [batch ...] [--seq T] [--steps N] [--sets S] [--threads 1|2] [--no-peer]\n");
            return 2;
        }
    }
    if (nb == 0) batches[nb++] = 4, batches[nb++] = 32;
    if (steps < 1) steps = 1;
    if (sets < 1) sets = 1;
    if (sets > MAX_SETS) sets = MAX_SETS;
    if (only_threads < 0 || only_threads > 2) only_threads = 0;
    printf("BLAS kernels: OpenBLAS %s, for fedc and the peer\n", bench_share_blas_core());
    for (int i = 0; i < nb; i++)
        run_batch(batches[i], seq, steps, sets, only_threads, peer, getenv("FEDC_PROFILE") != NULL);
    return 0;
}
