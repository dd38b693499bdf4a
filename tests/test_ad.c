/* Reverse-mode AD: every differentiable op's gradient against central finite
 * differences in f64 (including broadcasting cases), a check over ops.def that each
 * op is among them or is listed with the test that checks it instead (or why
 * nothing does), every case again on @clients values outside a map (bit for bit
 * the local program's, client by client), gradients of gradients (Hessian-vector products) on a tanh MLP and
 * on softmax cross-entropy, and the transform's errors. */
#include <stdlib.h>
#include <string.h>

#include "fedc/ad.h"
#include "fedc/exec.h"
#include "harness.h"
#include "ir/ir.h"

#define MAX_INPUTS 3

typedef fedc_value (*build_fn)(fedc_program *p, const fedc_value *x);

typedef struct ad_case {
    const char *name;
    int nin;
    fedc_type in[MAX_INPUTS]; /* f64 inputs are differentiated; i32 ones are indices/labels */
    double lo, hi;            /* range of the random f64 inputs */
    int32_t imod;             /* i32 inputs hold (7 i + 3) mod imod */
    build_fn build;
} ad_case;

/* ------------------------------------------------------------- helpers -- */


#define T(...) fedc_type_make(FEDC_F64, FEDC_COUNT_OF(((int64_t[]){__VA_ARGS__})), (int64_t[]){__VA_ARGS__})
#define TI(...) fedc_type_make(FEDC_I32, FEDC_COUNT_OF(((int64_t[]){__VA_ARGS__})), (int64_t[]){__VA_ARGS__})
#define T0 fedc_type_scalar(FEDC_F64)

static double run_loss(fedc_executor *ex) {
    const double *loss;
    CHECK_OK(fedc_executor_run(ex));
    CHECK_OK(fedc_executor_output(ex, "loss", (const void **)&loss, NULL));
    return *loss;
}

static void fill_inputs(const ad_case *c, void **data) {
    for (int i = 0; i < c->nin; i++) {
        int64_t n = fedc_type_count(&c->in[i]);
        data[i] = malloc((size_t)(n ? n : 1) * 8);
        for (int64_t j = 0; j < n; j++) {
            if (c->in[i].dtype == FEDC_I32) ((int32_t *)data[i])[j] = (int32_t)((7 * j + 3) % c->imod);
            else ((double *)data[i])[j] = fedc_test_uniform(c->lo, c->hi);
        }
    }
}

/* The names x0, x1, ... of a case's inputs, and in wrt those of its f64 ones (the
 * differentiated); returns how many are in wrt. */
static int input_names(const ad_case *c, char names[][16], const char **wrt) {
    int nwrt = 0;
    for (int i = 0; i < c->nin; i++) {
        snprintf(names[i], 16, "x%d", i);
        if (c->in[i].dtype == FEDC_F64) wrt[nwrt++] = names[i];
    }
    return nwrt;
}

/* Compares grad_x<i> with central differences of the loss, element by element. */
static void check_case(const ad_case *c) {
    fedc_program *p = fedc_test_loss_program(c->in, c->nin, c->build, NULL);
    CHECK_MSG(p && fedc_program_status(p) == FEDC_OK, "%s: build: %s", c->name, fedc_errmsg());
    if (!p || fedc_program_status(p)) goto done_p;
    const char *wrt[MAX_INPUTS];
    char names[MAX_INPUTS][16];
    int nwrt = input_names(c, names, wrt);
    fedc_program *g = NULL;
    fedc_executor *fwd = NULL, *bwd = NULL;
    void *data[MAX_INPUTS] = {0};
    fedc_status st = fedc_grad(p, "loss", wrt, nwrt, &g);
    CHECK_MSG(st == FEDC_OK, "%s: grad: %s", c->name, fedc_errmsg());
    if (st) goto done;
    CHECK_OK(fedc_executor_create(&fwd, p, NULL));
    CHECK_OK(fedc_executor_create(&bwd, g, NULL));
    if (!fwd || !bwd) goto done;
    fill_inputs(c, data);
    for (int i = 0; i < c->nin; i++) {
        CHECK_OK(fedc_executor_bind(fwd, names[i], data[i]));
        CHECK_OK(fedc_executor_bind(bwd, names[i], data[i]));
    }
    CHECK_OK(fedc_executor_run(bwd));
    for (int i = 0; i < c->nin; i++) {
        if (c->in[i].dtype != FEDC_F64) continue;
        char gname[24];
        snprintf(gname, sizeof gname, "grad_x%d", i);
        const double *grad;
        CHECK_OK(fedc_executor_output(bwd, gname, (const void **)&grad, NULL));
        double *x = data[i];
        int64_t n = fedc_type_count(&c->in[i]);
        for (int64_t j = 0; j < n; j++) {
            const double h = 1e-6;
            double keep = x[j];
            x[j] = keep + h;
            double up = run_loss(fwd);
            x[j] = keep - h;
            double down = run_loss(fwd);
            x[j] = keep;
            double fd = (up - down) / (2 * h);
            double tol = 1e-6 * (1 + fabs(fd));
            CHECK_MSG(fabs(grad[j] - fd) <= tol, "%s: d loss / d x%d[%lld]: AD %.10g, finite differences %.10g",
                      c->name, i, (long long)j, grad[j], fd);
        }
    }
done:
    for (int i = 0; i < c->nin; i++) free(data[i]);
    fedc_executor_destroy(fwd);
    fedc_executor_destroy(bwd);
    fedc_program_destroy(g);
done_p:
    fedc_program_destroy(p);
}

/* --------------------------------------------------------------- cases -- */

