"""peers_fedjax_data.py: fedc's FedJAX data path against FedJAX's own, for
tests/peers_fedjax.py (docs/python.md, docs/algorithms.md):

- batching: a FedJAX SQLite file written by FedJAX's SQLiteFederatedDataBuilder,
  read by FedJAX (SQLiteFederatedData) and by fedc (fedc.data.open); the clients'
  ids, sizes and examples, and their batch(), padded_batch() and
  shuffle_repeat_batch() batches (fedc's rng="fedjax", NumPy's RandomState as
  FedJAX's) compared element for element; fedc's own shuffles (the counter RNG)
  for their shape only;
- samplers: UniformGetClientSampler's clients against fedc.data.sample_clients_fedjax;
- a whole run: 10 rounds of FedAvg on the EMNIST CNN from the same initial
  parameters, FedJAX's loop (UniformGetClientSampler, fed_avg) against
  fedc.train(..., rng="fedjax") (`fedc train --rng fedjax`) on FEMNIST-format
  SQLite files both read: the parameters and the test accuracy.

Each check returns [(name, what, error, tolerance)].
"""
import dataclasses
import os

import numpy as np

import fedjax
from fedjax.core import client_datasets

import fedc

MASK = client_datasets.EXAMPLE_MASK_KEY


CLASSES = 4  # of EMNIST's 62, so that 10 small rounds learn something


def femnist_sqlite(path, sizes, seed):
    """A FEMNIST-format SQLite file (FedJAX's EMNIST: 'pixels' f32[n, 28, 28] in
    [0, 1], 'label' i32[n], 'domain_id' i32[n]), written by FedJAX's own builder;
    clients in the order of sizes. Each class is a fixed random image (from
    `seed`'s first draws, the same in every file of that seed) under noise, so a
    model can learn it."""
    rng = np.random.default_rng(seed)
    templates = rng.uniform(0, 1, (CLASSES, 28, 28))
    if os.path.exists(path):
        os.remove(path)

    def client(i, n):
        label = rng.integers(0, CLASSES, n).astype(np.int32)
        pixels = 0.7 * templates[label] + 0.3 * rng.uniform(0, 1, (n, 28, 28))
        return (b"%016x:f%04d_%02d" % (seed, i, n),
                {"pixels": pixels.astype(np.float32), "label": label, "domain_id": np.full(n, i % 2, np.int32)})
    with fedjax.SQLiteFederatedDataBuilder(path) as b:
        b.add_many([client(i, n) for i, n in enumerate(sizes)])
    return path


def exact(got, want):
    """0 when got and want are the same array (shape, dtype kind and values), else inf."""
    got, want = np.asarray(got), np.asarray(want)
    same = got.shape == want.shape and np.array_equal(got, want)
    return 0.0 if same else np.inf


def _stacked(batches, key):
    return np.stack([np.asarray(b[key]) for b in batches]) if batches else np.zeros((0,))


def compare_batches(label, what, got, want, batch_size):
    """fedc's stacked batches (got: {feature: [steps, batch, ...], mask, steps}) against
    FedJAX's list of batches (each full, or padded with its mask, or a short last one)."""
    out = [(label, what + " steps", 0.0 if int(got["steps"]) == len(want) else np.inf)]
    if int(got["steps"]) != len(want):
        return out
    for key in ("pixels", "label", "domain_id"):
        # FedJAX's batch: its real rows (the mask's, when it has one); fedc's the same
        # rows, the rest of a batch_size batch zero with mask 0
        rows = [np.asarray(b[key])[np.asarray(b.get(MASK, np.ones(len(b[key]), bool)), bool)] for b in want]
        err = 0.0
        for s, r in enumerate(rows):
            k = len(r)
            err = max(err, exact(got[key][s][:k], r), exact(got["mask"][s][:k], np.ones(k, np.float32)),
                      exact(got["mask"][s][k:], np.zeros(batch_size - k, np.float32)),
                      0.0 if not np.any(got[key][s][k:]) else np.inf)
        out.append((label, "%s %s" % (what, key), err))
    return out


