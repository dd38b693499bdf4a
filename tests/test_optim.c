/*
 * tests/test_optim.c — the optimizers of include/fedc/nn.h against optax's
 * equations.
 *
 * The reference below is plain C written from optax's definitions (sgd/trace,
 * scale_by_adam, scale_by_rss, scale_by_yogi, scale_by_rms, bias_correction;
 * see docs/optimizers.md), independent of src/nn/optim.c: it uses pow(b, t)
 * where the program uses exp(t log b), and keeps its state in its own layout.
 * For every optimizer (and variants that reach the edge cases: Yogi's sign at 0,
 * Adagrad's empty accumulator, Adam with b1 = 0, RMSProp with initial_scale and
 * Nesterov momentum), three steps with fixed per-step gradients run through an
 * executor in f64 and must match the reference to 1e-12, parameters and state
 * after every step; f32 runs must agree with f64 to 1e-5; a learning rate passed
 * as a value gives the same bits as the constant; the gradient of the sum of the
 * parameters after three chained steps (with gradients that depend on the
 * parameters) with respect to the learning rate matches central differences.
 * Then the settings, the state layout, argument errors, and allocation failures
 * while building a step.
 */
#include <string.h>

#include "fedc/ad.h"
#include "fedc/exec.h"
#include "fedc/nn.h"
#include "core/internal.h"
#include "harness.h"

/* Three parameters of different ranks ([2,3], [3], []), ten elements in all. */
enum { NP = 3, NE = 10, STEPS = 3, MAXS = 2 * NP + 1, MAXE = 6 };
static const int offset[NP + 1] = {0, 6, 9, 10};

static fedc_type param_type(fedc_dtype dt, int i) {
    static const int64_t dims[NP][2] = {{2, 3}, {3, 0}, {0, 0}};
    static const int rank[NP] = {2, 1, 0};
    return fedc_type_make(dt, rank[i], dims[i]);
}

static const double W0[NE] = {0.5, -1.25, 2.0, 0.0, -0.3, 1.1, 0.75, -2.5, 0.2, 3.0};
/* Element 0 at step 1 is 0.5: g^2 = 0.25 exactly (Yogi's sign at 0 with an
 * accumulator of 0.25). Element 2 is 0 for two steps (Adagrad's empty sum).
 * Element 4 goes from large to small (Yogi's sign turns positive). */
static const double G[STEPS][NE] = {
    {0.5, -0.2, 0.0, 1.5, -3.0, 0.25, 0.01, -0.7, 2.0, -1.0},
    {-0.1, 0.3, 0.0, 1.5, 0.01, -0.25, 0.02, 0.7, -2.0, 0.6},
    {0.2, -0.4, 0.4, -0.5, 0.5, 0.125, -0.03, 0.1, 1.0, 0.0},
};

/* ----------------------------------------------------------- reference -- */

typedef struct ref_state {
    double slot[2][NE]; /* the optimizer's slots, element by element */
    double count;
} ref_state;

/* optax's init_fn: adagrad's sum_of_squares, both of yogi's moments and
 * rmsprop's nu start at the initial value; all else at 0. */
static void ref_init(const fedc_optimizer *o, ref_state *r) {
    memset(r, 0, sizeof *r);
    bool full = o->kind == FEDC_OPT_ADAGRAD || o->kind == FEDC_OPT_YOGI || o->kind == FEDC_OPT_RMSPROP;
    for (int s = 0; s < 2 && full; s++)
        for (int e = 0; e < NE; e++) r->slot[s][e] = o->initial_accumulator;
}

static double ref_sign(double x) { return x > 0 ? 1 : x < 0 ? -1 : 0; }

static double ref_direction(const fedc_optimizer *o, ref_state *r, int e, double g) {
    double *m = &r->slot[0][e], *v = &r->slot[1][e], t = r->count;
    switch (o->kind) {
    case FEDC_OPT_SGD: return g;
    case FEDC_OPT_MOMENTUM: /* optax.trace */
        *m = g + o->momentum * *m;
        return o->nesterov ? g + o->momentum * *m : *m;
    case FEDC_OPT_ADAM: /* optax.scale_by_adam, eps_root = 0 */
        *m = (1 - o->b1) * g + o->b1 * *m;
        *v = (1 - o->b2) * g * g + o->b2 * *v;
        return (*m / (1 - pow(o->b1, t))) / (sqrt(*v / (1 - pow(o->b2, t))) + o->eps);
    case FEDC_OPT_ADAGRAD: /* optax.scale_by_rss */
        *m = g * g + *m;
        return (*m > 0 ? 1 / sqrt(*m + o->eps) : 0) * g;
    case FEDC_OPT_YOGI: /* optax.scale_by_yogi */
        *m = (1 - o->b1) * g + o->b1 * *m;
        *v = *v - (1 - o->b2) * ref_sign(*v - g * g) * g * g;
        return (*m / (1 - pow(o->b1, t))) / (sqrt(*v / (1 - pow(o->b2, t))) + o->eps);
    case FEDC_OPT_RMSPROP: /* optax.scale_by_rms */
        *m = (1 - o->b2) * g * g + o->b2 * *m;
        return g / sqrt(*m + o->eps);
    default: return 0;
    }
}

