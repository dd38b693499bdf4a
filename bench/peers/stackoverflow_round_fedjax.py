"""FedJAX peer of bench/stackoverflow_round.c (bench/peers/run's workload 3): FedAvg rounds of
FedJAX's Stack Overflow word LSTM on the cohorts that the fedc side trained (--cohorts FILE: per
round, each client's [sentences, steps]).

    .peers/fedjax/bin/python bench/peers/stackoverflow_round_fedjax.py --cohorts FILE [--threads 1|2]

FedJAX's own pieces, as its experiments/fed_avg STACKOVERFLOW_WORD job uses them:
fedjax.models.stackoverflow.create_lstm_model (Embed(10,004, 96) -> LSTM(670) -> Linear(96) ->
Linear(10,004); 4,050,748 parameters), fedjax.algorithms.fed_avg (its client loop is
fedjax.for_each_client, each step under jax.jit), client SGD lr 0.5, server Adam (lr 0.02,
b1 0.9, b2 0.999, eps 1e-8), ShuffleRepeatBatchHParams(batch_size=16, num_epochs=1), clients
weighted by their examples. A client of `steps` steps holds steps x 16 sentences of 20 random
word ids (this measures time; full batches, as the fedc and PyTorch sides run them, so that
jax.jit compiles one step). --threads 1 turns off XLA's Eigen thread pool and pins the process
to one core; 2 leaves XLA's defaults.

Round 0 (jax.jit's compilation) is trained, not timed. Prints "fedjax round R: S steps, T s"
per round and a `json: {...}` line as bench/peers/fedavg_fedjax.py does.
"""

import argparse
import json
import os
import statistics
import time
from importlib.metadata import version

p = argparse.ArgumentParser()
p.add_argument("--cohorts", required=True)
p.add_argument("--threads", type=int, default=2)
a = p.parse_args()
if a.threads == 1:  # before JAX starts
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " --xla_cpu_multi_thread_eigen=false").strip()
    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

# FedJAX 0.0.17's language models read jnp.NINF (their logits masks, for metrics only), which
# this JAX no longer has (as tests/peers_fedjax.py does).
if not hasattr(jnp, "NINF"):
    jnp.NINF = -jnp.inf
import fedjax  # noqa: E402

cfg = json.load(open(a.cohorts))
BATCH, WORDS, VOCAB = cfg["batch"], cfg["words"], 10000


def client_data(rng, steps):
    n = steps * BATCH
    return fedjax.ClientDataset({"x": rng.integers(1, VOCAB + 4, (n, WORDS), dtype=np.int32),
                                 "y": rng.integers(1, VOCAB + 4, (n, WORDS), dtype=np.int32)})


def main():
    model = fedjax.models.stackoverflow.create_lstm_model(vocab_size=VOCAB)
    algorithm = fedjax.algorithms.fed_avg.federated_averaging(
        fedjax.model_grad(model), fedjax.optimizers.sgd(0.5),
        fedjax.optimizers.adam(0.02, b1=0.9, b2=0.999, eps=1e-8),
        fedjax.ShuffleRepeatBatchHParams(batch_size=BATCH, num_epochs=1))
    state = algorithm.init(model.init(jax.random.PRNGKey(0)))
    rng = np.random.default_rng(1)
    times, steps_timed = [], 0
    for r, cohort in enumerate(cfg["rounds"]):
        clients = [(b"%d" % k, client_data(rng, steps), jax.random.PRNGKey(r * 1009 + k))
                   for k, (_, steps) in enumerate(cohort)]
        t0 = time.perf_counter()
        state, _ = algorithm.apply(state, clients)
        jax.tree_util.tree_map(lambda v: v.block_until_ready(), state.params)
        t = time.perf_counter() - t0
        steps = sum(s for _, s in cohort)
        print(f"fedjax round {r}: {steps} steps, {t:.1f} s{' (warm-up)' if r == 0 else ''}", flush=True)
        if r > 0:
            times.append(t)
            steps_timed += steps
    print("json: " + json.dumps({
        "system": "FedJAX", "version": f"fedjax {version('fedjax')}, jax {jax.__version__}",
        "threads": a.threads, "examples_per_s": steps_timed * BATCH / sum(times),
        "s_per_round": statistics.median(times), "accuracy": None}), flush=True)


if __name__ == "__main__":
    main()
