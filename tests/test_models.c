/*
 * Tests of the models (include/fedc/nn.h, src/nn/models.c): FedJAX's parameter
 * counts and a documented parameter layout; options and their errors; Haiku's
 * initialisers (deterministic per seed, truncated normal with the stated stddev,
 * zero biases, the documented stream); the forward pass against computations done
 * here by hand (the logistic loss, the masked loss and accuracy of every model);
 * dropout on and off; gradients for every parameter and one SGD step lowering the
 * loss of every model; argument checks; and allocation failure with no leak.
 */
#include "core/internal.h"
#include "harness.h"

#include <string.h>

#include "fedc/ad.h"
#include "fedc/exec.h"
#include "fedc/nn.h"

#define MAX_POINTS 20000

typedef struct model_case {
    const char *name;
    fedc_model_options options;
    int64_t size;
    int nparams;
    const char *names; /* the parameter names, space-separated, in order */
} model_case;

/* FedJAX's counts: logistic 784*62+62; dense 784*200+200 + 200*200+200 + 200*62+62;
 * cnn 3*3*1*32+32 + 3*3*32*64+64 + 12*12*64*128+128 + 128*62+62 (VALID convs:
 * 28 -> 26 -> 24, pooled to 12); heart 13*2+2. */
static const model_case CASES[] = {
    {"logistic", {0}, 48670, 2, "dense1/w dense1/b"},
    {"dense", {0}, 209662, 6, "dense1/w dense1/b dense2/w dense2/b dense3/w dense3/b"},
    {"cnn", {0}, 1206590, 8, "conv1/w conv1/b conv2/w conv2/b dense1/w dense1/b dense2/w dense2/b"},
    {"cnn", {.num_classes = 10}, 1199882, 8, "conv1/w conv1/b conv2/w conv2/b dense1/w dense1/b dense2/w dense2/b"},
    {"heart", {0}, 28, 2, "dense1/w dense1/b"},
};
enum { NCASES = FEDC_COUNT_OF(CASES) };

static fedc_model *create(const model_case *c) {
    fedc_model *m = NULL;
    CHECK_OK(fedc_model_create(&m, c->name, &c->options));
    return m;
}

/* ------------------------------------------------------------ the layout -- */

static void test_counts_and_names(void) {
    for (int k = 0; k < NCASES; k++) {
        fedc_model *m = create(&CASES[k]);
        if (!m) continue;
        CHECK_EQ_INT(fedc_model_size(m), CASES[k].size);
        CHECK_EQ_INT(fedc_model_num_params(m), CASES[k].nparams);
        CHECK(strcmp(fedc_model_name(m), CASES[k].name) == 0);
        char names[256] = "";
        for (int i = 0; i < fedc_model_num_params(m); i++) {
            if (i) strcat(names, " ");
            strcat(names, fedc_model_param_name(m, i));
        }
        CHECK_MSG(strcmp(names, CASES[k].names) == 0, "%s: names \"%s\"", CASES[k].name, names);
        fedc_model_destroy(m);
    }
}

static void test_layout_contiguous(void) {
    for (int k = 0; k < NCASES; k++) {
        fedc_model *m = create(&CASES[k]);
        if (!m) continue;
        int64_t at = 0;
        for (int i = 0; i < fedc_model_num_params(m); i++) {
            fedc_type t = fedc_model_param_type(m, i);
            CHECK_EQ_INT(fedc_model_param_offset(m, i), at);
            CHECK_EQ_INT(fedc_model_param_size(m, i), fedc_type_count(&t));
            CHECK(t.dtype == FEDC_F32 && t.placement == FEDC_LOCAL);
            at += fedc_model_param_size(m, i);
        }
        CHECK_EQ_INT(at, fedc_model_size(m));
        CHECK(fedc_model_param_name(m, -1) == NULL && fedc_model_param_name(m, fedc_model_num_params(m)) == NULL);
        fedc_model_destroy(m);
    }
}

