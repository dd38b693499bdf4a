/*
 * Fault-injection tests: every allocation the library makes can fail, and each
 * failure must come back as FEDC_ENOMEM from the call that made it (or from
 * fedc_program_status for builder calls) -- never a crash, never a wrong status,
 * never a leak. For k = 1, 2, ... fedc__alloc_fail_after(k) makes the k-th
 * allocation of an operation (and every later one) fail, until the operation
 * needs fewer than k allocations and succeeds; everything is destroyed in each
 * iteration, so LeakSanitizer (in the ASan build) sees any leak on a failure
 * path. Operations: building an MLP with the builder, fedc_program_output,
 * fedc_grad, fedc_executor_create, bind and run (whole, end to end); the same for
 * a small convolutional model and for fedc_vjp; and fedc_program_clone,
 * fedc_program_dce and fedc_program_inline on their own. Successful runs under
 * injection must give the same bits as a run without it. Prints how many
 * allocation points each operation exercised.
 */
#include "core/internal.h"
#include "harness.h"

#include <string.h>

#include "fedc/ad.h"
#include "fedc/exec.h"
#include "fedc/program.h"

#define DIMS(...) ((int64_t[]){__VA_ARGS__})
#define NDIMS(...) ((int)(sizeof(DIMS(__VA_ARGS__)) / sizeof(int64_t)))
#define TY(dt, ...) fedc_type_make((dt), NDIMS(__VA_ARGS__), DIMS(__VA_ARGS__))

/* Enough to show a failure path that does not end; real operations need far fewer. */
#define MAX_POINTS 20000

/* ------------------------------------------------------------ scenarios -- */

/* What a scenario computed, to compare a success under injection with the
 * baseline run. */
typedef struct result {
    float values[64];
    int count;
} result;

typedef fedc_status (*scenario)(result *out);

/* Appends the f32 output `name` of `ex` to `out`. */
static fedc_status collect(const fedc_executor *ex, const char *name, result *out) {
    const void *data = NULL;
    fedc_type t;
    fedc_status st = fedc_executor_output(ex, name, &data, &t);
    if (st) return st;
    int64_t n = fedc_type_count(&t);
    for (int64_t i = 0; i < n && out->count < 64; i++) out->values[out->count++] = ((const float *)data)[i];
    return FEDC_OK;
}

enum { XB = 4, XI = 700, H1 = 12, H2 = 8, NO = 3 };

static float x_data[XB * XI], w1_data[XI * H1], b1_data[H1], w2_data[H1 * H2], b2_data[H2], w3_data[H2 * NO];
static int32_t labels_data[XB] = {0, 2, 1, 2};

static void make_data(void) {
    uint32_t s = 12345;
#define NEXT() ((s = s * 1664525u + 1013904223u), ((float)(s >> 8) / 16777216.0f - 0.5f))
    for (int i = 0; i < XB * XI; i++) x_data[i] = NEXT();
    for (int i = 0; i < XI * H1; i++) w1_data[i] = NEXT() * 0.1f;
    for (int i = 0; i < H1; i++) b1_data[i] = NEXT();
    for (int i = 0; i < H1 * H2; i++) w2_data[i] = NEXT();
    for (int i = 0; i < H2; i++) b2_data[i] = NEXT();
    for (int i = 0; i < H2 * NO; i++) w3_data[i] = NEXT();
#undef NEXT
}

/* A three-layer MLP. w1 is a 33 KB constant (larger than an arena block), so
 * the arena's big-block path is exercised too; there are enough outputs and
 * nodes in the gradient program to make the node and output arrays grow. */
