/* Mime and MimeLite (src/fl/mime.c, src/fl/mimelite.c): FedJAX's unit tests
 * (fedjax/algorithms/mime_test.py, mime_lite_test.py) with their values, the
 * base optimizer's state kept by the server over two rounds, and training with
 * fedc_train on the heart-disease silos.
 *
 * FedJAX's tests use a 1-parameter model w with per-example loss x * w (so a
 * batch's gradient is the masked mean of its x), which is none of fedc's models:
 * the rounds are built here on that objective with the same builders `fedc train
 * --algorithm mime|mimelite` uses (fedc__mime_round_with, fl/mime.h), on a round
 * whose inputs are made as fedc_algorithm_round makes them.
 *
 * Where fedc differs by design: FedJAX batches a client's data twice, padded_batch
 * for the full gradient and shuffle_repeat_batch for training; a fedc round has one
 * batching (the training batches), and the full gradient is taken over them. The
 * tests below feed each FedJAX test the batches its values come from, and
 * test_mime_on_fedc_batches shows what fedc's own batching gives instead. */
#include <math.h>
#include <string.h>
#include <sys/stat.h>

#include "data_fixtures.h"
#include "fedc/fedc.h"
#include "fl/mime.h"
#include "harness.h"

enum { CLIENTS = 2, STEPS = 2, BATCH = 2 };

/* FedJAX's test loss as a round objective: the masked mean of x * w over the
 * batch (models.grad's scalar_loss), with its gradient. */
static fedc_program *fedjax_objective(void) {
    fedc_program *p = NULL, *g = NULL;
    if (fedc_program_create(&p)) return NULL;
    int64_t b = BATCH;
    fedc_value w = fedc_input(p, "w/w", fedc_type_scalar(FEDC_F32));
    fedc_value x = fedc_input(p, "x", fedc_type_make(FEDC_F32, 1, &b));
    fedc_input(p, "y", fedc_type_make(FEDC_I32, 1, &b));
    fedc_value mask = fedc_input(p, "mask", fedc_type_make(FEDC_F32, 1, &b));
    fedc_input(p, "key", fedc_type_make(FEDC_I32, 1, (int64_t[]){4}));
    fedc_value count = fedc_reduce_sum(p, mask, NULL, -1, false);
    fedc_value sum = fedc_reduce_sum(p, fedc_mul(p, fedc_mul(p, x, w), mask), NULL, -1, false);
    fedc_program_output(p, "loss", fedc_div(p, sum, fedc_maximum(p, count, fedc_scalar(p, FEDC_F32, 1))));
    fedc_program_output(p, "count", count);
    fedc_status st = fedc_program_status(p);
    if (!st) st = fedc_grad_tree(p, "loss", "w", &g);
    fedc_program_destroy(p);
    CHECK_OK(st);
    return g;
}

/* One round's data: x[client][step][row], its mask, the real batches. */
typedef struct problem {
    float x[CLIENTS * STEPS * BATCH], mask[CLIENTS * STEPS * BATCH], num_examples[CLIENTS];
    int32_t y[CLIENTS * STEPS * BATCH], steps[CLIENTS], key[4 * CLIENTS];
} problem;

/* Client c's batches, rows in order; a NAN ends a batch early (its padding). */
static void put_client(problem *d, int c, const float rows[STEPS][BATCH], int steps, float num_examples) {
    for (int t = 0; t < STEPS; t++)
        for (int i = 0; i < BATCH; i++) {
            int k = (c * STEPS + t) * BATCH + i;
            bool real = t < steps && !isnan(rows[t][i]);
            d->x[k] = real ? rows[t][i] : 0, d->mask[k] = real;
        }
    d->steps[c] = steps, d->num_examples[c] = num_examples;
}

