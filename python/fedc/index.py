"""Indexing traced values: x[1], x[:, 2:5], x[..., 0], x[idx] (numpy's basic indexing
where fedc has it: integers and unit-step slices are fedc's slice, then a reshape
drops the integer axes; an i32 index array in the first position is a gather)."""

import builtins

import numpy as np

from . import _lib, ops
from .errors import EINVAL, ERANGE
from .tracing import Value


def getitem(x, key):
    if not isinstance(key, tuple):
        key = (key,)
    if key and (isinstance(key[0], Value) or isinstance(key[0], (list, np.ndarray))):
        rows = ops.gather(x, key[0])
        rest = key[1:]
        if not rest:
            return rows
        lead = rows.ndim - x.ndim + 1  # the index's own axes come first
        return getitem(rows, (builtins.slice(None),) * lead + rest)
    return _basic(x, key)


def _basic(x, key):
    shape = x.shape
    if key.count(Ellipsis) > 1:
        raise IndexError("an index can have only one Ellipsis")
    if Ellipsis in key:
        i = key.index(Ellipsis)
        fill = len(shape) - (len(key) - 1)
        key = key[:i] + (builtins.slice(None),) * fill + key[i + 1:]
    if len(key) > len(shape):
        raise IndexError("too many indices: %d for %s" % (len(key), x.spec))
    key = key + (builtins.slice(None),) * (len(shape) - len(key))
    start, limit, out_shape = [], [], []
    for axis, (k, n) in enumerate(zip(key, shape)):
        if isinstance(k, (int, np.integer)) and not isinstance(k, bool):
            i = int(k) + n if k < 0 else int(k)
            if not 0 <= i < n:
                raise _lib.error(ERANGE, "index %d is out of range for axis %d of %s"
                                 % (k, axis, x.spec))
            start.append(i)
            limit.append(i + 1)
        elif isinstance(k, builtins.slice):
            lo, hi, step = k.indices(n)
            if step != 1:
                raise _lib.error(EINVAL, "fedc's slice has unit stride: step %d is not supported"
                                 % step)
            hi = max(hi, lo)
            start.append(lo)
            limit.append(hi)
            out_shape.append(hi - lo)
        else:
            raise IndexError("fedc values take integers, slices, ... and an i32 index array "
                             "(first), not %r" % (k,))
    y = x
    if start != [0] * len(shape) or limit != list(shape):
        y = ops.slice(x, start, limit)
    if len(out_shape) != len(shape):
        y = ops.reshape(y, out_shape)
    return y
