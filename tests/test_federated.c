/* Federated primitives: placement rules, known answers of the primitives and their
 * derivatives (issue 3), map over clients with streaming aggregation, determinism
 * across thread counts, and client failures. */
#include <stdlib.h>
#include <string.h>

#include "fedc/ad.h"
#include "fedc/exec.h"
#include "harness.h"
#include "exec/cohort.h"
#include "ir/ir.h"

static fedc_type typed(fedc_dtype dt, fedc_placement pl, int rank, const int64_t *dims) {
    fedc_type t = fedc_type_make(dt, rank, dims);
    t.placement = pl;
    return t;
}

#define SERVER(...) typed(FEDC_F32, FEDC_SERVER, FEDC_COUNT_OF(((int64_t[]){__VA_ARGS__})), (int64_t[]){__VA_ARGS__})
#define CLIENTS(...) typed(FEDC_F32, FEDC_CLIENTS, FEDC_COUNT_OF(((int64_t[]){__VA_ARGS__})), (int64_t[]){__VA_ARGS__})
#define SERVER0 typed(FEDC_F32, FEDC_SERVER, 0, NULL)
#define CLIENTS0 typed(FEDC_F32, FEDC_CLIENTS, 0, NULL)

/* Runs a one-input-one-output f32 program on `clients` clients. */
static float run1(const fedc_program *p, const char *in, const float *x, const char *out, int clients, float *vec) {
    fedc_executor *ex = NULL;
    fedc_exec_options o = {.clients = clients};
    float result = NAN;
    CHECK_OK(fedc_executor_create(&ex, p, &o));
    if (!ex) return result;
    CHECK_OK(fedc_executor_bind(ex, in, x));
    CHECK_OK(fedc_executor_run(ex));
    const float *y;
    fedc_type t;
    if (fedc_executor_output(ex, out, (const void **)&y, &t) == FEDC_OK) {
        result = y[0];
        if (vec) memcpy(vec, y, fedc_type_bytes(&t) * (t.placement == FEDC_CLIENTS ? (size_t)clients : 1));
    }
    fedc_executor_destroy(ex);
    return result;
}

/* ------------------------------------------------------------ placement -- */

static void test_placement_rules(void) {
    fedc_program *p;
    CHECK_OK(fedc_program_create(&p));
    fedc_value s = fedc_input(p, "s", SERVER(3)), c = fedc_input(p, "c", CLIENTS(3));
    CHECK_EQ_INT(fedc_value_type(p, fedc_broadcast(p, s)).placement, FEDC_CLIENTS);
    CHECK_EQ_INT(fedc_value_type(p, fedc_mean(p, c)).placement, FEDC_SERVER);
    CHECK_EQ_INT(fedc_value_type(p, fedc_add(p, c, fedc_scalar(p, FEDC_F32, 1))).placement, FEDC_CLIENTS);
    CHECK_OK(fedc_program_status(p));
    fedc_add(p, s, c);
    CHECK_ERR(fedc_program_status(p), FEDC_ETYPE, "broadcast the server value or aggregate the clients value");
    fedc_program_destroy(p);

    CHECK_OK(fedc_program_create(&p));
    s = fedc_input(p, "s", SERVER(3));
    fedc_sum(p, s);
    CHECK_ERR(fedc_program_status(p), FEDC_ETYPE, "sum aggregates a @clients value");
    fedc_program_destroy(p);

    CHECK_OK(fedc_program_create(&p));
    c = fedc_input(p, "c", CLIENTS(3));
    fedc_broadcast(p, c);
    CHECK_ERR(fedc_program_status(p), FEDC_ETYPE, "broadcast takes a server value");
    fedc_program_destroy(p);

    CHECK_OK(fedc_program_create(&p));
    c = fedc_input(p, "c", CLIENTS(3));
    fedc_weighted_mean(p, c, c);
    CHECK_ERR(fedc_program_status(p), FEDC_ETYPE, "one f32 scalar per client");
    fedc_program_destroy(p);
}

static fedc_program *square_body(void) {
    fedc_program *b;
    if (fedc_program_create(&b)) return NULL;
    fedc_value x = fedc_input(b, "x", fedc_type_make(FEDC_F32, 1, (int64_t[]){3}));
    fedc_program_output(b, "y", fedc_mul(b, x, x));
    return b;
}