static fedc_status build_mlp(fedc_program *p) {
    fedc_value x = fedc_input(p, "x", TY(FEDC_F32, XB, XI));
    fedc_value labels = fedc_input(p, "labels", TY(FEDC_I32, XB));
    fedc_value w1 = fedc_constant(p, TY(FEDC_F32, XI, H1), w1_data);
    fedc_value b1 = fedc_input(p, "b1", TY(FEDC_F32, H1));
    fedc_value w2 = fedc_input(p, "w2", TY(FEDC_F32, H1, H2));
    fedc_value b2 = fedc_input(p, "b2", TY(FEDC_F32, H2));
    fedc_value w3 = fedc_input(p, "w3", TY(FEDC_F32, H2, NO));
    fedc_value h1 = fedc_relu(p, fedc_add(p, fedc_matmul(p, x, w1, false, false), b1));
    fedc_value h2 = fedc_tanh(p, fedc_add(p, fedc_matmul(p, h1, w2, false, false), b2));
    fedc_value logits = fedc_matmul(p, h2, w3, false, false);
    fedc_value xent = fedc_softmax_cross_entropy(p, logits, labels, FEDC_NONE);
    fedc_value loss = fedc_reduce_mean(p, xent, NULL, -1, false);
    fedc_value l2 = fedc_reduce_sum(p, fedc_square(p, w2), NULL, -1, false);
    fedc_value total = fedc_add(p, loss, fedc_mul(p, l2, fedc_scalar_like(p, l2, 1e-3)));
    /* something dead, for dce */
    fedc_exp(p, fedc_sigmoid(p, h1));
    /* fedc_program_output's errors are returned, not recorded in the program */
    fedc_status st = fedc_program_output(p, "loss", total);
    if (!st) st = fedc_program_output(p, "logits", logits);
    if (!st) st = fedc_program_output(p, "h2", h2);
    if (!st) st = fedc_program_output(p, "xent", xent);
    if (!st) st = fedc_program_output(p, "pred", fedc_argmax(p, logits, -1));
    return st;
}

static fedc_status bind_mlp(fedc_executor *ex) {
    fedc_status st = fedc_executor_bind(ex, "x", x_data);
    if (!st) st = fedc_executor_bind(ex, "labels", labels_data);
    if (!st) st = fedc_executor_bind(ex, "b1", b1_data);
    if (!st) st = fedc_executor_bind(ex, "w2", w2_data);
    if (!st) st = fedc_executor_bind(ex, "b2", b2_data);
    if (!st) st = fedc_executor_bind(ex, "w3", w3_data);
    return st;
}

/* Every failure must leave the out-pointers of the failing call NULL. */
#define CHECK_NULL_ON_FAIL(st, ptr) CHECK_MSG(!(st) || (ptr) == NULL, "%s is not NULL after a failure", #ptr)

/* The whole pipeline: build, output, grad, executor_create, bind, run. */
static fedc_status mlp_end_to_end(result *out) {
    fedc_program *p = NULL, *g = NULL;
    fedc_executor *ex = NULL;
    fedc_status st = fedc_program_create(&p);
    CHECK_NULL_ON_FAIL(st, p);
    if (st) return st;
    st = build_mlp(p);
    if (!st) {
        const char *wrt[] = {"b1", "w2", "b2", "w3"};
        st = fedc_grad(p, "loss", wrt, 4, &g);
        CHECK_NULL_ON_FAIL(st, g);
    }
    if (!st) {
        st = fedc_executor_create(&ex, g, NULL);
        CHECK_NULL_ON_FAIL(st, ex);
    }
    if (!st) st = bind_mlp(ex);
    if (!st) st = fedc_executor_run(ex);
    if (!st) st = fedc_executor_run(ex);
    if (!st) st = collect(ex, "loss", out);
    if (!st) st = collect(ex, "grad_b1", out);
    if (!st) st = collect(ex, "grad_w3", out);
    fedc_executor_destroy(ex);
    fedc_program_destroy(g);
    fedc_program_destroy(p);
    return st;
}

/* The same with reverse mode through fedc_vjp and the reference kernels. */
static fedc_status mlp_vjp(result *out) {
    fedc_program *p = NULL, *g = NULL;
    fedc_executor *ex = NULL;
    fedc_status st = fedc_program_create(&p);
    if (st) return st;
    st = build_mlp(p);
    if (!st) {
        const char *wrt[] = {"w2"};
        st = fedc_vjp(p, wrt, 1, &g);
        CHECK_NULL_ON_FAIL(st, g);
    }
    fedc_exec_options opt = {.reference_kernels = true};
    if (!st) st = fedc_executor_create(&ex, g, &opt);
    if (!st) st = bind_mlp(ex);
    static float ct_loss = 1, ct_logits[XB * NO], ct_h2[XB * H2], ct_xent[XB];
    if (!st) st = fedc_executor_bind(ex, "ct_loss", &ct_loss);
    if (!st) st = fedc_executor_bind(ex, "ct_logits", ct_logits);
    if (!st) st = fedc_executor_bind(ex, "ct_h2", ct_h2);
    if (!st) st = fedc_executor_bind(ex, "ct_xent", ct_xent);
    if (!st) st = fedc_executor_run(ex);
    if (!st) st = collect(ex, "grad_w2", out);
    fedc_executor_destroy(ex);
    fedc_program_destroy(g);
    fedc_program_destroy(p);
    return st;
}