/* optax.apply_updates(w, scale(-lr)(u)) */
static void ref_step(const fedc_optimizer *o, double *w, const double *g, ref_state *r) {
    if (o->kind == FEDC_OPT_ADAM || o->kind == FEDC_OPT_YOGI) r->count += 1;
    for (int e = 0; e < NE; e++) w[e] -= o->learning_rate * (ref_direction(o, r, e, g[e]) + o->weight_decay * w[e]);
}

/* -------------------------------------------------------------- configs -- */

typedef struct config {
    char name[32];
    fedc_optimizer o;
} config;

enum { NCONFIGS = 13 };

static config make_config(const char *name, const char *base) {
    config c;
    snprintf(c.name, sizeof c.name, "%s", name);
    fedc_optimizer_parse(base, 0.1, &c.o);
    return c;
}

static void configs(config *c) {
    static const char *const names[] = {"sgd", "momentum", "nesterov", "adam", "adagrad", "yogi", "rmsprop"};
    for (int i = 0; i < 7; i++) c[i] = make_config(names[i], names[i]);
    c[7] = make_config("yogi, accumulator 0.25", "yogi");
    c[7].o.initial_accumulator = 0.25;
    c[8] = make_config("adagrad, accumulator 0, eps 0", "adagrad");
    c[8].o.initial_accumulator = 0, c[8].o.eps = 0;
    c[9] = make_config("adam, b1 0", "adam");
    c[9].o.b1 = 0;
    c[10] = make_config("rmsprop, initial_scale 1", "rmsprop");
    c[10].o.initial_accumulator = 1;
    c[11] = make_config("adamw, weight decay 0.1", "adam"); /* optax.adamw(weight_decay=0.1) */
    c[11].o.weight_decay = 0.1;
    c[12] = make_config("sgd, weight decay 0.5", "sgd");
    c[12].o.weight_decay = 0.5;
}

/* --------------------------------------------------------- the program -- */

/* Element i of a buffer of dtype dt (memcpy: the buffers are declared double). */
static void put(fedc_dtype dt, void *buf, int64_t i, double v) {
    float f = (float)v;
    if (dt == FEDC_F64) memcpy((char *)buf + i * 8, &v, 8);
    else memcpy((char *)buf + i * 4, &f, 4);
}

static double get(fedc_dtype dt, const void *buf, int64_t i) {
    double d;
    float f;
    if (dt == FEDC_F64) return memcpy(&d, (const char *)buf + i * 8, 8), d;
    return memcpy(&f, (const char *)buf + i * 4, 4), f;
}

static fedc_value named_input(fedc_program *p, const char *prefix, int i, fedc_type t) {
    char name[16];
    snprintf(name, sizeof name, "%s%d", prefix, i);
    return fedc_input(p, name, t);
}

/* The type of state tensor k: its parameter's, or f32[] for the step count. */
static fedc_type state_type(const fedc_optimizer *o, fedc_dtype dt, int k) {
    return k < NP * fedc_optimizer_slots(o) ? param_type(dt, k % NP) : fedc_type_scalar(FEDC_F32);
}

