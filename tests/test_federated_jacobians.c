/* Jacobians through the federated primitives, three ways: forward mode (fedc_jvp,
 * one tangent per input element), reverse mode (fedc_vjp, one cotangent per output
 * element) and central finite differences, with respect to @server and @clients
 * inputs. jacfwd = jacrev = finite differences through broadcast, sum, mean,
 * weighted_mean, num_clients, map (stored and streamed results), a fold inside a
 * map, and ops on @clients values outside a map (with the constants the builders
 * and the transforms place @clients). DrJAX's primitive tests
 * (drjax/_src/primitives_test.py, 100 clients) give the exact Jacobians of the
 * primitives. All in f64. */
#include <stdlib.h>
#include <string.h>

#include "fedc/ad.h"
#include "fedc/exec.h"
#include "fedc/nn.h"
#include "harness.h"

#define MAX_IO 8

static fedc_type placed(fedc_placement pl, int rank, const int64_t *dims) {
    fedc_type t = fedc_type_make(FEDC_F64, rank, dims);
    t.placement = pl;
    return t;
}
#define DIMS(...) FEDC_COUNT_OF(((int64_t[]){__VA_ARGS__})), (int64_t[]){__VA_ARGS__}
#define L64(...) placed(FEDC_LOCAL, DIMS(__VA_ARGS__))
#define S64(...) placed(FEDC_SERVER, DIMS(__VA_ARGS__))
#define C64(...) placed(FEDC_CLIENTS, DIMS(__VA_ARGS__))
#define S64_0 placed(FEDC_SERVER, 0, NULL)
#define C64_0 placed(FEDC_CLIENTS, 0, NULL)

/* ------------------------------------------------------------ machinery -- */

/* One program's inputs, bound to the same data in every executor: f64 ones are
 * differentiated, i32 ones (a fold's lengths) are held at `length`, others (an
 * optimizer's f32 step count) at 0. */
typedef struct jac_problem {
    const fedc_program *p;
    int clients, length;
    int nin, nout;
    const char *in_name[MAX_IO], *out_name[MAX_IO];
    int64_t in_count[MAX_IO], out_count[MAX_IO]; /* elements, all clients' copies */
    bool in_float[MAX_IO];
    void *in_data[MAX_IO];
    int64_t total_in, total_out;
} jac_problem;

static int64_t elements(const fedc_type *t, int clients) {
    return fedc_type_count(t) * (t->placement == FEDC_CLIENTS ? clients : 1);
}

static bool problem_init(jac_problem *q, const fedc_program *p, int clients, int length, double lo, double hi) {
    memset(q, 0, sizeof *q);
    q->p = p, q->clients = clients, q->length = length;
    q->nin = fedc_program_num_inputs(p), q->nout = fedc_program_num_outputs(p);
    if (q->nin > MAX_IO || q->nout > MAX_IO) return false;
    for (int i = 0; i < q->nin; i++) {
        fedc_type t = fedc_value_type(p, fedc_program_input(p, i));
        q->in_name[i] = fedc_program_input_name(p, i);
        q->in_count[i] = elements(&t, clients);
        q->in_float[i] = t.dtype == FEDC_F64;
        q->in_data[i] = calloc((size_t)q->in_count[i] + 1, 8);
        for (int64_t j = 0; j < q->in_count[i]; j++) {
            if (q->in_float[i]) ((double *)q->in_data[i])[j] = fedc_test_uniform(lo, hi);
            else if (t.dtype == FEDC_I32) ((int32_t *)q->in_data[i])[j] = length;
        }
        if (q->in_float[i]) q->total_in += q->in_count[i];
    }
    for (int o = 0; o < q->nout; o++) {
        fedc_type t = fedc_value_type(p, fedc_program_output_value(p, o));
        q->out_name[o] = fedc_program_output_name(p, o);
        q->out_count[o] = elements(&t, clients);
        q->total_out += q->out_count[o];
    }
    return true;
}

static void problem_free(jac_problem *q) {
    for (int i = 0; i < q->nin; i++) free(q->in_data[i]);
}

static fedc_executor *executor_for(const jac_problem *q, const fedc_program *p) {
    fedc_executor *ex = NULL;
    fedc_exec_options o = {.clients = q->clients, .threads = 2};
    CHECK_OK(fedc_executor_create(&ex, p, &o));
    for (int i = 0; ex && i < q->nin; i++) CHECK_OK(fedc_executor_bind(ex, q->in_name[i], q->in_data[i]));
    return ex;
}

