/* The placement hierarchy server ⊃ groups ⊃ clients (issue 36): the type rules
 * and their messages, the text format, known answers of every primitive per
 * level, a map at the groups, bits that do not depend on the threads, the
 * one-group program against the flat one (values and derivatives, bit for bit),
 * and reverse and forward derivatives against known answers and finite
 * differences. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fedc/ad.h"
#include "fedc/exec.h"
#include "fedc/export.h"
#include "fedc/form.h"
#include "fedc/tree.h"
#include "harness.h"
#include "ir/ir.h"

static fedc_type typed(fedc_dtype dt, fedc_placement pl, int rank, const int64_t *dims) {
    fedc_type t = fedc_type_make(dt, rank, dims);
    t.placement = pl;
    return t;
}

#define VEC(dt, pl, n) typed(dt, pl, 1, (int64_t[]){n})
#define SCALAR(dt, pl) typed(dt, pl, 0, NULL)

/* One run of p: inputs by name, then `nout` outputs copied to outs (bytes each
 * at most cap). Returns the status of create/run. */
typedef struct run_spec {
    int clients, groups, threads;
    const int *sizes;
    int nin;
    const char *const *names;
    const void *const *data;
} run_spec;

static fedc_status run(const fedc_program *p, const run_spec *r, int nout, const char *const *outs, void *const *to,
                       size_t cap) {
    fedc_executor *ex = NULL;
    fedc_exec_options o = {.clients = r->clients, .groups = r->groups, .group_sizes = r->sizes, .threads = r->threads};
    fedc_status st = fedc_executor_create(&ex, p, &o);
    for (int i = 0; !st && i < r->nin; i++) st = fedc_executor_bind(ex, r->names[i], r->data[i]);
    if (!st) st = fedc_executor_run(ex);
    for (int k = 0; !st && k < nout; k++) {
        const void *y;
        fedc_type t;
        st = fedc_executor_output(ex, outs[k], &y, &t);
        if (st) break;
        size_t n = fedc_type_bytes(&t);
        if (t.placement == FEDC_CLIENTS) n *= (size_t)r->clients;
        if (t.placement == FEDC_GROUPS) n *= (size_t)(r->groups ? r->groups : 1);
        memcpy(to[k], y, n < cap ? n : cap);
    }
    fedc_executor_destroy(ex);
    return st;
}

/* ------------------------------------------------------------ type rules -- */

static void test_levels_are_typed(void) {
    fedc_program *p;
    CHECK_OK(fedc_program_create(&p));
    fedc_value s = fedc_input(p, "s", VEC(FEDC_F32, FEDC_SERVER, 3));
    fedc_value c = fedc_input(p, "c", VEC(FEDC_F32, FEDC_CLIENTS, 3));
    fedc_value g = fedc_broadcast_down(p, s);
    CHECK_EQ_INT(fedc_value_type(p, g).placement, FEDC_GROUPS);
    CHECK_EQ_INT(fedc_value_type(p, fedc_broadcast_down(p, g)).placement, FEDC_CLIENTS);
    CHECK_EQ_INT(fedc_value_type(p, fedc_sum_up(p, c)).placement, FEDC_GROUPS);
    CHECK_EQ_INT(fedc_value_type(p, fedc_mean_up(p, fedc_sum_up(p, c))).placement, FEDC_SERVER);
    CHECK_EQ_INT(fedc_value_type(p, fedc_group_size(p, FEDC_F32)).placement, FEDC_GROUPS);
    CHECK_EQ_INT(fedc_value_type(p, fedc_num_groups(p, FEDC_I32)).placement, FEDC_SERVER);
    CHECK_EQ_INT(fedc_value_type(p, fedc_mul(p, g, g)).placement, FEDC_GROUPS);
    CHECK_OK(fedc_program_status(p));
    CHECK_OK(fedc_program_verify(p));
    CHECK_EQ_INT(fedc_placement_up(FEDC_CLIENTS), FEDC_GROUPS);
    CHECK_EQ_INT(fedc_placement_down(FEDC_GROUPS), FEDC_CLIENTS);
    CHECK_EQ_INT(fedc_placement_up(FEDC_SERVER), FEDC_LOCAL);
    fedc_add(p, g, c); /* two levels never meet in one op */
    CHECK_ERR(fedc_program_status(p), FEDC_ETYPE, "f32[3]@groups");
    fedc_program_destroy(p);

    struct { const char *why; } cases[] = {{"broadcast_down of @clients"}, {"sum_up of @server"},
                                           {"weighted_mean_up weight"}, {"map across levels"}};
    for (int k = 0; k < FEDC_COUNT_OF(cases); k++) {
        CHECK_OK(fedc_program_create(&p));
        s = fedc_input(p, "s", VEC(FEDC_F32, FEDC_SERVER, 3));
        c = fedc_input(p, "c", VEC(FEDC_F32, FEDC_CLIENTS, 3));
        fedc_value gw = fedc_input(p, "gw", SCALAR(FEDC_F32, FEDC_GROUPS));
        if (k == 0) {
            fedc_broadcast_down(p, c);
            CHECK_ERR(fedc_program_status(p), FEDC_ETYPE, "broadcast_down: operand is f32[3]@clients; broadcast_down moves");
        } else if (k == 1) {
            fedc_sum_up(p, s);
            CHECK_ERR(fedc_program_status(p), FEDC_ETYPE, "operand is f32[3]@server; sum_up moves a @clients value to @groups");
        } else if (k == 2) {
            fedc_weighted_mean_up(p, c, gw);
            CHECK_ERR(fedc_program_status(p), FEDC_ETYPE, "the weight is f32[]@groups; it must be one f32 scalar per member (f32[]@clients)");
        } else {
            fedc_program *b;
            CHECK_OK(fedc_program_create(&b));
            fedc_value x = fedc_input(b, "x", VEC(FEDC_F32, FEDC_LOCAL, 3)), y = fedc_input(b, "y", SCALAR(FEDC_F32, FEDC_LOCAL));
            fedc_program_output(b, "z", fedc_mul(b, x, y));
            fedc_value r;
            fedc_map(p, b, (fedc_value[]){c, gw}, 2, &r);
            CHECK_ERR(fedc_program_status(p), FEDC_ETYPE, "argument 1 is f32[]@groups but argument 0 is f32[3]@clients");
            fedc_program_destroy(b);
        }
        (void)cases[k].why;
        fedc_program_destroy(p);
    }
    /* the verifier re-checks the levels of a program however it was made */
    CHECK_OK(fedc_program_create(&p));
    s = fedc_input(p, "s", VEC(FEDC_F32, FEDC_SERVER, 3));
    fedc_value up = fedc_sum_up(p, fedc_broadcast_down(p, s));
    fedc_program_output(p, "up", up);
    CHECK_OK(fedc_program_verify(p));
    p->nodes[1].op = FEDC_OP_SUM_UP; /* a server value summed up */
    {
        CHECK_ERR(fedc_program_verify(p), FEDC_ETYPE, "%1 sum_up: operand is f32[3]@server");
        CHECK(strstr(fedc_errmsg(), "@server") != NULL);
        p->nodes[1].op = FEDC_OP_BROADCAST_DOWN;
        fedc_program_destroy(p);
    }
}

