/* Sharded export (--shard clients=D): LLVM 19's sharding passes partition the
 * clients axis of a round, a fold in a map, reshapes of clients' values,
 * clients' random draws, padded convolutions, pad, slice and concat, and whole
 * FedAvg rounds of logistic regression and the EMNIST CNN (the server's update
 * included)
 * into per-device code with mesh.all_reduce, which verifies; the crash in LLVM
 * 19's propagation that the export works around is shown on a minimal module.
 * Skips when mlir-19-tools is absent. */
#include <sys/wait.h>

#include "export_cases.h"

/* ------------------------------------------------------------- sharding -- */

/* Runs LLVM 19's sharding passes on `module` (memory and time bounded: their
 * failures can be crashes); returns what they printed (the partitioned module,
 * or their error), *rc their status (a signal: 128 + it), *verified whether the
 * result parses and verifies again. */
static char *partition(const char *module, int *rc, bool *verified) {
    const char *path = fedc_test_tmp("sharded.mlir");
    char out[512], log[512], cmd[2048];
    snprintf(out, sizeof out, "%s", fedc_test_tmp("partitioned.mlir"));
    snprintf(log, sizeof log, "%s", fedc_test_tmp("passes.log"));
    FILE *f = fopen(path, "w");
    *rc = -1, *verified = false;
    if (!f) return NULL;
    fputs(module, f), fclose(f);
    snprintf(cmd, sizeof cmd, "ulimit -v 4000000; timeout 120 mlir-opt-19 %s --pass-pipeline='builtin.module(func.func("
             "sharding-propagation,mesh-spmdization))' -o %s >%s 2>&1", path, out, log);
    int status = system(cmd);
    *rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    if (*rc == 0) {
        snprintf(cmd, sizeof cmd, "mlir-opt-19 %s >/dev/null 2>&1", out);
        *verified = system(cmd) == 0;
    }
    snprintf(cmd, sizeof cmd, *rc == 0 ? "cat %s" : "head -c 4000 %s", *rc == 0 ? out : log);
    int crc;
    return run_command(cmd, &crc);
}

/* Every mesh.all_reduce's result is used (an all-reduce whose users read the
 * local partial sums instead would be a wrong partition); returns their count. */
static int used_all_reduces(const char *text) {
    int n = 0;
    for (const char *at = strstr(text, "%all_reduce"); at; at = strstr(at + 1, "%all_reduce")) {
        char name[64];
        size_t len = strspn(at + 1, "abcdefghijklmnopqrstuvwxyz_0123456789");
        if (len + 2 > sizeof name || strncmp(at + 1 + len, " = mesh.all_reduce", 18)) continue;
        snprintf(name, sizeof name, "%.*s", (int)len + 1, at);
        bool used = false;
        for (const char *u = strstr(at + len + 1, name); u && !used; u = strstr(u + 1, name))
            used = !strchr("abcdefghijklmnopqrstuvwxyz_0123456789", u[len + 1]) || !u[len + 1];
        CHECK_MSG(used, "%s is never used", name);
        n++;
    }
    return n;
}

/* Exports p sharded over 2 devices of 4 clients, partitions it, and checks the
 * result: it verifies, holds mesh.all_reduce, every one of them used, and each
 * device holds 2 clients (the type `local`). */
static void check_partitions(const char *what, fedc_program *p, const char *local) {
    char *text = NULL;
    fedc_mlir_options o = {.clients = 4, .shard_clients = 2};
    CHECK_OK(fedc_program_to_mlir(p, &o, &text));
    CHECK_MSG(text && strstr(text, "mesh.mesh @clients_mesh(shape = 2)") && strstr(text, "mesh.shard"), "%s", what);
    /* what LLVM 19's sharding propagation has no interface for never appears */
    CHECK_MSG(text && !strstr(text, "arith.constant dense") && !strstr(text, "scf.for") && !strstr(text, "tensor.reshape"),
              "%s: the sharded module holds a constant, an scf.for or a tensor.reshape", what);
    int rc = -1;
    bool verified = false;
    char *partitioned = text ? partition(text, &rc, &verified) : NULL;
    CHECK_MSG(rc == 0 && verified && partitioned && strstr(partitioned, "mesh.all_reduce"),
              "%s: the partitioned module lacks mesh.all_reduce or does not verify (rc %d):\n%.3000s", what, rc,
              partitioned ? partitioned : "");
    CHECK_MSG(partitioned && strstr(partitioned, local), "%s: no device holds %s", what, local);
    CHECK_MSG(!partitioned || used_all_reduces(partitioned) > 0, "%s: no used all-reduce", what);
    free(partitioned);
    fedc_free(text);
}