/* Inputs p<i>, g<i>, s<k> (and lr when lr_input); outputs np<i>, ns<k>. */
static fedc_program *step_program(const fedc_optimizer *o, fedc_dtype dt, bool lr_input) {
    fedc_program *p;
    if (fedc_program_create(&p)) return NULL;
    fedc_value w[NP], g[NP], s[MAXS], nw[NP], ns[MAXS];
    int nstate = fedc_optimizer_state_size(o, NP);
    for (int i = 0; i < NP; i++) w[i] = named_input(p, "p", i, param_type(dt, i));
    for (int i = 0; i < NP; i++) g[i] = named_input(p, "g", i, param_type(dt, i));
    for (int k = 0; k < nstate; k++) s[k] = named_input(p, "s", k, state_type(o, dt, k));
    fedc_value lr = lr_input ? fedc_input(p, "lr", fedc_type_scalar(dt)) : FEDC_NONE;
    CHECK_OK(fedc_optimizer_step(o, p, lr, NP, w, g, s, nw, ns));
    char name[16];
    for (int i = 0; i < NP; i++) snprintf(name, sizeof name, "np%d", i), fedc_program_output(p, name, nw[i]);
    for (int k = 0; k < nstate; k++) snprintf(name, sizeof name, "ns%d", k), fedc_program_output(p, name, ns[k]);
    return p;
}

/* Host buffers bound to the step program's inputs; outputs are copied back in. */
typedef struct buffers {
    double w[NP][MAXE], g[NP][MAXE], s[MAXS][MAXE], lr;
} buffers;

/* W0 and the initial state (fedc_optimizer_state_init's) into b, as dtype dt. */
static void initial_buffers(const fedc_optimizer *o, fedc_dtype dt, buffers *b) {
    for (int i = 0; i < NP; i++)
        for (int j = 0; j < offset[i + 1] - offset[i]; j++) put(dt, b->w[i], j, W0[offset[i] + j]);
    for (int k = 0; k < fedc_optimizer_state_size(o, NP); k++)
        for (int j = 0; j < MAXE; j++) put(state_type(o, dt, k).dtype, b->s[k], j, fedc_optimizer_state_init(o, NP, k));
    put(dt, &b->lr, 0, o->learning_rate);
}

static fedc_status bind_named(fedc_executor *ex, const char *prefix, int i, const void *data) {
    char name[16];
    snprintf(name, sizeof name, "%s%d", prefix, i);
    return fedc_executor_bind(ex, name, data);
}

/* Binds p<i>, s<k>, and g<i> and lr when the program has them. */
static fedc_status bind_all(fedc_executor *ex, buffers *b, int nstate, bool grads, bool lr_input) {
    fedc_status st = FEDC_OK;
    for (int i = 0; i < NP && !st; i++) st = bind_named(ex, "p", i, b->w[i]);
    for (int i = 0; i < NP && grads && !st; i++) st = bind_named(ex, "g", i, b->g[i]);
    for (int k = 0; k < nstate && !st; k++) st = bind_named(ex, "s", k, b->s[k]);
    if (lr_input && !st) st = fedc_executor_bind(ex, "lr", &b->lr);
    return st;
}

/* Reads output `name` into buf (as the input's dtype) and into `host` (as doubles). */
static fedc_status take(fedc_executor *ex, const char *prefix, int i, void *buf, double *host) {
    char name[16];
    snprintf(name, sizeof name, "%s%d", prefix, i);
    const void *data;
    fedc_type t;
    fedc_status st = fedc_executor_output(ex, name, &data, &t);
    if (st) return st;
    for (int64_t j = 0; j < fedc_type_count(&t); j++) host[j] = get(t.dtype, data, j), put(t.dtype, buf, j, host[j]);
    return FEDC_OK;
}

/* Runs STEPS steps from W0 with gradients G: w[t] holds the parameters after
 * step t (w[0] = W0) and st[t] the state after step t + 1, in the reference's
 * layout. The initial state is fedc_optimizer_state_init's. */
static fedc_status run_steps(const fedc_optimizer *o, fedc_dtype dt, bool lr_input, double w[STEPS + 1][NE],
                             ref_state st[STEPS]) {
    fedc_program *p = step_program(o, dt, lr_input);
    fedc_executor *ex = NULL;
    fedc_status status = p ? fedc_executor_create(&ex, p, NULL) : FEDC_ENOMEM;
    fedc_program_destroy(p);
    int nstate = fedc_optimizer_state_size(o, NP), slots = fedc_optimizer_slots(o);
    buffers b;
    memcpy(w[0], W0, sizeof W0);
    memset(st, 0, STEPS * sizeof *st); /* slots an optimizer lacks stay 0, for memcmp */
    initial_buffers(o, dt, &b);
    if (!status) status = bind_all(ex, &b, nstate, true, lr_input);
    for (int t = 0; t < STEPS && !status; t++) {
        for (int i = 0; i < NP; i++)
            for (int j = 0; j < offset[i + 1] - offset[i]; j++) put(dt, b.g[i], j, G[t][offset[i] + j]);
        status = fedc_executor_run(ex);
        for (int i = 0; i < NP && !status; i++) status = take(ex, "np", i, b.w[i], &w[t + 1][offset[i]]);
        for (int k = 0; k < nstate && !status; k++) {
            double *host = k < NP * slots ? &st[t].slot[k / NP][offset[k % NP]] : &st[t].count;
            status = take(ex, "ns", k, b.s[k], host);
        }
    }
    fedc_executor_destroy(ex);
    return status;
}

