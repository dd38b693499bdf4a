/* Rounds built by hand on FedJAX's tiny problems, for the tests of algorithms'
 * internal builders (tests/test_agnostic_fedavg.c, tests/test_hypcluster.c): a
 * fedc_round whose server state and data are inputs the test names and binds,
 * with its own objective instead of a model's, run on the executor. */
#ifndef FEDC_TEST_HAND_ROUND_H
#define FEDC_TEST_HAND_ROUND_H

#include <string.h>

#include "fl/fl.h"
#include "harness.h"

enum { HAND_MAX_CLIENTS = 8, HAND_MAX_ROWS = 64, HAND_MAX_BINDS = 24 };

typedef struct hand {
    fedc_program *p;
    fedc_round r;
    fedc_algorithm a;
    fedc_executor *ex;
    int clients;
    int64_t steps, batch, cols;
    /* the data, client after client: x [steps, batch, cols], mask and y [steps, batch] */
    float x[HAND_MAX_CLIENTS * HAND_MAX_ROWS * 4], mask[HAND_MAX_CLIENTS * HAND_MAX_ROWS];
    int32_t y[HAND_MAX_CLIENTS * HAND_MAX_ROWS], nsteps[HAND_MAX_CLIENTS], key[4 * HAND_MAX_CLIENTS];
    const char *bind_name[HAND_MAX_BINDS];
    const void *bind_data[HAND_MAX_BINDS];
    int nbind;
} hand;

static fedc_type hand_type(fedc_dtype dt, int rank, const int64_t *dims, fedc_placement pl) {
    fedc_type t = fedc_type_make(dt, rank, dims);
    t.placement = pl;
    return t;
}

/* A round of `clients` clients, each with `steps` batches of `batch` rows of
 * `cols` floats (x), labels y and a key (with_key) as r.data; r.server empty. */
static void hand_begin(hand *h, const fedc_algorithm_def *def, int clients, int64_t steps, int64_t batch, int64_t cols,
                       bool with_key) {
    memset(h, 0, sizeof *h);
    h->clients = clients, h->steps = steps, h->batch = batch, h->cols = cols;
    h->a.def = def;
    h->a.client_opt = fedc_optimizer_defaults(FEDC_OPT_SGD, 1.0);
    h->a.server_opt = fedc_optimizer_defaults(FEDC_OPT_SGD, 1.0);
    h->a.batch_size = batch, h->a.max_steps = steps;
    CHECK_OK(fedc_program_create(&h->p));
    fedc_program *p = h->p;
    h->r = (fedc_round){.alg = &h->a, .p = p, .server = fedc_tree_new(p), .data = fedc_tree_new(p)};
    int64_t d[3] = {steps, batch, cols};
    fedc_tree_set(p, h->r.data, "x", fedc_input(p, "x", hand_type(FEDC_F32, 3, d, FEDC_CLIENTS)));
    fedc_tree_set(p, h->r.data, "y", fedc_input(p, "y", hand_type(FEDC_I32, 2, d, FEDC_CLIENTS)));
    fedc_tree_set(p, h->r.data, "mask", fedc_input(p, "mask", hand_type(FEDC_F32, 2, d, FEDC_CLIENTS)));
    fedc_tree_set(p, h->r.data, "steps", fedc_input(p, "steps", hand_type(FEDC_I32, 0, NULL, FEDC_CLIENTS)));
    if (with_key) fedc_tree_set(p, h->r.data, "key", fedc_input(p, "key", hand_type(FEDC_I32, 1, (int64_t[]){4}, FEDC_CLIENTS)));
}

/* Binds name to data when the program runs. */
static void hand_bind(hand *h, const char *name, const void *data) {
    if (h->nbind < HAND_MAX_BINDS) h->bind_name[h->nbind] = name, h->bind_data[h->nbind++] = data;
}

/* An f32 input server/<leaf> of r.server, bound to data. */
static fedc_value hand_server(hand *h, const char *leaf, int rank, const int64_t *dims, const float *data) {
    char name[128];
    snprintf(name, sizeof name, "server/%s", leaf);
    fedc_value v = fedc_input(h->p, name, hand_type(FEDC_F32, rank, dims, FEDC_SERVER));
    fedc_tree_set(h->p, h->r.server, leaf, v);
    hand_bind(h, fedc_program_input_name(h->p, fedc_program_num_inputs(h->p) - 1), data);
    return v;
}

/* Client c's examples: n rows of cols floats (labels y, NULL: 0), in order,
 * `epochs` times, into its batches (a last short batch is masked). */
static void hand_client(hand *h, int c, const float *rows, const int32_t *y, int n, int epochs) {
    int64_t at = (int64_t)c * h->steps * h->batch, total = (int64_t)n * epochs;
    for (int64_t i = 0; i < total && i < h->steps * h->batch; i++) {
        memcpy(&h->x[(at + i) * h->cols], &rows[(i % n) * h->cols], (size_t)h->cols * sizeof(float));
        h->y[at + i] = y ? y[i % n] : 0;
        h->mask[at + i] = 1;
    }
    h->nsteps[c] = (int32_t)((total + h->batch - 1) / h->batch);
}

/* Runs the program with the data and the bound inputs. */
static bool hand_run(hand *h) {
    fedc_status st = fedc_program_status(h->p);
    if (!st) st = fedc_executor_create(&h->ex, h->p, &(fedc_exec_options){.clients = h->clients});
    const char *names[5] = {"x", "y", "mask", "steps", "key"};
    const void *data[5] = {h->x, h->y, h->mask, h->nsteps, h->key};
    for (int i = 0; !st && i < 5; i++)
        if (fedc_program_find_input(h->p, names[i]) != FEDC_NONE) st = fedc_executor_bind(h->ex, names[i], data[i]);
    for (int i = 0; !st && i < h->nbind; i++) st = fedc_executor_bind(h->ex, h->bind_name[i], h->bind_data[i]);
    if (!st) st = fedc_executor_run(h->ex);
    CHECK_MSG(!st, "hand round: %s", fedc_errmsg());
    return !st;
}

static const float *hand_out(hand *h, const char *name) {
    const void *v = NULL;
    fedc_status st = fedc_executor_output(h->ex, name, &v, NULL);
    CHECK_MSG(!st, "output %s: %s", name, fedc_errmsg());
    static const float nan4[HAND_MAX_CLIENTS * 8] = {NAN};
    return st ? nan4 : v;
}

static void hand_end(hand *h) {
    fedc_executor_destroy(h->ex);
    fedc_program_destroy(h->p);
}

/* x[:, col] of a batch x [batch, cols], as [batch]. */
static fedc_value hand_column(fedc_program *p, fedc_value x, int64_t batch, int64_t col) {
    return fedc_reshape(p, fedc_slice(p, x, (int64_t[]){0, col}, (int64_t[]){batch, col + 1}), 1, &batch);
}

#endif
