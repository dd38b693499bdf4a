"""SCAFFOLD written in Python: a stateful algorithm, with server state beyond the
model (the control variate c and the server optimizer's state) and per-client
state (each client's c_i, kept by fedc's client store between the rounds a client
is sampled in), registered with fedc's runner and trained on FEMNIST by fedc.train.
It is src/fl/scaffold.c's algorithm (Karimireddy et al. 2020, option II), written
as FedJAX writes its algorithms: an init of the state, and a round of local steps
through fedc.optimizers and fedc.fold.

    client i:  y_i = x;  K_i steps of  y_i -= lr * (g_i(y_i) - c_i + c)
               c_i+ = c_i - c + (x - y_i) / (K_i lr)
    server:    x = server_opt(x, weighted_mean(x - y_i));  c += sum_S(c_i+ - c_i) / N

Run from a build tree:
    PYTHONPATH=python python3 examples/python/scaffold.py
--check: its metrics must equal the library's scaffold's row for row, and its
checkpoint (x, c, the optimizer state) and client store (every c_i) the library's
to the bit; a run stopped at round 3 and resumed must end with the bits of the run
that was not.
"""

import os
import sys
import tempfile

import numpy as np

import fedc

HERE = os.path.dirname(os.path.abspath(__file__))
# FEDC_DATA: a directory laid out as ../shared/data (the tests set it), else ../shared/data
DATA = os.path.join(os.environ.get("FEDC_DATA") or os.path.join(HERE, "..", "..", "..", "shared", "data"), "femnist-leaf", "train")


def add(a, b):
    return a + b


def sub(a, b):
    return a - b


def server_init(init):
    """x (the model), the server optimizer's state, and c = 0."""
    params = init.params
    return {"params": params, "opt": init.server_optimizer.init(params),
            "c": fedc.tree_map(fedc.zeros_like, params)}


def client_init(init):
    """A client never sampled before starts with c_i = 0."""
    return {"c": init.zeros()}


def local_training(r, offset=None, opt=None):
    """The cohort's local training as the library's (src/fl/round.c): steps of `opt`
    (default the job's client optimizer, fresh each round) on the model's loss, its
    gradient plus `offset` (@clients, like the params; None: nothing). Returns
    @clients: delta = w - y_i, each client's mean loss, examples, local steps K_i."""
    model, dropout = r.model, r.dropout
    opt = opt or r.client_optimizer

    def client(w, x, y, mask, steps, key, offset=None):
        def step(carry, batch):
            w, state, loss_sum, count, t = carry
            xb, yb, mb = batch
            k = key + fedc.constant(np.array([0, 0, 0, 1], np.int32)) * t if dropout else None

            def objective(w):
                out = model.apply(w, xb, yb, mb, dropout_key=k)
                return out["loss"], out["count"]
            (loss, n), g = fedc.value_and_grad(objective, has_aux=True)(w)
            if offset is not None:
                g = fedc.tree_map(add, g, offset)
            state, w = opt.apply(g, state, w)
            return (w, state, loss_sum + loss * n, count + n, t + 1), None
        start = (w, opt.init(w), 0.0, 0.0, 0)
        (y_i, _, loss_sum, count, t), _ = fedc.fold(step, start, (x, y, mask), length=steps)
        return (fedc.tree_map(sub, w, y_i), loss_sum / fedc.maximum(count, 1.0), count,
                fedc.cast(t, "f32"))

    d = r.data
    args = (fedc.broadcast(r.server["params"]), d["x"], d["y"], d["mask"], d["steps"], d["key"])
    return fedc.map(client, args + ((offset,) if offset is not None else ()))


