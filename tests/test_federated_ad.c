/* fold, and derivatives through whole federated programs: a fold's vjp against
 * finite differences, hypergradients through a FedAvg round (broadcast, map of a
 * local-SGD fold over batches, weighted_mean, server update) with respect to the
 * server and client learning rates, a Hessian-vector product through a federated
 * program, and forward mode against reverse mode. All in f64. */
#include <stdlib.h>
#include <string.h>

#include "fedc/ad.h"
#include "fedc/exec.h"
#include "harness.h"

static fedc_type f64(fedc_placement pl, int rank, const int64_t *dims) {
    fedc_type t = fedc_type_make(FEDC_F64, rank, dims);
    t.placement = pl;
    return t;
}
#define L64(...) f64(FEDC_LOCAL, FEDC_COUNT_OF(((int64_t[]){__VA_ARGS__})), (int64_t[]){__VA_ARGS__})
#define S64(...) f64(FEDC_SERVER, FEDC_COUNT_OF(((int64_t[]){__VA_ARGS__})), (int64_t[]){__VA_ARGS__})
#define C64(...) f64(FEDC_CLIENTS, FEDC_COUNT_OF(((int64_t[]){__VA_ARGS__})), (int64_t[]){__VA_ARGS__})

static uint64_t state = 88172645463325252ull;
static double uniform(double lo, double hi) {
    state ^= state << 13, state ^= state >> 7, state ^= state << 17;
    return lo + (hi - lo) * (double)(state >> 11) / 9007199254740992.0;
}
static double *random_f64(int64_t n, double lo, double hi) {
    double *a = malloc((size_t)n * sizeof *a);
    for (int64_t i = 0; i < n; i++) a[i] = uniform(lo, hi);
    return a;
}

/* Runs p once with the named inputs bound and returns output `out`'s first value. */
typedef struct binding {
    const char *name;
    const void *data;
} binding;

static double run_scalar(const fedc_program *p, const binding *b, int nb, int clients, const char *out, const double **vec) {
    fedc_executor *ex = NULL;
    fedc_exec_options o = {.clients = clients};
    double result = NAN;
    fedc_status st = fedc_executor_create(&ex, p, &o);
    CHECK_OK(st);
    if (st) return result;
    for (int i = 0; i < nb; i++) CHECK_OK(fedc_executor_bind(ex, b[i].name, b[i].data));
    CHECK_OK(fedc_executor_run(ex));
    const double *y;
    if (!fedc_executor_output(ex, out, (const void **)&y, NULL)) {
        result = y[0];
        if (vec) *vec = y; /* valid until the executor goes */
    }
    if (!vec) fedc_executor_destroy(ex);
    return result;
}

/* ---------------------------------------------------------------- fold -- */

/* body(c, x) = (c + x, c * x): a running sum, and the products along the way. */
static fedc_program *running_sum_body(void) {
    fedc_program *b;
    if (fedc_program_create(&b)) return NULL;
    fedc_value c = fedc_input(b, "c", L64(2)), x = fedc_input(b, "x", L64(2));
    fedc_program_output(b, "c", fedc_add(b, c, x));
    fedc_program_output(b, "y", fedc_mul(b, c, x));
    return b;
}

