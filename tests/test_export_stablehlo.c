/* Export to StableHLO (--to stablehlo): every case of export_cases.c (and a few
 * forward programs of its own) exports and parses with mlir-opt-19
 * --allow-unregistered-dialect, or fails naming an op of NOT_IN_STABLEHLO;
 * sharded exports carry mhlo.sharding on the clients axis. Skips when
 * mlir-19-tools is absent. */
#include "export_cases.h"

/* ------------------------------------------------------------ stablehlo -- */

/* Ops that have no StableHLO lowering yet (the export fails naming them),
 * NULL-ended; an op leaves the list when it lowers and a case exports it. */
/* robust_aggregate: a server-side sort and selection */
static const char *const NOT_IN_STABLEHLO[] = {"robust_aggregate", NULL};


/* Forward programs of ops whose cases above hold their gradients too (which
 * have no StableHLO lowering yet): a conv layer and pools, the same layer in a
 * map (each client convolving with its own filter), GELU. */
static fedc_program *s_cnn(void) {
    fedc_value x[2];
    fedc_program *p = start(x, 2, (fedc_type[]){T(2, 7, 6, 3), T(3, 3, 3, 4)});
    fedc_value y = fedc_relu(p, fedc_conv2d(p, x[0], x[1], 2, 2, FEDC_PAD_SAME));
    fedc_program_output(p, "max", fedc_max_pool2d(p, y, 2, 2, 2, 2, FEDC_PAD_SAME));
    return finish(p, fedc_avg_pool2d(p, y, 3, 3, 1, 2, FEDC_PAD_SAME));
}
static fedc_program *s_cnn_in_map(void) {
    fedc_program *body = NULL;
    CHECK_OK(fedc_program_create(&body));
    fedc_value w = fedc_input(body, "w", T(3, 3, 3, 4)), xb = fedc_input(body, "x", T(2, 7, 6, 3));
    fedc_value y = fedc_conv2d(body, xb, w, 1, 1, FEDC_PAD_VALID);
    fedc_program_output(body, "y", fedc_avg_pool2d(body, fedc_max_pool2d(body, y, 2, 2, 1, 1, FEDC_PAD_SAME), 2, 2, 2, 2,
                                                   FEDC_PAD_VALID));
    fedc_value x[2], r[1];
    fedc_program *p = start(x, 2, (fedc_type[]){placed(T(3, 3, 3, 4), FEDC_SERVER), placed(T(2, 7, 6, 3), FEDC_CLIENTS)});
    CHECK_OK(fedc_map(p, body, (fedc_value[]){fedc_broadcast(p, x[0]), x[1]}, 2, r));
    fedc_program_destroy(body);
    return finish(p, fedc_mean(p, r[0]));
}
static fedc_program *s_gelu(void) {
    fedc_value x[1];
    fedc_program *p = start(x, 1, (fedc_type[]){T(3, 4)});
    return finish(p, fedc_gelu(p, x[0]));
}
static const export_case STABLEHLO_CASES[] = {
    {"conv2d and pools", s_cnn, 0, -1, 1, 0},
    {"conv2d and pools in a map", s_cnn_in_map, 3, -1, 1, 0},
    {"gelu", s_gelu, 0, -1, 1, 0},
};
/* Every case exports to StableHLO and parses, or fails naming an op of
 * NOT_IN_STABLEHLO; every op that lowers is in a case that exports whole, and
 * every op either lowers or is listed. */
static void test_stablehlo(void) {
    if (!tools_present()) return fedc_test_skip("mlir-opt-19 not installed (mlir-19-tools)");
    if (!fedc_test_tmpdir("export-stablehlo")) return;
    bool exported[FEDC_OP_COUNT] = {0};
    int ncases = EXPORT_NCASES, nall = ncases + FEDC_COUNT_OF(STABLEHLO_CASES);
    for (int i = 0; i < nall; i++) {
        const export_case *c = i < ncases ? &EXPORT_CASES[i] : &STABLEHLO_CASES[i - ncases];
        fedc_program *p = c->make();
        char *text = NULL, log[2048];
        fedc_mlir_options o = {.clients = c->clients, .groups = p ? case_groups(p) : 0};
        fedc_status st = p ? fedc_program_to_stablehlo(p, &o, &text) : FEDC_EINVAL;
        if (st == FEDC_OK) {
            CHECK_MSG(strstr(text, "\"stablehlo.") && !strstr(text, "linalg."), "%s: not StableHLO", c->name);
            CHECK_MSG(parses(text, log, sizeof log), "%s: the StableHLO module does not parse:\n%.1500s", c->name, log);
            mark_ops(p, exported);
        } else {
            const char *msg = fedc_errmsg(), *open = strchr(msg, '('), *close = open ? strchr(open, ')') : NULL;
            char op[64] = "";
            if (open && close && close - open < 64) snprintf(op, sizeof op, "%.*s", (int)(close - open - 1), open + 1);
            CHECK_MSG(st == FEDC_EUNSUPPORTED && strstr(msg, "has no lowering to StableHLO yet") &&
                          listed(NOT_IN_STABLEHLO, op),
                      "%s: %s (not an op listed as not lowered)", c->name, msg);
        }
        fedc_free(text);
        fedc_program_destroy(p);
    }
    for (int op = 0; op < FEDC_OP_COUNT; op++) {
        const char *name = fedc__ops[op].name;
        bool lowers = fedc_stablehlo_lowers(name), out = listed(NOT_IN_STABLEHLO, name);
        CHECK_MSG(lowers != out, "op %s: %s", name, lowers ? "lowers to StableHLO: remove it from NOT_IN_STABLEHLO"
                                                           : "has no StableHLO lowering and is not in NOT_IN_STABLEHLO");
        CHECK_MSG(!lowers || exported[op], "op %s lowers to StableHLO but no case exports it whole", name);
    }
    fedc_test_tmpdir_remove();
}

