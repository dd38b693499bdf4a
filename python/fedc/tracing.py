"""Tracing: Python functions run over symbolic values, building a fedc program.

A Builder owns a program under construction; a Value is one of its values (an
SSA number with its type). Every operation on a Value appends one op through the
C builders and checks the program's sticky error at once, so a shape error is
raised at the Python line that caused it, with fedc's message. Builders nest
(a map's or fold's body is traced in a builder of its own); a Value can be used
only in its own builder while that builder is open.
"""

import ctypes
import threading

import numpy as np

from . import _lib
from .errors import EINVAL, ETYPE
from .types import DTYPE_CODES, NUMPY, TypeSpec, dtype_name

_state = threading.local()


def _stack():
    s = getattr(_state, "stack", None)
    if s is None:
        s = _state.stack = []
    return s


def current():
    """The innermost builder being traced on this thread, or None."""
    s = _stack()
    return s[-1] if s else None


class Builder:
    """A program under construction; `with builder:` makes it the current one."""

    def __init__(self, what="program", capturing=False, body=False):
        ptr = ctypes.c_void_p()
        _lib.check(_lib.lib.fedc_program_create(ctypes.byref(ptr)))
        self.ptr = ptr
        self.what = what
        # A capturing builder (a program traced to be differentiated or inlined where
        # it is called) turns a value of the builder around it, used by closure, into
        # an input of its own: `captures` lists (outer value, input) in input order,
        # and the caller passes the outer values for those inputs.
        self.parent = current() if capturing else None
        self.captures = []
        self.body = body  # a map or fold body: its values, captured ones too, are local

    @classmethod
    def wrap(cls, ptr, what):
        """A builder over a program C owns (a round being built by fedc's runner): it
        never destroys it; the caller clears .ptr when C takes the program back."""
        b = cls.__new__(cls)
        b.ptr, b.what, b.parent, b.captures, b.body = ctypes.c_void_p(ptr), what, None, [], False
        return b

    def __enter__(self):
        _stack().append(self)
        return self

    def __exit__(self, *exc):
        s = _stack()
        s.pop(len(s) - 1 - s[::-1].index(self))  # the innermost entry: builders re-enter

    def _get(self):
        if self.ptr is None:
            raise _lib.error(EINVAL, "a traced value was used after its trace ended (did it "
                             "escape the traced function, e.g. through a global?)")
        return self.ptr

    def capture(self, x):
        """The input of this builder that stands for x, a value of an enclosing one."""
        for outer, inner in self.captures:
            if outer.b is x.b and outer.v == x.v:
                return inner
        if self.parent is None:
            raise _lib.error(EINVAL, "a value of another program was used here: one traced "
                             "program cannot read another's values (pass the value in as an "
                             "argument)")
        if x.b is not self.parent:
            # x is from further out: the parent captures it first, and this builder
            # captures the parent's input (found again by the loop above through it).
            return self.capture(self.parent.capture(x))
        spec = x.spec.at("local") if self.body else x.spec
        inner = self.input("capture/%d" % len(self.captures), spec)
        self.captures.append((x, inner))
        return inner

    def encloses(self, other):
        """Whether `other` is this builder or one it captures from."""
        b = self
        while b is not None:
            if b is other:
                return True
            b = b.parent
        return False

    def check(self, v):
        """`v` as a Value of this builder, or fedc.Error with the op's message."""
        if v == _lib.FEDC_NONE:
            st = _lib.lib.fedc_program_status(self._get())
            raise _lib.error(st or EINVAL)
        return Value(self, v)

    def status(self):
        _lib.check(_lib.lib.fedc_program_status(self._get()))

    def input(self, name, spec):
        return self.check(_lib.lib.fedc_input(self._get(), name.encode(), spec.to_c()))

    def output(self, name, value):
        _lib.check(_lib.lib.fedc_program_output(self._get(), name.encode(), value.v))

    def take(self):
        """The finished C program: the builder no longer owns it."""
        ptr, self.ptr = self._get(), None
        return ptr

    def discard(self):
        if self.ptr is not None:
            _lib.lib.fedc_program_destroy(self.ptr)
            self.ptr = None


def lift(b, x, like=None):
    """`x` as a Value of builder b: Values pass; Python numbers and arrays become
    constants, of `like`'s dtype when given (as JAX treats Python scalars)."""
    if isinstance(x, Value):
        return x if x.b is b else b.capture(x)
    if isinstance(x, (bool, int, float)) and not isinstance(x, np.generic):
        if like is not None:
            return b.check(_lib.lib.fedc_scalar_like(b._get(), like.v, float(x)))
        dt = "bool" if isinstance(x, bool) else "i32" if isinstance(x, int) else "f32"
        return b.check(_lib.lib.fedc_scalar(b._get(), DTYPE_CODES[dt], float(x)))
    try:
        arr = np.asarray(x)
    except Exception:
        arr = None
    if arr is None or arr.dtype == object:
        raise _lib.error(ETYPE, "cannot use a %s as a fedc value" % type(x).__name__)
    if like is None:
        arr = _default_dtype(arr, from_python=not isinstance(x, (np.ndarray, np.generic)))
    dt = like.spec.dtype if like is not None else dtype_name(arr.dtype)
    return constant(b, np.array(arr, dtype=NUMPY[dt], order="C"))  # (ascontiguousarray makes 0-d 1-d)


