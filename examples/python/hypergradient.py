"""A hypergradient through a federated round: how the loss after one FedAvg round of
linear regression changes with the clients' and the server's learning rates,
d loss(round(w; client_lr, server_lr)) / d (client_lr, server_lr), by fedc.grad of
the whole round (broadcast, each client's local SGD steps in a fold inside a map,
the weighted mean) — then used to tune the client learning rate by gradient descent.
examples/hypergradient.c is the same in C.

Run from a build tree:
    PYTHONPATH=python python3 examples/python/hypergradient.py
--check compares the hypergradient with central finite differences (f64).
"""

import sys

import numpy as np

import fedc

CLIENTS, STEPS, BATCH, DIM = 8, 5, 16, 4


def sq_loss(w, x, y):
    return fedc.reduce_mean((x @ w - y) ** 2)


@fedc.program(in_placements=("server", "server", "server", "clients", "clients"))
def loss_after_round(w, client_lr, server_lr, xs, ys):
    def client(w, lr, xs, ys):
        def step(w, batch):
            return w - lr * fedc.grad(sq_loss)(w, *batch), None
        w_local, _ = fedc.fold(step, w, (xs, ys))
        return w - w_local, sq_loss(w_local, xs[0], ys[0])
    delta, _ = fedc.map(client, (fedc.broadcast(w), fedc.broadcast(client_lr), xs, ys))
    w_next = w - server_lr * fedc.mean(delta)
    # The loss of the new model on every client's data, averaged at the server.
    per = fedc.map(lambda w, xs, ys: sq_loss(w, xs[0], ys[0]), (fedc.broadcast(w_next), xs, ys))
    return fedc.mean(per)


hypergrad = fedc.grad(loss_after_round, argnums=(1, 2))


def main():
    check = "--check" in sys.argv[1:]
    rng = np.random.default_rng(7)
    true_w = rng.standard_normal(DIM)
    xs = rng.standard_normal((CLIENTS, STEPS, BATCH, DIM))
    ys = xs @ true_w + 0.1 * rng.standard_normal((CLIENTS, STEPS, BATCH))
    w = np.zeros(DIM)
    lr, slr = np.float64(0.05), np.float64(1.0)
    g_lr, g_slr = hypergrad(w, lr, slr, xs, ys)
    print("loss after a round %.5f; d/d client_lr %.5f, d/d server_lr %.5f"
          % (loss_after_round(w, lr, slr, xs, ys), g_lr, g_slr))
    ok = True
    if check:
        eps = 1e-6
        f = lambda a, b: float(loss_after_round(w, np.float64(a), np.float64(b), xs, ys))
        fd_lr = (f(lr + eps, slr) - f(lr - eps, slr)) / (2 * eps)
        fd_slr = (f(lr, slr + eps) - f(lr, slr - eps)) / (2 * eps)
        print("finite differences: %.5f, %.5f" % (fd_lr, fd_slr))
        ok = abs(g_lr - fd_lr) < 1e-5 * max(1, abs(fd_lr)) and abs(g_slr - fd_slr) < 1e-5 * max(1, abs(fd_slr))
    # Tune the client learning rate on the hypergradient.
    before = float(loss_after_round(w, lr, slr, xs, ys))
    for _ in range(10):
        g_lr, _ = hypergrad(w, lr, slr, xs, ys)
        lr = np.float64(lr - 0.01 * g_lr)
    after = float(loss_after_round(w, lr, slr, xs, ys))
    print("tuned client_lr %.4f: loss after a round %.5f (was %.5f)" % (lr, after, before))
    if check and not (ok and after < before):
        print("FAIL: the hypergradient differs from finite differences, or tuning did not help",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