/* ------------------------------------------------------------ a program -- */

/* The worked program of docs/federated.md: each group averages its clients'
 * w * x (a map at the clients), scales by a group's own factor (a map at the
 * groups), and the server sums the groups' results weighted by group size. */
static fedc_program *worked_program(fedc_dtype dt) {
    fedc_program *p, *cb, *gb;
    if (fedc_program_create(&p) || fedc_program_create(&cb) || fedc_program_create(&gb)) return NULL;
    fedc_value w = fedc_input(p, "w", VEC(dt, FEDC_SERVER, 2));
    fedc_value x = fedc_input(p, "x", VEC(dt, FEDC_CLIENTS, 2));
    fedc_value a = fedc_input(p, "a", SCALAR(dt, FEDC_GROUPS));
    fedc_value cw = fedc_input(cb, "w", VEC(dt, FEDC_LOCAL, 2)), cx = fedc_input(cb, "x", VEC(dt, FEDC_LOCAL, 2));
    fedc_program_output(cb, "y", fedc_tanh(cb, fedc_mul(cb, cw, cx)));
    fedc_value ga = fedc_input(gb, "a", SCALAR(dt, FEDC_LOCAL)), gy = fedc_input(gb, "y", VEC(dt, FEDC_LOCAL, 2));
    fedc_program_output(gb, "z", fedc_mul(gb, fedc_square(gb, ga), gy));
    fedc_value wc = fedc_broadcast_down(p, fedc_broadcast_down(p, w)), y, z;
    fedc_map(p, cb, (fedc_value[]){wc, x}, 2, &y);
    fedc_value gmean = fedc_mean_up(p, y);
    fedc_map(p, gb, (fedc_value[]){a, gmean}, 2, &z);
    fedc_value top = fedc_weighted_mean_up(p, z, fedc_group_size(p, dt));
    fedc_value loss = fedc_reduce_sum(p, fedc_mul(p, top, top), NULL, -1, false);
    fedc_program_output(p, "loss", loss);
    fedc_program_output(p, "per_group", z);
    fedc_program_destroy(cb);
    fedc_program_destroy(gb);
    return p;
}

static void test_text_round_trip(void) {
    fedc_program *p = worked_program(FEDC_F32), *q = NULL;
    CHECK(p && !fedc_program_status(p));
    if (!p) return;
    char *text = NULL, *again = NULL;
    CHECK_OK(fedc_program_to_string(p, &text));
    CHECK(text && strstr(text, "@groups") && strstr(text, "broadcast_down(") && strstr(text, "mean_up(") &&
          strstr(text, "weighted_mean_up(") && strstr(text, "group_size"));
    CHECK_OK(fedc_program_parse(text, &q));
    if (q) CHECK_OK(fedc_program_to_string(q, &again));
    CHECK(text && again && !strcmp(text, again));
    fedc_free(text);
    fedc_free(again);
    fedc_program_destroy(q);
    /* a level the text names wrongly is refused at the place */
    CHECK_ERR(fedc_program_parse("fedc program\n%0 = input \"x\" : f32[2]@regions\n", &q), FEDC_EPARSE,
              "server, groups, clients");
    /* a text that moves a value two levels in one step names the node */
    CHECK_ERR(fedc_program_parse("fedc program\n%0 = input \"x\" : f32[2]@clients\n"
                                 "%1 = broadcast_down(%0) : f32[2]@groups\n", &q),
              FEDC_EPARSE, "line 3: broadcast_down: operand is f32[2]@clients; broadcast_down moves");
    fedc_program_destroy(p);
}

/* ------------------------------------------------------- known answers -- */

static void test_known_answers(void) {
    /* 5 clients in groups of 2 and 3 */
    fedc_program *p;
    CHECK_OK(fedc_program_create(&p));
    fedc_value s = fedc_input(p, "s", SCALAR(FEDC_F64, FEDC_SERVER));
    fedc_value x = fedc_input(p, "x", SCALAR(FEDC_F64, FEDC_CLIENTS));
    fedc_value w = fedc_input(p, "w", SCALAR(FEDC_F64, FEDC_CLIENTS));
    fedc_value gs = fedc_broadcast_down(p, s);
    fedc_program_output(p, "down2", fedc_add(p, fedc_broadcast_down(p, gs), x));
    fedc_program_output(p, "gsum", fedc_sum_up(p, x));
    fedc_program_output(p, "gmean", fedc_mean_up(p, x));
    fedc_program_output(p, "gwmean", fedc_weighted_mean_up(p, x, w));
    fedc_program_output(p, "top_sum", fedc_sum_up(p, fedc_sum_up(p, x)));
    fedc_program_output(p, "top_mean", fedc_mean_up(p, fedc_mean_up(p, x)));
    fedc_program_output(p, "sizes", fedc_group_size(p, FEDC_F64));
    fedc_program_output(p, "ngroups", fedc_num_groups(p, FEDC_I32));
    fedc_program_output(p, "scaled", fedc_mul(p, gs, fedc_sum_up(p, x))); /* an array op per group */
    fedc_program_output(p, "flat", fedc_sum(p, x));                      /* the flat primitives stay */
    CHECK_OK(fedc_program_status(p));
    double sv = 10, xv[5] = {1, 2, 3, 4, 5}, wv[5] = {1, 3, 1, 1, 2};
    const char *names[] = {"s", "x", "w"};
    const void *data[] = {&sv, xv, wv};
    run_spec r = {5, 2, 1, (int[]){2, 3}, 3, names, data};
    double down2[5], gsum[2], gmean[2], gw[2], ts, tm, sizes[2], scaled[2], flat;
    int32_t ng = 0;
    const char *outs[] = {"down2", "gsum", "gmean", "gwmean", "top_sum", "top_mean", "sizes", "ngroups", "scaled", "flat"};
    CHECK_OK(run(p, &r, 10, outs, (void *[]){down2, gsum, gmean, gw, &ts, &tm, sizes, &ng, scaled, &flat}, 64));
    for (int i = 0; i < 5; i++) CHECK_NEAR(down2[i], 10 + xv[i], 0);
    CHECK_NEAR(gsum[0], 3, 0);
    CHECK_NEAR(gsum[1], 12, 0);
    CHECK_NEAR(gmean[0], 1.5, 1e-15);
    CHECK_NEAR(gmean[1], 4, 1e-15);
    CHECK_NEAR(gw[0], (1 * 1 + 2 * 3) / 4.0, 1e-15);
    CHECK_NEAR(gw[1], (3 * 1 + 4 * 1 + 5 * 2) / 4.0, 1e-15);
    CHECK_NEAR(ts, 15, 0);
    CHECK_NEAR(tm, (1.5 + 4) / 2, 1e-15);
    CHECK_NEAR(sizes[0], 2, 0);
    CHECK_NEAR(sizes[1], 3, 0);
    CHECK_EQ_INT(ng, 2);
    CHECK_NEAR(scaled[0], 30, 0);
    CHECK_NEAR(scaled[1], 120, 0);
    CHECK_NEAR(flat, 15, 0);

    /* every client not absent is in a group */
    r.sizes = (int[]){2, 2};
    CHECK_ERR(run(p, &r, 0, NULL, NULL, 0), FEDC_EINVAL, "client 4 is in no group (the 2 groups' sizes sum to 4");
    r.sizes = (int[]){3, 3};
    CHECK_ERR(run(p, &r, 0, NULL, NULL, 0), FEDC_EINVAL, "group_sizes sum past the cohort's 5 clients (at group 1)");
    r.sizes = (int[]){5, 0};
    CHECK_ERR(run(p, &r, 0, NULL, NULL, 0), FEDC_EINVAL, "group_sizes[1] is 0");
    r.sizes = NULL;
    CHECK_ERR(run(p, &r, 0, NULL, NULL, 0), FEDC_EINVAL, "group_sizes is NULL");
    /* no groups given: one group of every client */
    r.groups = 0;
    CHECK_OK(run(p, &r, 2, (const char *[]){"gsum", "ngroups"}, (void *[]){gsum, &ng}, 8));
    CHECK_NEAR(gsum[0], 15, 0);
    CHECK_EQ_INT(ng, 1);
    fedc_program_destroy(p);
}

