"""FedAvg in FedJAX: bench/peers/run's FedJAX peer of workload 1 (docs/benchmarks.md, "Against
today's peers").

    .peers/fedjax/bin/python bench/peers/fedavg_fedjax.py --data DIR [--threads 1|2]

FedJAX's own pieces, as its EMNIST experiments use them: fedjax.models.emnist.create_conv_model
(the EMNIST CNN with dropout, 62 classes), fedjax.algorithms.fed_avg (its client loop is
fedjax.for_each_client, whose default backend runs each step under jax.jit), client SGD lr 0.1,
server SGD lr 1, ShuffleRepeatBatchHParams(batch_size=20, num_epochs=1), clients weighted by the
examples they trained on. The cohort of a round is bench/peers/peer_data.cohort's (10 clients,
the same as the PyTorch peer's). --threads 1 turns off XLA's Eigen thread pool and pins the
process to one core (before JAX starts: this script sets XLA_FLAGS itself); 2 leaves XLA's
defaults (a thread per core).

The first --warmup-rounds rounds (default 1: jax.jit's compilation) are trained, not timed.
Prints a `json: {...}` line as bench/peers/fedavg_torch2.py does.
"""

import json
import os
import sys
import time
from importlib.metadata import version

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peer_data  # noqa: E402  (numpy alone: XLA_FLAGS below must come before JAX starts)

a = peer_data.arguments(__doc__, "a LEAF directory with train/ and test/")
if a.threads == 1:  # XLA's CPU client without Eigen's thread pool, and the process on one core
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " --xla_cpu_multi_thread_eigen=false").strip()
    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})

import fedjax  # noqa: E402
import jax  # noqa: E402


def main():
    train, tx, ty = peer_data.load(1, a.data)
    data = fedjax.InMemoryFederatedData({cid.encode(): {"x": x, "y": y} for cid, x, y in train})
    ids = [cid.encode() for cid, _, _ in train]
    model = fedjax.models.emnist.create_conv_model(only_digits=False)
    algorithm = fedjax.algorithms.fed_avg.federated_averaging(
        fedjax.model_grad(model), fedjax.optimizers.sgd(0.1), fedjax.optimizers.sgd(1.0),
        fedjax.ShuffleRepeatBatchHParams(batch_size=20, num_epochs=1))
    state = algorithm.init(model.init(jax.random.PRNGKey(a.seed)))

    examples, t_timed, t_warm = 0, 0.0, 0.0
    for r in range(a.warmup_rounds + a.rounds):
        chosen = [ids[i] for i in peer_data.cohort(len(ids), 10, a.seed, r)]
        t0 = time.perf_counter()
        clients = [(cid, ds, jax.random.PRNGKey(a.seed * 1000003 + r * 1009 + k))
                   for k, (cid, ds) in enumerate(data.get_clients(chosen))]
        state, _ = algorithm.apply(state, clients)
        jax.tree_util.tree_map(lambda v: v.block_until_ready(), state.params)
        dt = time.perf_counter() - t0
        if r >= a.warmup_rounds:
            t_timed += dt
            examples += sum(-(-len(ds) // 20) * 20 for _, ds, _ in clients)
        else:
            t_warm += dt
    test = fedjax.ClientDataset({"x": tx, "y": ty})
    m = fedjax.evaluate_model(model, state.params, test.batch(fedjax.BatchHParams(batch_size=1000)))
    print("json: " + json.dumps({
        "system": "FedJAX", "version": f"fedjax {version('fedjax')}, jax {jax.__version__}",
        "threads": a.threads, "examples_per_s": examples / t_timed, "s_per_round": t_timed / a.rounds,
        "warmup_s": t_warm, "accuracy": float(m["accuracy"])}), flush=True)


if __name__ == "__main__":
    main()