/* A small convnet end to end: conv2d (scratch), pooling and their gradients. */
static fedc_status convnet_end_to_end(result *out) {
    static float img[2 * 8 * 8 * 2], filt[3 * 3 * 2 * 4], dense[4 * 4 * 4 * 3];
    static const int32_t lab[2] = {1, 0};
    for (int i = 0; i < 2 * 8 * 8 * 2; i++) img[i] = (float)((i * 37) % 11) / 11 - 0.5f;
    for (int i = 0; i < 3 * 3 * 2 * 4; i++) filt[i] = (float)((i * 13) % 7) / 7 - 0.5f;
    for (int i = 0; i < 4 * 4 * 4 * 3; i++) dense[i] = (float)((i * 5) % 9) / 9 - 0.5f;
    fedc_program *p = NULL, *g = NULL;
    fedc_executor *ex = NULL;
    fedc_status st = fedc_program_create(&p);
    if (st) return st;
    fedc_value x = fedc_input(p, "x", TY(FEDC_F32, 2, 8, 8, 2));
    fedc_value w = fedc_input(p, "w", TY(FEDC_F32, 3, 3, 2, 4));
    fedc_value d = fedc_input(p, "d", TY(FEDC_F32, 64, 3));
    fedc_value y = fedc_relu(p, fedc_conv2d(p, x, w, 1, 1, FEDC_PAD_SAME));
    y = fedc_avg_pool2d(p, fedc_max_pool2d(p, y, 2, 2, 2, 2, FEDC_PAD_VALID), 3, 3, 1, 1, FEDC_PAD_SAME);
    fedc_value logits = fedc_matmul(p, fedc_reshape(p, y, 2, DIMS(2, -1)), d, false, false);
    fedc_value loss = fedc_reduce_mean(p, fedc_softmax_cross_entropy(p, logits, fedc_input(p, "l", TY(FEDC_I32, 2)),
                                                                     FEDC_NONE),
                                       NULL, -1, false);
    st = fedc_program_status(p);
    if (!st) st = fedc_program_output(p, "loss", loss);
    if (!st) {
        const char *wrt[] = {"x", "w", "d"};
        st = fedc_grad(p, "loss", wrt, 3, &g);
    }
    if (!st) st = fedc_executor_create(&ex, g, NULL);
    if (!st) st = fedc_executor_bind(ex, "x", img);
    if (!st) st = fedc_executor_bind(ex, "w", filt);
    if (!st) st = fedc_executor_bind(ex, "d", dense);
    if (!st) st = fedc_executor_bind(ex, "l", lab);
    if (!st) st = fedc_executor_run(ex);
    if (!st) st = collect(ex, "loss", out);
    if (!st) st = collect(ex, "grad_w", out);
    fedc_executor_destroy(ex);
    fedc_program_destroy(g);
    fedc_program_destroy(p);
    return st;
}

/* A federated round: broadcast, a map whose body folds local steps, weighted_mean,
 * its gradient, and a two-thread cohort run. */
