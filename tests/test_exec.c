/*
 * Tests for the executor (fedc/exec.h): results of an MLP-like program against
 * values computed here with plain loops (f32 and f64); the reference kernels
 * against the fast ones on a convolutional program and its gradient; no
 * allocation while running; determinism; outputs that are inputs or constants;
 * and that the executor owns a copy of its program. Liveness planning is in
 * test_exec_plan.c; every op's dispatch and the run-time errors in
 * test_exec_ops.c.
 */
#include "core/internal.h"
#include "ir_check.h"

#include <stdlib.h>
#include <string.h>

#include "fedc/ad.h"
#include "fedc/exec.h"
#include "fedc/program.h"
#include "kernels/kernels.h"


/* ---------------------------------------------------------------- helpers -- */

#include "test_rng.h"

/* ------------------------------------------------------------------- mlp -- */

enum { MB = 4, MI = 5, MH = 6, MO = 3 };

/* h = relu(x @ w1 + b1); logits = h @ w2 + b2; loss = mean(xent(logits, labels));
 * pred = argmax(logits). */
static fedc_program *build_mlp(fedc_dtype dt) {
    fedc_program *p = newp();
    if (!p) return NULL;
    fedc_value x = fedc_input(p, "x", TY(dt, MB, MI));
    fedc_value w1 = fedc_input(p, "w1", TY(dt, MI, MH));
    fedc_value b1 = fedc_input(p, "b1", TY(dt, MH));
    fedc_value w2 = fedc_input(p, "w2", TY(dt, MH, MO));
    fedc_value b2 = fedc_input(p, "b2", TY(dt, MO));
    fedc_value labels = fedc_input(p, "labels", TY(FEDC_I32, MB));
    fedc_value h = fedc_relu(p, fedc_add(p, fedc_matmul(p, x, w1, false, false), b1));
    fedc_value logits = fedc_add(p, fedc_matmul(p, h, w2, false, false), b2);
    fedc_value xent = fedc_softmax_cross_entropy(p, logits, labels, FEDC_NONE);
    fedc_value loss = fedc_reduce_mean(p, xent, NULL, -1, false);
    fedc_value pred = fedc_argmax(p, logits, -1);
    CHECK_OK(fedc_program_output(p, "h", h));
    CHECK_OK(fedc_program_output(p, "logits", logits));
    CHECK_OK(fedc_program_output(p, "loss", loss));
    CHECK_OK(fedc_program_output(p, "pred", pred));
    CHECK_OK(fedc_program_status(p));
    return p;
}

typedef struct mlp_data {
    double x[MB * MI], w1[MI * MH], b1[MH], w2[MH * MO], b2[MO];
    int32_t labels[MB];
} mlp_data;

static void mlp_data_make(mlp_data *d, uint64_t seed) {
    rng r = {seed};
    for (int i = 0; i < MB * MI; i++) d->x[i] = rng_uniform(&r, -1, 1);
    for (int i = 0; i < MI * MH; i++) d->w1[i] = rng_uniform(&r, -1, 1);
    for (int i = 0; i < MH; i++) d->b1[i] = rng_uniform(&r, -0.5, 0.5);
    for (int i = 0; i < MH * MO; i++) d->w2[i] = rng_uniform(&r, -1, 1);
    for (int i = 0; i < MO; i++) d->b2[i] = rng_uniform(&r, -0.5, 0.5);
    for (int i = 0; i < MB; i++) d->labels[i] = (int32_t)rng_int(&r, MO);
}

/* The MLP by hand, in double, from the data as the program sees it (rounded to
 * f32 when dt is f32). */
static void mlp_by_hand(const mlp_data *d, fedc_dtype dt, double *h, double *logits, double *loss, int32_t *pred) {
#define R(v) (dt == FEDC_F32 ? (double)(float)(v) : (v))
    for (int b = 0; b < MB; b++)
        for (int j = 0; j < MH; j++) {
            double s = R(d->b1[j]);
            for (int i = 0; i < MI; i++) s += R(d->x[b * MI + i]) * R(d->w1[i * MH + j]);
            h[b * MH + j] = s > 0 ? s : 0;
        }
    double total = 0;
    for (int b = 0; b < MB; b++) {
        for (int o = 0; o < MO; o++) {
            double s = R(d->b2[o]);
            for (int j = 0; j < MH; j++) s += h[b * MH + j] * R(d->w2[j * MO + o]);
            logits[b * MO + o] = s;
        }
        double mx = logits[b * MO], sum = 0;
        int best = 0;
        for (int o = 1; o < MO; o++)
            if (logits[b * MO + o] > mx) mx = logits[b * MO + o], best = o;
        for (int o = 0; o < MO; o++) sum += exp(logits[b * MO + o] - mx);
        total += mx + log(sum) - logits[b * MO + d->labels[b]];
        pred[b] = best;
    }
    *loss = total / MB;
#undef R
}

