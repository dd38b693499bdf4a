/* Export to MLIR, checked by LLVM's own tools: every case of export_cases.c is
 * exported with an entry @main, verified and lowered by mlir-opt-19, run by
 * mlir-cpu-runner-19, and its printed outputs compared with fedc's executor (fast
 * and reference kernels) on the same random inputs; the random ops' draws are
 * compared bit for bit. Then ops.def is walked: an op that lowers but no case
 * runs, or that neither lowers nor is listed as not lowered yet, fails the test.
 * Bad input (a federated program without a cohort size, a missing input, a
 * program that does not verify) gets its error. Skips when mlir-19-tools is
 * absent. */
#include <math.h>

#include "export_cases.h"

/* Ops that have no lowering to MLIR yet (export fails naming them), NULL-ended:
 * robust_aggregate (a server-side sort and selection over the cohort). An op added to ops.def without a lowering must be listed here or
 * fails the test; it leaves the list when it lowers and a case runs it. */
/* robust_aggregate: a server-side sort */
static const char *const NOT_LOWERED[] = {"robust_aggregate", NULL};

static void check_export_case(const export_case *c) {
    fedc_program *p = c->make();
    CHECK_MSG(p && !fedc_program_status(p), "%s: build: %s", c->name, fedc_errmsg());
    if (!p || fedc_program_status(p)) return fedc_program_destroy(p);
    inputs in = {0};
    make_inputs(p, c, &in);
    fedc_mlir_options o = {.clients = c->clients, .entry_main = true, .ninputs = in.n, .input_names = in.names,
                           .input_data = (const void *const *)in.data, .groups = case_groups(p)};
    char *text = NULL, log[4096];
    CHECK_OK(fedc_program_to_mlir(p, &o, &text));
    int64_t max = output_values(p, c->clients) + 1;
    double *want = calloc((size_t)max, 8), *ref = calloc((size_t)max, 8), *got = calloc((size_t)max, 8);
    int64_t nw = run_fedc(p, c->clients, &in, false, want, NULL), nr = run_fedc(p, c->clients, &in, true, ref, NULL);
    int64_t ng = text ? run_mlir(text, got, max, log, sizeof log) : -1;
    CHECK_MSG(ng == nw && nr == nw, "%s: MLIR printed %lld values, fedc has %lld (reference %lld)%s%.2000s", c->name,
              (long long)ng, (long long)nw, (long long)nr, ng < 0 ? "; the tools said:\n" : "", ng < 0 ? log : "");
    for (int64_t k = 0, bad = 0; ng == nw && k < nw && bad < 3; k++) {
        double tol = 2e-5 * (1 + fabs(want[k])); /* the runner prints 6 significant digits */
        if (fabs(got[k] - want[k]) <= tol && fabs(ref[k] - want[k]) <= tol) continue;
        bad++;
        fedc_test_fail(__FILE__, __LINE__, "%s: value %lld: MLIR %.9g, fedc %.9g, reference kernels %.9g", c->name,
                       (long long)k, got[k], want[k], ref[k]);
    }
    free(want), free(ref), free(got);
    free_inputs(&in);
    fedc_free(text);
    fedc_program_destroy(p);
}

static void test_cases_run_under_llvm(void) {
    if (!tools_present()) return fedc_test_skip("mlir-opt-19 / mlir-cpu-runner-19 not installed (mlir-19-tools, libmlir-19)");
    if (!fedc_test_tmpdir("export")) return;
    for (int i = 0; i < EXPORT_NCASES; i++) {
        int before = fedc_test_failures();
        check_export_case(&EXPORT_CASES[i]);
        if (fedc_test_failures() != before) fprintf(stderr, "    (in case \"%s\")\n", EXPORT_CASES[i].name);
    }
    fedc_test_tmpdir_remove();
}

/* ---------------------------------------------------- random bit for bit -- */

/* "tensor<3x4x5xi32>" of value v of p, the clients axis first when it has one;
 * elem replaces the element type when given. */
static const char *tensor_of(const fedc_program *p, fedc_value v, int clients, const char *elem, char *buf, size_t size) {
    fedc_type t = fedc_value_type(p, v);
    int n = snprintf(buf, size, "tensor<");
    if (t.placement == FEDC_CLIENTS) n += snprintf(buf + n, size - (size_t)n, "%dx", clients);
    for (int d = 0; d < t.rank; d++) n += snprintf(buf + n, size - (size_t)n, "%lldx", (long long)t.dims[d]);
    snprintf(buf + n, size - (size_t)n, "%s>", elem ? elem : fedc_dtype_name(t.dtype));
    return buf;
}

/* Appends to `text` (a module holding @program) a @main that calls it on the
 * inputs (i32 data, as hex constants) and prints every float output as its bits:
 * f32 as i32, f64 as i64, exactly what the runner prints of integers. */