def scaffold(r):
    opt = r.client_optimizer
    if opt.name != "sgd":
        raise ValueError("scaffold_py: the client optimizer must be sgd (option II's control "
                         "variate assumes plain SGD steps), not %s" % opt.name)
    c, c_i = r.server["c"], r.client["c"]
    c_b = fedc.broadcast(c)
    delta, loss, examples, k = local_training(r, offset=fedc.tree_map(sub, c_b, c_i))
    # c_i+ = c_i - c + (x - y_i) / (K_i lr)
    inverse = 1.0 / (fedc.maximum(k, 1.0) * opt.learning_rate)
    next_ci = fedc.tree_map(lambda dl, ci, cb: dl * inverse + (ci - cb), delta, c_i, c_b)
    # c += sum (c_i+ - c_i) / N
    n_inv = 1.0 / r.meta("population")
    next_c = fedc.tree_map(lambda s, cs: s * n_inv + cs,
                           fedc.sum(fedc.tree_map(sub, next_ci, c_i)), c)
    mean_delta = r.aggregate(delta, r.weight(examples))
    state, params = r.server_optimizer.apply(mean_delta, r.server["opt"], r.server["params"])
    server = dict(r.server, params=params, opt=state, c=next_c)
    return server, {"c": next_ci}, loss, examples


fedc.algorithm("scaffold_py", summary="SCAFFOLD (option II), written in Python",
               server_init=server_init, client_init=client_init)(scaffold)


def read_safetensors(path):
    """{name: array} of a safetensors file (8-byte header size, JSON header, data)."""
    return fedc.safetensors.read(path)


def same_run_end(a, b):
    """Whether two runs' out_dirs end alike: the checkpoint's tensors to the bit, and
    the client store's bytes past its header (its first 4 KiB, which names the
    algorithm: docs/client_state.md): every slot's index entry, crc and record."""
    ca = read_safetensors(os.path.join(a, "checkpoint.safetensors"))
    cb = read_safetensors(os.path.join(b, "checkpoint.safetensors"))
    if sorted(ca) != sorted(cb) or not ca:
        return False
    if not all(ca[k].tobytes() == cb[k].tobytes() for k in ca):
        return False
    with open(os.path.join(a, "client_state.fcs"), "rb") as fa, \
            open(os.path.join(b, "client_state.fcs"), "rb") as fb:
        return fa.read()[4096:] == fb.read()[4096:]


def strip(rows):
    return [{k: v for k, v in r.items() if k not in ("seconds", "examples_per_s")} for r in rows]


def main():
    check = "--check" in sys.argv[1:]
    if not os.path.isdir(DATA):
        print("SKIP: %s is absent" % DATA)
        return 77
    opts = dict(task="emnist", model="logistic", rounds=6 if check else 40, clients_per_round=10,
                eval_every=3, eval_clients=20, seed=1, client_lr=0.05, checkpoint_every=3)
    with tempfile.TemporaryDirectory(prefix="fedc-scaffold-") as out:
        def report(r):
            if r["evaluated"]:
                print("round %d: train loss %.4f, test accuracy %.3f"
                      % (r["round"], r["train_loss"], r["test_accuracy"]))
        mine = fedc.train(DATA, algorithm="scaffold_py", out_dir=os.path.join(out, "py"),
                          on_round=report, **opts)
        if not check:
            return 0
        ref = fedc.train(DATA, algorithm="scaffold", out_dir=os.path.join(out, "c"), **opts)
        same = (strip(mine["metrics"]) == strip(ref["metrics"])
                and same_run_end(os.path.join(out, "py"), os.path.join(out, "c")))
        print("against the library's scaffold: %s" % ("identical metrics, checkpoint and client "
                                                      "store" if same else "DIFFERENT"))
        part = os.path.join(out, "part")
        fedc.train(DATA, algorithm="scaffold_py", out_dir=part, **dict(opts, rounds=3))
        resumed = fedc.train(DATA, algorithm="scaffold_py", out_dir=part, resume=True, **opts)
        bitwise = resumed["rounds_run"] == 3 and same_run_end(os.path.join(out, "py"), part)
        print("3 rounds, then resumed to 6: %s" % ("the same bits" if bitwise else "DIFFERENT"))
        if not (same and bitwise and mine["test_accuracy"] > 3 / 62):
            print("FAIL", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
