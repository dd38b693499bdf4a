#!/usr/bin/env python3
"""Writes the small TensorFlow Federated HDF5 files tests/test_data_tff.c reads.

    python3 tests/data_tff_make.py DIR

Each file has the TFF layout, /examples/<client>/<feature>, shaped like the real
EMNIST, Shakespeare, Stack Overflow and CIFAR-100 files but with a few examples
whose values follow a formula the C test computes again (c is the client's index
in name order, e the example, p the flat position inside the example). Keep the
formulas here and in the test in step. Other files hold every dtype the reader
maps, and the broken layouts it must reject.
"""
import os
import sys

import h5py
import numpy as np


def client_names(f, names):
    """Groups created in the given order; the reader lists them by name."""
    return [f.create_group("examples/" + n) for n in names]


def emnist(path, sizes=None):
    # Created out of name order: the reader must list f0000_14, f0001_41, f0002_07.
    order = ["f0002_07", "f0000_14", "f0001_41"]
    sizes = sizes or {"f0000_14": 5, "f0001_41": 1, "f0002_07": 7}
    with h5py.File(path, "w") as f:
        groups = dict(zip(order, client_names(f, order)))
        for c, name in enumerate(sorted(order)):
            n = sizes[name]
            e = np.arange(n).reshape(n, 1, 1)
            p = np.arange(28 * 28).reshape(1, 28, 28)
            pixels = ((c * 1000 + e * 10 + p) * 0.25).astype(np.float32)
            # One client compressed, as a chunked gzip dataset reads through a filter.
            kw = {"compression": "gzip", "chunks": (1, 28, 28)} if c == 2 else {}
            groups[name].create_dataset("pixels", data=pixels, **kw)
            groups[name].create_dataset("label", data=(c * 100 + np.arange(n)).astype(np.int32))


def snippet(c, e):
    return ("%d/%d na\u00efve \u2603 \U0001F600|" % (c, e)) * e


def shakespeare(path):
    names = ["THE_TRAGEDY_OF_KING_LEAR_KING", "ALLS_WELL_THAT_ENDS_WELL_CELIA", "MUCH_ADO_ABOUT_NOTHING_OTHELLO"]
    sizes = [4, 3, 1]
    with h5py.File(path, "w") as f:
        for c, (name, n) in enumerate(sorted(zip(names, sizes))):
            g = f.create_group("examples/" + name)
            g.create_dataset("snippets", data=[snippet(c, e) for e in range(n)], dtype=h5py.string_dtype("utf-8"))


def stackoverflow(path):
    sizes = {"00000001": 3, "00000002": 2}
    vlen_bytes = h5py.special_dtype(vlen=bytes)
    with h5py.File(path, "w") as f:
        for c, name in enumerate(sorted(sizes)):
            n = sizes[name]
            g = f.create_group("examples/" + name)
            g.create_dataset("tokens", data=["tok%d %d caf\u00e9" % (c, e) for e in range(n)],
                             dtype=h5py.string_dtype("utf-8"))
            g.create_dataset("title", data=[b"title %d %d" % (c, e) for e in range(n)],
                             dtype=h5py.string_dtype("ascii"))
            tags = np.array([b"c|python" if e % 2 else b"" for e in range(n)], dtype=object)
            g.create_dataset("tags", data=tags, dtype=vlen_bytes)
            g.create_dataset("type", data=np.array([b"question" if e == 0 else b"answer" for e in range(n)],
                                                   dtype="S8"))
            dates = ["2010-0%d-1%d 00:00:00.1+00:00" % (c + 1, e) for e in range(n)]
            g.create_dataset("creation_date", data=dates, dtype=h5py.string_dtype("utf-8", 30))
            scores = [2147483647, -2147483648, c * 10 - 5][:n]
            g.create_dataset("score", data=np.array(scores, dtype=np.int64))


def cifar100(path):
    # "10" sorts before "2": the order is by bytes, not numeric.
    sizes = {"0": 2, "1": 3, "10": 1, "2": 2}
    with h5py.File(path, "w") as f:
        for c, name in enumerate(sorted(sizes)):
            n = sizes[name]
            g = f.create_group("examples/" + name)
            e = np.arange(n).reshape(n, 1)
            p = np.arange(32 * 32 * 3).reshape(1, -1)
            g.create_dataset("image", data=((c * 7 + e * 3 + p) % 256).astype(np.uint8).reshape(n, 32, 32, 3))
            g.create_dataset("label", data=(c * 10 + np.arange(n)).astype(np.int64))
            g.create_dataset("coarse_label", data=(np.arange(n) % 20).astype(np.int64))


def fixed_string(g, name, values, size, pad):
    tid = h5py.h5t.C_S1.copy()
    tid.set_size(size)
    tid.set_strpad(pad)
    space = h5py.h5s.create_simple((len(values),))
    d = h5py.h5d.create(g.id, name.encode(), tid, space)
    mem = h5py.h5t.C_S1.copy()  # numpy's null padding, converted by HDF5 to `pad`
    mem.set_size(size)
    mem.set_strpad(h5py.h5t.STR_NULLPAD)
    d.write(h5py.h5s.ALL, h5py.h5s.ALL, np.array(values, dtype="S%d" % size), mtype=mem)