/* Binds the MLP's inputs from `d` converted to dt; `store` holds the converted data. */
static void mlp_bind(fedc_executor *ex, const mlp_data *d, fedc_dtype dt, void *store) {
    const double *src[5] = {d->x, d->w1, d->b1, d->w2, d->b2};
    const int n[5] = {MB * MI, MI * MH, MH, MH * MO, MO};
    const char *names[5] = {"x", "w1", "b1", "w2", "b2"};
    char *at = store;
    for (int k = 0; k < 5; k++) {
        for (int i = 0; i < n[k]; i++) {
            if (dt == FEDC_F32) ((float *)at)[i] = (float)src[k][i];
            else ((double *)at)[i] = src[k][i];
        }
        CHECK_OK(fedc_executor_bind(ex, names[k], at));
        at += (size_t)n[k] * fedc_dtype_size(dt);
    }
    CHECK_OK(fedc_executor_bind(ex, "labels", d->labels));
}

static double load(fedc_dtype dt, const void *p, int64_t i) {
    return dt == FEDC_F32 ? (double)((const float *)p)[i] : ((const double *)p)[i];
}

static void check_mlp(fedc_dtype dt, bool reference) {
    fedc_program *p = build_mlp(dt);
    if (!p) return;
    fedc_executor *ex = NULL;
    fedc_exec_options opt = {.reference_kernels = reference};
    fedc_status st = fedc_executor_create(&ex, p, &opt);
    CHECK_OK(st);
    fedc_program_destroy(p);
    if (st) return;
    double tol = dt == FEDC_F32 ? 1e-5 : 1e-12;
    for (uint64_t seed = 1; seed <= 3; seed++) {
        mlp_data d;
        mlp_data_make(&d, seed * 7919);
        double store[MB * MI + MI * MH + MH + MH * MO + MO];
        mlp_bind(ex, &d, dt, store);
        CHECK_OK(fedc_executor_run(ex));
        double h[MB * MH], logits[MB * MO], loss;
        int32_t pred[MB];
        mlp_by_hand(&d, dt, h, logits, &loss, pred);
        const void *hv = checked_output(ex, "h", dt, MB * MH);
        const void *lv = checked_output(ex, "logits", dt, MB * MO);
        const void *sv = checked_output(ex, "loss", dt, 1);
        const int32_t *pv = checked_output(ex, "pred", FEDC_I32, MB);
        if (!hv || !lv || !sv || !pv) break;
        for (int i = 0; i < MB * MH; i++) CHECK_NEAR(load(dt, hv, i), h[i], tol);
        for (int i = 0; i < MB * MO; i++) CHECK_NEAR(load(dt, lv, i), logits[i], tol);
        CHECK_NEAR(load(dt, sv, 0), loss, tol);
        for (int b = 0; b < MB; b++) CHECK_EQ_INT(pv[b], pred[b]);
    }
    fedc_executor_destroy(ex);
}

static void test_mlp_f32(void) { check_mlp(FEDC_F32, false); }
static void test_mlp_f64(void) { check_mlp(FEDC_F64, false); }
static void test_mlp_reference(void) {
    check_mlp(FEDC_F32, true);
    check_mlp(FEDC_F64, true);
}

/* ------------------------------------------------------- ref vs fast -- */

enum { CN = 2, CH = 9, CW = 9, CC = 3, CO = 4, CK = 5 };

/* conv SAME/2 -> relu -> max_pool 2x2/1 -> flatten -> matmul (+ a transposed one)
 * -> xent -> mean; a VALID conv and an avg pool on the side. */
