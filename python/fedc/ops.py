"""Every fedc op (program.h) as a function of traced values.

Arguments that are not Values (Python numbers, numpy arrays) become constants, of
the other operand's dtype for the binary ops. Names and conventions are the C
API's: axes may be negative, images are NHWC, filters HWIO, labels i32; padding
is "VALID" or "SAME"; dtypes are names ("f32") or numpy dtypes.
"""

import ctypes

from . import _lib
from .errors import ESHAPE
from .tracing import Value, builder_of, lift
from .types import TypeSpec, dtype_code

_L = _lib.lib


# fedc_padding (program.h) by name, with C's values (python/tests/test_abi.py).
PADDING_CODES = {"VALID": 0, "SAME": 1}


def _unary(name):
    cfun = getattr(_L, "fedc_" + name)

    def op(x):
        b = builder_of(x)
        return b.check(cfun(b._get(), lift(b, x).v))
    op.__name__ = name
    op.__doc__ = "fedc_%s, elementwise (program.h)." % name
    return op


def _binary(name):
    cfun = getattr(_L, "fedc_" + name)

    def op(a, b_):
        b = builder_of(a, b_)
        # A constant takes the dtype of the Value it meets.
        va = lift(b, a, b_ if isinstance(b_, Value) and not isinstance(a, Value) else None)
        vb = lift(b, b_, va)
        return b.check(cfun(b._get(), va.v, vb.v))
    op.__name__ = name
    op.__doc__ = "fedc_%s, with numpy broadcasting (program.h)." % name
    return op


for _n in ("neg exp log tanh sigmoid relu sqrt square log_softmax gelu").split():
    globals()[_n] = _unary(_n)
for _n in _lib.BINARY:
    globals()[_n] = _binary(_n)
del _n


def pow(x, exponent):
    b = builder_of(x)
    return b.check(_L.fedc_pow(b._get(), lift(b, x).v, float(exponent)))


def select(cond, a, b_):
    """a where cond is true, else b (broadcasting); as numpy.where."""
    b = builder_of(cond, a, b_)
    like = a if isinstance(a, Value) else b_ if isinstance(b_, Value) else None
    va = lift(b, a, like)
    return b.check(_L.fedc_select(b._get(), lift(b, cond).v, va.v, lift(b, b_, va).v))


where = select


def _axes(x, axis):
    if axis is None:
        return None, -1
    axes = [axis] if isinstance(axis, int) else list(axis)
    return _lib.ints(axes), len(axes)


def _reduce(name):
    cfun = getattr(_L, "fedc_" + name)

    def op(x, axis=None, keepdims=False):
        b = builder_of(x)
        axes, n = _axes(x, axis)
        return b.check(cfun(b._get(), lift(b, x).v, axes, n, bool(keepdims)))
    op.__name__ = name
    op.__doc__ = "fedc_%s over `axis` (an int, a sequence, or None: all)." % name
    return op


reduce_sum, reduce_mean, reduce_max = (_reduce(n) for n in ("reduce_sum", "reduce_mean", "reduce_max"))


def argmax(x, axis=-1):
    b = builder_of(x)
    return b.check(_L.fedc_argmax(b._get(), lift(b, x).v, axis))


def reshape(x, shape):
    b = builder_of(x)
    shape = list(shape)
    return b.check(_L.fedc_reshape(b._get(), lift(b, x).v, len(shape), _lib.int64s(shape)))


def broadcast_to(x, shape):
    b = builder_of(x)
    shape = list(shape)
    return b.check(_L.fedc_broadcast_to(b._get(), lift(b, x).v, len(shape), _lib.int64s(shape)))


def transpose(x, perm=None):
    b = builder_of(x)
    x = lift(b, x)
    perm = list(range(x.ndim))[::-1] if perm is None else list(perm)
    if len(perm) != x.ndim:
        raise _lib.error(ESHAPE, "transpose: perm %s has %d axes, x is %s"
                         % (perm, len(perm), x.spec))
    return b.check(_L.fedc_transpose(b._get(), x.v, _lib.ints(perm)))


def slice(x, start, limit):
    """x[start[i]:limit[i]] along every axis (unit stride)."""
    b = builder_of(x)
    return b.check(_L.fedc_slice(b._get(), lift(b, x).v, _lib.int64s(start), _lib.int64s(limit)))


def concat(xs, axis=0):
    b = builder_of(*xs)
    vs = [lift(b, x).v for x in xs]
    return b.check(_L.fedc_concat(b._get(), _lib.values(vs), len(vs), axis))


concatenate = concat


def pad(x, lo, hi):
    b = builder_of(x)
    return b.check(_L.fedc_pad(b._get(), lift(b, x).v, _lib.int64s(lo), _lib.int64s(hi)))