/* ---------------------------------------------------------------- tests -- */

static bool near(double a, double b, double tol) { return fabs(a - b) <= tol * (fabs(b) > 1 ? fabs(b) : 1); }

static void compare(const char *what, const config *c, int t, const double *got, const double *want, double tol) {
    for (int e = 0; e < NE; e++)
        CHECK_MSG(near(got[e], want[e], tol), "%s: %s after step %d, element %d: %.17g vs %.17g", c->name, what, t + 1,
                  e, got[e], want[e]);
}

static void compare_state(const config *c, int t, const ref_state *got, const ref_state *want, double tol) {
    static const char *const slot_names[2] = {"state slot 0", "state slot 1"};
    for (int s = 0; s < fedc_optimizer_slots(&c->o); s++)
        compare(slot_names[s], c, t, got->slot[s], want->slot[s], tol);
    if (fedc_optimizer_counts_steps(&c->o))
        CHECK_MSG(got->count == want->count, "%s: step count %g vs %g", c->name, got->count, want->count);
}

static void test_reference(void) {
    config cs[NCONFIGS];
    configs(cs);
    for (int ci = 0; ci < NCONFIGS; ci++) {
        const config *c = &cs[ci];
        double w[STEPS + 1][NE], rw[NE];
        ref_state got[STEPS], want;
        CHECK_OK(run_steps(&c->o, FEDC_F64, false, w, got));
        memcpy(rw, W0, sizeof rw);
        ref_init(&c->o, &want);
        for (int t = 0; t < STEPS; t++) {
            ref_step(&c->o, rw, G[t], &want);
            compare("params", c, t, w[t + 1], rw, 1e-12);
            compare_state(c, t, &got[t], &want, 1e-12);
        }
    }
}

/* Values known without the reference: Adam's first step moves every element with
 * g != 0 by lr (m_hat = g, v_hat = g^2), and RMSProp's by lr g / sqrt(0.1 g^2 + eps),
 * about lr sqrt(10). */
static void test_known_first_steps(void) {
    fedc_optimizer adam, rms;
    CHECK_OK(fedc_optimizer_parse("adam", 0.1, &adam));
    CHECK_OK(fedc_optimizer_parse("rmsprop", 0.1, &rms));
    double w[STEPS + 1][NE];
    ref_state st[STEPS];
    CHECK_OK(run_steps(&adam, FEDC_F64, false, w, st));
    for (int e = 0; e < NE; e++)
        CHECK_NEAR(w[1][e], W0[e] - (G[0][e] == 0 ? 0 : 0.1 * ref_sign(G[0][e])), 1e-7);
    CHECK_OK(run_steps(&rms, FEDC_F64, false, w, st));
    for (int e = 0; e < NE; e++)
        if (fabs(G[0][e]) >= 0.2) CHECK_NEAR((W0[e] - w[1][e]) * ref_sign(G[0][e]), 0.1 * sqrt(10.0), 1e-6);
    /* AdamW (decoupled): the same first step, plus lr * wd * w */
    adam.weight_decay = 0.25;
    CHECK_OK(run_steps(&adam, FEDC_F64, false, w, st));
    for (int e = 0; e < NE; e++)
        CHECK_NEAR(w[1][e], W0[e] - 0.1 * ((G[0][e] == 0 ? 0 : ref_sign(G[0][e])) + 0.25 * W0[e]), 1e-7);
}

static void test_f32_agrees(void) {
    config cs[NCONFIGS];
    configs(cs);
    for (int ci = 0; ci < NCONFIGS; ci++) {
        double w64[STEPS + 1][NE], w32[STEPS + 1][NE];
        ref_state s64[STEPS], s32[STEPS];
        CHECK_OK(run_steps(&cs[ci].o, FEDC_F64, false, w64, s64));
        CHECK_OK(run_steps(&cs[ci].o, FEDC_F32, false, w32, s32));
        for (int t = 0; t < STEPS; t++) {
            compare("f32 params", &cs[ci], t, w32[t + 1], w64[t + 1], 1e-5);
            compare_state(&cs[ci], t, &s32[t], &s64[t], 1e-5);
        }
    }
}