static fedc_status federated_round(result *out) {
    static float w0[3] = {0.5f, -0.25f, 1}, data[3 * 2 * 3], weights[3] = {1, 2, 3};
    for (int i = 0; i < 3 * 2 * 3; i++) data[i] = (float)((i * 7) % 5) / 5 - 0.4f;
    fedc_program *step = NULL, *body = NULL, *p = NULL, *g = NULL;
    fedc_executor *ex = NULL;
    fedc_status st = fedc_program_create(&step);
    if (!st) st = fedc_program_create(&body);
    if (!st) st = fedc_program_create(&p);
    if (!st) { /* step(w, x) = w - 0.1 tanh(w * x) */
        fedc_value w = fedc_input(step, "w", TY(FEDC_F32, 3)), x = fedc_input(step, "x", TY(FEDC_F32, 3));
        fedc_value upd = fedc_sub(step, w, fedc_mul(step, fedc_scalar(step, FEDC_F32, 0.1), fedc_tanh(step, fedc_mul(step, w, x))));
        st = fedc_program_output(step, "w", upd);
    }
    if (!st) { /* body(w, xs) = w - fold(step)(w, xs) */
        fedc_value w = fedc_input(body, "w", TY(FEDC_F32, 3)), xs = fedc_input(body, "xs", TY(FEDC_F32, 2, 3)), r;
        st = fedc_fold(body, step, &w, 1, &xs, 1, fedc_scalar(body, FEDC_I32, 2), &r);
        if (!st) st = fedc_program_output(body, "delta", fedc_sub(body, w, r));
    }
    if (!st) {
        fedc_type ts = TY(FEDC_F32, 3), tc = TY(FEDC_F32, 2, 3), tw = TY(FEDC_F32);
        ts.placement = FEDC_SERVER, tc.placement = FEDC_CLIENTS, tw.placement = FEDC_CLIENTS;
        fedc_value w = fedc_input(p, "w", ts), xs = fedc_input(p, "xs", tc), n = fedc_input(p, "n", tw), delta;
        st = fedc_map(p, body, (fedc_value[]){fedc_broadcast(p, w), xs}, 2, &delta);
        fedc_value w_new = fedc_sub(p, w, fedc_weighted_mean(p, delta, n));
        if (!st) st = fedc_program_output(p, "loss", fedc_reduce_sum(p, fedc_square(p, w_new), NULL, -1, false));
    }
    if (!st) st = fedc_grad(p, "loss", (const char *[]){"w"}, 1, &g);
    fedc_exec_options o = {.clients = 3, .threads = 2};
    if (!st) st = fedc_executor_create(&ex, g, &o);
    if (!st) st = fedc_executor_bind(ex, "w", w0);
    if (!st) st = fedc_executor_bind(ex, "xs", data);
    if (!st) st = fedc_executor_bind(ex, "n", weights);
    if (!st) st = fedc_executor_run(ex);
    if (!st) st = collect(ex, "loss", out);
    if (!st) st = collect(ex, "grad_w", out);
    fedc_executor_destroy(ex);
    fedc_program_destroy(g);
    fedc_program_destroy(p);
    fedc_program_destroy(body);
    fedc_program_destroy(step);
    return st;
}

/* ------------------------------------------------- single transforms -- */

/* These run with injection only around the transform itself: the program they
 * work on is made beforehand (no injection) by prepare(). */
static fedc_program *prepared; /* made by prepare_mlp, without injection */

static void prepare_mlp(void) {
    prepared = NULL;
    CHECK_OK(fedc_program_create(&prepared));
    if (prepared) CHECK_OK(build_mlp(prepared));
}

static fedc_status run_program(const fedc_program *p, const char *out_name, result *out) {
    fedc_executor *ex = NULL;
    fedc_status st = fedc_executor_create(&ex, p, NULL);
    if (!st) st = bind_mlp(ex);
    if (!st) st = fedc_executor_run(ex);
    if (!st) st = collect(ex, out_name, out);
    fedc_executor_destroy(ex);
    return st;
}

/* Calls `op` with injection at `k` (0: none), then checks its result with
 * injection off. Returns op's status; *made is the allocations op made. */
typedef fedc_status (*transform)(result *out, uint64_t k, uint64_t *made);

static fedc_status t_clone(result *out, uint64_t k, uint64_t *made) {
    prepare_mlp();
    if (!prepared) return FEDC_EINTERNAL;
    fedc_program *q = NULL;
    fedc__alloc_fail_after(0);
    fedc__alloc_fail_after(k);
    fedc_status st = fedc_program_clone(prepared, &q);
    *made = fedc__alloc_fail_after(0);
    CHECK_NULL_ON_FAIL(st, q);
    if (!st) {
        CHECK_EQ_INT(fedc_program_size(q), fedc_program_size(prepared));
        CHECK_OK(fedc_program_verify(q));
        fedc_program_destroy(prepared); /* the clone stands alone */
        prepared = NULL;
        CHECK_OK(run_program(q, "loss", out));
    }
    fedc_program_destroy(q);
    fedc_program_destroy(prepared);
    return st;
}

