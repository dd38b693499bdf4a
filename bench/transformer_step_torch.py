#!/usr/bin/python3
"""PyTorch peer of bench/transformer_step.c: the identical model (pre-LN GPT-2
blocks, GELU tanh, learned positions, untied head, no dropout) and the same
training step (loss.backward() + plain SGD), on CPU with a given thread count.
Prints one line: "torch threads=N step_ms=BEST cpu_ms=CPU" (best wall time of the repetitions, and the
best CPU time of the process per step, which a loaded machine distorts less)."""
import argparse, math, time
import torch
import torch.nn as nn
import torch.nn.functional as F

p = argparse.ArgumentParser()
for k, v in dict(layers=6, width=256, heads=4, context=128, vocab=10004, batch=8, reps=5, threads=1).items():
    p.add_argument("--" + k, type=int, default=v)
a = p.parse_args()
torch.set_num_threads(a.threads)
torch.manual_seed(0)

class Block(nn.Module):
    def __init__(s, c, h):
        super().__init__()
        s.h = h
        s.ln1, s.ln2 = nn.LayerNorm(c), nn.LayerNorm(c)
        s.qkv, s.proj = nn.Linear(c, 3 * c), nn.Linear(c, c)
        s.fc, s.fc2 = nn.Linear(c, 4 * c), nn.Linear(4 * c, c)
        s.register_buffer("causal", torch.tril(torch.ones(a.context, a.context)))
    def forward(s, x):
        b, t, c = x.shape
        q, k, v = s.qkv(s.ln1(x)).split(c, dim=2)
        q, k, v = (z.view(b, t, s.h, c // s.h).transpose(1, 2) for z in (q, k, v))
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(c // s.h))  # torch 1.13: no fused SDPA
        att = F.softmax(att.masked_fill(s.causal[:t, :t] == 0, float("-inf")), dim=-1)
        y = att @ v
        x = x + s.proj(y.transpose(1, 2).reshape(b, t, c))
        return x + s.fc2(F.gelu(s.fc(s.ln2(x)), approximate="tanh"))

class LM(nn.Module):
    def __init__(s):
        super().__init__()
        s.wte, s.wpe = nn.Embedding(a.vocab, a.width), nn.Embedding(a.context, a.width)
        s.blocks = nn.ModuleList([Block(a.width, a.heads) for _ in range(a.layers)])
        s.lnf, s.head = nn.LayerNorm(a.width), nn.Linear(a.width, a.vocab, bias=False)
    def forward(s, x, y):
        h = s.wte(x) + s.wpe(torch.arange(x.shape[1]))
        for blk in s.blocks:
            h = blk(h)
        logits = s.head(s.lnf(h))
        return F.cross_entropy(logits.view(-1, a.vocab), y.view(-1), ignore_index=0)

m = LM()
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
