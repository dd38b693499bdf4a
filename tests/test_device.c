/*
 * Tests of the compute devices (src/exec/device.h, options.device): the list of
 * them; what the CPU devices hold and answer; that "cpu" and "cpu-reference" run
 * the fast and the reference kernels, maps' and folds' bodies included, to the
 * bits of those kernels called directly and of the older reference_kernels flag;
 * that a device refusing an op makes the executor refuse the program, naming the
 * node, the op, the body and the device; that the executor allocates its plan and
 * waits for the device through the device's hooks; and the errors for an unknown
 * name, a contradicting flag, a kernel table with a hole and memory off the host.
 */
#include <stdatomic.h>
#include <string.h>

#include "exec/device.h"
#include "harness.h"

/* Each client's x (8 x 67) @ w (67 x 9), through tanh: 67 products per sum, so
 * the reference kernels (double accumulation) and the fast ones (f32) differ. */
static const char MAP_PROGRAM[] = "fedc program\n"
                                  "body 0 {\n"
                                  "  %0 = input \"w\" : f32[67,9]\n"
                                  "  %1 = input \"x\" : f32[8,67]\n"
                                  "  %2 = matmul(%1, %0) {transpose_a=0, transpose_b=0} : f32[8,9]\n"
                                  "  %3 = tanh(%2) : f32[8,9]\n"
                                  "  output \"y\" = %3\n"
                                  "}\n"
                                  "%0 = input \"w\" : f32[67,9]@server\n"
                                  "%1 = input \"x\" : f32[8,67]@clients\n"
                                  "%2 = broadcast(%0) : f32[67,9]@clients\n"
                                  "%3 = map(%2, %1) {body=0} : (f32[8,9]@clients)\n"
                                  "%4 = result(%3) {index=0} : f32[8,9]@clients\n"
                                  "%5 = mean(%4) : f32[8,9]@server\n"
                                  "output \"y\" = %4\n"
                                  "output \"mean\" = %5\n";
enum { CLIENTS = 5, M = 8, K = 67, N = 9 };

/* c <- c * gelu(x) + x over 5 steps. */
static const char FOLD_PROGRAM[] = "fedc program\n"
                                   "body 0 {\n"
                                   "  %0 = input \"c\" : f32[9]\n"
                                   "  %1 = input \"x\" : f32[9]\n"
                                   "  %2 = gelu(%1) : f32[9]\n"
                                   "  %3 = mul(%0, %2) : f32[9]\n"
                                   "  %4 = add(%3, %1) : f32[9]\n"
                                   "  output \"c\" = %4\n"
                                   "  output \"y\" = %2\n"
                                   "}\n"
                                   "%0 = input \"c\" : f32[9]\n"
                                   "%1 = input \"xs\" : f32[5,9]\n"
                                   "%2 = input \"len\" : i32[]\n"
                                   "%3 = fold(%0, %1, %2) {body=0, carries=1, reverse=0} : (f32[9], f32[5,9])\n"
                                   "%4 = result(%3) {index=0} : f32[9]\n"
                                   "%5 = result(%3) {index=1} : f32[5,9]\n"
                                   "output \"c\" = %4\n"
                                   "output \"ys\" = %5\n";
enum { STEPS = 5 };

static fedc_program *parsed(const char *text) {
    fedc_program *p = NULL;
    CHECK_OK(fedc_program_parse(text, &p));
    return p;
}

static float map_w[K * N], map_x[CLIENTS * M * K], fold_c[N], fold_xs[STEPS * N];
static const int32_t fold_len = STEPS;

static void make_data(void) {
    uint64_t s = 0x9e3779b97f4a7c15ull;
    float *arrays[] = {map_w, map_x, fold_c, fold_xs};
    int64_t counts[] = {K * N, CLIENTS * M * K, N, STEPS * N};
    for (int a = 0; a < 4; a++)
        for (int64_t i = 0; i < counts[a]; i++) {
            s = s * 6364136223846793005ull + 1442695040888963407ull;
            arrays[a][i] = (float)((double)(s >> 40) / (double)(1ull << 24) - 0.5) * (a == 0 ? 0.4f : 2.0f);
        }
}

