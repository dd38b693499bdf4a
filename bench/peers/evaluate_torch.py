#!/usr/bin/python3
"""The PyTorch peer of bench_evaluate (issue 7, workload 2): evaluation of FedJAX's EMNIST CNN,
forward only, in large batches, as a PyTorch user writes it: model.eval(), torch.no_grad(), per
batch the logits, the summed cross-entropy and the argmax's correct count.

    /usr/bin/python3 bench/peers/evaluate_torch.py [--examples 10000] [--batch 500] [--threads 2]
                                                   [--repeats 3]

Synthetic 28x28x1 examples (uniform pixels, labels 0..61) in tensors beforehand; after a warm-up
pass, `repeats` passes are timed and the median printed, with a last line `json: {...}` for
bench/run. The model is bench/accuracy/fedavg_torch.py's CNN (Haiku's initialiser)."""

import argparse
import json
import os
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "accuracy"))
from fedavg_torch import CNN, haiku_init_  # noqa: E402


def one_pass(model, x, y, batch):
    correct, loss_sum = 0, 0.0
    with torch.no_grad():
        for i in range(0, len(y), batch):
            logits = model(x[i:i + batch])
            loss_sum += F.cross_entropy(logits, y[i:i + batch], reduction="sum").item()
            correct += (logits.argmax(1) == y[i:i + batch]).sum().item()
    return loss_sum, correct


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--examples", type=int, default=10000)
    ap.add_argument("--batch", type=int, default=500)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    model = CNN(62)
    haiku_init_(model)
    model.eval()
    x = torch.rand(a.examples, 1, 28, 28)
    y = torch.randint(0, 62, (a.examples,))
    one_pass(model, x, y, a.batch)  # warm-up
    times = []
    for _ in range(a.repeats):
        t0 = time.perf_counter()
        one_pass(model, x, y, a.batch)
        times.append(time.perf_counter() - t0)
    s = sorted(times)[len(times) // 2]
    print(f"torch {torch.__version__} EMNIST CNN evaluation: {a.examples} examples (batch {a.batch}), "
          f"{a.threads} threads: {s:.3f} s, {a.examples / s:.0f} examples/s")
    print("json: " + json.dumps({"bench": "evaluate_torch", "examples": a.examples, "batch": a.batch,
                                 "threads": a.threads, "seconds": s, "examples_per_s": a.examples / s}))


if __name__ == "__main__":
    main()