static void test_shapes(void) {
    fedc_model *m = create(&CASES[2]);
    if (!m) return;
    static const int64_t want[8][4] = {{3, 3, 1, 32}, {32}, {3, 3, 32, 64}, {64}, {9216, 128}, {128}, {128, 62}, {62}};
    static const int ranks[8] = {4, 1, 4, 1, 2, 1, 2, 1};
    for (int i = 0; i < 8; i++) {
        fedc_type t = fedc_model_param_type(m, i);
        CHECK_EQ_INT(t.rank, ranks[i]);
        for (int d = 0; d < ranks[i]; d++) CHECK_EQ_INT(t.dims[d], want[i][d]);
    }
    fedc_type x = fedc_model_input_type(m, 7);
    CHECK(x.rank == 4 && x.dims[0] == 7 && x.dims[1] == 28 && x.dims[2] == 28 && x.dims[3] == 1);
    CHECK_EQ_INT(fedc_model_num_classes(m), 62);
    fedc_model_destroy(m);
}

/* ----------------------------------------------------------------- options -- */

static void test_options(void) {
    fedc_model *m = NULL;
    /* 32x32x3: 28 -> 14 after the convs and pool: 14*14*64 into dense1. */
    fedc_model_options rgb = {.input_height = 32, .input_width = 32, .input_channels = 3, .num_classes = 10};
    CHECK_OK(fedc_model_create(&m, "cnn", &rgb));
    CHECK_EQ_INT(fedc_model_size(m), 3 * 3 * 3 * 32 + 32 + 18496 + 14 * 14 * 64 * 128 + 128 + 1290);
    fedc_model_destroy(m);
    CHECK_OK(fedc_model_create(&m, "dense", &(fedc_model_options){.hidden = 50, .num_classes = 10}));
    CHECK_EQ_INT(fedc_model_size(m), 784 * 50 + 50 + 50 * 50 + 50 + 50 * 10 + 10);
    fedc_model_destroy(m);
    /* input_dim alone makes logistic take vectors. */
    CHECK_OK(fedc_model_create(&m, "logistic", &(fedc_model_options){.input_dim = 20, .num_classes = 3}));
    fedc_type t = fedc_model_input_type(m, 4);
    CHECK(t.rank == 2 && t.dims[0] == 4 && t.dims[1] == 20);
    CHECK_EQ_INT(fedc_model_size(m), 63);
    fedc_model_destroy(m);
    CHECK_OK(fedc_model_create(&m, "heart", NULL));
    t = fedc_model_input_type(m, 5);
    CHECK(t.rank == 2 && t.dims[1] == 13 && fedc_model_num_classes(m) == 2);
    fedc_model_destroy(m);
    /* Consistent input_dim and image shape: still images. */
    CHECK_OK(fedc_model_create(&m, "cnn", &(fedc_model_options){.input_dim = 784}));
    CHECK_EQ_INT(fedc_model_input_type(m, 1).rank, 4);
    fedc_model_destroy(m);
}

static void test_option_errors(void) {
    fedc_model *m = (fedc_model *)&m;
    CHECK_ERR(fedc_model_create(&m, "heart", &(fedc_model_options){.input_height = 4}), FEDC_EINVAL, "vectors");
    CHECK(m == NULL);
    CHECK_ERR(fedc_model_create(&m, "cnn", &(fedc_model_options){.input_height = 5}), FEDC_EINVAL, "6 x 6");
    CHECK_ERR(fedc_model_create(&m, "cnn", &(fedc_model_options){.hidden = 10}), FEDC_EINVAL, "hidden");
    CHECK_ERR(fedc_model_create(&m, "cnn", &(fedc_model_options){.input_dim = 100}), FEDC_EINVAL, "input_dim");
    CHECK_ERR(fedc_model_create(&m, "dense", &(fedc_model_options){.num_classes = -1}), FEDC_EINVAL, "num_classes");
    CHECK_ERR(fedc_model_create(&m, "logistic", &(fedc_model_options){.input_width = 1 << 17}), FEDC_EINVAL,
              "input_width");
    CHECK_ERR(fedc_model_create(NULL, "cnn", NULL), FEDC_EINVAL, "NULL");
}

static void test_unknown_name(void) {
    fedc_model *m = (fedc_model *)&m;
    CHECK_ERR(fedc_model_create(&m, "resnet", NULL), FEDC_EINVAL, "logistic, dense, cnn, heart");
    CHECK(m == NULL);
    CHECK_ERR(fedc_model_create(&m, "resnet", NULL), FEDC_EINVAL, "\"resnet\"");
    CHECK_ERR(fedc_model_create(&m, NULL, NULL), FEDC_EINVAL, "unknown");
    fedc_model_destroy(NULL);
}

/* -------------------------------------------------------------------- init -- */

