"""The federated primitives from Python: broadcast, map, sum, mean, weighted_mean, fold."""

import numpy as np
import pytest

import fedc

RNG = np.random.default_rng(1)


def test_broadcast_map_and_aggregates():
    @fedc.program(placements={"clients": 6})
    def f(w, x, n):
        wb = fedc.broadcast(w)
        per = fedc.map(lambda w, x: fedc.reduce_sum(w * x), (wb, x))
        return dict(sum=fedc.sum(per), mean=fedc.mean(per), wmean=fedc.weighted_mean(x, n),
                    per=per, count=fedc.num_clients(), bcast=wb)
    w = RNG.standard_normal(3).astype(np.float32)
    x = RNG.standard_normal((6, 3)).astype(np.float32)
    n = np.arange(1, 7, dtype=np.float32)
    g = f(w, x, n)
    per = x @ w
    np.testing.assert_allclose(g["per"], per, rtol=1e-5)
    np.testing.assert_allclose(g["sum"], per.sum(), rtol=1e-5)
    np.testing.assert_allclose(g["mean"], per.mean(), rtol=1e-5)
    np.testing.assert_allclose(g["wmean"], (n[:, None] * x).sum(0) / n.sum(), rtol=1e-5)
    assert g["count"] == 6 and g["bcast"].shape == (6, 3) and (g["bcast"] == w).all()
    p = f.trace(w, x, n)
    assert [s.placement for _, s in p.inputs] == ["server", "clients", "clients"]


def test_cohort_size_is_fixed_at_run_time():
    @fedc.program(in_placements=("server", "clients"))
    def f(t, v):
        return fedc.mean(fedc.map(lambda t, v: fedc.cast(v > t, "f32"), (fedc.broadcast(t), v)))
    for n in (1, 10, 100):
        v = RNG.uniform(size=n).astype(np.float32)
        assert f(np.float32(0.5), v) == np.float32((v > 0.5).sum()) * np.float32(1 / n)
    assert len(f._cache) == 1  # one program, one executor per cohort size


def test_structures_go_through_map_and_aggregates():
    @fedc.program(placements={"clients": 4})
    def f(params, data):
        local = fedc.map(lambda p, d: {"w": p["w"] * d["x"], "n": fedc.reduce_sum(d["x"])},
                         (fedc.broadcast(params), data))
        return fedc.mean(local), fedc.weighted_mean(local["w"], local["n"])
    params = {"w": np.ones(2, np.float32)}
    data = {"x": np.arange(8, dtype=np.float32).reshape(4, 2)}
    m, wm = f(params, data)
    np.testing.assert_allclose(m["w"], data["x"].mean(0))
    np.testing.assert_allclose(m["n"], data["x"].sum(1).mean())
    ns = data["x"].sum(1)
    np.testing.assert_allclose(wm, (ns[:, None] * data["x"]).sum(0) / ns.sum(), rtol=1e-6)


def test_map_needs_clients_values():
    def f(w, x):
        return fedc.map(lambda w, x: w * x, (w, x))
    with pytest.raises(fedc.Error) as e:
        fedc.trace(f, fedc.server(fedc.f32[2]), fedc.clients(fedc.f32[2]))
    assert "broadcast" in e.value.message and "@server" in e.value.message


def test_map_body_closures_over_server_values_raise():
    def f(w, x):
        return fedc.map(lambda x: x * w, fedc.broadcast(w) * x)
    with pytest.raises(fedc.Error) as e:
        fedc.trace(f, fedc.server(fedc.f32[2]), fedc.clients(fedc.f32[2]))
    assert "by closure" in e.value.message and "f32[2]@server" in e.value.message


def test_bodies_capture_clients_values_and_carry_closures():
    @fedc.program(in_placements=("server", "clients", "clients"))
    def f(w, scale, xs):
        s = scale * 2.0  # @clients, used by the map body's closure

        def client(w, xs):
            lr = s + 0.0  # a map-body value, used by the fold body's closure
            w_end, ys = fedc.fold(lambda c, x: (c - lr * x, fedc.reduce_sum(c) * lr), w, xs)
            return w_end, ys
        return fedc.map(client, (fedc.broadcast(w), xs))
    w = np.ones(2, np.float32)
    scale = np.array([1.0, 0.5, 0.25], np.float32)
    xs = RNG.standard_normal((3, 4, 2)).astype(np.float32)
    w_end, ys = f(w, scale, xs)
    lr = 2 * scale
    np.testing.assert_allclose(w_end, w - lr[:, None] * xs.sum(1), rtol=1e-5)
    c = w - np.concatenate([np.zeros((3, 1, 2)), np.cumsum(lr[:, None, None] * xs, 1)[:, :-1]], 1)
    np.testing.assert_allclose(ys, c.sum(-1) * lr[:, None], rtol=1e-5, atol=1e-6)


def test_server_and_clients_values_never_meet():
    with pytest.raises(fedc.Error) as e:
        fedc.trace(lambda w, x: w + x, fedc.server(fedc.f32[2]), fedc.clients(fedc.f32[2]))
    assert "broadcast" in e.value.message