def check_batching(seed, tmp):
    """A file both read: its clients, examples and batches."""
    path = femnist_sqlite(os.path.join(tmp, "batching.sqlite"), (7, 12, 1, 9, 16, 4), seed)
    fd = fedjax.SQLiteFederatedData.new(path)
    ds = fedc.data.open(path)
    out = [("data", "client ids in the file's order", exact([c.decode() for c in fd.client_ids()], ds.client_ids))]
    for i, (cid, cds) in enumerate(fd.clients()):
        c = ds.client(i)
        label = "client %d (%d examples)" % (i, len(cds))
        out += [(label, "examples " + k, exact(c[k], v)) for k, v in sorted(cds.all_examples().items())]
        for b in (1, 4, 5, 16):
            out += compare_batches(label, "batch(%d)" % b, c.batch(b), list(cds.batch(batch_size=b)), b)
            out += compare_batches(label, "batch(%d, drop_remainder)" % b, c.batch(b, drop_remainder=True),
                                   list(cds.batch(batch_size=b, drop_remainder=True)), b)
            for buckets in (1, 3):
                out += compare_batches(label, "padded_batch(%d, %d buckets)" % (b, buckets),
                                       c.padded_batch(b, buckets),
                                       list(cds.padded_batch(batch_size=b, num_batch_size_buckets=buckets)), b)
        for b, epochs, steps, drop, s in ((4, 1, None, False, seed), (5, 3, None, False, seed + 1),
                                          (3, 2, 5, False, 0), (4, 2, None, True, 2**32 - 1)):
            fj = list(cds.shuffle_repeat_batch(batch_size=b, num_epochs=epochs, num_steps=steps,
                                               drop_remainder=drop, seed=s))
            what = "shuffle_repeat_batch(%d, %d epochs, %s steps, drop %d, seed %d)" % (b, epochs, steps, drop, s)
            args = (b, epochs, -1 if steps is None else steps, drop)
            out += compare_batches(label, what + " rng=fedjax", c.shuffle_repeat_batch(*args, seed=s, rng="fedjax"),
                                   fj, b)
            # fedc's own shuffles: another order (the counter RNG), FedJAX's shape
            mine = c.shuffle_repeat_batch(*args, seed=s)
            out.append((label, what + " rng=counter: steps, full batches",
                        0.0 if int(mine["steps"]) == len(fj) and np.all(mine["mask"] == 1) else np.inf))
        c.close()
    ds.close()
    return [(a, b, e, 0.0) for a, b, e in out]


def check_samplers(seed):
    """UniformGetClientSampler's draws against fedc's copy of them."""
    out = []
    for n, k, s in ((20, 5, seed), (7, 7, 0), (300, 10, 2**32 - 1)):
        ids = [b"%04d" % i for i in range(n)]  # sorted as InMemoryFederatedData sorts them
        fd = fedjax.InMemoryFederatedData({i: {"x": np.zeros(1)} for i in ids})
        sampler = fedjax.client_samplers.UniformGetClientSampler(fd, k, s)
        for r in (1, 2, 9):
            sampler.set_round_num(r)
            want = [int(cid) for cid, _, _ in sampler.sample()]
            got = fedc.data.sample_clients_fedjax(n, k, s, r)
            out.append(("UniformGetClientSampler", "%d of %d clients, seed %d, round %d" % (k, n, s, r),
                        exact(got, want), 0.0))
    return out


# The whole run: 6 training clients, 2 a round, batches of 4, 10 rounds. The client
# learning rate keeps the run out of the chaotic regime: at 0.1, FedJAX against
# itself from initial parameters 1 ulp apart ends 1e-2 apart (ReLUs near their kink
# flip, and the gaps grow), so no two f32 implementations could agree to 1e-4.
RUN = dict(sizes=(5, 8, 4, 7, 6, 3), test_sizes=(8, 5, 11), clients_per_round=2, batch_size=4, rounds=10,
           client_lr=0.03)
