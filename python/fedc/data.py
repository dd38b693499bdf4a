"""fedc.data: federated datasets from Python (data.h), clients and batches as numpy.

    ds = fedc.data.open("../shared/data/femnist-leaf/train")
    for client in ds:                       # one client loaded at a time
        b = client.padded_batch(20)         # {"x": [steps, 20, 784], "y": ..., "mask": ...}

Every reader fedc has (LEAF JSON, TFF HDF5, FedJAX SQLite, IDX, CSV, text), its
partitioners, FedJAX's batching and the seeded client samplers (fedc's, and FedJAX's
own draws: rng="fedjax", sample_clients_fedjax). Arrays are copies
that own their memory; strings features come back as lists of bytes.
"""

import ctypes
from ctypes import POINTER, c_int32, c_int64, c_void_p

import numpy as np

from . import _lib
from .errors import EINVAL
from .handle import Handle
from .types import TypeSpec

PI64 = POINTER(c_int64)
# fedc_data_format (data.h) by name, with C's values (python/tests/test_abi.py).
FORMAT_CODES = {"auto": 0, "leaf": 1, "tff": 2, "fedjax": 3, "idx": 4, "csv": 5, "text": 6, "memory": 7, "cifar10": 8}
FORMATS = tuple(FORMAT_CODES)
_FORMAT_NAMES = {v: k for k, v in FORMAT_CODES.items()}


_L = _lib.lib


def _feature_value(f):
    """A copy of one feature: an array, or a list of bytes for a strings feature."""
    spec = TypeSpec.from_c(f.type)
    n = spec.shape[0] if spec.shape else 0
    if f.kind == _lib.FEDC_FEATURE_STRINGS:
        offs = [f.offsets[i] for i in range(n + 1)]
        return [ctypes.string_at(f.data + offs[i], offs[i + 1] - offs[i]) for i in range(n)]
    out = np.empty(spec.shape, dtype=spec.np_dtype)
    if out.nbytes:
        ctypes.memmove(out.ctypes.data, f.data, out.nbytes)
    return out


def _features(features, count):
    return {features[i].name.decode(): _feature_value(features[i]) for i in range(count)}


class Client(Handle):
    """One client's data: `id`, `num_examples`, and its features by name (arrays whose
    leading axis is the example) as `client["x"]`; batching makes fold-ready stacks."""

    _destroy = "fedc_client_data_destroy"

    def __init__(self, ptr):
        super().__init__(ptr, "client data")
        c = ptr.contents
        self.id = c.id.decode("utf-8", "replace")
        self.num_examples = c.num_examples
        self._features = _features(c.features, c.num_features)

    def keys(self):
        return self._features.keys()

    def __getitem__(self, name):
        return self._features[name]

    def __contains__(self, name):
        return name in self._features

    def items(self):
        return self._features.items()

    def __repr__(self):
        return "<fedc.data.Client %r: %d examples, %s>" % (self.id, self.num_examples, list(self.keys()))

    def _batches(self, fn, *args):
        out = POINTER(_lib.Batches)()
        _lib.check(fn(self._get(), *args, ctypes.byref(out)))
        try:
            b = out.contents
            res = _features(b.features, b.num_features)
            mask = np.empty((b.steps, b.batch_size), np.float32)
            if mask.nbytes:
                ctypes.memmove(mask.ctypes.data, b.mask, mask.nbytes)
            res["mask"] = mask
            res["steps"] = np.int32(b.steps)
            return res
        finally:
            _L.fedc_batches_destroy(out)

    def batch(self, batch_size, drop_remainder=False):
        """FedJAX's batch(): {feature: [steps, batch, ...], mask: [steps, batch], steps}."""
        return self._batches(_L.fedc_batch, batch_size, drop_remainder)

    def padded_batch(self, batch_size, num_batch_size_buckets=1):
        """FedJAX's padded_batch(): every batch padded to batch_size, with its mask."""
        return self._batches(_L.fedc_padded_batch, batch_size, num_batch_size_buckets)

    def shuffle_repeat_batch(self, batch_size, num_epochs=1, num_steps=-1, drop_remainder=False,
                             seed=0, round=0, client=0, rng="counter"):
        """FedJAX's shuffle_repeat_batch(), shuffled by the counter RNG at (seed, round, client);
        rng="fedjax": in FedJAX's own order, NumPy's RandomState(seed) (round and client
        unused), as ShuffleRepeatBatchHParams(seed=seed) gives it."""
        if rng == "fedjax":
            return self._batches(_L.fedc_shuffle_repeat_batch_numpy, batch_size, num_epochs, num_steps,
                                 drop_remainder, seed)
        if rng != "counter":
            raise ValueError("shuffle_repeat_batch: rng must be 'counter' or 'fedjax', not %r" % (rng,))
        return self._batches(_L.fedc_shuffle_repeat_batch, batch_size, num_epochs, num_steps,
                             drop_remainder, seed, round, client)


