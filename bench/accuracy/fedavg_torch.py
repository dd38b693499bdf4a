#!/usr/bin/python3
"""FedAvg (and FedAdam, SCAFFOLD) on FEMNIST-LEAF in PyTorch: the peer of `fedc train` in the
accuracy benchmarks (bench/accuracy/run.sh, bench/accuracy/algorithms.sh, docs/benchmarks.md).

The same job as

    fedc train --data ../shared/data/femnist-leaf/train --test-data ../shared/data/femnist-leaf/test \
      --model cnn --algorithm fedavg --rounds 100 --clients-per-round 10 --batch-size 20 \
      --epochs 1 --client-lr 0.1 --server-lr 1 --eval-every 10 --seed 0

written as a PyTorch user would write it: clients run one after another, each a copy of the
server model trained with torch.optim.SGD; the server's step is a torch.optim optimizer (SGD or
Adam) whose gradient is the example-weighted mean of the clients' updates (server - client).

- Data: LEAF JSON (gzip), x = 1 - pixels as float32 [N, 1, 28, 28] (FedJAX's EMNIST
  preprocessing; LEAF stores pixel/255 with 1.0 = white), labels 0..61.
- Model: FedJAX's EMNIST CNN (conv 3x3x32 VALID, relu, conv 3x3x64, relu, max-pool 2x2,
  dropout 0.25, flatten, dense 128, relu, dropout 0.5, dense 62) with Haiku's initialiser:
  weights truncated normal (within 2 std) of std 1/sqrt(fan_in), biases zero.
- Round: 10 of the train clients sampled uniformly without replacement (numpy Generator seeded by
  (seed, round)); each client one epoch of SGD over its examples shuffled (Generator seeded by
  (seed, round, client)) in batches of 20, loss = mean cross-entropy of the batch. The batches are
  FedJAX's shuffle_repeat_batch, as fedc's: ceil(n / 20) full batches, the last completed from a
  second shuffle, and clients weighted by the examples they processed (--partial-last-batch: the
  last batch smaller, clients weighted by n). Server: w <- w - server_lr * weighted mean of
  (w - w_client), or Adam on that pseudo-gradient.
- Evaluation every --eval-every rounds and after the last: accuracy over all test examples
  (example-weighted over the test clients), eval mode (no dropout).
- --algorithm scaffold (Karimireddy et al. 2020, option II): the server keeps c, each client c_i
  (zeros until sampled); every local step adds c - c_i to the gradient before SGD's step; after K
  steps c_i+ = c_i - c + (w - y_i) / (K lr); the server steps on the weighted mean of w - y_i as
  FedAvg does and sets c += sum(c_i+ - c_i) / N, N the train clients.
- --algorithm mime (Karimireddy et al. 2020; FedJAX's mime.py): the server first takes the
  full-batch gradient c at its model over the cohort's data (each client's batches, the sum of
  count x gradient over the total count); every local step uses g(y) - g(x) + c on the batch, the
  same dropout mask for both gradients, and the base optimizer (SGD with --client-momentum B,
  optax's trace: m' = g + B m, y -= lr m') with the server's state m applied but not updated; the
  server moves by --server-lr times the mean of x - y_i weighted by the clients' dataset sizes,
  and updates m with c.

Uses only torch and numpy (Debian: python3-torch, python3-numpy; scripts/install-bench-deps).
"""

import argparse
import glob
import gzip
import json
import math
import os
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

DEFAULT_DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "shared", "data",
                            "femnist-leaf")


def load_leaf(directory):
    """Returns [(user id, x float32 [n,1,28,28] = 1 - pixels, y int64 [n])], users in file order."""
    files = sorted(glob.glob(os.path.join(directory, "*.json.gz")) + glob.glob(os.path.join(directory, "*.json")))
    if not files:
        sys.exit(f"fedavg_torch: no LEAF .json[.gz] files in {directory}")
    clients = []
    for path in files:
        opener = gzip.open if path.endswith(".gz") else open
        with opener(path, "rt") as f:
            d = json.load(f)
        for user in d["users"]:
            ud = d["user_data"][user]
            x = 1.0 - np.asarray(ud["x"], dtype=np.float32).reshape(-1, 1, 28, 28)
            y = np.asarray(ud["y"], dtype=np.int64)
            if y.min() < 0 or y.max() >= 62:
                sys.exit(f"fedavg_torch: {path}: client {user}: label outside 0..61")
            clients.append((user, torch.from_numpy(np.ascontiguousarray(x)), torch.from_numpy(y)))
    return clients


