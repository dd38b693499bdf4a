"""fedc.optimizers: fedc's optimizers as builders, against the C optimizers inside
training (to the bit) and against their update equations in numpy."""

import glob
import os
import sys

import numpy as np
import pytest

import fedc

HERE = os.path.dirname(os.path.abspath(__file__))
# FEDC_DATA: laid out as ../shared/data (ctest sets it: real sets or small ones), else ../shared/data
FEMNIST = os.path.join(os.environ.get("FEDC_DATA") or os.path.join(HERE, "..", "..", "..", "shared", "data"),
                       "femnist-leaf", "train")
sys.path.insert(0, os.path.join(HERE, "..", "..", "examples", "python"))
import scaffold  # noqa: E402  local_training, same_run_end

NAMES = fedc.optimizers.NAMES


def by_name(init_or_round, which):
    job = init_or_round.client_optimizer if which == "client" else init_or_round.server_optimizer
    return fedc.optimizers.create(NAMES[int(init_or_round.hparam(which))], job.learning_rate)


def fedopt_server_init(init):
    return {"params": init.params, "opt": by_name(init, "server").init(init.params)}


def fedopt_round(r):
    """FedOpt with both optimizers built in Python by name (hparams index NAMES)."""
    delta, loss, examples, _ = scaffold.local_training(r, opt=by_name(r, "client"))
    mean = r.aggregate(delta, r.weight(examples))
    state, params = by_name(r, "server").apply(mean, r.server["opt"], r.server["params"])
    return {"params": params, "opt": state}, loss, examples


HP = {w: (0.0, 0.0, len(NAMES) - 1.0, "index into fedc.optimizers.NAMES") for w in ("client", "server")}
fedc.algorithm("fedopt_py", hparams=HP, server_init=fedopt_server_init)(fedopt_round)

# every optimizer as the client's and as the server's
PAIRS = [("sgd", "adam"), ("momentum", "yogi"), ("nesterov", "adagrad"), ("adam", "rmsprop"),
         ("adagrad", "momentum"), ("yogi", "sgd"), ("rmsprop", "nesterov")]


@pytest.mark.parametrize("client,server", PAIRS)
def test_python_optimizers_train_as_the_library_s(client, server, tmp_path):
    if not glob.glob(os.path.join(FEMNIST, "*.json.gz")):
        pytest.skip("no FEMNIST at %s" % FEMNIST)
    opts = dict(task="emnist", model="logistic", rounds=2, clients_per_round=4, eval_every=2,
                eval_clients=5, seed=5, threads=2, client_lr=0.02, server_lr=0.05,
                checkpoint_every=2)
    mine = fedc.train(FEMNIST, algorithm="fedopt_py", out_dir=str(tmp_path / "py"),
                      set={"client": NAMES.index(client), "server": NAMES.index(server)}, **opts)
    ref = fedc.train(FEMNIST, algorithm="fedavg", out_dir=str(tmp_path / "c"), client_opt=client,
                     server_opt=server, **opts)
    assert scaffold.strip(mine["metrics"]) == scaffold.strip(ref["metrics"])
    a = scaffold.read_safetensors(str(tmp_path / "py" / "checkpoint.safetensors"))
    b = scaffold.read_safetensors(str(tmp_path / "c" / "checkpoint.safetensors"))
    assert sorted(a) == sorted(b) and all(a[k].tobytes() == b[k].tobytes() for k in a)


# ------------------------------------------------ the update equations in numpy --

def reference(name, lr, steps, w, grads):
    """docs/optimizers.md's equations in f64: the parameters after each step."""
    o = fedc.optimizers.create(name, lr).settings()
    m = np.full_like(w, o.get("initial_accumulator", 0.0) if name == "yogi" else 0.0)
    v = np.full_like(w, o.get("initial_accumulator", 0.0) if name in ("yogi", "adagrad", "rmsprop")
                     else 0.0)
    out = []
    for t, g in enumerate(grads[:steps], 1):
        if name == "sgd":
            u = g
        elif name in ("momentum", "nesterov"):
            m = g + o["momentum"] * m
            u = g + o["momentum"] * m if name == "nesterov" else m
        elif name in ("adam", "yogi"):
            m = (1 - o["b1"]) * g + o["b1"] * m
            if name == "adam":
                v = (1 - o["b2"]) * g * g + o["b2"] * v
            else:
                v = v - (1 - o["b2"]) * np.sign(v - g * g) * g * g
            u = (m / (1 - o["b1"] ** t)) / (np.sqrt(v / (1 - o["b2"] ** t)) + o["eps"])
        elif name == "adagrad":
            v = g * g + v
            u = np.where(v > 0, 1 / np.sqrt(v + o["eps"]), 0) * g
        else:  # rmsprop
            v = (1 - o["b2"]) * g * g + o["b2"] * v
            u = g / np.sqrt(v + o["eps"])
        w = w - lr * u
        out.append(w)
    return out