/* Copies the named outputs of a run, in order, into y. */
static void read_outputs(fedc_executor *ex, const char *prefix, const jac_problem *q, double *y) {
    for (int o = 0; o < q->nout; o++) {
        char name[96];
        snprintf(name, sizeof name, "%s%s", prefix, q->out_name[o]);
        const double *v = NULL;
        CHECK_OK(fedc_executor_output(ex, name, (const void **)&v, NULL));
        for (int64_t j = 0; j < q->out_count[o]; j++) *y++ = v ? v[j] : NAN;
    }
}

/* Visits every differentiated input element: (input, element, column). */
#define FOR_EACH_INPUT_ELEMENT(q, i, j, col)                                                                     \
    for (int i = 0, col = 0; i < (q)->nin; i++)                                                                  \
        for (int64_t j = 0; (q)->in_float[i] && j < (q)->in_count[i]; j++, col++)

/* J[r * total_in + c] = d out_r / d in_c by central differences. */
static void jacobian_fd(const jac_problem *q, double *jac) {
    fedc_executor *ex = executor_for(q, q->p);
    double *up = calloc((size_t)q->total_out, 8), *down = calloc((size_t)q->total_out, 8);
    FOR_EACH_INPUT_ELEMENT(q, i, j, col) {
        double *x = q->in_data[i], keep = x[j], h = 1e-6;
        x[j] = keep + h;
        CHECK_OK(fedc_executor_run(ex));
        read_outputs(ex, "", q, up);
        x[j] = keep - h;
        CHECK_OK(fedc_executor_run(ex));
        read_outputs(ex, "", q, down);
        x[j] = keep;
        for (int64_t r = 0; r < q->total_out; r++) jac[r * q->total_in + col] = (up[r] - down[r]) / (2 * h);
    }
    free(up), free(down);
    fedc_executor_destroy(ex);
}

static const char **float_inputs(const jac_problem *q, int *n) {
    static const char *wrt[MAX_IO];
    *n = 0;
    for (int i = 0; i < q->nin; i++)
        if (q->in_float[i]) wrt[(*n)++] = q->in_name[i];
    return wrt;
}

/* Forward mode: column c is the jvp with the one-hot tangent of input element c. */
static void jacobian_fwd(const jac_problem *q, double *jac) {
    int nwrt;
    const char **wrt = float_inputs(q, &nwrt);
    fedc_program *t = NULL;
    CHECK_OK(fedc_jvp(q->p, wrt, nwrt, &t));
    if (!t) return;
    fedc_executor *ex = executor_for(q, t);
    double *tangent[MAX_IO] = {0}, *col_out = calloc((size_t)q->total_out, 8);
    for (int i = 0; ex && i < q->nin; i++) {
        if (!q->in_float[i]) continue;
        char name[96];
        snprintf(name, sizeof name, "tangent_%s", q->in_name[i]);
        tangent[i] = calloc((size_t)q->in_count[i], 8);
        CHECK_OK(fedc_executor_bind(ex, name, tangent[i]));
    }
    FOR_EACH_INPUT_ELEMENT(q, i, j, col) {
        if (!ex) break;
        tangent[i][j] = 1;
        CHECK_OK(fedc_executor_run(ex));
        read_outputs(ex, "tangent_", q, col_out);
        tangent[i][j] = 0;
        for (int64_t r = 0; r < q->total_out; r++) jac[r * q->total_in + col] = col_out[r];
    }
    for (int i = 0; i < q->nin; i++) free(tangent[i]);
    free(col_out);
    fedc_executor_destroy(ex);
    fedc_program_destroy(t);
}

/* Reverse mode: row r is the vjp with the one-hot cotangent of output element r. */
static void jacobian_rev(const jac_problem *q, double *jac) {
    int nwrt;
    const char **wrt = float_inputs(q, &nwrt);
    fedc_program *g = NULL;
    CHECK_OK(fedc_vjp(q->p, wrt, nwrt, &g));
    if (!g) return;
    fedc_executor *ex = executor_for(q, g);
    double *ct[MAX_IO] = {0};
    for (int o = 0; ex && o < q->nout; o++) {
        char name[96];
        snprintf(name, sizeof name, "ct_%s", q->out_name[o]);
        ct[o] = calloc((size_t)q->out_count[o], 8);
        CHECK_OK(fedc_executor_bind(ex, name, ct[o]));
    }
    for (int o = 0, row = 0; ex && o < q->nout; o++)
        for (int64_t k = 0; k < q->out_count[o]; k++, row++) {
            ct[o][k] = 1;
            CHECK_OK(fedc_executor_run(ex));
            FOR_EACH_INPUT_ELEMENT(q, i, j, col) { /* read before ct changes: a gradient may be ct itself */
                char name[96];
                snprintf(name, sizeof name, "grad_%s", q->in_name[i]);
                const double *grad = NULL;
                CHECK_OK(fedc_executor_output(ex, name, (const void **)&grad, NULL));
                jac[row * q->total_in + col] = grad ? grad[j] : NAN;
            }
            ct[o][k] = 0;
        }
    for (int o = 0; o < q->nout; o++) free(ct[o]);
    fedc_executor_destroy(ex);
    fedc_program_destroy(g);
}

