"""PyTorch peer of bench_transformer_cohorts (bench/peers/run's workload 4): FedAvg rounds of
fedc's transformer language model (bench/peers/gpt2_torch.py) over a cohort of clients, each
training a fixed number of steps.

    .peers/torch/bin/python bench/peers/transformer_round_torch.py [--preset small] [--clients 64]
        [--steps 4] [--batch 4] [--rounds 2] [--threads 2]

A round: each client in turn loads the server's model and runs `steps` steps of SGD (lr 0.1) on
batches of `batch` sequences of the context's length (random tokens: this measures time); the
server takes the clients' mean delta with SGD at lr 1 (FedAvg), as bench_transformer_cohorts'
`fedc train` does. Round 0 is a warm-up, not timed. Prints a `json: {...}` line (examples are
sequences)."""
import json
import os
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gpt2_torch import LM  # noqa: E402
import round_args  # noqa: E402

a = round_args.parse(__doc__)
PRESETS = round_args.PRESETS
torch.set_num_threads(a.threads)
torch.manual_seed(0)
layers, width, heads, context, vocab = PRESETS[a.preset]
server, client = LM(*PRESETS[a.preset]), LM(*PRESETS[a.preset])
g = torch.Generator().manual_seed(1)
times = []
for r in range(a.rounds + 1):
    t0 = time.perf_counter()
    total = [torch.zeros_like(w) for w in server.parameters()]
    for _ in range(a.clients):
        client.load_state_dict(server.state_dict())
        opt = torch.optim.SGD(client.parameters(), lr=0.1)
        for _ in range(a.steps):
            x = torch.randint(1, vocab, (a.batch, context), generator=g)
            y = torch.randint(1, vocab, (a.batch, context), generator=g)
            opt.zero_grad(set_to_none=True)
            client(x, y).backward()
            opt.step()
        with torch.no_grad():
            for acc, ws, wc in zip(total, server.parameters(), client.parameters()):
                acc.add_(wc - ws)
    with torch.no_grad():
        for ws, acc in zip(server.parameters(), total):
            ws.add_(acc / a.clients)  # server SGD at lr 1 on the mean delta
    times.append(time.perf_counter() - t0)
    print(f"torch round {r}: {times[-1]:.2f} s{' (warm-up)' if r == 0 else ''}", flush=True)
timed = times[1:]
print("json: " + json.dumps({"system": "torch eager", "version": f"torch {torch.__version__}", "threads": a.threads,
                             "examples_per_s": a.clients * a.steps * a.batch * len(timed) / sum(timed),
                             "s_per_round": statistics.median(timed), "accuracy": None}), flush=True)
