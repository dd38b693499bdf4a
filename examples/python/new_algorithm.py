"""A new algorithm written in Python, registered with fedc's runner and trained on
FEMNIST by fedc.train: FedAvg whose server steps `alpha` times the mean delta (the
algorithm examples/new_algorithm.c writes in C). Python builds the round once,
when the job plans its programs; every round then runs in C, with fedc train's
data loading, sampling, evaluation, metrics and checkpoints.

Run from a build tree:
    PYTHONPATH=python python3 examples/python/new_algorithm.py
--check: with alpha = 1 the algorithm is FedAvg, so its metrics must equal the
library's fedavg's row for row; with alpha = 0.5 it must still learn.
"""

import os
import sys
import tempfile

import fedc

HERE = os.path.dirname(os.path.abspath(__file__))
# FEDC_DATA: a directory laid out as ../shared/data (the tests set it), else ../shared/data
DATA = os.path.join(os.environ.get("FEDC_DATA") or os.path.join(HERE, "..", "..", "..", "shared", "data"), "femnist-leaf", "train")
CLIENT_LR = 0.1


@fedc.algorithm("damped_py", summary="FedAvg, its server step times alpha (in Python)",
                hparams={"alpha": (1.0, 0.0, 10.0, "server step, times the mean delta")})
def damped(r):
    model, alpha = r.model, r.hparam("alpha")

    def client(params, x, y, mask, steps):
        def step(p, batch):
            xb, yb, mb = batch
            loss, g = fedc.value_and_grad(lambda p: model.apply(p, xb, yb, mb)["loss"])(p)
            return fedc.tree_map(lambda w, gw: w - CLIENT_LR * gw, p, g), loss
        trained, losses = fedc.fold(step, params, (x, y, mask), length=steps)
        delta = fedc.tree_map(lambda a, b: a - b, params, trained)
        mean_loss = fedc.reduce_sum(losses) / fedc.maximum(fedc.cast(steps, "f32"), 1.0)
        return delta, mean_loss, fedc.reduce_sum(mask)

    d = r.data
    delta, loss, examples = fedc.map(client, (fedc.broadcast(r.server["params"]), d["x"], d["y"],
                                              d["mask"], d["steps"]))
    mean_delta = fedc.weighted_mean(delta, r.weight(examples))
    params = fedc.tree_map(lambda w, dl: w - alpha * dl, r.server["params"], mean_delta)
    return dict(r.server, params=params), loss, examples


def main():
    check = "--check" in sys.argv[1:]
    if not os.path.isdir(DATA):
        print("SKIP: %s is absent" % DATA)
        return 77
    opts = dict(task="emnist", model="logistic", rounds=8 if check else 50, clients_per_round=10,
                eval_every=4, eval_clients=20, seed=1, client_lr=CLIENT_LR)
    with tempfile.TemporaryDirectory(prefix="fedc-new-algorithm-") as out:
        return train_and_check(out, opts, check)


def train_and_check(out, opts, check):
    runs = {}
    for alpha in (1.0, 0.5):
        def report(r, alpha=alpha):
            if r["evaluated"]:
                print("alpha %.1f, round %d: train loss %.4f, test accuracy %.3f"
                      % (alpha, r["round"], r["train_loss"], r["test_accuracy"]))
        runs[alpha] = fedc.train(DATA, algorithm="damped_py", set={"alpha": alpha},
                                 out_dir=os.path.join(out, "alpha%.1f" % alpha), on_round=report,
                                 **opts)
    if not check:
        return 0
    ref = fedc.train(DATA, algorithm="fedavg", out_dir=os.path.join(out, "fedavg"), **opts)
    strip = lambda rows: [{k: v for k, v in r.items() if k not in ("seconds", "examples_per_s")}
                          for r in rows]
    same = strip(runs[1.0]["metrics"]) == strip(ref["metrics"])
    print("alpha 1 against the library's fedavg: %s" % ("identical metrics" if same else "DIFFERENT"))
    if not (same and runs[0.5]["test_accuracy"] > 3 / 62):
        print("FAIL", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
