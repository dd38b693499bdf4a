/* Rounds of an algorithm run by hand on the heart-disease model (dense 13 -> 2,
 * softmax cross-entropy) with fixed random data, the client state carried from
 * round to round as the training job carries it, and the model's loss gradient in
 * plain C, so that a test can compute a round's update itself from the clients'
 * models and compare. Shared by tests/test_fednova.c, test_feddyn.c, test_diloco.c. */
#ifndef FEDC_TEST_FL_ROUND_CASE_H
#define FEDC_TEST_FL_ROUND_CASE_H

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fedc/fedc.h"
#include "harness.h"

enum { CLIENTS = 3, STEPS = 6, BATCH = 4, FEATURES = 13, CLASSES = 2, SIZE = FEATURES * CLASSES + CLASSES };
enum { MAX_LEAVES = 8 };

/* One round's data: random features and labels, every example real. */
typedef struct round_data {
    float x[CLIENTS * STEPS * BATCH * FEATURES], mask[CLIENTS * STEPS * BATCH], num_examples[CLIENTS];
    float population;
    int32_t y[CLIENTS * STEPS * BATCH], steps[CLIENTS], key[4 * CLIENTS];
} round_data;

static inline void make_data(round_data *d, uint32_t seed, const int *steps) {
    uint32_t s = seed;
    for (size_t i = 0; i < sizeof d->x / sizeof *d->x; i++) {
        s = s * 1664525u + 1013904223u;
        d->x[i] = (float)((s >> 8) & 0xffff) / 65536.0f - 0.5f;
    }
    for (int i = 0; i < CLIENTS * STEPS * BATCH; i++) {
        s = s * 1664525u + 1013904223u;
        d->y[i] = (int32_t)((s >> 20) & 1), d->mask[i] = 1;
    }
    for (int c = 0; c < CLIENTS; c++)
        d->steps[c] = steps[c], d->num_examples[c] = (float)(100 * (c + 1));
    d->population = 10;
    memset(d->key, 0, sizeof d->key);
}

/* The gradient of client c's batch t's mean loss at w (params in the model's
 * order: dense1/w [13, 2], dense1/b [2]), in double. */
static inline void ref_grad(const round_data *d, int c, int t, const double *w, double *g) {
    memset(g, 0, SIZE * sizeof *g);
    const float *x = d->x + ((size_t)c * STEPS + t) * BATCH * FEATURES;
    const int32_t *y = d->y + ((size_t)c * STEPS + t) * BATCH;
    for (int e = 0; e < BATCH; e++) {
        double logit[CLASSES], mx = -1e300, z = 0;
        for (int k = 0; k < CLASSES; k++) {
            logit[k] = w[FEATURES * CLASSES + k];
            for (int f = 0; f < FEATURES; f++) logit[k] += x[e * FEATURES + f] * w[f * CLASSES + k];
            mx = fmax(mx, logit[k]);
        }
        for (int k = 0; k < CLASSES; k++) z += exp(logit[k] - mx);
        for (int k = 0; k < CLASSES; k++) {
            double dl = (exp(logit[k] - mx) / z - (y[e] == k)) / BATCH;
            g[FEATURES * CLASSES + k] += dl;
            for (int f = 0; f < FEATURES; f++) g[f * CLASSES + k] += x[e * FEATURES + f] * dl;
        }
    }
}

/* The algorithm's round program and state between rounds. */
typedef struct round_case {
    fedc_model *m;
    fedc_program *round;
    fedc_executor *ex;
    fedc_server_state *s;
    int nleaves, copies;
    char *leaf_name[MAX_LEAVES];      /* client/<leaf> (or group/<leaf>) */
    float *leaf[MAX_LEAVES];          /* copies (CLIENTS, or the groups) x the leaf's elements */
    int64_t leaf_size[MAX_LEAVES];
    float w0[SIZE];                   /* the model's seed-1 initialisation */
} round_case;

static inline int64_t numel(fedc_type t) {
    int64_t n = 1;
    for (int i = 0; i < t.rank; i++) n *= t.dims[i];
    return n;
}

/* The state's inputs, `copies` values of each (the clients' or the groups'), each
 * starting from init's (client_init's or group_init's; NULL: none). */