/* A round (broadcast, a map of a body with a matmul, a weighted mean) exported
 * with its clients axis split over 2 devices: after LLVM 19's sharding passes the
 * module holds the all-reduce that the mean over clients becomes, and verifies. */
static void test_sharded_round(void) {
    if (!tools_present()) return fedc_test_skip("mlir-opt-19 not installed (mlir-19-tools)");
    if (!fedc_test_tmpdir("export-shard")) return;
    fedc_program *p = m_map();
    check_partitions("map round", p, "tensor<2x4x3xf32>");
    fedc_program_destroy(p);
    char *text = NULL;
    fedc_mlir_options o = {.clients = 4, .shard_clients = 3};
    p = m_map();
    CHECK_ERR(fedc_program_to_mlir(p, &o, &text), FEDC_EINVAL, "dividing the cohort's 4 clients");
    o = (fedc_mlir_options){.clients = 4, .shard_clients = 2, .entry_main = true};
    CHECK_ERR(fedc_program_to_mlir(p, &o, &text), FEDC_EUNSUPPORTED, "a sharded module has no @main");
    fedc_program_destroy(p);
    fedc_test_tmpdir_remove();
}

/* Local training in a round: a map whose body folds over each client's own
 * number of steps, its stacked outputs and the carries' mean the results (and a
 * loss of the mean). Sharded, the fold is its steps written out (no scf.for,
 * which LLVM 19 cannot shard). */
static void test_sharded_fold(void) {
    if (!tools_present()) return fedc_test_skip("mlir-opt-19 not installed (mlir-19-tools)");
    if (!fedc_test_tmpdir("export-shard-fold")) return;
    fedc_program *p = fold_round_of(false);
    check_partitions("fold in a map", p, "tensor<2x4x2xf32>");
    fedc_program_destroy(p);
    p = fold_round_of(true); /* then server math on the mean: a loss, rank 0 */
    check_partitions("fold in a map, then a loss", p, "tensor<2x4x2xf32>");
    fedc_program_destroy(p);
    fedc_test_tmpdir_remove();
}

/* A reshape of each client's value, then a sum over clients. Sharded, a reshape
 * is a linalg.generic (LLVM 19 shards no tensor.reshape, collapse_shape or
 * expand_shape). */
static void test_sharded_reshape(void) {
    if (!tools_present()) return fedc_test_skip("mlir-opt-19 not installed (mlir-19-tools)");
    if (!fedc_test_tmpdir("export-shard-reshape")) return;
    fedc_value x[1];
    fedc_program *p = start(x, 1, (fedc_type[]){placed(T(2, 3), FEDC_CLIENTS)});
    fedc_value r = fedc_reshape(p, x[0], 3, (int64_t[]){3, 1, 2});
    fedc_program_output(p, "y", fedc_sum(p, fedc_mul(p, r, fedc_reshape(p, r, 2, (int64_t[]){3, 2}))));
    check_partitions("reshape", p, "tensor<2x2x3xf32>");
    fedc_program_destroy(p);
    fedc_test_tmpdir_remove();
}

/* Draws at the clients, from each client's key in a map's body (as stochastic
 * rounding draws) and outside it, then a sum: each device draws its own
 * clients' bits. LLVM 19's propagation takes no generic that reads a key word
 * at a constant position, so a sharded module reads each word through a
 * reduction over the key. */
static void test_sharded_random(void) {
    if (!tools_present()) return fedc_test_skip("mlir-opt-19 not installed (mlir-19-tools)");
    if (!fedc_test_tmpdir("export-shard-random")) return;
    fedc_program *body = NULL;
    CHECK_OK(fedc_program_create(&body));
    fedc_value k = fedc_input(body, "key", fedc_type_make(FEDC_I32, 1, (int64_t[]){4}));
    fedc_program_output(body, "n", fedc_random_normal(body, k, T(2, 3)));
    fedc_value x[1], r[1];
    fedc_type key = placed(fedc_type_make(FEDC_I32, 1, (int64_t[]){4}), FEDC_CLIENTS);
    fedc_program *p = start(x, 1, &key);
    CHECK_OK(fedc_map(p, body, x, 1, r));
    fedc_program_destroy(body);
    fedc_program_output(p, "y", fedc_sum(p, fedc_add(p, r[0], fedc_random_uniform(p, x[0], T(2, 3)))));
    check_partitions("random draws", p, "tensor<2x2x3xf32>");
    fedc_program_destroy(p);
    fedc_test_tmpdir_remove();
}