static fedc_status t_dce(result *out, uint64_t k, uint64_t *made) {
    prepare_mlp();
    if (!prepared) return FEDC_EINTERNAL;
    int size = fedc_program_size(prepared);
    fedc__alloc_fail_after(0);
    fedc__alloc_fail_after(k);
    fedc_status st = fedc_program_dce(prepared);
    *made = fedc__alloc_fail_after(0);
    if (st) { /* a failed dce leaves the program as it was */
        CHECK_EQ_INT(fedc_program_size(prepared), size);
        CHECK_OK(fedc_program_verify(prepared));
    } else {
        CHECK(fedc_program_size(prepared) < size);
        CHECK_OK(fedc_program_verify(prepared));
        CHECK_OK(run_program(prepared, "loss", out));
    }
    fedc_program_destroy(prepared);
    return st;
}

static fedc_status t_inline(result *out, uint64_t k, uint64_t *made) {
    prepare_mlp();
    if (!prepared) return FEDC_EINTERNAL;
    fedc_program *dst = NULL;
    CHECK_OK(fedc_program_create(&dst));
    if (!dst) {
        fedc_program_destroy(prepared);
        return FEDC_EINTERNAL;
    }
    /* dst: the MLP's inputs, in its order, then the MLP inlined */
    fedc_value args[6];
    for (int i = 0; i < fedc_program_num_inputs(prepared); i++) {
        fedc_value v = fedc_program_input(prepared, i);
        args[i] = fedc_input(dst, fedc_program_input_name(prepared, i), fedc_value_type(prepared, v));
    }
    CHECK_OK(fedc_program_status(dst));
    fedc_value results[5] = {0, 0, 0, 0, 0};
    fedc__alloc_fail_after(0);
    fedc__alloc_fail_after(k);
    fedc_status st = fedc_program_inline(dst, prepared, args, results);
    *made = fedc__alloc_fail_after(0);
    fedc_program_destroy(prepared);
    if (st) {
        /* results are FEDC_NONE on every failure path, the map's included */
        for (int i = 0; i < 5; i++) CHECK_EQ_INT(results[i], FEDC_NONE);
        CHECK_MSG(fedc_program_status(dst) == st, "a failed inline must leave its error in dst (%s vs %s)",
                  fedc_status_str(fedc_program_status(dst)), fedc_status_str(st));
    } else {
        for (int i = 0; i < 5; i++) CHECK(results[i] != FEDC_NONE);
        CHECK_OK(fedc_program_output(dst, "loss", results[0]));
        CHECK_OK(fedc_program_verify(dst));
        CHECK_OK(run_program(dst, "loss", out));
    }
    fedc_program_destroy(dst);
    return st;
}

/* ----------------------------------------------------------------- driver -- */

static bool same_result(const result *a, const result *b) {
    return a->count == b->count && memcmp(a->values, b->values, (size_t)a->count * sizeof(float)) == 0;
}

/* The status, and that the thread's message is there and says so for ENOMEM. */
static void check_failure(const char *what, uint64_t k, fedc_status st) {
    CHECK_MSG(st == FEDC_ENOMEM, "%s, allocation %llu failing: got %s (%s), want out of memory", what,
              (unsigned long long)k, fedc_status_str(st), fedc_errmsg());
    CHECK_MSG(fedc_errmsg()[0] != '\0', "%s, allocation %llu failing: empty message", what, (unsigned long long)k);
}

/* Runs a whole scenario under injection at k = 1, 2, ... */
static void exercise(const char *what, scenario fn) {
    result base = {{0}, 0};
    fedc__alloc_fail_after(0);
    fedc_status st = fn(&base);
    uint64_t total = fedc__alloc_fail_after(0);
    CHECK_OK(st);
    if (st) return;
    CHECK(base.count > 0);
    uint64_t k;
    int failures_before = fedc_test_failures();
    for (k = 1; k <= MAX_POINTS; k++) {
        result r = {{0}, 0};
        fedc__alloc_fail_after(k);
        st = fn(&r);
        uint64_t made = fedc__alloc_fail_after(0);
        if (st == FEDC_OK) {
            /* success means no allocation failed: a swallowed failure would show
             * up as success with k <= made */
            CHECK_MSG(made < k, "%s: succeeded although allocation %llu of %llu failed", what, (unsigned long long)k,
                      (unsigned long long)made);
            CHECK_MSG(same_result(&r, &base), "%s: a successful run under injection (k = %llu) gave other results",
                      what, (unsigned long long)k);
            break;
        }
        check_failure(what, k, st);
        if (fedc_test_failures() > failures_before + 10) break; /* enough to see the pattern */
    }
    CHECK_MSG(k <= MAX_POINTS, "%s: still failing after %d injected failures", what, MAX_POINTS);
    CHECK_MSG(k == total + 1, "%s: %llu allocations without injection, but success at k = %llu", what,
              (unsigned long long)total, (unsigned long long)k);
    printf("%s: %llu allocation points exercised\n", what, (unsigned long long)(k - 1));
}