/* The round's inputs, as fedc_algorithm_round makes them, for the model {w}. */
static fedc_round make_round(fedc_program *p, const fedc_algorithm *a) {
    fedc_round r = {.alg = a, .p = p};
    fedc_program *scratch = NULL;
    if (fedc_program_create(&scratch)) return r;
    fedc_tree *params = fedc_tree_new(scratch), *state = NULL;
    fedc_tree_set(scratch, params, "w", fedc_input(scratch, "w", fedc__placed(fedc_type_scalar(FEDC_F32), FEDC_SERVER)));
    CHECK_OK(fedc__mime_server_init(NULL, a, scratch, params, &state));
    r.server = fedc_tree_input(p, "server", state, FEDC_SERVER);
    fedc_program_destroy(scratch);
    int64_t sb[2] = {STEPS, BATCH};
    const struct { const char *name; fedc_type t; } in[] = {
        {"x", fedc_type_make(FEDC_F32, 2, sb)}, {"y", fedc_type_make(FEDC_I32, 2, sb)},
        {"mask", fedc_type_make(FEDC_F32, 2, sb)}, {"steps", fedc_type_scalar(FEDC_I32)},
        {"key", fedc_type_make(FEDC_I32, 1, (int64_t[]){4})},
    };
    r.data = fedc_tree_new(p);
    for (size_t i = 0; i < sizeof in / sizeof *in; i++)
        fedc_tree_set(p, r.data, in[i].name, fedc_input(p, in[i].name, fedc__placed(in[i].t, FEDC_CLIENTS)));
    return r;
}

/* Binds the data and, where the program has them, meta/num_examples and the
 * server's w and momentum trace. */
static fedc_status bind(fedc_executor *ex, const fedc_program *p, const problem *d, const float *w, const float *trace) {
    const char *names[5] = {"x", "y", "mask", "steps", "key"};
    const void *data[5] = {d->x, d->y, d->mask, d->steps, d->key};
    fedc_status st = FEDC_OK;
    for (int i = 0; !st && i < 5; i++) st = fedc_executor_bind(ex, names[i], data[i]);
    if (!st && fedc_program_find_input(p, "meta/num_examples") != FEDC_NONE)
        st = fedc_executor_bind(ex, "meta/num_examples", d->num_examples);
    if (!st) st = fedc_executor_bind(ex, "server/params/w", w);
    if (!st && fedc_program_find_input(p, "server/opt/trace/w") != FEDC_NONE)
        st = fedc_executor_bind(ex, "server/opt/trace/w", trace);
    return st;
}

/* Output `name` (n floats) into out. */
static fedc_status read(const fedc_executor *ex, const char *name, float *out, int n) {
    const void *v = NULL;
    fedc_status st = fedc_executor_output(ex, name, &v, NULL);
    if (!st) memcpy(out, v, (size_t)n * sizeof *out);
    return st;
}

typedef struct outcome {
    float w, trace;             /* the new server state */
    float norm[CLIENTS];        /* FedJAX's delta_l2_norm */
    float clipped[CLIENTS];     /* clipped_delta_l2_norm (with clipping) */
} outcome;

/* One round of `round` (Mime's or MimeLite's builder) from w (and a momentum
 * trace) on d. */
static fedc_status run_round(fedc__mime_round_fn round, const fedc_algorithm *a, const problem *d, float w, float trace,
                             outcome *o) {
    fedc_program *p = NULL, *objective = fedjax_objective();
    fedc_executor *ex = NULL;
    fedc_status st = objective ? fedc_program_create(&p) : FEDC_EINVAL;
    fedc_tree *diag = NULL;
    if (!st) {
        fedc_round r = make_round(p, a);
        st = round(&r, objective, &diag);
    }
    if (!st) st = fedc_tree_output(p, "diag", diag);
    if (!st) st = fedc_executor_create(&ex, p, &(fedc_exec_options){.clients = CLIENTS});
    if (!st) st = bind(ex, p, d, &w, &trace);
    if (!st) st = fedc_executor_run(ex);
    if (!st) st = read(ex, "server/params/w", &o->w, 1);
    if (!st) st = read(ex, "diag/delta_l2_norm", o->norm, CLIENTS);
    if (!st && fedc_program_find_output(p, "server/opt/trace/w") != FEDC_NONE)
        st = read(ex, "server/opt/trace/w", &o->trace, 1);
    if (!st && fedc_program_find_output(p, "diag/clipped_delta_l2_norm") != FEDC_NONE)
        st = read(ex, "diag/clipped_delta_l2_norm", o->clipped, CLIENTS);
    fedc_executor_destroy(ex);
    fedc_program_destroy(p);
    fedc_program_destroy(objective);
    return st;
}