static void test_map_rules(void) {
    fedc_program *p, *body = square_body();
    fedc_value r;
    CHECK_OK(fedc_program_create(&p));
    fedc_value s = fedc_input(p, "s", SERVER(3));
    CHECK_ERR(fedc_map(p, body, &s, 1, &r), FEDC_ETYPE, "map takes per-client values (@clients): broadcast it first");
    fedc_program_destroy(p);

    CHECK_OK(fedc_program_create(&p));
    fedc_value c = fedc_input(p, "c", CLIENTS(4));
    CHECK_ERR(fedc_map(p, body, &c, 1, &r), FEDC_ETYPE, "the body's input \"x\" is f32[3]");
    fedc_program_destroy(p);

    /* A body that communicates is refused. */
    fedc_program *bad;
    CHECK_OK(fedc_program_create(&bad));
    fedc_value bx = fedc_input(bad, "x", fedc_type_make(FEDC_F32, 1, (int64_t[]){3}));
    CHECK_OK(fedc_program_output(bad, "y", fedc_broadcast(bad, bx)));
    CHECK_OK(fedc_program_create(&p));
    c = fedc_input(p, "c", CLIENTS(3));
    CHECK_ERR(fedc_map(p, bad, &c, 1, &r), FEDC_ETYPE, "cannot communicate");
    fedc_program_destroy(p);
    fedc_program_destroy(bad);
    fedc_program_destroy(body);
}

/* ------------------------------------------------------- known answers -- */

/* f(x) = sum(broadcast(x)) over 3 clients: f(2) = 6, df/dx = 3. */
static void test_broadcast_then_sum(void) {
    fedc_program *p, *g;
    CHECK_OK(fedc_program_create(&p));
    fedc_value x = fedc_input(p, "x", SERVER0);
    CHECK_OK(fedc_program_output(p, "f", fedc_sum(p, fedc_broadcast(p, x))));
    float two = 2;
    CHECK_NEAR(run1(p, "x", &two, "f", 3, NULL), 6.0, 0);
    CHECK_OK(fedc_grad(p, "f", (const char *[]){"x"}, 1, &g));
    CHECK_NEAR(run1(g, "x", &two, "grad_x", 3, NULL), 3.0, 0);
    fedc_program_destroy(g);
    fedc_program_destroy(p);
}

/* Jacobians by reverse mode: broadcast = 1_n (each client's cotangent flows back:
 * sum), sum . broadcast = n, mean . broadcast = 1, mean = 1/n per client. */
static void test_primitive_jacobians(void) {
    const int n = 5;
    float one = 1, x[5] = {1, 2, 3, 4, 5}, grad[5];
    /* d sum(broadcast(x)) / dx = n; d mean(broadcast(x)) / dx = 1 */
    for (int which = 0; which < 2; which++) {
        fedc_program *p, *g;
        CHECK_OK(fedc_program_create(&p));
        fedc_value in = fedc_input(p, "x", SERVER0), b = fedc_broadcast(p, in);
        CHECK_OK(fedc_program_output(p, "f", which ? fedc_mean(p, b) : fedc_sum(p, b)));
        CHECK_OK(fedc_grad(p, "f", (const char *[]){"x"}, 1, &g));
        CHECK_NEAR(run1(g, "x", &one, "grad_x", n, NULL), which ? 1.0 : (double)n, 1e-7);
        fedc_program_destroy(g);
        fedc_program_destroy(p);
    }
    /* d mean(x) / dx_i = 1/n; d sum(x) / dx_i = 1 */
    for (int which = 0; which < 2; which++) {
        fedc_program *p, *g;
        CHECK_OK(fedc_program_create(&p));
        fedc_value in = fedc_input(p, "x", CLIENTS0);
        CHECK_OK(fedc_program_output(p, "f", which ? fedc_mean(p, in) : fedc_sum(p, in)));
        CHECK_OK(fedc_grad(p, "f", (const char *[]){"x"}, 1, &g));
        run1(g, "x", x, "grad_x", n, grad);
        for (int i = 0; i < n; i++) CHECK_NEAR(grad[i], which ? 1.0 / n : 1.0, 1e-7);
        fedc_program_destroy(g);
        fedc_program_destroy(p);
    }
    /* broadcast's Jacobian is 1_n: the vjp of broadcast with cotangent c is sum(c). */
    fedc_program *p, *v;
    CHECK_OK(fedc_program_create(&p));
    fedc_value in = fedc_input(p, "x", SERVER0);
    CHECK_OK(fedc_program_output(p, "y", fedc_broadcast(p, in)));
    CHECK_OK(fedc_vjp(p, (const char *[]){"x"}, 1, &v));
    fedc_executor *ex;
    fedc_exec_options o = {.clients = n};
    CHECK_OK(fedc_executor_create(&ex, v, &o));
    CHECK_OK(fedc_executor_bind(ex, "x", &one));
    CHECK_OK(fedc_executor_bind(ex, "ct_y", x));
    CHECK_OK(fedc_executor_run(ex));
    const float *gx, *y;
    CHECK_OK(fedc_executor_output(ex, "grad_x", (const void **)&gx, NULL));
    CHECK_OK(fedc_executor_output(ex, "y", (const void **)&y, NULL));
    CHECK_NEAR(*gx, 15.0, 0); /* 1_n^T c = 1 + 2 + 3 + 4 + 5 */
    for (int i = 0; i < n; i++) CHECK_NEAR(y[i], 1.0, 0);
    fedc_executor_destroy(ex);
    fedc_program_destroy(v);
    fedc_program_destroy(p);
}

