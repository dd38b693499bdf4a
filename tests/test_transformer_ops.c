/* The transformer layers' ops: gelu, layer_norm, causal_attention and their
 * backward ops. Gradients (first and, through the backward ops, second order)
 * and forward-mode products against central finite differences in f64; the
 * fused ops against their composite forms (ir/decompose.c, written with other
 * ops); the fast kernels against the reference ones in f32 on odd shapes; the
 * text format; and the type rules' errors. */
#include <stdlib.h>
#include <string.h>

#include "ad/composite.h"
#include "kernels/kernels.h"
#include "fedc/ad.h"
#include "fedc/exec.h"
#include "harness.h"

#define MAX_IN 3
#define EPS 1e-5

typedef fedc_value (*build_fn)(fedc_program *p, const fedc_value *x);

typedef struct op_case {
    const char *name;
    int nin;
    fedc_type in[MAX_IN];
    build_fn build;
} op_case;


#define T(...) fedc_type_make(FEDC_F64, FEDC_COUNT_OF(((int64_t[]){__VA_ARGS__})), (int64_t[]){__VA_ARGS__})

static fedc_value b_gelu(fedc_program *p, const fedc_value *x) { return fedc_gelu(p, x[0]); }
static fedc_value b_gelu_grad(fedc_program *p, const fedc_value *x) { return fedc_gelu_grad(p, x[0], x[1]); }
static fedc_value b_ln(fedc_program *p, const fedc_value *x) { return fedc_layer_norm(p, x[0], x[1], x[2], EPS); }
static fedc_value b_ln_grad(fedc_program *p, const fedc_value *x) { return fedc_layer_norm_grad(p, x[0], x[1], x[2], EPS); }
static fedc_value b_ln_pgrad(fedc_program *p, const fedc_value *x) { return fedc_layer_norm_param_grad(p, x[0], x[1], EPS); }
static fedc_value b_attn1(fedc_program *p, const fedc_value *x) { return fedc_causal_attention(p, x[0], 1); }
static fedc_value b_attn2(fedc_program *p, const fedc_value *x) { return fedc_causal_attention(p, x[0], 2); }
static fedc_value b_attn_grad(fedc_program *p, const fedc_value *x) { return fedc_causal_attention_grad(p, x[0], x[1], 2); }
/* attention after a layer norm and before a GELU: the ops composed, as in a block */
/* softmax cross-entropy with fixed labels: the loss (whose gradient is the
 * fused softmax_cross_entropy_grad) and that gradient op itself (second order). */
static fedc_value labels_for(fedc_program *p, fedc_value logits) {
    fedc_type t = fedc_value_type(p, logits);
    t.rank--;
    t.dtype = FEDC_I32;
    int32_t l[8] = {0, 4, 2, 3, 1, 4, 0, 2};
    return fedc_constant(p, t, l);
}
static fedc_value b_xent(fedc_program *p, const fedc_value *x) {
    return fedc_softmax_cross_entropy(p, x[0], labels_for(p, x[0]), x[1]);
}
static fedc_value b_xent_grad(fedc_program *p, const fedc_value *x) {
    return fedc_softmax_cross_entropy_grad(p, x[0], labels_for(p, x[0]), x[1]);
}

static fedc_value b_block(fedc_program *p, const fedc_value *x) {
    return fedc_gelu(p, fedc_causal_attention(p, fedc_layer_norm(p, x[0], x[1], x[2], EPS), 2));
}

/* (a macro: fedc_type_make is not a constant initializer) */
#define CASE_LIST {                                                          \
    {"gelu", 1, {T(3, 5)}, b_gelu}, \
    {"gelu_grad", 2, {T(3, 5), T(3, 5)}, b_gelu_grad}, \
    {"layer_norm", 3, {T(4, 6), T(6), T(6)}, b_ln}, \
    {"layer_norm rank 3", 3, {T(2, 3, 5), T(5), T(5)}, b_ln}, \
    {"layer_norm_grad", 3, {T(3, 5), T(5), T(3, 5)}, b_ln_grad}, \
    {"layer_norm_param_grad", 2, {T(2, 2, 5), T(2, 2, 5)}, b_ln_pgrad}, \
    {"causal_attention 1 head", 1, {T(1, 4, 9)}, b_attn1}, \
    {"causal_attention 2 heads", 1, {T(2, 5, 12)}, b_attn2}, \
    {"causal_attention_grad", 2, {T(2, 4, 12), T(2, 4, 4)}, b_attn_grad}, \
    {"block", 3, {T(2, 3, 12), T(12), T(12)}, b_block}, \
    {"softmax_cross_entropy weighted", 2, {T(3, 5), T(3)}, b_xent}, \
    {"softmax_cross_entropy_grad", 2, {T(3, 5), T(3)}, b_xent_grad}, \
    {"softmax_cross_entropy_grad rank 3", 2, {T(2, 2, 5), T(2, 2)}, b_xent_grad}, \
 \
}