def matmul(a, b_, transpose_a=False, transpose_b=False):
    """a @ b of the last two axes, batched; a vector operand is a row (a) or a
    column (b), its axis removed from the result, as numpy's @ does."""
    b = builder_of(a, b_)
    va = lift(b, a, b_ if not isinstance(a, Value) else None)
    vb = lift(b, b_, va)
    if va.ndim == 1 and vb.ndim == 1:
        return reduce_sum(va * vb)
    if va.ndim == 1:
        return reshape(matmul(reshape(va, (1, -1)), vb, False, transpose_b), _drop(vb, -2 if not transpose_b else -1))
    if vb.ndim == 1:
        y = matmul(va, reshape(vb, (-1, 1)), transpose_a, False)
        return reshape(y, y.shape[:-1])
    return b.check(_L.fedc_matmul(b._get(), va.v, vb.v, transpose_a, transpose_b))


def _drop(m, axis):
    """m's shape without the contracted axis: the shape of vector @ m."""
    s = list(m.shape)
    del s[axis]
    return s


def gather(table, idx):
    """Rows of `table` at the i32 indices `idx` (any shape)."""
    b = builder_of(table, idx)
    vi = lift(b, idx) if isinstance(idx, Value) else lift(b, _as_i32(idx))
    return b.check(_L.fedc_gather(b._get(), lift(b, table).v, vi.v))


def _as_i32(idx):
    import numpy as np
    return np.asarray(idx, dtype=np.int32)


def scatter_add(updates, idx, rows):
    b = builder_of(updates, idx)
    vi = lift(b, idx) if isinstance(idx, Value) else lift(b, _as_i32(idx))
    return b.check(_L.fedc_scatter_add(b._get(), lift(b, updates).v, vi.v, int(rows)))


def one_hot(idx, depth, dtype="f32"):
    b = builder_of(idx)
    return b.check(_L.fedc_one_hot(b._get(), lift(b, idx).v, int(depth), dtype_code(dtype)))


def _pair(v):
    return (v, v) if isinstance(v, int) else tuple(v)


def _padding(p):
    if p not in PADDING_CODES:
        raise ValueError("padding must be 'VALID' or 'SAME', not %r" % (p,))
    return PADDING_CODES[p]


def conv2d(x, w, stride=1, padding="VALID"):
    b = builder_of(x, w)
    sh, sw = _pair(stride)
    return b.check(_L.fedc_conv2d(b._get(), lift(b, x).v, lift(b, w).v, sh, sw, _padding(padding)))


def _pool(name):
    cfun = getattr(_L, "fedc_" + name)

    def op(x, window, stride=None, padding="VALID"):
        b = builder_of(x)
        wh, ww = _pair(window)
        sh, sw = _pair(stride if stride is not None else window)
        return b.check(cfun(b._get(), lift(b, x).v, wh, ww, sh, sw, _padding(padding)))
    op.__name__ = name
    return op


max_pool2d, avg_pool2d = _pool("max_pool2d"), _pool("avg_pool2d")


def softmax_cross_entropy(logits, labels, weight=None):
    b = builder_of(logits, labels)
    w = _lib.FEDC_NONE if weight is None else lift(b, weight, logits).v
    return b.check(_L.fedc_softmax_cross_entropy(b._get(), lift(b, logits).v, lift(b, labels).v, w))


def softmax_cross_entropy_grad(logits, labels, scale):
    b = builder_of(logits, labels, scale)
    return b.check(_L.fedc_softmax_cross_entropy_grad(b._get(), lift(b, logits).v,
                                                      lift(b, labels).v, lift(b, scale, logits).v))


def dropout(x, key, rate):
    b = builder_of(x, key)
    vk = lift(b, key) if isinstance(key, Value) else lift(b, _as_i32(key))
    return b.check(_L.fedc_dropout(b._get(), lift(b, x).v, vk.v, float(rate)))


def random_normal(key, shape, dtype="f32"):
    """Standard normal draws of `shape`, element i the i-th of key's counter stream
    (the same bits on any number of threads)."""
    b = builder_of(key)
    vk = lift(b, key) if isinstance(key, Value) else lift(b, _as_i32(key))
    return b.check(_L.fedc_random_normal(b._get(), vk.v, TypeSpec(dtype, shape).to_c()))


def random_uniform(key, shape, dtype="f32"):
    """Uniform draws in [0, 1) of `shape`, element i the i-th of key's counter stream."""
    b = builder_of(key)
    vk = lift(b, key) if isinstance(key, Value) else lift(b, _as_i32(key))
    return b.check(_L.fedc_random_uniform(b._get(), vk.v, TypeSpec(dtype, shape).to_c()))


def cast(x, dtype):
    b = builder_of(x)
    return b.check(_L.fedc_cast(b._get(), lift(b, x).v, dtype_code(dtype)))


def _ctype(spec):
    spec = spec if isinstance(spec, TypeSpec) else TypeSpec(*spec)
    return ctypes.byref(spec.to_c())


