"""Writes small FedJAX SQLite datasets, exactly as FedJAX writes them, for
tests/test_data_fedjax.c. Usage: data_fedjax_make.py DIR

The encoding replicates fedjax/core/serialization.py (msgpack_serialize: numpy
arrays as msgpack extension type 1, (shape, dtype.name, tobytes('C')) packed with
use_bin_type=True; object arrays of bytes as type 4, (shape, flat list)) and
SQLiteFederatedDataBuilder in fedjax/core/sqlite_federated_data.py (the table,
zlib.compress of the record, executemany INSERT). The values follow formulas the C
test recomputes, so keep the two in step. Also writes the damaged files the reader
must refuse: corrupt.sqlite holds one client per way a record can be broken (the
client id names the case) and the other files break the database itself.
"""

import os
import sqlite3
import sys
import zlib

import msgpack
import numpy as np

# -------------------------------------------------- FedJAX's serialization --


def _ndarray_to_bytes(arr):
    tpl = (arr.shape, arr.dtype.name, arr.tobytes("C"))
    return msgpack.packb(tpl, use_bin_type=True)


def _bytes_ndarray_to_bytes(x):
    return msgpack.packb((x.shape, list(x.flatten())), use_bin_type=True)


def _ext_pack(x):
    if isinstance(x, np.ndarray) and x.dtype.hasobject:
        return msgpack.ExtType(4, _bytes_ndarray_to_bytes(x))
    if isinstance(x, np.ndarray):
        return msgpack.ExtType(1, _ndarray_to_bytes(x))
    if isinstance(x, np.generic):
        return msgpack.ExtType(3, _ndarray_to_bytes(np.asarray(x)))
    if isinstance(x, complex):
        return msgpack.ExtType(2, msgpack.packb((x.real, x.imag)))
    return x


def msgpack_serialize(tree):
    return msgpack.packb(tree, default=_ext_pack, strict_types=True)


SCHEMA = """CREATE TABLE federated_data (
    client_id BLOB NOT NULL PRIMARY KEY,
    data BLOB NOT NULL,
    num_examples INTEGER NOT NULL );"""


def num_examples(examples):
    sizes = {len(v) for v in examples.values()}
    assert len(sizes) == 1, sizes
    return sizes.pop()


def build(path, clients):
    """clients: (client_id bytes, examples dict) in insertion order."""
    if os.path.exists(path):
        os.remove(path)
    con = sqlite3.connect(path)
    con.execute(SCHEMA)
    con.commit()
    rows = [(cid, zlib.compress(msgpack_serialize(ex)), num_examples(ex)) for cid, ex in clients]
    con.executemany("INSERT INTO federated_data VALUES (?, ?, ?);", rows)
    con.commit()
    con.close()


def build_raw(path, rows, schema=SCHEMA):
    """rows: (client_id, data blob, num_examples) written as given."""
    if os.path.exists(path):
        os.remove(path)
    con = sqlite3.connect(path)
    con.execute(schema)
    con.executemany("INSERT INTO federated_data VALUES (?, ?, ?);", rows)
    con.commit()
    con.close()


# ----------------------------------------------------------------- datasets --

# EMNIST-like: ids out of sorted order (FedJAX lists clients by rowid).
EMNIST = [(b"f0003_11", 3), (b"f0001_07", 5), (b"f0002_42", 2)]


def emnist(c, n):
    k = np.arange(n * 784, dtype=np.int64).reshape(n, 28, 28) + 1000 * c
    pixels = ((k % 251) / 250.0).astype(np.float32)
    label = ((7 * c + np.arange(n)) % 10).astype(np.int32)
    return {"pixels": pixels, "label": label}


SHAKESPEARE = [
    (b"THE_TRAGEDY_OF_KING_LEAR_KENT", [b"Sir, I am too old to learn.", b"", b"caf\xc3\xa9 \x00nul"]),
    (b"AS_YOU_LIKE_IT_ROSALIND", [b"All the world's a stage"]),
]