def dtypes(path):
    """Client "a" has every dtype the reader maps; client "b" has no examples."""
    with h5py.File(path, "w") as f:
        for name, n in (("a", 3), ("b", 0)):
            g = f.create_group("examples/" + name)
            i = np.arange(n)
            g.create_dataset("f16", data=(i * 0.5).astype(np.float16))
            g.create_dataset("f64", data=(np.arange(n * 6) / 3.0).reshape(n, 2, 3))
            g.create_dataset("i8", data=(-i - 100).astype(np.int8))
            g.create_dataset("i16", data=(-i * 1000).astype(np.int16))
            g.create_dataset("u16", data=(i + 65000).astype(np.uint16))
            g.create_dataset("u32", data=(i + 7).astype(np.uint32))
            g.create_dataset("u64", data=(i + 9).astype(np.uint64))
            g.create_dataset("u8", data=(i + 250).astype(np.uint8))
            g.create_dataset("flag", data=(i % 2 == 1))
            g.create_dataset("rank6", data=np.arange(n * 4, dtype=np.int32).reshape(n, 1, 2, 1, 2, 1))
            words = [b"ab", b"", b"abcdef"][:n]
            fixed_string(g, "spacepad", words, 6, h5py.h5t.STR_SPACEPAD)
            fixed_string(g, "nullterm", words, 7, h5py.h5t.STR_NULLTERM)


def broken(d):
    with h5py.File(os.path.join(d, "noexamples.h5"), "w") as f:
        f.create_dataset("data/x", data=np.zeros(3))
    with h5py.File(os.path.join(d, "examples_dataset.h5"), "w") as f:
        f.create_dataset("examples", data=np.zeros(3))
    with h5py.File(os.path.join(d, "client_dataset.h5"), "w") as f:
        f.create_dataset("examples/c0/x", data=np.zeros(3))
        f.create_dataset("examples/c1", data=np.zeros(3))
    with h5py.File(os.path.join(d, "ragged.h5"), "w") as f:
        f.create_dataset("examples/ok/x", data=np.zeros((2, 2), dtype=np.float32))
        f.create_dataset("examples/uneven/x", data=np.zeros((3, 2), dtype=np.float32))
        f.create_dataset("examples/uneven/y", data=np.zeros(4, dtype=np.int32))
    with h5py.File(os.path.join(d, "empty_client.h5"), "w") as f:
        f.create_dataset("examples/c0/x", data=np.zeros(3))
        f.create_group("examples/c1")
    with h5py.File(os.path.join(d, "nested.h5"), "w") as f:
        f.create_dataset("examples/c0/sub/x", data=np.zeros(3))
    with h5py.File(os.path.join(d, "scalar.h5"), "w") as f:
        f.create_dataset("examples/c0/x", data=np.float32(1))
    with h5py.File(os.path.join(d, "rank7.h5"), "w") as f:
        f.create_dataset("examples/c0/x", data=np.zeros((1,) * 7, dtype=np.float32))
    with h5py.File(os.path.join(d, "range.h5"), "w") as f:
        f.create_dataset("examples/high/label", data=np.array([0, 1, 2**31], dtype=np.int64))
        f.create_dataset("examples/low/label", data=np.array([-(2**31) - 1, 0], dtype=np.int64))
        f.create_dataset("examples/u64/label", data=np.array([2**64 - 1], dtype=np.uint64))
    with h5py.File(os.path.join(d, "unsupported.h5"), "w") as f:
        f.create_dataset("examples/compound/x", data=np.zeros(2, dtype=[("a", "i4"), ("b", "f4")]))
        f.create_dataset("examples/complex/x", data=np.zeros(2, dtype=np.complex64))
        ints = f.create_dataset("examples/ragged_ints/x", (2,), dtype=h5py.vlen_dtype(np.int32))
        ints[0], ints[1] = np.arange(3, dtype=np.int32), np.arange(1, dtype=np.int32)
        f.create_dataset("examples/strings2d/x", data=np.array([[b"a", b"b"]]), dtype="S1")
        f.create_dataset("examples/enum/x", data=np.zeros(2, dtype=np.int8),
                         dtype=h5py.enum_dtype({"RED": 0, "GREEN": 1, "BLUE": 2}, basetype="i1"))
    # LZF is h5py's own filter: libhdf5 alone cannot decompress it (skipped where h5py lacks it).
    if h5py.h5z.filter_avail(h5py.h5z.FILTER_LZF):
        with h5py.File(os.path.join(d, "lzf.h5"), "w") as f:
            f.create_dataset("examples/c0/x", data=np.arange(100, dtype=np.float32), compression="lzf")
    # Truncated copies of an EMNIST file: one cut inside the data, one inside the superblock.
    emnist(os.path.join(d, "truncated.h5"))
    size = os.path.getsize(os.path.join(d, "truncated.h5"))
    os.truncate(os.path.join(d, "truncated.h5"), size // 2)
    emnist(os.path.join(d, "truncated_head.h5"))
    os.truncate(os.path.join(d, "truncated_head.h5"), 40)
    # A corrupt superblock (its version byte). Corruption deeper in the metadata can
    # crash libhdf5 1.10 itself (a B-tree node read through a bad size), so the
    # tests keep to damage HDF5 checks for.
    emnist(os.path.join(d, "corrupt.h5"))
    with open(os.path.join(d, "corrupt.h5"), "r+b") as f:
        f.seek(8)
        f.write(b"\xff")


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: data_tff_make.py DIR")
    d = sys.argv[1]
    emnist(os.path.join(d, "emnist.h5"))
    shakespeare(os.path.join(d, "shakespeare.h5"))
    stackoverflow(os.path.join(d, "stackoverflow.h5"))
    cifar100(os.path.join(d, "cifar100.h5"))
    dtypes(os.path.join(d, "dtypes.h5"))
    broken(d)


if __name__ == "__main__":
    main()