static void test_lr_value_same_bits(void) {
    config cs[NCONFIGS];
    configs(cs);
    for (int ci = 0; ci < NCONFIGS; ci++)
        for (int d = 0; d < 2; d++) {
            fedc_dtype dt = d ? FEDC_F64 : FEDC_F32;
            double wc[STEPS + 1][NE], wv[STEPS + 1][NE];
            ref_state sc[STEPS], sv[STEPS];
            CHECK_OK(run_steps(&cs[ci].o, dt, false, wc, sc));
            CHECK_OK(run_steps(&cs[ci].o, dt, true, wv, sv));
            CHECK_MSG(memcmp(wc, wv, sizeof wc) == 0 && memcmp(sc, sv, sizeof sc) == 0,
                      "%s (%s): lr as a value and as a constant differ", cs[ci].name, fedc_dtype_name(dt));
        }
}

/* obj(lr) = sum of the parameters after three steps whose gradients are
 * g = w^2 - 0.3, so the learning rate reaches later steps through the
 * parameters (and the state). */
static fedc_program *chained_program(const fedc_optimizer *o) {
    fedc_program *p;
    if (fedc_program_create(&p)) return NULL;
    fedc_value w[NP], g[NP], s[MAXS], nw[NP], ns[MAXS];
    int nstate = fedc_optimizer_state_size(o, NP);
    for (int i = 0; i < NP; i++) w[i] = named_input(p, "p", i, param_type(FEDC_F64, i));
    for (int k = 0; k < nstate; k++) s[k] = named_input(p, "s", k, state_type(o, FEDC_F64, k));
    fedc_value lr = fedc_input(p, "lr", fedc_type_scalar(FEDC_F64));
    for (int t = 0; t < STEPS; t++) {
        for (int i = 0; i < NP; i++) g[i] = fedc_sub(p, fedc_square(p, w[i]), fedc_scalar_like(p, w[i], 0.3));
        CHECK_OK(fedc_optimizer_step(o, p, lr, NP, w, g, s, nw, ns));
        memcpy(w, nw, sizeof w);
        memcpy(s, ns, (size_t)nstate * sizeof *s);
    }
    fedc_value obj = fedc_scalar(p, FEDC_F64, 0);
    for (int i = 0; i < NP; i++) obj = fedc_add(p, obj, fedc_reduce_sum(p, w[i], NULL, -1, false));
    CHECK_OK(fedc_program_output(p, "obj", obj));
    return p;
}

/* Runs `p` (the chained program or its gradient) at lr and returns output `out`. */
static double run_chained(const fedc_program *p, const fedc_optimizer *o, double lr, const char *out) {
    fedc_executor *ex;
    buffers b;
    double value = NAN;
    int nstate = fedc_optimizer_state_size(o, NP);
    initial_buffers(o, FEDC_F64, &b);
    b.lr = lr;
    CHECK_OK(fedc_executor_create(&ex, p, NULL));
    fedc_status st = bind_all(ex, &b, nstate, false, true);
    if (!st) st = fedc_executor_run(ex);
    const void *data;
    if (!st) st = fedc_executor_output(ex, out, &data, NULL);
    CHECK_OK(st);
    if (!st) value = *(const double *)data;
    fedc_executor_destroy(ex);
    return value;
}

static void test_hypergradient(void) {
    config cs[NCONFIGS];
    configs(cs);
    for (int ci = 0; ci < NCONFIGS; ci++) {
        const fedc_optimizer *o = &cs[ci].o;
        fedc_program *p = chained_program(o), *g = NULL;
        CHECK_OK(fedc_grad(p, "obj", (const char *[]){"lr"}, 1, &g));
        if (g) {
            double lr = o->learning_rate, h = 1e-5;
            double analytic = run_chained(g, o, lr, "grad_lr");
            double numeric = (run_chained(p, o, lr + h, "obj") - run_chained(p, o, lr - h, "obj")) / (2 * h);
            CHECK_MSG(near(analytic, numeric, 1e-6) && analytic != 0,
                      "%s: d obj / d lr = %.12g, finite differences %.12g", cs[ci].name, analytic, numeric);
        }
        fedc_program_destroy(g);
        fedc_program_destroy(p);
    }
}

