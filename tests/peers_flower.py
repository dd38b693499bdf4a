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
    Context.state between them, is read back; one client's round-2 task fails once,
    so that attempt is abandoned and the round run again, and the run still ends with
    the bits of fedc train with nothing failing (the abandoned attempt's new c_i
    dropped); its federated evaluation (3 drawn clients' nodes, each on its client's
    own examples) after the last round equals fedc.evaluate of fedc train's
    checkpoint on those clients' data, weighted by their examples;
  - Mime on the logistic model: two exchanges a round (the full gradient first), the
    second sent from aggregate_train;
  - FedAvg on the logistic model with one client's task failing in round 2 (a Flower
    client mod raises), min_reports 2: the round goes on without it, and the run ends
    with the bits of fedc train with that client's data failing to load in round 2
    (FEDC_FAULT=load:2:C), its metrics counting the client dropped;
  - the same plan with a client whose round-1 task always fails: 3 abandoned attempts,
    then the run fails with the error.
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


def write_emnist_like(path, sizes, seed, split=False):
    """A LEAF JSON dataset of EMNIST's shape: writers of 784 pixels in [0, 1], 62 classes.
    split: each writer in a directory of its own, path/client<i>."""
    rng = np.random.default_rng(seed)
    users = ["f%04d_%02d" % (i, i % 100) for i in range(len(sizes))]
    data = {u: {"x": rng.uniform(0, 1, (n, 784)).round(4).tolist(), "y": rng.integers(0, 62, n).tolist()}
            for u, n in zip(users, sizes)}
    parts = [(os.path.join(path, f"client{i}"), [u], [n]) for i, (u, n) in enumerate(zip(users, sizes))] if split \
        else [(path, users, sizes)]
    for where, us, ns in parts:
        os.makedirs(where)
        with open(os.path.join(where, "all_data_0.json"), "w") as f:
            json.dump({"users": us, "num_samples": ns, "user_data": {u: data[u] for u in us}}, f)


def job(algorithm, model):
    return ["--task", "emnist", "--model", model, "--algorithm", algorithm, "--batch-size", "5",
            "--seed", str(SEED)]


def metrics(path):
    with open(path) as f:
        return [json.loads(line) for line in f]


def failing(client, round, times=None):
    """A Flower client mod that fails fedc client `client`'s task of `round` (from 1): its
    first `times` tasks of that round (None: all)."""
    failed = []

    def mod(msg, context, call_next):
        where = msg.content["config"] if msg.metadata.message_type == "train" else {}
        if where and (int(where["client"]), int(where["round"]) + 1) == (client, round) and \
                (times is None or len(failed) < times):
            failed.append(round)
            raise RuntimeError(f"peers_flower: client {client}'s task of round {round} fails")
        return call_next(msg, context)
    return mod


def plan_and_sim(fedc_cli, tmp, name, data, algorithm, model, test_data=None, fault=None):
    """The plan (fedc plan build) and fedc train's run of a job: their directories."""
    plan, sim = (os.path.join(tmp, f"{name}-{d}") for d in ("plan", "sim"))
    subprocess.run([fedc_cli, "plan", "build", "--data", data, "--out", plan] + job(algorithm, model), check=True,
                   stdout=subprocess.DEVNULL)
    subprocess.run([fedc_cli, "train", "--data", data, "--rounds", str(ROUNDS), "--clients-per-round",
                    str(PER_ROUND), "--checkpoint-every", str(ROUNDS), "--out", sim, "--quiet"] + job(algorithm, model)
                   + (["--test-data", test_data, "--eval-every", "2"] if test_data else []),
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   env={**os.environ, "FEDC_FAULT": "load:%d:%d" % fault} if fault else None)
    return plan, sim