static fedc_program *build_convnet(void) {
    fedc_program *p = newp();
    if (!p) return NULL;
    fedc_value x = fedc_input(p, "x", TY(FEDC_F32, CN, CH, CW, CC));
    fedc_value w = fedc_input(p, "w", TY(FEDC_F32, 3, 3, CC, CO));
    fedc_value w2 = fedc_input(p, "w2", TY(FEDC_F32, 64, CK));
    fedc_value w2t = fedc_input(p, "w2t", TY(FEDC_F32, CK, 64));
    fedc_value b = fedc_input(p, "b", TY(FEDC_F32, CK));
    fedc_value labels = fedc_input(p, "labels", TY(FEDC_I32, CN));
    fedc_value conv = fedc_conv2d(p, x, w, 2, 2, FEDC_PAD_SAME);          /* [2,5,5,4] */
    fedc_value act = fedc_relu(p, conv);
    fedc_value pool = fedc_max_pool2d(p, act, 2, 2, 1, 1, FEDC_PAD_VALID); /* [2,4,4,4] */
    fedc_value flat = fedc_reshape(p, pool, 2, DIMS(CN, -1));             /* [2,64] */
    fedc_value logits = fedc_add(p, fedc_matmul(p, flat, w2, false, false), b);
    fedc_value logits_t = fedc_matmul(p, flat, w2t, false, true);
    fedc_value xent = fedc_softmax_cross_entropy(p, logits, labels, FEDC_NONE);
    fedc_value loss = fedc_reduce_mean(p, xent, NULL, -1, false);
    fedc_value valid = fedc_conv2d(p, x, w, 1, 1, FEDC_PAD_VALID);        /* [2,7,7,4] */
    fedc_value avg = fedc_avg_pool2d(p, valid, 3, 3, 2, 2, FEDC_PAD_SAME); /* [2,4,4,4] */
    fedc_value mean = fedc_reduce_mean(p, avg, (int[]){1, 2}, 2, false);  /* [2,4] */
    CHECK_OK(fedc_program_output(p, "conv", conv));
    CHECK_OK(fedc_program_output(p, "pool", pool));
    CHECK_OK(fedc_program_output(p, "logits", logits));
    CHECK_OK(fedc_program_output(p, "logits_t", logits_t));
    CHECK_OK(fedc_program_output(p, "loss", loss));
    CHECK_OK(fedc_program_output(p, "valid", valid));
    CHECK_OK(fedc_program_output(p, "mean", mean));
    CHECK_OK(fedc_program_status(p));
    return p;
}

typedef struct convnet_data {
    float x[CN * CH * CW * CC], w[3 * 3 * CC * CO], w2[64 * CK], w2t[CK * 64], b[CK];
    int32_t labels[CN];
} convnet_data;

static void convnet_data_make(convnet_data *d, uint64_t seed) {
    rng r = {seed};
    fill_f32(&r, d->x, CN * CH * CW * CC, -1, 1);
    fill_f32(&r, d->w, 3 * 3 * CC * CO, -0.5, 0.5);
    fill_f32(&r, d->w2, 64 * CK, -0.3, 0.3);
    fill_f32(&r, d->w2t, 64 * CK, -0.3, 0.3);
    fill_f32(&r, d->b, CK, -0.1, 0.1);
    for (int i = 0; i < CN; i++) d->labels[i] = (int32_t)rng_int(&r, CK);
}

static void convnet_bind(fedc_executor *ex, const convnet_data *d) {
    CHECK_OK(fedc_executor_bind(ex, "x", d->x));
    CHECK_OK(fedc_executor_bind(ex, "w", d->w));
    CHECK_OK(fedc_executor_bind(ex, "w2", d->w2));
    CHECK_OK(fedc_executor_bind(ex, "w2t", d->w2t));
    CHECK_OK(fedc_executor_bind(ex, "b", d->b));
    CHECK_OK(fedc_executor_bind(ex, "labels", d->labels));
}

/* Runs `p` with both kernel tables on the same data and compares every output. */
static void compare_ref_fast(const fedc_program *p, double tol) {
    fedc_executor *ref = NULL, *fast = NULL;
    fedc_exec_options ro = {.reference_kernels = true}, fo = {.reference_kernels = false};
    CHECK_OK(fedc_executor_create(&ref, p, &ro));
    CHECK_OK(fedc_executor_create(&fast, p, &fo));
    if (!ref || !fast) goto done;
    for (uint64_t seed = 11; seed <= 13; seed++) {
        convnet_data d;
        convnet_data_make(&d, seed);
        convnet_bind(ref, &d);
        convnet_bind(fast, &d);
        CHECK_OK(fedc_executor_run(ref));
        CHECK_OK(fedc_executor_run(fast));
        for (int o = 0; o < fedc_program_num_outputs(p); o++) {
            const char *name = fedc_program_output_name(p, o);
            const void *a = NULL, *b = NULL;
            fedc_type ta, tb;
            CHECK_OK(fedc_executor_output(ref, name, &a, &ta));
            CHECK_OK(fedc_executor_output(fast, name, &b, &tb));
            if (!a || !b) continue;
            CHECK(fedc_type_equal(&ta, &tb));
            int64_t n = fedc_type_count(&ta);
            int bad = 0;
            for (int64_t i = 0; i < n && bad < 5; i++) {
                double va = load(ta.dtype, a, i), vb = load(ta.dtype, b, i);
                double scale = fabs(va) > 1 ? fabs(va) : 1;
                if (!(fabs(va - vb) <= tol * scale)) {
                    fedc_test_fail(__FILE__, __LINE__, "output %s[%lld]: ref %.9g, fast %.9g", name, (long long)i, va,
                                   vb);
                    bad++;
                }
            }
        }
    }
done:
    fedc_executor_destroy(ref);
    fedc_executor_destroy(fast);
}

