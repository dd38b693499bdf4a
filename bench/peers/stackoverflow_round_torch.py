#!/usr/bin/python3
"""PyTorch peer of bench/stackoverflow_round.c: FedAvg rounds of FedJAX's Stack Overflow word
LSTM (fedjax/models/stackoverflow.py create_lstm_model, fedc's stackoverflow_lstm) on the cohorts
that the fedc side trained (--cohorts FILE: per round, each client's [sentences, steps]).

    Embed(10,004, 96) -> LSTM(670) -> Linear(96) -> Linear(10,004), time-major as FedJAX;
    loss: mean cross-entropy over the positions whose target is not PAD (0);
    a client: the server's model, `steps` SGD steps (lr 0.5) on batches [16, 20] of word ids;
    the server: the example-weighted mean of the clients' deltas, Adam (lr 0.02, eps 1e-8).

The clients' data is random word ids (this measures time); a client runs its steps as the fedc
side does. nn.LSTM keeps two bias vectors where Haiku keeps one: 2,680 more parameters.

Prints one line per round "torch round R: S steps, T s", "torch median_s=M" (the median over
the rounds after the first, a warm-up, as the fedc side counts them) and a `json: {...}` line
for bench/peers/run (its workload 3; examples/s counts sentences)."""
import argparse
import json
import statistics
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

p = argparse.ArgumentParser()
p.add_argument("--cohorts", required=True)
p.add_argument("--threads", type=int, default=2)
a = p.parse_args()
torch.set_num_threads(a.threads)
torch.manual_seed(0)
cfg = json.load(open(a.cohorts))
BATCH, WORDS, VOCAB, EMBED, HIDDEN = cfg["batch"], cfg["words"], 10004, 96, 670


class StackOverflowLSTM(nn.Module):
    def __init__(s):
        super().__init__()
        s.embed = nn.Embedding(VOCAB, EMBED)
        s.lstm = nn.LSTM(EMBED, HIDDEN)  # time-major input [T, B, in]
        s.project = nn.Linear(HIDDEN, EMBED)
        s.output = nn.Linear(EMBED, VOCAB)

    def forward(s, x, y):  # x, y: [B, T] word ids
        h = s.lstm(s.embed(x.t()))[0]
        logits = s.output(s.project(h))
        return F.cross_entropy(logits.reshape(-1, VOCAB), y.t().reshape(-1), ignore_index=0)


server = StackOverflowLSTM()
client = StackOverflowLSTM()
server_opt = torch.optim.Adam(server.parameters(), lr=0.02, betas=(0.9, 0.999), eps=1e-8)
g = torch.Generator().manual_seed(1)
times = []
for r, cohort in enumerate(cfg["rounds"]):
    t0 = time.perf_counter()
    total = [torch.zeros_like(w) for w in server.parameters()]
    weight = 0.0
    for sentences, steps in cohort:
        client.load_state_dict(server.state_dict())
        opt = torch.optim.SGD(client.parameters(), lr=0.5)
        for _ in range(steps):
            x = torch.randint(1, VOCAB, (BATCH, WORDS), generator=g)
            y = torch.randint(1, VOCAB, (BATCH, WORDS), generator=g)
            opt.zero_grad(set_to_none=True)
            client(x, y).backward()
            opt.step()
        n = float(min(sentences, steps * BATCH))
        with torch.no_grad():
            for acc, ws, wc in zip(total, server.parameters(), client.parameters()):
                acc.add_(ws - wc, alpha=n)
        weight += n
    server_opt.zero_grad(set_to_none=True)
    for ws, acc in zip(server.parameters(), total):
        ws.grad = acc / weight  # FedAvg's pseudo-gradient: the mean delta
    server_opt.step()
    t = time.perf_counter() - t0
    times.append(t)
    print(f"torch round {r}: {sum(s for _, s in cohort)} steps, {t:.1f} s{' (warm-up)' if r == 0 else ''}",
          flush=True)
timed = times[1:] if len(times) > 1 else times
print(f"torch median_s={statistics.median(timed):.3f}")
steps = sum(s for cohort in cfg["rounds"][len(times) - len(timed):] for _, s in cohort)
print("json: " + json.dumps({"system": "torch eager", "version": f"torch {torch.__version__}", "threads": a.threads,
                             "examples_per_s": steps * BATCH / sum(timed), "s_per_round": statistics.median(timed),
                             "accuracy": None}), flush=True)