static fedc_value b_add(fedc_program *p, const fedc_value *x) { return fedc_add(p, x[0], x[1]); }
static fedc_value b_sub(fedc_program *p, const fedc_value *x) { return fedc_sub(p, x[0], x[1]); }
static fedc_value b_mul(fedc_program *p, const fedc_value *x) { return fedc_mul(p, x[0], x[1]); }
static fedc_value b_div(fedc_program *p, const fedc_value *x) { return fedc_div(p, x[0], x[1]); }
static fedc_value b_max(fedc_program *p, const fedc_value *x) { return fedc_maximum(p, x[0], x[1]); }
static fedc_value b_min(fedc_program *p, const fedc_value *x) { return fedc_minimum(p, x[0], x[1]); }
static fedc_value b_neg(fedc_program *p, const fedc_value *x) { return fedc_neg(p, x[0]); }
static fedc_value b_exp(fedc_program *p, const fedc_value *x) { return fedc_exp(p, x[0]); }
static fedc_value b_log(fedc_program *p, const fedc_value *x) { return fedc_log(p, x[0]); }
static fedc_value b_tanh(fedc_program *p, const fedc_value *x) { return fedc_tanh(p, x[0]); }
static fedc_value b_sigmoid(fedc_program *p, const fedc_value *x) { return fedc_sigmoid(p, x[0]); }
static fedc_value b_relu(fedc_program *p, const fedc_value *x) { return fedc_relu(p, x[0]); }
static fedc_value b_sqrt(fedc_program *p, const fedc_value *x) { return fedc_sqrt(p, x[0]); }
static fedc_value b_square(fedc_program *p, const fedc_value *x) { return fedc_square(p, x[0]); }
static fedc_value b_pow3(fedc_program *p, const fedc_value *x) { return fedc_pow(p, x[0], 3.0); }
static fedc_value b_pow_half(fedc_program *p, const fedc_value *x) { return fedc_pow(p, x[0], -1.5); }
static fedc_value b_select(fedc_program *p, const fedc_value *x) {
    return fedc_select(p, fedc_gt(p, x[0], fedc_scalar_like(p, x[0], 0)), x[1], x[2]);
}
static fedc_value b_sum1(fedc_program *p, const fedc_value *x) { return fedc_reduce_sum(p, x[0], (int[]){1}, 1, false); }
static fedc_value b_sum_keep(fedc_program *p, const fedc_value *x) {
    return fedc_reduce_sum(p, x[0], (int[]){0, -1}, 2, true);
}
static fedc_value b_sum_all(fedc_program *p, const fedc_value *x) { return fedc_reduce_sum(p, x[0], NULL, -1, false); }
static fedc_value b_mean02(fedc_program *p, const fedc_value *x) { return fedc_reduce_mean(p, x[0], (int[]){0, 2}, 2, false); }
static fedc_value b_max1(fedc_program *p, const fedc_value *x) { return fedc_reduce_max(p, x[0], (int[]){1}, 1, false); }
static fedc_value b_reshape(fedc_program *p, const fedc_value *x) { return fedc_reshape(p, x[0], 2, (int64_t[]){3, -1}); }
static fedc_value b_bcast(fedc_program *p, const fedc_value *x) { return fedc_broadcast_to(p, x[0], 3, (int64_t[]){2, 4, 3}); }
static fedc_value b_transpose(fedc_program *p, const fedc_value *x) { return fedc_transpose(p, x[0], (int[]){2, 0, 1}); }
static fedc_value b_slice(fedc_program *p, const fedc_value *x) {
    return fedc_slice(p, x[0], (int64_t[]){1, 0, 2}, (int64_t[]){3, 2, 4});
}
static fedc_value b_concat(fedc_program *p, const fedc_value *x) { return fedc_concat(p, x, 3, 1); }
static fedc_value b_pad(fedc_program *p, const fedc_value *x) {
    return fedc_pad(p, x[0], (int64_t[]){1, 0}, (int64_t[]){2, 3});
}
static fedc_value b_mm00(fedc_program *p, const fedc_value *x) { return fedc_matmul(p, x[0], x[1], false, false); }
static fedc_value b_mm01(fedc_program *p, const fedc_value *x) { return fedc_matmul(p, x[0], x[1], false, true); }
static fedc_value b_mm10(fedc_program *p, const fedc_value *x) { return fedc_matmul(p, x[0], x[1], true, false); }
static fedc_value b_mm11(fedc_program *p, const fedc_value *x) { return fedc_matmul(p, x[0], x[1], true, true); }
static fedc_value b_gather(fedc_program *p, const fedc_value *x) { return fedc_gather(p, x[0], x[1]); }
static fedc_value b_scatter(fedc_program *p, const fedc_value *x) { return fedc_scatter_add(p, x[0], x[1], 5); }
static fedc_value b_conv_valid(fedc_program *p, const fedc_value *x) { return fedc_conv2d(p, x[0], x[1], 1, 1, FEDC_PAD_VALID); }
static fedc_value b_conv_same2(fedc_program *p, const fedc_value *x) { return fedc_conv2d(p, x[0], x[1], 2, 2, FEDC_PAD_SAME); }
static fedc_value b_conv_in_grad(fedc_program *p, const fedc_value *x) {
    fedc_type xt = T(2, 7, 6, 2);
    return fedc_conv2d_input_grad(p, x[0], x[1], &xt, 2, 2, (int64_t[]){1, 1, 0, 1});
}
static fedc_value b_conv_filter_grad(fedc_program *p, const fedc_value *x) {
    return fedc_conv2d_filter_grad(p, x[0], x[1], 3, 2, 2, 2, (int64_t[]){1, 1, 0, 1});
}
static fedc_value b_maxpool(fedc_program *p, const fedc_value *x) { return fedc_max_pool2d(p, x[0], 2, 2, 2, 2, FEDC_PAD_VALID); }
static fedc_value b_maxpool_same(fedc_program *p, const fedc_value *x) {
    return fedc_max_pool2d(p, x[0], 3, 3, 1, 1, FEDC_PAD_SAME);
}
static fedc_value b_avgpool(fedc_program *p, const fedc_value *x) { return fedc_avg_pool2d(p, x[0], 3, 2, 2, 1, FEDC_PAD_SAME); }
static fedc_value b_avgpool_grad(fedc_program *p, const fedc_value *x) {
    fedc_type xt = T(2, 5, 4, 3);
    return fedc_avg_pool2d_grad(p, x[0], &xt, 3, 2, 2, 1, (int64_t[]){1, 1, 0, 1});
}
static fedc_value b_log_softmax(fedc_program *p, const fedc_value *x) { return fedc_log_softmax(p, x[0]); }
static fedc_value b_xent(fedc_program *p, const fedc_value *x) { return fedc_softmax_cross_entropy(p, x[0], x[1], FEDC_NONE); }
static fedc_value b_xent_w(fedc_program *p, const fedc_value *x) { return fedc_softmax_cross_entropy(p, x[0], x[1], x[2]); }
static fedc_value b_dropout(fedc_program *p, const fedc_value *x) {
    int32_t key[4] = {7, 11, 13, 17};
    return fedc_dropout(p, x[0], fedc_constant(p, TI(4), key), 0.3);
}
static fedc_value b_cast(fedc_program *p, const fedc_value *x) { return fedc_cast(p, x[0], FEDC_F64); }
/* A small composite: everything the ops above do, chained through one value. */
static fedc_value b_mlp(fedc_program *p, const fedc_value *x) {
    fedc_value h = fedc_tanh(p, fedc_matmul(p, x[0], x[1], false, false));
    return fedc_log_softmax(p, fedc_add(p, fedc_matmul(p, h, x[2], false, false), fedc_scalar_like(p, h, 0.5)));
}