static void test_ref_vs_fast(void) {
    fedc_program *p = build_convnet();
    if (!p) return;
    compare_ref_fast(p, 1e-5);
    fedc_program_destroy(p);
}

static void test_ref_vs_fast_grad(void) {
    fedc_program *p = build_convnet();
    if (!p) return;
    fedc_program *g = NULL;
    const char *wrt[] = {"x", "w", "w2", "w2t", "b"};
    CHECK_OK(fedc_grad(p, "loss", wrt, 5, &g));
    fedc_program_destroy(p);
    if (!g) return;
    CHECK_EQ_INT(fedc_program_num_outputs(g), 7 + 5);
    compare_ref_fast(g, 1e-5);
    fedc_program_destroy(g);
}

/* The convnet's forward values by hand, for the fast kernels. */
/* conv2d -> add(bias) [-> relu] chains run as one conv2d with an epilogue when
 * nothing else reads the links (executor.c, plan_epilogues): the results must be
 * the unfused ops' bits. `keep` makes every link an output, which rules fusion
 * out. Chain 1 is whole; chain 2's add has a second reader (as in a training
 * step, where relu's derivative reads it), so only conv + add fuse; chain 3 ends
 * in a max-pool (as the evaluation's second layer does), which fuses too. */
enum { EN = 3, EH = 9, EC = 5, EO = 7 };

static fedc_program *epilogue_program(bool keep) {
    fedc_program *p = newp();
    if (!p) return NULL;
    fedc_value x = fedc_input(p, "x", TY(FEDC_F32, EN, EH, EH, EC));
    fedc_value w = fedc_input(p, "w", TY(FEDC_F32, 3, 3, EC, EO));
    fedc_value b = fedc_input(p, "b", TY(FEDC_F32, EO));
    fedc_value c1 = fedc_conv2d(p, x, w, 1, 1, FEDC_PAD_VALID), a1 = fedc_add(p, c1, b), r1 = fedc_relu(p, a1);
    fedc_value c2 = fedc_conv2d(p, x, w, 2, 2, FEDC_PAD_SAME), a2 = fedc_add(p, c2, b), r2 = fedc_relu(p, a2);
    CHECK_OK(fedc_program_output(p, "r1", r1));
    CHECK_OK(fedc_program_output(p, "r2", r2));
    CHECK_OK(fedc_program_output(p, "m2", fedc_mul(p, a2, a2)));
    fedc_value c3 = fedc_conv2d(p, x, w, 1, 1, FEDC_PAD_SAME), a3 = fedc_add(p, c3, b), r3 = fedc_relu(p, a3);
    CHECK_OK(fedc_program_output(p, "p3", fedc_max_pool2d(p, r3, 2, 2, 2, 2, FEDC_PAD_VALID)));
    if (keep) {
        CHECK_OK(fedc_program_output(p, "c1", c1));
        CHECK_OK(fedc_program_output(p, "a1", a1));
        CHECK_OK(fedc_program_output(p, "c2", c2));
        CHECK_OK(fedc_program_output(p, "r3", r3));
    }
    return p;
}

/* Runs program p (taken) once, with the reference or the fast kernels and inputs
 * names[i] bound to data[i]; the executor, or NULL after a failed check. */
static fedc_executor *run_once(fedc_program *p, bool reference, int n, const char *const *names,
                               const float *const *data) {
    fedc_executor *ex = NULL;
    fedc_exec_options o = {.reference_kernels = reference};
    if (p) CHECK_OK(fedc_executor_create(&ex, p, &o));
    fedc_program_destroy(p);
    if (!ex) return NULL;
    for (int i = 0; i < n; i++) CHECK_OK(fedc_executor_bind(ex, names[i], data[i]));
    CHECK_OK(fedc_executor_run(ex));
    return ex;
}

static fedc_executor *epilogue_run(bool keep, bool reference, const float *x, const float *w, const float *b) {
    return run_once(epilogue_program(keep), reference, 3, (const char *const[]){"x", "w", "b"},
                    (const float *const[]){x, w, b});
}

