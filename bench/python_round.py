"""Rounds driven from Python against the same rounds run by `fedc train`'s library.

FEMNIST-LEAF, the logistic model, 10 clients a round, batches of 20, one epoch,
client SGD 0.1 (SCAFFOLD: 0.05). The jobs:
  fedavg      fedc.train with the library's fedavg (what `fedc train` runs)
  fedavg_py   fedc.train with FedAvg written in Python and registered
              (examples/python/new_algorithm.py, alpha 1)
  loop        a round traced by @fedc.program and driven by a Python loop that samples
              clients and batches their data with fedc.data (examples/python/fedavg_femnist.py)
  scaffold    fedc.train with the library's scaffold
  scaffold_py fedc.train with SCAFFOLD written in Python (examples/python/scaffold.py)

Method: one warm-up job (the first in a process reads the data cold), then REPEATS
repeats; each repeat runs every job once, in the order above in even repeats and
reversed in odd ones, so that each Python job runs as often just after its C
reference as just before it (a job that runs second in a pair is not always the one
that finds the caches warm). A job's figure is the
median seconds per round over rounds 2..N-1 (the first plans, the last may be
slow to stop). Each Python job is divided by its C reference of the same repeat,
so that load drifting between repeats cancels pair by pair; the report is the
median of those ratios with their min and max, and each job's median seconds.

    python3 bench/python_round.py [BUILD_DIR] [ROUNDS] [REPEATS]   (default build, 30, 7)

For whole-process timings against the CLI, `--one ALGORITHM [BUILD_DIR] [ROUNDS]` runs one
job and exits: `python3 bench/python_round.py --one damped_py build 60` is the process
that `build/fedc train --data ../shared/data/femnist-leaf/train --task emnist --model logistic
--rounds 60 --clients-per-round 10 --client-lr 0.1 --eval-every 0 --eval-clients 1 --seed 1
--threads 2 --quiet --out-dir DIR` is in C, Python's start and import included.
"""

import json
import os
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
ONE = sys.argv.pop(1) and sys.argv.pop(1) if len(sys.argv) > 2 and sys.argv[1] == "--one" else None
BUILD = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build"))
ROUNDS = int(sys.argv[2]) if len(sys.argv) > 2 else 30
REPEATS = int(sys.argv[3]) if len(sys.argv) > 3 else 7
os.environ.setdefault("FEDC_LIBRARY", os.path.join(BUILD, "libfedc.so"))
sys.path[:0] = [os.path.join(ROOT, "python"), os.path.join(ROOT, "examples", "python")]
import fedc  # noqa: E402
import fedavg_femnist  # noqa: E402
import new_algorithm  # noqa: E402,F401  registers damped_py
import scaffold  # noqa: E402,F401  registers scaffold_py

DATA = os.path.join(ROOT, "..", "shared", "data", "femnist-leaf", "train")
REFERENCE = {"fedavg_py": "fedavg", "loop": "fedavg", "scaffold_py": "scaffold"}


def per_round(stamps):
    return float(np.median(np.diff(stamps[:-1])))


def by_train(algorithm, client_lr=0.1):
    stamps = []
    with tempfile.TemporaryDirectory() as out:
        fedc.train(DATA, algorithm=algorithm, task="emnist", model="logistic", rounds=ROUNDS,
                   clients_per_round=10, batch_size=20, client_lr=client_lr, eval_every=0,
                   eval_clients=1, seed=1, threads=2, out_dir=out,
                   on_round=lambda r: stamps.append(time.perf_counter()))
    return per_round(stamps)


def by_python_loop():
    ds = fedc.data.open(DATA)
    params = {"w": np.zeros((784, 62), np.float32), "b": np.zeros(62, np.float32)}
    stamps = []
    for r in range(ROUNDS):
        ids = fedc.data.sample_clients(len(ds), 10, seed=1, round=r)
        params = fedavg_femnist.fedavg_round(params, *fedavg_femnist.cohort(ds, ids))
        stamps.append(time.perf_counter())
    return per_round(stamps)


JOBS = {
    "fedavg": lambda: by_train("fedavg"),
    "fedavg_py": lambda: by_train("damped_py"),
    "loop": by_python_loop,
    "scaffold": lambda: by_train("scaffold", 0.05),
    "scaffold_py": lambda: by_train("scaffold_py", 0.05),
}


def spread(xs):
    return "%.3f [%.3f, %.3f]" % (float(np.median(xs)), min(xs), max(xs))


def main():
    if not os.path.isdir(DATA):
        print("SKIP: %s is absent" % DATA)
        return 77
    if ONE:
        by_train(ONE)
        return 0
    by_train("fedavg")  # warm-up
    names = list(JOBS)
    runs = {k: [] for k in names}
    for rep in range(REPEATS):
        for k in (names if rep % 2 == 0 else names[::-1]):
            runs[k].append(JOBS[k]())
    print("%d rounds, %d repeats; seconds per round, median [min, max] over the repeats:"
          % (ROUNDS, REPEATS))
    for k in names:
        print("  %-12s %s ms" % (k, spread([1000 * x for x in runs[k]])))
    ratios = {k: [a / b for a, b in zip(runs[k], runs[ref])] for k, ref in REFERENCE.items()}
    print("per repeat, Python job / its C reference of the same repeat, median [min, max]:")
    for k, ref in REFERENCE.items():
        print("  %-12s / %-9s %s" % (k, ref, spread(ratios[k])))
    print("json: " + json.dumps({"bench": "python_round", "rounds": ROUNDS, "repeats": REPEATS,
                                 "seconds": runs, "ratios": ratios}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