/* loss_i = 0.5 (x . y_i - 1)^2, the federated mean over three clients. */
static fedc_program *linear_regression(void) {
    fedc_program *body, *p;
    if (fedc_program_create(&body) || fedc_program_create(&p)) return NULL;
    fedc_type v2 = fedc_type_make(FEDC_F32, 1, (int64_t[]){2});
    fedc_value bx = fedc_input(body, "x", v2), by = fedc_input(body, "y", v2);
    fedc_value r = fedc_sub(body, fedc_reduce_sum(body, fedc_mul(body, bx, by), NULL, -1, false), fedc_scalar(body, FEDC_F32, 1));
    fedc_program_output(body, "loss", fedc_mul(body, fedc_scalar(body, FEDC_F32, 0.5), fedc_square(body, r)));

    fedc_value x = fedc_input(p, "x", SERVER(2)), y = fedc_input(p, "y", CLIENTS(2)), loss_i;
    fedc_map(p, body, (fedc_value[]){fedc_broadcast(p, x), y}, 2, &loss_i);
    fedc_program_output(p, "loss", fedc_mean(p, loss_i));
    fedc_program_destroy(body);
    return p;
}

static void test_linear_regression_known_answers(void) {
    fedc_program *p = linear_regression(), *g;
    CHECK_OK(fedc_program_status(p));
    CHECK_OK(fedc_grad(p, "loss", (const char *[]){"x"}, 1, &g));
    float x[2] = {2, -1}, y[6] = {1, 2, 3, -4, -7, 6};
    fedc_exec_options o = {.clients = 3};
    fedc_executor *ex, *fwd;
    CHECK_OK(fedc_executor_create(&ex, g, &o));
    CHECK_OK(fedc_executor_create(&fwd, p, &o));
    CHECK_OK(fedc_executor_bind(ex, "x", x));
    CHECK_OK(fedc_executor_bind(ex, "y", y));
    CHECK_OK(fedc_executor_run(ex));
    const float *loss, *grad;
    CHECK_OK(fedc_executor_output(ex, "loss", (const void **)&loss, NULL));
    CHECK_OK(fedc_executor_output(ex, "grad_x", (const void **)&grad, NULL));
    CHECK_NEAR(*loss, 87.16667, 1e-6);
    CHECK_NEAR(grad[0], 57.666668, 1e-6);
    CHECK_NEAR(grad[1], -54.666668, 1e-6);
    /* one FedSGD step with learning rate 0.01 */
    float stepped[2] = {x[0] - 0.01f * grad[0], x[1] - 0.01f * grad[1]};
    CHECK_OK(fedc_executor_bind(fwd, "x", stepped));
    CHECK_OK(fedc_executor_bind(fwd, "y", y));
    CHECK_OK(fedc_executor_run(fwd));
    CHECK_OK(fedc_executor_output(fwd, "loss", (const void **)&loss, NULL));
    CHECK_NEAR(*loss, 35.551258, 1e-6);
    fedc_executor_destroy(ex);
    fedc_executor_destroy(fwd);
    fedc_program_destroy(g);
    fedc_program_destroy(p);
}