static void test_conv_epilogue(void) {
    static float x[EN * EH * EH * EC], w[9 * EC * EO], b[EO];
    rng r = {77};
    fill_f32(&r, x, EN * EH * EH * EC, -1, 1);
    fill_f32(&r, w, 9 * EC * EO, -1, 1);
    fill_f32(&r, b, EO, -1, 1);
    x[17] = NAN; /* relu's and the add's NaN handling must match too */
    fedc_executor *fused = epilogue_run(false, false, x, w, b), *plain = epilogue_run(true, false, x, w, b);
    fedc_executor *ref = epilogue_run(false, true, x, w, b);
    if (fused && plain && ref) {
        const char *names[4] = {"r1", "r2", "m2", "p3"};
        int64_t counts[4] = {EN * 7 * 7 * EO, EN * 5 * 5 * EO, EN * 5 * 5 * EO, EN * 4 * 4 * EO};
        for (int i = 0; i < 4; i++) {
            const void *a = checked_output(fused, names[i], FEDC_F32, counts[i]);
            const void *c = checked_output(plain, names[i], FEDC_F32, counts[i]);
            CHECK(a && c && memcmp(a, c, (size_t)counts[i] * sizeof(float)) == 0);
        }
        /* the fused links took no memory: less than the reference kernels' plan */
        CHECK(fedc_executor_unplanned_bytes(fused) < fedc_executor_unplanned_bytes(ref));
    }
    fedc_executor_destroy(fused);
    fedc_executor_destroy(plain);
    fedc_executor_destroy(ref);
}

/* select(gt(y, 0), ct, 0) and sub(w, mul(lr, g)) run as one pass each when only
 * the outer op reads the inner one (executor.c, plan_pairs), and an SGD step on a
 * weight gradient sub(v, mul(lr, matmul(a^T, d))) as one product: the unfused
 * ops' bits. y and g are computed values whose last reader is the inner op, with
 * a temporary made between the inner and the outer op: had the fusion not kept
 * them alive until the outer op, the temporary would take their memory. `keep`
 * makes the inner values outputs, which rules fusion out. */
enum { PN = 5000, PB = 6, PI = 40, PO = 30 };

static fedc_program *pairs_program(bool keep) {
    fedc_program *p = newp();
    if (!p) return NULL;
    fedc_value x = fedc_input(p, "x", TY(FEDC_F32, PN)), ct = fedc_input(p, "ct", TY(FEDC_F32, PN));
    fedc_value w = fedc_input(p, "w", TY(FEDC_F32, PN)), g = fedc_input(p, "g", TY(FEDC_F32, PN));
    fedc_value y = fedc_tanh(p, x), c = fedc_gt(p, y, fedc_scalar(p, FEDC_F32, 0));
    fedc_value t = fedc_exp(p, ct); /* placed while c is pending */
    CHECK_OK(fedc_program_output(p, "t", fedc_add(p, t, t)));
    CHECK_OK(fedc_program_output(p, "dx", fedc_select(p, c, ct, fedc_scalar(p, FEDC_F32, 0))));
    fedc_value g2 = fedc_tanh(p, g), m = fedc_mul(p, fedc_scalar(p, FEDC_F32, 0.1), g2);
    fedc_value u = fedc_exp(p, w);
    CHECK_OK(fedc_program_output(p, "u", fedc_add(p, u, u)));
    CHECK_OK(fedc_program_output(p, "w2", fedc_sub(p, w, m)));
    fedc_value a = fedc_tanh(p, fedc_input(p, "a", TY(FEDC_F32, PB, PI)));
    fedc_value d = fedc_tanh(p, fedc_input(p, "d", TY(FEDC_F32, PB, PO)));
    fedc_value grad = fedc_matmul(p, a, d, true, false), step = fedc_mul(p, grad, fedc_scalar(p, FEDC_F32, 0.05));
    fedc_value e = fedc_exp(p, d); /* placed while the step is pending */
    CHECK_OK(fedc_program_output(p, "e", fedc_add(p, e, e)));
    CHECK_OK(fedc_program_output(p, "v2", fedc_sub(p, fedc_input(p, "v", TY(FEDC_F32, PI, PO)), step)));
    if (keep) {
        CHECK_OK(fedc_program_output(p, "c", c));
        CHECK_OK(fedc_program_output(p, "m", m));
        CHECK_OK(fedc_program_output(p, "grad", grad));
    }
    return p;
}

static fedc_executor *pairs_run(bool keep, bool reference, const float *const in[4]) {
    /* a, d, v: the first elements of x, ct, w */
    return run_once(pairs_program(keep), reference, 7, (const char *const[]){"x", "ct", "w", "g", "a", "d", "v"},
                    (const float *const[]){in[0], in[1], in[2], in[3], in[0], in[1], in[2]});
}