/* One input bound, or one output copied out, of a run. */
typedef struct port {
    const char *name;
    const void *in;
    void *out;
    size_t bytes;
} port;

/* Runs program `text` with options o: the inputs bound, the outputs copied out.
 * False (with a failed check) when it cannot. */
static bool run_text(const char *text, const fedc_exec_options *o, const port *in, int nin, const port *out,
                     int nout) {
    fedc_program *p = parsed(text);
    fedc_executor *ex = NULL;
    fedc_status st = p ? fedc_executor_create(&ex, p, o) : FEDC_EINTERNAL;
    CHECK_OK(st);
    fedc_program_destroy(p);
    for (int i = 0; !st && i < nin; i++) CHECK_OK(st = fedc_executor_bind(ex, in[i].name, in[i].in));
    if (!st) CHECK_OK(st = fedc_executor_run(ex));
    for (int i = 0; !st && i < nout; i++) {
        const void *data = NULL;
        CHECK_OK(st = fedc_executor_output(ex, out[i].name, &data, NULL));
        if (!st) memcpy(out[i].out, data, out[i].bytes);
    }
    fedc_executor_destroy(ex);
    return !st;
}

/* The map program: every client's y and their mean. */
static bool run_map(const fedc_exec_options *o, float *y, float *mean) {
    port in[] = {{"w", map_w, NULL, 0}, {"x", map_x, NULL, 0}};
    port out[] = {{"y", NULL, y, sizeof(float) * CLIENTS * M * N}, {"mean", NULL, mean, sizeof(float) * M * N}};
    return run_text(MAP_PROGRAM, o, in, 2, out, 2);
}

static bool run_fold(const fedc_exec_options *o, float *c, float *ys) {
    port in[] = {{"c", fold_c, NULL, 0}, {"xs", fold_xs, NULL, 0}, {"len", &fold_len, NULL, 0}};
    port out[] = {{"c", NULL, c, sizeof(float) * N}, {"ys", NULL, ys, sizeof(float) * STEPS * N}};
    return run_text(FOLD_PROGRAM, o, in, 3, out, 2);
}

/* The map body's values computed with kernel table k called directly. */
static void map_by_kernels(const fedc__kernels *k, float *y) {
    for (int i = 0; i < CLIENTS; i++) {
        float *yi = y + (size_t)i * M * N;
        CHECK_OK(k->matmul(FEDC_F32, 1, M, N, K, 0, 0, map_x + (size_t)i * M * K, 0, map_w, 0, yi));
        CHECK_OK(k->unary(FEDC_U_TANH, FEDC_F32, M * N, yi, yi, 0));
    }
}

static bool same_bits(const float *a, const float *b, size_t n) { return memcmp(a, b, n * sizeof *a) == 0; }

/* ------------------------------------------------------------------- list -- */

static void test_list(void) {
    CHECK(fedc_device_name(0) && strcmp(fedc_device_name(0), "cpu") == 0);
    CHECK(fedc_device_name(1) && strcmp(fedc_device_name(1), "cpu-reference") == 0);
    CHECK(fedc_device_name(-1) == NULL);
    CHECK(fedc_device_name(1000) == NULL);
    CHECK(fedc__device_find("cpu") == &fedc__device_cpu);
    CHECK(fedc__device_find("cpu-reference") == &fedc__device_cpu_reference);
    CHECK(fedc__device_find("CPU") == NULL && fedc__device_find("") == NULL);
    CHECK(fedc__device_cpu.kernels == &fedc__kernels_fast);
    CHECK(fedc__device_cpu_reference.kernels == &fedc__kernels_ref);
    CHECK(fedc__device_cpu.buffers->host && fedc__device_cpu_reference.buffers->host);
}

/* Every node of both programs, bodies included, runs on both CPU devices; a node
 * whose op is past the table runs on neither. */