static void test_settings(void) {
    fedc_optimizer o;
    CHECK_OK(fedc_optimizer_parse("adam", 0.01, &o));
    CHECK(o.kind == FEDC_OPT_ADAM && o.learning_rate == 0.01 && o.b1 == 0.9 && o.b2 == 0.999 && o.eps == 1e-8);
    CHECK_OK(fedc_optimizer_parse("adagrad", 0.1, &o));
    CHECK(o.kind == FEDC_OPT_ADAGRAD && o.initial_accumulator == 0.1 && o.eps == 1e-6);
    CHECK_OK(fedc_optimizer_parse("yogi", 0.1, &o));
    CHECK(o.kind == FEDC_OPT_YOGI && o.b1 == 0.9 && o.b2 == 0.999 && o.eps == 1e-3 && o.initial_accumulator == 1e-6);
    CHECK_OK(fedc_optimizer_parse("rmsprop", 0.1, &o));
    CHECK(o.kind == FEDC_OPT_RMSPROP && o.b2 == 0.9 && o.eps == 1e-8 && o.initial_accumulator == 0);
    CHECK_OK(fedc_optimizer_parse("momentum", 0.1, &o));
    CHECK(o.kind == FEDC_OPT_MOMENTUM && o.momentum == 0.9 && !o.nesterov);
    CHECK_OK(fedc_optimizer_parse("nesterov", 0.1, &o));
    CHECK(o.kind == FEDC_OPT_MOMENTUM && o.momentum == 0.9 && o.nesterov);
    CHECK_OK(fedc_optimizer_parse("sgd", 0.5, &o));
    CHECK(o.kind == FEDC_OPT_SGD && o.learning_rate == 0.5 && o.momentum == 0);
    for (int k = 0; k < FEDC_OPT_COUNT; k++) {
        CHECK_OK(fedc_optimizer_parse(fedc_optimizer_name((fedc_optimizer_kind)k), 1, &o));
        CHECK_EQ_INT(o.kind, k);
    }
    CHECK(strcmp(fedc_optimizer_name(FEDC_OPT_YOGI), "yogi") == 0);
    CHECK_ERR(fedc_optimizer_parse("adamw", 0.1, &o), FEDC_EINVAL, "\"adamw\"");
    const char *known = "sgd, momentum, nesterov, adam, adagrad, yogi, rmsprop";
    CHECK_ERR(fedc_optimizer_parse("Adam", 0.1, &o), FEDC_EINVAL, known);
    CHECK_ERR(fedc_optimizer_parse(NULL, 0.1, &o), FEDC_EINVAL, NULL);
}

static void test_state_layout(void) {
    static const struct { const char *name; int slots; bool counts; double init; } want[] = {
        {"sgd", 0, false, 0},   {"momentum", 1, false, 0}, {"adam", 2, true, 0},
        {"adagrad", 1, false, 0.1}, {"yogi", 2, true, 1e-6},   {"rmsprop", 1, false, 0},
    };
    for (int i = 0; i < FEDC_COUNT_OF(want); i++) {
        fedc_optimizer o;
        CHECK_OK(fedc_optimizer_parse(want[i].name, 0.1, &o));
        CHECK_EQ_INT(fedc_optimizer_slots(&o), want[i].slots);
        CHECK(fedc_optimizer_counts_steps(&o) == want[i].counts);
        int size = NP * want[i].slots + want[i].counts;
        CHECK_EQ_INT(fedc_optimizer_state_size(&o, NP), size);
        for (int k = 0; k < NP * want[i].slots; k++) CHECK(fedc_optimizer_state_init(&o, NP, k) == want[i].init);
        if (want[i].counts) CHECK(fedc_optimizer_state_init(&o, NP, size - 1) == 0);
        CHECK(fedc_optimizer_state_init(&o, NP, size) == 0);
    }
}

/* With no parameters, Adam still counts: its state is the step count alone. */
static void test_no_params(void) {
    fedc_optimizer o = fedc_optimizer_defaults(FEDC_OPT_ADAM, 0.1);
    fedc_program *p;
    CHECK_OK(fedc_program_create(&p));
    fedc_value t = fedc_input(p, "t", fedc_type_scalar(FEDC_F32)), nt = FEDC_NONE;
    CHECK_OK(fedc_optimizer_step(&o, p, FEDC_NONE, 0, NULL, NULL, &t, NULL, &nt));
    CHECK(nt != FEDC_NONE);
    CHECK_OK(fedc_program_output(p, "t1", nt));
    CHECK_OK(fedc_program_verify(p));
    fedc_program_destroy(p);
}

