/*
 * bench_export.c — what exporting to MLIR costs, and what the exported module
 * runs at (a figure, not a target; issue 16):
 *  1. export time against program size: the gradient programs of tanh MLPs of 2
 *     to 128 layers, fedc_program_to_mlir timed (median of 7), microseconds per
 *     operation printed so that linearity shows;
 *  2. a FedAvg round of the EMNIST CNN (2 clients, 2 batches of 2, dropout on):
 *     fedc's executor (median of 5 runs after a warm-up) against the same round
 *     exported with @main, lowered by mlir-opt-19 (docs/export.md's pipeline) and
 *     run by mlir-cpu-runner-19, whose time includes its JIT compilation and the
 *     printing of every output (the runner has no way to time the run alone).
 *
 *     ./build/bench_export            (needs mlir-19-tools and libmlir-19 for part 2)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/bench.h"

static fedc_program *mlp_gradient(int layers) {
    fedc_program *p;
    BENCH_FAIL_IF(fedc_program_create(&p));
    fedc_value h = fedc_input(p, "x", fedc_type_make(FEDC_F32, 2, (int64_t[]){8, 16}));
    const char *wrt[128];
    char names[128][16];
    for (int i = 0; i < layers; i++) {
        snprintf(names[i], sizeof names[i], "w%d", i);
        wrt[i] = names[i];
        fedc_value w = fedc_input(p, names[i], fedc_type_make(FEDC_F32, 2, (int64_t[]){16, 16}));
        h = fedc_tanh(p, fedc_matmul(p, h, w, false, false));
    }
    fedc_program_output(p, "loss", fedc_reduce_mean(p, fedc_square(p, h), NULL, -1, false));
    fedc_program *g = NULL;
    BENCH_FAIL_IF(fedc_grad(p, "loss", wrt, layers, &g));
    fedc_program_destroy(p);
    return g;
}

static void export_time_against_size(void) {
    printf("export time against program size (gradient programs of tanh MLPs):\n");
    printf("  layers  operations   MLIR KiB   ms (median of 7)   us per operation\n");
    for (int layers = 2; layers <= 128; layers *= 4) {
        fedc_program *g = mlp_gradient(layers);
        double t[7];
        size_t bytes = 0;
        for (int k = 0; k < 7; k++) {
            char *text = NULL;
            double t0 = bench_now();
            BENCH_FAIL_IF(fedc_program_to_mlir(g, NULL, &text));
            t[k] = bench_now() - t0;
            bytes = strlen(text);
            fedc_free(text);
        }
        int ops = fedc_program_size(g);
        double ms = 1e3 * bench_median(t, 7);
        printf("  %6d  %10d  %9.1f  %17.3f  %17.2f\n", layers, ops, bytes / 1024.0, ms, 1e3 * ms / ops);
        bench_json("export_size", "\"layers\": %d, \"operations\": %d, \"bytes\": %zu, \"ms\": %.4f", layers, ops, bytes,
                   ms);
        fedc_program_destroy(g);
    }
}

/* ------------------------------------------------------------ the round -- */

typedef struct round_inputs {
    int n;
    const char **names;
    void **data;
} round_inputs;

static void fill(const fedc_program *p, int clients, round_inputs *in) {
    in->n = fedc_program_num_inputs(p);
    in->names = calloc((size_t)in->n, sizeof *in->names);
    in->data = calloc((size_t)in->n, sizeof *in->data);
    uint64_t state = 12345;
    for (int i = 0; i < in->n; i++) {
        fedc_type t = fedc_value_type(p, fedc_program_input(p, i));
        int64_t count = fedc_type_count(&t) * (t.placement == FEDC_CLIENTS ? clients : 1);
        float *d = malloc((size_t)(count ? count : 1) * 4);
        for (int64_t k = 0; k < count; k++) {
            state ^= state << 13, state ^= state >> 7, state ^= state << 17;
            if (t.dtype == FEDC_I32) ((int32_t *)d)[k] = (int32_t)((7 * k + 3) % 3); /* labels, steps: < 3 */
            else d[k] = (float)((double)(state >> 11) / 9007199254740992.0 * 0.2 - 0.1);
        }
        in->names[i] = fedc_program_input_name(p, i);
        in->data[i] = d;
    }
}

static double run_command(const char *cmd) {
    double t0 = bench_now();
    int rc = system(cmd);
    double t = bench_now() - t0;
    if (rc != 0) {
        fprintf(stderr, "bench_export: failed: %s\n", cmd);
        exit(1);
    }
    return t;
}