/* The finite-difference cases, into out[MAX_CASES]; returns their count (a
 * function, not a static table: fedc_type_make is not a constant initializer). */
enum { MAX_CASES = 64 };
static int ad_cases(ad_case *out) {
    const ad_case cases[] = {
        {"add broadcast", 2, {T(3, 4), T(4)}, -1, 1, 0, b_add},
        {"add both broadcast", 2, {T(3, 1), T(1, 4)}, -1, 1, 0, b_add},
        {"sub scalar", 2, {T(2, 3), T0}, -1, 1, 0, b_sub},
        {"mul rank 3", 2, {T(2, 3, 4), T(3, 1)}, -1, 1, 0, b_mul},
        {"div", 2, {T(3, 4), T(4)}, 0.5, 2, 0, b_div},
        {"maximum", 2, {T(3, 4), T(3, 4)}, -1, 1, 0, b_max},
        {"minimum broadcast", 2, {T(3, 4), T(1, 4)}, -1, 1, 0, b_min},
        {"neg", 1, {T(5)}, -1, 1, 0, b_neg},
        {"exp", 1, {T(2, 3)}, -1, 1, 0, b_exp},
        {"log", 1, {T(2, 3)}, 0.5, 2, 0, b_log},
        {"tanh", 1, {T(2, 3)}, -2, 2, 0, b_tanh},
        {"sigmoid", 1, {T(2, 3)}, -3, 3, 0, b_sigmoid},
        {"relu", 1, {T(4, 3)}, -1, 1, 0, b_relu},
        {"sqrt", 1, {T(2, 3)}, 0.5, 2, 0, b_sqrt},
        {"square", 1, {T(2, 3)}, -1, 1, 0, b_square},
        {"pow 3", 1, {T(2, 3)}, -1, 1, 0, b_pow3},
        {"pow -1.5", 1, {T(2, 3)}, 0.5, 2, 0, b_pow_half},
        {"select", 3, {T(3, 4), T(3, 4), T(4)}, -1, 1, 0, b_select},
        {"reduce_sum axis 1", 1, {T(2, 3, 4)}, -1, 1, 0, b_sum1},
        {"reduce_sum keepdims", 1, {T(2, 3, 4)}, -1, 1, 0, b_sum_keep},
        {"reduce_sum all", 1, {T(2, 3)}, -1, 1, 0, b_sum_all},
        {"reduce_mean", 1, {T(2, 3, 4)}, -1, 1, 0, b_mean02},
        {"reduce_max", 1, {T(3, 5)}, -1, 1, 0, b_max1},
        {"reshape", 1, {T(2, 3, 2)}, -1, 1, 0, b_reshape},
        {"broadcast_to", 1, {T(4, 1)}, -1, 1, 0, b_bcast},
        {"transpose", 1, {T(2, 3, 4)}, -1, 1, 0, b_transpose},
        {"slice", 1, {T(4, 3, 5)}, -1, 1, 0, b_slice},
        {"concat", 3, {T(2, 1), T(2, 3), T(2, 2)}, -1, 1, 0, b_concat},
        {"pad", 1, {T(2, 3)}, -1, 1, 0, b_pad},
        {"matmul", 2, {T(3, 4), T(4, 5)}, -1, 1, 0, b_mm00},
        {"matmul b^T", 2, {T(3, 4), T(5, 4)}, -1, 1, 0, b_mm01},
        {"matmul a^T", 2, {T(4, 3), T(4, 5)}, -1, 1, 0, b_mm10},
        {"matmul a^T b^T", 2, {T(4, 3), T(5, 4)}, -1, 1, 0, b_mm11},
        {"matmul batched, shared b", 2, {T(2, 3, 4), T(4, 5)}, -1, 1, 0, b_mm00},
        {"matmul batched, shared b^T", 2, {T(2, 3, 4), T(5, 4)}, -1, 1, 0, b_mm01},
        {"matmul rank 4, shared b", 2, {T(2, 2, 3, 4), T(4, 5)}, -1, 1, 0, b_mm00},
        {"matmul shared a, batched b^T", 2, {T(3, 4), T(2, 5, 4)}, -1, 1, 0, b_mm01},
        {"matmul both batched a^T", 2, {T(2, 4, 3), T(2, 4, 5)}, -1, 1, 0, b_mm10},
        {"gather", 2, {T(5, 3), TI(2, 3)}, -1, 1, 5, b_gather},
        {"scatter_add", 2, {T(4, 3), TI(4)}, -1, 1, 5, b_scatter},
        {"conv2d valid", 2, {T(2, 5, 6, 2), T(3, 3, 2, 3)}, -1, 1, 0, b_conv_valid},
        {"conv2d same stride 2", 2, {T(2, 7, 6, 2), T(3, 2, 2, 3)}, -1, 1, 0, b_conv_same2},
        {"conv2d_input_grad", 2, {T(2, 4, 3, 3), T(3, 2, 2, 3)}, -1, 1, 0, b_conv_in_grad},
        {"conv2d_filter_grad", 2, {T(2, 7, 6, 2), T(2, 4, 3, 3)}, -1, 1, 0, b_conv_filter_grad},
        {"max_pool2d", 1, {T(2, 4, 6, 3)}, -1, 1, 0, b_maxpool},
        {"max_pool2d same", 1, {T(1, 4, 5, 2)}, -1, 1, 0, b_maxpool_same},
        {"avg_pool2d same", 1, {T(2, 5, 4, 3)}, -1, 1, 0, b_avgpool},
        {"avg_pool2d_grad", 1, {T(2, 3, 4, 3)}, -1, 1, 0, b_avgpool_grad},
        {"log_softmax", 1, {T(3, 5)}, -2, 2, 0, b_log_softmax},
        {"softmax_cross_entropy", 2, {T(4, 5), TI(4)}, -2, 2, 5, b_xent},
        {"softmax_cross_entropy weighted", 3, {T(2, 3, 5), TI(2, 3), T(2, 3)}, -2, 2, 5, b_xent_w},
        {"dropout", 1, {T(4, 5)}, -1, 1, 0, b_dropout},
        {"cast", 1, {T(2, 3)}, -1, 1, 0, b_cast},
        {"mlp composite", 3, {T(4, 3), T(3, 5), T(5, 2)}, -1, 1, 0, b_mlp},
    };
    _Static_assert(sizeof cases / sizeof cases[0] <= MAX_CASES, "raise MAX_CASES");
    memcpy(out, cases, sizeof cases);
    return FEDC_COUNT_OF(cases);
}

