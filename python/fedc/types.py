"""Element types, shapes and placements: the type of every fedc value (types.h).

    fedc.f32[3, 4]                  a local f32[3,4]
    fedc.f32[()].at("server")       f32[]@server; also fedc.server(fedc.f32[()])
    fedc.clients(fedc.i32[10])      i32[10]@clients: one i32[10] per client
"""

import numpy as np

from . import _lib

# fedc_dtype and fedc_placement of types.h by name, with C's values (python/tests/test_abi.py
# holds them equal): a value is never taken from a name's position.
DTYPE_CODES = {"f32": 0, "f64": 1, "i32": 2, "u8": 3, "bool": 4}
PLACEMENT_CODES = {"local": 0, "server": 1, "clients": 2, "groups": 3}
DTYPES = tuple(DTYPE_CODES)
PLACEMENTS = tuple(PLACEMENT_CODES)
_DTYPE_NAMES = {v: k for k, v in DTYPE_CODES.items()}
_PLACEMENT_NAMES = {v: k for k, v in PLACEMENT_CODES.items()}
NUMPY = {"f32": np.dtype(np.float32), "f64": np.dtype(np.float64), "i32": np.dtype(np.int32),
         "u8": np.dtype(np.uint8), "bool": np.dtype(np.bool_)}


def dtype_name(dt):
    """'f32' for 'f32', np.float32, np.dtype('float32') or a fedc.f32 maker."""
    if isinstance(dt, DType):
        return dt.name
    if isinstance(dt, str) and dt in DTYPES:
        return dt
    try:
        npdt = np.dtype(dt)
    except TypeError:
        npdt = None
    for name, d in NUMPY.items():
        if d == npdt:
            return name
    raise TypeError("fedc has no dtype %r (it has %s)" % (dt, ", ".join(DTYPES)))


def dtype_code(dt):
    """The fedc_dtype of anything dtype_name takes."""
    return DTYPE_CODES[dtype_name(dt)]


class TypeSpec:
    """A value's type: dtype name, shape tuple and placement name."""

    __slots__ = ("dtype", "shape", "placement")

    def __init__(self, dtype, shape=(), placement="local"):
        self.dtype = dtype_name(dtype)
        self.shape = tuple(int(d) for d in shape)
        if placement not in PLACEMENTS:
            raise ValueError("placement must be one of %s, not %r" % (PLACEMENTS, placement))
        if len(self.shape) > _lib.FEDC_MAX_RANK:
            raise ValueError("fedc values have at most %d dimensions, not %d"
                             % (_lib.FEDC_MAX_RANK, len(self.shape)))
        self.placement = placement

    def at(self, placement):
        return TypeSpec(self.dtype, self.shape, placement)

    @property
    def np_dtype(self):
        return NUMPY[self.dtype]

    @property
    def rank(self):
        return len(self.shape)

    def to_c(self):
        t = _lib.Type()
        t.dtype = DTYPE_CODES[self.dtype]
        t.placement = PLACEMENT_CODES[self.placement]
        t.rank = len(self.shape)
        for i, d in enumerate(self.shape):
            t.dims[i] = d
        return t

    @staticmethod
    def from_c(t):
        return TypeSpec(_DTYPE_NAMES[t.dtype], tuple(t.dims[i] for i in range(t.rank)),
                        _PLACEMENT_NAMES[t.placement])

    def __eq__(self, other):
        return (isinstance(other, TypeSpec) and self.dtype == other.dtype
                and self.shape == other.shape and self.placement == other.placement)

    def __hash__(self):
        return hash((self.dtype, self.shape, self.placement))

    def __repr__(self):
        s = "%s[%s]" % (self.dtype, ",".join(str(d) for d in self.shape))
        return s if self.placement == "local" else s + "@" + self.placement


class DType:
    """fedc.f32 and friends: fedc.f32[3, 4] is the TypeSpec of a local f32[3,4]."""

    def __init__(self, name):
        self.name = name

    def __getitem__(self, shape):
        if not isinstance(shape, tuple):
            shape = (shape,)
        return TypeSpec(self.name, shape)

    def __repr__(self):
        return "fedc." + self.name


f32, f64, i32, u8 = DType("f32"), DType("f64"), DType("i32"), DType("u8")
bool_ = DType("bool")


def server(spec):
    return spec.at("server")


def clients(spec):
    return spec.at("clients")


def groups(spec):
    return spec.at("groups")