/* LLVM 19's sharding propagation crashes (SIGSEGV: it builds a sharding
 * attribute that dangles) on a reduction over the split clients axis followed by
 * two elementwise linalg.generic ops whose results it must infer. This minimal
 * module documents it; fedc's sharded export never leaves propagation that
 * inference: every server value a node computes is annotated whole on every
 * device (`mesh.shard %v to <@m, [[]]> annotate_for_users`), as WORKAROUND
 * below is, and the FedAvg round partitions. */
#define CRASH_HEAD                                                                                                    \
    "module {\n  mesh.mesh @m(shape = 2)\n"                                                                            \
    "  func.func @f(%x: tensor<4x3xf32>, %z: tensor<3xf32>) -> tensor<3xf32> {\n"                                     \
    "    %a = mesh.shard %x to <@m, [[0]]> : tensor<4x3xf32>\n"                                                       \
    "    %b = mesh.shard %a to <@m, [[0]]> annotate_for_users : tensor<4x3xf32>\n"                                    \
    "    %s = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (j)>], iterator_types = " \
    "[\"reduction\", \"parallel\"]} ins(%b : tensor<4x3xf32>) outs(%z : tensor<3xf32>) {\n"                              \
    "    ^bb0(%in: f32, %out: f32):\n      %r = arith.addf %in, %out : f32\n      linalg.yield %r : f32\n"              \
    "    } -> tensor<3xf32>\n"
#define CRASH_SQUARE(y, x)                                                                                            \
    "    " y " = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = "   \
    "[\"parallel\"]} ins(" x " : tensor<3xf32>) outs(%z : tensor<3xf32>) {\n"                                          \
    "    ^bb0(%in: f32, %out: f32):\n      %r = arith.mulf %in, %in : f32\n      linalg.yield %r : f32\n"               \
    "    } -> tensor<3xf32>\n"
#define CRASH_TAIL(v) "    %w = mesh.shard " v " to <@m, [[]]> : tensor<3xf32>\n    return %w : tensor<3xf32>\n  }\n}\n"
#define WHOLE(y, x) "    " y " = mesh.shard " x " to <@m, [[]]> annotate_for_users : tensor<3xf32>\n"
static const char *const LLVM19_CRASH = CRASH_HEAD CRASH_SQUARE("%u", "%s") CRASH_SQUARE("%v", "%u") CRASH_TAIL("%v");
static const char *const WORKAROUND = CRASH_HEAD WHOLE("%s1", "%s") CRASH_SQUARE("%u0", "%s1") WHOLE("%u", "%u0")
    CRASH_SQUARE("%v0", "%u") WHOLE("%v", "%v0") CRASH_TAIL("%v");

static void test_llvm19_crash(void) {
    if (!tools_present()) return fedc_test_skip("mlir-opt-19 not installed (mlir-19-tools)");
    if (!fedc_test_tmpdir("export-shard-crash")) return;
    int rc = -1;
    bool verified = false;
    free(partition(LLVM19_CRASH, &rc, &verified));
    if (rc != 0)
        fprintf(stderr, "    note: LLVM's sharding propagation still crashes (status %d) on a reduction over the split "
                "clients axis followed by two elementwise ops (docs/export.md)\n", rc);
    char *said = partition(WORKAROUND, &rc, &verified);
    CHECK_MSG(rc == 0 && verified && said && strstr(said, "mesh.all_reduce"), "the annotated module does not partition "
              "(rc %d):\n%.2000s", rc, said ? said : "");
    CHECK(said && used_all_reduces(said) == 1);
    free(said);
    fedc_test_tmpdir_remove();
}