/* Runs check on every case, naming the case of each failure. */
static void for_each_case(void (*check)(const ad_case *), const char *how) {
    ad_case cases[MAX_CASES];
    int ncases = ad_cases(cases);
    for (int i = 0; i < ncases; i++) {
        int before = fedc_test_failures();
        check(&cases[i]);
        if (fedc_test_failures() != before) fprintf(stderr, "    (in case \"%s\"%s)\n", cases[i].name, how);
    }
}

static void test_every_op_against_finite_differences(void) { for_each_case(check_case, ""); }

/* ------------------------------------------- every op on @clients values -- */

/* Each case again with every input placed @clients, outside any map, on a few
 * clients with data of their own: client i's loss, gradient and forward-mode
 * tangent must be the local program's on client i's data, bit for bit (the same
 * kernels run once per client). Both loss programs are built from the same seed, so
 * they hold the same random weights r (the placed program's @clients, read by every
 * client). */
enum { CASE_CLIENTS = 3 };

typedef struct case_data {
    void *x[MAX_INPUTS], *t[MAX_INPUTS]; /* inputs and tangents, all clients' copies */
} case_data;

/* Runs q (a gradient or a jvp of a case's loss program) on `clients` clients
 * (0: local) with client `first`'s data onward, and copies its output `name`. */
static void run_output(const fedc_program *q, const ad_case *c, const case_data *d, int clients, int first,
                       const char *name, void *out, size_t bytes) {
    fedc_executor *ex = NULL;
    fedc_exec_options o = {.clients = clients};
    CHECK_OK(fedc_executor_create(&ex, q, &o));
    for (int i = 0; ex && i < c->nin; i++) {
        size_t each = (size_t)fedc_type_count(&c->in[i]) * fedc_dtype_size(c->in[i].dtype);
        char name_x[16], name_t[24];
        snprintf(name_x, sizeof name_x, "x%d", i);
        snprintf(name_t, sizeof name_t, "tangent_x%d", i);
        CHECK_OK(fedc_executor_bind(ex, name_x, (char *)d->x[i] + (size_t)first * each));
        if (fedc_program_find_input(q, name_t) != FEDC_NONE)
            CHECK_OK(fedc_executor_bind(ex, name_t, (char *)d->t[i] + (size_t)first * each));
    }
    const void *y = NULL;
    if (ex) CHECK_OK(fedc_executor_run(ex));
    if (ex) CHECK_OK(fedc_executor_output(ex, name, &y, NULL));
    if (y) memcpy(out, y, bytes);
    else memset(out, 0xff, bytes);
    fedc_executor_destroy(ex);
}

static fedc_program *case_program(const ad_case *c, fedc_placement pl) {
    fedc_type in[MAX_INPUTS];
    for (int i = 0; i < c->nin; i++) in[i] = c->in[i], in[i].placement = pl;
    fedc_test_seed(7);
    return fedc_test_loss_program(in, c->nin, c->build, NULL);
}

/* The outputs to compare: the loss, its tangent, and grad_x<i> of each f64 input. */
static void compare_on_clients(const ad_case *c, fedc_program *const *local, fedc_program *const *placed,
                               const case_data *d) {
    for (int k = -2; k < c->nin; k++) {
        if ((k >= 0 && c->in[k].dtype != FEDC_F64) || (k == -1 && !local[1])) continue;
        char name[24];
        snprintf(name, sizeof name, k == -2 ? "loss" : k == -1 ? "tangent_loss" : "grad_x%d", k);
        const fedc_program *lq = local[k == -1], *pq = placed[k == -1];
        size_t each = k < 0 ? 8 : (size_t)fedc_type_count(&c->in[k]) * 8;
        double *all = malloc(each * CASE_CLIENTS), *one = malloc(each);
        run_output(pq, c, d, CASE_CLIENTS, 0, name, all, each * CASE_CLIENTS);
        for (int i = 0; i < CASE_CLIENTS; i++) {
            run_output(lq, c, d, 0, i, name, one, each);
            CHECK_MSG(memcmp(one, (char *)all + (size_t)i * each, each) == 0,
                      "%s: %s of client %d on @clients values differs from the local program's (%.17g vs %.17g)",
                      c->name, name, i, ((double *)all)[i * (int)(each / 8)], one[0]);
        }
        free(all), free(one);
    }
}