static void test_pairs(void) {
    static float x[PN], ct[PN], w[PN], g[PN];
    rng r = {78};
    fill_f32(&r, x, PN, -1, 1), fill_f32(&r, ct, PN, -1, 1), fill_f32(&r, w, PN, -1, 1), fill_f32(&r, g, PN, -3, 3);
    x[3] = NAN, x[4] = -0.0f, x[5] = 0.0f;
    const float *const in[4] = {x, ct, w, g};
    fedc_executor *fused = pairs_run(false, false, in), *plain = pairs_run(true, false, in);
    fedc_executor *ref = pairs_run(false, true, in);
    if (fused && plain && ref) {
        const char *names[6] = {"t", "dx", "u", "w2", "e", "v2"};
        const int64_t counts[6] = {PN, PN, PN, PN, PB * PO, PI * PO};
        for (int i = 0; i < 6; i++) {
            const void *a = checked_output(fused, names[i], FEDC_F32, counts[i]);
            const void *c = checked_output(plain, names[i], FEDC_F32, counts[i]);
            CHECK_MSG(a && c && memcmp(a, c, (size_t)counts[i] * sizeof(float)) == 0, "%s: fused and unfused differ",
                      names[i]);
        }
        /* the inner values took no memory: less than the reference kernels' plan */
        CHECK(fedc_executor_unplanned_bytes(fused) < fedc_executor_unplanned_bytes(ref));
    }
    fedc_executor_destroy(fused);
    fedc_executor_destroy(plain);
    fedc_executor_destroy(ref);
}

static void test_convnet_by_hand(void) {
    fedc_program *p = build_convnet();
    if (!p) return;
    fedc_executor *ex = NULL;
    CHECK_OK(fedc_executor_create(&ex, p, NULL));
    fedc_program_destroy(p);
    if (!ex) return;
    convnet_data d;
    convnet_data_make(&d, 99);
    convnet_bind(ex, &d);
    CHECK_OK(fedc_executor_run(ex));
    /* SAME, stride 2 on 9: 5 outputs, padding (5-1)*2+3-9 = 2 split 1/1 */
    static double conv[CN][5][5][CO], pool[CN][4][4][CO];
    for (int n = 0; n < CN; n++)
        for (int i = 0; i < 5; i++)
            for (int j = 0; j < 5; j++)
                for (int o = 0; o < CO; o++) {
                    double s = 0;
                    for (int ki = 0; ki < 3; ki++)
                        for (int kj = 0; kj < 3; kj++) {
                            int r = i * 2 - 1 + ki, c = j * 2 - 1 + kj;
                            if (r < 0 || r >= CH || c < 0 || c >= CW) continue;
                            for (int ch = 0; ch < CC; ch++)
                                s += (double)d.x[((n * CH + r) * CW + c) * CC + ch] *
                                     d.w[((ki * 3 + kj) * CC + ch) * CO + o];
                        }
                    conv[n][i][j][o] = s;
                }
    for (int n = 0; n < CN; n++)
        for (int i = 0; i < 4; i++)
            for (int j = 0; j < 4; j++)
                for (int o = 0; o < CO; o++) {
                    double m = 0; /* relu output is >= 0 */
                    for (int a = 0; a < 2; a++)
                        for (int b = 0; b < 2; b++) {
                            double v = conv[n][i + a][j + b][o];
                            if (v > m) m = v;
                        }
                    pool[n][i][j][o] = m;
                }
    double logits[CN][CK], loss = 0;
    for (int n = 0; n < CN; n++) {
        double mx = -1e300, sum = 0;
        for (int k = 0; k < CK; k++) {
            double s = d.b[k];
            for (int f = 0; f < 64; f++) s += (&pool[n][0][0][0])[f] * d.w2[f * CK + k];
            logits[n][k] = s;
            if (s > mx) mx = s;
        }
        for (int k = 0; k < CK; k++) sum += exp(logits[n][k] - mx);
        loss += (mx + log(sum) - logits[n][d.labels[n]]) / CN;
    }
    const float *cv = checked_output(ex, "conv", FEDC_F32, CN * 5 * 5 * CO);
    const float *pv = checked_output(ex, "pool", FEDC_F32, CN * 4 * 4 * CO);
    const float *lv = checked_output(ex, "logits", FEDC_F32, CN * CK);
    const float *sv = checked_output(ex, "loss", FEDC_F32, 1);
    if (cv && pv && lv && sv) {
        for (int i = 0; i < CN * 5 * 5 * CO; i++) CHECK_NEAR(cv[i], (&conv[0][0][0][0])[i], 1e-5);
        for (int i = 0; i < CN * 4 * 4 * CO; i++) CHECK_NEAR(pv[i], (&pool[0][0][0][0])[i], 1e-5);
        for (int i = 0; i < CN * CK; i++) CHECK_NEAR(lv[i], (&logits[0][0])[i], 1e-5);
        CHECK_NEAR(sv[0], loss, 1e-5);
    }
    fedc_executor_destroy(ex);
}

/* ------------------------------------------------------- no allocation -- */