static void test_fold_forward_and_reverse(void) {
    fedc_program *body = running_sum_body();
    for (int reverse = 0; reverse < 2; reverse++) {
        fedc_program *p;
        CHECK_OK(fedc_program_create(&p));
        fedc_value c0 = fedc_input(p, "c0", L64(2)), xs = fedc_input(p, "xs", L64(5, 2));
        fedc_value len = fedc_input(p, "len", fedc_type_scalar(FEDC_I32)), r[2];
        if (reverse) {
            /* reverse order through the internal builder's route: fold over the
             * sequence reversed by hand gives the same final carry */
            fedc_value rev[5];
            for (int t = 0; t < 5; t++) rev[4 - t] = fedc_slice(p, xs, (int64_t[]){t, 0}, (int64_t[]){t + 1, 2});
            xs = fedc_concat(p, rev, 5, 0);
        }
        CHECK_OK(fedc_fold(p, body, &c0, 1, &xs, 1, len, r));
        CHECK_OK(fedc_program_output(p, "c", r[0]));
        CHECK_OK(fedc_program_output(p, "ys", r[1]));
        double c0d[2] = {1, 10}, xd[10] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
        int32_t length = 3;
        fedc_executor *ex;
        CHECK_OK(fedc_executor_create(&ex, p, NULL));
        CHECK_OK(fedc_executor_bind(ex, "c0", c0d));
        CHECK_OK(fedc_executor_bind(ex, "xs", xd));
        CHECK_OK(fedc_executor_bind(ex, "len", &length));
        CHECK_OK(fedc_executor_run(ex));
        const double *c, *ys;
        CHECK_OK(fedc_executor_output(ex, "c", (const void **)&c, NULL));
        CHECK_OK(fedc_executor_output(ex, "ys", (const void **)&ys, NULL));
        /* steps read rows 0, 1, 2 (of the reversed rows when reverse) */
        double rows[5][2];
        for (int t = 0; t < 5; t++)
            for (int j = 0; j < 2; j++) rows[t][j] = xd[(reverse ? 4 - t : t) * 2 + j];
        double cc[2] = {c0d[0], c0d[1]};
        for (int t = 0; t < 5; t++) {
            for (int j = 0; j < 2; j++) {
                double want = t < length ? cc[j] * rows[t][j] : 0;
                CHECK_NEAR(ys[t * 2 + j], want, 0);
                if (t < length) cc[j] += rows[t][j];
            }
        }
        CHECK_NEAR(c[0], cc[0], 0);
        CHECK_NEAR(c[1], cc[1], 0);
        /* a length past the sequences is an error that names the fold */
        length = 6;
        CHECK_ERR(fedc_executor_run(ex), FEDC_ERANGE, "length 6 is outside [0, 5]");
        fedc_executor_destroy(ex);
        fedc_program_destroy(p);
    }
    fedc_program_destroy(body);
}

static void test_fold_type_errors(void) {
    fedc_program *body = running_sum_body(), *p;
    fedc_value r[2];
    CHECK_OK(fedc_program_create(&p));
    fedc_value c0 = fedc_input(p, "c0", L64(3)), xs = fedc_input(p, "xs", L64(5, 2));
    fedc_value len = fedc_scalar(p, FEDC_I32, 5);
    CHECK_ERR(fedc_fold(p, body, &c0, 1, &xs, 1, len, r), FEDC_ETYPE, "operand 0 is f64[3] but the body's input \"c\"");
    fedc_program_destroy(p);
    CHECK_OK(fedc_program_create(&p));
    c0 = fedc_input(p, "c0", L64(2));
    xs = fedc_input(p, "xs", L64(5, 2));
    CHECK_ERR(fedc_fold(p, body, &c0, 1, &xs, 1, fedc_scalar(p, FEDC_F64, 5), r), FEDC_ETYPE, "the length must be i32[]");
    fedc_program_destroy(p);
    fedc_program_destroy(body);
}

/* body(h, w, x) = (tanh(h @ w + x), w, sum(h * x)): a recurrent cell whose weight is
 * a carry passed through unchanged, and a per-step output. */
static fedc_program *cell_body(void) {
    fedc_program *b;
    if (fedc_program_create(&b)) return NULL;
    fedc_value h = fedc_input(b, "h", L64(1, 3)), w = fedc_input(b, "w", L64(3, 3)), x = fedc_input(b, "x", L64(1, 3));
    fedc_program_output(b, "h", fedc_tanh(b, fedc_add(b, fedc_matmul(b, h, w, false, false), x)));
    fedc_program_output(b, "w", w);
    fedc_program_output(b, "y", fedc_reduce_sum(b, fedc_mul(b, h, x), NULL, -1, false));
    return b;
}