/* FedJAX's tests: base optimizer sgd(1.0), server_learning_rate 0.2. */
static fedc_algorithm fedjax_algorithm(const fedc_algorithm_def *def) {
    fedc_algorithm a = {.def = def, .client_opt = fedc_optimizer_defaults(FEDC_OPT_SGD, 1.0),
                        .server_opt = fedc_optimizer_defaults(FEDC_OPT_SGD, 1.0), .batch_size = BATCH,
                        .max_steps = STEPS};
    CHECK_OK(fedc_algorithm_set(&a, "server_learning_rate", 0.2));
    return a;
}

/* npt.assert_allclose's default tolerance (rtol 1e-7): FedJAX's f32 values to the bit, or one rounding off. */
#define CHECK_ALLCLOSE(a, b) CHECK_MSG(fabs((double)(a) - (double)(b)) <= 1e-7 * fabs((double)(b)), \
                                       "%s = %.9g, FedJAX's %.9g", #a, (double)(a), (double)(b))

/* mime_test's clients: x = [2, 4, 6] and [8, 10], as padded_batch(2) batches them. */
static void mime_clients(problem *d) {
    memset(d, 0, sizeof *d);
    put_client(d, 0, (const float[STEPS][BATCH]){{2, 4}, {6, NAN}}, 2, 3);
    put_client(d, 1, (const float[STEPS][BATCH]){{8, 10}, {NAN, NAN}}, 1, 2);
}

/* A program built by hand on FedJAX's objective, for the tests of pieces. */
typedef struct piece {
    fedc_algorithm a;
    fedc_program *p, *objective;
    fedc_round r;
    fedc_executor *ex;
} piece;

static void piece_open(piece *k, const fedc_algorithm_def *def) {
    memset(k, 0, sizeof *k);
    k->a = fedjax_algorithm(def);
    k->objective = fedjax_objective();
    CHECK_OK(fedc_program_create(&k->p));
    k->r = make_round(k->p, &k->a);
}

/* Plans k's program and binds d and the server's w. */
static fedc_status piece_plan(piece *k, const problem *d, const float *w) {
    fedc_status st = fedc_executor_create(&k->ex, k->p, &(fedc_exec_options){.clients = CLIENTS});
    return st ? st : bind(k->ex, k->p, d, w, NULL);
}

static void piece_close(piece *k) {
    fedc_executor_destroy(k->ex);
    fedc_program_destroy(k->p);
    fedc_program_destroy(k->objective);
}

/* mime_test.test_create_grads_for_each_client: FedJAX returns each client's sum of
 * count * gradient (12, 18) and count (3, 2); fedc_round_gradients their quotient. */