def stackoverflow():
    tokens = np.array([b"how do i", b"use msgpack in c", b"?"], dtype=object)
    score = np.array([-3, 2**31 - 1, -(2**31)], dtype=np.int64)
    date = np.array([b"2010-01-02", b"2011-12-31", b"2012-06"])  # 'S10': "bytes80"
    kind = np.array([b"question", b"answer", b"answer"])  # 'S8'
    return [(b"00000001", {"tokens": tokens, "score": score, "creation_date": date, "type": kind})]


def dtypes():
    """Every dtype the reader takes; rows of 2 examples, plus an empty client."""
    ex = {
        "f64": np.array([[1.5, -2.25], [1e300, -0.0]], dtype=np.float64),
        "u8": np.array([0, 255], dtype=np.uint8),
        "flag": np.array([True, False]),
        "i8": np.array([-128, 127], dtype=np.int8),
        "i16": np.array([-32768, 32767], dtype=np.int16),
        "u16": np.array([0, 65535], dtype=np.uint16),
        "u32": np.array([7, 2**31 - 1], dtype=np.uint32),
        "u64": np.array([0, 2**31 - 1], dtype=np.uint64),
        "words": np.array([[b"a"], [b"bc"]], dtype=object),  # [n, 1] of bytes
        "cube": np.arange(2 * 1 * 2 * 1 * 2 * 1, dtype=np.int32).reshape(2, 1, 2, 1, 2, 1),
    }
    empty = {"pixels": np.zeros((0, 28, 28), np.float32), "text": np.array([], dtype=object)}
    return [(b"typed", ex), (b"empty", empty)]


# ------------------------------------------------------------------ corrupt --


def packed(record):
    return zlib.compress(msgpack.packb(record, use_bin_type=True))


def nd(shape, dtype, data):
    return msgpack.ExtType(1, msgpack.packb((shape, dtype, data), use_bin_type=True))


def corrupt_rows():
    good = msgpack_serialize({"x": np.arange(3, dtype=np.float32)})
    three = np.arange(3, dtype=np.float32).tobytes()
    rows = {
        "good": zlib.compress(good),
        "bad_zlib": b"this is not zlib data",
        "truncated_zlib": zlib.compress(good)[:-6],
        "zlib_trailing": zlib.compress(good) + b"junk",
        "truncated_msgpack": zlib.compress(good[:-5]),
        "msgpack_trailing": zlib.compress(good + b"\xc0"),
        "invalid_msgpack": zlib.compress(b"\xc1"),
        "not_a_map": packed([1, 2, 3]),
        "not_ext": packed({"x": [1.0, 2.0, 3.0]}),
        "key_not_string": packed({1: nd((3,), "float32", three)}),
        "unknown_ext": packed({"x": msgpack.ExtType(7, b"\x90")}),
        "complex": zlib.compress(msgpack_serialize({"x": complex(1, 2)})),
        "npscalar": zlib.compress(msgpack_serialize({"x": np.float32(1.5)})),
        "scalar_ndarray": packed({"x": nd((), "float32", three[:4])}),
        "payload_truncated": packed({"x": msgpack.ExtType(1, msgpack.packb(((3,), "float32", three))[:-2])}),
        "payload_not_list": packed({"x": msgpack.ExtType(1, msgpack.packb({"shape": 3}))}),
        "shape_not_list": packed({"x": nd("3", "float32", three)}),
        "shape_negative": packed({"x": nd((-3,), "float32", three)}),
        "dtype_not_string": packed({"x": nd((3,), 4, three)}),
        "data_not_bytes": packed({"x": nd((3,), "float32", [0, 1, 2])}),
        "byte_length": packed({"x": nd((3, 2), "float32", bytes(20))}),
        "float16": zlib.compress(msgpack_serialize({"x": np.zeros(3, np.float16)})),
        "complex64": zlib.compress(msgpack_serialize({"x": np.zeros(3, np.complex64)})),
        "unicode": zlib.compress(msgpack_serialize({"x": np.array(["a", "b", "c"])})),
        "int64_range": zlib.compress(msgpack_serialize({"x": np.array([1, 2**31, 3], np.int64)})),
        "uint32_range": zlib.compress(msgpack_serialize({"x": np.array([1, 2, 2**32 - 1], np.uint32)})),
        "rank7": packed({"x": nd((3, 1, 1, 1, 1, 1, 1), "float32", three)}),
        "examples_mismatch": zlib.compress(msgpack_serialize({"x": np.arange(4, dtype=np.float32)})),
        "bytes_count": packed({"x": msgpack.ExtType(4, msgpack.packb(((3,), [b"a", b"b"]), use_bin_type=True))}),
        "bytes_item": packed({"x": msgpack.ExtType(4, msgpack.packb(((3,), [b"a", 5, b"c"]), use_bin_type=True))}),
        "bytes_rank2": zlib.compress(msgpack_serialize({"x": np.array([[b"a", b"b"]] * 3, dtype=object)})),
        "duplicate": zlib.compress(b"\x82" + (b"\xa1x" + msgpack_serialize(np.zeros(3, np.float32))) * 2),
        "empty_blob": b"",
        "huge_count": zlib.compress(b"\xdf\xff\xff\xff\xff"),  # a map of 2^32 - 1 pairs, 5 bytes long
        "huge_payload_count": packed({"x": msgpack.ExtType(4, b"\x92\x91\x03\xdd\xff\xff\xff\xff")}),
        "too_deep": zlib.compress(b"\x91" * 100 + b"\xc0"),  # valid, nested past msgpack-c's limit
    }
    return [(name.encode(), blob, 3) for name, blob in rows.items()] + [(b"null_data", None, 3)]