static void test_no_allocation_during_run(void) {
    fedc_program *p = build_convnet();
    if (!p) return;
    fedc_executor *ex = NULL, *mlp = NULL;
    CHECK_OK(fedc_executor_create(&ex, p, NULL));
    fedc_program_destroy(p);
    p = build_mlp(FEDC_F32);
    if (p) CHECK_OK(fedc_executor_create(&mlp, p, NULL));
    fedc_program_destroy(p);
    if (!ex || !mlp) goto done;
    convnet_data d;
    convnet_data_make(&d, 5);
    convnet_bind(ex, &d);
    mlp_data md;
    mlp_data_make(&md, 5);
    double store[MB * MI + MI * MH + MH + MH * MO + MO];
    mlp_bind(mlp, &md, FEDC_F32, store);
    CHECK_OK(fedc_executor_run(ex)); /* a first run: lazily initialised libraries */
    CHECK_OK(fedc_executor_run(mlp));

    fedc__alloc_fail_after(0); /* reset the counter */
    for (int i = 0; i < 5; i++) {
        CHECK_OK(fedc_executor_run(ex));
        CHECK_OK(fedc_executor_run(mlp));
        const void *y;
        CHECK_OK(fedc_executor_output(ex, "loss", &y, NULL));
        CHECK_OK(fedc_executor_bind(mlp, "x", store));
    }
    uint64_t made = fedc__alloc_fail_after(0);
    CHECK_EQ_INT(made, 0);

    /* and with every allocation failing, running still works */
    fedc__alloc_fail_after(1);
    fedc_status st1 = fedc_executor_run(ex), st2 = fedc_executor_run(mlp);
    made = fedc__alloc_fail_after(0);
    CHECK_OK(st1);
    CHECK_OK(st2);
    CHECK_EQ_INT(made, 0);
done:
    fedc_executor_destroy(ex);
    fedc_executor_destroy(mlp);
}

/* ---------------------------------------------------------- determinism -- */

static void test_determinism(void) {
    fedc_program *p = build_convnet();
    if (!p) return;
    fedc_executor *a = NULL, *b = NULL;
    CHECK_OK(fedc_executor_create(&a, p, NULL));
    CHECK_OK(fedc_executor_create(&b, p, NULL));
    fedc_program_destroy(p);
    if (!a || !b) goto done;
    convnet_data d;
    convnet_data_make(&d, 31);
    convnet_bind(a, &d);
    convnet_bind(b, &d);
    static const char *names[] = {"conv", "pool", "logits", "logits_t", "loss", "valid", "mean"};
    static unsigned char first[7][4096];
    size_t sizes[7] = {0};
    CHECK_OK(fedc_executor_run(a));
    for (int i = 0; i < 7; i++) {
        const void *y = NULL;
        fedc_type t;
        CHECK_OK(fedc_executor_output(a, names[i], &y, &t));
        sizes[i] = y ? fedc_type_bytes(&t) : 0;
        CHECK(sizes[i] <= sizeof first[i]);
        if (y && sizes[i] <= sizeof first[i]) memcpy(first[i], y, sizes[i]);
    }
    CHECK_OK(fedc_executor_run(a));
    CHECK_OK(fedc_executor_run(b));
    for (int i = 0; i < 7; i++) {
        const void *ya = NULL, *yb = NULL;
        CHECK_OK(fedc_executor_output(a, names[i], &ya, NULL));
        CHECK_OK(fedc_executor_output(b, names[i], &yb, NULL));
        if (!ya || !yb || sizes[i] > sizeof first[i]) continue;
        CHECK_MSG(memcmp(ya, first[i], sizes[i]) == 0, "output %s changed between runs", names[i]);
        CHECK_MSG(memcmp(yb, first[i], sizes[i]) == 0, "output %s differs between executors", names[i]);
    }
done:
    fedc_executor_destroy(a);
    fedc_executor_destroy(b);
}

/* --------------------------------------------------- outputs and copies -- */

