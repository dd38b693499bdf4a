/*
 * Other projects' test suites as tests: ONNX's node tests (Debian's
 * libonnx-testdata, ONNX 1.12) run as fedc programs.
 *
 * Each node test is a directory with model.onnx (one node: the op and its
 * attributes) and test_data_set_0/{input,output}_N.pb (TensorProto files, inputs
 * and the reference outputs that ONNX computed with numpy). For every test of an
 * ONNX op type that has a fedc counterpart (tests/onnx_cases*.c), the test builds
 * the fedc program, runs it with the reference kernels and with the fast ones,
 * and compares each output with ONNX's, within float tolerance. Tests fedc cannot
 * run are listed below with the reason, and printed; a test of a counterpart op
 * that is neither run nor listed fails, so nothing is left out silently. The
 * "_expanded" tests (the same data through a function body of several nodes)
 * and tests of ops without a counterpart are counted, not run.
 *
 * Without libonnx-testdata (scripts/install-deps installs it), the node tests are
 * skipped (ctest: Not Run); the reader's own tests (malformed input) always run.
 * FEDC_ONNX_NODE_DIR overrides where the node tests are looked for.
 */
#include <dirent.h>
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fedc/exec.h"
#include "harness.h"
#include "onnx_case.h"
#include "onnx_tensor.h"

/* ------------------------------------------- tests fedc cannot run, why -- */

static const struct {
    const char *pattern; /* fnmatch(3) pattern over test names */
    const char *reason;
} NOT_APPLICABLE[] = {
    {"test_m[ai][xn]_float16", "fedc has no float16"},
    {"test_m[ai][xn]_int8", "fedc has no int8"},
    {"test_m[ai][xn]_int16", "fedc has no int16"},
    {"test_m[ai][xn]_uint16", "fedc has no uint16"},
    {"test_m[ai][xn]_uint32", "fedc has no uint32"},
    {"test_m[ai][xn]_uint64", "fedc has no uint64"},
    {"test_m[ai][xn]_uint8", "fedc's arithmetic is on f32, f64 and i32 (u8 is storage)"},
    {"test_add_uint8", "fedc's arithmetic is on f32, f64 and i32 (u8 is storage)"},
    {"test_sub_uint8", "fedc's arithmetic is on f32, f64 and i32 (u8 is storage)"},
    {"test_mul_uint8", "fedc's arithmetic is on f32, f64 and i32 (u8 is storage)"},
    {"test_div_uint8", "fedc's division is on floats"},
    {"test_pow", "the exponent is an array: fedc's pow has one constant exponent"},
    {"test_pow_example", "the exponent is an array: fedc's pow has one constant exponent"},
    {"test_pow_bcast_array", "the exponent is an array: fedc's pow has one constant exponent"},
    {"test_pow_types_*", "mixed dtypes and array exponents: fedc's pow has one constant exponent, no promotion"},
    {"test_cast*_*FLOAT16*", "fedc has no float16 or bfloat16"},
    {"test_cast*_*STRING*", "fedc has no strings"},
    {"test_argmax_*_example_select_last_index", "ties, and fedc's argmax takes the first maximum"},
    {"test_slice_neg_steps", "fedc's slice has unit steps"},
    {"test_edge_pad", "fedc pads with zeros (constant mode only)"},
    {"test_reflect_pad", "fedc pads with zeros (constant mode only)"},
    {"test_scatternd", "ScatterND replaces; fedc's scatter adds"},
    {"test_scatternd_multiply", "ScatterND multiplies; fedc's scatter adds"},
    {"test_convtranspose_1d", "fedc's convolutions are 2-D"},
    {"test_convtranspose_3d", "fedc's convolutions are 2-D"},
    {"test_convtranspose_dilations", "fedc's convolutions have no dilations"},
    {"test_maxpool_3d_default", "fedc's pools are 2-D"},
    {"test_averagepool_3d_default", "fedc's pools are 2-D"},
    {"test_maxpool_2d_dilations", "fedc's pools have no dilations"},
    {"test_maxpool_2d_uint8", "fedc pools floats"},
    {"test_training_dropout", "random masks from numpy's generator (fedc's streams are Philox)"},
    {"test_training_dropout_default", "random masks from numpy's generator (fedc's streams are Philox)"},
    {"test_training_dropout_default_mask", "random masks from numpy's generator (fedc's streams are Philox)"},
    {"test_training_dropout_mask", "random masks from numpy's generator (fedc's streams are Philox)"},
    {"test_lstm_with_peepholes", "peepholes (fedc's LSTM cell, Haiku's, has none)"},
};

static const char *not_applicable(const char *test, bool *used) {
    for (int i = 0; i < FEDC_COUNT_OF(NOT_APPLICABLE); i++)
        if (!fnmatch(NOT_APPLICABLE[i].pattern, test, 0)) {
            used[i] = true;
            return NOT_APPLICABLE[i].reason;
        }
    return NULL;
}

/* -------------------------------------------------- running one case -- */

static double element(const void *data, fedc_dtype dt, int64_t i) {
    switch (dt) {
    case FEDC_F32: return ((const float *)data)[i];
    case FEDC_F64: return ((const double *)data)[i];
    case FEDC_I32: return ((const int32_t *)data)[i];
    default: return ((const uint8_t *)data)[i];
    }
}