static float *init_params(const fedc_model *m, uint64_t seed) {
    float *w = fedc_malloc((size_t)fedc_model_size(m) * sizeof *w);
    if (w) CHECK_OK(fedc_model_init(m, seed, w));
    return w;
}

static void test_init_deterministic(void) {
    for (int k = 0; k < NCASES; k++) {
        fedc_model *m = create(&CASES[k]);
        if (!m) continue;
        size_t bytes = (size_t)fedc_model_size(m) * sizeof(float);
        float *a = init_params(m, 42), *b = init_params(m, 42), *c = init_params(m, 43);
        CHECK(memcmp(a, b, bytes) == 0);
        CHECK(memcmp(a, c, bytes) != 0);
        fedc_free(a), fedc_free(b), fedc_free(c);
        fedc_model_destroy(m);
    }
}

/* Weights: mean 0, stddev 0.8796 / sqrt(fan_in) (Haiku scales the unit truncated
 * normal by 1/sqrt(fan_in) without correcting for truncation), |w| < 2/sqrt(fan_in).
 * Biases: zero. Tolerances are loose for the small tensors. */
static void check_tensor(const char *name, const fedc_type *t, const float *w, int64_t n) {
    if (t->rank == 1) {
        for (int64_t j = 0; j < n; j++) CHECK_MSG(w[j] == 0.0f, "%s[%lld] = %g", name, (long long)j, w[j]);
        return;
    }
    double fan_in = (double)n / (double)t->dims[t->rank - 1], bound = 2.0 / sqrt(fan_in);
    double sum = 0, sq = 0, max = 0;
    for (int64_t j = 0; j < n; j++) sum += w[j], sq += (double)w[j] * w[j], max = fmax(max, fabs(w[j]));
    double mean = sum / (double)n, sd = sqrt(sq / (double)n - mean * mean);
    double want = 0.87962566103423978 / sqrt(fan_in), tol = n >= 10000 ? 0.02 : 0.1;
    CHECK_MSG(fabs(sd / want - 1) < tol, "%s: stddev %g, expected %g", name, sd, want);
    CHECK_MSG(fabs(mean) < 4 * want / sqrt((double)n), "%s: mean %g", name, mean);
    CHECK_MSG(max < bound, "%s: max |w| %g is not below %g", name, max, bound);
}

static void test_init_distribution(void) {
    for (int k = 0; k < NCASES; k++) {
        fedc_model *m = create(&CASES[k]);
        if (!m) continue;
        float *w = init_params(m, 7);
        for (int i = 0; w && i < fedc_model_num_params(m); i++) {
            fedc_type t = fedc_model_param_type(m, i);
            check_tensor(fedc_model_param_name(m, i), &t, w + fedc_model_param_offset(m, i),
                         fedc_model_param_size(m, i));
        }
        fedc_free(w);
        fedc_model_destroy(m);
    }
}

/* The documented stream: parameter i draws from (seed, UINT32_MAX, i, "init"),
 * element j's attempt a taking normal number a * n + j, redrawn outside (-2, 2). */
static void test_init_stream(void) {
    fedc_model *m = create(&CASES[4]); /* heart: dense1/w is 13 x 2 */
    float *w = m ? init_params(m, 99) : NULL;
    if (!w) {
        fedc_model_destroy(m);
        return;
    }
    fedc_rng_stream s = fedc_rng_stream_make(99, UINT32_MAX, 0, 0x696E6974u);
    for (uint64_t j = 0; j < 26; j++) {
        double z = 0;
        for (uint64_t a = 0; a < 64; a++)
            if (fabs(z = fedc_rng_normal(s, a * 26 + j)) < 2) break;
        CHECK(w[j] != 0.0f);
        float want = (float)(z / sqrt(13.0));
        CHECK_MSG(w[j] == want, "dense1/w[%d] = %.9g, expected %.9g", (int)j, w[j], want);
    }
    fedc_free(w);
    fedc_model_destroy(m);
}

/* ------------------------------------------------------------------ apply -- */

enum { B = 5 };
static const float MASK[B] = {1, 1, 0, 1, 0};

/* A batch and its program: inputs "x", "y", "mask", the parameters (and "key"),
 * outputs "loss", "logits", "correct", "count". */
typedef struct batch {
    fedc_model *m;
    float *w, *x;
    int32_t y[B];
    int32_t key[4];
    fedc_program *p;
} batch;