/* Checks jacfwd = jacrev = finite differences (and = `exact` when given) for p on
 * `clients` clients; consumes p. */
static void check_jacobians(const char *what, fedc_program *p, int clients, int length, const double *exact) {
    CHECK_MSG(p && fedc_program_status(p) == FEDC_OK, "%s: build: %s", what, fedc_errmsg());
    jac_problem q;
    if (!p || fedc_program_status(p) || !problem_init(&q, p, clients, length, 0.5, 1.5)) {
        fedc_program_destroy(p);
        return;
    }
    size_t n = (size_t)(q.total_out * q.total_in);
    double *fd = calloc(n, 8), *fwd = calloc(n, 8), *rev = calloc(n, 8);
    jacobian_fd(&q, fd);
    jacobian_fwd(&q, fwd);
    jacobian_rev(&q, rev);
    int bad = 0;
    for (size_t k = 0; k < n && bad < 5; k++) {
        double tol = 1e-6 * (1 + fabs(fd[k]));
        bool ok = fabs(fwd[k] - fd[k]) <= tol && fabs(rev[k] - fd[k]) <= tol &&
                  fabs(fwd[k] - rev[k]) <= 1e-12 * (1 + fabs(rev[k])) &&
                  (!exact || fabs(rev[k] - exact[k]) <= 1e-12 * (1 + fabs(exact[k])));
        if (ok) continue;
        bad++;
        fedc_test_fail(__FILE__, __LINE__, "%s: J[out %lld][in %lld]: jacfwd %.12g, jacrev %.12g, finite differences %.12g%s%.12g",
                       what, (long long)(k / (size_t)q.total_in), (long long)(k % (size_t)q.total_in), fwd[k], rev[k],
                       fd[k], exact ? ", exact " : "", exact ? exact[k] : 0.0);
    }
    free(fd), free(fwd), free(rev);
    problem_free(&q);
    fedc_program_destroy(p);
}

static fedc_program *new_program(void) {
    fedc_program *p = NULL;
    CHECK_OK(fedc_program_create(&p));
    return p;
}

static double *filled(int64_t n, double value) {
    double *a = malloc((size_t)n * sizeof *a);
    for (int64_t i = 0; i < n; i++) a[i] = value;
    return a;
}

/* ------------------------------------------- DrJAX's primitive tests -- */

enum { DRJAX_CLIENTS = 100 };

/* broadcast_clients: f64[]@server -> [n]: jacfwd = jacrev = ones([n]). */
static void test_drjax_broadcast(void) {
    fedc_program *p = new_program();
    fedc_program_output(p, "y", fedc_broadcast(p, fedc_input(p, "x", S64_0)));
    double *ones = filled(DRJAX_CLIENTS, 1);
    check_jacobians("broadcast", p, DRJAX_CLIENTS, 0, ones);
    free(ones);
}

/* sum_from_clients, mean_from_clients of [n, 1]: ones([1, n, 1]) and 1/n of it. */
static void test_drjax_sum_and_mean(void) {
    for (int mean = 0; mean < 2; mean++) {
        fedc_program *p = new_program();
        fedc_value x = fedc_input(p, "x", C64(1));
        fedc_program_output(p, "y", mean ? fedc_mean(p, x) : fedc_sum(p, x));
        double *want = filled(DRJAX_CLIENTS, mean ? 1.0 / DRJAX_CLIENTS : 1);
        check_jacobians(mean ? "mean" : "sum", p, DRJAX_CLIENTS, 0, want);
        free(want);
    }
}

/* broadcast then sum: [[n]]; broadcast then mean: [[1]]. */
static void test_drjax_broadcast_then_aggregate(void) {
    for (int mean = 0; mean < 2; mean++) {
        fedc_program *p = new_program();
        fedc_value b = fedc_broadcast(p, fedc_input(p, "x", S64(1)));
        fedc_program_output(p, "y", mean ? fedc_mean(p, b) : fedc_sum(p, b));
        double want = mean ? 1 : DRJAX_CLIENTS;
        check_jacobians(mean ? "broadcast then mean" : "broadcast then sum", p, DRJAX_CLIENTS, 0, &want);
    }
}