static fedc_program *stream_program(int dim, bool keep);

/* The groups change between runs (a round's sampled groups): each run is a
 * fresh executor's with those groups, bit for bit, in the memory of the most
 * groups; the clients after the groups are absent. */
static void test_groups_change_between_runs(void) {
    enum { DIM = 16, N = 12 };
    fedc_program *p = stream_program(DIM, false);
    CHECK(p != NULL);
    if (!p) return;
    float x[N * DIM], w[DIM];
    for (int i = 0; i < N * DIM; i++) x[i] = (float)((i * 2654435761u) % 2000) / 1000.0f - 1.0f;
    for (int j = 0; j < DIM; j++) w[j] = 0.1f * (float)(j - 7);
    fedc_executor *ex = NULL;
    fedc_exec_options o = {.clients = N, .groups = 4, .group_sizes = (int[]){3, 3, 3, 3}, .threads = 2};
    CHECK_OK(fedc_executor_create(&ex, p, &o));
    if (!ex) return fedc_program_destroy(p);
    size_t planned = fedc_executor_planned_bytes(ex);
    CHECK_OK(fedc_executor_bind(ex, "w", w));
    CHECK_OK(fedc_executor_bind(ex, "x", x));
    static const int sizes[3][4] = {{5, 1, 6}, {2, 2}, {1, 4, 2, 3}}, ngroups[3] = {3, 2, 4};
    uint8_t absent[N];
    for (int run = 0; run < 3; run++) {
        int n = ngroups[run], used = 0;
        for (int g = 0; g < n; g++) used += sizes[run][g];
        for (int i = 0; i < N; i++) absent[i] = i >= used;
        CHECK_OK(fedc_executor_set_groups(ex, n, sizes[run]));
        CHECK_OK(fedc_executor_set_absent(ex, absent));
        CHECK_OK(fedc_executor_run(ex));
        CHECK_MSG(fedc_executor_planned_bytes(ex) == planned, "run %d planned other memory", run);
        /* a fresh executor of the groups' clients alone */
        fedc_executor *fresh = NULL;
        fedc_exec_options fo = {.clients = used, .groups = n, .group_sizes = sizes[run], .threads = 1};
        CHECK_OK(fedc_executor_create(&fresh, p, &fo));
        if (!fresh) break;
        CHECK_OK(fedc_executor_bind(fresh, "w", w));
        CHECK_OK(fedc_executor_bind(fresh, "x", x));
        CHECK_OK(fedc_executor_run(fresh));
        const char *names[] = {"mean", "wmean", "sum", "top"};
        for (int k = 0; k < 4; k++) {
            const float *a = NULL, *b = NULL;
            CHECK_OK(fedc_executor_output(ex, names[k], (const void **)&a, NULL));
            CHECK_OK(fedc_executor_output(fresh, names[k], (const void **)&b, NULL));
            size_t count = k == 3 ? DIM : (size_t)n * DIM;
            CHECK_MSG(a && b && !memcmp(a, b, count * sizeof(float)), "run %d: %s differs from a fresh executor's", run,
                      names[k]);
        }
        fedc_executor_destroy(fresh);
    }
    /* a known answer: the last run's group 1 is clients 1..4 */
    const float *mean = NULL;
    CHECK_OK(fedc_executor_output(ex, "mean", (const void **)&mean, NULL));
    for (int j = 0; mean && j < DIM; j++) {
        double m = 0;
        for (int i = 1; i < 5; i++) m += tanh((0.1 * (j - 7) + 1) * x[i * DIM + j]) / 4;
        CHECK_NEAR(mean[DIM + j], m, 1e-5);
    }
    /* refused, and the groups left as they were */
    CHECK_ERR(fedc_executor_set_groups(ex, 5, (int[]){1, 1, 1, 1, 1}), FEDC_EINVAL, "5 groups; use 0 (one group) to 4");
    CHECK_ERR(fedc_executor_set_groups(ex, 2, (int[]){1, 0}), FEDC_EINVAL, "group_sizes[1] is 0");
    CHECK_ERR(fedc_executor_set_groups(ex, 2, (int[]){6, 7}), FEDC_EINVAL, "sum past the cohort's 12 clients");
    CHECK_OK(fedc_executor_run(ex));
    CHECK_OK(fedc_executor_set_absent(ex, NULL));
    CHECK_ERR(fedc_executor_run(ex), FEDC_EINVAL, "client 10 is in no group");
    CHECK_OK(fedc_executor_set_groups(ex, 0, NULL)); /* one group of all */
    CHECK_OK(fedc_executor_run(ex));
    fedc_executor_destroy(ex);
    fedc_program_destroy(p);
}