static fedc_status build_program(const fedc_model *m, bool dropout, fedc_program **out) {
    fedc_program *p;
    fedc_status st = fedc_program_create(&p);
    if (st) return st;
    fedc_value params[8];
    for (int i = 0; i < fedc_model_num_params(m); i++)
        params[i] = fedc_input(p, fedc_model_param_name(m, i), fedc_model_param_type(m, i));
    fedc_value x = fedc_input(p, "x", fedc_model_input_type(m, B));
    fedc_value y = fedc_input(p, "y", fedc_type_make(FEDC_I32, 1, (int64_t[]){B}));
    fedc_value mask = fedc_input(p, "mask", fedc_type_make(FEDC_F32, 1, (int64_t[]){B}));
    fedc_value key = dropout ? fedc_input(p, "key", fedc_type_make(FEDC_I32, 1, (int64_t[]){4})) : FEDC_NONE;
    fedc_model_outputs o;
    if (!(st = fedc_model_apply(m, p, params, x, y, mask, key, &o)) && !(st = fedc_program_output(p, "loss", o.loss)) &&
        !(st = fedc_program_output(p, "logits", o.logits)) && !(st = fedc_program_output(p, "correct", o.correct)))
        st = fedc_program_output(p, "count", o.count);
    if (st) fedc_program_destroy(p), p = NULL;
    *out = p;
    return st;
}

static bool batch_make(batch *b, const model_case *c, bool dropout) {
    memset(b, 0, sizeof *b);
    if (!(b->m = create(c))) return false;
    b->w = init_params(b->m, 1);
    fedc_type xt = fedc_model_input_type(b->m, B);
    int64_t n = fedc_type_count(&xt);
    b->x = fedc_malloc((size_t)n * sizeof *b->x);
    fedc_rng_stream s = fedc_rng_stream_make(5, 0, 0, 0);
    for (int64_t i = 0; b->x && i < n; i++) b->x[i] = fedc_rng_uniform_f32(s, (uint64_t)i);
    for (int i = 0; i < B; i++) b->y[i] = (i * 7 + 3) % fedc_model_num_classes(b->m);
    memcpy(b->key, (int32_t[]){11, 22, 33, 44}, sizeof b->key);
    CHECK_OK(build_program(b->m, dropout, &b->p));
    return b->w && b->x && b->p;
}

static void batch_free(batch *b) {
    fedc_program_destroy(b->p);
    fedc_free(b->w), fedc_free(b->x);
    fedc_model_destroy(b->m);
}

static void bind_batch(fedc_executor *ex, const batch *b, const float *w) {
    for (int i = 0; i < fedc_model_num_params(b->m); i++)
        CHECK_OK(fedc_executor_bind(ex, fedc_model_param_name(b->m, i), w + fedc_model_param_offset(b->m, i)));
    CHECK_OK(fedc_executor_bind(ex, "x", b->x));
    CHECK_OK(fedc_executor_bind(ex, "y", b->y));
    CHECK_OK(fedc_executor_bind(ex, "mask", MASK));
    if (fedc_program_find_input(b->p, "key") != FEDC_NONE) CHECK_OK(fedc_executor_bind(ex, "key", b->key));
}

static const float *output(const fedc_executor *ex, const char *name, fedc_type *t) {
    const void *data = NULL;
    CHECK_OK(fedc_executor_output(ex, name, &data, t));
    return data;
}

/* The masked mean cross-entropy and the masked hits of `logits`, in double. */
static void masked_metrics(const float *logits, int classes, const int32_t *y, double *loss, double *correct) {
    double sum = 0, count = 0;
    *correct = 0;
    for (int i = 0; i < B; i++) {
        const float *l = logits + (int64_t)i * classes;
        double max = l[0], z = 0;
        int best = 0;
        for (int c = 1; c < classes; c++)
            if (l[c] > l[best]) best = c;
        max = l[best];
        for (int c = 0; c < classes; c++) z += exp(l[c] - max);
        sum += MASK[i] * (max + log(z) - l[y[i]]);
        *correct += MASK[i] * (best == y[i]);
        count += MASK[i];
    }
    *loss = sum / (count > 1 ? count : 1);
}