static void test_grads_for_each_client(void) {
    problem d;
    mime_clients(&d);
    piece k;
    piece_open(&k, &fedc_algorithm_mime);
    fedc_tree *out = NULL, *x = fedc_tree_subtree(k.p, k.r.server, "params");
    CHECK_OK(fedc__round_gradients_with(&k.r, k.objective, fedc_tree_broadcast(k.p, x), &out));
    CHECK_OK(fedc_tree_output(k.p, NULL, out));
    float w = 4, grad[CLIENTS] = {0}, n[CLIENTS] = {0};
    CHECK_OK(piece_plan(&k, &d, &w));
    CHECK_OK(fedc_executor_run(k.ex));
    CHECK_OK(read(k.ex, "grad/w", grad, CLIENTS));
    CHECK_OK(read(k.ex, "examples", n, CLIENTS));
    CHECK_MSG(grad[0] * n[0] == 12 && n[0] == 3, "client 0: grad %g x %g examples, FedJAX's 12 / 3", grad[0], n[0]);
    CHECK_MSG(grad[1] * n[1] == 18 && n[1] == 2, "client 1: grad %g x %g examples, FedJAX's 18 / 2", grad[1], n[1]);
    piece_close(&k);
}

/* mime_test's clients as shuffle_repeat_batch(2, 1 epoch) batches them for training
 * (FedJAX's test_create_train_for_each_client writes them out): client 0's second
 * batch is filled from the next epoch's shuffle. */
static void mime_train_clients(problem *d) {
    memset(d, 0, sizeof *d);
    put_client(d, 0, (const float[STEPS][BATCH]){{6, 4}, {2, 2}}, 2, 3);
    put_client(d, 1, (const float[STEPS][BATCH]){{10, 8}, {NAN, NAN}}, 1, 2);
}

/* mime_test.test_create_train_for_each_client: from w 4 with control variate 6 on
 * the training batches, the deltas are 12 and 6. */
static void test_mime_train_for_each_client(void) {
    problem d;
    mime_train_clients(&d);
    piece k;
    piece_open(&k, &fedc_algorithm_mime);
    fedc_tree *out = NULL, *c = fedc_tree_input(k.p, "c", fedc_tree_subtree(k.p, k.r.server, "params"), FEDC_SERVER);
    CHECK_OK(fedc__mime_client_training(&k.r, k.objective, c, &out));
    CHECK_OK(fedc_tree_output(k.p, "delta", fedc_tree_subtree(k.p, out, "delta")));
    float w = 4, cv = 6, delta[CLIENTS] = {0};
    CHECK_OK(piece_plan(&k, &d, &w));
    CHECK_OK(fedc_executor_bind(k.ex, "c/w", &cv));
    CHECK_OK(fedc_executor_run(k.ex));
    CHECK_OK(read(k.ex, "delta/w", delta, CLIENTS));
    CHECK_ALLCLOSE(delta[0], 12.f);
    CHECK_ALLCLOSE(delta[1], 6.f);
    piece_close(&k);
}

/* Where fedc differs by design: on the batches a fedc round has, FedJAX's training
 * batches (client 0's second one repeats an example to fill it), the full gradient
 * counts that example twice: c = (6+4+2+2 + 10+8) / 6, the deltas 2c and c, and w
 * = 4 - 0.2 (3 * 2c + 2 * c) / 5 = 2.29333 instead of FedJAX's 2.08. */
static void test_mime_on_fedc_batches(void) {
    problem d;
    mime_train_clients(&d);
    fedc_algorithm a = fedjax_algorithm(&fedc_algorithm_mime);
    outcome o;
    CHECK_OK(run_round(fedc__mime_round_with, &a, &d, 4, 0, &o));
    double c = 32.0 / 6;
    CHECK_NEAR(o.norm[0], 2 * c, 1e-6);
    CHECK_NEAR(o.norm[1], c, 1e-6);
    CHECK_NEAR(o.w, 4 - 0.2 * (3 * 2 * c + 2 * c) / 5, 1e-6);
}

/* mime_lite_test's clients, on the training batches FedJAX's test of
 * train_for_each_client writes out: [0.6, 0.4], [0.2, 0.2] and [0.1, 0.8]. */
static void mimelite_clients(problem *d) {
    memset(d, 0, sizeof *d);
    put_client(d, 0, (const float[STEPS][BATCH]){{0.6f, 0.4f}, {0.2f, 0.2f}}, 2, 3);
    put_client(d, 1, (const float[STEPS][BATCH]){{0.1f, 0.8f}, {NAN, NAN}}, 1, 2);
}

