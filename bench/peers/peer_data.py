"""The data of bench/peers/run's two workloads, in numpy alone, for every peer (PyTorch 2, FedJAX,
pfl-research, Flower) and for the synthetic files fedc reads, so that fedc and each peer train on
the same bytes.

- Workload 1, FEMNIST-LEAF: the LEAF JSON files fedc reads (../shared/data/femnist-leaf); x =
  1 - pixel as float32 [n, 28, 28, 1] (FedJAX's EMNIST preprocessing, fedc's `emnist` task), y
  int64 0..61, one client per writer. Where the files are absent, write_synthetic_leaf writes LEAF
  files of the same shape (56 writers, about 7,900 train examples) that fedc reads too.
- Workload 2, CIFAR-10: the tarball's python pickles (cifar-10-batches-py: data_batch_1..5,
  test_batch), as fedc's reader takes them: planes moved to height x width x channel, then each
  channel standardised by the training images' mean and standard deviation (pfl-research's
  load_and_preprocess; fedc's `cifar10` task). Split IID into 1,000 clients of 50 by numpy's
  permutation (fedc draws its own IID split: the same distribution, other clients). Where the
  files are absent, write_synthetic_cifar10 writes pickles of the same shape, images drawn as
  fedc's synthetic:cifar10 draws them (each byte uniform in [0, 135] plus 12 x the label).
"""

import argparse
import glob
import gzip
import json
import os
import pickle

import numpy as np

LEAF_WRITERS = 56
CIFAR_TRAIN, CIFAR_TEST, CIFAR_BATCH = 50000, 10000, 10000


def load_leaf(directory):
    """[(writer, x float32 [n, 28, 28, 1] = 1 - pixels, y int64 [n])], writers in file order."""
    files = sorted(glob.glob(os.path.join(directory, "*.json.gz")) + glob.glob(os.path.join(directory, "*.json")))
    if not files:
        raise FileNotFoundError(f"no LEAF .json[.gz] files in {directory}")
    clients = []
    for path in files:
        with (gzip.open if path.endswith(".gz") else open)(path, "rt") as f:
            d = json.load(f)
        for user in d["users"]:
            ud = d["user_data"][user]
            x = 1.0 - np.asarray(ud["x"], dtype=np.float32).reshape(-1, 28, 28, 1)
            clients.append((user, np.ascontiguousarray(x), np.asarray(ud["y"], dtype=np.int64)))
    return clients


def write_synthetic_leaf(directory, seed=0):
    """LEAF train/ and test/ files of FEMNIST-LEAF's shape: 56 writers of 100-183 train and a
    tenth as many test examples, labels uniform in 0..61, pixels uniform in [0, 0.6) plus
    0.4 x label / 61 (learnable a little, as the synthetic CIFAR-10)."""
    rng = np.random.default_rng(seed)
    for split, scale in (("train", 1.0), ("test", 0.1)):
        os.makedirs(os.path.join(directory, split), exist_ok=True)
        users, sizes, data = [], [], {}
        for w in range(LEAF_WRITERS):
            n = max(1, int(rng.integers(100, 184) * scale))
            y = rng.integers(0, 62, n)
            x = rng.random((n, 784), dtype=np.float32) * 0.6 + (0.4 * y / 61.0)[:, None]
            user = f"synthetic_{w:02d}"
            users.append(user)
            sizes.append(n)
            data[user] = {"x": np.round(x, 4).tolist(), "y": y.tolist()}
        with open(os.path.join(directory, split, f"synthetic_{split}.json"), "w") as f:
            json.dump({"users": users, "num_samples": sizes, "user_data": data}, f)


def read_cifar10(directory):
    """(train x u8 [50000, 32, 32, 3], y int64, test x, test y) from the pickles."""
    def batch(name):
        with open(os.path.join(directory, name), "rb") as f:
            d = pickle.load(f, encoding="bytes")
        x = np.asarray(d[b"data"], dtype=np.uint8).reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1)
        return x, np.asarray(d[b"labels"], dtype=np.int64)
    parts = [batch(f"data_batch_{i}") for i in range(1, 6)]
    tx, ty = batch("test_batch")
    return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts]), tx, ty