static char *with_bits_main(const fedc_program *p, const char *text, int clients, const inputs *in) {
    size_t cap = strlen(text) + 65536, len = strlen(text) - 2; /* drop the module's closing "}\n" */
    char *m = malloc(cap), a[160], b[160];
    if (!m) return NULL;
    memcpy(m, text, len);
#define OUT(...) (len += len < cap ? (size_t)snprintf(m + len, cap - len, __VA_ARGS__) : 0) /* len >= cap: full */
    OUT("  func.func private @printMemrefI32(memref<*xi32>)\n  func.func private @printMemrefI64(memref<*xi64>)\n"
        "  func.func @main() {\n");
    for (int i = 0; i < in->n; i++) {
        fedc_value v = fedc_program_input(p, i);
        fedc_type t = fedc_value_type(p, v);
        OUT("    %%in%d = arith.constant dense<\"0x", i);
        for (int64_t e = 0; e < elements(&t, clients) * 4; e++) OUT("%02X", ((const uint8_t *)in->data[i])[e]);
        OUT("\"> : %s\n", tensor_of(p, v, clients, NULL, a, sizeof a));
    }
    int no = fedc_program_num_outputs(p);
    OUT("    %%r:%d = call @program(", no);
    for (int i = 0; i < in->n; i++) OUT("%s%%in%d", i ? ", " : "", i);
    OUT(") : (");
    for (int i = 0; i < in->n; i++) OUT("%s%s", i ? ", " : "", tensor_of(p, fedc_program_input(p, i), clients, NULL, a, sizeof a));
    OUT(") -> (");
    for (int k = 0; k < no; k++) OUT("%s%s", k ? ", " : "", tensor_of(p, fedc_program_output_value(p, k), clients, NULL, a, sizeof a));
    OUT(")\n");
    for (int k = 0; k < no; k++) {
        fedc_value v = fedc_program_output_value(p, k);
        fedc_type t = fedc_value_type(p, v);
        const char *fe = t.dtype == FEDC_F64 ? "f64" : "f32", *ie = t.dtype == FEDC_F64 ? "i64" : "i32";
        int rank = t.rank + (t.placement == FEDC_CLIENTS);
        char map[160] = "", iters[160] = "";
        for (int d = 0; d < rank; d++) {
            snprintf(map + strlen(map), sizeof map - strlen(map), "%sd%d", d ? ", " : "", d);
            snprintf(iters + strlen(iters), sizeof iters - strlen(iters), "%s\"parallel\"", d ? ", " : "");
        }
        tensor_of(p, v, clients, NULL, a, sizeof a), tensor_of(p, v, clients, ie, b, sizeof b);
        OUT("    %%z%d = arith.constant dense<0> : %s\n", k, b);
        OUT("    %%b%d = linalg.generic {indexing_maps = [affine_map<(%s) -> (%s)>, affine_map<(%s) -> (%s)>], "
            "iterator_types = [%s]} ins(%%r#%d : %s) outs(%%z%d : %s) {\n    ^bb0(%%x: %s, %%o: %s):\n"
            "      %%c = arith.bitcast %%x : %s to %s\n      linalg.yield %%c : %s\n    } -> %s\n",
            k, map, map, map, map, iters, k, a, k, b, fe, ie, fe, ie, ie, b);
        OUT("    %%m%d = bufferization.to_memref %%b%d : memref%s\n", k, k, strchr(b, '<'));
        OUT("    %%u%d = memref.cast %%m%d : memref%s to memref<*x%s>\n", k, k, strchr(b, '<'), ie);
        OUT("    call @printMemref%s(%%u%d) : (memref<*x%s>) -> ()\n", t.dtype == FEDC_F64 ? "I64" : "I32", k, ie);
    }
    OUT("    return\n  }\n}\n");
#undef OUT
    if (len < cap) return m;
    free(m);
    return NULL;
}

/* The random ops' draws exported and run are fedc's bit for bit: uniforms
 * (Philox words, exact), normals (Box-Muller over libm's log and cos, which the
 * pipeline lowers to calls of the same libm), on keys with every bit pattern
 * (negative words too), at the clients and in a map. */