/* FedJAX's tests of whole rounds, with their values:
 * - mime_test.test_mime: w 4 -> 2.08, client delta norms 12 and 6. The full gradient
 *   is over padded_batch's batches, as FedJAX's (c = 6); FedJAX trains on
 *   shuffle_repeat_batch's (mime_train_clients), fedc on the same padded ones, which
 *   for this loss changes nothing: every step is w -= g(w) - g(x) + c = c.
 * - mime_lite_test.test_mime_lite (and test_create_train_for_each_client's deltas):
 *   w 4 -> 3.8799999, delta norms 0.70000005 and 0.45000005.
 * - mime_lite_test.test_client_delta_clip_norm: clipped to 0.5, w 4 -> 3.904, the
 *   clipped norms 0.5 and 0.45000005 (client 1's is under the threshold). */
static void test_fedjax_rounds(void) {
    static const struct {
        const char *name;
        fedc__mime_round_fn round;
        const fedc_algorithm_def *def;
        void (*clients)(problem *d);
        double clip;
        float w, norm[CLIENTS], clipped[CLIENTS];
    } cases[] = {
        {"test_mime", fedc__mime_round_with, &fedc_algorithm_mime, mime_clients, 0, 2.08f, {12.f, 6.f}, {0}},
        {"test_mime_lite", fedc__mimelite_round_with, &fedc_algorithm_mimelite, mimelite_clients, 0, 3.8799999f,
         {0.70000005f, 0.45000005f}, {0}},
        {"test_client_delta_clip_norm", fedc__mimelite_round_with, &fedc_algorithm_mimelite, mimelite_clients, 0.5,
         3.904f, {0.70000005f, 0.45000005f}, {0.5f, 0.45000005f}},
    };
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        problem d;
        cases[k].clients(&d);
        fedc_algorithm a = fedjax_algorithm(cases[k].def);
        if (cases[k].clip > 0) CHECK_OK(fedc_algorithm_set(&a, "client_delta_clip_norm", cases[k].clip));
        outcome o = {0};
        printf("    %s\n", cases[k].name);
        CHECK_OK(run_round(cases[k].round, &a, &d, 4, 0, &o));
        CHECK_ALLCLOSE(o.w, cases[k].w);
        for (int i = 0; i < CLIENTS; i++) {
            CHECK_ALLCLOSE(o.norm[i], cases[k].norm[i]);
            if (cases[k].clip > 0) CHECK_ALLCLOSE(o.clipped[i], cases[k].clipped[i]);
        }
    }
}

/* The base optimizer's state (momentum 0.9: optax's trace' = g + 0.9 trace) is the
 * server's: the clients apply it frozen (every step w -= g + 0.9 trace), the server
 * advances it with the full gradient. Two rounds on FedJAX's problems, by hand:
 * Mime (c = 6): round 1 is SGD's (2.08, trace 6); round 2 steps 6 + 5.4 each, deltas
 * 22.8 and 11.4, w = 2.08 - 0.2 * 18.24, trace 6 + 0.9 * 6. MimeLite (c = 2.3 / 6
 * over fedc's batches): round 2's deltas add 0.9 c per step to 0.7 and 0.45. */