RTOL_RUN = 1e-4


def check_whole_run(seed, tmp, relative_error, leaves):
    """10 rounds of FedAvg on the EMNIST CNN, FedJAX's against `fedc train --rng fedjax`,
    from fedc's initial parameters (fedc train's init at the seed, given to FedJAX
    through to_haiku). The CNN without dropout on both sides: FedJAX draws its masks
    from JAX's threefry keys, fedc from its counter RNG (docs/algorithms.md)."""
    train = femnist_sqlite(os.path.join(tmp, "run-train.sqlite"), RUN["sizes"], seed)
    test = femnist_sqlite(os.path.join(tmp, "run-test.sqlite"), RUN["test_sizes"], seed)
    m = fedc.models.Model("cnn")
    init = m.init(seed)
    cnn = fedjax.models.emnist.create_conv_model(only_digits=False)
    cnn = dataclasses.replace(cnn, apply_for_train=lambda params, batch, rng=None: cnn.apply_for_eval(params, batch))
    fd = fedjax.SQLiteFederatedData.new(train).preprocess_batch(fedjax.datasets.emnist.preprocess_batch)
    alg = fedjax.algorithms.fed_avg.federated_averaging(
        fedjax.model_grad(cnn), fedjax.optimizers.sgd(RUN["client_lr"]), fedjax.optimizers.sgd(1.0),
        fedjax.ShuffleRepeatBatchHParams(batch_size=RUN["batch_size"], num_epochs=1, seed=seed))
    # run_federated_experiment's loop: rounds from 1, UniformGetClientSampler's clients
    sampler = fedjax.client_samplers.UniformGetClientSampler(fd, RUN["clients_per_round"], seed)
    state = alg.init(m.to_haiku(init))
    sampler.set_round_num(1)
    for _ in range(RUN["rounds"]):
        state, _ = alg.apply(state, sampler.sample())
    test_fd = fedjax.SQLiteFederatedData.new(test).preprocess_batch(fedjax.datasets.emnist.preprocess_batch)
    batches = fedjax.padded_batch_federated_data(test_fd, batch_size=100)
    want_accuracy = float(fedjax.evaluate_model(cnn, state.params, batches)["accuracy"])

    out_dir = os.path.join(tmp, "run-fedc")
    res = fedc.train(train, test_data=test, task="emnist", model="cnn", algorithm="fedavg",
                     rounds=RUN["rounds"], clients_per_round=RUN["clients_per_round"],
                     batch_size=RUN["batch_size"], epochs=1, client_lr=RUN["client_lr"], server_lr=1.0,
                     weighting="dataset", dropout=False, rng="fedjax", seed=seed, threads=1,
                     eval_every=0, checkpoint_every=RUN["rounds"], out_dir=out_dir)
    got = fedc.safetensors.read(os.path.join(out_dir, "checkpoint.safetensors"))
    label = "FedAvg CNN, %d rounds" % RUN["rounds"]
    out = []
    for path, w in leaves(m.from_haiku(state.params)):
        key = next((k for k in ("params/" + path, path) if k in got), None)
        out.append((label, "params %s" % path, relative_error(got[key], w) if key else np.inf, RTOL_RUN))
    # the same examples right: the accuracies equal to the count (1e-6 of a fraction)
    out.append((label, "test accuracy %.4f (FedJAX %.4f)" % (res["test_accuracy"], want_accuracy),
                abs(res["test_accuracy"] - want_accuracy), 1e-6))
    # and a run that moved: the parameters are not the initial ones
    moved = max(relative_error(a, b) for (_, a), (_, b) in zip(leaves(m.from_haiku(state.params)), leaves(init)))
    out.append((label, "FedJAX's parameters moved from the initial ones", 0.0 if moved > 1e-3 else np.inf, 0.0))
    m.close()
    return out