static void test_fold_gradient_against_finite_differences(void) {
    fedc_program *body = cell_body(), *p, *g;
    CHECK_OK(fedc_program_create(&p));
    fedc_value h0 = fedc_input(p, "h0", L64(1, 3)), w = fedc_input(p, "w", L64(3, 3));
    fedc_value xs = fedc_input(p, "xs", L64(6, 1, 3)), len = fedc_input(p, "len", fedc_type_scalar(FEDC_I32)), r[3];
    CHECK_OK(fedc_fold(p, body, (fedc_value[]){h0, w}, 2, &xs, 1, len, r));
    fedc_value weights = fedc_constant(p, L64(6), (double[]){0.3, -0.2, 0.5, 0.7, -0.4, 0.9});
    fedc_value loss = fedc_add(p, fedc_reduce_sum(p, fedc_square(p, r[0]), NULL, -1, false),
                               fedc_reduce_sum(p, fedc_mul(p, r[2], weights), NULL, -1, false));
    CHECK_OK(fedc_program_output(p, "loss", loss));
    const char *wrt[] = {"h0", "w", "xs"};
    CHECK_OK(fedc_grad(p, "loss", wrt, 3, &g));
    if (!g) goto done;
    double *hd = random_f64(3, -1, 1), *wd = random_f64(9, -1, 1), *xd = random_f64(18, -1, 1);
    int32_t length = 4; /* of 6: rows 4 and 5 must get zero gradient */
    binding b[] = {{"h0", hd}, {"w", wd}, {"xs", xd}, {"len", &length}};
    fedc_executor *ex;
    CHECK_OK(fedc_executor_create(&ex, g, NULL));
    for (int i = 0; i < 4; i++) CHECK_OK(fedc_executor_bind(ex, b[i].name, b[i].data));
    CHECK_OK(fedc_executor_run(ex));
    double *data[3] = {hd, wd, xd};
    int sizes[3] = {3, 9, 18};
    for (int k = 0; k < 3; k++) {
        char name[16];
        snprintf(name, sizeof name, "grad_%s", wrt[k]);
        const double *grad;
        CHECK_OK(fedc_executor_output(ex, name, (const void **)&grad, NULL));
        for (int i = 0; i < sizes[k]; i++) {
            double keep = data[k][i], eps = 1e-6;
            data[k][i] = keep + eps;
            double up = run_scalar(p, b, 4, 0, "loss", NULL);
            data[k][i] = keep - eps;
            double down = run_scalar(p, b, 4, 0, "loss", NULL);
            data[k][i] = keep;
            double fd = (up - down) / (2 * eps);
            CHECK_MSG(fabs(grad[i] - fd) <= 1e-6 * (1 + fabs(fd)), "d loss / d %s[%d]: AD %.10g, FD %.10g", wrt[k], i,
                      grad[i], fd);
            if (k == 2 && i >= 12) CHECK_NEAR(grad[i], 0, 0);
        }
    }
    fedc_executor_destroy(ex);
    free(hd), free(wd), free(xd);
    fedc_program_destroy(g);
done:
    fedc_program_destroy(p);
    fedc_program_destroy(body);
}

/* ------------------------------------------------------- a FedAvg round -- */

enum { DIM = 3, STEPS = 4, BATCH = 2, CLIENTS = 3 };