static void test_base_optimizer_state(void) {
    problem d;
    mime_clients(&d);
    fedc_algorithm a = fedjax_algorithm(&fedc_algorithm_mime);
    a.client_opt = fedc_optimizer_defaults(FEDC_OPT_MOMENTUM, 1.0);
    outcome o1, o2;
    CHECK_OK(run_round(fedc__mime_round_with, &a, &d, 4, 0, &o1));
    CHECK_ALLCLOSE(o1.w, 2.08f);
    CHECK_NEAR(o1.trace, 6, 1e-6);
    CHECK_OK(run_round(fedc__mime_round_with, &a, &d, o1.w, o1.trace, &o2));
    CHECK_NEAR(o2.norm[0], 22.8, 1e-6);
    CHECK_NEAR(o2.norm[1], 11.4, 1e-6);
    CHECK_NEAR(o2.w, 2.08 - 0.2 * 18.24, 1e-6);
    CHECK_NEAR(o2.trace, 11.4, 1e-6);

    mimelite_clients(&d);
    a = fedjax_algorithm(&fedc_algorithm_mimelite);
    a.client_opt = fedc_optimizer_defaults(FEDC_OPT_MOMENTUM, 1.0);
    CHECK_OK(run_round(fedc__mimelite_round_with, &a, &d, 4, 0, &o1));
    CHECK_ALLCLOSE(o1.w, 3.8799999f);
    double c = (0.6 + 0.4 + 0.2 + 0.2 + 0.1 + 0.8) / 6;
    CHECK_NEAR(o1.trace, c, 1e-6);
    CHECK_OK(run_round(fedc__mimelite_round_with, &a, &d, o1.w, o1.trace, &o2));
    double d0 = 0.7 + 2 * 0.9 * c, d1 = 0.45 + 0.9 * c;
    CHECK_NEAR(o2.norm[0], d0, 1e-6);
    CHECK_NEAR(o2.norm[1], d1, 1e-6);
    CHECK_NEAR(o2.w, 3.88 - 0.2 * (3 * d0 + 2 * d1) / 5, 1e-6);
    CHECK_NEAR(o2.trace, c + 0.9 * c, 1e-6);
}

/* The hyperparameters, the round's interface on a real model, and the server
 * optimizer Mime has not got. */
static void test_interface(void) {
    fedc_algorithm a = {.def = &fedc_algorithm_mimelite};
    CHECK(fedc_algorithm_hparam(&a, "server_learning_rate") == 1);
    CHECK(fedc_algorithm_hparam(&a, "client_delta_clip_norm") == 0);
    CHECK_ERR(fedc_algorithm_set(&a, "client_delta_clip_norm", -1), FEDC_EINVAL, "client_delta_clip_norm must be in");
    CHECK(fedc_algorithm_find("mime") == &fedc_algorithm_mime && fedc_algorithm_find("mimelite") == &fedc_algorithm_mimelite);

    fedc_model *m;
    CHECK_OK(fedc_model_create(&m, "heart", &(fedc_model_options){.num_classes = 2, .input_dim = 13}));
    const fedc_algorithm_def *defs[2] = {&fedc_algorithm_mime, &fedc_algorithm_mimelite};
    for (int i = 0; i < 2; i++) {
        a = (fedc_algorithm){.def = defs[i], .client_opt = fedc_optimizer_defaults(FEDC_OPT_ADAM, 0.01),
                             .server_opt = fedc_optimizer_defaults(FEDC_OPT_SGD, 1), .batch_size = 4, .max_steps = 3};
        fedc_program *round = NULL;
        CHECK_OK(fedc_algorithm_round(m, &a, &round));
        const char *in[] = {"server/params/dense1/w", "server/opt/mu/dense1/w", "server/opt/count", "meta/num_examples"};
        for (size_t k = 0; round && k < sizeof in / sizeof *in; k++)
            CHECK_MSG(fedc_program_find_input(round, in[k]) != FEDC_NONE, "%s: no input %s", defs[i]->name, in[k]);
        CHECK(round && fedc_program_find_output(round, "server/opt/nu/dense1/b") != FEDC_NONE);
        fedc_program_destroy(round);
        a.server_opt = fedc_optimizer_defaults(FEDC_OPT_ADAM, 0.01);
        CHECK_ERR(fedc_algorithm_round(m, &a, &round), FEDC_EINVAL, "it needs --server-opt sgd --server-lr 1, not adam");
    }
    fedc_model_destroy(m);
}