static double run_loss(fedc_executor *ex) {
    const double *loss = NULL;
    CHECK_OK(fedc_executor_run(ex));
    CHECK_OK(fedc_executor_output(ex, "loss", (const void **)&loss, NULL));
    return loss ? *loss : NAN;
}

typedef struct bound {
    double *x[MAX_IN], *t[MAX_IN];
    char names[MAX_IN][16], tnames[MAX_IN][32];
    const char *wrt[MAX_IN];
} bound;

static void bound_init(const op_case *c, bound *b) {
    for (int i = 0; i < c->nin; i++) {
        int64_t n = fedc_type_count(&c->in[i]);
        b->x[i] = malloc((size_t)n * sizeof(double));
        b->t[i] = malloc((size_t)n * sizeof(double));
        for (int64_t j = 0; j < n; j++) b->x[i][j] = fedc_test_uniform(-2, 2), b->t[i][j] = fedc_test_uniform(-1, 1);
        snprintf(b->names[i], sizeof b->names[i], "x%d", i);
        snprintf(b->tnames[i], sizeof b->tnames[i], "tangent_x%d", i);
        b->wrt[i] = b->names[i];
    }
}

static void bound_free(const op_case *c, bound *b) {
    for (int i = 0; i < c->nin; i++) free(b->x[i]), free(b->t[i]);
}

/* Every element of every gradient against central differences. */
static void check_grad(const op_case *c, fedc_program *p, bound *b) {
    fedc_program *g = NULL;
    fedc_executor *fwd = NULL, *bwd = NULL;
    CHECK_MSG(fedc_grad(p, "loss", b->wrt, c->nin, &g) == FEDC_OK, "%s: grad: %s", c->name, fedc_errmsg());
    if (!g) return;
    CHECK_OK(fedc_executor_create(&fwd, p, NULL));
    CHECK_OK(fedc_executor_create(&bwd, g, NULL));
    for (int i = 0; fwd && bwd && i < c->nin; i++) {
        CHECK_OK(fedc_executor_bind(fwd, b->names[i], b->x[i]));
        CHECK_OK(fedc_executor_bind(bwd, b->names[i], b->x[i]));
    }
    if (fwd && bwd) CHECK_OK(fedc_executor_run(bwd));
    for (int i = 0; fwd && bwd && i < c->nin; i++) {
        char gname[24];
        snprintf(gname, sizeof gname, "grad_x%d", i);
        const double *grad;
        CHECK_OK(fedc_executor_output(bwd, gname, (const void **)&grad, NULL));
        for (int64_t j = 0; j < fedc_type_count(&c->in[i]); j++) {
            double keep = b->x[i][j], h = 1e-6;
            b->x[i][j] = keep + h;
            double up = run_loss(fwd);
            b->x[i][j] = keep - h;
            double down = run_loss(fwd);
            b->x[i][j] = keep;
            double fd = (up - down) / (2 * h);
            CHECK_MSG(fabs(grad[j] - fd) <= 1e-6 * (1 + fabs(fd)), "%s: d loss / d x%d[%lld]: AD %.10g, FD %.10g",
                      c->name, i, (long long)j, grad[j], fd);
        }
    }
    fedc_executor_destroy(fwd);
    fedc_executor_destroy(bwd);
    fedc_program_destroy(g);
}