class Dataset(Handle):
    """A federated dataset: len(ds) clients, loaded one at a time by ds[i] or iteration."""

    _destroy = "fedc_dataset_destroy"

    def __init__(self, ptr, parent=None):
        super().__init__(ptr, "dataset")
        self._parent = parent  # slices and splits read through their parent: keep it

    @property
    def format(self):
        return _FORMAT_NAMES[_L.fedc_dataset_format(self._get())]

    def __len__(self):
        return _L.fedc_dataset_num_clients(self._get())

    @property
    def num_examples(self):
        return _L.fedc_dataset_total_examples(self._get())

    @property
    def client_ids(self):
        p = self._get()
        return [_L.fedc_dataset_client_id(p, i).decode("utf-8", "replace") for i in range(len(self))]

    def client_examples(self, i):
        return _L.fedc_dataset_client_examples(self._get(), self._index(i))

    def find(self, client_id):
        out = c_int64()
        _lib.check(_L.fedc_dataset_find(self._get(), client_id.encode(), ctypes.byref(out)))
        return out.value

    def _index(self, i):
        n = len(self)
        i = int(i) + n if i < 0 else int(i)
        if not 0 <= i < n:
            raise IndexError("client %d of a dataset of %d clients" % (i, n))
        return i

    def client(self, i):
        """Client i (an int) or the client with id i (a str), loaded now."""
        if isinstance(i, str):
            i = self.find(i)
        out = POINTER(_lib.ClientData)()
        _lib.check(_L.fedc_dataset_client(self._get(), self._index(i), ctypes.byref(out)))
        return Client(out)

    __getitem__ = client

    def __iter__(self):
        for i in range(len(self)):
            yield self.client(i)

    def slice(self, begin, end):
        out = c_void_p()
        _lib.check(_L.fedc_dataset_slice(self._get(), begin, end, ctypes.byref(out)))
        return Dataset(out, self)

    def holdout(self, fraction):
        """(train, test): each client's last `fraction` of examples held out, as LEAF does."""
        train, test = c_void_p(), c_void_p()
        _lib.check(_L.fedc_dataset_holdout(self._get(), fraction, ctypes.byref(train), ctypes.byref(test)))
        return Dataset(train, self), Dataset(test, self)

    def partition(self, assignment, num_clients=None):
        """A federated dataset from this one's client 0 split by `assignment` (the
        client of each example), as the partitioners below make it."""
        a = np.ascontiguousarray(assignment, dtype=np.int64)
        n = int(a.max()) + 1 if num_clients is None else int(num_clients)
        out = c_void_p()
        _lib.check(_L.fedc_dataset_partition(self._get(), a.ctypes.data_as(PI64), n, ctypes.byref(out)))
        return Dataset(out, self)


def open(path, format="auto"):  # noqa: A001 - the module's verb, as fedc_dataset_open
    """Opens any dataset fedc reads; format "auto" detects it from the path."""
    if format not in FORMATS:
        raise _lib.error(EINVAL, "unknown data format %r (fedc reads %s)" % (format, ", ".join(FORMATS)))
    out = c_void_p()
    _lib.check(_L.fedc_dataset_open(ctypes.byref(out), str(path).encode(), FORMAT_CODES[format]))
    return Dataset(out)


def synthetic_fedprox(alpha, beta, num_clients, seed=0):
    out = c_void_p()
    _lib.check(_L.fedc_synthetic_fedprox(alpha, beta, num_clients, seed, ctypes.byref(out)))
    return Dataset(out)


def synthetic_zipf(num_clients, examples_per_client, length, vocab, s=1.0, seed=0):
    out = c_void_p()
    _lib.check(_L.fedc_synthetic_zipf(num_clients, examples_per_client, length, vocab, s, seed,
                                      ctypes.byref(out)))
    return Dataset(out)


def _indices(fn, n, *args):
    out = np.empty(n, np.int64)
    _lib.check(fn(*args, out.ctypes.data_as(PI64)))
    return out


def sample_clients(num_clients, per_round, seed, round):
    """per_round distinct clients, uniformly, a function of (seed, round); increasing."""
    return _indices(_L.fedc_sample_clients, per_round, num_clients, per_round, seed, round)


def sample_clients_epochs(num_clients, per_round, seed, round):
    """Round `round` of shuffled epochs over the clients."""
    return _indices(_L.fedc_sample_clients_epochs, per_round, num_clients, per_round, seed, round)


def sample_clients_fedjax(num_clients, per_round, seed, round_num):
    """FedJAX's UniformGetClientSampler(fd, per_round, seed) at round_num (from 1): the
    clients' indices in the order NumPy's RandomState draws them."""
    return _indices(_L.fedc_sample_clients_fedjax, per_round, num_clients, per_round, seed, round_num)


def _labels(labels):
    lab = np.ascontiguousarray(labels, dtype=np.int32)
    return lab, lab.ctypes.data_as(POINTER(c_int32))


def partition_iid(examples, num_clients, seed=0):
    return _indices(_L.fedc_partition_iid, examples, examples, num_clients, seed)


def partition_dirichlet(labels, num_classes, num_clients, alpha, seed=0):
    lab, ptr = _labels(labels)
    return _indices(_L.fedc_partition_dirichlet, lab.size, ptr, lab.size, num_classes, num_clients,
                    alpha, seed)


def partition_groups_dirichlet(num_clients, groups, alpha, seed=0):
    """Each client's group (int32), the groups' shares of the clients Dirichlet(alpha):
    fedc train --groups dirichlet:N:ALPHA."""
    out = np.empty(num_clients, np.int32)
    _lib.check(_L.fedc_partition_groups_dirichlet(num_clients, groups, alpha, seed,
                                                  out.ctypes.data_as(POINTER(c_int32))))
    return out


def partition_shards(labels, num_clients, k, seed=0):
    lab, ptr = _labels(labels)
    return _indices(_L.fedc_partition_shards, lab.size, ptr, lab.size, num_clients, k, seed)