static void check_case_on_clients(const ad_case *c) {
    const char *wrt[MAX_INPUTS];
    char names[MAX_INPUTS][16];
    int nwrt = input_names(c, names, wrt);
    fedc_program *prog[2] = {case_program(c, FEDC_LOCAL), case_program(c, FEDC_CLIENTS)};
    fedc_program *local[2] = {0}, *placed[2] = {0}; /* [grad, jvp] */
    for (int w = 0; w < 2; w++) {
        fedc_program **q = w ? placed : local;
        CHECK_MSG(prog[w] && !fedc_program_status(prog[w]), "%s: build: %s", c->name, fedc_errmsg());
        if (!prog[w] || fedc_program_status(prog[w])) goto done;
        CHECK_OK(fedc_grad(prog[w], "loss", wrt, nwrt, &q[0]));
        /* Forward mode transposes the gradient, so it needs the second derivative
         * (max pooling has none yet): then both placements must say so. */
        fedc_status st = fedc_jvp(prog[w], wrt, nwrt, &q[1]);
        CHECK_MSG(st == FEDC_OK || st == FEDC_EUNSUPPORTED, "%s: jvp: %s", c->name, fedc_errmsg());
        if (!q[0] || (w == 1 && !local[1] != !q[1])) goto done;
    }
    case_data d = {0};
    for (int i = 0; i < c->nin; i++) {
        int64_t n = fedc_type_count(&c->in[i]);
        d.x[i] = malloc((size_t)(n ? n : 1) * 8 * CASE_CLIENTS);
        d.t[i] = malloc((size_t)(n ? n : 1) * 8 * CASE_CLIENTS);
        for (int64_t j = 0; j < n * CASE_CLIENTS; j++) {
            if (c->in[i].dtype == FEDC_I32) ((int32_t *)d.x[i])[j] = (int32_t)((7 * j + 3) % c->imod);
            else ((double *)d.x[i])[j] = fedc_test_uniform(c->lo, c->hi);
            ((double *)d.t[i])[j] = fedc_test_uniform(-1, 1);
        }
    }
    compare_on_clients(c, local, placed, &d);
    for (int i = 0; i < c->nin; i++) free(d.x[i]), free(d.t[i]);
done:
    for (int w = 0; w < 2; w++) {
        fedc_program_destroy(prog[w]);
        fedc_program_destroy(local[w]);
        fedc_program_destroy(placed[w]);
    }
}

static void test_every_op_on_clients_values(void) { for_each_case(check_case_on_clients, " on @clients values"); }

/* ------------------------------------------------- coverage of ops.def -- */

/* Ops whose derivative no case above checks, each with the test that checks it
 * instead or the reason nothing does. */
static const struct {
    fedc__op op;
    const char *why;
} NOT_HERE[] = {
    {FEDC_OP_INPUT, "a source: nothing to differentiate"},
    {FEDC_OP_CONSTANT, "a source: nothing to differentiate"},
    {FEDC_OP_IOTA, "a source: nothing to differentiate"},
    {FEDC_OP_NUM_CLIENTS, "a source (the cohort's size): nothing to differentiate"},
    {FEDC_OP_EQ, "a bool result: no derivative"},
    {FEDC_OP_NE, "a bool result: no derivative"},
    {FEDC_OP_LT, "a bool result: no derivative"},
    {FEDC_OP_LE, "a bool result: no derivative"},
    {FEDC_OP_GT, "a bool result: no derivative"},
    {FEDC_OP_GE, "a bool result: no derivative"},
    {FEDC_OP_ARGMAX, "an i32 result: no derivative"},
    {FEDC_OP_ONE_HOT, "its operand is i32 indices: no derivative"},
    {FEDC_OP_MAX_POOL2D_GRAD, "no derivative rule yet: \"missing second derivative is reported\" checks the error"},
    {FEDC_OP_BROADCAST, "exact Jacobians in tests/test_federated.c, a FedAvg round in tests/test_federated_ad.c"},
    {FEDC_OP_SUM, "exact Jacobians in tests/test_federated.c"},
    {FEDC_OP_MEAN, "exact Jacobians in tests/test_federated.c, a FedAvg round in tests/test_federated_ad.c"},
    {FEDC_OP_WEIGHTED_MEAN, "a FedAvg round against finite differences in tests/test_federated_ad.c"},
    {FEDC_OP_MAP, "a FedAvg round against finite differences in tests/test_federated_ad.c"},
    {FEDC_OP_RESULT, "a part of a map's tuple, whose rule reads its cotangent (tests/test_federated_ad.c)"},
    {FEDC_OP_FOLD, "fold against finite differences in tests/test_federated_ad.c"},
    {FEDC_OP_BROADCAST_DOWN, "a known answer and finite differences in tests/test_hierarchy.c"},
    {FEDC_OP_SUM_UP, "a known answer and finite differences in tests/test_hierarchy.c"},
    {FEDC_OP_MEAN_UP, "a known answer and finite differences in tests/test_hierarchy.c"},
    {FEDC_OP_WEIGHTED_MEAN_UP, "finite differences in tests/test_hierarchy.c"},
    {FEDC_OP_NUM_GROUPS, "a source (the number of groups): nothing to differentiate"},
    {FEDC_OP_GROUP_SIZE, "a source (each group's size): nothing to differentiate"},
    {FEDC_OP_GELU, "tests/test_transformer_ops.c (finite differences)"},
    {FEDC_OP_GELU_GRAD, "tests/test_transformer_ops.c (finite differences)"},
    {FEDC_OP_LAYER_NORM, "tests/test_transformer_ops.c (finite differences)"},
    {FEDC_OP_LAYER_NORM_GRAD, "tests/test_transformer_ops.c (finite differences)"},
    {FEDC_OP_LAYER_NORM_PARAM_GRAD, "tests/test_transformer_ops.c (finite differences)"},
    {FEDC_OP_CAUSAL_ATTENTION, "tests/test_transformer_ops.c (finite differences)"},
    {FEDC_OP_CAUSAL_ATTENTION_GRAD, "tests/test_transformer_ops.c (finite differences)"},
    {FEDC_OP_SOFTMAX_XENT_GRAD, "tests/test_transformer_ops.c (finite differences)"},
    {FEDC_OP_LSTM, "tests/test_lstm.c (finite differences)"},
    {FEDC_OP_LSTM_GRAD, "tests/test_lstm.c (finite differences)"},
    {FEDC_OP_LSTM_TANGENT, "tests/test_lstm.c (finite differences)"},
    {FEDC_OP_RANDOM_NORMAL, "a source (noise from the key): nothing to differentiate"},
    {FEDC_OP_RANDOM_UNIFORM, "a source (draws from the key): nothing to differentiate"},
    {FEDC_OP_ROBUST_AGGREGATE, "a selection over the cohort: grad refuses it (tests/test_robust_aggregation.c)"},
};