static void check_supports_all(const fedc__device *d, const fedc_program *p, int *asked) {
    for (int v = 0; v < p->n; v++) {
        CHECK_MSG(d->supports_op(d, p, &p->nodes[v]), "%s refuses %%%d (%s)", d->name, v,
                  fedc__ops[p->nodes[v].op].name);
        ++*asked;
        if (fedc__op_has_body(p->nodes[v].op)) check_supports_all(d, fedc__body(p, &p->nodes[v]), asked);
    }
}

static void test_supports_op(void) {
    const fedc__device *cpus[] = {&fedc__device_cpu, &fedc__device_cpu_reference};
    const char *texts[] = {MAP_PROGRAM, FOLD_PROGRAM};
    for (int t = 0; t < 2; t++) {
        fedc_program *p = parsed(texts[t]);
        if (!p) continue;
        for (int d = 0; d < 2; d++) {
            int asked = 0;
            check_supports_all(cpus[d], p, &asked);
            CHECK_EQ_INT(asked, t == 0 ? 6 + 4 : 6 + 5);
            fedc__node beyond = p->nodes[0];
            beyond.op = FEDC_OP_COUNT;
            CHECK(!cpus[d]->supports_op(cpus[d], p, &beyond));
            CHECK_OK(fedc__device_check(cpus[d], p));
        }
        fedc_program_destroy(p);
    }
}

/* ------------------------------------------------------------------ bits -- */

/* "cpu" is the fast kernels and "cpu-reference" the reference ones, in the map's
 * body too, on any number of threads: the bits of the kernels called directly, and
 * of reference_kernels (false, true) as before devices. */
static void test_map_bits(void) {
    static float want_fast[CLIENTS * M * N], want_ref[CLIENTS * M * N];
    static float y[CLIENTS * M * N], mean[M * N], alias_y[CLIENTS * M * N], alias_mean[M * N];
    map_by_kernels(&fedc__kernels_fast, want_fast);
    map_by_kernels(&fedc__kernels_ref, want_ref);
    CHECK_MSG(!same_bits(want_fast, want_ref, CLIENTS * M * N), "the two kernel tables agree here: no test");
    for (int threads = 0; threads <= 2; threads += 2) {
        const char *names[] = {"cpu", "cpu-reference", NULL};
        for (int d = 0; d < 3; d++) {
            fedc_exec_options o = {.clients = CLIENTS, .threads = threads, .device = names[d]};
            fedc_exec_options alias = {.clients = CLIENTS, .threads = threads, .reference_kernels = d == 1};
            if (!run_map(&o, y, mean) || !run_map(&alias, alias_y, alias_mean)) continue;
            CHECK_MSG(same_bits(y, d == 1 ? want_ref : want_fast, CLIENTS * M * N), "device %s, %d threads: not "
                      "its kernels' bits", names[d] ? names[d] : "(default)", threads);
            CHECK_MSG(same_bits(y, alias_y, CLIENTS * M * N) && same_bits(mean, alias_mean, M * N),
                      "device %s, %d threads: not reference_kernels=%d's bits", names[d] ? names[d] : "(default)",
                      threads, d == 1);
        }
    }
}

/* A fold's body runs on its executor's device: "cpu-reference" gives
 * reference_kernels' bits, "cpu" the default's. */
static void test_fold_bits(void) {
    float c[2][N], ys[2][STEPS * N], alias_c[N], alias_ys[STEPS * N];
    const char *names[] = {"cpu", "cpu-reference"};
    for (int d = 0; d < 2; d++) {
        fedc_exec_options o = {.device = names[d]}, alias = {.reference_kernels = d == 1};
        if (!run_fold(&o, c[d], ys[d]) || !run_fold(&alias, alias_c, alias_ys)) return;
        CHECK_MSG(same_bits(c[d], alias_c, N) && same_bits(ys[d], alias_ys, STEPS * N), "device %s: not "
                  "reference_kernels=%d's bits", names[d], d);
    }
    for (int i = 0; i < STEPS * N; i++) CHECK_NEAR(ys[0][i], ys[1][i], 1e-5); /* the same gelu, either way */
}