static fedc_dtype fedc_dtype_for(int onnx_dt) {
    switch (onnx_dt) {
    case ONNX_FLOAT: return FEDC_F32;
    case ONNX_DOUBLE: return FEDC_F64;
    case ONNX_INT32: case ONNX_INT64: return FEDC_I32;
    case ONNX_UINT8: return FEDC_U8;
    case ONNX_BOOL: return FEDC_BOOL;
    default: return FEDC_DTYPE_COUNT;
    }
}

/* One output against ONNX's: dtype, shape, then every value. */
static void compare(const onnx_case *c, const onnx_expected *e, const void *got, const fedc_type *t, const char *kernels) {
    const onnx_tensor *w = &e->want;
    char buf[64];
    bool same = t->rank == w->rank && t->dtype == fedc_dtype_for(w->data_type);
    for (int i = 0; same && i < t->rank; i++) same = t->dims[i] == w->dims[i];
    if (!same) {
        CHECK_MSG(false, "%s (%s kernels): output %s is %s; ONNX's has rank %d, data_type %d", c->test, kernels, w->name,
                  fedc_type_str(t, buf, sizeof buf), w->rank, w->data_type);
        return;
    }
    bool exact = !fedc_dtype_is_float(t->dtype);
    int bad = 0;
    for (int64_t i = 0; i < w->count && bad < 3; i++) {
        double a = element(got, t->dtype, i), b = w->data[i];
        bool ok = exact ? a == b : fabs(a - b) <= c->atol + c->rtol * fabs(b) || (isnan(a) && isnan(b));
        if (!ok) {
            bad++;
            CHECK_MSG(false, "%s (%s kernels): output %s[%lld] = %.9g, ONNX %.9g", c->test, kernels, w->name, (long long)i, a, b);
        }
    }
}

static void run_with(const onnx_case *c, bool reference) {
    const char *kernels = reference ? "reference" : "fast";
    fedc_exec_options o = {.reference_kernels = reference};
    fedc_executor *ex = NULL;
    fedc_status st = fedc_executor_create(&ex, c->p, &o);
    for (int i = 0; !st && i < c->nbinds; i++) st = fedc_executor_bind(ex, c->bind_name[i], c->bind_data[i]);
    if (!st) st = fedc_executor_run(ex);
    CHECK_MSG(!st, "%s (%s kernels): %s", c->test, kernels, fedc_errmsg());
    for (int k = 0; !st && k < c->nexpect; k++) {
        char name[16];
        snprintf(name, sizeof name, "out%d", k);
        const void *data;
        fedc_type t;
        CHECK_OK(fedc_executor_output(ex, name, &data, &t));
        compare(c, &c->expect[k], data, &t, kernels);
    }
    fedc_executor_destroy(ex);
}

static void case_free(onnx_case *c) {
    for (int i = 0; i < c->nbinds; i++) free(c->bind_data[i]);
    for (int i = 0; i < c->nexpect; i++) onnx_tensor_free(&c->expect[i].want);
    fedc_program_destroy(c->p);
}

/* The test data: input_k.pb is the graph's input k, output_k.pb its output k;
 * the node's inputs and outputs name them (or are "" when left out). */
typedef struct test_data {
    onnx_tensor in[ONNX_MAX_IO], out[ONNX_MAX_IO];
    int nin, nout;
} test_data;

static bool load_data(const char *dir, const onnx_model *m, test_data *d) {
    char path[1100], err[512];
    memset(d, 0, sizeof *d);
    for (int k = 0; k < m->ninputs + m->noutputs; k++) {
        bool input = k < m->ninputs;
        int i = input ? k : k - m->ninputs;
        snprintf(path, sizeof path, "%s/test_data_set_0/%s_%d.pb", dir, input ? "input" : "output", i);
        onnx_tensor *t = input ? &d->in[i] : &d->out[i];
        if (onnx_tensor_read(path, t, err, sizeof err)) {
            CHECK_MSG(false, "%s", err);
            return false;
        }
        if (input) d->nin++;
        else d->nout++;
    }
    return true;
}

static void free_data(test_data *d) {
    for (int i = 0; i < d->nin; i++) onnx_tensor_free(&d->in[i]);
    for (int i = 0; i < d->nout; i++) onnx_tensor_free(&d->out[i]);
}

static const onnx_tensor *by_name(const char *name, const char (*names)[ONNX_NAME], int n, const onnx_tensor *ts) {
    if (!name[0]) return NULL;
    for (int i = 0; i < n; i++)
        if (!strcmp(names[i], name)) return &ts[i];
    return NULL;
}

/* Runs one node test; false if fedc cannot (c->unsupported says why). */
static bool run_case(const char *test, const onnx_model *m, test_data *d, onnx_build_fn build, char *why,
                     size_t whysize) {
    bool ran = false;
    onnx_case c = {.test = test, .model = m, .node = &m->node, .rtol = 1e-4, .atol = 1e-5};
    for (int k = 0; k < m->node.ninputs; k++) c.in[k] = by_name(m->node.inputs[k], m->inputs, d->nin, d->in);
    for (int k = 0; k < m->node.noutputs; k++) c.out[k] = by_name(m->node.outputs[k], m->outputs, d->nout, d->out);
    if (fedc_program_create(&c.p) == FEDC_OK) {
        build(&c);
        for (int k = 0; k < c.nexpect; k++) {
            char name[16];
            snprintf(name, sizeof name, "out%d", k);
            fedc_program_output(c.p, name, c.expect[k].v);
        }
        if (c.unsupported[0]) {
            snprintf(why, whysize, "%s", c.unsupported);
        } else {
            ran = true;
            CHECK_MSG(!c.failed, "%s: the test data is not what the builder expects", test);
            CHECK_MSG(c.nexpect > 0, "%s: nothing to compare", test);
            CHECK_MSG(!fedc_program_status(c.p), "%s: building the program: %s", test, fedc_errmsg());
            if (!c.failed && c.nexpect && !fedc_program_status(c.p)) {
                run_with(&c, true);
                run_with(&c, false);
            }
            if (c.note[0] && getenv("FEDC_ONNX_VERBOSE")) printf("  %s: %s\n", test, c.note);
        }
    }
    case_free(&c);
    return ran;
}

