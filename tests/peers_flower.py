"""fedc plans run on Flower (python/fedc/flower.py, docs/flower.md):
a Flower simulation (flwr's run_simulation: its SuperLink, nodes and Messages, in
memory; the ClientApp in this process) of a plan ends with `fedc train`'s bits.

    peers_flower.py FEDC    FEDC: the fedc command of the same build

On generated EMNIST-shaped data (LEAF JSON: 5 writers of 6 to 12 28x28 images, 62
classes), 3 rounds of 3 clients:
  - FedAvg on the CNN: the server state after 3 rounds equals fedc train's checkpoint,
    tensor for tensor, to the bit, and each round's train loss its metrics row's; the
    Strategy's evaluation on a test split (test_data, eval_every 2: after rounds 2 and
    3) gives fedc train --test-data --eval-every 2's test loss and accuracy;
  - SCAFFOLD on the logistic model: the same, its server state (params, c) and losses,
    with some client sampled in two rounds, so that its c_i, kept in Flower's
    Context.state between them, is read back;
  - Mime on the logistic model: two exchanges a round (the full gradient first), the
    second sent from aggregate_train;
  - FedAvg on the logistic model with one client's task failing in round 2 (a Flower
    client mod raises), min_reports 2: the round goes on without it, and the run ends
    with the bits of fedc train with that client's data failing to load in round 2
    (FEDC_FAULT=load:2:C), its metrics counting the client dropped.
"""

import json
import os
import subprocess
import sys
import tempfile

import numpy as np

import fedc
import fedc.flower
from fedc import safetensors

ROUNDS, PER_ROUND, SEED = 3, 3, 3


def write_emnist_like(path, sizes, seed):
    """A LEAF JSON dataset of EMNIST's shape: writers of 784 pixels in [0, 1], 62 classes."""
    rng = np.random.default_rng(seed)
    users = ["f%04d_%02d" % (i, i % 100) for i in range(len(sizes))]
    data = {u: {"x": rng.uniform(0, 1, (n, 784)).round(4).tolist(), "y": rng.integers(0, 62, n).tolist()}
            for u, n in zip(users, sizes)}
    os.makedirs(path)
    with open(os.path.join(path, "all_data_0.json"), "w") as f:
        json.dump({"users": users, "num_samples": sizes, "user_data": data}, f)


def job(algorithm, model):
    return ["--task", "emnist", "--model", model, "--algorithm", algorithm, "--batch-size", "5",
            "--seed", str(SEED)]


def metrics(path):
    with open(path) as f:
        return [json.loads(line) for line in f]


def failing(client, round):
    """A Flower client mod that fails fedc client `client`'s task of `round` (from 1)."""
    def mod(msg, context, call_next):
        where = msg.content["config"] if msg.metadata.message_type == "train" else {}
        if where and (int(where["client"]), int(where["round"]) + 1) == (client, round):
            raise RuntimeError(f"peers_flower: client {client}'s task of round {round} fails")
        return call_next(msg, context)
    return mod