/* The derivative of a program that communicates only through broadcast and mean
 * communicates only through broadcast, sum and mean (and maps). */
static void test_derivative_communicates_through_primitives(void) {
    fedc_program *p = linear_regression(), *g;
    CHECK_OK(fedc_grad(p, "loss", (const char *[]){"x"}, 1, &g));
    int broadcasts = 0, sums = 0, maps = 0;
    for (int v = 0; v < g->n; v++) {
        const fedc__node *n = &g->nodes[v];
        broadcasts += n->op == FEDC_OP_BROADCAST;
        sums += n->op == FEDC_OP_SUM || n->op == FEDC_OP_MEAN;
        maps += n->op == FEDC_OP_MAP;
        bool allowed = !fedc__op_is_federated(n->op) || n->op == FEDC_OP_BROADCAST || n->op == FEDC_OP_SUM ||
                       n->op == FEDC_OP_MEAN || n->op == FEDC_OP_MAP || n->op == FEDC_OP_RESULT ||
                       n->op == FEDC_OP_NUM_CLIENTS;
        CHECK_MSG(allowed, "%%%d is a %s", v, fedc__ops[n->op].name);
        /* and server values never meet clients values outside the primitives */
        for (int i = 0; i < n->nin && !fedc__op_is_federated(n->op); i++) {
            fedc_placement a = g->nodes[n->in[i]].type.placement, b = n->type.placement;
            CHECK_MSG(a == FEDC_LOCAL || a == b, "%%%d (%s) mixes placements", v, fedc__ops[n->op].name);
        }
    }
    CHECK(broadcasts >= 2); /* x forward, the cotangent back */
    CHECK(sums >= 2);       /* the loss's mean, the gradient's sum */
    CHECK(maps >= 2);       /* the body, its derivative */
    fedc_program_destroy(g);
    fedc_program_destroy(p);
}

/* ------------------------------------------------------------- runtime -- */

/* body(w, d) = (delta = tanh(w * d + d), weight = exp(mean(d))); the program
 * aggregates delta by weighted_mean and mean, and the weights by sum. */
static fedc_program *cohort_program(int dim, bool keep_deltas) {
    fedc_program *body, *p;
    if (fedc_program_create(&body) || fedc_program_create(&p)) return NULL;
    fedc_type v = fedc_type_make(FEDC_F32, 1, (int64_t[]){dim});
    fedc_value w = fedc_input(body, "w", v), d = fedc_input(body, "d", v);
    fedc_program_output(body, "delta", fedc_tanh(body, fedc_add(body, fedc_mul(body, w, d), d)));
    fedc_program_output(body, "weight", fedc_exp(body, fedc_reduce_mean(body, d, NULL, -1, false)));

    fedc_value pw = fedc_input(p, "w", SERVER(dim)), pd = fedc_input(p, "d", CLIENTS(dim)), r[2];
    fedc_map(p, body, (fedc_value[]){fedc_broadcast(p, pw), pd}, 2, r);
    fedc_program_output(p, "wmean", fedc_weighted_mean(p, r[0], r[1]));
    fedc_program_output(p, "mean", fedc_mean(p, r[0]));
    fedc_program_output(p, "total", fedc_sum(p, r[1]));
    if (keep_deltas) fedc_program_output(p, "deltas", r[0]);
    fedc_program_destroy(body);
    return p;
}

static float *cohort_data(int clients, int dim) {
    float *d = malloc((size_t)clients * (size_t)dim * sizeof *d);
    for (int i = 0; i < clients * dim; i++) d[i] = (float)((i * 37) % 101) / 101.0f - 0.5f;
    return d;
}

typedef struct cohort_result {
    float wmean[16], mean[16], total;
} cohort_result;

/* Runs the cohort program; with `work`, the clients' work is given
 * (fedc_executor_balance: largest first); with `deltas`, the kept deltas are
 * copied there. */
