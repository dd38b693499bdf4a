"""FedAvg on FEMNIST, written as FedJAX's quickstart writes it, with the round traced
into one fedc program: Python samples the clients and batches their data; every
round (each client's local SGD over its batches, the weighted mean of the deltas,
the server step) runs in C.

FedJAX's quickstart:
    train, test = fedjax.datasets.emnist.load_data()
    model = fedjax.models.emnist.create_logistic_model()
    algorithm = fedavg.federated_averaging(grad_fn, sgd(0.1), sgd(1.0), batch_hparams)
    state = algorithm.init(model.init(rng))
    for round_num in range(num_rounds):
        clients = sampler.sample()
        state, _ = algorithm.apply(state, clients)

Run from a build tree:
    PYTHONPATH=python python3 examples/python/fedavg_femnist.py [--rounds N]
--check (as ctest runs it) compares the first round with FedAvg in numpy, and checks
that accuracy on the test clients beats chance after a few rounds.
"""

import os
import sys

import numpy as np

import fedc

HERE = os.path.dirname(os.path.abspath(__file__))
# FEDC_DATA: a directory laid out as ../shared/data (the tests set it), else ../shared/data
DATA = os.path.join(os.environ.get("FEDC_DATA") or os.path.join(HERE, "..", "..", "..", "shared", "data"), "femnist-leaf")
BATCH, CLIENTS_PER_ROUND, CLIENT_LR, SERVER_LR = 20, 10, 0.1, 1.0


def logits(p, x):
    return x @ p["w"] + p["b"]


def batch_loss(p, x, y, mask):
    """The mean cross-entropy over the batch's real examples (mask 1), as FedJAX's."""
    total = fedc.reduce_sum(fedc.softmax_cross_entropy(logits(p, x), y, mask))
    return total / fedc.maximum(fedc.reduce_sum(mask), 1.0)


def client_update(params, x, y, mask, steps):
    def step(p, batch):
        g = fedc.grad(batch_loss)(p, *batch)
        return fedc.tree_map(lambda w, gw: w - CLIENT_LR * gw, p, g), None
    trained, _ = fedc.fold(step, params, (x, y, mask), length=steps)
    delta = fedc.tree_map(lambda a, b: a - b, params, trained)
    return delta, fedc.reduce_sum(mask)


@fedc.program(in_placements=("server", "clients", "clients", "clients", "clients"))
def fedavg_round(params, x, y, mask, steps):
    delta, examples = fedc.map(client_update, (fedc.broadcast(params), x, y, mask, steps))
    mean_delta = fedc.weighted_mean(delta, examples)
    return fedc.tree_map(lambda w, d: w - SERVER_LR * d, params, mean_delta)


@fedc.program(in_placements=("server", "clients", "clients", "clients"))
def accuracy(params, x, y, mask):
    def count(params, x, y, mask):
        right = fedc.cast(fedc.argmax(logits(params, x), -1) == y, "f32") * mask
        return fedc.reduce_sum(right), fedc.reduce_sum(mask)
    right, n = fedc.map(count, (fedc.broadcast(params), x, y, mask))
    return fedc.sum(right) / fedc.sum(n)


def cohort(ds, ids):
    """The clients' padded batches stacked for the round: [clients, steps, batch, ...],
    every client padded to the cohort's most steps (its `steps` says how many are real)."""
    bs = [ds[int(i)].padded_batch(BATCH) for i in ids]
    for b in bs:  # EMNIST as FedJAX preprocesses it: ink 1, background 0
        b["x"] = 1 - b["x"]
    most = max(int(b["steps"]) for b in bs)

    def stack(name):
        return np.stack([np.pad(b[name], [(0, most - int(b["steps"]))] + [(0, 0)] * (b[name].ndim - 1))
                         for b in bs])
    return stack("x"), stack("y"), stack("mask"), np.array([b["steps"] for b in bs], np.int32)


def numpy_round(params, x, y, mask, steps):
    """FedAvg in numpy (f64), for --check."""
    deltas, weights = [], []
    for c in range(x.shape[0]):
        w, b = params["w"].astype(np.float64), params["b"].astype(np.float64)
        for t in range(steps[c]):
            xb, yb, mb = x[c, t], y[c, t], mask[c, t]
            z = xb @ w + b
            p = np.exp(z - z.max(1, keepdims=True))
            p /= p.sum(1, keepdims=True)
            p[np.arange(len(yb)), yb] -= 1
            g = p * (mb / max(mb.sum(), 1))[:, None]
            w, b = w - CLIENT_LR * xb.T @ g, b - CLIENT_LR * g.sum(0)
        deltas.append((params["w"] - w, params["b"] - b))
        weights.append(mask[c].sum())
    wts = np.array(weights) / np.sum(weights)
    return {"w": params["w"] - SERVER_LR * sum(wt * d[0] for wt, d in zip(wts, deltas)),
            "b": params["b"] - SERVER_LR * sum(wt * d[1] for wt, d in zip(wts, deltas))}


def main():
    args = sys.argv[1:]
    check = "--check" in args
    rounds = int(args[args.index("--rounds") + 1]) if "--rounds" in args else (8 if check else 50)
    if not os.path.isdir(os.path.join(DATA, "train")):
        print("SKIP: %s is absent" % DATA)
        return 77
    train = fedc.data.open(os.path.join(DATA, "train"))
    test = fedc.data.open(os.path.join(DATA, "test"))
    params = {"w": np.zeros((784, 62), np.float32), "b": np.zeros(62, np.float32)}
    tx, ty, tmask, _ = cohort(test, range(min(len(test), 20)))
    ok = True
    for r in range(rounds):
        ids = fedc.data.sample_clients(len(train), CLIENTS_PER_ROUND, seed=0, round=r)
        batch = cohort(train, ids)
        new = fedavg_round(params, *batch)
        if check and r == 0:
            want = numpy_round(params, *batch)
            err = max(np.abs(new[k] - want[k]).max() for k in new)
            print("round 1 against numpy's FedAvg: max difference %.2g" % err)
            ok = ok and err < 1e-4
        params = new
        if (r + 1) % 4 == 0 or r + 1 == rounds:
            print("round %d: test accuracy %.3f" % (r + 1, accuracy(params, tx, ty, tmask)))
    acc = float(accuracy(params, tx, ty, tmask))
    if check and not (ok and acc > 3 / 62):
        print("FAIL: fedc's FedAvg differs from numpy's, or accuracy %.3f is at chance" % acc,
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