/* ---------------------------------------------------------------- errors -- */

static void test_unknown_name(void) {
    fedc_program *p = parsed(FOLD_PROGRAM);
    if (!p) return;
    fedc_executor *ex = NULL;
    CHECK_ERR(fedc_executor_create(&ex, p, &(fedc_exec_options){.device = "gpu"}), FEDC_EINVAL,
              "executor: no device \"gpu\"; the devices are cpu, cpu-reference");
    CHECK(ex == NULL);
    CHECK_ERR(fedc_executor_create(&ex, p, &(fedc_exec_options){.device = ""}), FEDC_EINVAL, "no device \"\"");
    CHECK_ERR(fedc_executor_create(&ex, p, &(fedc_exec_options){.device = "cpu", .reference_kernels = true}),
              FEDC_EINVAL, "reference_kernels asks for the device \"cpu-reference\", but device is \"cpu\"");
    CHECK_OK(fedc_executor_create(&ex, p, &(fedc_exec_options){.device = "cpu-reference", .reference_kernels = true}));
    fedc_executor_destroy(ex);
    fedc_program_destroy(p);
}

/* A test device: the fast kernels, refusing one op, counting its allocations and
 * synchronisations (maps' bodies run on worker threads: atomics). */
static fedc__op refused = FEDC_OP_GELU;
static atomic_int allocations, frees, syncs;

static void *counted_alloc(size_t bytes) {
    atomic_fetch_add(&allocations, 1);
    return fedc_malloc(bytes);
}
static void counted_free(void *memory) {
    if (memory) atomic_fetch_add(&frees, 1);
    fedc_free(memory);
}
static const fedc__buffer_type counted_host = {.name = "counted", .host = true, .alloc = counted_alloc,
                                               .free = counted_free};

static bool refuses_one(const fedc__device *d, const fedc_program *p, const fedc__node *n) {
    return n->op != refused && fedc__device_cpu.supports_op(d, p, n);
}
static fedc_status counted_sync(const fedc__device *d) {
    atomic_fetch_add(&syncs, 1);
    return fedc__device_cpu.synchronize(d);
}

static fedc_status cpu_init(const fedc__device *d) { return fedc__device_cpu.init(d); }

static const fedc__device picky = {.name = "cpu-picky", .kernels = &fedc__kernels_fast, .buffers = &counted_host,
                                   .supports_op = refuses_one, .init = cpu_init, .synchronize = counted_sync};

static bool register_picky(void) {
    if (fedc__device_find("cpu-picky")) return true;
    fedc_status st = fedc__device_register(&picky);
    CHECK_OK(st);
    return !st;
}

static void test_refusing_device(void) {
    if (!register_picky()) return;
    CHECK(fedc_device_name(2) && strcmp(fedc_device_name(2), "cpu-picky") == 0);
    fedc_program *fold = parsed(FOLD_PROGRAM), *map = parsed(MAP_PROGRAM);
    fedc_executor *ex = NULL;
    atomic_store(&allocations, 0);
    refused = FEDC_OP_GELU;
    if (fold)
        CHECK_ERR(fedc_executor_create(&ex, fold, &(fedc_exec_options){.device = "cpu-picky"}), FEDC_EUNSUPPORTED,
                  "executor: device \"cpu-picky\" does not support %2 (gelu) in the body of %3 (fold); choose "
                  "another device");
    CHECK(ex == NULL);
    refused = FEDC_OP_MATMUL;
    if (map)
        CHECK_ERR(fedc_executor_create(&ex, map, &(fedc_exec_options){.clients = CLIENTS, .device = "cpu-picky"}),
                  FEDC_EUNSUPPORTED, "device \"cpu-picky\" does not support %2 (matmul) in the body of %3 (map)");
    refused = FEDC_OP_MEAN;
    if (map)
        CHECK_ERR(fedc_executor_create(&ex, map, &(fedc_exec_options){.clients = CLIENTS, .device = "cpu-picky"}),
                  FEDC_EUNSUPPORTED, "device \"cpu-picky\" does not support %5 (mean); choose");
    CHECK(ex == NULL && atomic_load(&allocations) == 0); /* refused before any planning */
    fedc_program_destroy(fold);
    fedc_program_destroy(map);
}