static fedc_status run_cohort_with(const fedc_program *p, int clients, int threads, const double *work, const float *w,
                                   const float *d, int dim, cohort_result *out, size_t *planned, float *deltas) {
    fedc_executor *ex;
    fedc_exec_options o = {.clients = clients, .threads = threads};
    fedc_status st = fedc_executor_create(&ex, p, &o);
    if (st) return st;
    if (work && (st = fedc_executor_balance(ex, work))) {
        fedc_executor_destroy(ex);
        return st;
    }
    fedc_executor_bind(ex, "w", w);
    fedc_executor_bind(ex, "d", d);
    st = fedc_executor_run(ex);
    const float *a, *b, *t;
    if (!st) {
        fedc_executor_output(ex, "wmean", (const void **)&a, NULL);
        fedc_executor_output(ex, "mean", (const void **)&b, NULL);
        fedc_executor_output(ex, "total", (const void **)&t, NULL);
        memcpy(out->wmean, a, (size_t)dim * sizeof *a);
        memcpy(out->mean, b, (size_t)dim * sizeof *b);
        out->total = *t;
    }
    if (!st && deltas) {
        const float *kept;
        fedc_executor_output(ex, "deltas", (const void **)&kept, NULL);
        memcpy(deltas, kept, (size_t)clients * (size_t)dim * sizeof *kept);
    }
    if (planned) *planned = fedc_executor_planned_bytes(ex);
    fedc_executor_destroy(ex);
    return st;
}

static fedc_status run_cohort(const fedc_program *p, int clients, int threads, const float *w, const float *d, int dim,
                              cohort_result *out, size_t *planned) {
    return run_cohort_with(p, clients, threads, NULL, w, d, dim, out, planned, NULL);
}

static void test_map_aggregates_match_hand_computation(void) {
    const int clients = 7, dim = 5;
    fedc_program *p = cohort_program(dim, false);
    float w[5] = {0.5f, -1, 2, 0.25f, 1};
    float *d = cohort_data(clients, dim);
    cohort_result r;
    CHECK_OK(run_cohort(p, clients, 1, w, d, dim, &r, NULL));
    double wsum = 0, wm[5] = {0}, m[5] = {0};
    for (int i = 0; i < clients; i++) {
        double mean_d = 0;
        for (int j = 0; j < dim; j++) mean_d += d[i * dim + j] / (double)dim;
        double weight = exp(mean_d);
        wsum += weight;
        for (int j = 0; j < dim; j++) {
            double delta = tanh(w[j] * d[i * dim + j] + d[i * dim + j]);
            wm[j] += weight * delta;
            m[j] += delta / clients;
        }
    }
    CHECK_NEAR(r.total, wsum, 1e-6);
    for (int j = 0; j < dim; j++) {
        CHECK_NEAR(r.wmean[j], wm[j] / wsum, 1e-6);
        CHECK_NEAR(r.mean[j], m[j], 1e-6);
    }
    free(d);
    fedc_program_destroy(p);
}

static void test_bitwise_identical_for_1_to_4_threads(void) {
    const int clients = 203, dim = 16;
    fedc_program *p = cohort_program(dim, false);
    float w[16];
    for (int j = 0; j < dim; j++) w[j] = 0.1f * (float)j - 0.7f;
    float *d = cohort_data(clients, dim);
    cohort_result base, other;
    CHECK_OK(run_cohort(p, clients, 1, w, d, dim, &base, NULL));
    for (int threads = 2; threads <= 4; threads++) {
        memset(&other, 0xff, sizeof other);
        CHECK_OK(run_cohort(p, clients, threads, w, d, dim, &other, NULL));
        CHECK_MSG(memcmp(&base, &other, sizeof base) == 0, "results with %d threads differ from 1 thread", threads);
    }
    free(d);
    fedc_program_destroy(p);
}

/* Clients given their work start largest first, in chunks as large as the reorder
 * budget allows (here shrunk to force several chunks), and commit in client order:
 * the aggregates and the kept deltas are the bits of a run in client order. */