def read_idx(path):
    with gzip.open(path, "rb") as f:
        raw = f.read()
    dims = [int.from_bytes(raw[4 + 4 * i:8 + 4 * i], "big") for i in range(raw[3])]
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * len(dims)).reshape(dims)


def load_fashion(images_path):
    """Fashion-MNIST IDX (images and the labels file beside them): x = pixels / 255 as
    [N, 1, 28, 28] (fedc's "fashion" task), y int64."""
    labels_path = images_path.replace("images-idx3", "labels-idx1")
    x = read_idx(images_path).astype(np.float32)[:, None] / 255.0
    y = read_idx(labels_path).astype(np.int64)
    return x, y


def partition_dirichlet(y, num_clients, alpha, rng):
    """fedc_partition_dirichlet's algorithm (docs/data.md; Hsu et al. 2019) with numpy's RNG:
    client label mixes q_c ~ Dir(alpha * p), balanced sizes, examples dealt round-robin, each
    client drawing a label from q_c restricted to the labels left and taking a random example of
    it. Returns a list of index arrays."""
    classes = int(y.max()) + 1
    p = np.bincount(y, minlength=classes) / len(y)
    q = np.stack([rng.dirichlet(np.maximum(alpha * p, 1e-300)) for _ in range(num_clients)])
    q = np.nan_to_num(q)
    sizes = np.full(num_clients, len(y) // num_clients)
    sizes[:len(y) % num_clients] += 1
    left = [list(rng.permutation(np.flatnonzero(y == k))) for k in range(classes)]
    out = [[] for _ in range(num_clients)]
    for t in range(int(sizes.max())):
        for c in range(num_clients):
            if len(out[c]) >= sizes[c]:
                continue
            avail = np.array([len(v) > 0 for v in left])
            w = q[c] * avail
            w = w / w.sum() if w.sum() > 0 else avail / avail.sum()
            k = rng.choice(classes, p=w)
            out[c].append(left[k].pop())
    return [np.sort(np.array(v, dtype=np.int64)) for v in out]


class CNN(nn.Module):
    """FedJAX's EMNIST ConvDropoutModule (fedjax/models/emnist.py)."""

    def __init__(self, num_classes=62):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 32, 3)      # VALID: 28 -> 26
        self.conv2 = nn.Conv2d(32, 64, 3)     # 26 -> 24
        self.pool = nn.MaxPool2d(2)           # 24 -> 12
        self.drop1 = nn.Dropout(0.25)
        self.dense1 = nn.Linear(12 * 12 * 64, 128)
        self.drop2 = nn.Dropout(0.5)
        self.dense2 = nn.Linear(128, num_classes)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = F.relu(self.conv2(x))
        x = self.drop1(self.pool(x))
        x = torch.flatten(x, 1)
        x = self.drop2(F.relu(self.dense1(x)))
        return self.dense2(x)


def haiku_init_(model):
    """hk.Linear / hk.Conv2D defaults: TruncatedNormal(stddev=1/sqrt(fan_in)) in (-2, 2) std, bias 0."""
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, (nn.Conv2d, nn.Linear)):
                fan_in = m.weight[0].numel()           # in (x kh x kw)
                std = 1.0 / math.sqrt(fan_in)
                nn.init.trunc_normal_(m.weight, mean=0.0, std=std, a=-2 * std, b=2 * std)
                nn.init.zeros_(m.bias)


def evaluate(model, clients, batch_size=100):
    model.eval()
    correct, loss_sum, count = 0, 0.0, 0
    with torch.no_grad():
        for _, x, y in clients:
            for i in range(0, len(y), batch_size):
                logits = model(x[i:i + batch_size])
                yb = y[i:i + batch_size]
                loss_sum += F.cross_entropy(logits, yb, reduction="sum").item()
                correct += (logits.argmax(1) == yb).sum().item()
                count += len(yb)
    return loss_sum / count, correct / count