/* Runs b's program with params w; returns the loss and checks every output. */
static double run_checked(const batch *b, const float *w, float *logits_copy) {
    fedc_executor *ex = NULL;
    CHECK_OK(fedc_executor_create(&ex, b->p, NULL));
    if (!ex) return NAN;
    bind_batch(ex, b, w);
    CHECK_OK(fedc_executor_run(ex));
    fedc_type lt;
    const float *loss = output(ex, "loss", NULL), *logits = output(ex, "logits", &lt);
    const float *correct = output(ex, "correct", NULL), *count = output(ex, "count", NULL);
    int classes = fedc_model_num_classes(b->m);
    CHECK(lt.rank == 2 && lt.dims[0] == B && lt.dims[1] == classes);
    double want_loss, want_correct;
    masked_metrics(logits, classes, b->y, &want_loss, &want_correct);
    CHECK(isfinite(*loss));
    CHECK_NEAR(*loss, want_loss, 1e-5);
    CHECK_EQ_INT((int)*correct, (int)want_correct);
    CHECK(*count == 3.0f);
    double result = *loss;
    if (logits_copy) memcpy(logits_copy, logits, sizeof(float) * B * (size_t)classes);
    fedc_executor_destroy(ex);
    return result;
}

static void test_apply_every_model(void) {
    for (int k = 0; k < NCASES; k++) {
        batch b;
        if (batch_make(&b, &CASES[k], false)) run_checked(&b, b.w, NULL);
        batch_free(&b);
    }
}

/* The logistic model's loss, computed here from the parameters with plain loops. */
static void test_apply_logistic_by_hand(void) {
    for (int k = 0; k < NCASES; k += 4) { /* logistic (images) and heart (vectors) */
        batch b;
        if (!batch_make(&b, &CASES[k], false)) {
            batch_free(&b);
            continue;
        }
        int64_t in = fedc_model_param_type(b.m, 0).dims[0];
        int classes = fedc_model_num_classes(b.m);
        float logits[B * 62];
        for (int i = 0; i < B; i++)
            for (int c = 0; c < classes; c++) {
                double acc = b.w[fedc_model_param_offset(b.m, 1) + c];
                for (int64_t j = 0; j < in; j++) acc += (double)b.x[i * in + j] * b.w[j * classes + c];
                logits[i * classes + c] = (float)acc;
            }
        double want, hits;
        masked_metrics(logits, classes, b.y, &want, &hits);
        CHECK_NEAR(run_checked(&b, b.w, NULL), want, 1e-5);
        batch_free(&b);
    }
}

static void test_dropout(void) {
    batch b = {0}, e = {0};
    if (batch_make(&b, &CASES[2], true) && batch_make(&e, &CASES[2], false)) {
        static float l1[B * 62], l2[B * 62], l3[B * 62], l0[B * 62];
        int dropouts = 0;
        for (int v = 0; v < fedc_program_size(b.p); v++) dropouts += strcmp(fedc_value_op_name(b.p, v), "dropout") == 0;
        CHECK_EQ_INT(dropouts, 2);
        /* The documented rates and second key: key[3] + 0x9E3779B9 (as i32: -1640531527). */
        char *text = NULL;
        CHECK_OK(fedc_program_to_string(b.p, &text));
        CHECK(text && strstr(text, "{rate=0.25}") && strstr(text, "{rate=0.5}"));
        CHECK(text && strstr(text, "constant [0, 0, 0, -1640531527] : i32[4]"));
        fedc_free(text);
        run_checked(&b, b.w, l1);
        run_checked(&b, b.w, l2);
        CHECK(memcmp(l1, l2, sizeof l1) == 0); /* the same key: the same masks */
        b.key[3] += 1;
        run_checked(&b, b.w, l3);
        CHECK(memcmp(l1, l3, sizeof l1) != 0);
        run_checked(&e, e.w, l0); /* same seed, same data: no dropout */
        CHECK(memcmp(l0, l1, sizeof l0) != 0);
        for (int v = 0; v < fedc_program_size(e.p); v++) CHECK(strcmp(fedc_value_op_name(e.p, v), "dropout") != 0);
    }
    batch_free(&b), batch_free(&e);
}

/* --------------------------------------------------------- gradients, SGD -- */