/* A primitive whose second result is dropped (DrJAX's symbolic-zero cotangent):
 * the dead copy changes nothing. */
static void test_drjax_ignored_result(void) {
    fedc_program *p = new_program();
    fedc_value x = fedc_input(p, "x", C64(1));
    fedc_value y = fedc_sum(p, x);
    (void)fedc_sum(p, x);
    fedc_program_output(p, "y", y);
    double *ones = filled(DRJAX_CLIENTS, 1);
    check_jacobians("sum with an ignored second sum", p, DRJAX_CLIENTS, 0, ones);
    free(ones);
}

/* --------------------------------------- every federated op, generally -- */

static void test_weighted_mean(void) {
    fedc_program *p = new_program();
    fedc_value x = fedc_input(p, "x", C64(2, 2)), w = fedc_input(p, "w", C64_0);
    fedc_program_output(p, "y", fedc_weighted_mean(p, x, w));
    check_jacobians("weighted_mean", p, 4, 0, NULL);
}

static void test_num_clients(void) {
    fedc_program *p = new_program();
    fedc_value x = fedc_input(p, "x", C64(3));
    fedc_program_output(p, "y", fedc_mul(p, fedc_mean(p, x), fedc_num_clients(p, FEDC_F64)));
    check_jacobians("mean * num_clients", p, 5, 0, NULL);
}

/* The program: a constant placed @clients, read by every client. The
 * forward value is checked too: sum(2 x) with x = [1, 2, 3, 4] is 20. */
static void test_clients_constant(void) {
    static const char text[] = "fedc program\n"
                               "%0 = input \"x\" : f64[]@clients\n"
                               "%1 = constant [2] : f64[]@clients\n"
                               "%2 = mul(%1, %0) : f64[]@clients\n"
                               "%3 = sum(%2) : f64[]@server\n"
                               "output \"s\" = %3\n"
                               "output \"c\" = %1\n";
    fedc_program *p = NULL;
    CHECK_OK(fedc_program_parse(text, &p));
    if (!p) return;
    fedc_executor *ex = NULL;
    fedc_exec_options o = {.clients = 4};
    CHECK_OK(fedc_executor_create(&ex, p, &o));
    double x[4] = {1, 2, 3, 4};
    const double *s = NULL, *c = NULL;
    CHECK_OK(fedc_executor_bind(ex, "x", x));
    CHECK_OK(fedc_executor_run(ex));
    CHECK_OK(fedc_executor_output(ex, "s", (const void **)&s, NULL));
    CHECK_OK(fedc_executor_output(ex, "c", (const void **)&c, NULL));
    if (s) CHECK_NEAR(*s, 20, 0);
    for (int i = 0; c && i < 4; i++) CHECK_NEAR(c[i], 2, 0);
    fedc_executor_destroy(ex);
    fedc_program_destroy(p);
}

/* Array ops on @clients values outside a map, with scalar constants the builders
 * place @clients (scalar_like), and the result both stored and aggregated. */
static void test_ops_on_clients_values(void) {
    fedc_program *p = new_program();
    fedc_value x = fedc_input(p, "x", C64(2, 3)), y = fedc_input(p, "y", C64(3));
    fedc_value z = fedc_add(p, fedc_mul(p, fedc_tanh(p, x), y), fedc_scalar_like(p, x, 2));
    fedc_value r = fedc_reduce_sum(p, fedc_mul(p, z, fedc_exp(p, fedc_scalar_like(p, x, 0.5))), (int[]){1}, 1, false);
    fedc_program_output(p, "z", z);
    fedc_program_output(p, "s", fedc_sum(p, fedc_mul(p, r, r)));
    check_jacobians("ops on clients values", p, 3, 0, NULL);
}

/* body(a, b) = (tanh(a * b), exp(a) * b): its first result stored (an output),
 * its second streamed into a weighted mean. */
static fedc_program *map_body(void) {
    fedc_program *b = new_program();
    fedc_value a = fedc_input(b, "a", L64(3)), v = fedc_input(b, "b", L64(3));
    fedc_program_output(b, "t", fedc_tanh(b, fedc_mul(b, a, v)));
    fedc_program_output(b, "e", fedc_mul(b, fedc_exp(b, a), v));
    fedc_program_output(b, "w", fedc_reduce_sum(b, fedc_mul(b, v, v), NULL, -1, false));
    return b;
}