/* A whole FedAvg round of logistic regression (local SGD over 2 batches, the
 * server's update after the means) partitions: each device holds 2 of the 4
 * clients' batches, and each of the 7 aggregations (the weighted means of the
 * two deltas and of the loss, a numerator and a weights' sum each, and the
 * examples' sum) becomes one all-reduce that is used. LLVM 19 cannot run it:
 * mesh.all_reduce has no bufferization or lowering to LLVM (a later LLVM's
 * mesh-to-MPI conversion would be needed), which the test checks. */
static void test_sharded_fedavg_round(void) {
    if (!tools_present()) return fedc_test_skip("mlir-opt-19 not installed (mlir-19-tools)");
    if (!fedc_test_tmpdir("export-shard-fedavg")) return;
    fedc_model_options mo = {.input_dim = 6, .num_classes = 3};
    fedc_program *p = model_round("logistic", &mo, FEDC_OPT_SGD, 2, 2);
    char *text = NULL;
    fedc_mlir_options o = {.clients = 4, .shard_clients = 2};
    CHECK_OK(fedc_program_to_mlir(p, &o, &text));
    check_partitions("FedAvg round", p, "tensor<2x2x2x6xf32>");
    int rc = -1;
    bool verified = false;
    char *said = text ? partition(text, &rc, &verified) : NULL;
    CHECK_MSG(said && used_all_reduces(said) == 7, "the FedAvg round's 7 aggregations are not 7 used all-reduces");
    if (said) { /* lowering it as docs/export.md lowers a module to run */
        FILE *f = fopen(fedc_test_tmp("spmd.mlir"), "w");
        if (f) fputs(said, f), fclose(f);
        char cmd[1024];
        snprintf(cmd, sizeof cmd, "mlir-opt-19 %s %s -o /dev/null 2>&1", fedc_test_tmp("spmd.mlir"), lowering_pipeline());
        int lrc;
        char *lowered = run_command(cmd, &lrc);
        CHECK_MSG(lrc == 0 || (lowered && strstr(lowered, "mesh.all_reduce") && strstr(lowered, "not bufferized")),
                  "lowering the partitioned round: %.1000s", lowered ? lowered : "");
        if (lrc == 0) fprintf(stderr, "    note: this LLVM lowers mesh.all_reduce; running needs one process per device\n");
        free(lowered);
    }
    free(said);
    fedc_free(text);
    fedc_program_destroy(p);
    fedc_test_tmpdir_remove();
}

/* FedJAX's EMNIST CNN round (2 clients of 2 batches of 2, on 2 devices)
 * partitions: each device holds 1 client's batches, and each of the 19
 * aggregations (the weighted means of the 8 parameters' deltas and of the loss,
 * a numerator and a weights' sum each, and the examples' sum) is one used
 * all-reduce. Sharded, the convolutions and pools read the image by
 * tensor.extract (LLVM 19's sharding interface takes neither the padded copy's
 * tensor.insert_slice nor a map that reads oh * sh + kh). */
static void test_sharded_cnn_round(void) {
    if (!tools_present()) return fedc_test_skip("mlir-opt-19 not installed (mlir-19-tools)");
    if (!fedc_test_tmpdir("export-shard-cnn")) return;
    fedc_program *p = m_cnn_round();
    char *text = NULL;
    fedc_mlir_options o = {.clients = 2, .shard_clients = 2};
    CHECK_OK(fedc_program_to_mlir(p, &o, &text));
    CHECK_MSG(text && !strstr(text, "tensor.insert_slice") && !strstr(text, "tensor.extract_slice"),
              "the sharded CNN round holds a slice op");
    int rc = -1;
    bool verified = false;
    char *said = text ? partition(text, &rc, &verified) : NULL;
    CHECK_MSG(rc == 0 && verified && said, "the CNN round does not partition (rc %d):\n%.2000s", rc, said ? said : "");
    CHECK_MSG(said && used_all_reduces(said) == 19, "the CNN round's 19 aggregations are not 19 used all-reduces");
    CHECK_MSG(said && strstr(said, "tensor<1x2x2x28x28x1xf32>"), "no device holds its 1 client's images");
    free(said);
    fedc_free(text);
    fedc_program_destroy(p);
    fedc_test_tmpdir_remove();
}