def write_corrupt(d):
    build_raw(os.path.join(d, "corrupt.sqlite"), corrupt_rows(), "CREATE TABLE federated_data "
              "(client_id BLOB PRIMARY KEY, data BLOB, num_examples INTEGER)")
    with open(os.path.join(d, "not_sqlite.sqlite"), "wb") as f:
        f.write(b"this is a text file, not an SQLite database, " * 40)
    con = sqlite3.connect(os.path.join(d, "no_table.sqlite"))
    con.execute("CREATE TABLE examples (client_id BLOB, data BLOB)")
    con.commit()
    con.close()
    con = sqlite3.connect(os.path.join(d, "no_column.sqlite"))
    con.execute("CREATE TABLE federated_data (client_id BLOB PRIMARY KEY, num_examples INTEGER)")
    con.commit()
    con.close()
    loose = "CREATE TABLE federated_data (client_id BLOB PRIMARY KEY, data BLOB, num_examples)"
    good = zlib.compress(msgpack_serialize({"x": np.arange(3, dtype=np.float32)}))
    build_raw(os.path.join(d, "bad_count.sqlite"), [(b"a", good, 3), (b"b", good, -1)], loose)
    build_raw(os.path.join(d, "text_count.sqlite"), [(b"a", good, "three")], loose)
    build_raw(os.path.join(d, "null_count.sqlite"), [(b"a", good, None)], loose)
    build_raw(os.path.join(d, "nul_id.sqlite"), [(b"a\x00b", good, 3)], loose)
    build_raw(os.path.join(d, "int_id.sqlite"), [(17, good, 3)], loose)
    # A text id (not what FedJAX writes) must still be found when loaded.
    build_raw(os.path.join(d, "text_id.sqlite"), [("text id", good, 3), (b"blob id", good, 3)], loose)


def main():
    d = sys.argv[1]
    build(os.path.join(d, "emnist.sqlite"), [(cid, emnist(c, n)) for c, (cid, n) in enumerate(EMNIST)])
    build(os.path.join(d, "shakespeare.sqlite"),
          [(cid, {"snippets": np.array(s, dtype=object)}) for cid, s in SHAKESPEARE])
    build(os.path.join(d, "stackoverflow.sqlite"), stackoverflow())
    build(os.path.join(d, "dtypes.sqlite"), dtypes())
    write_corrupt(d)


if __name__ == "__main__":
    main()