/* A server optimizer: parameters, gradients, state and lr @server. */
static void test_server_placement(void) {
    fedc_optimizer o = fedc_optimizer_defaults(FEDC_OPT_YOGI, 0.01);
    fedc_program *p;
    CHECK_OK(fedc_program_create(&p));
    fedc_type t = param_type(FEDC_F32, 0), c = fedc_type_scalar(FEDC_F32);
    t.placement = c.placement = FEDC_SERVER;
    fedc_value w = fedc_input(p, "w", t), g = fedc_input(p, "g", t), lr = fedc_input(p, "lr", c);
    fedc_value s[3] = {fedc_input(p, "m", t), fedc_input(p, "v", t), fedc_input(p, "t", c)}, nw, ns[3];
    CHECK_OK(fedc_optimizer_step(&o, p, lr, 1, &w, &g, s, &nw, ns));
    CHECK(fedc_value_type(p, nw).placement == FEDC_SERVER && fedc_value_type(p, ns[1]).placement == FEDC_SERVER);
    CHECK_OK(fedc_program_output(p, "w1", nw));
    CHECK_OK(fedc_program_verify(p));
    fedc_program_destroy(p);
}

typedef struct err_fixture {
    fedc_program *p;
    fedc_value w[2], g[2], s[5], nw[2], ns[5];
} err_fixture;

/* f32 params [2,3] and [3] with matching grads and Adam state. */
static void err_setup(err_fixture *f) {
    CHECK_OK(fedc_program_create(&f->p));
    for (int i = 0; i < 2; i++) {
        f->w[i] = named_input(f->p, "p", i, param_type(FEDC_F32, i));
        f->g[i] = named_input(f->p, "g", i, param_type(FEDC_F32, i));
    }
    for (int k = 0; k < 4; k++) f->s[k] = named_input(f->p, "s", k, param_type(FEDC_F32, k % 2));
    f->s[4] = fedc_input(f->p, "t", fedc_type_scalar(FEDC_F32));
}

static fedc_status err_step(err_fixture *f, const fedc_optimizer *o, fedc_value lr, int n) {
    f->nw[0] = f->ns[0] = 7; /* must come back FEDC_NONE on failure */
    fedc_status st = fedc_optimizer_step(o, f->p, lr, n, f->w, f->g, f->s, f->nw, f->ns);
    if (st) CHECK(f->nw[0] == FEDC_NONE && f->ns[0] == FEDC_NONE);
    else CHECK(f->nw[0] != FEDC_NONE && f->ns[0] != FEDC_NONE);
    return st;
}

static void test_errors(void) {
    fedc_optimizer adam = fedc_optimizer_defaults(FEDC_OPT_ADAM, 0.1), bad = adam;
    err_fixture f;
    err_setup(&f);
    fedc_program *p = f.p;
    fedc_value keep = f.g[0];
    f.g[0] = fedc_input(p, "g64", param_type(FEDC_F64, 0));
    CHECK_ERR(err_step(&f, &adam, FEDC_NONE, 2), FEDC_ETYPE, "grads[0] is f64[2,3], params[0] is f32[2,3]");
    f.g[0] = fedc_input(p, "g32", fedc_type_make(FEDC_F32, 2, (int64_t[]){3, 2}));
    CHECK_ERR(err_step(&f, &adam, FEDC_NONE, 2), FEDC_ESHAPE, "grads[0]");
    f.g[0] = keep;
    keep = f.s[3];
    f.s[3] = f.w[0]; /* slot 1 of params[1] must be f32[3] */
    CHECK_ERR(err_step(&f, &adam, FEDC_NONE, 2), FEDC_ESHAPE, "state[3]");
    f.s[3] = keep;
    keep = f.s[4];
    f.s[4] = fedc_input(p, "t64", fedc_type_scalar(FEDC_F64));
    CHECK_ERR(err_step(&f, &adam, FEDC_NONE, 2), FEDC_ETYPE, "step count");
    f.s[4] = keep;
    CHECK_ERR(err_step(&f, &adam, fedc_input(p, "lr64", fedc_type_scalar(FEDC_F64)), 2), FEDC_ETYPE, "lr is f64[]");
    CHECK_ERR(err_step(&f, &adam, f.w[1], 2), FEDC_ETYPE, "lr is f32[3]");
    CHECK_ERR(fedc_optimizer_step(&adam, p, FEDC_NONE, -1, f.w, f.g, f.s, f.nw, f.ns), FEDC_EINVAL, "-1 parameters");
    CHECK_ERR(fedc_optimizer_step(&adam, p, FEDC_NONE, 2, f.w, f.g, NULL, f.nw, NULL), FEDC_EINVAL, "state is NULL");
    keep = f.w[1];
    f.w[1] = 12345;
    CHECK_ERR(err_step(&f, &adam, FEDC_NONE, 2), FEDC_EINVAL, "params[1] is not a value");
    f.w[1] = fedc_input(p, "i", fedc_type_make(FEDC_I32, 1, (int64_t[]){3}));
    CHECK_ERR(err_step(&f, &adam, FEDC_NONE, 2), FEDC_ETYPE, "f32 or f64");
    f.w[1] = keep;
    bad.kind = FEDC_OPT_COUNT;
    CHECK_ERR(fedc_optimizer_step(&bad, p, FEDC_NONE, 2, f.w, f.g, f.s, f.nw, f.ns), FEDC_EINVAL, "kind");
    bad = adam, bad.b2 = 1;
    CHECK_ERR(err_step(&f, &bad, FEDC_NONE, 2), FEDC_EINVAL, "b1, b2");
    bad = adam, bad.weight_decay = -0.1;
    CHECK_ERR(err_step(&f, &bad, FEDC_NONE, 2), FEDC_EINVAL, "weight decay -0.1 must be finite and >= 0");
    /* argument errors leave the program usable */
    CHECK_OK(fedc_program_status(p));
    CHECK_OK(err_step(&f, &adam, FEDC_NONE, 2));
    /* an earlier builder error is passed on */
    CHECK(fedc_add(p, f.w[0], fedc_input(p, "x", fedc_type_make(FEDC_F32, 1, (int64_t[]){2}))) == FEDC_NONE);
    CHECK_ERR(err_step(&f, &adam, FEDC_NONE, 2), FEDC_ESHAPE, NULL);
    fedc_program_destroy(p);
}