def conv2d_input_grad(dy, w, x_type, stride, pads):
    b = builder_of(dy, w)
    sh, sw = _pair(stride)
    return b.check(_L.fedc_conv2d_input_grad(b._get(), lift(b, dy).v, lift(b, w).v, _ctype(x_type),
                                             sh, sw, _lib.int64s(pads)))


def conv2d_filter_grad(x, dy, kernel, stride, pads):
    b = builder_of(x, dy)
    kh, kw = _pair(kernel)
    sh, sw = _pair(stride)
    return b.check(_L.fedc_conv2d_filter_grad(b._get(), lift(b, x).v, lift(b, dy).v, kh, kw, sh, sw,
                                              _lib.int64s(pads)))


def max_pool2d_grad(x, dy, window, stride, pads):
    b = builder_of(x, dy)
    (wh, ww), (sh, sw) = _pair(window), _pair(stride)
    return b.check(_L.fedc_max_pool2d_grad(b._get(), lift(b, x).v, lift(b, dy).v, wh, ww, sh, sw,
                                           _lib.int64s(pads)))


def avg_pool2d_grad(dy, x_type, window, stride, pads):
    b = builder_of(dy)
    (wh, ww), (sh, sw) = _pair(window), _pair(stride)
    return b.check(_L.fedc_avg_pool2d_grad(b._get(), lift(b, dy).v, _ctype(x_type), wh, ww, sh, sw,
                                           _lib.int64s(pads)))


def _values_op(name, nargs, extra=None):
    cfun = getattr(_L, "fedc_" + name)

    def op(*args):
        vals, rest = args[:nargs], args[nargs:]
        b = builder_of(*vals)
        cargs = [lift(b, v).v for v in vals] + list(rest)
        return b.check(cfun(b._get(), *cargs))
    op.__name__ = name
    op.__doc__ = "fedc_%s (program.h)%s." % (name, extra or "")
    return op


lstm = _values_op("lstm", 2, ": the trace [T, B, 6H] of xw [T, B, 4H] and wh [H, 4H]")
lstm_grad = _values_op("lstm_grad", 3)
lstm_tangent = _values_op("lstm_tangent", 3)
gelu_grad = _values_op("gelu_grad", 2)
causal_attention = _values_op("causal_attention", 1, ": causal_attention(qkv, heads)")
causal_attention_grad = _values_op("causal_attention_grad", 2)


def layer_norm(x, gamma, beta, eps=1e-5):
    b = builder_of(x, gamma, beta)
    return b.check(_L.fedc_layer_norm(b._get(), lift(b, x).v, lift(b, gamma).v, lift(b, beta).v,
                                      float(eps)))


def layer_norm_grad(x, gamma, dy, eps=1e-5):
    b = builder_of(x, gamma, dy)
    return b.check(_L.fedc_layer_norm_grad(b._get(), lift(b, x).v, lift(b, gamma).v, lift(b, dy).v,
                                           float(eps)))


def layer_norm_param_grad(x, dy, eps=1e-5):
    b = builder_of(x, dy)
    return b.check(_L.fedc_layer_norm_param_grad(b._get(), lift(b, x).v, lift(b, dy).v, float(eps)))


# ------------------------------------------------------------------ constants --
def constant(value, dtype=None):
    """A constant holding a copy of `value` (an array or a number): of `dtype`, or
    f32 for Python floats and i32 for integers (as JAX without x64)."""
    import numpy as np
    b = builder_of()
    if dtype is not None:
        value = np.asarray(value, dtype=TypeSpec(dtype).np_dtype)
    return lift(b, value)


def scalar(value, dtype="f32"):
    b = builder_of()
    return b.check(_L.fedc_scalar(b._get(), dtype_code(dtype), float(value)))


def full(shape, value, dtype="f32"):
    b = builder_of()
    return b.check(_L.fedc_full(b._get(), TypeSpec(dtype, shape).to_c(), float(value)))


def zeros(shape, dtype="f32"):
    return full(shape, 0.0, dtype)


def ones(shape, dtype="f32"):
    return full(shape, 1.0, dtype)


def full_like(x, value):
    """A constant of x's type (its dtype, shape and placement), every element `value`."""
    b = builder_of(x)
    return b.check(_L.fedc_full(b._get(), _L.fedc_value_type(b._get(), lift(b, x).v), float(value)))


def zeros_like(x):
    return full_like(x, 0.0)


def ones_like(x):
    return full_like(x, 1.0)


def iota(shape, axis=0, dtype="i32"):
    b = builder_of()
    return b.check(_L.fedc_iota(b._get(), TypeSpec(dtype, shape).to_c(), axis))


__all__ = [_n for _n, _f in list(globals().items())
           if callable(_f) and getattr(_f, "__module__", None) == __name__ and not _n.startswith("_")]