/* The jvp in a random direction against the central difference along it. */
static void check_jvp(const op_case *c, fedc_program *p, bound *b) {
    fedc_program *j = NULL;
    fedc_executor *fwd = NULL, *jex = NULL;
    CHECK_MSG(fedc_jvp(p, b->wrt, c->nin, &j) == FEDC_OK, "%s: jvp: %s", c->name, fedc_errmsg());
    if (!j) return;
    CHECK_OK(fedc_executor_create(&fwd, p, NULL));
    CHECK_OK(fedc_executor_create(&jex, j, NULL));
    if (!fwd || !jex) goto done;
    double *moved[MAX_IN];
    for (int i = 0; i < c->nin; i++) {
        moved[i] = malloc((size_t)fedc_type_count(&c->in[i]) * sizeof(double));
        CHECK_OK(fedc_executor_bind(fwd, b->names[i], moved[i]));
        CHECK_OK(fedc_executor_bind(jex, b->names[i], b->x[i]));
        CHECK_OK(fedc_executor_bind(jex, b->tnames[i], b->t[i]));
    }
    double at[2], h = 1e-6;
    for (int s = 0; s < 2; s++) {
        for (int i = 0; i < c->nin; i++)
            for (int64_t e = 0; e < fedc_type_count(&c->in[i]); e++) moved[i][e] = b->x[i][e] + (s ? -h : h) * b->t[i][e];
        at[s] = run_loss(fwd);
    }
    const double *tangent = NULL;
    CHECK_OK(fedc_executor_run(jex));
    CHECK_OK(fedc_executor_output(jex, "tangent_loss", (const void **)&tangent, NULL));
    double fd = (at[0] - at[1]) / (2 * h);
    CHECK_MSG(tangent && fabs(*tangent - fd) <= 1e-6 * (1 + fabs(fd)), "%s: jvp %.10g, FD %.10g", c->name,
              tangent ? *tangent : NAN, fd);
    for (int i = 0; i < c->nin; i++) free(moved[i]);
done:
    fedc_executor_destroy(fwd);
    fedc_executor_destroy(jex);
    fedc_program_destroy(j);
}

static void test_gradients_and_jvps(void) {
    const op_case CASES[] = CASE_LIST;
    for (int k = 0; k < FEDC_COUNT_OF(CASES); k++) {
        const op_case *c = &CASES[k];
        fedc_program *p = fedc_test_loss_program(c->in, c->nin, c->build, NULL);
        CHECK_MSG(p && !fedc_program_status(p), "%s: build: %s", c->name, fedc_errmsg());
        if (!p || fedc_program_status(p)) {
            fedc_program_destroy(p);
            continue;
        }
        bound b;
        bound_init(c, &b);
        check_grad(c, p, &b);
        check_jvp(c, p, &b);
        bound_free(c, &b);
        fedc_program_destroy(p);
    }
}

/* ----------------------------------------------- fused against composite -- */

/* Runs the fused op (both kernel tables) and its composite form on the same
 * f64 inputs. */
static void test_fused_matches_composite(void) {
    const op_case CASES[] = CASE_LIST;
    for (int k = 0; k < FEDC_COUNT_OF(CASES); k++) {
        const op_case *c = &CASES[k];
        /* the block has no single fused op; the loss cases' labels are constants, not case inputs */
        if (!strcmp(c->name, "block") || !strncmp(c->name, "softmax", 7)) continue;
        fedc_program *p;
        CHECK_OK(fedc_program_create(&p));
        fedc_value x[MAX_IN];
        bound b;
        bound_init(c, &b);
        for (int i = 0; i < c->nin; i++) x[i] = fedc_input(p, b.names[i], c->in[i]);
        fedc_value fused = c->build(p, x);
        fedc_value comp = fedc__composite(p, &p->nodes[fused], x);
        CHECK_OK(fedc_program_output(p, "fused", fused));
        CHECK_OK(fedc_program_output(p, "composite", comp));
        for (int ref = 0; ref < 2; ref++) {
            fedc_executor *ex = NULL;
            fedc_exec_options o = {0};
            o.reference_kernels = ref;
            CHECK_OK(fedc_executor_create(&ex, p, &o));
            for (int i = 0; ex && i < c->nin; i++) CHECK_OK(fedc_executor_bind(ex, b.names[i], b.x[i]));
            const double *a = NULL, *e = NULL;
            if (ex) CHECK_OK(fedc_executor_run(ex));
            if (ex) CHECK_OK(fedc_executor_output(ex, "fused", (const void **)&a, NULL));
            if (ex) CHECK_OK(fedc_executor_output(ex, "composite", (const void **)&e, NULL));
            fedc_type yt = fedc_value_type(p, fused);
            for (int64_t j = 0; a && e && j < fedc_type_count(&yt); j++)
                CHECK_MSG(fabs(a[j] - e[j]) <= 1e-11 * (1 + fabs(e[j])), "%s (%s kernels) [%lld]: fused %.15g, composite %.15g",
                          c->name, ref ? "ref" : "fast", (long long)j, a[j], e[j]);
            fedc_executor_destroy(ex);
        }
        bound_free(c, &b);
        fedc_program_destroy(p);
    }
}