/* The worked program in f64 at w, a, x: its loss and per-group values. */
static fedc_status run_worked(const fedc_program *p, int threads, const double *w, const double *a, const double *x,
                              double *loss, double *per_group) {
    const char *names[] = {"w", "a", "x"};
    const void *data[] = {w, a, x};
    run_spec r = {7, 3, threads, (int[]){3, 1, 3}, 3, names, data};
    return run(p, &r, 2, (const char *[]){"loss", "per_group"}, (void *[]){loss, per_group}, 6 * sizeof(double));
}

static const double W[2] = {0.7, -0.4}, A[3] = {1.5, -0.5, 2.0};
static const double X[14] = {0.3, 1.2, -0.8, 0.5, 1.1, -1.0, 0.2, 0.9, -0.6, 0.4, 1.3, 0.7, -0.2, -1.4};

static void test_group_map_and_threads(void) {
    fedc_program *p = worked_program(FEDC_F64);
    CHECK(p && !fedc_program_status(p));
    if (!p) return;
    double loss = 0, per[6] = {0}, want[6] = {0}, top[2] = {0};
    CHECK_OK(run_worked(p, 1, W, A, X, &loss, per));
    int start[4] = {0, 3, 4, 7};
    for (int g = 0; g < 3; g++) {
        for (int j = 0; j < 2; j++) {
            double m = 0;
            for (int i = start[g]; i < start[g + 1]; i++) m += tanh(W[j] * X[2 * i + j]);
            want[2 * g + j] = A[g] * A[g] * m / (start[g + 1] - start[g]);
            CHECK_NEAR(per[2 * g + j], want[2 * g + j], 1e-14);
            top[j] += want[2 * g + j] * (start[g + 1] - start[g]) / 7.0;
        }
    }
    CHECK_NEAR(loss, top[0] * top[0] + top[1] * top[1], 1e-14);
    for (int threads = 2; threads <= 4; threads++) {
        double l2 = 0, p2[6] = {0};
        CHECK_OK(run_worked(p, threads, W, A, X, &l2, p2));
        CHECK_MSG(!memcmp(&l2, &loss, sizeof loss) && !memcmp(p2, per, sizeof per), "%d threads changed the bits", threads);
    }
    fedc_program_destroy(p);
}

/* ------------------------------------------------------ one group = flat -- */

/* A FedAvg-like round, flat (broadcast, map, mean) or with a level between
 * (broadcast_down twice, map, mean_up twice). */
static fedc_program *round_forward(bool hierarchical) {
    fedc_program *p, *b;
    if (fedc_program_create(&p) || fedc_program_create(&b)) return NULL;
    fedc_value w = fedc_input(p, "w", VEC(FEDC_F32, FEDC_SERVER, 4));
    fedc_value x = fedc_input(p, "x", VEC(FEDC_F32, FEDC_CLIENTS, 4));
    fedc_value bw = fedc_input(b, "w", VEC(FEDC_F32, FEDC_LOCAL, 4)), bx = fedc_input(b, "x", VEC(FEDC_F32, FEDC_LOCAL, 4));
    fedc_value e = fedc_sub(b, fedc_tanh(b, fedc_mul(b, bw, bx)), bx);
    fedc_program_output(b, "l", fedc_reduce_sum(b, fedc_mul(b, e, e), NULL, -1, false));
    fedc_value wc = hierarchical ? fedc_broadcast_down(p, fedc_broadcast_down(p, w)) : fedc_broadcast(p, w), l;
    fedc_map(p, b, (fedc_value[]){wc, x}, 2, &l);
    fedc_value loss = hierarchical ? fedc_mean_up(p, fedc_mean_up(p, l)) : fedc_mean(p, l);
    fedc_program_output(p, "loss", loss);
    fedc_program_destroy(b);
    return p;
}

/* p's gradient in w (p is destroyed). */
static fedc_program *grad_of(fedc_program *p) {
    fedc_program *g = NULL;
    if (p && fedc_grad(p, "loss", (const char *[]){"w"}, 1, &g)) g = NULL;
    fedc_program_destroy(p);
    return g;
}

static fedc_program *round_program(bool hierarchical) { return grad_of(round_forward(hierarchical)); }

static void test_one_group_is_flat_bit_for_bit(void) {
    enum { N = 37 };
    float w[4] = {0.5f, -1.25f, 0.3f, 2.0f}, x[N * 4];
    fedc_test_seed(36);
    for (int i = 0; i < N * 4; i++) x[i] = (float)((i * 7919 % 1000) / 500.0 - 1.0) * 1.7f;
    fedc_program *flat = round_program(false), *hier = round_program(true);
    CHECK(flat && hier);
    if (!flat || !hier) return fedc_program_destroy(flat), fedc_program_destroy(hier);
    const char *names[] = {"w", "x"};
    const void *data[] = {w, x};
    const char *outs[] = {"loss", "grad_w"};
    float lf = 0, gf[4] = {0}, lh = 0, gh[4] = {0};
    run_spec r = {N, 0, 3, NULL, 2, names, data};
    CHECK_OK(run(flat, &r, 2, outs, (void *[]){&lf, gf}, 16));
    CHECK_OK(run(hier, &r, 2, outs, (void *[]){&lh, gh}, 16));
    CHECK(lf != 0 && gf[0] != 0);
    CHECK_MSG(!memcmp(&lf, &lh, sizeof lf), "loss %.9g (flat) vs %.9g (one group)", lf, lh);
    CHECK_MSG(!memcmp(gf, gh, sizeof gf), "grad_w[0] %.9g (flat) vs %.9g (one group)", gf[0], gh[0]);
    /* one group given explicitly is the same */
    r.groups = 1, r.sizes = (int[]){N};
    CHECK_OK(run(hier, &r, 2, outs, (void *[]){&lh, gh}, 16));
    CHECK(!memcmp(&lf, &lh, sizeof lf) && !memcmp(gf, gh, sizeof gf));
    fedc_program_destroy(flat);
    fedc_program_destroy(hier);
}

/* ------------------------------------------------------------ map_groups -- */

/* The worked program with its group level written as a flat program run per
 * group (map_groups): the group is the body's server, its clients the body's. */