def check(fedc_cli, tmp, data, algorithm, model, population, test_data=None, fail=None, once=None, eval_data=None):
    """fail: (round, client) whose task fails on Flower and whose data fails to load in
    fedc train (min_reports 2: the round goes on without it). once: (round, client)
    whose task fails once on Flower, the round's attempt abandoned and run again, against
    fedc train with nothing failing. eval_data: each client's own evaluation data
    (eval_data/client<i>), on which the nodes of 3 drawn clients evaluate the model."""
    name = algorithm + ("-fail" if fail else "-once" if once else "")
    plan, sim = plan_and_sim(fedc_cli, tmp, name, data, algorithm, model, test_data, fail)
    run = os.path.join(tmp, f"{name}-run")

    strategy = fedc.flower.FedcStrategy(plan, clients_per_round=PER_ROUND, out_dir=run, test_data=test_data,
                                        eval_every=2, min_reports=PER_ROUND - 1 if fail else None,
                                        evaluate_clients=3 if eval_data else None)
    mods = [failing(fail[1], fail[0])] if fail else [failing(once[1], once[0], times=1)] if once else None
    client_app = fedc.flower.client_app(plan, data, mods=mods,
                                        eval_data=os.path.join(eval_data, "client{client}") if eval_data else None)
    fedc.flower.simulate(fedc.flower.server_app(strategy, rounds=ROUNDS), client_app, num_supernodes=population)

    want = safetensors.read(os.path.join(sim, "checkpoint.safetensors"))
    got = safetensors.read(os.path.join(run, "checkpoint.safetensors"))
    assert sorted(got) == sorted(want), f"{algorithm}: tensors {sorted(got)}, fedc train's {sorted(want)}"
    differ = [k for k in want if got[k].dtype != want[k].dtype or got[k].shape != want[k].shape
              or got[k].tobytes() != want[k].tobytes()]
    assert not differ, f"{algorithm}: tensors differ from fedc train's: {differ}"
    init = safetensors.read(os.path.join(plan, "model.safetensors"))
    assert any(init["server/params/" + k].tobytes() != want[k].tobytes() for k in want if "server/params/" + k in init)
    mine, ref = metrics(os.path.join(run, "metrics.jsonl")), metrics(os.path.join(sim, "metrics.jsonl"))
    abandoned = [m for m in mine if m.get("abandoned")]
    mine = [m for m in mine if not m.get("abandoned")]
    assert abandoned == ([{"round": once[0], "attempt": 1, "abandoned": True, "dropped": 1, "left_out": [once[1]]}]
                         if once else []), (algorithm, abandoned)
    assert [m["attempt"] for m in mine] == [2 if once and m["round"] == once[0] else 1 for m in mine], mine
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
    if eval_data:
        check_federated_evaluation(strategy, mine, eval_data, os.path.join(sim, "checkpoint.safetensors"), model)
    if test_data:
        print(f"peers_flower: {algorithm}: test losses {[m['test_loss'] for m in mine if 'test_loss' in m]} "
              "after rounds 2 and 3, fedc train's")
    failure = " (client %d failing in round %d)" % fail[::-1] if fail else \
        " (client %d failing once in round %d: the round run again)" % once[::-1] if once else ""
    print(f"peers_flower: {algorithm} on {model}{failure}: "
          f"{len(want)} tensors after {ROUNDS} rounds equal fedc train's to the bit; train losses "
          f"{[m['train_loss'] for m in ref]}")
    return got


def check_federated_evaluation(strategy, rows, eval_data, checkpoint, model):
    """The federated evaluation after rounds 2 and 3 (eval_every 2) was aggregated, and
    after the last equals fedc's own: fedc.evaluate of fedc train's final checkpoint on
    each drawn client's eval_data, weighted by its examples; and fedc eval of the same
    clients' data at once (one dataset of their writers)."""
    evaluated = {m["round"]: m for m in rows if "eval_loss" in m}
    assert sorted(evaluated) == [2, 3], rows
    assert all(evaluated[r]["eval_clients"] == 3 and evaluated[r]["eval_failed"] == 0 for r in evaluated), evaluated
    got = strategy.result.evaluate_metrics_clientapp  # what Flower kept: the rows' figures
    assert sorted(got) == [2, 3] and all(got[r]["eval_loss"] == evaluated[r]["eval_loss"] for r in got), got
    drawn = [int(c) for c in fedc.data.sample_clients(5, 3, SEED ^ 0x65766131, ROUNDS - 1)]
    options = {"task": "emnist", "model": model, "seed": SEED}
    each = [(fedc.evaluate(checkpoint, os.path.join(eval_data, f"client{c}"), **options),
             fedc.data.open(os.path.join(eval_data, f"client{c}")).num_examples) for c in drawn]
    n = sum(k for _, k in each)
    want = {"eval_loss": sum(r["test_loss"] * k for r, k in each) / n,
            "eval_accuracy": sum(r["test_accuracy"] * k for r, k in each) / n}
    together = os.path.join(eval_data, "drawn")
    os.makedirs(together)
    for c in drawn:
        os.symlink(os.path.join(eval_data, f"client{c}", "all_data_0.json"), os.path.join(together, f"c{c}.json"))
    whole = fedc.evaluate(checkpoint, together, **options)
    last = evaluated[ROUNDS]
    for k, w in (("eval_loss", "test_loss"), ("eval_accuracy", "test_accuracy")):
        assert abs(last[k] - want[k]) <= 1e-6 * abs(want[k]), (k, last[k], want[k])
        assert abs(last[k] - whole[w]) <= 1e-5 * abs(whole[w]), (k, last[k], whole[w])
    print(f"peers_flower: federated evaluation after round {ROUNDS} on clients {drawn}: loss {last['eval_loss']!r}, "
          f"accuracy {last['eval_accuracy']!r}; fedc's per-client weighted {want['eval_loss']!r}, "
          f"{want['eval_accuracy']!r}; fedc eval of their data at once {whole['test_loss']!r}, "
          f"{whole['test_accuracy']!r}")