/* ------------------------------------------------------ the node tests -- */

static const char *node_dir(void) {
    static const char *const dirs[] = {"/usr/share/libonnx-testdata/data/node", "/usr/include/onnx/backend/test/data/node"};
    const char *env = getenv("FEDC_ONNX_NODE_DIR");
    struct stat s;
    if (env && *env) return stat(env, &s) == 0 && S_ISDIR(s.st_mode) ? env : NULL;
    for (int i = 0; i < FEDC_COUNT_OF(dirs); i++)
        if (stat(dirs[i], &s) == 0 && S_ISDIR(s.st_mode)) return dirs[i];
    return NULL;
}

static int by_string(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* The test directories' names, sorted (so the output is the same every run). */
static int list_tests(const char *root, char ***out) {
    DIR *d = opendir(root);
    int n = 0, cap = 0;
    char **names = NULL;
    struct dirent *e;
    while (d && (e = readdir(d))) {
        if (strncmp(e->d_name, "test_", 5)) continue;
        if (n == cap) {
            char **grown = realloc(names, (size_t)(cap = cap ? 2 * cap : 1024) * sizeof *names);
            if (!grown) break;
            names = grown;
        }
        if (!(names[n] = strdup(e->d_name))) break;
        n++;
    }
    if (d) closedir(d);
    if (n) qsort(names, (size_t)n, sizeof *names, by_string);
    *out = names;
    return n;
}

typedef struct tally {
    int checked, not_applicable, expanded, no_counterpart, unexplained;
} tally;

static void one_test(const char *root, const char *test, bool *used, tally *t) {
    char dir[1024], path[1100], err[512], why[160] = "";
    snprintf(dir, sizeof dir, "%s/%s", root, test);
    size_t len = strlen(test);
    if (len > 9 && !strcmp(test + len - 9, "_expanded")) { /* the same data as the test without the suffix */
        t->expanded++;
        return;
    }
    onnx_model m;
    snprintf(path, sizeof path, "%s/model.onnx", dir);
    if (onnx_model_read(path, &m, err, sizeof err)) {
        CHECK_MSG(false, "%s", err);
        return;
    }
    onnx_build_fn build = m.nnodes == 1 ? onnx_builder(m.node.op_type) : NULL;
    if (!build) {
        t->no_counterpart++;
        return;
    }
    const char *reason = not_applicable(test, used);
    if (reason) {
        printf("  not applicable: %-52s %s\n", test, reason);
        t->not_applicable++;
        return;
    }
    test_data d;
    bool ran = load_data(dir, &m, &d) && run_case(test, &m, &d, build, why, sizeof why);
    bool loaded = d.nin == m.ninputs && d.nout == m.noutputs; /* else load_data has failed the test */
    free_data(&d);
    if (ran) {
        t->checked++;
    } else if (loaded) {
        CHECK_MSG(false, "%s (%s): fedc cannot run it (%s), and it is not in the not-applicable table", test,
                  m.node.op_type, why);
        t->unexplained++;
    }
}

static void test_node_tests(void) {
    const char *root = node_dir();
    if (!root) {
        fedc_test_skip("ONNX's node tests are not installed (apt-get install libonnx-testdata)");
        return;
    }
    char **names;
    int n = list_tests(root, &names);
    if (n == 0) {
        fedc_test_skip("no node tests under %s", root);
        free(names);
        return;
    }
    bool used[FEDC_COUNT_OF(NOT_APPLICABLE)] = {false};
    tally t = {0};
    for (int i = 0; i < n; i++) {
        one_test(root, names[i], used, &t);
        free(names[i]);
    }
    free(names);
    for (int i = 0; i < FEDC_COUNT_OF(NOT_APPLICABLE); i++)
        CHECK_MSG(used[i], "the not-applicable entry %s matches no test of an op fedc has", NOT_APPLICABLE[i].pattern);
    printf("ONNX node tests under %s: %d checked (reference and fast kernels), %d not applicable (above),\n"
           "  %d '_expanded' copies, %d of ops without a fedc counterpart, %d unexplained\n",
           root, t.checked, t.not_applicable, t.expanded, t.no_counterpart, t.unexplained);
    CHECK(t.checked > 0);
}

/* ------------------------------------------------ LSTM's gate order -- */

/* ONNX's node tests give the LSTM the same weight everywhere, so they cannot
 * tell the gates apart. This test does: random weights and biases, and ONNX's
 * equations (the operator's definition: gate blocks i, o, f, c in W [4H, I] and
 * R [4H, H], B = [Wb, Rb], zero initial state) computed here in double, against
 * the LSTM builder of onnx_cases_nn.c, in both layouts and with all three outputs. */
enum { LT = 5, LB = 2, LI = 3, LH = 4 };

static double sigmoid(double v) { return 1 / (1 + exp(-v)); }

/* y [T, B, H] (every h), c_last [B, H]. */
static void onnx_lstm_reference(const double *x, const double *w, const double *r, const double *b, double *y,
                                double *c_last) {
    double h[LB * LH] = {0}, c[LB * LH] = {0}, hn[LB * LH];
    for (int t = 0; t < LT; t++) {
        for (int n = 0; n < LB; n++)
            for (int j = 0; j < LH; j++) {
                double a[4];
                for (int g = 0; g < 4; g++) {
                    int row = g * LH + j;
                    a[g] = b[row] + b[4 * LH + row];
                    for (int k = 0; k < LI; k++) a[g] += x[(t * LB + n) * LI + k] * w[row * LI + k];
                    for (int k = 0; k < LH; k++) a[g] += h[n * LH + k] * r[row * LH + k];
                }
                double i = sigmoid(a[0]), o = sigmoid(a[1]), f = sigmoid(a[2]), cc = tanh(a[3]);
                c[n * LH + j] = f * c[n * LH + j] + i * cc;
                hn[n * LH + j] = o * tanh(c[n * LH + j]);
            }
        memcpy(h, hn, sizeof h);
        memcpy(y + t * LB * LH, h, sizeof h);
    }
    memcpy(c_last, c, sizeof c);
}

static onnx_tensor make_tensor(const char *name, int rank, const int64_t *dims) {
    onnx_tensor t = {.data_type = ONNX_FLOAT, .rank = rank, .count = 1};
    snprintf(t.name, sizeof t.name, "%s", name);
    for (int i = 0; i < rank; i++) t.dims[i] = dims[i], t.count *= dims[i];
    t.data = calloc((size_t)t.count, sizeof *t.data);
    return t;
}

/* A one-node model whose graph inputs and outputs are the node's, in order
 * (names separated by spaces). */
static void one_node_model(onnx_model *m, const char *op, const char *ins, const char *outs) {
    memset(m, 0, sizeof *m);
    m->opset = 14, m->nnodes = 1;
    snprintf(m->node.op_type, sizeof m->node.op_type, "%s", op);
    for (int io = 0; io < 2; io++) {
        const char *names = io ? outs : ins;
        int *n = io ? &m->noutputs : &m->ninputs;
        while (*names) {
            int len = (int)strcspn(names, " ");
            char *graph = io ? m->outputs[*n] : m->inputs[*n], *node = io ? m->node.outputs[*n] : m->node.inputs[*n];
            snprintf(graph, ONNX_NAME, "%.*s", len, names);
            snprintf(node, ONNX_NAME, "%.*s", len, names);
            ++*n;
            names += len + (names[len] == ' ');
        }
    }
    m->node.ninputs = m->ninputs, m->node.noutputs = m->noutputs;
}

static void add_attr(onnx_model *m, const char *name, int n, const int64_t *ints) {
    onnx_attr *a = &m->node.attrs[m->node.nattrs++];
    *a = (onnx_attr){.type = n ? ONNX_ATTR_INTS : ONNX_ATTR_INT, .n = n, .i = n ? 0 : ints[0]};
    snprintf(a->name, sizeof a->name, "%s", name);
    memcpy(a->ints, ints, (size_t)n * sizeof *ints);
}

static void test_lstm_gate_order(void) {
    onnx_build_fn build = onnx_builder("LSTM");
    fedc_test_seed(16);
    for (int layout = 0; layout < 2; layout++) {
        onnx_model m;
        one_node_model(&m, "LSTM", "X W R B", "Y Y_h Y_c");
        add_attr(&m, "hidden_size", 0, (int64_t[]){LH});
        add_attr(&m, "layout", 0, (int64_t[]){layout});
        test_data d = {.nin = 4, .nout = 3};
        int64_t xd[3] = {LT, LB, LI}, xb[3] = {LB, LT, LI}, wd[3] = {1, 4 * LH, LI}, rd[3] = {1, 4 * LH, LH};
        int64_t bd[2] = {1, 8 * LH}, yd[4] = {LT, 1, LB, LH}, yb[4] = {LB, LT, 1, LH}, hd[3] = {1, LB, LH}, hb[3] = {LB, 1, LH};
        d.in[0] = make_tensor("X", 3, layout ? xb : xd);
        d.in[1] = make_tensor("W", 3, wd);
        d.in[2] = make_tensor("R", 3, rd);
        d.in[3] = make_tensor("B", 2, bd);
        d.out[0] = make_tensor("Y", 4, layout ? yb : yd);
        d.out[1] = make_tensor("Y_h", 3, layout ? hb : hd);
        d.out[2] = make_tensor("Y_c", 3, layout ? hb : hd);
        double x[LT * LB * LI], y[LT * LB * LH], c_last[LB * LH];
        for (int i = 1; i < 4; i++)
            for (int64_t k = 0; k < d.in[i].count; k++) d.in[i].data[k] = fedc_test_uniform(-1, 1);
        for (int i = 0; i < LT * LB * LI; i++) x[i] = fedc_test_uniform(-2, 2);
        onnx_lstm_reference(x, d.in[1].data, d.in[2].data, d.in[3].data, y, c_last);
        for (int t = 0; t < LT; t++) /* [T, B, .] in the layout's order: [B, T, .] when batch first */
            for (int n = 0; n < LB; n++) {
                int at = layout ? n * LT + t : t * LB + n;
                memcpy(d.in[0].data + at * LI, x + (t * LB + n) * LI, LI * sizeof *x);
                memcpy(d.out[0].data + at * LH, y + (t * LB + n) * LH, LH * sizeof *y);
            }
        memcpy(d.out[1].data, y + (LT - 1) * LB * LH, sizeof c_last); /* [1, B, H] and [B, 1, H] alike */
        memcpy(d.out[2].data, c_last, sizeof c_last);
        char why[160] = "";
        CHECK_MSG(run_case(layout ? "lstm random weights, batch first" : "lstm random weights", &m, &d, build, why,
                           sizeof why), "%s", why);
        free_data(&d);
    }
}

/* ------------------------------------- convolutions' layouts, likewise -- */

/* ONNX's Conv and ConvTranspose tests use one channel and filters of ones, so
 * they cannot tell a filter's axes apart either. These run the builders on random
 * multi-channel data, strides and asymmetric pads, with a bias, against the
 * operators' definitions written out here:
 *     Conv           y[n,o,i,j] = B[o] + sum x[n,c, i s_h - t + a, j s_w - l + b] W[o,c,a,b]
 *     ConvTranspose  y[n,o, i s_h - t + a, j s_w - l + b] += x[n,c,i,j] W[c,o,a,b], + B[o] */
enum { CN = 2, CI = 3, CO = 4, KH = 3, KW = 2 };

static double at4(const onnx_tensor *t, int64_t a, int64_t b, int64_t c, int64_t d) {
    return t->data[((a * t->dims[1] + b) * t->dims[2] + c) * t->dims[3] + d];
}

/* A Conv or ConvTranspose node "x W B -> y" and its random inputs (y zeroed). */
static void conv_setup(onnx_model *m, test_data *d, const char *op, const int64_t strides[2], const int64_t pads[4],
                       const int64_t x[4], const int64_t w[4], int64_t bias, const int64_t y[4]) {
    one_node_model(m, op, "x W B", "y");
    add_attr(m, "strides", 2, strides);
    add_attr(m, "pads", 4, pads);
    *d = (test_data){.nin = 3, .nout = 1};
    d->in[0] = make_tensor("x", 4, x);
    d->in[1] = make_tensor("W", 4, w);
    d->in[2] = make_tensor("B", 1, &bias);
    d->out[0] = make_tensor("y", 4, y);
    for (int i = 0; i < d->nin; i++)
        for (int64_t k = 0; k < d->in[i].count; k++) d->in[i].data[k] = fedc_test_uniform(-1, 1);
}

static void check_builder(const char *name, const onnx_model *m, test_data *d) {
    char why[160] = "";
    CHECK_MSG(run_case(name, m, d, onnx_builder(m->node.op_type), why, sizeof why), "%s: %s", name, why);
    free_data(d);
}

static void test_conv_layouts(void) {
    const int64_t strides[2] = {2, 1}, pads[4] = {1, 0, 2, 1}; /* ONNX's order: top, left, bottom, right */
    int64_t h = 7, w = 6, oh = (h + 1 + 2 - KH) / 2 + 1, ow = (w + 0 + 1 - KW) / 1 + 1;
    onnx_model m;
    test_data d;
    fedc_test_seed(17);
    conv_setup(&m, &d, "Conv", strides, pads, (int64_t[]){CN, CI, h, w}, (int64_t[]){CO, CI, KH, KW}, CO,
               (int64_t[]){CN, CO, oh, ow});
    double *y = d.out[0].data;
    for (int64_t n = 0; n < CN; n++)
        for (int64_t o = 0; o < CO; o++)
            for (int64_t i = 0; i < oh; i++)
                for (int64_t j = 0; j < ow; j++, y++) {
                    *y = d.in[2].data[o];
                    for (int64_t c = 0; c < CI; c++)
                        for (int64_t a = 0; a < KH; a++)
                            for (int64_t b = 0; b < KW; b++) {
                                int64_t r = i * strides[0] - pads[0] + a, q = j * strides[1] - pads[1] + b;
                                if (r >= 0 && r < h && q >= 0 && q < w) *y += at4(&d.in[0], n, c, r, q) * at4(&d.in[1], o, c, a, b);
                            }
                }
    check_builder("conv random weights", &m, &d);
}

static void test_convtranspose_layouts(void) {
    const int64_t strides[2] = {2, 3}, pads[4] = {1, 2, 0, 1}, out_pad[2] = {1, 0}; /* top, left, bottom, right */
    int64_t h = 3, w = 4, full_h = 2 * (h - 1) + 1 + KH, full_w = 3 * (w - 1) + KW;
    int64_t oh = full_h - pads[0] - pads[2], ow = full_w - pads[1] - pads[3], co = 2;
    onnx_model m;
    test_data d;
    fedc_test_seed(18);
    conv_setup(&m, &d, "ConvTranspose", strides, pads, (int64_t[]){CN, CI, h, w}, (int64_t[]){CI, co, KH, KW}, co,
               (int64_t[]){CN, co, oh, ow});
    add_attr(&m, "output_padding", 2, out_pad);
    double *y = d.out[0].data;
    for (int64_t k = 0; k < d.out[0].count; k++) y[k] = d.in[2].data[(k / (oh * ow)) % co];
    for (int64_t n = 0; n < CN; n++)
        for (int64_t c = 0; c < CI; c++)
            for (int64_t i = 0; i < h; i++)
                for (int64_t j = 0; j < w; j++)
                    for (int64_t o = 0; o < co; o++)
                        for (int64_t a = 0; a < KH; a++)
                            for (int64_t b = 0; b < KW; b++) {
                                int64_t r = i * strides[0] - pads[0] + a, q = j * strides[1] - pads[1] + b;
                                if (r >= 0 && r < oh && q >= 0 && q < ow)
                                    y[((n * co + o) * oh + r) * ow + q] += at4(&d.in[0], n, c, i, j) * at4(&d.in[1], c, o, a, b);
                            }
    check_builder("convtranspose random weights", &m, &d);
}

/* ------------------------------------------- the reader, bad input -- */

/* A TensorProto, name first so that every proper prefix lacks data: name "x",
 * dims 2, 3 (packed), data_type FLOAT, float_data 1..6 (packed). */
static size_t good_tensor(uint8_t *b) {
    size_t n = 0;
    b[n++] = 8 << 3 | 2, b[n++] = 1, b[n++] = 'x';
    b[n++] = 1 << 3 | 2, b[n++] = 2, b[n++] = 2, b[n++] = 3;
    b[n++] = 2 << 3 | 0, b[n++] = ONNX_FLOAT;
    b[n++] = 4 << 3 | 2, b[n++] = 24;
    for (int i = 1; i <= 6; i++) {
        float f = (float)i;
        memcpy(b + n, &f, 4);
        n += 4;
    }
    return n;
}

static int parse(const uint8_t *b, size_t n, onnx_tensor *t, char *err) {
    err[0] = 0;
    return onnx_tensor_parse(b, n, t, err, 256);
}

static void test_reader_good(void) {
    uint8_t b[64];
    size_t n = good_tensor(b);
    onnx_tensor t;
    char err[256];
    CHECK_EQ_INT(parse(b, n, &t, err), 0);
    CHECK(!strcmp(t.name, "x"));
    CHECK_EQ_INT(t.rank, 2);
    CHECK_EQ_INT(t.dims[1], 3);
    CHECK_EQ_INT(t.count, 6);
    for (int i = 0; t.data && i < 6; i++) CHECK_NEAR(t.data[i], i + 1, 0);
    onnx_tensor_free(&t);
    /* unpacked dims, INT32 in int32_data with a negative value (a 10-byte varint), an unknown field skipped */
    uint8_t u[] = {1 << 3, 2, 2 << 3, ONNX_INT32, 5 << 3, 0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01,
                   5 << 3, 7, 15 << 3, 42};
    CHECK_EQ_INT(parse(u, sizeof u, &t, err), 0);
    CHECK(t.data && t.data[0] == -2 && t.data[1] == 7);
    onnx_tensor_free(&t);
    /* raw_data: two little-endian int64, -1 and 258 */
    uint8_t r[] = {1 << 3, 2, 2 << 3, ONNX_INT64, 9 << 3 | 2, 16, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
                   2, 1, 0, 0, 0, 0, 0, 0};
    CHECK_EQ_INT(parse(r, sizeof r, &t, err), 0);
    CHECK(t.data && t.data[0] == -1 && t.data[1] == 258);
    onnx_tensor_free(&t);
}

static void expect_reject(const uint8_t *b, size_t n, const char *needle) {
    onnx_tensor t;
    char err[256];
    int st = parse(b, n, &t, err);
    CHECK_MSG(st == -1 && strstr(err, needle), "expected an error with \"%s\", got %d: %s", needle, st, err);
    CHECK(t.data == NULL);
}

static void test_reader_rejects(void) {
    uint8_t b[64];
    size_t n = good_tensor(b);
    for (size_t len = 0; len < n; len++) { /* every proper prefix */
        onnx_tensor t;
        char err[256];
        CHECK_MSG(parse(b, len, &t, err) == -1 && err[0], "a prefix of %zu bytes was accepted", len);
    }
    static const uint8_t overlong[] = {1 << 3, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01};
    expect_reject(overlong, sizeof overlong, "longer than 10 bytes");
    static const uint8_t overflow[] = {1 << 3, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x02};
    expect_reject(overflow, sizeof overflow, "overflows");
    static const uint8_t past_end[] = {8 << 3 | 2, 100, 'x'};
    expect_reject(past_end, sizeof past_end, "runs past the end");
    static const uint8_t huge_len[] = {9 << 3 | 2, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f};
    expect_reject(huge_len, sizeof huge_len, "runs past the end");
    static const uint8_t group[] = {3 << 3 | 3, 0};
    expect_reject(group, sizeof group, "wire type 3");
    static const uint8_t zero_field[] = {0 << 3, 1};
    expect_reject(zero_field, sizeof zero_field, "field number");
    static const uint8_t dims_fixed32[] = {1 << 3 | 5, 1, 0, 0, 0};
    expect_reject(dims_fixed32, sizeof dims_fixed32, "wire type 5");
    static const uint8_t fixed_cut[] = {4 << 3 | 5, 1, 0};
    expect_reject(fixed_cut, sizeof fixed_cut, "runs past the end");
    static const uint8_t negative_dim[] = {1 << 3, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 2 << 3, 1};
    expect_reject(negative_dim, sizeof negative_dim, "negative");
    static const uint8_t too_few[] = {1 << 3, 3, 2 << 3, ONNX_FLOAT, 4 << 3 | 5, 0, 0, 0x80, 0x3f};
    expect_reject(too_few, sizeof too_few, "1 values for dims holding 3");
    static const uint8_t ragged_raw[] = {1 << 3, 1, 2 << 3, ONNX_FLOAT, 9 << 3 | 2, 3, 0, 0, 0};
    expect_reject(ragged_raw, sizeof ragged_raw, "whole number");
    static const uint8_t ragged_packed[] = {1 << 3, 1, 2 << 3, ONNX_FLOAT, 4 << 3 | 2, 3, 0, 0, 0};
    expect_reject(ragged_packed, sizeof ragged_packed, "whole number");
    static const uint8_t both[] = {1 << 3, 1, 2 << 3, ONNX_FLOAT, 4 << 3 | 5, 0, 0, 0, 0, 9 << 3 | 2, 4, 0, 0, 0, 0};
    expect_reject(both, sizeof both, "both raw_data and typed");
    static const uint8_t wrong_field[] = {1 << 3, 1, 2 << 3, ONNX_INT64, 4 << 3 | 5, 0, 0, 0, 0};
    expect_reject(wrong_field, sizeof wrong_field, "other than int64_data");
    static const uint8_t strings[] = {2 << 3, ONNX_STRING, 6 << 3 | 2, 1, 'a'};
    expect_reject(strings, sizeof strings, "string");
    static const uint8_t no_type[] = {1 << 3, 1};
    expect_reject(no_type, sizeof no_type, "data_type 0");
    uint8_t deep[40];
    size_t k = 0;
    for (int i = 0; i < 9; i++) deep[k++] = 1 << 3, deep[k++] = 1;
    expect_reject(deep, k, "rank 9");
    static const uint8_t big[] = {1 << 3, 0x80, 0x80, 0x80, 0x80, 0x10, 1 << 3, 0x80, 0x80, 0x80, 0x80, 0x10};
    expect_reject(big, sizeof big, "2^30");
}

/* Random corruptions of a good message must be read or refused, never crash
 * (the ASan build of the suite is what makes this test bite). */
static void test_reader_corrupted(void) {
    uint8_t good[64], b[64];
    size_t n = good_tensor(good);
    fedc_test_seed(14);
    int refused = 0;
    for (int trial = 0; trial < 4000; trial++) {
        memcpy(b, good, n);
        int flips = 1 + (int)fedc_test_uniform(0, 3);
        for (int f = 0; f < flips; f++) b[(size_t)fedc_test_uniform(0, (double)n)] = (uint8_t)fedc_test_uniform(0, 256);
        onnx_tensor t;
        char err[256];
        if (parse(b, n, &t, err)) {
            refused++;
            CHECK(err[0] && t.data == NULL);
        } else {
            CHECK(t.data != NULL && t.count >= 0);
            onnx_tensor_free(&t);
        }
    }
    CHECK(refused > 0);
}

/* The model reader on a hand-made ModelProto: opset 13, a graph with one Conv
 * node (inputs x, W; output y; attributes strides [2, 2] unpacked, group 1,
 * epsilon 0.5f, auto_pad "VALID"; the type keys, field 20, are 2-byte varints), graph
 * inputs x, W and output y. */
static size_t good_model(uint8_t *b) {
    uint8_t node[96], g[160];
    size_t n = 0, gn = 0, m = 0;
#define STR(buf, len, field, s) (buf[len++] = (uint8_t)((field) << 3 | 2), buf[len++] = (uint8_t)strlen(s), \
                                 memcpy(buf + len, s, strlen(s)), len += strlen(s))
    STR(node, n, 1, "x");
    STR(node, n, 1, "W");
    STR(node, n, 2, "y");
    STR(node, n, 4, "Conv");
    uint8_t a1[] = {1 << 3 | 2, 7, 's', 't', 'r', 'i', 'd', 'e', 's', 8 << 3, 2, 8 << 3, 2, 0xa0, 0x01, ONNX_ATTR_INTS};
    uint8_t a2[] = {1 << 3 | 2, 5, 'g', 'r', 'o', 'u', 'p', 3 << 3, 1, 0xa0, 0x01, ONNX_ATTR_INT};
    uint8_t a3[] = {1 << 3 | 2, 7, 'e', 'p', 's', 'i', 'l', 'o', 'n', 2 << 3 | 5, 0, 0, 0, 0x3f, 0xa0, 0x01, ONNX_ATTR_FLOAT};
    uint8_t a4[] = {1 << 3 | 2, 8, 'a', 'u', 't', 'o', '_', 'p', 'a', 'd', 4 << 3 | 2, 5, 'V', 'A', 'L', 'I', 'D'};
    const uint8_t *attrs[] = {a1, a2, a3, a4};
    size_t sizes[] = {sizeof a1, sizeof a2, sizeof a3, sizeof a4};
    for (int i = 0; i < 4; i++) {
        node[n++] = 5 << 3 | 2, node[n++] = (uint8_t)sizes[i];
        memcpy(node + n, attrs[i], sizes[i]), n += sizes[i];
    }
    g[gn++] = 1 << 3 | 2, g[gn++] = (uint8_t)n;
    memcpy(g + gn, node, n), gn += n;
    uint8_t vx[] = {1 << 3 | 2, 1, 'x'}, vw[] = {1 << 3 | 2, 1, 'W'}, vy[] = {1 << 3 | 2, 1, 'y'};
    g[gn++] = 11 << 3 | 2, g[gn++] = 3, memcpy(g + gn, vx, 3), gn += 3;
    g[gn++] = 11 << 3 | 2, g[gn++] = 3, memcpy(g + gn, vw, 3), gn += 3;
    g[gn++] = 12 << 3 | 2, g[gn++] = 3, memcpy(g + gn, vy, 3), gn += 3;
    b[m++] = 1 << 3, b[m++] = 8;                                             /* ir_version */
    b[m++] = 8 << 3 | 2, b[m++] = 4, b[m++] = 1 << 3 | 2, b[m++] = 0, b[m++] = 2 << 3, b[m++] = 13; /* opset */
    b[m++] = 7 << 3 | 2, b[m++] = (uint8_t)gn;
    memcpy(b + m, g, gn);
#undef STR
    return m + gn;
}