def test_fold_is_scan():
    xs = RNG.standard_normal((5, 3)).astype(np.float32)

    @fedc.program
    def f(c0, xs):
        return fedc.fold(lambda c, x: (c + x, fedc.reduce_sum(c * x)), c0, xs)
    c, ys = f(np.zeros(3, np.float32), xs)
    np.testing.assert_allclose(c, xs.sum(0), rtol=1e-5)
    cs = np.concatenate([np.zeros((1, 3)), np.cumsum(xs, 0)[:-1]])
    np.testing.assert_allclose(ys, (cs * xs).sum(1), rtol=1e-5, atol=1e-6)


def test_fold_length_and_structured_carries():
    @fedc.program
    def f(xs, n):
        return fedc.fold(lambda c, x: ({"s": c["s"] + x, "k": c["k"] + 1}, x * 2),
                         {"s": np.float32(0), "k": np.int32(0)}, xs, length=n)
    xs = np.arange(1, 6, dtype=np.float32)
    c, ys = f(xs, np.int32(3))
    assert c["s"] == 6 and c["k"] == 3
    assert ys.tolist() == [2, 4, 6, 0, 0]
    with pytest.raises(fedc.Error) as e:
        f(xs, np.int32(9))
    assert "fold" in e.value.message


def test_fold_inside_map_is_local_training():
    # Each client runs SGD steps on w over its batches: FedAvg's client update.
    @fedc.program(placements={"clients": 3})
    def fedavg(w, xs, ys):
        def client(w, xs, ys):
            def step(w, batch):
                x, y = batch
                g = fedc.grad(lambda w: fedc.reduce_mean((x @ w - y) ** 2))(w)
                return w - 0.1 * g, fedc.reduce_mean((x @ w - y) ** 2)
            w_new, losses = fedc.fold(step, w, (xs, ys))
            return w - w_new, losses
        delta, losses = fedc.map(client, (fedc.broadcast(w), xs, ys))
        return w - fedc.mean(delta), losses
    w = np.zeros(2, np.float32)
    xs = RNG.standard_normal((3, 4, 5, 2)).astype(np.float32)
    true_w = np.array([1.0, -2.0], np.float32)
    ys = xs @ true_w
    new_w, losses = fedavg(w, xs, ys)
    # numpy's FedAvg
    deltas, want_losses = [], np.zeros((3, 4))
    for c in range(3):
        wc = w.astype(np.float64)
        for t in range(4):
            x, y = xs[c, t], ys[c, t]
            want_losses[c, t] = np.mean((x @ wc - y) ** 2)
            wc = wc - 0.1 * (2 * x.T @ (x @ wc - y) / len(y))
        deltas.append(w - wc)
    np.testing.assert_allclose(new_w, w - np.mean(deltas, 0), rtol=1e-4)
    np.testing.assert_allclose(losses, want_losses, rtol=1e-4)


def test_drjax_names():
    assert fedc.map_fn is fedc.map
    with pytest.raises(ValueError):
        fedc.program(lambda x: x, placements={"clients": 1, "XY": 2})

    @fedc.program(placements={"XY": 4})
    def f(v):
        return fedc.sum(v)
    assert f(np.ones(4, np.float32)) == 4


def test_hierarchy_levels():
    """server > groups > clients: broadcast_down, the aggregations up, a map at the
    groups, traced and run with the groups' sizes (5 clients in groups of 2 and 3)."""
    def f(w, x, a):
        wc = fedc.broadcast_down(fedc.broadcast_down(w))
        y = fedc.map(lambda w, x: fedc.tanh(w * x), (wc, x))
        g = fedc.mean_up(y)
        z = fedc.map(lambda a, g: a * g, (a, g))
        return dict(z=z, top=fedc.weighted_mean_up(z, fedc.group_size("f64")), s=fedc.sum_up(fedc.sum_up(y)),
                    n=fedc.num_groups("i32"))
    p = fedc.trace(f, fedc.server(fedc.f64[2]), fedc.clients(fedc.f64[2]), fedc.groups(fedc.f64[()]))
    assert "@groups" in p.text() and "broadcast_down(" in p.text() and "mean_up(" in p.text()
    w = np.array([0.5, -1.5])
    x = RNG.standard_normal((5, 2))
    a = np.array([2.0, -1.0])
    out = p.run(w=w, x=x, a=a, groups=[2, 3])
    y = np.tanh(w * x)
    z = np.stack([a[0] * y[:2].mean(0), a[1] * y[2:].mean(0)])
    np.testing.assert_allclose(out["z"], z, rtol=1e-13)
    np.testing.assert_allclose(out["top"], (2 * z[0] + 3 * z[1]) / 5, rtol=1e-13)
    np.testing.assert_allclose(out["s"], y.sum(0), rtol=1e-13)
    assert out["n"] == 2
    with pytest.raises(fedc.Error, match="client 4 is in no group"):
        p.run(w=w, x=x, a=np.zeros(2), groups=[2, 2])