def check_gives_up(plan, data, run, population):
    """A client whose task of round 1 always fails, no min_reports below the cohort:
    the round is abandoned attempts times, then the run fails saying so."""
    client = int(fedc.data.sample_clients(population, PER_ROUND, SEED, 0)[0])
    strategy = fedc.flower.FedcStrategy(plan, clients_per_round=PER_ROUND, out_dir=run, attempts=3)
    try:
        fedc.flower.simulate(fedc.flower.server_app(strategy, rounds=ROUNDS),
                             fedc.flower.client_app(plan, data, mods=[failing(client, 1)]), num_supernodes=population)
    except RuntimeError as e:
        error = str(e)
    else:
        raise AssertionError("a round whose client always fails did not fail the run")
    assert error.startswith("round 1: abandoned 3 times, fewer than min_reports 3 replies each time"), error
    assert "client %d's task of round 1 fails" % client in error, error
    rows = metrics(os.path.join(run, "metrics.jsonl"))
    assert [(m["round"], m["attempt"], m["abandoned"], m["left_out"]) for m in rows] == \
        [(1, a, True, [client]) for a in (1, 2, 3)], rows
    assert not os.path.exists(os.path.join(run, "checkpoint.safetensors"))
    print(f"peers_flower: client {client} failing every attempt at round 1: {error}")


def main():
    fedc_cli = sys.argv[1]
    sizes = [9, 6, 12, 7, 10]
    with tempfile.TemporaryDirectory() as tmp:
        data = os.path.join(tmp, "emnist")
        write_emnist_like(data, sizes, seed=7)
        test = os.path.join(tmp, "emnist-test")
        write_emnist_like(test, [5, 4, 6], seed=8)
        local = os.path.join(tmp, "emnist-local")  # each node's own evaluation data: its client's examples
        write_emnist_like(local, sizes, seed=7, split=True)
        check(fedc_cli, tmp, data, "fedavg", "cnn", len(sizes), test_data=test)
        cohorts = [[int(c) for c in fedc.data.sample_clients(len(sizes), PER_ROUND, SEED, r)] for r in range(ROUNDS)]
        # round 2's first attempt is abandoned after some clients worked, and they are sampled again in round 3:
        # SCAFFOLD's bits hold only if their work of the abandoned attempt left their c_i as it was
        once = (2, cohorts[1][-1])
        assert set(cohorts[1]) - {once[1]} & set(cohorts[2]), cohorts
        got = check(fedc_cli, tmp, data, "scaffold", "logistic", len(sizes), once=once, eval_data=local)
        assert any(np.abs(v).max() > 0 for k, v in got.items() if k.startswith("server/c/"))  # c moved
        check(fedc_cli, tmp, data, "mime", "logistic", len(sizes))  # two exchanges a round
        check(fedc_cli, tmp, data, "fedavg", "logistic", len(sizes), fail=(2, cohorts[1][0]))
        check_gives_up(os.path.join(tmp, "fedavg-fail-plan"), data, os.path.join(tmp, "gives-up-run"), len(sizes))
    print("peers_flower: ok")


if __name__ == "__main__":
    main()