/* ------------------------------------------------- fast against reference -- */

static void compare_f32(const char *what, const float *fast, const float *ref, int64_t n, double tol) {
    int bad = 0;
    for (int64_t i = 0; i < n && bad < 5; i++) {
        double err = fabs((double)fast[i] - (double)ref[i]);
        if (err > tol * (1 + fabs((double)ref[i]))) {
            bad++;
            CHECK_MSG(0, "%s[%lld]: fast %.9g, ref %.9g", what, (long long)i, fast[i], ref[i]);
        }
    }
}

static float *random_f32(int64_t n, double lo, double hi) {
    float *x = malloc((size_t)(n ? n : 1) * sizeof *x);
    for (int64_t i = 0; i < n; i++) x[i] = (float)fedc_test_uniform(lo, hi);
    return x;
}

static void test_fast_gelu_and_layer_norm(void) {
    const fedc__kernels *f = &fedc__kernels_fast, *r = &fedc__kernels_ref;
    int64_t n = 1001, rows = 9, cols = 67;
    float *x = random_f32(n, -12, 12), *dy = random_f32(n, -1, 1), *a = random_f32(n, 0, 0), *e = random_f32(n, 0, 0);
    CHECK_OK(f->gelu(FEDC_F32, n, x, a));
    CHECK_OK(r->gelu(FEDC_F32, n, x, e));
    compare_f32("gelu", a, e, n, 2e-6);
    CHECK_OK(f->gelu_grad(FEDC_F32, n, x, dy, a));
    CHECK_OK(r->gelu_grad(FEDC_F32, n, x, dy, e));
    compare_f32("gelu_grad", a, e, n, 2e-6);
    float *g = random_f32(cols, 0.5, 1.5), *bt = random_f32(cols, -1, 1);
    for (int64_t i = 0; i < rows * cols; i++) x[i] = x[i] * 10 + 30; /* a large mean: the two-pass variance matters */
    CHECK_OK(f->layer_norm(FEDC_F32, rows, cols, x, g, bt, 1e-5, a));
    CHECK_OK(r->layer_norm(FEDC_F32, rows, cols, x, g, bt, 1e-5, e));
    compare_f32("layer_norm", a, e, rows * cols, 1e-5);
    CHECK_OK(f->layer_norm_grad(FEDC_F32, rows, cols, x, g, dy, 1e-5, a));
    CHECK_OK(r->layer_norm_grad(FEDC_F32, rows, cols, x, g, dy, 1e-5, e));
    compare_f32("layer_norm_grad", a, e, rows * cols, 1e-4);
    CHECK_OK(f->layer_norm_param_grad(FEDC_F32, rows, cols, x, dy, 1e-5, a));
    CHECK_OK(r->layer_norm_param_grad(FEDC_F32, rows, cols, x, dy, 1e-5, e));
    compare_f32("layer_norm_param_grad", a, e, 2 * cols, 1e-5);
    free(x), free(dy), free(a), free(e), free(g), free(bt);
}

/* Fused f32 loss and gradient against the reference (double, libm exp, rounded
 * once) on odd shapes: a vocabulary that is not a multiple of the 8 lanes, one
 * class, and logits far apart (the max shift matters). */
