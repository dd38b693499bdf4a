#!/usr/bin/python3
"""PyTorch peer of bench/lstm_step.c: FedJAX's Shakespeare LSTM (fedjax/models/shakespeare.py,
fedc's shakespeare_lstm) and the same training step, on CPU with a given number of threads.

    Embed(90, 8) -> LSTM(256) -> tanh -> LSTM(256) -> tanh -> Linear(90), time-major as FedJAX;
    loss: mean cross-entropy over the tokens whose target is not PAD (0);
    step: zero_grad, forward, backward, torch.optim.SGD.step (lr 0.01).

nn.LSTM keeps two bias vectors (b_ih, b_hh) where Haiku (and fedc) keep one; that is 2,048 more
parameters and one more vector add per step, nothing that matters to the time.

Prints "torch threads=N batch=B seq=T step_ms=MEDIAN best_ms=BEST cpu_ms=CPU" (median and best
wall time of --steps steps after --warmup steps, and the median CPU time of the process per step,
which a loaded machine distorts less), and with --json a line "json: {...}" for bench/harness.py."""
import argparse
import json
import statistics
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

p = argparse.ArgumentParser()
for k, v in dict(batch=4, seq=80, vocab=90, embed=8, hidden=256, steps=20, warmup=3, threads=1).items():
    p.add_argument("--" + k, type=int, default=v)
p.add_argument("--json", action="store_true")
a = p.parse_args()
torch.set_num_threads(a.threads)
torch.manual_seed(0)


class ShakespeareLSTM(nn.Module):
    def __init__(s):
        super().__init__()
        s.embed = nn.Embedding(a.vocab, a.embed)
        s.lstm1 = nn.LSTM(a.embed, a.hidden)  # time-major input [T, B, in]
        s.lstm2 = nn.LSTM(a.hidden, a.hidden)
        s.output = nn.Linear(a.hidden, a.vocab)

    def forward(s, x, y):  # x, y: [B, T] token ids
        h = s.embed(x.t())
        h = torch.tanh(s.lstm1(h)[0])
        h = torch.tanh(s.lstm2(h)[0])
        logits = s.output(h)
        return F.cross_entropy(logits.reshape(-1, a.vocab), y.t().reshape(-1), ignore_index=0)


m = ShakespeareLSTM()
opt = torch.optim.SGD(m.parameters(), lr=0.01)
g = torch.Generator().manual_seed(1)
x = torch.randint(1, a.vocab, (a.batch, a.seq), generator=g)
y = torch.randint(1, a.vocab, (a.batch, a.seq), generator=g)
times, cpu = [], []
for r in range(a.warmup + a.steps):
    t0, c0 = time.perf_counter(), time.process_time()
    opt.zero_grad(set_to_none=True)
    m(x, y).backward()
    opt.step()
    t, c = time.perf_counter() - t0, time.process_time() - c0
    if r >= a.warmup:
        times.append(t)
        cpu.append(c)
med, best, cpu_med = statistics.median(times) * 1e3, min(times) * 1e3, statistics.median(cpu) * 1e3
print(f"torch threads={a.threads} batch={a.batch} seq={a.seq} step_ms={med:.3f} best_ms={best:.3f} "
      f"cpu_ms={cpu_med:.3f} params={sum(q.numel() for q in m.parameters())}")
if a.json:
    print("json: " + json.dumps({"bench": "lstm_step_torch", "threads": a.threads, "batch": a.batch, "seq": a.seq,
                                 "step_ms": med, "best_ms": best, "cpu_ms": cpu_med}))