/* One local SGD step on 0.5 mean((X w - y)^2): (w, lr, X, y) -> (w - lr g, lr). */
static fedc_program *sgd_step_body(void) {
    fedc_program *b;
    if (fedc_program_create(&b)) return NULL;
    fedc_value w = fedc_input(b, "w", L64(DIM)), lr = fedc_input(b, "lr", L64());
    fedc_value x = fedc_input(b, "x", L64(BATCH, DIM)), y = fedc_input(b, "y", L64(BATCH));
    fedc_value pred = fedc_reshape(b, fedc_matmul(b, x, fedc_reshape(b, w, 2, (int64_t[]){DIM, 1}), false, false), 1,
                                   (int64_t[]){BATCH});
    fedc_value residual = fedc_reshape(b, fedc_sub(b, pred, y), 2, (int64_t[]){BATCH, 1});
    fedc_value grad = fedc_reshape(b, fedc_matmul(b, x, residual, true, false), 1, (int64_t[]){DIM});
    fedc_value scaled = fedc_mul(b, grad, fedc_div(b, lr, fedc_scalar(b, FEDC_F64, BATCH)));
    fedc_program_output(b, "w", fedc_sub(b, w, scaled));
    fedc_program_output(b, "lr", lr);
    return b;
}

/* A client: local SGD over its batches, returning its model delta and weight. */
static fedc_program *client_update_body(void) {
    fedc_program *b, *step = sgd_step_body();
    if (fedc_program_create(&b)) return NULL;
    fedc_value w = fedc_input(b, "w", L64(DIM)), lr = fedc_input(b, "lr", L64());
    fedc_value xs = fedc_input(b, "xs", L64(STEPS, BATCH, DIM)), ys = fedc_input(b, "ys", L64(STEPS, BATCH));
    fedc_value n = fedc_input(b, "batches", fedc_type_scalar(FEDC_I32)), r[2];
    fedc_fold(b, step, (fedc_value[]){w, lr}, 2, (fedc_value[]){xs, ys}, 2, n, r);
    fedc_program_output(b, "delta", fedc_sub(b, w, r[0]));
    fedc_program_output(b, "weight", fedc_cast(b, n, FEDC_F64));
    fedc_program_destroy(step);
    return b;
}

static fedc_program *client_loss_body(void) {
    fedc_program *b;
    if (fedc_program_create(&b)) return NULL;
    fedc_value w = fedc_input(b, "w", L64(DIM));
    fedc_value xs = fedc_input(b, "xs", L64(STEPS * BATCH, DIM)), ys = fedc_input(b, "ys", L64(STEPS * BATCH));
    fedc_value pred = fedc_reshape(b, fedc_matmul(b, xs, fedc_reshape(b, w, 2, (int64_t[]){DIM, 1}), false, false), 1,
                                   (int64_t[]){STEPS * BATCH});
    fedc_program_output(b, "loss", fedc_reduce_mean(b, fedc_square(b, fedc_sub(b, pred, ys)), NULL, -1, false));
    return b;
}

/* loss(w, server_lr, client_lr) after one FedAvg round:
 *     deltas, weights = map(client_update)(broadcast(w), broadcast(client_lr), data)
 *     w' = w - server_lr * weighted_mean(deltas, weights)
 *     loss = mean(map(client_loss)(broadcast(w'), data)) */
static fedc_program *fedavg_round(void) {
    fedc_program *p, *update = client_update_body(), *eval = client_loss_body();
    if (fedc_program_create(&p)) return NULL;
    fedc_value w = fedc_input(p, "w", S64(DIM));
    fedc_value server_lr = fedc_input(p, "server_lr", S64()), client_lr = fedc_input(p, "client_lr", S64());
    fedc_value xs = fedc_input(p, "xs", C64(STEPS, BATCH, DIM)), ys = fedc_input(p, "ys", C64(STEPS, BATCH));
    fedc_type nt = fedc_type_scalar(FEDC_I32);
    nt.placement = FEDC_CLIENTS;
    fedc_value batches = fedc_input(p, "batches", nt), r[2], loss_i;
    fedc_map(p, update, (fedc_value[]){fedc_broadcast(p, w), fedc_broadcast(p, client_lr), xs, ys, batches}, 5, r);
    fedc_value w_new = fedc_sub(p, w, fedc_mul(p, server_lr, fedc_weighted_mean(p, r[0], r[1])));
    fedc_value flat_x = fedc_reshape(p, xs, 2, (int64_t[]){STEPS * BATCH, DIM});
    fedc_value flat_y = fedc_reshape(p, ys, 1, (int64_t[]){STEPS * BATCH});
    fedc_map(p, eval, (fedc_value[]){fedc_broadcast(p, w_new), flat_x, flat_y}, 3, &loss_i);
    fedc_program_output(p, "loss", fedc_mean(p, loss_i));
    fedc_program_output(p, "w_new", w_new);
    fedc_program_destroy(update);
    fedc_program_destroy(eval);
    return p;
}

