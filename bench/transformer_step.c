/*
 * bench_transformer_step.c — one training step of the transformer language model
 * (forward, gradient by fedc_grad, SGD update of every parameter) against the same
 * model and step in PyTorch (bench/transformer_step_torch.py, the better of 1 and
 * 2 threads), runs alternated: fedc, torch 1 thread, torch 2 threads, repeated.
 * fedc runs at 1 and at 2 threads (a program without clients gives its threads to
 * the kernels: GEMMs and the loss cut into blocks by shape, the same bits), the
 * better taken, like PyTorch's. Prints the step times, the ratio, the FLOPs per
 * step counted analytically, fedc's model-FLOPs utilisation against this
 * machine's measured single-thread sgemm peak (times the threads used), and both
 * sides' best CPU time per step at 1 thread (which a loaded machine distorts less). The peer
 * is given the OpenBLAS kernels fedc chose (bench_share_blas_core).
 *
 *     ./build/bench_transformer_step [--no-peer] [layers width heads context vocab batch] [rounds] [steps]
 *     (default 6 256 4 128 10004 8, 2 rounds of 5 steps each; --no-peer: fedc alone, for A/B pairs of builds)
 *     FEDC_PROFILE=1 also prints fedc's time per op kind.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/bench.h"
#include "kernels/kernels.h"

typedef struct shape {
    int64_t layers, width, heads, context, vocab, batch;
} shape;

/* The peer's best step time (ms), or -1; its best CPU time per step in *cpu_ms. */
static double torch_step_ms(const shape *s, int threads, double *cpu_ms) {
    char cmd[512], line[256];
    snprintf(cmd, sizeof cmd, "/usr/bin/python3 bench/transformer_step_torch.py --layers %lld --width %lld --heads %lld "
             "--context %lld --vocab %lld --batch %lld --threads %d", (long long)s->layers, (long long)s->width,
             (long long)s->heads, (long long)s->context, (long long)s->vocab, (long long)s->batch, threads);
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

int main(int argc, char **argv) {
    int peer = !(argc > 1 && !strcmp(argv[1], "--no-peer"));
    if (!peer) argc--, argv++;
    shape s = {6, 256, 4, 128, 10004, 8};
    int64_t *fields[] = {&s.layers, &s.width, &s.heads, &s.context, &s.vocab, &s.batch};
    for (int i = 0; i < 6 && i + 1 < argc; i++) *fields[i] = atoll(argv[i + 1]);
    int rounds = argc > 7 ? atoi(argv[7]) : 2, steps = argc > 8 ? atoi(argv[8]) : 5;
    printf("BLAS kernels: OpenBLAS %s, for fedc and the peer\n", bench_share_blas_core());

    fedc_model_options o = {.layers = (int)s.layers, .width = (int)s.width, .heads = (int)s.heads,
                            .context = (int)s.context, .num_classes = (int)s.vocab};
    fedc_model *m;
    BENCH_FAIL_IF(fedc_model_create(&m, "transformer", &o));
    int n = fedc_model_num_params(m);
    fedc_program *p, *g;
    BENCH_FAIL_IF(fedc_program_create(&p));
    fedc_value *w = calloc((size_t)n, sizeof *w);
    const char **wrt = calloc((size_t)n, sizeof *wrt);
    for (int i = 0; i < n; i++) {
        wrt[i] = fedc_model_param_name(m, i);
        w[i] = fedc_input(p, wrt[i], fedc_model_param_type(m, i));
    }
    fedc_value x = fedc_input(p, "x", fedc_model_input_type(m, s.batch));
    fedc_value y = fedc_input(p, "y", fedc_model_label_type(m, s.batch));
    fedc_value mask = fedc_input(p, "mask", fedc_type_make(FEDC_F32, 1, &s.batch));
    fedc_model_outputs out;
    BENCH_FAIL_IF(fedc_model_apply(m, p, w, x, y, mask, FEDC_NONE, &out));
    BENCH_FAIL_IF(fedc_program_output(p, "loss", out.loss));
    BENCH_FAIL_IF(fedc_grad(p, "loss", wrt, n, &g));

    int64_t size = fedc_model_size(m), tokens = s.batch * s.context;
    float *params = malloc((size_t)size * sizeof *params), *maskv = malloc((size_t)s.batch * sizeof *maskv);
    int32_t *xv = malloc((size_t)tokens * sizeof *xv), *yv = malloc((size_t)tokens * sizeof *yv);
    BENCH_FAIL_IF(fedc_model_init(m, 1, params));
    for (int64_t i = 0; i < tokens; i++) xv[i] = (int32_t)(1 + (i * 7919) % (s.vocab - 1)), yv[i] = (int32_t)(1 + (i * 104729) % (s.vocab - 1));
    for (int64_t i = 0; i < s.batch; i++) maskv[i] = 1;
    fedc_executor *exs[2];
    for (int t = 0; t < 2; t++) {
        /* time per op kind, printed at the end */
        fedc_exec_options eo = {.threads = t + 1, .profile = getenv("FEDC_PROFILE") != NULL};
        fedc_executor *ex;
        BENCH_FAIL_IF(fedc_executor_create(&ex, g, &eo));
        for (int i = 0; i < n; i++) BENCH_FAIL_IF(fedc_executor_bind(ex, wrt[i], params + fedc_model_param_offset(m, i)));
        BENCH_FAIL_IF(fedc_executor_bind(ex, "x", xv) || fedc_executor_bind(ex, "y", yv) || fedc_executor_bind(ex, "mask", maskv));
        exs[t] = ex;
    }

    double flops = bench_transformer_flops(s.layers, s.width, s.context, s.vocab, s.batch), peak = fedc__kernels_sgemm_gflops(1024, 3);
    printf("transformer step: %lld layers, width %lld, %lld heads, context %lld, vocab %lld, batch %lld; %lld parameters\n",
           (long long)s.layers, (long long)s.width, (long long)s.heads, (long long)s.context, (long long)s.vocab,
           (long long)s.batch, (long long)size);
    printf("FLOPs per step (3 x tokens x (2 x (12 L C^2 + C V) + 2 L C (T+1))) = %.3f GFLOP\n", flops * 1e-9);
    double best_fedc = 1e30, best_torch = 1e30, fedc_at[2] = {1e30, 1e30}, fedc_cpu1 = 1e30, fedc_cpu2 = 1e30, torch_cpu1 = 1e30;
    int best_threads = 1, fedc_threads = 1;
    for (int r = 0; r < rounds; r++) {
        for (int k = 0; k <= 2 * steps + 1; k++) { /* alternating 1 and 2 threads; the first of each a warm-up */
            fedc_executor *ex = exs[k % 2];
            double t0 = bench_now(), c0 = bench_cpu_now();
            BENCH_FAIL_IF(fedc_executor_run(ex));
            for (int i = 0; i < n; i++) { /* SGD, lr 0.01 */
                char name[64];
                const float *gr;
                snprintf(name, sizeof name, "grad_%s", wrt[i]);
                BENCH_FAIL_IF(fedc_executor_output(ex, name, (const void **)&gr, NULL));
                float *at = params + fedc_model_param_offset(m, i);
                int64_t size_i = fedc_model_param_size(m, i); /* not a call per element */
                for (int64_t j = 0; j < size_i; j++) at[j] -= 0.01f * gr[j];
            }
            double t = bench_now() - t0, c = bench_cpu_now() - c0;
            if (k > 1 && t < fedc_at[k % 2]) fedc_at[k % 2] = t;
            if (k > 1 && k % 2 == 0 && c < fedc_cpu1) fedc_cpu1 = c;
            if (k > 1 && k % 2 == 1 && c < fedc_cpu2) fedc_cpu2 = c;
            if (k > 1 && t < best_fedc) best_fedc = t, fedc_threads = k % 2 + 1;
        }
        for (int threads = 1; peer && threads <= 2; threads++) {
            double cpu = -1, ms = torch_step_ms(&s, threads, &cpu);
            if (ms > 0 && ms * 1e-3 < best_torch) best_torch = ms * 1e-3, best_threads = threads;
            if (threads == 1 && cpu > 0 && cpu * 1e-3 < torch_cpu1) torch_cpu1 = cpu * 1e-3;
            printf("  round %d: torch %d thread%s %.1f ms (cpu %.1f)\n", r + 1, threads, threads > 1 ? "s" : "", ms, cpu);
        }
        printf("  round %d: fedc best so far %.1f ms (1 thread), %.1f ms (2 threads)\n", r + 1, fedc_at[0] * 1e3,
               fedc_at[1] * 1e3);
    }
    printf("fedc  %.1f ms/step (best of 1 and 2 threads: %d), %.2f GFLOP/s, MFU %.1f%% of %d x the measured sgemm "
           "peak %.1f GFLOP/s (1 thread)\n", best_fedc * 1e3, fedc_threads, flops / best_fedc * 1e-9,
           100.0 * flops / best_fedc * 1e-9 / (peak * fedc_threads), fedc_threads, peak);
    if (best_torch < 1e30)
        printf("torch %.1f ms/step (best of 1 and 2 threads: %d), %.2f GFLOP/s\nratio torch / fedc = %.2f (target >= 2, issue 20); "
               "1-thread cpu time: fedc %.1f ms, torch %.1f ms, ratio %.2f\n", best_torch * 1e3, best_threads,
               flops / best_torch * 1e-9, best_torch / best_fedc, fedc_cpu1 * 1e3, torch_cpu1 * 1e3, torch_cpu1 / fedc_cpu1);
    else if (peer)
        printf("torch: not available (/usr/bin/python3 with torch)\n");
    printf("fedc best cpu time per step: %.1f ms (1 thread), %.1f ms (2 threads)\n", fedc_cpu1 * 1e3, fedc_cpu2 * 1e3);
    uint64_t bits = 1469598103934665603ull; /* FNV-1a of the trained parameters: builds with the same bits agree */
    for (int64_t i = 0; i < size; i++) {
        uint32_t u;
        memcpy(&u, params + i, sizeof u);
        bits = (bits ^ u) * 1099511628211ull;
    }
    printf("parameters' bits after the steps: %016llx\n", (unsigned long long)bits);
    if (getenv("FEDC_PROFILE")) {
        printf("profile, 1 thread:\n");
        fedc_executor_profile(exs[0], stdout);
        printf("profile, 2 threads:\n");
        fedc_executor_profile(exs[1], stdout);
    }
    fedc_executor_destroy(exs[0]);
    fedc_executor_destroy(exs[1]);
    fedc_program_destroy(g), fedc_program_destroy(p), fedc_model_destroy(m);
    free(params), free(maskv), free(xv), free(yv), free(w), free(wrt);
    return 0;
}