static fedc_program *worked_by_map_groups(void) {
    fedc_program *p, *body, *cb;
    if (fedc_program_create(&p) || fedc_program_create(&body) || fedc_program_create(&cb)) return NULL;
    fedc_value cw = fedc_input(cb, "w", VEC(FEDC_F64, FEDC_LOCAL, 2)), cx = fedc_input(cb, "x", VEC(FEDC_F64, FEDC_LOCAL, 2));
    fedc_program_output(cb, "y", fedc_tanh(cb, fedc_mul(cb, cw, cx)));
    fedc_value bw = fedc_input(body, "w", VEC(FEDC_F64, FEDC_SERVER, 2));
    fedc_value ba = fedc_input(body, "a", SCALAR(FEDC_F64, FEDC_SERVER));
    fedc_value bx = fedc_input(body, "x", VEC(FEDC_F64, FEDC_CLIENTS, 2)), y;
    fedc_map(body, cb, (fedc_value[]){fedc_broadcast(body, bw), bx}, 2, &y);
    fedc_program_output(body, "z", fedc_mul(body, fedc_square(body, ba), fedc_mean(body, y)));
    fedc_program_output(body, "n", fedc_num_clients(body, FEDC_F64));
    fedc_value w = fedc_input(p, "w", VEC(FEDC_F64, FEDC_SERVER, 2));
    fedc_value x = fedc_input(p, "x", VEC(FEDC_F64, FEDC_CLIENTS, 2));
    fedc_value a = fedc_input(p, "a", SCALAR(FEDC_F64, FEDC_GROUPS)), zn[2];
    fedc_map_groups(p, body, (fedc_value[]){fedc_broadcast_down(p, w), a, x}, 3, zn);
    fedc_value top = fedc_weighted_mean_up(p, zn[0], zn[1]);
    fedc_program_output(p, "loss", fedc_reduce_sum(p, fedc_mul(p, top, top), NULL, -1, false));
    fedc_program_output(p, "per_group", zn[0]);
    fedc_program_destroy(body);
    fedc_program_destroy(cb);
    return p;
}

static void test_map_groups(void) {
    fedc_program *p = worked_by_map_groups(), *q = worked_program(FEDC_F64), *gp = NULL, *gq = NULL;
    CHECK(p && q && !fedc_program_status(p));
    if (!p || !q || fedc_program_status(p)) return fedc_program_destroy(p), fedc_program_destroy(q);
    double lp, lq, pp[6], pq[6];
    CHECK_OK(run_worked(p, 2, W, A, X, &lp, pp));
    CHECK_OK(run_worked(q, 2, W, A, X, &lq, pq));
    CHECK_NEAR(lp, lq, 1e-14);
    for (int k = 0; k < 6; k++) CHECK_NEAR(pp[k], pq[k], 1e-14);
    const char *wrt[] = {"w", "a", "x"};
    CHECK_OK(fedc_grad(p, "loss", wrt, 3, &gp));
    CHECK_OK(fedc_grad(q, "loss", wrt, 3, &gq));
    double g1[3][14], g2[3][14];
    run_spec r = {7, 3, 2, (int[]){3, 1, 3}, 3, wrt, (const void *[]){W, A, X}};
    const char *outs[] = {"grad_w", "grad_a", "grad_x"};
    if (gp && gq) {
        CHECK_OK(run(gp, &r, 3, outs, (void *[]){g1[0], g1[1], g1[2]}, sizeof g1[0]));
        CHECK_OK(run(gq, &r, 3, outs, (void *[]){g2[0], g2[1], g2[2]}, sizeof g2[0]));
        int len[3] = {2, 3, 14};
        for (int k = 0; k < 3; k++)
            for (int i = 0; i < len[k]; i++) CHECK_NEAR(g1[k][i], g2[k][i], 1e-13);
    }
    fedc_program_destroy(gp);
    fedc_program_destroy(gq);
    fedc_program_destroy(p);
    fedc_program_destroy(q);

    /* what a group's body cannot hold, and arguments at the wrong level */
    fedc_program *outer, *body;
    CHECK_OK(fedc_program_create(&outer));
    CHECK_OK(fedc_program_create(&body));
    fedc_value bx = fedc_input(body, "x", VEC(FEDC_F32, FEDC_CLIENTS, 2)), r1;
    fedc_program_output(body, "s", fedc_sum_up(body, bx));
    fedc_value x = fedc_input(outer, "x", VEC(FEDC_F32, FEDC_CLIENTS, 2));
    CHECK_ERR(fedc_map_groups(outer, body, &x, 1, &r1), FEDC_ETYPE, "%1 (sum_up) cannot run in a group");
    CHECK(r1 == FEDC_NONE);
    fedc_program_destroy(outer);
    CHECK_OK(fedc_program_create(&outer));
    fedc_value s = fedc_input(outer, "s", VEC(FEDC_F32, FEDC_SERVER, 2));
    CHECK_ERR(fedc_map_groups(outer, body, &s, 1, &r1), FEDC_ETYPE,
              "argument 0 is f32[2]@server but the body's input \"x\" takes f32[2]@clients");
    fedc_program_destroy(outer);
    fedc_program_destroy(body);
}

/* A flat round run as the body of the one group is the flat round, bit for bit,
 * value and gradient. */
static void test_flat_round_in_one_group(void) {
    fedc_program *body = round_forward(false), *p;
    CHECK_OK(fedc_program_create(&p));
    fedc_value w = fedc_input(p, "w", VEC(FEDC_F32, FEDC_SERVER, 4));
    fedc_value x = fedc_input(p, "x", VEC(FEDC_F32, FEDC_CLIENTS, 4)), l;
    CHECK_OK(fedc_map_groups(p, body, (fedc_value[]){fedc_broadcast_down(p, w), x}, 2, &l));
    fedc_program_output(p, "loss", fedc_mean_up(p, l));
    fedc_program *gf = grad_of(body), *gh = grad_of(p);
    CHECK(gf && gh);
    enum { N = 29 };
    float wv[4] = {0.25f, -0.5f, 1.5f, 0.75f}, xv[N * 4], lf = 0, lh = 0, df[4], dh[4];
    for (int i = 0; i < N * 4; i++) xv[i] = (float)((i * 6007 % 997) / 498.0 - 1.0);
    run_spec r = {N, 0, 2, NULL, 2, (const char *[]){"w", "x"}, (const void *[]){wv, xv}};
    const char *outs[] = {"loss", "grad_w"};
    if (gf && gh) {
        CHECK_OK(run(gf, &r, 2, outs, (void *[]){&lf, df}, sizeof df));
        CHECK_OK(run(gh, &r, 2, outs, (void *[]){&lh, dh}, sizeof dh));
        CHECK(lf > 0 && !memcmp(&lf, &lh, sizeof lf) && !memcmp(df, dh, sizeof df));
    }
    fedc_program_destroy(gf);
    fedc_program_destroy(gh);
}

/* ------------------------------------------------------------- streaming -- */

/* A map at the clients whose results only feed aggregations up to the groups
 * streams them (memory groups x model); keeping them as an output stores them. */