typedef struct round_data {
    double w[DIM], server_lr, client_lr;
    double *xs, *ys;
    int32_t batches[CLIENTS];
} round_data;

static void round_data_init(round_data *d) {
    for (int i = 0; i < DIM; i++) d->w[i] = uniform(-1, 1);
    d->server_lr = 0.8;
    d->client_lr = 0.3;
    d->xs = random_f64(CLIENTS * STEPS * BATCH * DIM, -1, 1);
    d->ys = random_f64(CLIENTS * STEPS * BATCH, -1, 1);
    d->batches[0] = 4, d->batches[1] = 2, d->batches[2] = 3; /* different numbers of local steps */
}

static int round_bindings(round_data *d, binding *b) {
    binding all[] = {{"w", d->w},   {"server_lr", &d->server_lr}, {"client_lr", &d->client_lr},
                     {"xs", d->xs}, {"ys", d->ys},                {"batches", d->batches}};
    memcpy(b, all, sizeof all);
    return 6;
}

static void test_fedavg_round_is_what_it_says(void) {
    fedc_program *p = fedavg_round();
    CHECK_OK(fedc_program_status(p));
    round_data d;
    round_data_init(&d);
    binding b[6];
    int nb = round_bindings(&d, b);
    const double *w_new;
    fedc_executor *ex;
    fedc_exec_options o = {.clients = CLIENTS, .threads = 2};
    CHECK_OK(fedc_executor_create(&ex, p, &o));
    for (int i = 0; i < nb; i++) CHECK_OK(fedc_executor_bind(ex, b[i].name, b[i].data));
    CHECK_OK(fedc_executor_run(ex));
    CHECK_OK(fedc_executor_output(ex, "w_new", (const void **)&w_new, NULL));
    /* the same round by hand */
    double avg[DIM] = {0}, total = 0;
    for (int c = 0; c < CLIENTS; c++) {
        double wl[DIM];
        memcpy(wl, d.w, sizeof wl);
        for (int s = 0; s < d.batches[c]; s++) {
            double g[DIM] = {0};
            for (int e = 0; e < BATCH; e++) {
                const double *x = d.xs + ((c * STEPS + s) * BATCH + e) * DIM;
                double r = -d.ys[(c * STEPS + s) * BATCH + e];
                for (int j = 0; j < DIM; j++) r += x[j] * wl[j];
                for (int j = 0; j < DIM; j++) g[j] += x[j] * r;
            }
            for (int j = 0; j < DIM; j++) wl[j] -= d.client_lr * g[j] / BATCH;
        }
        for (int j = 0; j < DIM; j++) avg[j] += d.batches[c] * (d.w[j] - wl[j]);
        total += d.batches[c];
    }
    for (int j = 0; j < DIM; j++) CHECK_NEAR(w_new[j], d.w[j] - d.server_lr * avg[j] / total, 1e-12);
    fedc_executor_destroy(ex);
    free(d.xs), free(d.ys);
    fedc_program_destroy(p);
}

/* d loss / d server_lr and d loss / d client_lr (and d / d w) by reverse mode,
 * against central differences of the whole round. */