static void test_fast_softmax_xent(void) {
    const fedc__kernels *f = &fedc__kernels_fast, *r = &fedc__kernels_ref;
    const int64_t shapes[][2] = {{7, 10007}, {5, 3}, {3, 1}, {4, 64}};
    for (int s = 0; s < FEDC_COUNT_OF(shapes); s++) {
        int64_t rows = shapes[s][0], classes = shapes[s][1], n = rows * classes;
        float *z = random_f32(n, -30, 30), *w = random_f32(rows, -2, 2), *a = random_f32(n, 0, 0), *e = random_f32(n, 0, 0);
        int32_t labels[8];
        for (int64_t i = 0; i < rows; i++) labels[i] = (int32_t)((i * 7919) % classes);
        CHECK_OK(f->softmax_xent(FEDC_F32, rows, classes, z, labels, w, a));
        CHECK_OK(r->softmax_xent(FEDC_F32, rows, classes, z, labels, w, e));
        compare_f32("softmax_xent", a, e, rows, 2e-6);
        CHECK_OK(f->softmax_xent(FEDC_F32, rows, classes, z, labels, NULL, a));
        CHECK_OK(r->softmax_xent(FEDC_F32, rows, classes, z, labels, NULL, e));
        compare_f32("softmax_xent unweighted", a, e, rows, 2e-6);
        CHECK_OK(f->softmax_xent_grad(FEDC_F32, rows, classes, z, labels, w, a));
        CHECK_OK(r->softmax_xent_grad(FEDC_F32, rows, classes, z, labels, w, e));
        compare_f32("softmax_xent_grad", a, e, n, 1e-6);
        double total = 0; /* each row of the gradient sums to 0 (softmax sums to 1) */
        for (int64_t c = 0; c < classes; c++) total += a[c];
        CHECK_MSG(fabs(total) < 1e-5, "row 0 of the gradient sums to %g", total);
        labels[rows - 1] = (int32_t)classes;
        CHECK_ERR(f->softmax_xent_grad(FEDC_F32, rows, classes, z, labels, w, a), FEDC_ERANGE, "outside [0,");
        CHECK_ERR(f->softmax_xent(FEDC_F32, rows, classes, z, labels, w, a), FEDC_ERANGE, "outside [0,");
        free(z), free(w), free(a), free(e);
    }
}

/* The embedding gradient: repeated rows summed, untouched rows zero, a bad index
 * reported as the reference does. */
static void test_fast_scatter_add(void) {
    const fedc__kernels *f = &fedc__kernels_fast, *r = &fedc__kernels_ref;
    int64_t rows = 37, width = 13, nidx = 101;
    int32_t idx[101];
    for (int64_t i = 0; i < nidx; i++) idx[i] = (int32_t)((i * i * 7 + 3) % 29); /* repeats; rows 29..36 never hit */
    float *u = random_f32(nidx * width, -1, 1), *a = random_f32(rows * width, 5, 5), *e = random_f32(rows * width, 0, 0);
    CHECK_OK(f->scatter_add(FEDC_F32, rows, width, nidx, idx, u, a));
    CHECK_OK(r->scatter_add(FEDC_F32, rows, width, nidx, idx, u, e));
    compare_f32("scatter_add", a, e, rows * width, 1e-6);
    CHECK(a[36 * width] == 0.0f);
    idx[50] = 37;
    CHECK_ERR(f->scatter_add(FEDC_F32, rows, width, nidx, idx, u, a), FEDC_ERANGE, "index 37 at position 50");
    free(u), free(a), free(e);
}

static void test_fast_attention(void) {
    const fedc__kernels *f = &fedc__kernels_fast, *r = &fedc__kernels_ref;
    /* seq 37 and 70: blocks of query rows (32) with a short last one */
    const fedc__attn_geom shapes[] = {{2, 37, 3, 13}, {1, 1, 1, 1}, {3, 8, 4, 16}, {1, 70, 2, 8}, {1, 64, 1, 4}};
    for (int s = 0; s < FEDC_COUNT_OF(shapes); s++) {
        const fedc__attn_geom *g = &shapes[s];
        int64_t nq = g->batch * g->seq * 3 * g->heads * g->head_dim, ny = nq / 3;
        float *qkv = random_f32(nq, -2, 2), *dy = random_f32(ny, -1, 1);
        float *ya = random_f32(ny, 0, 0), *ye = random_f32(ny, 0, 0), *da = random_f32(nq, 0, 0), *de = random_f32(nq, 0, 0);
        size_t sf = f->attention_scratch(FEDC_F32, g), sr = r->attention_scratch(FEDC_F32, g);
        void *scratch = malloc(sf > sr ? sf : sr);
        CHECK_OK(f->causal_attention(FEDC_F32, g, qkv, ya, scratch));
        CHECK_OK(r->causal_attention(FEDC_F32, g, qkv, ye, scratch));
        compare_f32("causal_attention", ya, ye, ny, 1e-5);
        CHECK_OK(f->causal_attention_grad(FEDC_F32, g, qkv, dy, da, scratch));
        CHECK_OK(r->causal_attention_grad(FEDC_F32, g, qkv, dy, de, scratch));
        compare_f32("causal_attention_grad", da, de, nq, 1e-4);
        free(qkv), free(dy), free(ya), free(ye), free(da), free(de), free(scratch);
    }
}

