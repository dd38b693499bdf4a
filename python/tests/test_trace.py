"""Tracing Python functions: operators, indexing, every op, structures, errors."""

import re

import numpy as np
import pytest

import fedc

RNG = np.random.default_rng(0)
A = RNG.standard_normal((3, 4)).astype(np.float32)
B = RNG.standard_normal((3, 4)).astype(np.float32) + 3
M = RNG.standard_normal((4, 2)).astype(np.float32)


def close(a, b, tol=1e-5):
    np.testing.assert_allclose(np.asarray(a, np.float64), np.asarray(b, np.float64), rtol=tol,
                               atol=tol)


def test_operators_match_numpy():
    @fedc.program
    def f(a, b, m):
        return (a + b, a - b, a * b, a / b, a @ m, -a, a ** 2, a ** 3,
                2 + a, 2 - a, 2 * a, 2 / b, a + 1.5)
    got = f(A, B, M)
    want = (A + B, A - B, A * B, A / B, A @ M, -A, A ** 2, A ** 3, 2 + A, 2 - A, 2 * A, 2 / B,
            A + 1.5)
    for g, w in zip(got, want):
        assert g.dtype == np.float32
        close(g, w)


def test_comparisons_give_bool():
    @fedc.program
    def f(a, b):
        return a < b, a <= a, a > 0, a >= b, a == a, a != a
    got = f(A, B)
    want = (A < B, A <= A, A > 0, A >= B, A == A, A != A)
    for g, w in zip(got, want):
        assert g.dtype == np.bool_ and np.array_equal(g, w)


def test_broadcasting_and_methods():
    v = np.arange(4, dtype=np.float32)

    @fedc.program
    def f(a, v):
        return (a + v, a.sum(), a.sum(axis=0), a.mean(axis=1, keepdims=True), a.max(axis=-1),
                a.T, a.reshape(4, 3), a.reshape((2, -1)), a.astype("i32"), a.shape, a.ndim)
    got = f(A, v)
    close(got[0], A + v)
    close(got[1], A.sum())
    close(got[2], A.sum(0))
    close(got[3], A.mean(1, keepdims=True))
    close(got[4], A.max(-1))
    close(got[5], A.T)
    close(got[6], A.reshape(4, 3))
    close(got[7], A.reshape(2, -1))
    assert got[8].dtype == np.int32 and np.array_equal(got[8], A.astype(np.int32))


def test_indexing():
    @fedc.program
    def f(a, i):
        return a[1], a[-1, 2], a[:, 1:3], a[..., 0], a[1:], a[::1], a[i], a[np.array([2, 0])], a[i, 1:]
    i = np.array([2, 2, 0], np.int32)
    got = f(A, i)
    want = (A[1], A[-1, 2], A[:, 1:3], A[..., 0], A[1:], A, A[i], A[[2, 0]], A[i, 1:])
    for g, w in zip(got, want):
        assert g.shape == w.shape
        close(g, w)


def test_bad_indices_raise():
    for key, err in (((5,), fedc.Error), ((slice(None, None, 2),), fedc.Error),
                     ((0, 0, 0), IndexError), (("x",), IndexError)):
        with pytest.raises(err):
            fedc.trace(lambda a: a[key], A)


def test_unary_ops_match_numpy():
    pos = np.abs(A) + 0.5
    cases = {
        "exp": np.exp, "log": np.log, "tanh": np.tanh, "sqrt": np.sqrt, "square": np.square,
        "neg": np.negative, "relu": lambda x: np.maximum(x, 0),
        "sigmoid": lambda x: 1 / (1 + np.exp(-x)),
        "log_softmax": lambda x: x - np.log(np.exp(x).sum(-1, keepdims=True)),
        "gelu": lambda x: x / 2 * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3))),
    }
    for name, ref in cases.items():
        x = pos if name in ("log", "sqrt") else A
        close(fedc.program(getattr(fedc, name))(x), ref(x.astype(np.float64)), 1e-4)