/* Padding that pads: a body of a SAME conv2d of stride 2, SAME max and average
 * pools, pad, slice and concat, and the gradient ops of the conv and the pools
 * (the input gradient and the pools' gradients read through windows that
 * leave the image), mapped over the clients, then a sum of each result.
 * Sharded, pad, slice, concat and the padded reads are linalg.generics that
 * read by tensor.extract, and it partitions. (Not fedc_grad's program of the
 * same body: its seed, a rank-0 constant spread over the clients, and its
 * broadcasts of [1, 1, 1, 1] values meet what docs/export.md says LLVM 19
 * cannot partition.) */
static fedc_program *padding_body(void) {
    fedc_value x[2];
    fedc_program *p = start(x, 2, (fedc_type[]){T(2, 5, 4, 1), T(3, 3, 1, 2)});
    fedc_type xt = T(2, 5, 4, 1), yt = T(2, 3, 2, 2);
    fedc_value y = fedc_relu(p, fedc_conv2d(p, x[0], x[1], 2, 2, FEDC_PAD_SAME)); /* [2, 3, 2, 2], pads 1 1 0 1 */
    fedc_value m = fedc_max_pool2d(p, y, 2, 2, 2, 2, FEDC_PAD_SAME);            /* [2, 2, 1, 2], pads 0 1 0 0 */
    fedc_value a = fedc_avg_pool2d(p, y, 3, 3, 1, 2, FEDC_PAD_SAME);            /* [2, 3, 1, 2], pads 1 1 0 1 */
    fedc_value q = fedc_pad(p, y, (int64_t[]){0, 1, 0, 0}, (int64_t[]){0, 0, 1, 0}); /* [2, 4, 3, 2] */
    fedc_value sl = fedc_slice(p, q, (int64_t[]){0, 1, 0, 0}, (int64_t[]){2, 4, 2, 2});
    const int64_t conv_pads[4] = {1, 1, 0, 1}, max_pads[4] = {0, 1, 0, 0};
    fedc_value outs[] = {
        fedc_concat(p, (fedc_value[]){sl, y}, 2, 3),
        fedc_conv2d_input_grad(p, y, x[1], &xt, 2, 2, conv_pads),
        fedc_conv2d_filter_grad(p, x[0], y, 3, 3, 2, 2, conv_pads),
        fedc_max_pool2d_grad(p, y, m, 2, 2, 2, 2, max_pads),
        fedc_avg_pool2d_grad(p, a, &yt, 3, 3, 1, 2, conv_pads),
    };
    const char *names[] = {"c", "dx", "dw", "dmax", "davg"};
    for (int i = 0; i < (int)FEDC_COUNT_OF(outs); i++) fedc_program_output(p, names[i], outs[i]);
    return p;
}

static void test_sharded_padding(void) {
    if (!tools_present()) return fedc_test_skip("mlir-opt-19 not installed (mlir-19-tools)");
    if (!fedc_test_tmpdir("export-shard-padding")) return;
    fedc_program *body = padding_body();
    fedc_value x[2], r[8];
    fedc_program *p = start(x, 2, (fedc_type[]){placed(T(2, 5, 4, 1), FEDC_CLIENTS), placed(T(3, 3, 1, 2), FEDC_CLIENTS)});
    int n = body ? fedc_program_num_outputs(body) : 0;
    CHECK(n >= 3 && n <= 8);
    if (n >= 3 && n <= 8 && !fedc_map(p, body, x, 2, r))
        for (int i = 0; i < n; i++) {
            char out[16];
            snprintf(out, sizeof out, "y%d", i);
            fedc_program_output(p, out, fedc_sum(p, r[i]));
        }
    char *text = NULL;
    fedc_mlir_options o = {.clients = 4, .shard_clients = 2};
    CHECK_OK(fedc_program_to_mlir(p, &o, &text));
    CHECK_MSG(text && !strstr(text, "tensor.insert_slice") && !strstr(text, "tensor.extract_slice"),
              "the sharded module holds a slice op");
    CHECK_MSG(text && strstr(text, "tensor.extract") && strstr(text, "annotate_for_users : tensor<4x2x4x3x2xf32>"),
              "the pad is not a generic that reads by tensor.extract");
    fedc_free(text);
    check_partitions("SAME conv, pools, pad, slice, concat", p, "tensor<2x2x5x4x1xf32>");
    o = (fedc_mlir_options){.clients = 4, .shard_clients = 2};
    CHECK_OK(fedc_program_to_mlir(p, &o, &text));
    int rc = -1;
    bool verified = false;
    char *said = text ? partition(text, &rc, &verified) : NULL;
    CHECK_MSG(said && used_all_reduces(said) == 5, "the 5 sums are not 5 used all-reduces");
    free(said);
    fedc_free(text);
    fedc_program_destroy(body);
    fedc_program_destroy(p);
    fedc_test_tmpdir_remove();
}

