"""DrJAX peer of bench_transformer_cohorts (bench/peers/run's workload 4): FedAvg rounds of fedc's
transformer language model written as FAX's paper writes them, a DrJAX program under jax.jit:
drjax.broadcast of the server's model to the clients, drjax.map_fn of the clients' local
training (jax.lax.scan over their steps), drjax.reduce_mean of their deltas.

    .peers/jax/bin/python bench/peers/transformer_round_drjax.py [--preset small] [--clients 64]
        [--steps 4] [--batch 4] [--rounds 2] [--threads 1|2]

The model is src/nn/transformer.c's (pre-LN GPT-2 blocks, GELU tanh, learned positions, untied
head, no dropout, GPT-2's initialisers) in jax.numpy; a client runs `steps` steps of SGD (lr 0.1)
on batches of `batch` sequences of random tokens (this measures time), the server SGD at lr 1 on
the mean delta, as bench_transformer_cohorts' `fedc train` does. DrJAX's map_fn vmaps the
clients: XLA holds every client's model and activations at once (memory grows with the cohort).
--threads 1 turns off XLA's Eigen thread pool and pins the process to one core; 2 leaves XLA's
defaults. Round 0 (the compilation) is not timed. Prints a `json: {...}` line (examples are
sequences)."""
import json
import os
import statistics
import sys
import time
from importlib.metadata import version

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import round_args  # noqa: E402

a = round_args.parse(__doc__)
PRESETS = round_args.PRESETS
if a.threads == 1:  # before JAX starts
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " --xla_cpu_multi_thread_eigen=false").strip()
    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})

import drjax  # noqa: E402
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

LAYERS, WIDTH, HEADS, CONTEXT, VOCAB = PRESETS[a.preset]


def init(key):
    keys = iter(jax.random.split(key, 4 + 4 * LAYERS))
    normal = lambda shape, std: std * jax.random.truncated_normal(next(keys), -2, 2, shape)
    resid = 0.02 / (2 * LAYERS) ** 0.5
    ln = lambda: {"g": jnp.ones(WIDTH), "b": jnp.zeros(WIDTH)}
    lin = lambda i, o, std: {"w": normal((i, o), std), "b": jnp.zeros(o)}
    return {"wte": normal((VOCAB, WIDTH), 0.02), "wpe": normal((CONTEXT, WIDTH), 0.01),
            "blocks": [{"ln1": ln(), "qkv": lin(WIDTH, 3 * WIDTH, 0.02), "proj": lin(WIDTH, WIDTH, resid),
                        "ln2": ln(), "fc": lin(WIDTH, 4 * WIDTH, 0.02), "fc2": lin(4 * WIDTH, WIDTH, resid)}
                       for _ in range(LAYERS)],
            "lnf": ln(), "head": normal((WIDTH, VOCAB), 0.02)}


def layer_norm(p, x):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / jnp.sqrt(var + 1e-5) * p["g"] + p["b"]


def block(p, x):
    b, t, c = x.shape
    qkv = layer_norm(p["ln1"], x) @ p["qkv"]["w"] + p["qkv"]["b"]
    q, k, v = (z.reshape(b, t, HEADS, c // HEADS).transpose(0, 2, 1, 3) for z in jnp.split(qkv, 3, axis=-1))
    att = (q @ k.transpose(0, 1, 3, 2)) / (c // HEADS) ** 0.5
    att = jax.nn.softmax(jnp.where(jnp.tril(jnp.ones((t, t), bool)), att, -jnp.inf), axis=-1)
    y = (att @ v).transpose(0, 2, 1, 3).reshape(b, t, c)
    x = x + y @ p["proj"]["w"] + p["proj"]["b"]
    h = jax.nn.gelu(layer_norm(p["ln2"], x) @ p["fc"]["w"] + p["fc"]["b"], approximate=True)
    return x + h @ p["fc2"]["w"] + p["fc2"]["b"]


def loss(params, x, y):
    """The mean cross-entropy of the next-token logits, PAD (0) ignored."""
    h = params["wte"][x] + params["wpe"][: x.shape[1]]
    for p in params["blocks"]:
        h = block(p, h)
    logits = layer_norm(params["lnf"], h) @ params["head"]
    nll = -jnp.take_along_axis(jax.nn.log_softmax(logits), y[..., None], axis=-1)[..., 0]
    real = (y != 0).astype(nll.dtype)
    return (nll * real).sum() / jnp.maximum(real.sum(), 1)


def client_delta(params, xs, ys):
    def step(w, batch):
        g = jax.grad(loss)(w, *batch)
        return jax.tree_util.tree_map(lambda a, b: a - 0.1 * b, w, g), None
    trained, _ = jax.lax.scan(step, params, (xs, ys))
    return jax.tree_util.tree_map(jnp.subtract, trained, params)


@jax.jit
@drjax.program(placements={"clients": a.clients})
def fedavg_round(server, xs, ys):
    deltas = drjax.map_fn(client_delta, (drjax.broadcast(server), xs, ys))
    return jax.tree_util.tree_map(jnp.add, server, drjax.reduce_mean(deltas))


def main():
    server = init(jax.random.PRNGKey(0))
    key = jax.random.PRNGKey(1)
    shape = (a.clients, a.steps, a.batch, CONTEXT)
    times = []
    for r in range(a.rounds + 1):
        key, kx, ky = jax.random.split(key, 3)
        xs, ys = jax.random.randint(kx, shape, 1, VOCAB), jax.random.randint(ky, shape, 1, VOCAB)
        jax.block_until_ready((xs, ys))
        t0 = time.perf_counter()
        server = jax.block_until_ready(fedavg_round(server, xs, ys))
        times.append(time.perf_counter() - t0)
        print(f"drjax round {r}: {times[-1]:.2f} s{' (warm-up: compilation)' if r == 0 else ''}", flush=True)
    timed = times[1:]
    print("json: " + json.dumps({
        "system": "DrJAX", "version": f"drjax {version('drjax')}, jax {jax.__version__}", "threads": a.threads,
        "examples_per_s": a.clients * a.steps * a.batch * len(timed) / sum(timed),
        "s_per_round": statistics.median(timed), "accuracy": None}), flush=True)


if __name__ == "__main__":
    main()