static void test_hypergradients_through_a_fedavg_round(void) {
    fedc_program *p = fedavg_round(), *g;
    const char *wrt[] = {"server_lr", "client_lr", "w"};
    CHECK_OK(fedc_grad(p, "loss", wrt, 3, &g));
    if (!g) goto done;
    round_data d;
    round_data_init(&d);
    binding b[6];
    int nb = round_bindings(&d, b);
    fedc_executor *ex;
    fedc_exec_options o = {.clients = CLIENTS, .threads = 3};
    CHECK_OK(fedc_executor_create(&ex, g, &o));
    for (int i = 0; i < nb; i++) CHECK_OK(fedc_executor_bind(ex, b[i].name, b[i].data));
    CHECK_OK(fedc_executor_run(ex));
    double *params[3] = {&d.server_lr, &d.client_lr, d.w};
    int sizes[3] = {1, 1, DIM};
    for (int k = 0; k < 3; k++) {
        char name[32];
        snprintf(name, sizeof name, "grad_%s", wrt[k]);
        const double *grad;
        CHECK_OK(fedc_executor_output(ex, name, (const void **)&grad, NULL));
        for (int i = 0; i < sizes[k]; i++) {
            double keep = params[k][i], eps = 1e-6;
            params[k][i] = keep + eps;
            double up = run_scalar(p, b, nb, CLIENTS, "loss", NULL);
            params[k][i] = keep - eps;
            double down = run_scalar(p, b, nb, CLIENTS, "loss", NULL);
            params[k][i] = keep;
            double fd = (up - down) / (2 * eps);
            CHECK_MSG(fabs(grad[i] - fd) <= 1e-6 * (1 + fabs(fd)), "d loss / d %s[%d]: AD %.10g, FD %.10g", wrt[k], i,
                      grad[i], fd);
            CHECK(fabs(fd) > 1e-4); /* a real dependence, not a zero matched by zero */
        }
    }
    fedc_executor_destroy(ex);
    free(d.xs), free(d.ys);
    fedc_program_destroy(g);
done:
    fedc_program_destroy(p);
}

/* H v for the FedAvg round's loss with respect to w: the gradient of
 * <grad_w loss, v>, against central differences of grad_w along v. */
static void test_hessian_vector_product_through_a_federated_program(void) {
    fedc_program *p = fedavg_round(), *g = NULL, *h = NULL, *hv = NULL;
    CHECK_OK(fedc_grad(p, "loss", (const char *[]){"w"}, 1, &g));
    CHECK_OK(fedc_program_create(&h));
    if (!g || !h) goto done;
    int nin = fedc_program_num_inputs(g);
    fedc_value args[16], res[16];
    for (int i = 0; i < nin; i++)
        args[i] = fedc_input(h, fedc_program_input_name(g, i), fedc_value_type(g, fedc_program_input(g, i)));
    fedc_value v = fedc_input(h, "v", S64(DIM));
    CHECK_OK(fedc_program_inline(h, g, args, res));
    fedc_value gw = res[fedc_program_num_outputs(g) - 1];
    CHECK_OK(fedc_program_output(h, "dot", fedc_reduce_sum(h, fedc_mul(h, gw, v), NULL, -1, false)));
    CHECK_OK(fedc_grad(h, "dot", (const char *[]){"w"}, 1, &hv));
    if (!hv) goto done;
    round_data d;
    round_data_init(&d);
    double vd[DIM] = {0.5, -1, 0.25};
    binding b[7];
    int nb = round_bindings(&d, b);
    b[nb++] = (binding){"v", vd};
    const double *hvp;
    fedc_exec_options o = {.clients = CLIENTS};
    fedc_executor *ex, *eg;
    CHECK_OK(fedc_executor_create(&ex, hv, &o));
    CHECK_OK(fedc_executor_create(&eg, g, &o));
    for (int i = 0; i < nb; i++) CHECK_OK(fedc_executor_bind(ex, b[i].name, b[i].data));
    for (int i = 0; i < nb - 1; i++) CHECK_OK(fedc_executor_bind(eg, b[i].name, b[i].data));
    CHECK_OK(fedc_executor_run(ex));
    CHECK_OK(fedc_executor_output(ex, "grad_w", (const void **)&hvp, NULL));
    double up[DIM], eps = 1e-5;
    for (int sign = 1; sign >= -1; sign -= 2) {
        for (int j = 0; j < DIM; j++) d.w[j] += sign * eps * vd[j];
        CHECK_OK(fedc_executor_run(eg));
        const double *gr;
        CHECK_OK(fedc_executor_output(eg, "grad_w", (const void **)&gr, NULL));
        for (int j = 0; j < DIM; j++) up[j] = sign > 0 ? gr[j] : (up[j] - gr[j]) / (2 * eps);
        for (int j = 0; j < DIM; j++) d.w[j] -= sign * eps * vd[j];
    }
    for (int j = 0; j < DIM; j++)
        CHECK_MSG(fabs(hvp[j] - up[j]) <= 1e-6 * (1 + fabs(up[j])), "Hv[%d]: AD %.10g, FD %.10g", j, hvp[j], up[j]);
    fedc_executor_destroy(ex);
    fedc_executor_destroy(eg);
    free(d.xs), free(d.ys);
done:
    fedc_program_destroy(p);
    fedc_program_destroy(g);
    fedc_program_destroy(h);
    fedc_program_destroy(hv);
}