def test_array_ops():
    @fedc.program
    def f(a, b, m, i):
        return dict(
            maximum=fedc.maximum(a, b), minimum=fedc.minimum(a, 0.0), pow=fedc.pow(b, 0.5),
            select=fedc.select(a > 0, a, b), where=fedc.where(a > 0, 1.0, -1.0),
            argmax=fedc.argmax(a, axis=1), bcast=fedc.broadcast_to(m[:, 0], (3, 4)),
            transpose=fedc.transpose(a, (1, 0)), slice=fedc.slice(a, (1, 0), (3, 2)),
            concat=fedc.concat([a, b], axis=0), pad=fedc.pad(a, (1, 0), (0, 2)),
            matmul_t=fedc.matmul(a, b, transpose_b=True), gather=fedc.gather(m, i),
            scatter=fedc.scatter_add(fedc.ones((3, 2)), i, 5), one_hot=fedc.one_hot(i, 5),
            cast=fedc.cast(i, fedc.f64), iota=fedc.iota((2, 3), axis=1),
            full=fedc.full((2,), 7.0, "f64"), zeros=fedc.zeros((2, 2)), const=fedc.constant([[1, 2]]),
            scalar=fedc.scalar(3, "i32"), rsum=fedc.reduce_sum(a, (0, 1)),
            rmean=fedc.reduce_mean(a, 0), rmax=fedc.reduce_max(a))
    i = np.array([3, 0, 3], np.int32)
    g = f(A, B, M, i)
    close(g["maximum"], np.maximum(A, B))
    close(g["minimum"], np.minimum(A, 0))
    close(g["pow"], B ** 0.5)
    close(g["select"], np.where(A > 0, A, B))
    close(g["where"], np.where(A > 0, 1, -1))
    assert g["argmax"].dtype == np.int32 and np.array_equal(g["argmax"], A.argmax(1))
    close(g["bcast"], np.broadcast_to(M[:, 0], (3, 4)))
    close(g["transpose"], A.T)
    close(g["slice"], A[1:3, 0:2])
    close(g["concat"], np.concatenate([A, B]))
    close(g["pad"], np.pad(A, ((1, 0), (0, 2))))
    close(g["matmul_t"], A @ B.T)
    close(g["gather"], M[i])
    want = np.zeros((5, 2))
    np.add.at(want, i, 1)
    close(g["scatter"], want)
    close(g["one_hot"], np.eye(5)[i])
    assert g["cast"].dtype == np.float64
    assert np.array_equal(g["iota"], [[0, 1, 2], [0, 1, 2]])
    assert g["full"].dtype == np.float64 and g["full"].tolist() == [7, 7]
    assert g["zeros"].tolist() == [[0, 0], [0, 0]]
    assert g["const"].dtype == np.int32 and g["const"].tolist() == [[1, 2]]
    assert g["scalar"] == 3 and g["scalar"].dtype == np.int32
    close(g["rsum"], A.sum())
    close(g["rmean"], A.mean(0))
    close(g["rmax"], A.max())


def test_nn_ops():
    x = RNG.standard_normal((2, 6, 6, 3)).astype(np.float32)
    w = RNG.standard_normal((3, 3, 3, 4)).astype(np.float32)
    logits = RNG.standard_normal((5, 3)).astype(np.float32)
    labels = np.array([0, 2, 1, 1, 0], np.int32)

    @fedc.program
    def f(x, w, logits, labels):
        y = fedc.conv2d(x, w, stride=1, padding="SAME")
        return dict(conv=y, maxp=fedc.max_pool2d(y, 2), avgp=fedc.avg_pool2d(y, (2, 2), (2, 2)),
                    xent=fedc.softmax_cross_entropy(logits, labels),
                    xent_w=fedc.softmax_cross_entropy(logits, labels, fedc.ones((5,))),
                    drop=fedc.dropout(logits, np.array([1, 2, 3, 4], np.int32), 0.5),
                    ln=fedc.layer_norm(logits, fedc.ones((3,)), fedc.zeros((3,))))
    g = f(x, w, logits, labels)
    assert g["conv"].shape == (2, 6, 6, 4)
    xp = np.pad(x, ((0, 0), (1, 1), (1, 1), (0, 0)))
    ref = sum(xp[:, i:i + 6, j:j + 6, :] @ w[i, j] for i in range(3) for j in range(3))
    close(g["conv"], ref, 1e-4)
    close(g["maxp"], ref.reshape(2, 3, 2, 3, 2, 4).max(axis=(2, 4)), 1e-4)
    close(g["avgp"], ref.reshape(2, 3, 2, 3, 2, 4).mean(axis=(2, 4)), 1e-4)
    lse = np.log(np.exp(logits.astype(np.float64)).sum(1))
    close(g["xent"], lse - logits[np.arange(5), labels])
    close(g["xent_w"], g["xent"])
    kept = g["drop"] != 0
    close(g["drop"][kept], 2 * logits[kept])
    mu, var = logits.mean(1, keepdims=True), logits.var(1, keepdims=True)
    close(g["ln"], (logits - mu) / np.sqrt(var + 1e-5), 1e-4)
    with pytest.raises(ValueError):
        fedc.trace(lambda x, w: fedc.conv2d(x, w, padding="FULL"), x, w)