static void test_model_reader(void) {
    uint8_t b[256];
    size_t n = good_model(b);
    onnx_model m;
    char err[256] = "";
    CHECK_EQ_INT(onnx_model_parse(b, n, &m, err, sizeof err), 0);
    CHECK_MSG(!err[0], "%s", err);
    CHECK_EQ_INT(m.opset, 13);
    CHECK_EQ_INT(m.nnodes, 1);
    CHECK(!strcmp(m.node.op_type, "Conv"));
    CHECK_EQ_INT(m.node.ninputs, 2);
    CHECK(!strcmp(m.node.inputs[1], "W") && !strcmp(m.node.outputs[0], "y"));
    CHECK_EQ_INT(m.ninputs, 2);
    CHECK_EQ_INT(m.noutputs, 1);
    const onnx_attr *s = onnx_node_attr(&m.node, "strides");
    CHECK(s && s->n == 2 && s->ints[0] == 2 && s->ints[1] == 2);
    CHECK_EQ_INT(onnx_attr_int(&m.node, "group", 0), 1);
    CHECK_NEAR(onnx_attr_float(&m.node, "epsilon", 0), 0.5, 0);
    CHECK(onnx_node_attr(&m.node, "auto_pad") && !strcmp(onnx_node_attr(&m.node, "auto_pad")->s, "VALID"));
    CHECK(onnx_node_attr(&m.node, "dilations") == NULL);
    /* every proper prefix is refused: it has no graph, or the graph runs past the end */
    for (size_t len = 0; len < n; len++) {
        err[0] = 0;
        CHECK_MSG(onnx_model_parse(b, len, &m, err, sizeof err) == -1 && err[0], "a prefix of %zu bytes was accepted", len);
    }
    err[0] = 0;
    CHECK(onnx_model_parse(b, 2, &m, err, sizeof err) == -1 && strstr(err, "no graph"));
    fedc_test_seed(15);
    uint8_t c[256];
    for (int trial = 0; trial < 4000; trial++) { /* corruptions: read or refused, never a crash */
        memcpy(c, b, n);
        c[(size_t)fedc_test_uniform(0, (double)n)] = (uint8_t)fedc_test_uniform(0, 256);
        err[0] = 0;
        if (onnx_model_parse(c, n, &m, err, sizeof err)) CHECK(err[0]);
    }
}

