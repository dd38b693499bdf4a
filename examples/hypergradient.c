/*
 * examples/hypergradient.c — tuning FedAvg's learning rates by gradient descent
 * through a whole round.
 *
 * A FedAvg round is one program: broadcast the model and the client learning rate,
 * map each client's local SGD (a fold over its batches), weighted_mean of the
 * deltas, server update, then the clients' mean loss at the new model. Because
 * derivatives are program transforms that go through every federated primitive,
 * fedc_grad of that program gives d loss / d server_lr and d loss / d client_lr: the
 * hypergradients. This example checks them against finite differences, then takes
 * a few descent steps on the two learning rates and shows the
 * post-round loss fall.
 *
 *     ./example_hypergradient [--check]
 * With --check it exits non-zero unless the hypergradients agree with central
 * differences to 1e-6 (relative) and the tuned rates lower the post-round loss.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hypergradient_round.h"

#define CHECK HG_CHECK

typedef struct state {
    double w[DIM], server_lr, client_lr;
    double xs[CLIENTS][STEPS][BATCH][DIM], ys[CLIENTS][STEPS][BATCH];
} state;

static void make_state(state *s) {
    fedc_rng_stream r = fedc_rng_stream_make(11, 0, 0, 0);
    uint64_t k = 0;
    double w_true[DIM];
    for (int j = 0; j < DIM; j++) w_true[j] = fedc_rng_normal(r, k++), s->w[j] = 0;
    for (int c = 0; c < CLIENTS; c++)
        for (int t = 0; t < STEPS; t++)
            for (int e = 0; e < BATCH; e++) {
                double y = 0.05 * fedc_rng_normal(r, k++);
                for (int j = 0; j < DIM; j++) {
                    s->xs[c][t][e][j] = fedc_rng_normal(r, k++) + 0.3 * (c % 3);
                    y += s->xs[c][t][e][j] * w_true[j];
                }
                s->ys[c][t][e] = y;
            }
    s->server_lr = 0.5;
    s->client_lr = 0.02;
}

static void bind_all(fedc_executor *ex, state *s) {
    CHECK(fedc_executor_bind(ex, "w", s->w));
    CHECK(fedc_executor_bind(ex, "server_lr", &s->server_lr));
    CHECK(fedc_executor_bind(ex, "client_lr", &s->client_lr));
    CHECK(fedc_executor_bind(ex, "xs", s->xs));
    CHECK(fedc_executor_bind(ex, "ys", s->ys));
}

static double output(fedc_executor *ex, const char *name) {
    const double *v;
    CHECK(fedc_executor_run(ex));
    CHECK(fedc_executor_output(ex, name, (const void **)&v, NULL));
    return *v;
}

/* Central difference of the loss in one rate. */
static double finite_difference(fedc_executor *loss, double *rate) {
    double keep = *rate, h = 1e-6 * fabs(keep);
    *rate = keep + h;
    double up = output(loss, "loss");
    *rate = keep - h;
    double down = output(loss, "loss");
    *rate = keep;
    return (up - down) / (2 * h);
}

int main(int argc, char **argv) {
    int check = argc > 1 && strcmp(argv[1], "--check") == 0, ok = 1;
    static state s;
    make_state(&s);
    fedc_program *loss = round_loss(), *grad;
    CHECK(fedc_grad(loss, "loss", (const char *[]){"server_lr", "client_lr"}, 2, &grad));
    fedc_exec_options o = {.clients = CLIENTS, .threads = 2};
    fedc_executor *el, *eg;
    CHECK(fedc_executor_create(&el, loss, &o));
    CHECK(fedc_executor_create(&eg, grad, &o));
    bind_all(el, &s);
    bind_all(eg, &s);

    double ds = output(eg, "grad_server_lr"), dc = output(eg, "grad_client_lr");
    double fs = finite_difference(el, &s.server_lr), fc = finite_difference(el, &s.client_lr);
    printf("d loss / d server_lr: %.9g (finite differences %.9g)\n", ds, fs);
    printf("d loss / d client_lr: %.9g (finite differences %.9g)\n", dc, fc);
    ok &= fabs(ds - fs) <= 1e-6 * fabs(fs) && fabs(dc - fc) <= 1e-6 * fabs(fc);

    /* Multiplicative steps against the hypergradient's sign (descent on the log of
     * each rate, normalised) keep the rates positive and the steps stable. */
    double before = output(el, "loss");
    printf("step 0: server_lr %.4f client_lr %.4f -> loss after a round %.6f\n", s.server_lr, s.client_lr, before);
    for (int i = 1; i <= 10; i++) {
        ds = output(eg, "grad_server_lr");
        dc = output(eg, "grad_client_lr");
        s.server_lr *= exp(-0.05 * ds * s.server_lr / (fabs(ds * s.server_lr) + 1e-12));
        s.client_lr *= exp(-0.3 * dc * s.client_lr / (fabs(dc * s.client_lr) + 1e-12));
        if (i % 2 == 0)
            printf("step %d: server_lr %.4f client_lr %.4f -> loss after a round %.6f\n", i, s.server_lr, s.client_lr,
                   output(el, "loss"));
    }
    double after = output(el, "loss");
    ok &= after < before;
    fedc_executor_destroy(el);
    fedc_executor_destroy(eg);
    fedc_program_destroy(grad);
    fedc_program_destroy(loss);
    if (check && !ok) {
        fprintf(stderr, "hypergradient: the hypergradients or the tuning did not check out\n");
        return 1;
    }
    return 0;
}