static void exercise_transform(const char *what, transform fn) {
    result base = {{0}, 0};
    uint64_t total = 0;
    fedc_status st = fn(&base, 0, &total);
    CHECK_OK(st);
    if (st) return;
    CHECK(base.count > 0);
    CHECK(total > 0);
    uint64_t k;
    int failures_before = fedc_test_failures();
    for (k = 1; k <= MAX_POINTS; k++) {
        result r = {{0}, 0};
        uint64_t made = 0;
        st = fn(&r, k, &made);
        if (st == FEDC_OK) {
            CHECK_MSG(made < k, "%s: succeeded although allocation %llu of %llu failed", what, (unsigned long long)k,
                      (unsigned long long)made);
            CHECK_MSG(same_result(&r, &base), "%s: a successful run under injection (k = %llu) gave other results",
                      what, (unsigned long long)k);
            break;
        }
        check_failure(what, k, st);
        if (fedc_test_failures() > failures_before + 10) break;
    }
    CHECK_MSG(k <= MAX_POINTS, "%s: still failing after %d injected failures", what, MAX_POINTS);
    CHECK_MSG(k == total + 1, "%s: %llu allocations without injection, but success at k = %llu", what,
              (unsigned long long)total, (unsigned long long)k);
    printf("%s: %llu allocation points exercised\n", what, (unsigned long long)(k - 1));
}

static void test_mlp_end_to_end(void) { exercise("mlp: build + output + grad + executor + bind + run", mlp_end_to_end); }
static void test_mlp_vjp(void) { exercise("mlp: build + vjp + executor (reference kernels) + run", mlp_vjp); }
static void test_convnet(void) { exercise("convnet: build + grad + executor + run", convnet_end_to_end); }
static void test_federated_round(void) {
    exercise("federated round: map of a fold + grad + two-thread cohort run", federated_round);
}
static void test_clone(void) { exercise_transform("fedc_program_clone", t_clone); }
static void test_dce(void) { exercise_transform("fedc_program_dce", t_dce); }
static void test_inline(void) { exercise_transform("fedc_program_inline", t_inline); }

/* Builder calls after an out-of-memory failure: the error is sticky and is the
 * out-of-memory one, even when later calls would fail for other reasons. */
static void test_builder_sticky_enomem(void) {
    fedc_program *p = NULL;
    CHECK_OK(fedc_program_create(&p));
    if (!p) return;
    fedc_value x = fedc_input(p, "x", TY(FEDC_F32, 3));
    fedc__alloc_fail_after(1);
    fedc_value c = FEDC_NONE;
    for (int i = 0; i < 200; i++) { /* until the arena or the node array must grow */
        c = fedc_constant(p, TY(FEDC_F32, 1024), x_data);
        if (c == FEDC_NONE) break;
    }
    fedc__alloc_fail_after(0);
    CHECK_EQ_INT(c, FEDC_NONE);
    fedc_value bad = fedc_add(p, x, fedc_input(p, "d", TY(FEDC_F64, 3)));
    CHECK_EQ_INT(bad, FEDC_NONE);
    CHECK_ERR(fedc_program_status(p), FEDC_ENOMEM, NULL);
    CHECK(strstr(fedc_errmsg(), "cast") == NULL);
    fedc_program_destroy(p);
}

int main(int argc, char **argv) {
    make_data();
    static const fedc_test tests[] = {
        {"builder_sticky_enomem", test_builder_sticky_enomem},
        {"mlp_end_to_end", test_mlp_end_to_end},
        {"mlp_vjp", test_mlp_vjp},
        {"convnet", test_convnet},
        {"federated_round", test_federated_round},
        {"clone", test_clone},
        {"dce", test_dce},
        {"inline", test_inline},
    };
    return fedc_test_main(argc, argv, tests, FEDC_COUNT_OF(tests));
}