/* Every proper prefix of a real tensor file is refused (ONNX writes the data
 * last, so a prefix always lacks some), and every prefix of a real model is read
 * or refused with a message: under ASan, proof that the reader stays in bounds on
 * files as ONNX writes them (raw_data, packed ints, nested messages). */
static void test_reader_real_prefixes(void) {
    static const char *const files[] = {
        "test_conv_with_strides_and_asymmetric_padding/model.onnx",
        "test_conv_with_strides_and_asymmetric_padding/test_data_set_0/input_1.pb",
        "test_lstm_with_peepholes/model.onnx",
        "test_sce_NCd1_mean_weight_negative_ii/test_data_set_0/input_1.pb",
        "test_cast_FLOAT_to_DOUBLE/test_data_set_0/output_0.pb",
    };
    const char *root = node_dir();
    if (!root) {
        fedc_test_skip("ONNX's node tests are not installed (apt-get install libonnx-testdata)");
        return;
    }
    for (int f = 0; f < FEDC_COUNT_OF(files); f++) {
        char path[1024], err[512];
        uint8_t *buf;
        size_t len;
        snprintf(path, sizeof path, "%s/%s", root, files[f]);
        if (onnx_read_file(path, &buf, &len, err, sizeof err)) {
            CHECK_MSG(false, "%s", err);
            continue;
        }
        bool model = strstr(files[f], ".onnx") != NULL;
        for (size_t n = 0; n <= len; n++) {
            err[0] = 0;
            if (model) {
                onnx_model m;
                if (onnx_model_parse(buf, n, &m, err, sizeof err)) CHECK_MSG(err[0], "%s: no message at %zu", files[f], n);
                if (n == len) CHECK_MSG(!err[0], "%s: %s", files[f], err);
            } else {
                onnx_tensor t;
                int st = onnx_tensor_parse(buf, n, &t, err, sizeof err);
                CHECK_MSG(n == len ? st == 0 : st == -1 && err[0], "%s: prefix %zu of %zu: %d %s", files[f], n, len, st, err);
                onnx_tensor_free(&t);
            }
        }
        free(buf);
    }
}

int main(int argc, char **argv) {
    static const fedc_test tests[] = {
        {"reader_good", test_reader_good},
        {"reader_rejects", test_reader_rejects},
        {"reader_corrupted", test_reader_corrupted},
        {"model_reader", test_model_reader},
        {"reader_real_prefixes", test_reader_real_prefixes},
        {"lstm_gate_order", test_lstm_gate_order},
        {"conv_layouts", test_conv_layouts},
        {"convtranspose_layouts", test_convtranspose_layouts},
        {"node_tests", test_node_tests},
    };
    return fedc_test_main(argc, argv, tests, FEDC_COUNT_OF(tests));
}