static inline fedc_status case_state(round_case *k, fedc_program *init, int copies) {
    fedc_executor *ix = NULL;
    k->copies = copies;
    if (!init) return FEDC_OK;
    fedc_status st = fedc_executor_create(&ix, init, &(fedc_exec_options){.clients = 1});
    if (!st) st = fedc_executor_run(ix);
    for (int i = 0; !st && i < fedc_program_num_outputs(init) && i < MAX_LEAVES; i++) {
        const char *name = fedc_program_output_name(init, i);
        int64_t n = numel(fedc_value_type(init, fedc_program_output_value(init, i)));
        const void *v;
        k->leaf_name[i] = strdup(name), k->leaf_size[i] = n;
        k->leaf[i] = calloc((size_t)(n * copies), sizeof(float));
        k->nleaves = i + 1;
        st = fedc_executor_output(ix, name, &v, NULL);
        for (int c = 0; !st && c < copies; c++) memcpy(k->leaf[i] + c * n, v, (size_t)n * sizeof(float));
        if (!st) st = fedc_executor_bind(k->ex, name, k->leaf[i]);
    }
    fedc_executor_destroy(ix);
    fedc_program_destroy(init);
    return st;
}

/* The client state's inputs, each client starting from client_init's values. */
static inline fedc_status case_client_state(round_case *k, const fedc_algorithm *a) {
    fedc_program *init = NULL;
    fedc_status st = fedc_algorithm_client_init(k->m, a, &init);
    return st ? st : case_state(k, init, CLIENTS);
}

static inline fedc_status case_open(round_case *k, const fedc_algorithm *a) {
    memset(k, 0, sizeof *k);
    fedc_status st = fedc_model_create(&k->m, "heart", &(fedc_model_options){.num_classes = 2, .input_dim = FEATURES});
    if (!st) st = fedc_model_init(k->m, 1, k->w0);
    if (!st) st = fedc_algorithm_round(k->m, a, &k->round);
    if (!st) st = fedc_executor_create(&k->ex, k->round, &(fedc_exec_options){.clients = CLIENTS});
    if (!st) st = fedc_server_state_create(&k->s, k->m, a, k->w0);
    if (!st) st = fedc_server_state_bind(k->s, k->ex);
    if (!st) st = case_client_state(k, a);
    return st;
}

static inline void case_close(round_case *k) {
    for (int i = 0; i < k->nleaves; i++) free(k->leaf_name[i]), free(k->leaf[i]);
    fedc_server_state_destroy(k->s);
    fedc_executor_destroy(k->ex);
    fedc_program_destroy(k->round);
    fedc_model_destroy(k->m);
    memset(k, 0, sizeof *k);
}

/* Client (or group) c's values of state leaf `name` (client/<name>), or NULL. */
static inline float *case_leaf(const round_case *k, const char *name, int c) {
    for (int i = 0; i < k->nleaves; i++)
        if (!strcmp(strchr(k->leaf_name[i], '/') + 1, name)) return k->leaf[i] + c * k->leaf_size[i];
    return NULL;
}

/* One round on d: the server state and the client state move on; the new model in w. */
static inline fedc_status case_run(round_case *k, round_data *d, float *w) {
    const char *names[5] = {"x", "y", "mask", "steps", "key"};
    const void *data[5] = {d->x, d->y, d->mask, d->steps, d->key};
    fedc_status st = FEDC_OK;
    for (int i = 0; !st && i < 5; i++) st = fedc_executor_bind(k->ex, names[i], data[i]);
    if (!st && fedc_program_find_input(k->round, "meta/num_examples") != FEDC_NONE)
        st = fedc_executor_bind(k->ex, "meta/num_examples", d->num_examples);
    if (!st && fedc_program_find_input(k->round, "meta/population") != FEDC_NONE)
        st = fedc_executor_bind(k->ex, "meta/population", &d->population);
    if (!st) st = fedc_executor_run(k->ex);
    if (!st) st = fedc_server_state_update(k->s, k->ex);
    for (int i = 0; !st && i < k->nleaves; i++) {
        const void *v;
        st = fedc_executor_output(k->ex, k->leaf_name[i], &v, NULL);
        if (!st) memcpy(k->leaf[i], v, (size_t)(k->leaf_size[i] * k->copies) * sizeof(float));
    }
    if (!st) st = fedc_server_state_params(k->s, w);
    return st;
}

/* One round of `a` from the seed-1 model; the new model in w. */
static inline fedc_status run_one_round(const fedc_algorithm *a, round_data *d, float *w) {
    round_case k;
    fedc_status st = case_open(&k, a);
    if (!st) st = case_run(&k, d, w);
    case_close(&k);
    return st;
}

static inline fedc_algorithm heart_algorithm(const fedc_algorithm_def *def, fedc_optimizer client) {
    return (fedc_algorithm){.def = def, .client_opt = client, .server_opt = fedc_optimizer_defaults(FEDC_OPT_SGD, 1.0),
                            .batch_size = BATCH, .max_steps = STEPS};
}

static inline double max_abs_diff(const float *a, const double *b, int n) {
    double m = 0;
    for (int i = 0; i < n; i++) m = fmax(m, fabs((double)a[i] - b[i]));
    return m;
}

#endif