def _default_dtype(arr, from_python):
    """A constant's dtype: Python lists of floats are f32 (as in JAX), int64 (numpy's
    default integer) is i32 when its values fit."""
    if arr.dtype == np.float64 and from_python:
        return arr.astype(np.float32)
    if arr.dtype.kind in "iu" and arr.dtype not in (np.int32, np.uint8):
        if arr.size and (arr.min() < -2**31 or arr.max() >= 2**31):
            raise _lib.error(ETYPE, "an integer constant outside i32's range (fedc's integers "
                             "are i32)")
        return arr.astype(np.int32)
    return arr


def constant(b, arr):
    spec = TypeSpec(dtype_name(arr.dtype), arr.shape)
    return b.check(_lib.lib.fedc_constant(b._get(), spec.to_c(), arr.ctypes.data_as(ctypes.c_void_p)))


def builder_of(*xs):
    """The builder an op on xs goes to: the current one when every Value among xs is
    its own or an enclosing builder's (those are captured into it, as JAX's inner
    traces see outer values), else the first Value's."""
    cur = current()
    vals = [x for x in xs if isinstance(x, Value)]
    if cur is not None and all(cur.encloses(x.b) for x in vals):
        return cur
    if vals:
        return vals[0].b
    raise _lib.error(EINVAL, "this fedc operation needs a traced value: call it inside a "
                     "function decorated with @fedc.program (or fedc.map/fedc.fold's body)")


class Value:
    """A symbolic value of a program being traced: typed, placed, no data.

    Operators build ops: + - * / @ ** (a constant exponent), unary -, the six
    comparisons (giving bool values), and indexing: integers and unit-step slices
    (fedc's slice), and an i32 index array in the first position (gather).
    """

    __slots__ = ("b", "v", "_spec")
    __array_priority__ = 1000  # numpy defers to Value's reflected operators

    def __init__(self, b, v):
        self.b, self.v, self._spec = b, v, None

    @property
    def spec(self):
        if self._spec is None:
            self._spec = TypeSpec.from_c(_lib.lib.fedc_value_type(self.b._get(), self.v))
        return self._spec

    shape = property(lambda self: self.spec.shape)
    dtype = property(lambda self: self.spec.dtype)
    placement = property(lambda self: self.spec.placement)
    ndim = property(lambda self: len(self.spec.shape))

    def __repr__(self):
        return "<fedc.Value %%%d: %s>" % (self.v, self.spec if self.b.ptr is not None else "(trace ended)")

    def __bool__(self):
        raise TypeError("a traced fedc value has no truth value while tracing (its data exist "
                        "only when the program runs): use fedc.select(cond, a, b) instead of if")

    def __hash__(self):
        return id(self)

    def __len__(self):
        if not self.shape:
            raise TypeError("len() of a scalar fedc value")
        return self.shape[0]

    def __iter__(self):
        return (self[i] for i in range(len(self)))

    def __getitem__(self, key):
        from .index import getitem
        return getitem(self, key)

    # Operators delegate to fedc.ops (imported late: ops imports this module).
    def _bin(self, name, other, reflected=False):
        from . import ops
        return getattr(ops, name)(other, self) if reflected else getattr(ops, name)(self, other)

    __add__ = lambda s, o: s._bin("add", o)
    __radd__ = lambda s, o: s._bin("add", o, True)
    __sub__ = lambda s, o: s._bin("sub", o)
    __rsub__ = lambda s, o: s._bin("sub", o, True)
    __mul__ = lambda s, o: s._bin("mul", o)
    __rmul__ = lambda s, o: s._bin("mul", o, True)
    __truediv__ = lambda s, o: s._bin("div", o)
    __rtruediv__ = lambda s, o: s._bin("div", o, True)
    __matmul__ = lambda s, o: s._bin("matmul", o)
    __rmatmul__ = lambda s, o: s._bin("matmul", o, True)
    __lt__ = lambda s, o: s._bin("lt", o)
    __le__ = lambda s, o: s._bin("le", o)
    __gt__ = lambda s, o: s._bin("gt", o)
    __ge__ = lambda s, o: s._bin("ge", o)
    __eq__ = lambda s, o: s._bin("eq", o)
    __ne__ = lambda s, o: s._bin("ne", o)

    def __neg__(self):
        from . import ops
        return ops.neg(self)

    def __pos__(self):
        return self

    def __pow__(self, exponent):
        from . import ops
        if exponent == 2:
            return ops.square(self)
        return ops.pow(self, exponent)

    # numpy-style methods.
    def reshape(self, *shape):
        from . import ops
        return ops.reshape(self, shape[0] if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else shape)

    def astype(self, dtype):
        from . import ops
        return ops.cast(self, dtype)

    @property
    def T(self):
        from . import ops
        return ops.transpose(self)

    def sum(self, axis=None, keepdims=False):
        from . import ops
        return ops.reduce_sum(self, axis, keepdims)

    def mean(self, axis=None, keepdims=False):
        from . import ops
        return ops.reduce_mean(self, axis, keepdims)

    def max(self, axis=None, keepdims=False):
        from . import ops
        return ops.reduce_max(self, axis, keepdims)
