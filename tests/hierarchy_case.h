/* What the tests of the placement hierarchy share (tests/test_hierarchy.c: its
 * rules and run time; tests/test_hierarchy_ad.c: the one-group program against
 * the flat one, and derivatives): typed values, one run of a program, and the
 * worked program of docs/federated.md with its inputs. */
#ifndef FEDC_TEST_HIERARCHY_CASE_H
#define FEDC_TEST_HIERARCHY_CASE_H

#include <string.h>

#include "fedc/exec.h"
#include "fedc/program.h"
#include "harness.h"

static inline fedc_type typed(fedc_dtype dt, fedc_placement pl, int rank, const int64_t *dims) {
    fedc_type t = fedc_type_make(dt, rank, dims);
    t.placement = pl;
    return t;
}

#define VEC(dt, pl, n) typed(dt, pl, 1, (int64_t[]){n})
#define SCALAR(dt, pl) typed(dt, pl, 0, NULL)

/* One run of p: inputs by name, then `nout` outputs copied to outs (bytes each
 * at most cap). Returns the status of create/run. */
typedef struct run_spec {
    int clients, groups, threads;
    const int *sizes;
    int nin;
    const char *const *names;
    const void *const *data;
} run_spec;

static inline fedc_status run(const fedc_program *p, const run_spec *r, int nout, const char *const *outs,
                              void *const *to, size_t cap) {
    fedc_executor *ex = NULL;
    fedc_exec_options o = {.clients = r->clients, .groups = r->groups, .group_sizes = r->sizes, .threads = r->threads};
    fedc_status st = fedc_executor_create(&ex, p, &o);
    for (int i = 0; !st && i < r->nin; i++) st = fedc_executor_bind(ex, r->names[i], r->data[i]);
    if (!st) st = fedc_executor_run(ex);
    for (int k = 0; !st && k < nout; k++) {
        const void *y;
        fedc_type t;
        st = fedc_executor_output(ex, outs[k], &y, &t);
        if (st) break;
        size_t n = fedc_type_bytes(&t);
        if (t.placement == FEDC_CLIENTS) n *= (size_t)r->clients;
        if (t.placement == FEDC_GROUPS) n *= (size_t)(r->groups ? r->groups : 1);
        memcpy(to[k], y, n < cap ? n : cap);
    }
    fedc_executor_destroy(ex);
    return st;
}

/* ------------------------------------------------------------ a program -- */

/* The worked program of docs/federated.md: each group averages its clients'
 * w * x (a map at the clients), scales by a group's own factor (a map at the
 * groups), and the server sums the groups' results weighted by group size. */
static inline fedc_program *worked_program(fedc_dtype dt) {
    fedc_program *p, *cb, *gb;
    if (fedc_program_create(&p) || fedc_program_create(&cb) || fedc_program_create(&gb)) return NULL;
    fedc_value w = fedc_input(p, "w", VEC(dt, FEDC_SERVER, 2));
    fedc_value x = fedc_input(p, "x", VEC(dt, FEDC_CLIENTS, 2));
    fedc_value a = fedc_input(p, "a", SCALAR(dt, FEDC_GROUPS));
    fedc_value cw = fedc_input(cb, "w", VEC(dt, FEDC_LOCAL, 2)), cx = fedc_input(cb, "x", VEC(dt, FEDC_LOCAL, 2));
    fedc_program_output(cb, "y", fedc_tanh(cb, fedc_mul(cb, cw, cx)));
    fedc_value ga = fedc_input(gb, "a", SCALAR(dt, FEDC_LOCAL)), gy = fedc_input(gb, "y", VEC(dt, FEDC_LOCAL, 2));
    fedc_program_output(gb, "z", fedc_mul(gb, fedc_square(gb, ga), gy));
    fedc_value wc = fedc_broadcast_down(p, fedc_broadcast_down(p, w)), y, z;
    fedc_map(p, cb, (fedc_value[]){wc, x}, 2, &y);
    fedc_value gmean = fedc_mean_up(p, y);
    fedc_map(p, gb, (fedc_value[]){a, gmean}, 2, &z);
    fedc_value top = fedc_weighted_mean_up(p, z, fedc_group_size(p, dt));
    fedc_value loss = fedc_reduce_sum(p, fedc_mul(p, top, top), NULL, -1, false);
    fedc_program_output(p, "loss", loss);
    fedc_program_output(p, "per_group", z);
    fedc_program_destroy(cb);
    fedc_program_destroy(gb);
    return p;
}

/* The worked program in f64 at w, a, x: its loss and per-group values. */
static inline fedc_status run_worked(const fedc_program *p, int threads, const double *w, const double *a,
                                     const double *x, double *loss, double *per_group) {
    const char *names[] = {"w", "a", "x"};
    const void *data[] = {w, a, x};
    run_spec r = {7, 3, threads, (int[]){3, 1, 3}, 3, names, data};
    return run(p, &r, 2, (const char *[]){"loss", "per_group"}, (void *[]){loss, per_group}, 6 * sizeof(double));
}

static const double W[2] = {0.7, -0.4}, A[3] = {1.5, -0.5, 2.0};
static const double X[14] = {0.3, 1.2, -0.8, 0.5, 1.1, -1.0, 0.2, 0.9, -0.6, 0.4, 1.3, 0.7, -0.2, -1.4};

#endif