/* Every allocation made while building a step can fail: the step returns
 * FEDC_ENOMEM, leaves it in the program, gives no results, and leaks nothing
 * (LeakSanitizer checks the last part in the ASan build). */
/* Builds one step with allocation k failing; true once it succeeds. */
static bool build_failing(const fedc_optimizer *o, bool lr_value, uint64_t k, int *failures) {
    err_fixture f;
    err_setup(&f);
    fedc_value lr = lr_value ? fedc_input(f.p, "lr", fedc_type_scalar(FEDC_F32)) : FEDC_NONE;
    fedc__alloc_fail_after(0);
    fedc__alloc_fail_after(k);
    fedc_status st = fedc_optimizer_step(o, f.p, lr, 2, f.w, f.g, f.s, f.nw, f.ns);
    fedc__alloc_fail_after(0);
    if (st == FEDC_OK) {
        CHECK(fedc_program_verify(f.p) == FEDC_OK && f.nw[0] != FEDC_NONE && f.nw[1] != FEDC_NONE);
    } else {
        ++*failures;
        CHECK_ERR(st, FEDC_ENOMEM, NULL);
        CHECK(fedc_program_status(f.p) == FEDC_ENOMEM && f.nw[0] == FEDC_NONE && f.nw[1] == FEDC_NONE);
    }
    fedc_program_destroy(f.p);
    return st == FEDC_OK;
}

/* Every allocation made while building a step can fail: the step returns
 * FEDC_ENOMEM, leaves it in the program, gives no results, and leaks nothing
 * (LeakSanitizer checks the last part in the ASan build). */
static void test_alloc_failure(void) {
    config cs[NCONFIGS];
    configs(cs);
    for (int ci = 0; ci < NCONFIGS; ci++) {
        int failures = 0;
        for (int lr_value = 0; lr_value < 2; lr_value++) {
            uint64_t k = 1;
            while (k < 10000 && !build_failing(&cs[ci].o, lr_value, k, &failures)) k++;
        }
        CHECK_MSG(failures > 0, "%s: building a step made no allocation to fail", cs[ci].name);
    }
}

int main(int argc, char **argv) {
    static const fedc_test tests[] = {
        {"reference", test_reference},
        {"known_first_steps", test_known_first_steps},
        {"f32_agrees", test_f32_agrees},
        {"lr_value_same_bits", test_lr_value_same_bits},
        {"hypergradient", test_hypergradient},
        {"settings", test_settings},
        {"state_layout", test_state_layout},
        {"no_params", test_no_params},
        {"server_placement", test_server_placement},
        {"errors", test_errors},
        {"alloc_failure", test_alloc_failure},
    };
    return fedc_test_main(argc, argv, tests, FEDC_COUNT_OF(tests));
}