/* ------------------------------------------------------------ training -- */

/* The real silos where ../shared/data has them, else the small ones. */
#define HEART fedc_test_data("heart-disease-uci")

static fedc_train_config heart_config(const fedc_algorithm_def *def, const char *out) {
    fedc_train_config c;
    fedc_train_defaults(&c);
    c.data = HEART;
    c.model = "heart";
    c.rounds = 20;
    c.clients_per_round = 4;
    c.algorithm.def = def;
    c.algorithm.batch_size = 16;
    c.algorithm.client_opt = fedc_optimizer_defaults(FEDC_OPT_MOMENTUM, 0.02);
    c.eval_every = 20;
    c.out_dir = out;
    c.quiet = true;
    c.threads = 1;
    return c;
}

/* Both train the heart model past chance, and a run resumed from a checkpoint (the
 * server's optimizer state in it) ends where an uninterrupted one does. */
static void test_heart_training(void) {
    struct stat s;
    if (!HEART || stat(HEART, &s)) {
        fedc_test_fail(__FILE__, __LINE__, "the heart-disease data are not there");
        return;
    }
    const fedc_algorithm_def *defs[2] = {&fedc_algorithm_mime, &fedc_algorithm_mimelite};
    for (int i = 0; i < 2; i++) {
        fedc_train_config c = heart_config(defs[i], fedc_test_tmp("heart"));
        fedc_train_result first, r;
        c.rounds = 1, c.eval_every = 1;
        CHECK_OK(fedc_train(&c, &first));
        c = heart_config(defs[i], fedc_test_tmp("heart"));
        CHECK_OK(fedc_train(&c, &r));
        printf("    %s: train loss %.4f after 1 round, %.4f after 20; test accuracy %.3f\n", defs[i]->name,
               first.train_loss, r.train_loss, r.test_accuracy);
        CHECK_MSG(r.train_loss < 0.9 * first.train_loss, "%s: loss %g after 20 rounds, %g after 1", defs[i]->name,
                  r.train_loss, first.train_loss);
        CHECK_MSG(r.test_accuracy > 0.7 && r.test_loss < 0.693, "%s: accuracy %.3f, loss %.3f", defs[i]->name,
                  r.test_accuracy, r.test_loss);

        fedc_train_config whole = heart_config(defs[i], fedc_test_tmp("whole"));
        fedc_train_config part = heart_config(defs[i], fedc_test_tmp("part"));
        whole.rounds = part.rounds = 6, whole.eval_every = part.eval_every = 6;
        whole.checkpoint_every = part.checkpoint_every = 3;
        fedc_train_result rw, rp;
        CHECK_OK(fedc_train(&whole, &rw));
        part.rounds = 3;
        CHECK_OK(fedc_train(&part, &rp));
        part.rounds = 6, part.resume = true;
        CHECK_OK(fedc_train(&part, &rp));
        CHECK_EQ_INT(rp.rounds_run, 3);
        CHECK_MSG(rp.test_loss == rw.test_loss && rp.train_loss == rw.train_loss, "%s: resumed %.17g, whole %.17g",
                  defs[i]->name, rp.test_loss, rw.test_loss);
    }
}

int main(int argc, char **argv) {
    static const fedc_test tests[] = {
        {"grads for each client", test_grads_for_each_client},
        {"fedjax rounds", test_fedjax_rounds},
        {"mime train for each client", test_mime_train_for_each_client},
        {"mime on fedc's batches", test_mime_on_fedc_batches},
        {"base optimizer state", test_base_optimizer_state},
        {"interface", test_interface},
        {"heart training", test_heart_training},
    };
    if (!fedc_test_tmpdir("mime")) return 1;
    int rc = fedc_test_main(argc, argv, tests, FEDC_COUNT_OF(tests));
    fedc_test_tmpdir_remove();
    return rc;
}