/* b's program with a gradient for every parameter; one SGD step of `lr` lowers the loss. */
static void check_sgd_step(const batch *b, double lr) {
    const fedc_model *m = b->m;
    int n = fedc_model_num_params(m);
    const char *wrt[8];
    for (int i = 0; i < n; i++) wrt[i] = fedc_model_param_name(m, i);
    fedc_program *g = NULL;
    fedc_executor *ex = NULL;
    CHECK_OK(fedc_grad(b->p, "loss", wrt, n, &g));
    if (g) CHECK_OK(fedc_executor_create(&ex, g, NULL));
    if (!ex) {
        fedc_program_destroy(g);
        return;
    }
    bind_batch(ex, b, b->w);
    CHECK_OK(fedc_executor_run(ex));
    double before = *output(ex, "loss", NULL);
    float *w = fedc_malloc((size_t)fedc_model_size(m) * sizeof *w);
    for (int i = 0; w && i < n; i++) {
        char name[64];
        snprintf(name, sizeof name, "grad_%s", wrt[i]);
        fedc_type t;
        const float *gr = output(ex, name, &t), *w0 = b->w + fedc_model_param_offset(m, i);
        fedc_type want = fedc_model_param_type(m, i);
        CHECK_MSG(gr && fedc_type_equal(&t, &want), "%s: %s has the wrong type", fedc_model_name(m), name);
        bool nonzero = false;
        for (int64_t j = 0; gr && j < fedc_model_param_size(m, i); j++) {
            CHECK(isfinite(gr[j]));
            nonzero |= gr[j] != 0;
            w[fedc_model_param_offset(m, i) + j] = (float)(w0[j] - lr * gr[j]);
        }
        CHECK_MSG(nonzero, "%s: %s is all zero", fedc_model_name(m), name);
    }
    fedc_executor_destroy(ex);
    double after = w ? run_checked(b, w, NULL) : NAN;
    CHECK_MSG(after < before, "%s: loss %g after one step, %g before", fedc_model_name(m), after, before);
    fedc_free(w);
    fedc_program_destroy(g);
}

static void test_grad_and_sgd_step(void) {
    for (int k = 0; k < NCASES; k++) {
        batch b;
        if (batch_make(&b, &CASES[k], false)) check_sgd_step(&b, 0.05);
        batch_free(&b);
    }
    batch b; /* with dropout: the masks are fixed by the key, so the step still descends */
    if (batch_make(&b, &CASES[2], true)) check_sgd_step(&b, 0.05);
    batch_free(&b);
}

/* A batch that is all padding: loss 0 (not 0/0), nothing counted. */
static void test_all_padding(void) {
    batch b;
    fedc_executor *ex = NULL;
    if (batch_make(&b, &CASES[4], false)) CHECK_OK(fedc_executor_create(&ex, b.p, NULL));
    if (ex) {
        static const float zeros[B] = {0};
        bind_batch(ex, &b, b.w);
        CHECK_OK(fedc_executor_bind(ex, "mask", zeros));
        CHECK_OK(fedc_executor_run(ex));
        CHECK(*output(ex, "loss", NULL) == 0.0f);
        CHECK(*output(ex, "count", NULL) == 0.0f && *output(ex, "correct", NULL) == 0.0f);
    }
    fedc_executor_destroy(ex);
    batch_free(&b);
}

/* ------------------------------------------------------ argument checking -- */