static void test_largest_first_keeps_the_bits(void) {
    const int clients = 203, dim = 16;
    fedc_program *p = cohort_program(dim, true);
    float w[16];
    for (int j = 0; j < dim; j++) w[j] = 0.05f * (float)j - 0.3f;
    float *d = cohort_data(clients, dim);
    double work[203];
    for (int i = 0; i < clients; i++) work[i] = (double)((i * 7919) % 101);
    float *base_deltas = malloc(sizeof(float) * clients * dim), *deltas = malloc(sizeof(float) * clients * dim);
    cohort_result base, other;
    CHECK_OK(run_cohort_with(p, clients, 1, NULL, w, d, dim, &base, NULL, base_deltas));
    size_t saved = fedc__cohort_reorder_bytes;
    for (int budget = 0; budget < 2; budget++) {
        fedc__cohort_reorder_bytes = budget ? saved : 5 * 128; /* 5 clients' results a chunk */
        for (int threads = 2; threads <= 4; threads++) {
            memset(&other, 0xff, sizeof other);
            CHECK_OK(run_cohort_with(p, clients, threads, work, w, d, dim, &other, NULL, deltas));
            CHECK_MSG(memcmp(&base, &other, sizeof base) == 0, "largest first on %d threads changed the sums", threads);
            CHECK_MSG(memcmp(base_deltas, deltas, sizeof(float) * clients * dim) == 0,
                      "largest first on %d threads changed the kept deltas", threads);
        }
    }
    fedc__cohort_reorder_bytes = saved;
    free(base_deltas);
    free(deltas);
    free(d);
    fedc_program_destroy(p);
}

/* map -> aggregation streams: the planned memory does not grow with the cohort. */
static void test_streaming_memory_is_independent_of_cohort(void) {
    const int dim = 16;
    fedc_program *p = cohort_program(dim, false), *kept = cohort_program(dim, true);
    float w[16] = {0};
    float *d = cohort_data(1000, dim);
    cohort_result r;
    size_t small, large, kept_small, kept_large;
    CHECK_OK(run_cohort(p, 10, 2, w, d, dim, &r, &small));
    CHECK_OK(run_cohort(p, 1000, 2, w, d, dim, &r, &large));
    CHECK_EQ_INT(small, large);
    /* keeping every client's delta as an output stores them: O(cohort) */
    CHECK_OK(run_cohort(kept, 10, 2, w, d, dim, &r, &kept_small));
    CHECK_OK(run_cohort(kept, 1000, 2, w, d, dim, &r, &kept_large));
    CHECK(kept_large >= kept_small + 990 * dim * sizeof(float));
    free(d);
    fedc_program_destroy(p);
    fedc_program_destroy(kept);
}

/* Every client's delta kept as a clients output, checked per client. */
static void test_clients_outputs(void) {
    const int clients = 4, dim = 3;
    fedc_program *p = cohort_program(dim, true);
    float w[3] = {1, 2, 3};
    float *d = cohort_data(clients, dim);
    fedc_executor *ex;
    fedc_exec_options o = {.clients = clients, .threads = 2};
    CHECK_OK(fedc_executor_create(&ex, p, &o));
    CHECK_OK(fedc_executor_bind(ex, "w", w));
    CHECK_OK(fedc_executor_bind(ex, "d", d));
    CHECK_OK(fedc_executor_run(ex));
    const float *deltas;
    CHECK_OK(fedc_executor_output(ex, "deltas", (const void **)&deltas, NULL));
    for (int i = 0; i < clients * dim; i++) CHECK_NEAR(deltas[i], tanh(w[i % dim] * d[i] + d[i]), 1e-6);
    fedc_executor_destroy(ex);
    free(d);
    fedc_program_destroy(p);
}

/* body(table, idx) = table[idx]: a bad index at one client fails it. */
static fedc_program *lookup_program(void) {
    fedc_program *body, *p;
    if (fedc_program_create(&body) || fedc_program_create(&p)) return NULL;
    fedc_value t = fedc_input(body, "table", fedc_type_make(FEDC_F32, 2, (int64_t[]){4, 2}));
    fedc_value i = fedc_input(body, "idx", fedc_type_make(FEDC_I32, 1, (int64_t[]){1}));
    fedc_program_output(body, "row", fedc_log(body, fedc_gather(body, t, i)));
    fedc_value pt = fedc_input(p, "table", SERVER(4, 2));
    fedc_value pi = fedc_input(p, "idx", typed(FEDC_I32, FEDC_CLIENTS, 1, (int64_t[]){1})), row;
    fedc_map(p, body, (fedc_value[]){fedc_broadcast(p, pt), pi}, 2, &row);
    fedc_program_output(p, "mean", fedc_mean(p, row));
    fedc_program_destroy(body);
    return p;
}