/* jvp with tangents (a, b) equals a dL/d server_lr + b dL/d client_lr. */
static void test_forward_mode_agrees_with_reverse_mode(void) {
    fedc_program *p = fedavg_round(), *j = NULL, *g = NULL;
    const char *wrt[] = {"server_lr", "client_lr"};
    CHECK_OK(fedc_jvp(p, wrt, 2, &j));
    CHECK_OK(fedc_grad(p, "loss", wrt, 2, &g));
    if (!j || !g) goto done;
    CHECK(fedc_program_find_output(j, "tangent_loss") != FEDC_NONE);
    CHECK(fedc_program_find_output(j, "tangent_w_new") != FEDC_NONE);
    CHECK(fedc_program_find_input(j, "tangent_server_lr") != FEDC_NONE);
    round_data d;
    round_data_init(&d);
    double ta = 0.7, tb = -1.3;
    binding b[8];
    int nb = round_bindings(&d, b);
    double gs = run_scalar(g, b, nb, CLIENTS, "grad_server_lr", NULL);
    double gc = run_scalar(g, b, nb, CLIENTS, "grad_client_lr", NULL);
    double loss = run_scalar(g, b, nb, CLIENTS, "loss", NULL);
    b[nb++] = (binding){"tangent_server_lr", &ta};
    b[nb++] = (binding){"tangent_client_lr", &tb};
    double tangent = run_scalar(j, b, nb, CLIENTS, "tangent_loss", NULL);
    CHECK_NEAR(tangent, ta * gs + tb * gc, 1e-12);
    CHECK_NEAR(run_scalar(j, b, nb, CLIENTS, "loss", NULL), loss, 1e-15);
    free(d.xs), free(d.ys);
done:
    fedc_program_destroy(p);
    fedc_program_destroy(j);
    fedc_program_destroy(g);
}

int main(int argc, char **argv) {
    static const fedc_test tests[] = {
        {"fold forward and reverse", test_fold_forward_and_reverse},
        {"fold type errors", test_fold_type_errors},
        {"fold gradient against finite differences", test_fold_gradient_against_finite_differences},
        {"fedavg round is what it says", test_fedavg_round_is_what_it_says},
        {"hypergradients through a fedavg round", test_hypergradients_through_a_fedavg_round},
        {"hessian-vector product through a federated program", test_hessian_vector_product_through_a_federated_program},
        {"forward mode agrees with reverse mode", test_forward_mode_agrees_with_reverse_mode},
    };
    return fedc_test_main(argc, argv, tests, FEDC_COUNT_OF(tests));
}