/* ------------------------------------------------- text, type rules -- */

static void test_text_round_trip(void) {
    fedc_program *p, *q = NULL;
    CHECK_OK(fedc_program_create(&p));
    fedc_value x = fedc_input(p, "x", fedc_type_make(FEDC_F32, 3, (int64_t[]){2, 4, 12}));
    fedc_value g = fedc_input(p, "g", fedc_type_make(FEDC_F32, 1, (int64_t[]){12}));
    fedc_value h = fedc_layer_norm(p, x, g, g, 1e-5);
    fedc_value y = fedc_gelu(p, fedc_causal_attention(p, h, 2));
    fedc_program_output(p, "y", y);
    fedc_program_output(p, "d", fedc_causal_attention_grad(p, h, y, 2));
    fedc_program_output(p, "e", fedc_layer_norm_param_grad(p, x, x, 0.25));
    CHECK_OK(fedc_program_status(p));
    char *a = NULL, *b = NULL;
    CHECK_OK(fedc_program_to_string(p, &a));
    CHECK_OK(fedc_program_parse(a, &q));
    if (q) CHECK_OK(fedc_program_to_string(q, &b));
    CHECK(a && b && strcmp(a, b) == 0);
    CHECK(a && strstr(a, "causal_attention(") && strstr(a, "heads=2") && strstr(a, "eps=0.25"));
    fedc_free(a), fedc_free(b);
    fedc_program_destroy(p), fedc_program_destroy(q);
}

static void test_type_errors(void) {
    fedc_program *p;
    CHECK_OK(fedc_program_create(&p));
    fedc_value x = fedc_input(p, "x", fedc_type_make(FEDC_F32, 3, (int64_t[]){2, 4, 12}));
    fedc_value g = fedc_input(p, "g", fedc_type_make(FEDC_F32, 1, (int64_t[]){11}));
    CHECK(fedc_layer_norm(p, x, g, g, 1e-5) == FEDC_NONE);
    CHECK(strstr(fedc_errmsg(), "layer_norm") && strstr(fedc_errmsg(), "one value per feature"));
    fedc_program_destroy(p);
    CHECK_OK(fedc_program_create(&p));
    x = fedc_input(p, "x", fedc_type_make(FEDC_F32, 3, (int64_t[]){2, 4, 12}));
    CHECK(fedc_causal_attention(p, x, 5) == FEDC_NONE);
    CHECK(strstr(fedc_errmsg(), "3 * heads * head_dim"));
    fedc_program_destroy(p);
    CHECK_OK(fedc_program_create(&p));
    x = fedc_input(p, "x", fedc_type_make(FEDC_F32, 2, (int64_t[]){2, 4}));
    g = fedc_input(p, "g", fedc_type_make(FEDC_F32, 1, (int64_t[]){4}));
    CHECK(fedc_layer_norm(p, x, g, g, 0.0) == FEDC_NONE);
    CHECK(strstr(fedc_errmsg(), "eps must be > 0"));
    fedc_program_destroy(p);
    CHECK_OK(fedc_program_create(&p));
    x = fedc_input(p, "x", fedc_type_make(FEDC_F32, 2, (int64_t[]){4, 12}));
    CHECK(fedc_causal_attention(p, x, 1) == FEDC_NONE);
    CHECK(strstr(fedc_errmsg(), "rank 3"));
    fedc_program_destroy(p);
}

int main(int argc, char **argv) {
    fedc_test_seed(0x2545F4914F6CDD1Dull);
    static const fedc_test tests[] = {
        {"gradients_and_jvps", test_gradients_and_jvps},
        {"fused_matches_composite", test_fused_matches_composite},
        {"fast_gelu_and_layer_norm", test_fast_gelu_and_layer_norm},
        {"fast_attention", test_fast_attention},
        {"fast_softmax_xent", test_fast_softmax_xent},
        {"fast_scatter_add", test_fast_scatter_add},
        {"text_round_trip", test_text_round_trip},
        {"type_errors", test_type_errors},
    };
    return fedc_test_main(argc, argv, tests, FEDC_COUNT_OF(tests));
}