/* A device the executor accepts runs the program with its kernels, allocates the
 * plan (every executor's, the bodies' too) through its buffer type and is
 * synchronised after every run. */
static void test_device_hooks(void) {
    if (!register_picky()) return;
    refused = FEDC_OP_GELU; /* the map program has none */
    static float y[CLIENTS * M * N], mean[M * N], want[CLIENTS * M * N];
    map_by_kernels(&fedc__kernels_fast, want);
    atomic_store(&allocations, 0), atomic_store(&frees, 0), atomic_store(&syncs, 0);
    fedc_exec_options o = {.clients = CLIENTS, .threads = 2, .device = "cpu-picky"};
    if (!run_map(&o, y, mean)) return;
    CHECK(same_bits(y, want, CLIENTS * M * N));
    /* the top executor's block and the two workers' body executors' blocks */
    CHECK_MSG(atomic_load(&allocations) >= 3, "%d allocations", atomic_load(&allocations));
    CHECK_EQ_INT(atomic_load(&frees), atomic_load(&allocations));
    /* one run of the top executor and one per client of the bodies' */
    CHECK_EQ_INT(atomic_load(&syncs), 1 + CLIENTS);
}

/* (static: a registered device stays listed for the rest of the process) */
static void test_register_errors(void) {
    fedc__device twin = fedc__device_cpu;
    CHECK_ERR(fedc__device_register(&twin), FEDC_EINVAL, "a device is named \"cpu\" already");
    static fedc__kernels holed;
    static fedc__device hole;
    if (fedc__device_find("cpu-holed")) return;
    holed = fedc__kernels_fast;
    holed.matmul = NULL;
    hole = fedc__device_cpu;
    hole.name = "cpu-holed", hole.kernels = &holed;
    CHECK_ERR(fedc__device_register(&hole), FEDC_EINVAL, "device \"cpu-holed\" has no kernel matmul");
    holed = fedc__kernels_fast;
    holed.conv2d_bias_relu = NULL; /* optional: the executor runs the chain unfused */
    CHECK_OK(fedc__device_register(&hole));
    fedc__device nameless = fedc__device_cpu;
    nameless.name = "";
    CHECK_ERR(fedc__device_register(&nameless), FEDC_EINVAL, "lacks a name");
    CHECK(fedc__device_find("cpu-holed") == &hole);
}

/* Memory that is not the host's: the executor cannot bind arrays in it yet. */
static void test_off_host_memory(void) {
    static fedc__buffer_type device_memory;
    static fedc__device remote;
    if (!fedc__device_find("remote")) {
        device_memory = fedc__buffer_host;
        device_memory.name = "remote memory", device_memory.host = false;
        remote = fedc__device_cpu;
        remote.name = "remote", remote.buffers = &device_memory;
        CHECK_OK(fedc__device_register(&remote));
    }
    fedc_program *p = parsed(FOLD_PROGRAM);
    fedc_executor *ex = NULL;
    if (p)
        CHECK_ERR(fedc_executor_create(&ex, p, &(fedc_exec_options){.device = "remote"}), FEDC_EUNSUPPORTED,
                  "device \"remote\" keeps its buffers (remote memory) off the host");
    fedc_program_destroy(p);
}

int main(int argc, char **argv) {
    make_data();
    static const fedc_test tests[] = {
        {"list", test_list},
        {"supports_op", test_supports_op},
        {"map_bits", test_map_bits},
        {"fold_bits", test_fold_bits},
        {"unknown_name", test_unknown_name},
        {"refusing_device", test_refusing_device},
        {"device_hooks", test_device_hooks},
        {"register_errors", test_register_errors},
        {"off_host_memory", test_off_host_memory},
    };
    return fedc_test_main(argc, argv, tests, FEDC_COUNT_OF(tests));
}
