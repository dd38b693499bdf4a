"""Tensors as safetensors bytes (include/fedc/safetensors.h): an 8-byte little-endian
header length, a JSON header {name: {"dtype", "shape", "data_offsets"}} and the
tensors' bytes. fedc's checkpoints, plans' models and wire values are these; this is
the format read and written from numpy, for dtypes fedc has."""

import json
import struct

import numpy as np

DTYPES = {"F32": np.float32, "F64": np.float64, "I32": np.int32, "U8": np.uint8, "BOOL": np.bool_}
_NAMES = {np.dtype(v): k for k, v in DTYPES.items()}


def decode(blob):
    """{name: array} of safetensors bytes, in the header's order (arrays own their data)."""
    blob = bytes(blob)
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + n])
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        lo, hi = t["data_offsets"]
        out[name] = np.frombuffer(blob[8 + n + lo:8 + n + hi], DTYPES[t["dtype"]]).reshape(t["shape"]).copy()
    return out


def encode(tensors, metadata=None):
    """Safetensors bytes of {name: array} (row-major, little-endian), in the dict's order,
    with {key: string} metadata."""
    header, data, at = ({"__metadata__": dict(metadata)} if metadata else {}), [], 0
    for name, a in tensors.items():
        a = np.asarray(a, order="C")  # (ascontiguousarray makes a 0-d array 1-d)
        if a.dtype not in _NAMES:
            raise TypeError(f"safetensors: {name} is {a.dtype}; fedc has f32, f64, i32, u8 and bool")
        b = a.astype(a.dtype.newbyteorder("<"), copy=False).tobytes()
        header[name] = {"dtype": _NAMES[a.dtype], "shape": list(a.shape), "data_offsets": [at, at + len(b)]}
        data.append(b)
        at += len(b)
    head = json.dumps(header, separators=(",", ":")).encode()
    head += b" " * (-len(head) % 8)  # the data start 8-aligned, as fedc writes them
    return struct.pack("<Q", len(head)) + head + b"".join(data)


def read(path):
    """{name: array} of a .safetensors file."""
    with open(path, "rb") as f:
        return decode(f.read())
