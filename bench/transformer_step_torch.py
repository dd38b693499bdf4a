#!/usr/bin/python3
"""PyTorch peer of bench/transformer_step.c: the identical model (pre-LN GPT-2
blocks, GELU tanh, learned positions, untied head, no dropout: bench/peers/gpt2_torch.py)
and the same training step (loss.backward() + plain SGD), on CPU with a given thread count.
Prints one line: "torch threads=N step_ms=BEST cpu_ms=CPU" (best wall time of the repetitions, and the
best CPU time of the process per step, which a loaded machine distorts less)."""
import argparse, math, os, sys, time
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "peers"))
from gpt2_torch import LM  # noqa: E402

p = argparse.ArgumentParser()
for k, v in dict(layers=6, width=256, heads=4, context=128, vocab=10004, batch=8, reps=5, threads=1).items():
    p.add_argument("--" + k, type=int, default=v)
a = p.parse_args()
torch.set_num_threads(a.threads)
torch.manual_seed(0)

m = LM(a.layers, a.width, a.heads, a.context, a.vocab)
opt = torch.optim.SGD(m.parameters(), lr=0.01)
x = torch.randint(1, a.vocab, (a.batch, a.context))
y = torch.randint(1, a.vocab, (a.batch, a.context))
best = best_cpu = math.inf
for r in range(a.reps + 1):  # the first is a warm-up
    t0, c0 = time.perf_counter(), time.process_time()
    opt.zero_grad(set_to_none=True)
    m(x, y).backward()
    opt.step()
    t, c = time.perf_counter() - t0, time.process_time() - c0
    if r: best, best_cpu = min(best, t), min(best_cpu, c)
print(f"torch threads={a.threads} step_ms={best * 1e3:.2f} cpu_ms={best_cpu * 1e3:.2f} "
      f"params={sum(q.numel() for q in m.parameters())}")