static void test_client_failure_fails_round_or_drops(void) {
    fedc_program *p = lookup_program();
    float table[8] = {1, 2, 3, 4, 5, 6, -7, 8}; /* row 3 gives log(-7): NaN */
    int32_t idx[4] = {0, 1, 9, 2};             /* client 2's index is out of range */
    const char *ids[4] = {"alice", "bob", "carol", "dave"};
    for (int threads = 1; threads <= 3; threads++) {
        fedc_executor *ex;
        fedc_exec_options o = {.clients = 4, .threads = threads, .client_ids = ids};
        CHECK_OK(fedc_executor_create(&ex, p, &o));
        CHECK_OK(fedc_executor_bind(ex, "table", table));
        CHECK_OK(fedc_executor_bind(ex, "idx", idx));
        CHECK_ERR(fedc_executor_run(ex), FEDC_ERANGE, "client 2 (\"carol\"): %2 (gather): gather: index 9");
        fedc_executor_destroy(ex);

        o.on_client_failure = FEDC_DROP_CLIENT;
        CHECK_OK(fedc_executor_create(&ex, p, &o));
        CHECK_OK(fedc_executor_bind(ex, "table", table));
        CHECK_OK(fedc_executor_bind(ex, "idx", idx));
        CHECK_OK(fedc_executor_run(ex));
        int dropped[4], nd = fedc_executor_dropped(ex, dropped, 4);
        CHECK_EQ_INT(nd, 1);
        CHECK_EQ_INT(dropped[0], 2);
        const float *mean;
        CHECK_OK(fedc_executor_output(ex, "mean", (const void **)&mean, NULL));
        CHECK_NEAR(mean[0], (log(1.0) + log(3.0) + log(5.0)) / 3, 1e-6); /* clients 0, 1, 3 */
        CHECK_NEAR(mean[1], (log(2.0) + log(4.0) + log(6.0)) / 3, 1e-6);
        fedc_executor_destroy(ex);
    }
    /* A NaN in a client's result, with checking on. */
    int32_t nan_idx[4] = {0, 3, 1, 2};
    fedc_executor *ex;
    fedc_exec_options o = {.clients = 4, .threads = 2, .check_finite = true};
    CHECK_OK(fedc_executor_create(&ex, p, &o));
    CHECK_OK(fedc_executor_bind(ex, "table", table));
    CHECK_OK(fedc_executor_bind(ex, "idx", nan_idx));
    CHECK_ERR(fedc_executor_run(ex), FEDC_ENONFINITE, "client 1: result \"row\" has a non-finite value at element 0");
    fedc_executor_destroy(ex);
    fedc_program_destroy(p);
}

/* weighted_mean(x, w) where w is a result of an earlier map (stored) and x streams
 * from a later one: the weight is read from the stored copy of each client. */
static void test_weights_from_an_earlier_map(void) {
    fedc_program *wb, *xb, *p;
    CHECK_OK(fedc_program_create(&wb));
    CHECK_OK(fedc_program_create(&xb));
    CHECK_OK(fedc_program_create(&p));
    fedc_value d = fedc_input(wb, "d", fedc_type_make(FEDC_F32, 1, (int64_t[]){2}));
    CHECK_OK(fedc_program_output(wb, "w", fedc_reduce_sum(wb, fedc_square(wb, d), NULL, -1, false)));
    d = fedc_input(xb, "d", fedc_type_make(FEDC_F32, 1, (int64_t[]){2}));
    CHECK_OK(fedc_program_output(xb, "x", fedc_mul(xb, d, fedc_scalar(xb, FEDC_F32, 3))));
    fedc_value pd = fedc_input(p, "d", CLIENTS(2)), w, x;
    CHECK_OK(fedc_map(p, wb, &pd, 1, &w));
    CHECK_OK(fedc_map(p, xb, &pd, 1, &x));
    CHECK_OK(fedc_program_output(p, "y", fedc_weighted_mean(p, x, w)));
    float data[6] = {1, 2, 0, 1, 3, -1}; /* weights 5, 1, 10 */
    for (int threads = 1; threads <= 2; threads++) {
        fedc_executor *ex;
        fedc_exec_options o = {.clients = 3, .threads = threads};
        CHECK_OK(fedc_executor_create(&ex, p, &o));
        CHECK_OK(fedc_executor_bind(ex, "d", data));
        CHECK_OK(fedc_executor_run(ex));
        const float *y;
        CHECK_OK(fedc_executor_output(ex, "y", (const void **)&y, NULL));
        CHECK_NEAR(y[0], 3.0 * (5 * 1 + 1 * 0 + 10 * 3) / 16, 1e-6);
        CHECK_NEAR(y[1], 3.0 * (5 * 2 + 1 * 1 + 10 * -1) / 16, 1e-6);
        fedc_executor_destroy(ex);
    }
    fedc_program_destroy(wb);
    fedc_program_destroy(xb);
    fedc_program_destroy(p);
}