static fedc_program *stream_program(int dim, bool keep) {
    fedc_program *p, *b;
    if (fedc_program_create(&p) || fedc_program_create(&b)) return NULL;
    fedc_value w = fedc_input(p, "w", VEC(FEDC_F32, FEDC_SERVER, dim));
    fedc_value x = fedc_input(p, "x", VEC(FEDC_F32, FEDC_CLIENTS, dim));
    fedc_value bw = fedc_input(b, "w", VEC(FEDC_F32, FEDC_LOCAL, dim)), bx = fedc_input(b, "x", VEC(FEDC_F32, FEDC_LOCAL, dim));
    fedc_program_output(b, "y", fedc_tanh(b, fedc_add(b, fedc_mul(b, bw, bx), bx)));
    fedc_program_output(b, "k", fedc_exp(b, fedc_reduce_mean(b, bx, NULL, -1, false)));
    fedc_value r[2];
    fedc_map(p, b, (fedc_value[]){fedc_broadcast_down(p, fedc_broadcast_down(p, w)), x}, 2, r);
    fedc_value m = fedc_mean_up(p, r[0]);
    fedc_program_output(p, "mean", m);
    fedc_program_output(p, "wmean", fedc_weighted_mean_up(p, r[0], r[1]));
    fedc_program_output(p, "sum", fedc_sum_up(p, r[0]));
    fedc_program_output(p, "top", fedc_mean_up(p, m));
    if (keep) fedc_program_output(p, "y", r[0]);
    fedc_program_destroy(b);
    return p;
}

static fedc_status run_stream(const fedc_program *p, int clients, int groups, int threads, const float *x,
                              float out[3][8 * 16], size_t *planned) {
    enum { DIM = 16 };
    int sizes[64];
    for (int g = 0; g < groups; g++) sizes[g] = clients / groups + (g < clients % groups);
    float w[DIM];
    for (int j = 0; j < DIM; j++) w[j] = 0.1f * (float)(j - 7);
    fedc_executor *ex = NULL;
    fedc_exec_options o = {.clients = clients, .groups = groups, .group_sizes = sizes, .threads = threads};
    fedc_status st = fedc_executor_create(&ex, p, &o);
    if (!st) st = fedc_executor_bind(ex, "w", w);
    if (!st) st = fedc_executor_bind(ex, "x", x);
    if (!st) st = fedc_executor_run(ex);
    const char *names[3] = {"mean", "wmean", "sum"};
    for (int k = 0; !st && k < 3; k++) {
        const void *y;
        st = fedc_executor_output(ex, names[k], &y, NULL);
        if (!st) memcpy(out[k], y, (size_t)(groups < 8 ? groups : 8) * DIM * sizeof(float));
    }
    if (!st && planned) *planned = fedc_executor_planned_bytes(ex);
    fedc_executor_destroy(ex);
    return st;
}

static void test_streams_within_groups(void) {
    enum { DIM = 16, MAX = 1000 };
    fedc_program *p = stream_program(DIM, false), *kept = stream_program(DIM, true);
    float *x = malloc(sizeof(float) * MAX * DIM);
    CHECK(p && kept && x);
    if (!p || !kept || !x) return fedc_program_destroy(p), fedc_program_destroy(kept), free(x);
    for (int i = 0; i < MAX * DIM; i++) x[i] = (float)((i * 2654435761u) % 2000) / 1000.0f - 1.0f;
    static float a[3][8 * DIM], b[3][8 * DIM];
    size_t small = 0, large = 0, more_groups = 0;
    CHECK_OK(run_stream(p, 10, 4, 2, x, a, &small));
    CHECK_OK(run_stream(p, MAX, 4, 2, x, a, &large));
    CHECK_MSG(small == large, "planned %zu bytes for 10 clients, %zu for %d", small, large, MAX);
    CHECK_OK(run_stream(p, MAX, 40, 2, x, b, &more_groups));
    CHECK(more_groups >= large + 36 * 4 * DIM * sizeof(float)); /* four groups values of 36 more groups */
    /* the streamed values are the stored ones, bit for bit, for any threads */
    CHECK_OK(run_stream(kept, 97, 5, 1, x, a, NULL));
    for (int threads = 1; threads <= 3; threads++) {
        CHECK_OK(run_stream(p, 97, 5, threads, x, b, NULL));
        for (int k = 0; k < 3; k++)
            for (int j = 0; j < 5 * DIM; j++)
                CHECK_MSG(!memcmp(&a[k][j], &b[k][j], sizeof(float)), "streamed with %d threads differs from stored: "
                          "output %d element %d: %.9g vs %.9g", threads, k, j, b[k][j], a[k][j]);
    }
    /* a known answer: group 0's mean of its 20 clients */
    for (int j = 0; j < DIM; j++) {
        double m = 0;
        for (int i = 0; i < 20; i++) m += tanh((0.1 * (j - 7) + 1) * x[i * DIM + j]) / 20;
        CHECK_NEAR(a[0][j], m, 1e-5);
    }
    free(x);
    fedc_program_destroy(p);
    fedc_program_destroy(kept);
}

/* ------------------------------------------------------------ derivatives -- */

static void test_reverse_known_answer(void) {
    /* loss = sum_up(sum_up(<broadcast_down^2(w), x>)): d loss / d w = sum_i x_i;
     * loss2 = sum over groups of mean_up: d / d x_i = 1 / |group(i)| */
    fedc_program *p, *g = NULL;
    CHECK_OK(fedc_program_create(&p));
    fedc_value w = fedc_input(p, "w", VEC(FEDC_F64, FEDC_SERVER, 2));
    fedc_value x = fedc_input(p, "x", VEC(FEDC_F64, FEDC_CLIENTS, 2));
    fedc_value d = fedc_reduce_sum(p, fedc_mul(p, fedc_broadcast_down(p, fedc_broadcast_down(p, w)), x), NULL, -1, false);
    fedc_value loss = fedc_add(p, fedc_sum_up(p, fedc_sum_up(p, d)),
                               fedc_reduce_sum(p, fedc_sum_up(p, fedc_mean_up(p, x)), NULL, -1, false));
    fedc_program_output(p, "loss", loss);
    CHECK_OK(fedc_grad(p, "loss", (const char *[]){"w", "x"}, 2, &g));
    double wv[2] = {0.5, 2}, xv[10] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, gw[2], gx[10];
    run_spec r = {5, 2, 2, (int[]){1, 4}, 2, (const char *[]){"w", "x"}, (const void *[]){wv, xv}};
    if (g) CHECK_OK(run(g, &r, 2, (const char *[]){"grad_w", "grad_x"}, (void *[]){gw, gx}, sizeof gx));
    CHECK_NEAR(gw[0], 25, 0);
    CHECK_NEAR(gw[1], 30, 0);
    for (int i = 0; i < 5; i++)
        for (int j = 0; j < 2; j++) CHECK_NEAR(gx[2 * i + j], wv[j] + (i == 0 ? 1.0 : 0.25), 1e-15);
    fedc_program_destroy(g);
    fedc_program_destroy(p);
}