static void test_map(void) {
    fedc_program *body = map_body();
    for (int stored = 0; stored < 2; stored++) {
        fedc_program *p = new_program();
        fedc_value s = fedc_input(p, "s", S64(3)), x = fedc_input(p, "x", C64(3)), r[3];
        CHECK_OK(fedc_map(p, body, (fedc_value[]){fedc_broadcast(p, s), x}, 2, r));
        if (stored) fedc_program_output(p, "t", r[0]);
        fedc_program_output(p, "m", fedc_weighted_mean(p, r[1], r[2]));
        check_jacobians(stored ? "map, stored and streamed results" : "map, streamed results", p, 4, 0, NULL);
    }
    fedc_program_destroy(body);
}

/* Local training in miniature: a map whose body folds c <- c * w + x over a
 * client's sequence, averaged at the server. */
static void test_fold_in_a_map(void) {
    fedc_program *step = new_program(), *client = new_program();
    fedc_value c = fedc_input(step, "c", L64(2)), w = fedc_input(step, "w", L64(2)), x = fedc_input(step, "x", L64(2));
    fedc_program_output(step, "c", fedc_add(step, fedc_mul(step, fedc_tanh(step, c), w), x));
    fedc_program_output(step, "w", w);
    fedc_value w0 = fedc_input(client, "w", L64(2)), xs = fedc_input(client, "xs", L64(4, 2));
    fedc_value len = fedc_input(client, "len", fedc_type_scalar(FEDC_I32)), fr[2];
    CHECK_OK(fedc_fold(client, step, (fedc_value[]){w0, w0}, 2, &xs, 1, len, fr));
    fedc_program_output(client, "c", fr[0]);
    fedc_program *p = new_program();
    fedc_value ws = fedc_input(p, "w", S64(2)), xc = fedc_input(p, "xs", C64(4, 2));
    fedc_type lt = fedc_type_scalar(FEDC_I32);
    lt.placement = FEDC_CLIENTS;
    fedc_value lc = fedc_input(p, "len", lt), out;
    CHECK_OK(fedc_map(p, client, (fedc_value[]){fedc_broadcast(p, ws), xc, lc}, 3, &out));
    fedc_program_output(p, "m", fedc_mean(p, out));
    check_jacobians("fold in a map", p, 3, 3, NULL);
    fedc_program_destroy(step);
    fedc_program_destroy(client);
}

/* An optimizer step on @clients parameters outside a map: every client's copy is
 * updated (its constants, the learning rate among them, are placed @clients). */
static void test_optimizer_step_on_clients_values(void) {
    const fedc_optimizer_kind kinds[] = {FEDC_OPT_SGD, FEDC_OPT_ADAM};
    for (int k = 0; k < FEDC_COUNT_OF(kinds); k++) {
        fedc_optimizer o = fedc_optimizer_defaults(kinds[k], 0.1);
        fedc_program *p = new_program();
        fedc_value w = fedc_input(p, "w", C64(2)), g = fedc_input(p, "g", C64(2)), state[4], next[4], w2;
        int ns = fedc_optimizer_state_size(&o, 1);
        for (int s = 0; s < ns; s++) {
            char name[16];
            snprintf(name, sizeof name, "s%d", s);
            fedc_type t = C64(2);
            if (s >= fedc_optimizer_slots(&o)) t = fedc_type_scalar(FEDC_F32), t.placement = FEDC_CLIENTS;
            state[s] = fedc_input(p, name, t);
        }
        CHECK_OK(fedc_optimizer_step(&o, p, FEDC_NONE, 1, &w, &g, state, &w2, next));
        fedc_program_output(p, "w", w2);
        check_jacobians(fedc_optimizer_name(kinds[k]), p, 3, 0, NULL);
    }
}

int main(int argc, char **argv) {
    static const fedc_test tests[] = {
        {"drjax broadcast", test_drjax_broadcast},
        {"drjax sum and mean", test_drjax_sum_and_mean},
        {"drjax broadcast then aggregate", test_drjax_broadcast_then_aggregate},
        {"drjax ignored result", test_drjax_ignored_result},
        {"weighted_mean", test_weighted_mean},
        {"num_clients", test_num_clients},
        {"clients constant", test_clients_constant},
        {"ops on clients values", test_ops_on_clients_values},
        {"map", test_map},
        {"fold in a map", test_fold_in_a_map},
        {"optimizer step on clients values", test_optimizer_step_on_clients_values},
    };
    return fedc_test_main(argc, argv, tests, FEDC_COUNT_OF(tests));
}