/* The groups level over a 2 x 2 mesh (groups x clients): fedc writes one
 * device's function, which LLVM 19 parses and verifies: a device holds its
 * share of its row's clients and its row's groups, each step up from the
 * clients is an all-reduce along the row (mesh axis 1), each from the groups
 * one across the rows (axis 0), and nothing is left to LLVM's partitioner. The
 * whole cohort's signature is said above it. Running it is LLVM 22's
 * (tests/peers_export_mpi.py). A 1-D mesh takes it as one row; a mesh whose
 * columns do not divide a group's clients is refused. */
static void test_sharded_groups(void) {
    if (!tools_present()) return fedc_test_skip("mlir-opt-19 not installed (mlir-19-tools)");
    if (!fedc_test_tmpdir("export-shard-groups")) return;
    fedc_program *p = m_levels();
    char *text = NULL;
    fedc_mlir_options o = {.clients = 8, .groups = 2, .shard_groups = 2, .shard_clients = 2};
    CHECK_OK(fedc_program_to_mlir(p, &o, &text));
    CHECK_MSG(text && strstr(text, "mesh.mesh @clients_mesh(shape = 2x2)") &&
                  strstr(text, "// func.func @program(%arg0: tensor<3xf32>, %arg1: tensor<8x3xf32>") &&
                  strstr(text, "func.func @program(%arg0: tensor<3xf32>, %arg1: tensor<2x3xf32>, %arg2: tensor<2xf32>, "
                               "%arg3: tensor<1xf32>)") &&
                  strstr(text, "mesh_axes = [1] : tensor<1x3xf32> -> tensor<1x3xf32>") &&
                  strstr(text, "mesh_axes = [0] : tensor<3xf32> -> tensor<3xf32>") && !strstr(text, "mesh.shard") &&
                  !strstr(text, "mesh_axes = [0, 1]"),
              "the 2 x 2 module:\n%.3000s", text ? text : "");
    const char *path = fedc_test_tmp("groups.mlir");
    FILE *f = text ? fopen(path, "w") : NULL;
    if (f) fputs(text, f), fclose(f);
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "mlir-opt-19 %s >/dev/null 2>&1", path);
    CHECK_MSG(f && system(cmd) == 0, "LLVM 19 does not verify the 2 x 2 module");
    fedc_free(text), text = NULL;
    o.shard_groups = 0, o.shard_clients = 4; /* one row */
    CHECK_OK(fedc_program_to_mlir(p, &o, &text));
    CHECK_MSG(text && strstr(text, "mesh.mesh @clients_mesh(shape = 1x4)") && strstr(text, "%arg3: tensor<2xf32>"),
              "a 1-D mesh of a program with groups");
    fedc_free(text), text = NULL;
    o.shard_groups = 4, o.shard_clients = 2; /* 4 rows of 2 groups */
    CHECK_ERR(fedc_program_to_mlir(p, &o, &text), FEDC_EINVAL, "shard the groups over 4 mesh rows");
    o = (fedc_mlir_options){.clients = 12, .groups = 6, .shard_groups = 2, .shard_clients = 3}; /* groups of 2 */
    CHECK_ERR(fedc_program_to_mlir(p, &o, &text), FEDC_EINVAL, "shard the clients over 3 mesh columns");
    fedc_program_destroy(p);
    fedc_test_tmpdir_remove();
}

int main(int argc, char **argv) {
    static const fedc_test tests[] = {
        {"sharded round", test_sharded_round},
        {"sharded fold", test_sharded_fold},
        {"sharded reshape", test_sharded_reshape},
        {"sharded random", test_sharded_random},
        {"LLVM 19's propagation crash and its workaround", test_llvm19_crash},
        {"sharded fedavg round", test_sharded_fedavg_round},
        {"sharded cnn round", test_sharded_cnn_round},
        {"sharded padding, slice and concat", test_sharded_padding},
        {"sharded groups level on a 2 x 2 mesh", test_sharded_groups},
    };
    return fedc_test_main(argc, argv, tests, FEDC_COUNT_OF(tests));
}