def py2_pickle(x, labels):
    """A CIFAR-10 batch as Python 2's cPickle wrote the tarball's (protocol 2, the pixels a
    BINSTRING): {'data': numpy uint8 [n, 3072], 'labels': [int]}, the only form fedc reads."""
    out, memo = bytearray(b"\x80\x02}"), [0]

    def put():  # BINPUT, as cPickle memoises
        memo[0] += 1
        out.extend(b"q" + bytes([memo[0]]))

    def s(text):
        out.extend(b"U" + bytes([len(text)]) + text)

    def i(v):
        out.extend(b"K" + bytes([v]) if 0 <= v < 256 else b"J" + int(v).to_bytes(4, "little", signed=True))

    put()
    out.extend(b"(")
    s(b"data"), put()
    out.extend(b"cnumpy.core.multiarray\n_reconstruct\n"), put()
    out.extend(b"cnumpy\nndarray\n"), put()
    i(0), out.extend(b"\x85"), s(b"b"), out.extend(b"\x87R"), put()
    out.extend(b"("), i(1), i(x.shape[0]), i(x.shape[1]), out.extend(b"\x86cnumpy\ndtype\n"), put()
    s(b"u1"), i(0), i(1), out.extend(b"\x87R"), put()
    out.extend(b"("), i(3), s(b"|"), out.extend(b"NNN"), i(-1), i(-1), i(0), out.extend(b"tb\x89")
    out.extend(b"T" + len(x.tobytes()).to_bytes(4, "little")), out.extend(x.tobytes()), put()
    out.extend(b"tb")
    s(b"labels"), put()
    out.extend(b"]"), put()
    for at in range(0, len(labels), 1000):  # cPickle's batches: MARK ... APPENDS
        out.extend(b"(")
        for v in labels[at:at + 1000]:
            i(int(v))
        out.extend(b"e")
    out.extend(b"u.")
    return bytes(out)


def write_synthetic_cifar10(directory, seed=0):
    """cifar-10-batches-py pickles of CIFAR-10's shape, fedc's synthetic:cifar10 images."""
    rng = np.random.default_rng(seed)
    os.makedirs(directory, exist_ok=True)
    for name in [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]:
        y = rng.integers(0, 10, CIFAR_BATCH)
        x = rng.integers(0, 136, (CIFAR_BATCH, 3072), dtype=np.uint8) + (12 * y).astype(np.uint8)[:, None]
        with open(os.path.join(directory, name), "wb") as f:
            f.write(py2_pickle(x, y))


def standardise_cifar10(x, tx):
    """pfl-research's preprocessing: (x - mean) / std per channel over every training pixel."""
    mean = x.reshape(-1, 3).mean(0, dtype=np.float64)
    std = x.reshape(-1, 3).std(0, dtype=np.float64)
    std[std < 1e-6] = 1.0
    f = lambda a: ((a.astype(np.float32) - mean.astype(np.float32)) / std.astype(np.float32)).astype(np.float32)
    return f(x), f(tx)


def cifar10_clients(directory, num_clients=1000, seed=0):
    """([(client, x float32 [50, 32, 32, 3], y)], test x, test y): the IID split, standardised."""
    x, y, tx, ty = read_cifar10(directory)
    x, tx = standardise_cifar10(x, tx)
    order = np.random.default_rng([seed, 0x63696661]).permutation(len(y))
    parts = np.array_split(order, num_clients)
    return [(str(c), x[i], y[i]) for c, i in enumerate(parts)], tx, ty


def load(workload, data):
    """(train clients, test x, test y) of workload 1 or 2, x channels-last float32."""
    if workload == 1:
        train = load_leaf(os.path.join(data, "train"))
        test = load_leaf(os.path.join(data, "test"))
        return train, np.concatenate([c[1] for c in test]), np.concatenate([c[2] for c in test])
    return cifar10_clients(data)


def cohort(num_clients, per_round, seed, r):
    """The clients of round r: per_round drawn uniformly without replacement (numpy, (seed, r))."""
    return np.random.default_rng([seed, r]).choice(num_clients, size=min(per_round, num_clients), replace=False)


def batches(n, batch_size, rng):
    """One epoch of FedJAX's shuffle_repeat_batch, as fedc's: ceil(n / batch) full batches of
    indices, the last completed from a second shuffle."""
    steps = -(-n // batch_size)
    shuffles = -(-steps * batch_size // n)
    order = np.concatenate([rng.permutation(n) for _ in range(shuffles)])
    return [order[i * batch_size:(i + 1) * batch_size] for i in range(steps)]


def eval_rounds(a):
    """The rounds (1-based, the warm-up counted) after which a peer evaluates: every
    --eval-every-th, and the last."""
    total = a.warmup_rounds + a.rounds
    k = a.eval_every
    return sorted({r for r in range(1, total + 1) if k > 0 and r % k == 0} | {total})


def arguments(doc, data_help, extra=None):
    """The arguments every peer script takes (--data, --rounds timed after --warmup-rounds,
    --threads, --seed, --eval-every), and extra(parser)'s; parsed."""
    ap = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    ap.add_argument("--data", required=True, help=data_help)
    ap.add_argument("--rounds", type=int, default=2, help="timed rounds")
    ap.add_argument("--warmup-rounds", type=int, default=1, help="rounds run before the timed ones, not timed")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--eval-every", type=int, default=0,
                    help="also evaluate after every K-th round, counting the warm-up (0: after the last only)")
    if extra:
        extra(ap)
    return ap.parse_args()