/* The worked program's derivatives in w, a and x against central differences,
 * reverse (grad) and forward (jvp along a direction). */
static void test_derivatives_match_finite_differences(void) {
    fedc_program *p = worked_program(FEDC_F64), *g = NULL, *j = NULL;
    CHECK(p && !fedc_program_status(p));
    if (!p) return;
    const char *wrt[] = {"w", "a", "x"};
    CHECK_OK(fedc_grad(p, "loss", wrt, 3, &g));
    CHECK_OK(fedc_jvp(p, wrt, 3, &j));
    if (!g || !j) return fedc_program_destroy(p), fedc_program_destroy(g), fedc_program_destroy(j);
    double gw[2], ga[3], gx[14];
    const char *names[] = {"w", "a", "x"};
    const void *data[] = {W, A, X};
    run_spec r = {7, 3, 2, (int[]){3, 1, 3}, 3, names, data};
    CHECK_OK(run(g, &r, 3, (const char *[]){"grad_w", "grad_a", "grad_x"}, (void *[]){gw, ga, gx}, sizeof gx));
    double h = 1e-6, per[6];
    double *all[3] = {gw, ga, gx};
    const double *at[3] = {W, A, X};
    int len[3] = {2, 3, 14};
    double dot = 0, tw[2] = {0.3, -0.7}, ta[3] = {1, 0.5, -2}, tx[14];
    double *tangent[3] = {tw, ta, tx};
    for (int i = 0; i < 14; i++) tx[i] = (i % 3 - 1) * 0.25;
    for (int k = 0; k < 3; k++) {
        for (int i = 0; i < len[k]; i++) {
            double up[14], down[14], lu = 0, ld = 0;
            const double *args[3] = {W, A, X};
            memcpy(up, at[k], (size_t)len[k] * sizeof *up);
            memcpy(down, at[k], (size_t)len[k] * sizeof *down);
            up[i] += h, down[i] -= h;
            args[k] = up;
            CHECK_OK(run_worked(p, 1, args[0], args[1], args[2], &lu, per));
            args[k] = down;
            CHECK_OK(run_worked(p, 1, args[0], args[1], args[2], &ld, per));
            double fd = (lu - ld) / (2 * h);
            CHECK_MSG(fabs(all[k][i] - fd) < 1e-7 * (1 + fabs(fd)), "d loss / d %s[%d]: %.12g, differences %.12g",
                      wrt[k], i, all[k][i], fd);
            dot += all[k][i] * tangent[k][i];
        }
    }
    const char *jn[] = {"w", "a", "x", "tangent_w", "tangent_a", "tangent_x"};
    const void *jd[] = {W, A, X, tw, ta, tx};
    run_spec rj = {7, 3, 2, (int[]){3, 1, 3}, 6, jn, jd};
    double tl = 0;
    CHECK_OK(run(j, &rj, 1, (const char *[]){"tangent_loss"}, (void *[]){&tl}, sizeof tl));
    CHECK_MSG(fabs(tl - dot) < 1e-12 * (1 + fabs(dot)), "forward %.15g vs reverse %.15g", tl, dot);
    CHECK(fabs(dot) > 1e-3);
    fedc_program_destroy(g);
    fedc_program_destroy(j);
    fedc_program_destroy(p);
}

/* A second order: the Hessian-vector product in w (forward mode over the
 * gradient) against central differences of the gradient. */
static void test_second_order(void) {
    fedc_program *p = worked_program(FEDC_F64), *g = NULL, *h = NULL;
    if (!p) return;
    CHECK_OK(fedc_grad(p, "loss", (const char *[]){"w"}, 1, &g));
    if (g) CHECK_OK(fedc_jvp(g, (const char *[]){"w"}, 1, &h));
    if (!g || !h) return fedc_program_destroy(p), fedc_program_destroy(g), fedc_program_destroy(h);
    double t[2] = {0.6, -0.8}, hv[2], gu[2], gd[2], wu[2], wd[2], eps = 1e-6;
    run_spec r = {7, 3, 2, (int[]){3, 1, 3}, 4, (const char *[]){"w", "a", "x", "tangent_w"},
                  (const void *[]){W, A, X, t}};
    CHECK_OK(run(h, &r, 1, (const char *[]){"tangent_grad_w"}, (void *[]){hv}, sizeof hv));
    for (int j = 0; j < 2; j++) wu[j] = W[j] + eps * t[j], wd[j] = W[j] - eps * t[j];
    r.nin = 3;
    r.data = (const void *[]){wu, A, X};
    CHECK_OK(run(g, &r, 1, (const char *[]){"grad_w"}, (void *[]){gu}, sizeof gu));
    r.data = (const void *[]){wd, A, X};
    CHECK_OK(run(g, &r, 1, (const char *[]){"grad_w"}, (void *[]){gd}, sizeof gd));
    for (int j = 0; j < 2; j++) {
        double fd = (gu[j] - gd[j]) / (2 * eps);
        CHECK_MSG(fabs(hv[j] - fd) < 1e-6 * (1 + fabs(fd)) && fabs(fd) > 1e-4, "Hv[%d] %.12g, differences %.12g", j,
                  hv[j], fd);
    }
    fedc_program_destroy(h);
    fedc_program_destroy(g);
    fedc_program_destroy(p);
}

/* weighted_mean_up's derivative in its weights, at both levels: loss =
 * <weighted_mean_up(weighted_mean_up(x, v), u), c> with v @clients and u @groups
 * computed from inputs, against central differences. */
static fedc_program *weights_program(void) {
    fedc_program *p;
    if (fedc_program_create(&p)) return NULL;
    fedc_value x = fedc_input(p, "x", VEC(FEDC_F64, FEDC_CLIENTS, 2));
    fedc_value v = fedc_input(p, "v", SCALAR(FEDC_F64, FEDC_CLIENTS));
    fedc_value u = fedc_input(p, "u", SCALAR(FEDC_F64, FEDC_GROUPS));
    fedc_value g = fedc_weighted_mean_up(p, x, fedc_exp(p, v));
    fedc_value top = fedc_weighted_mean_up(p, fedc_tanh(p, g), fedc_square(p, u));
    fedc_value c = fedc_full(p, VEC(FEDC_F64, FEDC_LOCAL, 2), 0);
    c = fedc_add(p, c, fedc_scalar(p, FEDC_F64, 1.5));
    fedc_program_output(p, "loss", fedc_reduce_sum(p, fedc_mul(p, top, fedc_mul(p, top, c)), NULL, -1, false));
    return p;
}