/* A profile counts every op of the map's body once per client, over every run. */
static void test_profile(void) {
    const int clients = 5, dim = 4;
    fedc_program *p = cohort_program(dim, false);
    float w[4] = {1, 2, 3, 4};
    float *d = cohort_data(clients, dim);
    fedc_executor *ex;
    fedc_exec_options o = {.clients = clients, .threads = 2, .profile = true};
    CHECK_OK(fedc_executor_create(&ex, p, &o));
    CHECK_OK(fedc_executor_bind(ex, "w", w));
    CHECK_OK(fedc_executor_bind(ex, "d", d));
    CHECK_OK(fedc_executor_run(ex));
    CHECK_OK(fedc_executor_run(ex));
    char buf[4096] = {0};
    FILE *f = fmemopen(buf, sizeof buf - 1, "w");
    CHECK_OK(fedc_executor_profile(ex, f));
    fclose(f);
    /* the body's tanh runs once per client per run: 2 runs x 5 clients */
    const char *line = strstr(buf, "tanh");
    CHECK_MSG(line && atoi(line + 4) == 10, "profile:\n%s", buf);
    CHECK(strstr(buf, "total"));
    fedc_executor_destroy(ex);
    o.profile = false;
    CHECK_OK(fedc_executor_create(&ex, p, &o));
    CHECK_ERR(fedc_executor_profile(ex, stderr), FEDC_EINVAL, "without profile");
    fedc_executor_destroy(ex);
    free(d);
    fedc_program_destroy(p);
}

static void test_executor_needs_a_cohort_size(void) {
    fedc_program *p = linear_regression();
    fedc_executor *ex = NULL;
    CHECK_ERR(fedc_executor_create(&ex, p, NULL), FEDC_EINVAL, "set options.clients");
    CHECK(ex == NULL);
    fedc_program_destroy(p);
}

static void test_segments(void) {
    fedc_program *p = linear_regression();
    fedc_segment seg[8];
    int n = fedc_program_segments(p, seg, 8);
    /* broadcast x, client work (map + result), aggregate (mean) */
    CHECK_EQ_INT(n, 3);
    CHECK_EQ_INT(seg[0].kind, FEDC_SEGMENT_BROADCAST);
    CHECK_EQ_INT(seg[1].kind, FEDC_SEGMENT_CLIENTS);
    CHECK_EQ_INT(seg[2].kind, FEDC_SEGMENT_AGGREGATE);
    CHECK(!strcmp(fedc_segment_name(seg[1].kind), "clients"));
    fedc_program_destroy(p);
}

int main(int argc, char **argv) {
    static const fedc_test tests[] = {
        {"placement rules", test_placement_rules},
        {"map rules", test_map_rules},
        {"broadcast then sum", test_broadcast_then_sum},
        {"primitive jacobians", test_primitive_jacobians},
        {"linear regression known answers", test_linear_regression_known_answers},
        {"derivative communicates through primitives", test_derivative_communicates_through_primitives},
        {"map aggregates match hand computation", test_map_aggregates_match_hand_computation},
        {"bitwise identical for 1 to 4 threads", test_bitwise_identical_for_1_to_4_threads},
        {"largest first keeps the bits", test_largest_first_keeps_the_bits},
        {"streaming memory is independent of cohort", test_streaming_memory_is_independent_of_cohort},
        {"clients outputs", test_clients_outputs},
        {"client failure fails round or drops", test_client_failure_fails_round_or_drops},
        {"weights from an earlier map", test_weights_from_an_earlier_map},
        {"profile", test_profile},
        {"executor needs a cohort size", test_executor_needs_a_cohort_size},
        {"segments", test_segments},
    };
    return fedc_test_main(argc, argv, tests, FEDC_COUNT_OF(tests));
}