static void test_apply_errors(void) {
    fedc_model *m = create(&CASES[2]);
    fedc_program *p = NULL;
    CHECK_OK(fedc_program_create(&p));
    if (!m || !p) {
        fedc_model_destroy(m);
        fedc_program_destroy(p);
        return;
    }
    fedc_value w[8];
    for (int i = 0; i < 8; i++) w[i] = fedc_input(p, fedc_model_param_name(m, i), fedc_model_param_type(m, i));
    fedc_value x = fedc_input(p, "x", fedc_model_input_type(m, B));
    fedc_value y = fedc_input(p, "y", fedc_type_make(FEDC_I32, 1, (int64_t[]){B}));
    fedc_value mask = fedc_input(p, "mask", fedc_type_make(FEDC_F32, 1, (int64_t[]){B}));
    fedc_value bad_x = fedc_input(p, "bad_x", fedc_type_make(FEDC_F32, 4, (int64_t[]){B, 28, 27, 1}));
    fedc_value short_y = fedc_input(p, "short_y", fedc_type_make(FEDC_I32, 1, (int64_t[]){B - 1}));
    fedc_value f_key = fedc_input(p, "f_key", fedc_type_make(FEDC_F32, 1, (int64_t[]){4}));
    fedc_model_outputs o;
    CHECK_ERR(fedc_model_apply(m, p, w, bad_x, y, mask, FEDC_NONE, &o), FEDC_ESHAPE, "x is f32[5,28,27,1]");
    CHECK(o.loss == FEDC_NONE && o.logits == FEDC_NONE);
    CHECK_ERR(fedc_model_apply(m, p, w, x, short_y, mask, FEDC_NONE, &o), FEDC_ESHAPE, "y (labels)");
    CHECK_ERR(fedc_model_apply(m, p, w, x, mask, mask, FEDC_NONE, &o), FEDC_ETYPE, "expected i32[5]");
    CHECK_ERR(fedc_model_apply(m, p, w, x, y, mask, f_key, &o), FEDC_ETYPE, "dropout_key");
    CHECK_ERR(fedc_model_apply(m, p, w, x, y, mask, 9999, &o), FEDC_EINVAL, "not a value");
    CHECK_ERR(fedc_model_apply(m, p, w, FEDC_NONE, y, mask, FEDC_NONE, &o), FEDC_EINVAL, "x is FEDC_NONE");
    fedc_value swapped[8];
    memcpy(swapped, w, sizeof w);
    swapped[0] = w[2];
    CHECK_ERR(fedc_model_apply(m, p, swapped, x, y, mask, FEDC_NONE, &o), FEDC_ESHAPE, "conv1/w");
    CHECK_ERR(fedc_model_apply(m, p, NULL, x, y, mask, FEDC_NONE, &o), FEDC_EINVAL, "params");
    CHECK_OK(fedc_model_apply(m, p, w, x, y, mask, FEDC_NONE, &o));
    /* A program with a sticky error: apply returns it and adds nothing. */
    fedc_matmul(p, x, y, false, false);
    int size = fedc_program_size(p);
    CHECK(fedc_model_apply(m, p, w, x, y, mask, FEDC_NONE, &o) == fedc_program_status(p));
    CHECK(fedc_program_status(p) != FEDC_OK && fedc_program_size(p) == size && o.loss == FEDC_NONE);
    CHECK_ERR(fedc_model_init(m, 1, NULL), FEDC_EINVAL, "params");
    fedc_program_destroy(p);
    fedc_model_destroy(m);
}

/* ------------------------------------------------------ allocation failure -- */

/* Create + build + apply, destroying everything whatever happens. */
static fedc_status create_and_apply(const model_case *c) {
    fedc_model *m = NULL;
    fedc_program *p = NULL;
    fedc_status st = fedc_model_create(&m, c->name, &c->options);
    if (!st) st = build_program(m, true, &p);
    fedc_program_destroy(p);
    fedc_model_destroy(m);
    return st;
}

static void test_alloc_failure(void) {
    for (int k = 0; k < NCASES; k++) {
        uint64_t n = 1;
        fedc_status st = FEDC_ENOMEM;
        for (; n <= MAX_POINTS && st == FEDC_ENOMEM; n++) {
            fedc__alloc_fail_after(n);
            st = create_and_apply(&CASES[k]);
            fedc__alloc_fail_after(0);
            CHECK_MSG(st == FEDC_OK || st == FEDC_ENOMEM, "%s, failing allocation %llu: %s: %s", CASES[k].name,
                      (unsigned long long)n, fedc_status_str(st), fedc_errmsg());
        }
        CHECK_MSG(st == FEDC_OK, "%s: no success within %d allocations", CASES[k].name, MAX_POINTS);
        printf("  %s: %llu allocation points\n", CASES[k].name, (unsigned long long)(n - 2));
    }
}

int main(int argc, char **argv) {
    static const fedc_test tests[] = {
        {"counts_and_names", test_counts_and_names},
        {"layout_contiguous", test_layout_contiguous},
        {"shapes", test_shapes},
        {"options", test_options},
        {"option_errors", test_option_errors},
        {"unknown_name", test_unknown_name},
        {"init_deterministic", test_init_deterministic},
        {"init_distribution", test_init_distribution},
        {"init_stream", test_init_stream},
        {"apply_every_model", test_apply_every_model},
        {"apply_logistic_by_hand", test_apply_logistic_by_hand},
        {"dropout", test_dropout},
        {"all_padding", test_all_padding},
        {"grad_and_sgd_step", test_grad_and_sgd_step},
        {"apply_errors", test_apply_errors},
        {"alloc_failure", test_alloc_failure},
    };
    return fedc_test_main(argc, argv, tests, FEDC_COUNT_OF(tests));
}
