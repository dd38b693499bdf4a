/*
 * examples/hypergradient_round.h — the program examples/hypergradient.c tunes:
 * the clients' mean loss after one FedAvg round of linear regression, as a
 * function of the model and both learning rates (round_loss). A header of its
 * own so that tests/test_export.c exports this very program.
 */
#ifndef FEDC_EXAMPLE_HYPERGRADIENT_ROUND_H
#define FEDC_EXAMPLE_HYPERGRADIENT_ROUND_H

#include <stdio.h>
#include <stdlib.h>

#include "fedc/fedc.h"

enum { DIM = 4, CLIENTS = 6, STEPS = 3, BATCH = 5 };

#define HG_CHECK(st)                                                                    \
    do {                                                                             \
        fedc_status s_ = (st);                                                       \
        if (s_) {                                                                    \
            fprintf(stderr, "hypergradient: %s: %s\n", fedc_status_str(s_), fedc_errmsg()); \
            exit(2);                                                                 \
        }                                                                            \
    } while (0)

static fedc_type f64(fedc_placement pl, int rank, const int64_t *dims) {
    fedc_type t = fedc_type_make(FEDC_F64, rank, dims);
    t.placement = pl;
    return t;
}

/* mean squared error of x w against y: (w [DIM,1], x [n,DIM], y [n,1]) */
static fedc_value mse(fedc_program *p, fedc_value w, fedc_value x, fedc_value y) {
    fedc_value err = fedc_sub(p, fedc_matmul(p, x, w, false, false), y);
    return fedc_reduce_mean(p, fedc_square(p, err), NULL, -1, false);
}

/* One local step (w, lr, x_t, y_t) -> (w - lr grad, lr): lr rides along as a carry,
 * so the fold, and its derivative, see it. */
static fedc_program *local_step(void) {
    fedc_program *loss, *grad, *step;
    HG_CHECK(fedc_program_create(&loss));
    fedc_value w = fedc_input(loss, "w", f64(FEDC_LOCAL, 2, (int64_t[]){DIM, 1}));
    fedc_value x = fedc_input(loss, "x", f64(FEDC_LOCAL, 2, (int64_t[]){BATCH, DIM}));
    fedc_value y = fedc_input(loss, "y", f64(FEDC_LOCAL, 2, (int64_t[]){BATCH, 1}));
    HG_CHECK(fedc_program_output(loss, "loss", mse(loss, w, x, y)));
    HG_CHECK(fedc_grad(loss, "loss", (const char *[]){"w"}, 1, &grad));

    HG_CHECK(fedc_program_create(&step));
    fedc_value sw = fedc_input(step, "w", f64(FEDC_LOCAL, 2, (int64_t[]){DIM, 1}));
    fedc_value lr = fedc_input(step, "lr", f64(FEDC_LOCAL, 0, NULL));
    fedc_value sx = fedc_input(step, "x", f64(FEDC_LOCAL, 2, (int64_t[]){BATCH, DIM}));
    fedc_value sy = fedc_input(step, "y", f64(FEDC_LOCAL, 2, (int64_t[]){BATCH, 1})), r[2];
    HG_CHECK(fedc_program_inline(step, grad, (fedc_value[]){sw, sx, sy}, r));
    HG_CHECK(fedc_program_output(step, "w", fedc_sub(step, sw, fedc_mul(step, lr, r[1]))));
    HG_CHECK(fedc_program_output(step, "lr", lr));
    fedc_program_destroy(loss);
    fedc_program_destroy(grad);
    return step;
}

/* client(w, lr, xs, ys) = (w - fold(local_step)((w, lr), batches), examples) */
static fedc_program *client_update(void) {
    fedc_program *step = local_step(), *p;
    HG_CHECK(fedc_program_create(&p));
    fedc_value w = fedc_input(p, "w", f64(FEDC_LOCAL, 2, (int64_t[]){DIM, 1}));
    fedc_value lr = fedc_input(p, "lr", f64(FEDC_LOCAL, 0, NULL));
    fedc_value xs = fedc_input(p, "xs", f64(FEDC_LOCAL, 3, (int64_t[]){STEPS, BATCH, DIM}));
    fedc_value ys = fedc_input(p, "ys", f64(FEDC_LOCAL, 3, (int64_t[]){STEPS, BATCH, 1})), r[2];
    HG_CHECK(fedc_fold(p, step, (fedc_value[]){w, lr}, 2, (fedc_value[]){xs, ys}, 2, fedc_scalar(p, FEDC_I32, STEPS), r));
    HG_CHECK(fedc_program_output(p, "delta", fedc_sub(p, w, r[0])));
    HG_CHECK(fedc_program_output(p, "examples", fedc_scalar(p, FEDC_F64, STEPS * BATCH)));
    fedc_program_destroy(step);
    return p;
}

static fedc_program *client_loss(void) {
    fedc_program *p;
    HG_CHECK(fedc_program_create(&p));
    fedc_value w = fedc_input(p, "w", f64(FEDC_LOCAL, 2, (int64_t[]){DIM, 1}));
    fedc_value xs = fedc_input(p, "xs", f64(FEDC_LOCAL, 3, (int64_t[]){STEPS, BATCH, DIM}));
    fedc_value ys = fedc_input(p, "ys", f64(FEDC_LOCAL, 3, (int64_t[]){STEPS, BATCH, 1}));
    fedc_value x = fedc_reshape(p, xs, 2, (int64_t[]){STEPS * BATCH, DIM});
    fedc_value y = fedc_reshape(p, ys, 2, (int64_t[]){STEPS * BATCH, 1});
    HG_CHECK(fedc_program_output(p, "loss", mse(p, w, x, y)));
    return p;
}

/* loss after one FedAvg round, as a function of the model and both rates. */
static fedc_program *round_loss(void) {
    fedc_program *update = client_update(), *evaluate = client_loss(), *p;
    HG_CHECK(fedc_program_create(&p));
    fedc_value w = fedc_input(p, "w", f64(FEDC_SERVER, 2, (int64_t[]){DIM, 1}));
    fedc_value server_lr = fedc_input(p, "server_lr", f64(FEDC_SERVER, 0, NULL));
    fedc_value client_lr = fedc_input(p, "client_lr", f64(FEDC_SERVER, 0, NULL));
    fedc_value xs = fedc_input(p, "xs", f64(FEDC_CLIENTS, 3, (int64_t[]){STEPS, BATCH, DIM}));
    fedc_value ys = fedc_input(p, "ys", f64(FEDC_CLIENTS, 3, (int64_t[]){STEPS, BATCH, 1})), out[2], losses;

    HG_CHECK(fedc_map(p, update, (fedc_value[]){fedc_broadcast(p, w), fedc_broadcast(p, client_lr), xs, ys}, 4, out));
    fedc_value w_next = fedc_sub(p, w, fedc_mul(p, server_lr, fedc_weighted_mean(p, out[0], out[1])));
    HG_CHECK(fedc_map(p, evaluate, (fedc_value[]){fedc_broadcast(p, w_next), xs, ys}, 3, &losses));
    HG_CHECK(fedc_program_output(p, "loss", fedc_mean(p, losses)));
    fedc_program_destroy(update);
    fedc_program_destroy(evaluate);
    return p;
}

#endif