static void test_outputs_inputs_constants(void) {
    fedc_program *p = newp();
    if (!p) return;
    const double cv[2] = {1.5, -2.5};
    fedc_value x = fedc_input(p, "x", TY(FEDC_F32, 3));
    fedc_value c = fedc_constant(p, TY(FEDC_F64, 2), cv);
    fedc_value y = fedc_mul(p, x, fedc_scalar(p, FEDC_F32, 2));
    CHECK_OK(fedc_program_output(p, "x", x));
    CHECK_OK(fedc_program_output(p, "c", c));
    CHECK_OK(fedc_program_output(p, "y", y));
    CHECK_OK(fedc_program_output(p, "y_again", y));
    fedc_executor *ex = NULL;
    CHECK_OK(fedc_executor_create(&ex, p, NULL));
    fedc_program_destroy(p);
    if (!ex) return;
    const float xv[3] = {1, -2, 0.25f};
    CHECK_OK(fedc_executor_bind(ex, "x", xv));
    CHECK_OK(fedc_executor_run(ex));
    const float *xo = checked_output(ex, "x", FEDC_F32, 3);
    const double *co = checked_output(ex, "c", FEDC_F64, 2);
    const float *yo = checked_output(ex, "y", FEDC_F32, 3);
    const float *ya = checked_output(ex, "y_again", FEDC_F32, 3);
    for (int i = 0; xo && i < 3; i++) CHECK(xo[i] == xv[i]);
    if (co) CHECK(co[0] == 1.5 && co[1] == -2.5);
    for (int i = 0; yo && ya && i < 3; i++) {
        CHECK(yo[i] == 2 * xv[i]);
        CHECK(ya[i] == yo[i]);
    }
    fedc_type t;
    const void *any;
    CHECK_OK(fedc_executor_output(ex, "c", &any, &t));
    CHECK_EQ_INT(t.dtype, FEDC_F64);
    CHECK_EQ_INT(t.rank, 1);
    CHECK_EQ_INT(t.dims[0], 2);
    fedc_executor_destroy(ex);

    /* a program that computes nothing */
    p = newp();
    if (!p) return;
    x = fedc_input(p, "x", TY(FEDC_I32, 2));
    CHECK_OK(fedc_program_output(p, "same", x));
    CHECK_OK(fedc_executor_create(&ex, p, NULL));
    fedc_program_destroy(p);
    if (!ex) return;
    CHECK_EQ_INT(fedc_executor_planned_bytes(ex), 0);
    const int32_t iv[2] = {7, 9};
    CHECK_OK(fedc_executor_bind(ex, "x", iv));
    CHECK_OK(fedc_executor_run(ex));
    const int32_t *io = checked_output(ex, "same", FEDC_I32, 2);
    if (io) CHECK(io[0] == 7 && io[1] == 9);
    fedc_executor_destroy(ex);
}

static void test_executor_owns_program(void) {
    fedc_program *p = build_mlp(FEDC_F32);
    if (!p) return;
    fedc_executor *ex = NULL;
    CHECK_OK(fedc_executor_create(&ex, p, NULL));
    /* spoil the program, then destroy it: the executor must not look at it */
    fedc_relu(p, fedc_program_find_input(p, "x"));
    fedc_program_destroy(p);
    if (!ex) return;
    mlp_data d;
    mlp_data_make(&d, 4242);
    double store[MB * MI + MI * MH + MH + MH * MO + MO];
    mlp_bind(ex, &d, FEDC_F32, store);
    CHECK_OK(fedc_executor_run(ex));
    double h[MB * MH], logits[MB * MO], loss;
    int32_t pred[MB];
    mlp_by_hand(&d, FEDC_F32, h, logits, &loss, pred);
    const float *lv = checked_output(ex, "logits", FEDC_F32, MB * MO);
    const float *sv = checked_output(ex, "loss", FEDC_F32, 1);
    for (int i = 0; lv && i < MB * MO; i++) CHECK_NEAR(lv[i], logits[i], 1e-5);
    if (sv) CHECK_NEAR(sv[0], loss, 1e-5);

    /* rebinding to other data changes the next run's results */
    mlp_data d2;
    mlp_data_make(&d2, 777);
    mlp_bind(ex, &d2, FEDC_F32, store);
    CHECK_OK(fedc_executor_run(ex));
    mlp_by_hand(&d2, FEDC_F32, h, logits, &loss, pred);
    lv = checked_output(ex, "logits", FEDC_F32, MB * MO);
    for (int i = 0; lv && i < MB * MO; i++) CHECK_NEAR(lv[i], logits[i], 1e-5);
    fedc_executor_destroy(ex);
    fedc_executor_destroy(NULL); /* safe */
}

int main(int argc, char **argv) {
    static const fedc_test tests[] = {
        {"mlp_f32", test_mlp_f32},
        {"mlp_f64", test_mlp_f64},
        {"mlp_reference", test_mlp_reference},
        {"conv_epilogue", test_conv_epilogue},
        {"pairs", test_pairs},
        {"ref_vs_fast", test_ref_vs_fast},
        {"ref_vs_fast_grad", test_ref_vs_fast_grad},
        {"convnet_by_hand", test_convnet_by_hand},
        {"no_allocation_during_run", test_no_allocation_during_run},
        {"determinism", test_determinism},
        {"outputs_inputs_constants", test_outputs_inputs_constants},
        {"executor_owns_program", test_executor_owns_program},
    };
    return fedc_test_main(argc, argv, tests, FEDC_COUNT_OF(tests));
}