static void test_weights_match_finite_differences(void) {
    fedc_program *p = weights_program(), *g = NULL;
    CHECK(p && !fedc_program_status(p));
    if (!p) return;
    CHECK_OK(fedc_grad(p, "loss", (const char *[]){"v", "u"}, 2, &g));
    double v[5] = {0.1, -0.3, 0.8, 0.2, -0.5}, u[2] = {0.9, -1.3}, gv[5], gu[2];
    const char *names[] = {"x", "v", "u"};
    run_spec r = {5, 2, 1, (int[]){2, 3}, 3, names, (const void *[]){X, v, u}};
    if (g) CHECK_OK(run(g, &r, 2, (const char *[]){"grad_v", "grad_u"}, (void *[]){gv, gu}, sizeof gv));
    double h = 1e-6;
    for (int k = 0; k < 7; k++) {
        double *at = k < 5 ? &v[k] : &u[k - 5], keep = *at, lu = 0, ld = 0;
        *at = keep + h;
        CHECK_OK(run(p, &r, 1, (const char *[]){"loss"}, (void *[]){&lu}, sizeof lu));
        *at = keep - h;
        CHECK_OK(run(p, &r, 1, (const char *[]){"loss"}, (void *[]){&ld}, sizeof ld));
        *at = keep;
        double fd = (lu - ld) / (2 * h), got = k < 5 ? gv[k] : gu[k - 5];
        CHECK_MSG(fabs(got - fd) < 1e-7 * (1 + fabs(fd)) && fabs(fd) > 1e-6, "weight %d: %.12g, differences %.12g", k,
                  got, fd);
    }
    fedc_program_destroy(g);
    fedc_program_destroy(p);
}

/* Trees of values move level by level leaf by leaf: a model {a, b} down to the
 * clients and its weighted mean back up through the groups. */
static void test_trees(void) {
    fedc_program *p;
    CHECK_OK(fedc_program_create(&p));
    fedc_tree *model = fedc_tree_new(p);
    fedc_tree_set(p, model, "a", fedc_input(p, "a", VEC(FEDC_F64, FEDC_SERVER, 2)));
    fedc_tree_set(p, model, "b", fedc_input(p, "b", SCALAR(FEDC_F64, FEDC_SERVER)));
    fedc_value k = fedc_input(p, "k", SCALAR(FEDC_F64, FEDC_CLIENTS));
    fedc_tree *at_clients = fedc_tree_broadcast_down(p, fedc_tree_broadcast_down(p, model));
    fedc_tree *scaled = fedc_tree_scale(p, at_clients, k);
    fedc_tree *groups = fedc_tree_weighted_mean_up(p, scaled, k);
    fedc_tree *top = fedc_tree_mean_up(p, groups), *sums = fedc_tree_sum_up(p, fedc_tree_sum_up(p, scaled));
    fedc_program_output(p, "sum_b", fedc_tree_get(p, sums, "b"));
    CHECK_EQ_INT(fedc_value_type(p, fedc_tree_get(p, groups, "b")).placement, FEDC_GROUPS);
    fedc_program_output(p, "a", fedc_tree_get(p, top, "a"));
    fedc_program_output(p, "b", fedc_tree_get(p, top, "b"));
    CHECK_OK(fedc_program_status(p));
    double a[2] = {1, -2}, b = 3, kv[4] = {1, 2, 3, 4}, ra[2], rb, sb;
    run_spec r = {4, 2, 1, (int[]){1, 3}, 3, (const char *[]){"a", "b", "k"}, (const void *[]){a, &b, kv}};
    CHECK_OK(run(p, &r, 3, (const char *[]){"a", "b", "sum_b"}, (void *[]){ra, &rb, &sb}, sizeof ra));
    CHECK_NEAR(sb, 30, 0);
    /* group 0: k = 1 -> 1; group 1: sum k^2 / sum k = 29 / 9; the mean of the two */
    double f = (1 + 29.0 / 9) / 2;
    CHECK_NEAR(ra[0], f * 1, 1e-14);
    CHECK_NEAR(ra[1], f * -2, 1e-14);
    CHECK_NEAR(rb, f * 3, 1e-14);
    fedc_program_destroy(p);
}

/* The exports take the hierarchy in groups of equal size (docs/export.md: the
 * module's shapes are fixed), so they need the number of groups; the deployment
 * form cannot take it yet and says so, naming the value. */
static void test_export_and_deployment_refuse(void) {
    fedc_program *p = worked_program(FEDC_F32);
    if (!p) return;
    char *text = NULL;
    fedc_mlir_options o = {.clients = 7};
    CHECK_ERR(fedc_program_to_mlir(p, &o, &text), FEDC_EINVAL, "the program has a groups level; give the number of groups");
    CHECK(text == NULL);
    o.groups = 3; /* 7 clients in 3 groups of unequal size */
    CHECK_ERR(fedc_program_to_stablehlo(p, &o, &text), FEDC_EINVAL, "the groups are of equal size");
    CHECK(text == NULL);
    o.clients = 6;
    CHECK_OK(fedc_program_to_stablehlo(p, &o, &text));
    CHECK(text && strstr(text, "tensor<3x2xf32>")); /* a @groups value of the 3 groups */
    fedc_free(text);
    CHECK_OK(fedc_program_to_mlir(p, &o, &text));
    CHECK(text && strstr(text, "floordiv 2")); /* a client reads its group's row */
    fedc_free(text);
    fedc_deployment_form *f = NULL;
    CHECK_ERR(fedc_program_deployment_form(p, &f), FEDC_EUNSUPPORTED, "%2 (input) uses the placement hierarchy");
    CHECK(f == NULL);
    fedc_program_destroy(p);
}

int main(int argc, char **argv) {
    static const fedc_test tests[] = {
        {"levels are typed", test_levels_are_typed},
        {"text round trip", test_text_round_trip},
        {"known answers", test_known_answers},
        {"group map and threads", test_group_map_and_threads},
        {"one group is flat bit for bit", test_one_group_is_flat_bit_for_bit},
        {"streams within groups", test_streams_within_groups},
        {"groups change between runs", test_groups_change_between_runs},
        {"map groups", test_map_groups},
        {"flat round in one group", test_flat_round_in_one_group},
        {"reverse known answer", test_reverse_known_answer},
        {"derivatives match finite differences", test_derivatives_match_finite_differences},
        {"weights match finite differences", test_weights_match_finite_differences},
        {"second order", test_second_order},
        {"trees", test_trees},
        {"export needs equal groups, deployment refuses", test_export_and_deployment_refuse},
    };
    return fedc_test_main(argc, argv, tests, FEDC_COUNT_OF(tests));
}