def test_every_builder_of_program_h_has_a_function():
    import os
    here = os.path.dirname(os.path.abspath(__file__))
    header = open(os.path.join(here, "..", "..", "include", "fedc", "program.h")).read()
    names = re.findall(r"FEDC_API fedc_value fedc_(\w+)\(fedc_program \*p", header)
    names += re.findall(r"FEDC_API fedc_status fedc_(map|fold)\(", header)
    missing = [n for n in names if n not in ("input", "program_fail", "scalar_like")
               and not callable(getattr(fedc, n, None))]
    assert len(names) > 60 and missing == []


def test_structures_are_trees_of_inputs_and_outputs():
    @fedc.program
    def f(params, batch):
        x, y = batch
        return {"pred": x @ params["w"] + params["b"], "stats": [fedc.reduce_sum(y), y]}
    params = {"w": M, "b": np.ones(2, np.float32)}
    batch = (A, np.arange(3, dtype=np.float32))
    out = f(params, batch)
    assert set(out) == {"pred", "stats"} and isinstance(out["stats"], list)
    close(out["pred"], A @ M + 1)
    assert out["stats"][0] == 3.0
    p = f.trace(params, batch)
    assert [n for n, _ in p.inputs] == ["params/w", "params/b", "batch/0", "batch/1"]
    assert [n for n, _ in p.outputs] == ["pred", "stats/0", "stats/1"]


def test_traced_once_per_signature():
    calls = []

    @fedc.program
    def f(x):
        calls.append(x.shape)
        return x * 2
    for _ in range(3):
        f(np.ones(3, np.float32))
    f(np.ones(4, np.float32))
    f(np.ones(3, np.float64))
    assert calls == [(3,), (4,), (3,)]
    assert f.trace(np.ones(3, np.float64)).inputs == [("x", fedc.f64[3])]
    assert f(2.5) == 5.0 and f(2.5).dtype == np.float32  # a Python float is f32
    assert f(np.ones(3, np.float64)).dtype == np.float64


def test_programs_call_programs():
    @fedc.program
    def inner(x, y):
        return x * y, x + y

    @fedc.program
    def outer(x):
        a, b = inner(x, 2.0)
        return a - b
    close(outer(A), A * 2 - (A + 2))


def test_shape_errors_raise_at_the_line_with_fedcs_message():
    with pytest.raises(fedc.Error) as e:
        fedc.trace(lambda a, m: a @ m.T, A, M)
    assert e.value.status == fedc.ESHAPE
    assert "matmul" in e.value.message and "f32[3,4]" in e.value.message
    with pytest.raises(fedc.Error) as e:
        fedc.trace(lambda a: a + np.ones(3, np.float32), A)
    assert "add" in e.value.message


def test_dtype_mismatch_raises():
    with pytest.raises(fedc.Error) as e:
        fedc.trace(lambda a, i: a + i, A, np.ones((3, 4), np.int32))
    assert e.value.status in (fedc.ETYPE, fedc.ESHAPE, fedc.EINVAL)


def test_python_control_flow_on_values_is_refused():
    def f(a):
        return a if a.sum() > 0 else -a
    with pytest.raises(TypeError) as e:
        fedc.trace(f, A)
    assert "select" in str(e.value)


def test_escaped_values_raise():
    leak = []

    @fedc.program
    def f(x):
        leak.append(x)
        return x
    f(A)
    with pytest.raises(fedc.Error) as e:
        leak[0] + 1
    assert "after its trace ended" in e.value.message


def test_ops_outside_a_trace_raise():
    with pytest.raises(fedc.Error) as e:
        fedc.scalar(1.0)
    assert "@fedc.program" in e.value.message
    with pytest.raises(fedc.Error):
        fedc.broadcast(np.float32(1))


def test_exceptions_in_the_function_propagate_and_free_the_program():
    def f(x):
        raise ValueError("this is a test value error")
    with pytest.raises(ValueError, match="test value error"):
        fedc.trace(f, A)
    assert fedc.tracing.current() is None


def test_type_specs():
    t = fedc.f32[3, 4]
    assert repr(t) == "f32[3,4]" and repr(fedc.server(fedc.i32[()])) == "i32[]@server"
    assert repr(fedc.clients(fedc.u8[2])) == "u8[2]@clients" and fedc.bool_[1].np_dtype == np.bool_
    p = fedc.trace(lambda x: x * 2, fedc.f64[2, 2])
    assert p.inputs == [("x", fedc.f64[2, 2])]
    with pytest.raises(TypeError):
        fedc.TypeSpec("f16", ())
    with pytest.raises(ValueError):
        fedc.TypeSpec("f32", (1,) * 7)