@pytest.mark.parametrize("name", NAMES)
def test_steps_match_the_equations(name):
    rng = np.random.default_rng(7)
    w = rng.normal(size=(3, 4)).astype(np.float32)
    grads = [rng.normal(size=(3, 4)).astype(np.float32) for _ in range(3)]
    opt = fedc.optimizers.create(name, 0.1)
    params = {"layer": {"w": w}, "b": np.float32(0.5)}
    state = opt.init(params)
    want = reference(name, 0.1, 3, w.astype(np.float64), [g.astype(np.float64) for g in grads])
    for t, g in enumerate(grads):
        state, params = opt.apply({"layer": {"w": g}, "b": np.float32(1.0)}, state, params)
        np.testing.assert_allclose(params["layer"]["w"], want[t], rtol=2e-5, atol=2e-6)
        assert params["b"].dtype == np.float32 and params["b"].shape == ()
    if opt.counts_steps:
        assert state["count"] == 3.0
    slots = {"sgd": set(), "momentum": {"trace"}, "nesterov": {"trace"}, "adam": {"mu", "nu", "count"},
             "adagrad": {"sum_of_squares"}, "yogi": {"mu", "nu", "count"}, "rmsprop": {"nu"}}
    assert set(state) == slots[name]


def test_structures_keep_their_shape_and_placement():
    @fedc.program(placements={"clients": 3})
    def server_step(w, g):
        opt = fedc.optimizers.adam(0.1)
        state = opt.init(w)
        assert state["mu"][0].placement == "server" and isinstance(state["mu"], tuple)
        state, w = opt.apply(g, state, w)
        return w, state["count"]
    w = (np.ones(5, np.float32), np.zeros((2, 2), np.float32))
    (w0, w1), count = server_step(w, (np.ones(5, np.float32), np.ones((2, 2), np.float32)))
    # adam's first step is lr * sign(g), but for f32's bias corrections
    np.testing.assert_allclose(w0, 1 - 0.1, rtol=1e-4)
    np.testing.assert_allclose(w1, -0.1, rtol=1e-4)
    assert count == 1.0


def test_a_traced_learning_rate_has_a_hypergradient():
    w, g = np.arange(4, dtype=np.float32), np.array([1, -2, 3, 0.5], np.float32)

    def after_step(lr):
        _, new = fedc.optimizers.sgd(lr).apply({"w": fedc.constant(g)}, {}, {"w": fedc.constant(w)})
        return fedc.reduce_sum(new["w"] ** 2)
    d = fedc.grad(after_step)(np.float32(0.1))
    # d/dlr sum((w - lr g)^2) = -2 sum(g (w - lr g))
    assert np.isclose(d, -2 * np.sum(g * (w - 0.1 * g)), rtol=1e-6)


def test_settings_and_errors():
    assert fedc.optimizers.sgd(0.1, momentum=0.8, nesterov=True).settings() == {
        "name": "nesterov", "learning_rate": 0.1, "momentum": 0.8, "weight_decay": 0.0}
    assert fedc.optimizers.yogi(0.01).settings()["eps"] == 1e-3  # FedJAX's (optax's) default
    assert fedc.optimizers.rmsprop(0.01, decay=0.5).settings()["b2"] == 0.5
    assert "adam" in repr(fedc.optimizers.adam(0.01))
    with pytest.raises(fedc.Error, match="unknown optimizer \"nadam\""):
        fedc.optimizers.create("nadam", 0.1)
    with pytest.raises(TypeError, match="no setting beta"):
        fedc.optimizers.create("adam", 0.1, beta=0.9)
    p = {"w": np.ones(2, np.float32)}
    with pytest.raises(fedc.Error, match="differ in structure"):
        fedc.optimizers.adam(0.1).apply({"v": np.ones(2, np.float32)}, {}, p)
    with pytest.raises(fedc.Error):  # a momentum state is not an adam one
        fedc.optimizers.adam(0.1).apply(p, fedc.optimizers.momentum(0.1).init(p), p)
    with pytest.raises(fedc.Error):  # integers have no step
        fedc.optimizers.sgd(0.1).apply({"w": np.ones(2, np.int32)}, {}, {"w": np.ones(2, np.int32)})
