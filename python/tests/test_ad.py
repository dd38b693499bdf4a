"""Derivatives from Python: grad, value_and_grad, vjp, jvp, through the federated ops."""

import numpy as np
import pytest

import fedc

RNG = np.random.default_rng(2)


def numeric_grad(f, x, eps=1e-5):
    x = x.astype(np.float64)
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        d = np.zeros_like(x)
        d[i] = eps
        g[i] = (f(x + d) - f(x - d)) / (2 * eps)
    return g


def test_grad_matches_finite_differences():
    x = RNG.standard_normal((4, 3))
    w = RNG.standard_normal((3, 2)) * 0.5

    def loss(w, x):
        return fedc.reduce_sum(fedc.tanh(x @ w) ** 2)
    g = fedc.grad(loss)(w, x)  # f64 in, f64 program
    assert g.dtype == np.float64
    np.testing.assert_allclose(g, numeric_grad(lambda w: np.sum(np.tanh(x @ w) ** 2), w),
                               rtol=1e-6)
    gw, gx = fedc.grad(loss, argnums=(0, 1))(w, x)
    np.testing.assert_allclose(gw, g)
    np.testing.assert_allclose(gx, numeric_grad(lambda x: np.sum(np.tanh(x @ w) ** 2), x),
                               rtol=1e-6)


def test_grad_of_structures_and_aux():
    params = {"w": RNG.standard_normal((3, 2)), "b": np.zeros(2)}
    x = RNG.standard_normal((5, 3))

    def loss(p, x):
        y = x @ p["w"] + p["b"]
        return fedc.reduce_mean(y ** 2), {"y": y}
    (val, aux), g = fedc.value_and_grad(loss, has_aux=True)(params, x)
    y = x @ params["w"] + params["b"]
    np.testing.assert_allclose(val, (y ** 2).mean())
    np.testing.assert_allclose(aux["y"], y)
    np.testing.assert_allclose(g["w"], x.T @ (2 * y / y.size))
    np.testing.assert_allclose(g["b"], (2 * y / y.size).sum(0))
    g2, aux2 = fedc.grad(loss, has_aux=True)(params, x)
    np.testing.assert_allclose(g2["w"], g["w"])


def test_grad_through_federated_ops():
    @fedc.program(placements={"clients": 5})
    def loss(w, y, n):
        per = fedc.map(lambda w, y: fedc.reduce_sum((w - y) ** 2), (fedc.broadcast(w), y))
        return fedc.weighted_mean(per, n) + fedc.mean(per) * 0.5
    w = RNG.standard_normal(2)
    y = RNG.standard_normal((5, 2))
    n = np.arange(1.0, 6.0)

    def ref(w):
        per = ((w - y) ** 2).sum(1)
        return (per * n).sum() / n.sum() + per.mean() * 0.5
    np.testing.assert_allclose(loss(w, y, n), ref(w))
    np.testing.assert_allclose(fedc.grad(loss)(w, y, n), numeric_grad(ref, w), rtol=1e-6)
    # d/dn of the weighted mean: the weights' derivative goes through weighted_mean too.
    gn = fedc.grad(loss, argnums=2)(w, y, n)
    per = ((w - y) ** 2).sum(1)
    np.testing.assert_allclose(gn, (per - (per * n).sum() / n.sum()) / n.sum(), rtol=1e-6)


def test_vjp_and_jvp_agree():
    # w has 3 rows, as many as the clients: in_placements says it is the server's.
    @fedc.program(placements={"clients": 3}, in_placements=("server", "clients"))
    def f(w, x):
        h = fedc.map(lambda w, x: fedc.tanh(x @ w), (fedc.broadcast(w), x))
        return fedc.mean(h), fedc.sum(h * h)
    w = RNG.standard_normal((3, 2))
    x = RNG.standard_normal((3, 4, 3))
    out, vjp_fn = fedc.vjp(f, w, x)
    ct = (RNG.standard_normal((4, 2)), RNG.standard_normal((4, 2)))
    ct_w, ct_x = vjp_fn(ct)
    tw, tx = RNG.standard_normal((3, 2)), RNG.standard_normal((3, 4, 3))
    out2, (t0, t1) = fedc.jvp(f, (w, x), (tw, tx))
    np.testing.assert_allclose(out2[0], out[0])
    # <ct, J t> == <J^T ct, t>
    lhs = (ct[0] * t0).sum() + (ct[1] * t1).sum()
    rhs = (ct_w * tw).sum() + (ct_x * tx).sum()
    np.testing.assert_allclose(lhs, rhs, rtol=1e-9)
    # and against finite differences
    eps = 1e-6
    fp = f(w + eps * tw, x + eps * tx)
    fm = f(w - eps * tw, x - eps * tx)
    np.testing.assert_allclose(t0, (fp[0] - fm[0]) / (2 * eps), rtol=1e-5, atol=1e-8)


def test_derivatives_under_a_trace():
    def f(w):
        return fedc.reduce_sum(fedc.exp(w) * w)

    @fedc.program
    def g(w, t):
        out, vjp_fn = fedc.vjp(f, w)
        (ct,) = vjp_fn(1.0)
        value, tangent = fedc.jvp(f, (w,), (t,))
        return out, ct, value, tangent, fedc.grad(f)(w)
    w = RNG.standard_normal(4)
    t = RNG.standard_normal(4)
    out, ct, value, tangent, gr = g(w, t)
    d = np.exp(w) * (1 + w)
    np.testing.assert_allclose(out, (np.exp(w) * w).sum())
    np.testing.assert_allclose(ct, d)
    np.testing.assert_allclose(gr, d)
    np.testing.assert_allclose(value, out)
    np.testing.assert_allclose(tangent, d @ t)


def test_hessian_vector_product_is_grad_of_grad():
    def f(w):
        return fedc.reduce_sum(w ** 3)

    def hvp(w, v):
        return fedc.grad(lambda w: fedc.reduce_sum(fedc.grad(f)(w) * v))(w)
    w, v = RNG.standard_normal(3), RNG.standard_normal(3)
    np.testing.assert_allclose(fedc.program(hvp)(w, v), 6 * w * v)


def test_integer_values_have_no_derivative():
    def f(w, i):
        return fedc.reduce_sum(fedc.gather(w, i))
    w, i = np.ones((3, 2)), np.array([0, 2], np.int32)
    assert fedc.grad(f)(w, i).tolist() == [[1, 1], [0, 0], [1, 1]]
    with pytest.raises(fedc.Error) as e:
        fedc.grad(f, argnums=1)(w, i)
    assert "only floating-point values have derivatives" in e.value.message
    _, vjp_fn = fedc.vjp(f, w, i)
    gw, gi = vjp_fn(np.float64(1))
    assert gi is None or (np.asarray(gi) == 0).all()
    assert gw.tolist() == [[1, 1], [0, 0], [1, 1]]


def test_grad_needs_one_scalar():
    with pytest.raises(TypeError):
        fedc.grad(lambda w: (w, w))(np.ones(2))
    with pytest.raises(fedc.Error):
        fedc.grad(lambda w: w * 2)(np.ones(2))