def check(fedc_cli, tmp, data, algorithm, model, population, test_data=None, fail=None):
    """fail: (round, client) whose task fails on Flower and whose data fails to load in
    fedc train."""
    name = algorithm + ("-fail" if fail else "")
    plan, sim, run = (os.path.join(tmp, f"{name}-{d}") for d in ("plan", "sim", "run"))
    subprocess.run([fedc_cli, "plan", "build", "--data", data, "--out", plan] + job(algorithm, model), check=True,
                   stdout=subprocess.DEVNULL)
    subprocess.run([fedc_cli, "train", "--data", data, "--rounds", str(ROUNDS), "--clients-per-round",
                    str(PER_ROUND), "--checkpoint-every", str(ROUNDS), "--out", sim, "--quiet"] + job(algorithm, model)
                   + (["--test-data", test_data, "--eval-every", "2"] if test_data else []),
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   env={**os.environ, "FEDC_FAULT": "load:%d:%d" % fail} if fail else None)

    strategy = fedc.flower.FedcStrategy(plan, clients_per_round=PER_ROUND, out_dir=run, test_data=test_data,
                                        eval_every=2, min_reports=PER_ROUND - 1 if fail else None)
    mods = [failing(fail[1], fail[0])] if fail else None
    fedc.flower.simulate(fedc.flower.server_app(strategy, rounds=ROUNDS), fedc.flower.client_app(plan, data, mods=mods),
                         num_supernodes=population)

    want = safetensors.read(os.path.join(sim, "checkpoint.safetensors"))
    got = safetensors.read(os.path.join(run, "checkpoint.safetensors"))
    assert sorted(got) == sorted(want), f"{algorithm}: tensors {sorted(got)}, fedc train's {sorted(want)}"
    differ = [k for k in want if got[k].dtype != want[k].dtype or got[k].shape != want[k].shape
              or got[k].tobytes() != want[k].tobytes()]
    assert not differ, f"{algorithm}: tensors differ from fedc train's: {differ}"
    init = safetensors.read(os.path.join(plan, "model.safetensors"))
    assert any(init["server/params/" + k].tobytes() != want[k].tobytes() for k in want if "server/params/" + k in init)
    mine, ref = metrics(os.path.join(run, "metrics.jsonl")), metrics(os.path.join(sim, "metrics.jsonl"))
    assert [m["round"] for m in mine] == [m["round"] for m in ref] == list(range(1, ROUNDS + 1))
    so_far = 0  # fedc train's "dropped" counts the run's so far; the Strategy's, as fedc server's, the round's
    for a, b in zip(mine, ref):  # fedc train writes 6 significant digits
        assert float("%.6g" % a["train_loss"]) == b["train_loss"], (algorithm, a, b)
        assert a["dropped"] == b["dropped"] - so_far == (1 if fail and a["round"] == fail[0] else 0), (algorithm, a, b)
        so_far = b["dropped"]
        assert a["left_out"] == ([fail[1]] if fail and a["round"] == fail[0] else []), (algorithm, a)
        tested = test_data is not None and b["round"] >= 2
        assert ("test_loss" in a) == tested, (algorithm, a)
        for k in ("test_loss", "test_accuracy") if tested else ():
            assert float("%.6g" % a[k]) == b[k], (algorithm, k, a, b)
    if test_data:
        print(f"peers_flower: {algorithm}: test losses {[m['test_loss'] for m in mine if 'test_loss' in m]} "
              "after rounds 2 and 3, fedc train's")
    print(f"peers_flower: {algorithm} on {model}{' (client %d failing in round %d)' % fail[::-1] if fail else ''}: "
          f"{len(want)} tensors after {ROUNDS} rounds equal fedc train's to the bit; train losses "
          f"{[m['train_loss'] for m in ref]}")
    return got


def main():
    fedc_cli = sys.argv[1]
    sizes = [9, 6, 12, 7, 10]
    with tempfile.TemporaryDirectory() as tmp:
        data = os.path.join(tmp, "emnist")
        write_emnist_like(data, sizes, seed=7)
        test = os.path.join(tmp, "emnist-test")
        write_emnist_like(test, [5, 4, 6], seed=8)
        check(fedc_cli, tmp, data, "fedavg", "cnn", len(sizes), test_data=test)
        cohorts = [[int(c) for c in fedc.data.sample_clients(len(sizes), PER_ROUND, SEED, r)] for r in range(ROUNDS)]
        assert any(set(cohorts[i]) & set(cohorts[j]) for i in range(ROUNDS) for j in range(i)), cohorts  # state reused
        got = check(fedc_cli, tmp, data, "scaffold", "logistic", len(sizes))
        assert any(np.abs(v).max() > 0 for k, v in got.items() if k.startswith("server/c/"))  # c moved
        check(fedc_cli, tmp, data, "mime", "logistic", len(sizes))  # two exchanges a round
        check(fedc_cli, tmp, data, "fedavg", "logistic", len(sizes), fail=(2, cohorts[1][0]))
    print("peers_flower: ok")


if __name__ == "__main__":
    main()
