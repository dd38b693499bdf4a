"""A FedAvg round driven from Python against the same round run by `fedc train`.

FEMNIST-LEAF, the logistic model, 10 clients a round, batches of 20, one epoch,
client SGD 0.1: (1) fedc.train with the library's fedavg; (2) fedc.train with FedAvg
written in Python and registered (examples/python/new_algorithm.py, alpha 1); (3) a
round traced by @fedc.program and driven by a Python loop that samples clients and
batches their data with fedc.data (examples/python/fedavg_femnist.py). Seconds per
round are the median over rounds 2..N-1 (the first plans, the last evaluates), then
the median of three alternating runs of each, after a warm-up job.

    python3 bench/python_round.py [BUILD_DIR] [ROUNDS]     (default build, 30)
"""

import json
import os
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
BUILD = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build"))
ROUNDS = int(sys.argv[2]) if len(sys.argv) > 2 else 30
os.environ.setdefault("FEDC_LIBRARY", os.path.join(BUILD, "libfedc.so"))
sys.path[:0] = [os.path.join(ROOT, "python"), os.path.join(ROOT, "examples", "python")]
import fedc  # noqa: E402
import fedavg_femnist  # noqa: E402
import new_algorithm  # noqa: E402,F401  registers damped_py

DATA = os.path.join(ROOT, "..", "shared", "data", "femnist-leaf", "train")


def by_train(algorithm):
    stamps = []
    with tempfile.TemporaryDirectory() as out:
        fedc.train(DATA, algorithm=algorithm, task="emnist", model="logistic", rounds=ROUNDS,
                   clients_per_round=10, batch_size=20, client_lr=0.1, eval_every=0,
                   eval_clients=1, seed=1, threads=2, out_dir=out,
                   on_round=lambda r: stamps.append(time.perf_counter()))
    return float(np.median(np.diff(stamps[:-1])))


def by_python_loop():
    ds = fedc.data.open(DATA)
    params = {"w": np.zeros((784, 62), np.float32), "b": np.zeros(62, np.float32)}
    stamps = []
    for r in range(ROUNDS):
        ids = fedc.data.sample_clients(len(ds), 10, seed=1, round=r)
        params = fedavg_femnist.fedavg_round(params, *fedavg_femnist.cohort(ds, ids))
        stamps.append(time.perf_counter())
    return float(np.median(np.diff(stamps[:-1])))


def main():
    if not os.path.isdir(DATA):
        print("SKIP: %s is absent" % DATA)
        return 77
    by_train("fedavg")  # warm-up: the first job in a process reads the data cold
    runs = {"fedavg": [], "damped_py": [], "loop": []}
    for _ in range(3):  # alternating, so that the machine's load changes hit all three
        runs["fedavg"].append(by_train("fedavg"))
        runs["damped_py"].append(by_train("damped_py"))
        runs["loop"].append(by_python_loop())
    c, py_alg, loop = (float(np.median(runs[k])) for k in ("fedavg", "damped_py", "loop"))
    print("seconds per round: fedc train %.4f, Python-registered FedAvg %.4f (%+.1f%%), "
          "Python loop %.4f (%+.1f%%)" % (c, py_alg, 100 * (py_alg / c - 1), loop, 100 * (loop / c - 1)))
    print("json: " + json.dumps({"bench": "python_round", "train_s": c, "registered_s": py_alg,
                                 "loop_s": loop}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