def client_update(model, x, y, lr, batch_size, epochs, rng, partial_last_batch, correction=None):
    """Local SGD on one client; returns (mean batch loss, examples processed).

    By default the batches are those of FedJAX's shuffle_repeat_batch, which fedc follows: the
    example order is a stream of shuffles of the client's n examples and every batch takes the
    next batch_size of them, so all ceil(n * epochs / batch_size) batches are full (the last one
    is completed from the next shuffle). With partial_last_batch each epoch is one shuffle cut
    into batches, the last one smaller (a DataLoader with shuffle=True, drop_last=False).
    correction (SCAFFOLD's c - c_i, one tensor per parameter) is added to every gradient. Returns
    (mean batch loss, examples processed, steps taken)."""
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    model.train()
    n = len(y)
    if partial_last_batch:
        batches = []
        for _ in range(epochs):
            order = torch.from_numpy(rng.permutation(n))
            batches += [order[i:i + batch_size] for i in range(0, n, batch_size)]
    else:
        steps = -(-n * epochs // batch_size)
        shuffles = -(-steps * batch_size // n)
        order = torch.from_numpy(np.concatenate([rng.permutation(n) for _ in range(shuffles)]))
        batches = [order[i * batch_size:(i + 1) * batch_size] for i in range(steps)]
    loss_sum, examples = 0.0, 0
    for idx in batches:
        opt.zero_grad()
        loss = F.cross_entropy(model(x[idx]), y[idx])
        loss.backward()
        if correction is not None:
            with torch.no_grad():
                for p, corr in zip(model.parameters(), correction):
                    p.grad.add_(corr)
        opt.step()
        loss_sum += loss.item()
        examples += len(idx)
    return loss_sum / max(len(batches), 1), examples, len(batches)


def batch_gradient(model, x, y, seed):
    """The gradient of the batch's mean loss at model's parameters, dropout drawn from `seed`."""
    model.zero_grad()
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        loss = F.cross_entropy(model(x), y)
    loss.backward()
    return loss.item(), [p.grad.detach().clone() for p in model.parameters()]


def mime_full_gradient(model, clients, batch_size, seed):
    """Mime's server gradient: the sum over the clients' batches of count x gradient, over the count."""
    model.train()
    total = [torch.zeros_like(p) for p in model.parameters()]
    count = 0
    for k, (x, y) in enumerate(clients):
        for i in range(0, len(y), batch_size):
            _, g = batch_gradient(model, x[i:i + batch_size], y[i:i + batch_size], seed * 7919 + k * 104729 + i)
            n = len(y[i:i + batch_size])
            for t, gi in zip(total, g):
                t.add_(gi, alpha=n)
            count += n
    return [t / count for t in total]


def mime_client_update(client, server, x, y, c, momentum, lr, batch_size, epochs, rng, seed):
    """Mime's local steps on one client: g(y) - g(x) + c through the frozen base optimizer."""
    client.train()
    server.train()
    n = len(y)
    steps = -(-n * epochs // batch_size)
    shuffles = -(-steps * batch_size // n)
    order = torch.from_numpy(np.concatenate([rng.permutation(n) for _ in range(shuffles)]))
    loss_sum = 0.0
    for s in range(steps):
        idx = order[s * batch_size:(s + 1) * batch_size]
        loss, gy = batch_gradient(client, x[idx], y[idx], seed + s)
        _, gx = batch_gradient(server, x[idx], y[idx], seed + s)
        with torch.no_grad():
            for p, a, b, cs, m in zip(client.parameters(), gy, gx, c, momentum):
                p.sub_(lr * (a - b + cs + m))  # optax trace: (g + beta m), m the frozen state times beta
        loss_sum += loss
    return loss_sum / max(steps, 1), steps * batch_size


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default=os.path.join(DEFAULT_DATA, "train"),
                    help="LEAF train directory, or a Fashion-MNIST train-images-idx3-ubyte.gz (then split by "
                         "--partition; the test set is the t10k file beside it)")
    ap.add_argument("--test-data", default=os.path.join(DEFAULT_DATA, "test"), help="LEAF test directory")
    ap.add_argument("--partition", default="dirichlet:0.5", help="for IDX data: dirichlet:ALPHA or iid")
    ap.add_argument("--num-clients", type=int, default=100, help="for IDX data")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--rounds", type=int, default=100)
    ap.add_argument("--clients-per-round", type=int, default=10)
    ap.add_argument("--batch-size", type=int, default=20)
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--client-lr", type=float, default=None, help="default 0.1 (sgd server), 10^-1.5 (adam)")
    ap.add_argument("--algorithm", choices=["fedavg", "scaffold", "mime"], default="fedavg")
    ap.add_argument("--client-momentum", type=float, default=0.0, help="mime: the base optimizer's momentum")
    ap.add_argument("--server-opt", choices=["sgd", "adam"], default="sgd")
    ap.add_argument("--server-lr", type=float, default=None, help="default 1 (sgd), 10^-2.5 (adam)")
    ap.add_argument("--eps", type=float, default=1e-4, help="Adam's epsilon (default 1e-4)")
    ap.add_argument("--partial-last-batch", action="store_true",
                    help="cut each epoch's shuffle into batches, the last one smaller, and weight clients by "
                         "their examples (default: fedc's and FedJAX's shuffle_repeat_batch, full batches, "
                         "clients weighted by the examples they processed)")
    ap.add_argument("--eval-every", type=int, default=10)
    ap.add_argument("--threads", type=int, default=2, help="torch.set_num_threads")
    ap.add_argument("--out", default=None, help="write metrics.jsonl here")
    a = ap.parse_args()
    if a.client_lr is None:
        a.client_lr = 10 ** -1.5 if a.server_opt == "adam" else 0.1
    if a.server_lr is None:
        a.server_lr = 10 ** -2.5 if a.server_opt == "adam" else 1.0

    torch.set_num_threads(a.threads)
    t_load = time.time()
    if a.data.endswith((".gz", "-ubyte")) and "idx3" in os.path.basename(a.data):
        # Fashion-MNIST (fedc's "fashion" task, 10 classes), split into clients; numpy's RNG
        # keyed by (seed, "partition"), so the split differs from fedc's (same distribution)
        x, y = load_fashion(a.data)
        prng = np.random.default_rng([a.seed, 0x70617274])
        if a.partition == "iid":
            parts = np.array_split(prng.permutation(len(y)), a.num_clients)
        elif a.partition.startswith("dirichlet:"):
            parts = partition_dirichlet(y, a.num_clients, float(a.partition[10:]), prng)
        else:
            sys.exit(f"fedavg_torch: unknown partition {a.partition}")
        train = [(str(c), torch.from_numpy(x[i]), torch.from_numpy(y[i])) for c, i in enumerate(parts)]
        tx, ty = load_fashion(os.path.join(os.path.dirname(a.data), "t10k-images-idx3-ubyte.gz"))
        test = [("t10k", torch.from_numpy(tx), torch.from_numpy(ty))]
        num_classes = 10
    else:
        train = load_leaf(a.data)
        test = load_leaf(a.test_data)
        num_classes = 62
    t_load = time.time() - t_load
    print(f"data: {len(train)} train clients ({sum(len(c[2]) for c in train)} examples), "
          f"{len(test)} test clients ({sum(len(c[2]) for c in test)} examples), loaded in {t_load:.1f} s")
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads; server {a.server_opt} lr {a.server_lr:g}"
          + (f" eps {a.eps:g}" if a.server_opt == "adam" else "") + f", client sgd lr {a.client_lr:g}, seed {a.seed}"
          + f", {a.algorithm}")

    torch.manual_seed(a.seed)                       # init and dropout
    server = CNN(num_classes)
    haiku_init_(server)
    print(f"model: {sum(p.numel() for p in server.parameters())} parameters")
    if a.server_opt == "adam":
        server_opt = torch.optim.Adam(server.parameters(), lr=a.server_lr, betas=(0.9, 0.999), eps=a.eps)
    else:
        server_opt = torch.optim.SGD(server.parameters(), lr=a.server_lr)
    client = CNN(num_classes)
    scaffold = a.algorithm == "scaffold"
    mime = a.algorithm == "mime"
    mime_m = [torch.zeros_like(p) for p in server.parameters()] if mime else None  # the base optimizer's trace
    c = [torch.zeros_like(p) for p in server.parameters()] if scaffold else None
    c_clients = {}  # SCAFFOLD's c_i, by client index (absent: zeros)
    if a.out:
        os.makedirs(a.out, exist_ok=True)
    metrics = open(os.path.join(a.out, "metrics.jsonl"), "w") if a.out else None

    start = time.time()
    examples_total = 0
    acc = loss = float("nan")
    for r in range(a.rounds):
        rng = np.random.default_rng([a.seed, r])
        chosen = rng.choice(len(train), size=min(a.clients_per_round, len(train)), replace=False)
        delta = [torch.zeros_like(p) for p in server.parameters()]
        dc = [torch.zeros_like(p) for p in server.parameters()] if scaffold else None
        if mime:
            mime_c = mime_full_gradient(server, [(train[ci][1], train[ci][2]) for ci in chosen], a.batch_size,
                                        a.seed * 1000003 + r)
            frozen = [a.client_momentum * m for m in mime_m]
        weight_total, round_loss = 0, 0.0
        for ci in chosen:
            _, x, y = train[ci]
            client.load_state_dict(server.state_dict())
            c_i = c_clients.get(int(ci)) or [torch.zeros_like(p) for p in server.parameters()]
            corr = [cs - cc for cs, cc in zip(c, c_i)] if scaffold else None
            if mime:
                closs, _ = mime_client_update(client, server, x, y, mime_c, frozen, a.client_lr, a.batch_size,
                                              a.epochs, np.random.default_rng([a.seed, r, int(ci)]),
                                              (a.seed * 1000003 + r) * 1009 + int(ci))
                n = k = len(y)  # Mime weights clients by their dataset size
            else:
                closs, n, k = client_update(client, x, y, a.client_lr, a.batch_size, a.epochs,
                                            np.random.default_rng([a.seed, r, int(ci)]), a.partial_last_batch, corr)
            with torch.no_grad():
                for d, ps, pc in zip(delta, server.parameters(), client.parameters()):
                    d.add_(ps - pc, alpha=n)
                if scaffold:  # option II: c_i+ = c_i - c + (w - y_i) / (K lr)
                    new = [cc - cs + (ps - pc) / (max(k, 1) * a.client_lr)
                           for cc, cs, ps, pc in zip(c_i, c, server.parameters(), client.parameters())]
                    for acc_dc, nw, old in zip(dc, new, c_i):
                        acc_dc.add_(nw - old)
                    c_clients[int(ci)] = new
            weight_total += n
            round_loss += closs * n
            examples_total += n
        # server step on the pseudo-gradient: the example-weighted mean of (server - client)
        server_opt.zero_grad()
        for p, d in zip(server.parameters(), delta):
            p.grad = d / weight_total
        server_opt.step()
        if scaffold:
            with torch.no_grad():
                for cs, d in zip(c, dc):
                    cs.add_(d / len(train))
        if mime:  # the base optimizer's state takes the full gradient
            with torch.no_grad():
                for m, cg in zip(mime_m, mime_c):
                    m.mul_(a.client_momentum).add_(cg)
        train_loss = round_loss / weight_total
        elapsed = time.time() - start
        eps = examples_total / elapsed
        print(f"round {r + 1}/{a.rounds}  train loss {train_loss:.4f}  {eps:.0f} examples/s  elapsed {elapsed:.0f}s",
              flush=True)
        if r + 1 == a.rounds or (a.eval_every > 0 and (r + 1) % a.eval_every == 0):
            loss, acc = evaluate(server, test)
            print(f"round {r + 1}: test loss {loss:.4f}, accuracy {100 * acc:.2f}%", flush=True)
            if metrics:
                metrics.write(json.dumps({"round": r + 1, "train_loss": train_loss, "test_loss": loss,
                                          "test_accuracy": acc, "examples_per_s": eps,
                                          "seconds": time.time() - start}) + "\n")
                metrics.flush()
    seconds = time.time() - start
    print(f"done: {a.rounds} rounds in {seconds:.1f} s ({examples_total / seconds:.0f} examples/s)")
    print(f"final accuracy {100 * acc:.2f}")


if __name__ == "__main__":
    main()