static const char *not_here(fedc__op op) {
    for (int i = 0; i < FEDC_COUNT_OF(NOT_HERE); i++)
        if (NOT_HERE[i].op == op) return NOT_HERE[i].why;
    return NULL;
}

/* Marks the ops whose derivative the gradient check of p goes through: nodes with
 * a float value that depends on a differentiated (f64) input and that the loss
 * depends on. Top-level nodes only (no case here has a body). */
static void mark_checked_ops(const fedc_program *p, bool checked[FEDC_OP_COUNT]) {
    bool *active = calloc((size_t)p->n + 1, 1), *live = calloc((size_t)p->n + 1, 1);
    fedc_value loss = fedc_program_find_output(p, "loss");
    if (!active || !live || loss == FEDC_NONE) goto done;
    for (int v = 0; v < p->n; v++) {
        const fedc__node *n = &p->nodes[v];
        bool from_input = n->op == FEDC_OP_INPUT && n->type.dtype == FEDC_F64;
        for (int i = 0; i < n->nin; i++) from_input |= active[n->in[i]];
        active[v] = from_input && (n->type.dtype == FEDC_F32 || n->type.dtype == FEDC_F64);
    }
    live[loss] = true;
    for (int v = p->n - 1; v >= 0; v--)
        for (int i = 0; live[v] && i < p->nodes[v].nin; i++) live[p->nodes[v].in[i]] = true;
    for (int v = 0; v < p->n; v++)
        if (active[v] && live[v] && p->nodes[v].op != FEDC_OP_INPUT) checked[p->nodes[v].op] = true;
done:
    free(active);
    free(live);
}

/* Every op of ops.def is either checked by a case above or listed in NOT_HERE, and
 * not both (a stale reason would hide a case that is gone): a new differentiable
 * op fails here until it has a finite-difference case or a reason. */
