"""FedAvg in PyTorch 2, eager or under torch.compile: bench/peers/run's PyTorch peer of
workloads 1 and 2 (docs/benchmarks.md, "Against today's peers").

    .peers/torch/bin/python bench/peers/fedavg_torch2.py --workload 1|2 --data DIR [--compile]

A plain FedAvg loop as a PyTorch user writes it: the cohort's clients one after another, each a
copy of the server model trained with torch.optim.SGD over one epoch of full batches (FedJAX's
shuffle_repeat_batch, as fedc's), the server's new model the mean of the clients' (server lr 1:
weighted by the examples trained on, which for workload 2's clients of 50 is pfl's unweighted
mean). --compile trains through torch.compile(model) (forward and backward compiled; the
optimizer's step eager); evaluation is eager, in eval mode, after the last round.

- Workload 1: FedJAX's EMNIST CNN (bench/accuracy/fedavg_torch.py's, Haiku's initialiser), 10
  clients a round, batch 20, client lr 0.1.
- Workload 2: pfl-research's simple_cnn (benchmarks/model/pytorch/cnn.py: Xavier-uniform
  weights, PyTorch's default biases), 50 clients a round, batch 10, client lr 0.1.

The first --warmup-rounds rounds (default 1: torch.compile's compilation, the allocator's first
blocks) are trained but not timed. The test split is evaluated after the last round and after
every --eval-every-th (untimed: outside the rounds' time, timed on its own). Prints a
`json: {...}` line: examples_per_s and s_per_round over the timed rounds, warmup_s, accuracy
(the last round's), eval_s (its evaluation's seconds), evals (every evaluation's round,
accuracy and seconds), threads, torch's version.
"""

import json
import math
import os
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peer_data  # noqa: E402

WORKLOADS = {1: dict(per_round=10, batch=20, lr=0.1), 2: dict(per_round=50, batch=10, lr=0.1)}


def make_model(workload):
    """Workload 1: FedJAX's EMNIST CNN (28x28x1, 62 classes); 2: pfl's simple_cnn (32x32x3, 10)."""
    side, channels, classes = (28, 1, 62) if workload == 1 else (32, 3, 10)
    pooled = (side - 4) // 2
    model = nn.Sequential(nn.Conv2d(channels, 32, 3), nn.ReLU(), nn.Conv2d(32, 64, 3), nn.ReLU(),
                          nn.MaxPool2d(2, 2), nn.Dropout(0.25), nn.Flatten(), nn.Linear(pooled * pooled * 64, 128),
                          nn.ReLU(), nn.Dropout(0.5), nn.Linear(128, classes))
    if workload == 1:  # hk.Conv2D / hk.Linear: TruncatedNormal(1/sqrt(fan_in)) within 2 std, bias 0
        with torch.no_grad():
            for m in model.modules():
                if isinstance(m, (nn.Conv2d, nn.Linear)):
                    std = 1.0 / math.sqrt(m.weight[0].numel())
                    nn.init.trunc_normal_(m.weight, std=std, a=-2 * std, b=2 * std)
                    nn.init.zeros_(m.bias)
    else:  # pfl's simple_cnn: Glorot (Xavier) uniform weights
        for m in model.modules():
            if isinstance(m, (nn.Conv2d, nn.Linear)):
                nn.init.xavier_uniform_(m.weight)
    return model


def nchw(x):
    return torch.from_numpy(np.ascontiguousarray(x.transpose(0, 3, 1, 2)))


def accuracy(model, x, y, batch=1000):
    model.eval()
    correct = 0
    with torch.no_grad():
        for i in range(0, len(y), batch):
            correct += (model(x[i:i + batch]).argmax(1) == y[i:i + batch]).sum().item()
    return correct / len(y)


def timed_accuracy(model, x, y, round_num):
    """{round, accuracy, seconds}: an evaluation of the test split after round round_num, timed
    (it is not in the rounds' time)."""
    t0 = time.perf_counter()
    acc = accuracy(model, x, y)
    return {"round": round_num, "accuracy": acc, "seconds": time.perf_counter() - t0}


def main():
    def extra(ap):
        ap.add_argument("--workload", type=int, choices=[1, 2], required=True)
        ap.add_argument("--compile", action="store_true", help="train through torch.compile(model)")
    a = peer_data.arguments(__doc__, "workload 1: a LEAF directory (train/, test/); 2: cifar-10-batches-py", extra)
    w = WORKLOADS[a.workload]
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)

    train, tx, ty = peer_data.load(a.workload, a.data)
    train = [(nchw(x), torch.from_numpy(y)) for _, x, y in train]
    tx, ty = nchw(tx), torch.from_numpy(ty)
    server = make_model(a.workload)
    client = make_model(a.workload)
    step_model = torch.compile(client) if a.compile else client

    examples, t_timed, t_warm = 0, 0.0, 0.0
    evaluate_after, evals = peer_data.eval_rounds(a), []
    for r in range(a.warmup_rounds + a.rounds):
        t0 = time.perf_counter()
        total = [torch.zeros_like(p) for p in server.parameters()]
        weight = 0
        for ci in peer_data.cohort(len(train), w["per_round"], a.seed, r):
            x, y = train[ci]
            client.load_state_dict(server.state_dict())
            client.train()
            opt = torch.optim.SGD(client.parameters(), lr=w["lr"])
            rng = np.random.default_rng([a.seed, r, int(ci)])
            batches = peer_data.batches(len(y), w["batch"], rng)
            for idx in batches:
                idx = torch.from_numpy(idx)
                opt.zero_grad(set_to_none=True)
                F.cross_entropy(step_model(x[idx]), y[idx]).backward()
                opt.step()
            n = len(batches) * w["batch"]
            with torch.no_grad():
                for t, p in zip(total, client.parameters()):
                    t.add_(p, alpha=n)
            weight += n
            if r >= a.warmup_rounds:
                examples += n
        with torch.no_grad():
            for p, t in zip(server.parameters(), total):
                p.copy_(t / weight)
        dt = time.perf_counter() - t0
        if r >= a.warmup_rounds:
            t_timed += dt
        else:
            t_warm += dt
        if r + 1 in evaluate_after:
            evals.append(timed_accuracy(server, tx, ty, r + 1))
    print("json: " + json.dumps({
        "system": "torch.compile" if a.compile else "torch eager", "version": f"torch {torch.__version__}",
        "threads": torch.get_num_threads(), "examples_per_s": examples / t_timed, "s_per_round": t_timed / a.rounds,
        "warmup_s": t_warm, "accuracy": evals[-1]["accuracy"], "eval_s": evals[-1]["seconds"], "evals": evals}),
        flush=True)


if __name__ == "__main__":
    main()