static void cnn_round(void) {
    if (system("mlir-opt-19 --version >/dev/null 2>&1 && mlir-cpu-runner-19 --version >/dev/null 2>&1") != 0) {
        printf("the CNN round: skipped (mlir-opt-19 / mlir-cpu-runner-19 not installed)\n");
        return;
    }
    fedc_model *m;
    BENCH_FAIL_IF(fedc_model_create(&m, "cnn", NULL));
    fedc_algorithm a = {.def = &fedc_algorithm_fedavg, .client_opt = fedc_optimizer_defaults(FEDC_OPT_SGD, 0.1),
                        .server_opt = fedc_optimizer_defaults(FEDC_OPT_SGD, 1.0), .batch_size = 2, .max_steps = 2,
                        .dropout = true};
    fedc_program *round = NULL;
    BENCH_FAIL_IF(fedc_algorithm_round(m, &a, &round));
    const int clients = 2;
    round_inputs in;
    fill(round, clients, &in);
    /* fedc */
    fedc_executor *ex = NULL;
    fedc_exec_options o = {.clients = clients, .threads = 1};
    BENCH_FAIL_IF(fedc_executor_create(&ex, round, &o));
    for (int i = 0; i < in.n; i++) BENCH_FAIL_IF(fedc_executor_bind(ex, in.names[i], in.data[i]));
    BENCH_FAIL_IF(fedc_executor_run(ex));
    double t[5];
    for (int k = 0; k < 5; k++) {
        double t0 = bench_now();
        BENCH_FAIL_IF(fedc_executor_run(ex));
        t[k] = bench_now() - t0;
    }
    double fedc_ms = 1e3 * bench_median(t, 5);
    fedc_executor_destroy(ex);
    /* MLIR */
    fedc_mlir_options mo = {.clients = clients, .entry_main = true, .ninputs = in.n, .input_names = in.names,
                            .input_data = (const void *const *)in.data};
    char *text = NULL;
    double t0 = bench_now();
    BENCH_FAIL_IF(fedc_program_to_mlir(round, &mo, &text));
    double export_s = bench_now() - t0;
    const char *module = "/tmp/fedc-bench-export-round.mlir", *lowered = "/tmp/fedc-bench-export-lowered.mlir";
    FILE *f = fopen(module, "w");
    BENCH_FAIL_IF(!f);
    fputs(text, f);
    fclose(f);
    char cmd[2048];
    snprintf(cmd, sizeof cmd,
             "mlir-opt-19 %s --one-shot-bufferize='bufferize-function-boundaries allow-return-allocs-from-loops' "
             "--convert-linalg-to-loops --expand-strided-metadata --lower-affine --convert-scf-to-cf "
             "--convert-math-to-llvm --convert-math-to-libm --convert-arith-to-llvm --finalize-memref-to-llvm "
             "--convert-func-to-llvm --convert-cf-to-llvm --reconcile-unrealized-casts -o %s", module, lowered);
    double lower_s = run_command(cmd);
    snprintf(cmd, sizeof cmd,
             "mlir-cpu-runner-19 %s -e main -entry-point-result=void -O3 -shared-libs=/usr/lib/llvm-19/lib/"
             "libmlir_runner_utils.so.19.1,/usr/lib/llvm-19/lib/libmlir_c_runner_utils.so.19.1 >/dev/null", lowered);
    double r[3];
    for (int k = 0; k < 3; k++) r[k] = run_command(cmd);
    double runner_s = bench_median(r, 3);
    printf("the EMNIST CNN's FedAvg round (2 clients, 2 batches of 2, %d operations, %lld parameters):\n",
           fedc_program_size(round), (long long)fedc_model_size(m));
    printf("  fedc executor, 1 thread:                %10.2f ms per round (median of 5)\n", fedc_ms);
    printf("  export to MLIR:                         %10.2f ms (%.1f MiB of text, inputs included)\n", 1e3 * export_s,
           strlen(text) / 1048576.0);
    printf("  mlir-opt-19 lowering:                   %10.2f s\n", lower_s);
    printf("  mlir-cpu-runner-19 -O3 (JIT + run + print every output): %.2f s (median of 3)\n", runner_s);
    bench_json("export_cnn_round", "\"fedc_ms\": %.3f, \"export_ms\": %.2f, \"mlir_opt_s\": %.3f, \"runner_s\": %.3f",
               fedc_ms, 1e3 * export_s, lower_s, runner_s);
    remove(module), remove(lowered);
    fedc_free(text);
    for (int i = 0; i < in.n; i++) free(in.data[i]);
    free(in.data), free(in.names);
    fedc_program_destroy(round);
    fedc_model_destroy(m);
}

int main(void) {
    export_time_against_size();
    cnn_round();
    return 0;
}