static void test_every_op_of_ops_def_is_checked(void) {
    bool checked[FEDC_OP_COUNT] = {0};
    ad_case cases[MAX_CASES];
    int ncases = ad_cases(cases);
    for (int i = 0; i < ncases; i++) {
        fedc_program *p = fedc_test_loss_program(cases[i].in, cases[i].nin, cases[i].build, NULL);
        CHECK_MSG(p && !fedc_program_status(p), "%s: build: %s", cases[i].name, fedc_errmsg());
        if (p && !fedc_program_status(p)) mark_checked_ops(p, checked);
        fedc_program_destroy(p);
    }
#define FEDC_OP(id, name, min_in, max_in)                                                                        \
    CHECK_MSG(checked[FEDC_OP_##id] || not_here(FEDC_OP_##id),                                                   \
              "op %s has no finite-difference case in test_ad.c and no entry in NOT_HERE saying where it is checked", \
              name);                                                                                             \
    CHECK_MSG(!(checked[FEDC_OP_##id] && not_here(FEDC_OP_##id)),                                                \
              "op %s is checked by a case in test_ad.c: remove its NOT_HERE entry (\"%s\")", name,                \
              not_here(FEDC_OP_##id));
#include "ir/ops.def"
#undef FEDC_OP
}

/* ------------------------------------------------------- second order -- */

/* Builds hvp(w..., v...) = d/dw <grad_w loss, v> from `loss_p` and checks it
 * against central differences of the gradient along v. */
static void check_hvp(fedc_program *loss_p, const char *const *wrt, int nwrt, void *const *data, const fedc_type *types,
                      const char *const *others, void *const *other_data, int nothers) {
    fedc_program *g = NULL, *h = NULL, *hv = NULL;
    CHECK_OK(fedc_grad(loss_p, "loss", wrt, nwrt, &g));
    CHECK_OK(fedc_program_create(&h));
    if (!g || !h) goto done;
    /* h(inputs of g, v_w...) = sum_w <grad_w, v_w> */
    int nin = fedc_program_num_inputs(g);
    fedc_value args[8], results[8], v[4];
    for (int i = 0; i < nin; i++)
        args[i] = fedc_input(h, fedc_program_input_name(g, i), fedc_value_type(g, fedc_program_input(g, i)));
    for (int i = 0; i < nwrt; i++) {
        char name[32];
        snprintf(name, sizeof name, "v_%s", wrt[i]);
        v[i] = fedc_input(h, name, types[i]);
    }
    CHECK_OK(fedc_program_inline(h, g, args, results));
    fedc_value s = FEDC_NONE;
    for (int i = 0; i < nwrt; i++) {
        char name[32];
        snprintf(name, sizeof name, "grad_%s", wrt[i]);
        int k = 0;
        while (strcmp(fedc_program_output_name(g, k), name) != 0) k++;
        fedc_value dot = fedc_reduce_sum(h, fedc_mul(h, results[k], v[i]), NULL, -1, false);
        s = s == FEDC_NONE ? dot : fedc_add(h, s, dot);
    }
    CHECK_OK(fedc_program_output(h, "loss", s));
    CHECK_OK(fedc_grad(h, "loss", wrt, nwrt, &hv));
    if (!hv) goto done;

    fedc_executor *eh = NULL, *eg = NULL;
    CHECK_OK(fedc_executor_create(&eh, hv, NULL));
    CHECK_OK(fedc_executor_create(&eg, g, NULL));
    double *vdata[4];
    for (int i = 0; i < nwrt; i++) {
        int64_t n = fedc_type_count(&types[i]);
        vdata[i] = malloc((size_t)n * sizeof(double));
        for (int64_t j = 0; j < n; j++) vdata[i][j] = fedc_test_uniform(-1, 1);
        char name[32];
        snprintf(name, sizeof name, "v_%s", wrt[i]);
        CHECK_OK(fedc_executor_bind(eh, name, vdata[i]));
        CHECK_OK(fedc_executor_bind(eh, wrt[i], data[i]));
        CHECK_OK(fedc_executor_bind(eg, wrt[i], data[i]));
    }
    for (int i = 0; i < nothers; i++) {
        CHECK_OK(fedc_executor_bind(eh, others[i], other_data[i]));
        CHECK_OK(fedc_executor_bind(eg, others[i], other_data[i]));
    }
    CHECK_OK(fedc_executor_run(eh));
    /* Central differences of every gradient along v. */
    const double eps = 1e-5;
    for (int wi = 0; wi < nwrt; wi++) {
        char name[32];
        snprintf(name, sizeof name, "grad_%s", wrt[wi]);
        const double *hvp;
        CHECK_OK(fedc_executor_output(eh, name, (const void **)&hvp, NULL));
        int64_t n = fedc_type_count(&types[wi]);
        double *up = malloc((size_t)n * sizeof *up);
        for (int sign = 1; sign >= -1; sign -= 2) {
            for (int i = 0; i < nwrt; i++) {
                double *w = data[i];
                for (int64_t j = 0; j < fedc_type_count(&types[i]); j++) w[j] += sign * eps * vdata[i][j];
            }
            CHECK_OK(fedc_executor_run(eg));
            const double *gr;
            CHECK_OK(fedc_executor_output(eg, name, (const void **)&gr, NULL));
            for (int64_t j = 0; j < n; j++) up[j] = sign > 0 ? gr[j] : (up[j] - gr[j]) / (2 * eps);
            for (int i = 0; i < nwrt; i++) {
                double *w = data[i];
                for (int64_t j = 0; j < fedc_type_count(&types[i]); j++) w[j] -= sign * eps * vdata[i][j];
            }
        }
        for (int64_t j = 0; j < n; j++)
            CHECK_MSG(fabs(hvp[j] - up[j]) <= 1e-6 * (1 + fabs(up[j])), "Hv for %s[%lld]: AD %.10g, FD %.10g", wrt[wi],
                      (long long)j, hvp[j], up[j]);
        free(up);
    }
    for (int i = 0; i < nwrt; i++) free(vdata[i]);
    fedc_executor_destroy(eh);
    fedc_executor_destroy(eg);
done:
    fedc_program_destroy(g);
    fedc_program_destroy(h);
    fedc_program_destroy(hv);
}

static double *random_array(const fedc_type *t, double scale) {
    int64_t n = fedc_type_count(t);
    double *a = malloc((size_t)n * sizeof *a);
    for (int64_t i = 0; i < n; i++) a[i] = fedc_test_uniform(-scale, scale);
    return a;
}

static void test_hessian_vector_product_tanh_mlp(void) {
    fedc_type xt = T(6, 4), w1t = T(4, 5), w2t = T(5, 3), tt = T(6, 3);
    fedc_program *p;
    CHECK_OK(fedc_program_create(&p));
    fedc_value x = fedc_input(p, "x", xt), t = fedc_input(p, "t", tt);
    fedc_value w1 = fedc_input(p, "w1", w1t), w2 = fedc_input(p, "w2", w2t);
    fedc_value y = fedc_matmul(p, fedc_tanh(p, fedc_matmul(p, x, w1, false, false)), w2, false, false);
    CHECK_OK(fedc_program_output(p, "loss", fedc_reduce_mean(p, fedc_square(p, fedc_sub(p, y, t)), NULL, -1, false)));
    void *w[2] = {random_array(&w1t, 1), random_array(&w2t, 1)};
    void *other[2] = {random_array(&xt, 1), random_array(&tt, 1)};
    const char *wrt[] = {"w1", "w2"}, *others[] = {"x", "t"};
    fedc_type types[2] = {w1t, w2t};
    check_hvp(p, wrt, 2, w, types, others, other, 2);
    for (int i = 0; i < 2; i++) free(w[i]), free(other[i]);
    fedc_program_destroy(p);
}

static void test_hessian_vector_product_softmax_cross_entropy(void) {
    fedc_type xt = T(5, 4), wt = T(4, 3), bt = T(3), lt = TI(5);
    fedc_program *p;
    CHECK_OK(fedc_program_create(&p));
    fedc_value x = fedc_input(p, "x", xt), labels = fedc_input(p, "labels", lt);
    fedc_value w = fedc_input(p, "w", wt), b = fedc_input(p, "b", bt);
    fedc_value logits = fedc_add(p, fedc_matmul(p, x, w, false, false), b);
    fedc_value loss = fedc_reduce_mean(p, fedc_softmax_cross_entropy(p, logits, labels, FEDC_NONE), NULL, -1, false);
    CHECK_OK(fedc_program_output(p, "loss", loss));
    int32_t label_data[5] = {0, 2, 1, 2, 0};
    void *params[2] = {random_array(&wt, 1), random_array(&bt, 1)};
    void *other[2] = {random_array(&xt, 2), label_data};
    const char *wrt[] = {"w", "b"}, *others[] = {"x", "labels"};
    fedc_type types[2] = {wt, bt};
    check_hvp(p, wrt, 2, params, types, others, other, 2);
    free(params[0]), free(params[1]), free(other[0]);
    fedc_program_destroy(p);
}

/* ---------------------------------------------------------- the transform -- */

static void test_gradient_program_shape(void) {
    fedc_program *p, *g;
    CHECK_OK(fedc_program_create(&p));
    fedc_value x = fedc_input(p, "x", T(3)), k = fedc_input(p, "k", T(3));
    CHECK_OK(fedc_program_output(p, "loss", fedc_reduce_sum(p, fedc_mul(p, x, x), NULL, -1, false)));
    CHECK_OK(fedc_program_output(p, "unrelated", k));
    const char *wrt[] = {"x", "k"};
    CHECK_OK(fedc_grad(p, "loss", wrt, 2, &g));
    CHECK_EQ_INT(fedc_program_num_outputs(g), 4);
    CHECK(fedc_program_find_output(g, "loss") != FEDC_NONE);
    CHECK(fedc_program_find_output(g, "grad_x") != FEDC_NONE);
    /* k does not reach the loss: its gradient is zeros of its type. */
    fedc_executor *ex;
    CHECK_OK(fedc_executor_create(&ex, g, NULL));
    double xd[3] = {1, -2, 3}, kd[3] = {5, 5, 5};
    CHECK_OK(fedc_executor_bind(ex, "x", xd));
    CHECK_OK(fedc_executor_bind(ex, "k", kd));
    CHECK_OK(fedc_executor_run(ex));
    const double *gx, *gk;
    CHECK_OK(fedc_executor_output(ex, "grad_x", (const void **)&gx, NULL));
    CHECK_OK(fedc_executor_output(ex, "grad_k", (const void **)&gk, NULL));
    for (int i = 0; i < 3; i++) {
        CHECK_NEAR(gx[i], 2 * xd[i], 0);
        CHECK_NEAR(gk[i], 0, 0);
    }
    fedc_executor_destroy(ex);
    fedc_program_destroy(g);
    fedc_program_destroy(p);
}

static void test_vjp_takes_cotangents(void) {
    fedc_program *p, *g;
    CHECK_OK(fedc_program_create(&p));
    fedc_value x = fedc_input(p, "x", T(2));
    CHECK_OK(fedc_program_output(p, "y", fedc_mul(p, x, fedc_scalar_like(p, x, 3))));
    const char *wrt[] = {"x"};
    CHECK_OK(fedc_vjp(p, wrt, 1, &g));
    CHECK(fedc_program_find_input(g, "ct_y") != FEDC_NONE);
    fedc_executor *ex;
    CHECK_OK(fedc_executor_create(&ex, g, NULL));
    double xd[2] = {1, 2}, ct[2] = {10, -1};
    CHECK_OK(fedc_executor_bind(ex, "x", xd));
    CHECK_OK(fedc_executor_bind(ex, "ct_y", ct));
    CHECK_OK(fedc_executor_run(ex));
    const double *gx;
    CHECK_OK(fedc_executor_output(ex, "grad_x", (const void **)&gx, NULL));
    CHECK_NEAR(gx[0], 30, 0);
    CHECK_NEAR(gx[1], -3, 0);
    fedc_executor_destroy(ex);
    fedc_program_destroy(g);
    fedc_program_destroy(p);
}

static void test_grad_errors(void) {
    fedc_program *p, *g = NULL;
    CHECK_OK(fedc_program_create(&p));
    fedc_value x = fedc_input(p, "x", T(2));
    fedc_value labels = fedc_input(p, "labels", TI(2));
    CHECK_OK(fedc_program_output(p, "vec", x));
    CHECK_OK(fedc_program_output(p, "loss", fedc_reduce_sum(p, x, NULL, -1, false)));
    (void)labels;
    const char *wrt[] = {"x"}, *bad[] = {"nope"}, *ints[] = {"labels"};
    CHECK_ERR(fedc_grad(p, "missing", wrt, 1, &g), FEDC_ENOTFOUND, "missing");
    CHECK_ERR(fedc_grad(p, "vec", wrt, 1, &g), FEDC_ETYPE, "scalar");
    CHECK_ERR(fedc_grad(p, "loss", bad, 1, &g), FEDC_ENOTFOUND, "nope");
    CHECK_ERR(fedc_grad(p, "loss", ints, 1, &g), FEDC_ETYPE, "labels");
    CHECK(g == NULL);
    fedc_program_destroy(p);
}

/* A max_pool2d_grad node has no derivative yet: the transform says so. */
static void test_missing_second_derivative_is_reported(void) {
    fedc_program *p, *g = NULL, *gg = NULL;
    CHECK_OK(fedc_program_create(&p));
    fedc_value x = fedc_input(p, "x", T(1, 4, 4, 1));
    CHECK_OK(fedc_program_output(p, "loss", fedc_reduce_sum(p, fedc_square(p, fedc_max_pool2d(p, x, 2, 2, 2, 2, FEDC_PAD_VALID)), NULL, -1, false)));
    const char *wrt[] = {"x"};
    CHECK_OK(fedc_grad(p, "loss", wrt, 1, &g));
    fedc_program *h;
    CHECK_OK(fedc_program_create(&h));
    fedc_value hx = fedc_input(h, "x", T(1, 4, 4, 1)), res[2];
    CHECK_OK(fedc_program_inline(h, g, &hx, res));
    CHECK_OK(fedc_program_output(h, "loss", fedc_reduce_sum(h, res[1], NULL, -1, false)));
    CHECK_ERR(fedc_grad(h, "loss", wrt, 1, &gg), FEDC_EUNSUPPORTED, "max_pool2d_grad");
    fedc_program_destroy(h);
    fedc_program_destroy(g);
    fedc_program_destroy(p);
}

int main(int argc, char **argv) {
    static const fedc_test tests[] = {
        {"every op against finite differences", test_every_op_against_finite_differences},
        {"hessian-vector product, tanh mlp", test_hessian_vector_product_tanh_mlp},
        {"hessian-vector product, softmax cross-entropy", test_hessian_vector_product_softmax_cross_entropy},
        {"gradient program shape", test_gradient_program_shape},
        {"vjp takes cotangents", test_vjp_takes_cotangents},
        {"grad errors", test_grad_errors},
        {"missing second derivative is reported", test_missing_second_derivative_is_reported},
        {"every op of ops.def is checked", test_every_op_of_ops_def_is_checked},
        {"every op on clients values", test_every_op_on_clients_values},
    };
    return fedc_test_main(argc, argv, tests, FEDC_COUNT_OF(tests));
}