/* Sharded, every argument and result says how XLA splits it: the clients axis
 * over the devices, server values replicated; FedAvg rounds of logistic
 * regression and of the EMNIST CNN, and FedAdam's of a tiny transformer and of
 * the Shakespeare LSTM, export whole; what has no lowering fails naming it. */
static void test_stablehlo_sharding(void) {
    if (!tools_present()) return fedc_test_skip("mlir-opt-19 not installed (mlir-19-tools)");
    if (!fedc_test_tmpdir("export-stablehlo-shard")) return;
    fedc_program *p = m_map();
    char *text = NULL, log[2048];
    fedc_mlir_options o = {.clients = 4, .shard_clients = 2};
    CHECK_OK(fedc_program_to_stablehlo(p, &o, &text));
    CHECK(text && strstr(text, "mhlo.num_partitions = 2 : i32"));
    CHECK(text && strstr(text, "%arg0: tensor<3x2xf32> {mhlo.sharding = \"{replicated}\"}"));
    CHECK(text && strstr(text, "%arg1: tensor<4x4x3xf32> {mhlo.sharding = \"{devices=[2,1,1]0,1}\"}"));
    CHECK(text && strstr(text, "-> (tensor<4x4x2xf32> {mhlo.sharding = \"{devices=[2,1,1]0,1}\"}, tensor<4x2xf32> "
                               "{mhlo.sharding = \"{replicated}\"})"));
    /* the map's matmul, client by client: the clients axis a batch dim of both operands */
    CHECK(text && strstr(text, "\"stablehlo.dot_general\"(%arg1, %v2) {dot_dimension_numbers = #stablehlo.dot<"
                               "lhs_batching_dimensions = [0], rhs_batching_dimensions = [0], "
                               "lhs_contracting_dimensions = [2], rhs_contracting_dimensions = [1]>}"));
    CHECK_MSG(text && parses(text, log, sizeof log), "%.1500s", log);
    fedc_free(text);
    o.entry_main = true;
    CHECK_ERR(fedc_program_to_stablehlo(p, &o, &text), FEDC_EUNSUPPORTED, "no @main");
    o = (fedc_mlir_options){.clients = 4, .shard_clients = 3};
    CHECK_ERR(fedc_program_to_stablehlo(p, &o, &text), FEDC_EINVAL, "export to stablehlo: shard over 3 devices");
    fedc_program_destroy(p);
    /* a whole FedAvg round (local SGD a stablehlo.while over each client's batches), sharded */
    fedc_model_options mo = {.input_dim = 6, .num_classes = 3};
    p = model_round("logistic", &mo, FEDC_OPT_SGD, 2, 2);
    o = (fedc_mlir_options){.clients = 4, .shard_clients = 2};
    CHECK_OK(fedc_program_to_stablehlo(p, &o, &text));
    CHECK(text && strstr(text, "\"stablehlo.while\"") && strstr(text, "\"stablehlo.dot_general\""));
    CHECK(text && strstr(text, "tensor<4x2x2x6xf32> {mhlo.sharding = \"{devices=[2,1,1,1]0,1}\"}"));
    CHECK_MSG(text && parses(text, log, sizeof log), "%.1500s", log);
    fedc_free(text);
    fedc_program_destroy(p);
    p = m_cnn_round(); /* FedJAX's EMNIST CNN: convolutions, pools, dropout and their gradients in local training */
    o = (fedc_mlir_options){.clients = 2, .shard_clients = 2};
    CHECK_OK(fedc_program_to_stablehlo(p, &o, &text));
    CHECK(text && strstr(text, "\"stablehlo.convolution\"") && strstr(text, "\"stablehlo.select_and_scatter\"") &&
          strstr(text, "batch_group_count = 2 : i64"));
    /* sharded, the clients are batch groups (XLA's partitioner gathers feature groups of more than one
     * feature), their groups annotated tiled over the devices */
    CHECK(text && !strstr(text, "feature_group_count = 2 : i64") &&
          strstr(text, "call_target_name = \"Sharding\", mhlo.sharding = \"{devices=[1,1,1,2]0,1}\""));
    CHECK_MSG(text && parses(text, log, sizeof log), "%.1500s", log);
    fedc_free(text);
    fedc_program_destroy(p);
    p = m_transformer_round(); /* attention, layer norm, GELU, embeddings and their gradients */
    o = (fedc_mlir_options){.clients = 2, .shard_clients = 2};
    CHECK_OK(fedc_program_to_stablehlo(p, &o, &text));
    CHECK(text && strstr(text, "\"stablehlo.gather\"") && strstr(text, "\"stablehlo.scatter\""));
    CHECK_MSG(text && parses(text, log, sizeof log), "%.1500s", log);
    fedc_free(text);
    fedc_program_destroy(p);
    /* the Shakespeare LSTM: its forward and backpropagation through time are
     * stablehlo.while loops inside the clients' local training */
    p = m_lstm_round();
    o = (fedc_mlir_options){.clients = 4, .shard_clients = 2};
    CHECK_OK(fedc_program_to_stablehlo(p, &o, &text));
    CHECK(text && strstr(text, "\"stablehlo.dynamic_slice\"") && strstr(text, "\"stablehlo.dynamic_update_slice\"") &&
          strstr(text, "lhs_batching_dimensions = [0], rhs_batching_dimensions = [0], lhs_contracting_dimensions = [2], "
                       "rhs_contracting_dimensions = [2]")); /* each client's dxw @ its own wh^T */
    CHECK_MSG(text && parses(text, log, sizeof log), "%.1500s", log);
    fedc_free(text);
    fedc_program_destroy(p);
    /* the groups level over a 2 x 4 mesh: @clients values over all 8 devices, @groups
     * ones over the rows and replicated along each, the server's replicated */
    p = m_levels();
    o = (fedc_mlir_options){.clients = 8, .groups = 2, .shard_groups = 2, .shard_clients = 4};
    CHECK_OK(fedc_program_to_stablehlo(p, &o, &text));
    CHECK(text && strstr(text, "mhlo.num_partitions = 8 : i32"));
    CHECK(text && strstr(text, "%arg1: tensor<8x3xf32> {mhlo.sharding = \"{devices=[8,1]0,1,2,3,4,5,6,7}\"}"));
    CHECK(text && strstr(text, "%arg3: tensor<2xf32> {mhlo.sharding = \"{devices=[2,4]0,1,2,3,4,5,6,7 "
                               "last_tile_dim_replicate}\"}"));
    CHECK(text && strstr(text, "tensor<2x3xf32> {mhlo.sharding = \"{devices=[2,1,4]0,1,2,3,4,5,6,7 last_tile_dim_replicate}\"}"));
    CHECK(text && strstr(text, "-> tensor<2x4x3xf32>")); /* the clients read by group */
    CHECK_MSG(text && parses(text, log, sizeof log), "%.1500s", log);
    fedc_free(text);
    o.groups = 3; /* unequal groups */
    CHECK_ERR(fedc_program_to_stablehlo(p, &o, &text), FEDC_EINVAL, "give the number of groups");
    o = (fedc_mlir_options){.clients = 8, .groups = 2, .shard_groups = 4, .shard_clients = 2};
    CHECK_ERR(fedc_program_to_stablehlo(p, &o, &text), FEDC_EINVAL, "shard the groups over 4 mesh rows");
    o = (fedc_mlir_options){.clients = 8, .groups = 2, .shard_groups = 2, .shard_clients = 2};
    CHECK_OK(fedc_program_to_mlir(p, &o, &text)); /* MLIR's mesh is the same (test_export_shard.c) */
    CHECK(text && strstr(text, "mesh.mesh @clients_mesh(shape = 2x2)"));
    fedc_free(text);
    fedc_program_destroy(p);
    /* a construct without a lowering: the export fails naming it, and writes nothing */
    fedc_value x[2];
    p = start(x, 2, (fedc_type[]){placed(T(3), FEDC_CLIENTS), placed(fedc_type_make(FEDC_I32, 1, (int64_t[]){4}), FEDC_SERVER)});
    fedc_program_output(p, "y", fedc_sum(p, fedc_dropout(p, x[0], x[1], 0.5)));
    o = (fedc_mlir_options){.clients = 3};
    CHECK_ERR(fedc_program_to_stablehlo(p, &o, &text), FEDC_EUNSUPPORTED, "(dropout): clients' dropout with one server key");
    CHECK(text == NULL);
    fedc_program_destroy(p);
    fedc_test_tmpdir_remove();
}

int main(int argc, char **argv) {
    static const fedc_test tests[] = {
        {"stablehlo", test_stablehlo},
        {"stablehlo sharding", test_stablehlo_sharding},
    };
    return fedc_test_main(argc, argv, tests, FEDC_COUNT_OF(tests));
}