static void test_random_bit_for_bit(void) {
    if (!tools_present()) return fedc_test_skip("mlir-opt-19 / mlir-cpu-runner-19 not installed (mlir-19-tools, libmlir-19)");
    if (!fedc_test_tmpdir("export-random")) return;
    const struct { make_fn make; int clients; } progs[] = {{m_random, 0}, {m_random_clients, 3}};
    for (int c = 0; c < FEDC_COUNT_OF(progs); c++) {
        fedc_program *p = progs[c].make();
        int clients = progs[c].clients;
        inputs in = {.n = 1, .names = (const char *[]){"x0"}};
        int32_t keys[12];
        for (int k = 0; k < 12; k++) keys[k] = (int32_t)(0x9E3779B9u * (uint32_t)(k + 1) ^ (uint32_t)fedc_test_uniform(0, 65536));
        void *data[1] = {keys};
        in.data = data;
        char *text = NULL, log[4096];
        CHECK_OK(fedc_program_to_mlir(p, &(fedc_mlir_options){.clients = clients}, &text));
        char *module = text ? with_bits_main(p, text, clients, &in) : NULL;
        if (!module) snprintf(log, sizeof log, "(no module to run: the export or its @main failed)");
        int64_t max = output_values(p, clients) + 1;
        int64_t *want = calloc((size_t)max, 8), *ref = calloc((size_t)max, 8), *got = calloc((size_t)max, 8);
        int64_t nw = run_fedc(p, clients, &in, false, NULL, want), nr = run_fedc(p, clients, &in, true, NULL, ref);
        int64_t ng = module ? run_mlir_ints(module, got, max, log, sizeof log) : -1;
        CHECK_MSG(ng == nw && nr == nw && nw == max - 1, "program %d: MLIR printed %lld values, fedc has %lld (reference %lld)%s%.2000s",
                  c, (long long)ng, (long long)nw, (long long)nr, ng < 0 ? "; the tools said:\n" : "", ng < 0 ? log : "");
        int64_t same = 0;
        for (int64_t k = 0; ng == nw && k < nw; k++) {
            if (got[k] == want[k] && ref[k] == want[k]) same++;
            else if (k - same < 3) /* the first few differences */
                fedc_test_fail(__FILE__, __LINE__, "program %d: value %lld: MLIR bits %llx, fedc %llx, reference kernels %llx",
                               c, (long long)k, (unsigned long long)got[k], (unsigned long long)want[k],
                               (unsigned long long)ref[k]);
        }
        CHECK_MSG(same == nw, "program %d: %lld of %lld draws equal fedc's bit for bit", c, (long long)same, (long long)nw);
        free(want), free(ref), free(got), free(module);
        fedc_free(text);
        fedc_program_destroy(p);
    }
    fedc_test_tmpdir_remove();
}

/* ------------------------------------------------------------- coverage -- */


static void test_every_op_lowers_or_is_listed(void) {
    bool used[FEDC_OP_COUNT] = {0};
    for (int i = 0; i < EXPORT_NCASES; i++) {
        fedc_program *p = EXPORT_CASES[i].make();
        if (p) mark_ops(p, used);
        fedc_program_destroy(p);
    }
    for (int op = 0; op < FEDC_OP_COUNT; op++) {
        const char *name = fedc__ops[op].name;
        bool lowers = fedc_mlir_lowers(name), out = listed(NOT_LOWERED, name);
        CHECK_MSG(lowers || out, "op %s has no lowering and is not listed in NOT_LOWERED", name);
        CHECK_MSG(!(lowers && out), "op %s lowers now: remove it from NOT_LOWERED and add a case", name);
        CHECK_MSG(!lowers || used[op], "op %s lowers but no case exports and runs it", name);
    }
}

/* ------------------------------------------------------------ bad input -- */

static void test_errors(void) {
    fedc_program *p = m_broadcast_sum();
    char *text = NULL;
    CHECK_ERR(fedc_program_to_mlir(p, NULL, &text), FEDC_EINVAL, "give the cohort's size");
    fedc_mlir_options o = {.clients = 3, .entry_main = true};
    CHECK_ERR(fedc_program_to_mlir(p, &o, &text), FEDC_EINVAL, "no data for input \"x0\"");
    o = (fedc_mlir_options){.clients = 3, .func_name = "bad name"};
    CHECK_ERR(fedc_program_to_mlir(p, &o, &text), FEDC_EINVAL, "use letters, digits and _");
    fedc_program_destroy(p);
    /* what @main cannot hold: a bool input */
    fedc_value z[1];
    p = start(z, 1, (fedc_type[]){fedc_type_make(FEDC_BOOL, 1, (int64_t[]){3})});
    fedc_program_output(p, "y", fedc_select(p, z[0], fedc_full(p, T(3), 1), fedc_full(p, T(3), 2)));
    uint8_t flags[3] = {1, 0, 1};
    o = (fedc_mlir_options){.entry_main = true, .ninputs = 1, .input_names = (const char *[]){"x0"},
                            .input_data = (const void *[]){flags}};
    CHECK_ERR(fedc_program_to_mlir(p, &o, &text), FEDC_EUNSUPPORTED, "bool input \"x0\"");
    CHECK(text == NULL);
    fedc_program_destroy(p);
    /* a program that does not verify (shapes that do not broadcast) exports nothing */
    fedc_value ab[2];
    p = start(ab, 2, (fedc_type[]){T(3, 4), T(5)});
    fedc_program_output(p, "y", fedc_add(p, ab[0], ab[1]));
    CHECK_ERR(fedc_program_to_mlir(p, NULL, &text), FEDC_ESHAPE, "add");
    CHECK(text == NULL);
    fedc_program_destroy(p);
}

int main(int argc, char **argv) {
    static const fedc_test tests[] = {
        {"cases run under llvm", test_cases_run_under_llvm},
        {"random ops bit for bit", test_random_bit_for_bit},
        {"every op lowers or is listed", test_every_op_lowers_or_is_listed},
        {"errors", test_errors},
    };
    return fedc_test_main(argc, argv, tests, FEDC_COUNT_OF(tests));
}
