"""Stateful algorithms written in Python: server state beyond the model, per-client
state kept by fedc's client store, their own evaluation, a warm start; trained by
fedc's runner, checked to the bit against the library's algorithms and across a
resume."""

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
OPTS = dict(task="emnist", model="logistic", rounds=4, clients_per_round=5, eval_every=2,
            eval_clients=10, seed=3, threads=2, client_lr=0.05, checkpoint_every=2)
sys.path.insert(0, os.path.join(HERE, "..", "..", "examples", "python"))
import scaffold  # noqa: E402  registers "scaffold_py"

sub = scaffold.sub


@pytest.fixture
def femnist():
    if not glob.glob(os.path.join(FEMNIST, "*.json.gz")):
        pytest.skip("no FEMNIST at %s" % FEMNIST)
    return FEMNIST


def run(data, tmp_path, tag, **kw):
    out = str(tmp_path / tag)
    return fedc.train(data, out_dir=out, **dict(OPTS, **kw)), out


def resumes_bitwise(data, tmp_path, algorithm, **kw):
    """Whole against half then resumed: the same checkpoint and client store."""
    _, whole = run(data, tmp_path, algorithm + "-whole", algorithm=algorithm, **kw)
    _, part = run(data, tmp_path, algorithm + "-part", algorithm=algorithm, **dict(kw, rounds=2))
    assert not scaffold.same_run_end(whole, part)  # 2 rounds and 4 end apart
    r, _ = run(data, tmp_path, algorithm + "-part", algorithm=algorithm, resume=True, **kw)
    assert r["rounds_run"] == 2
    return scaffold.same_run_end(whole, part)


# --- a personalized algorithm: FedAvg whose clients keep the model they trained to,
# and are evaluated at it (the server's model for a client never trained) ----------

def personal_round(r):
    delta, loss, examples, _ = scaffold.local_training(r)
    mean = r.aggregate(delta, r.weight(examples))
    state, params = r.server_optimizer.apply(mean, r.server["opt"], r.server["params"])
    trained = fedc.tree_map(sub, fedc.broadcast(r.server["params"]), delta)
    return dict(r.server, params=params, opt=state), {"params": trained}, loss, examples


def personal_evaluation(r):
    seen = r.meta("seen") > 0.0
    server = fedc.broadcast(r.server["params"])
    return fedc.tree_map(lambda mine, w: fedc.select(seen, mine, w), r.client["params"], server)


fedc.algorithm("personal_py", summary="FedAvg; each client evaluated at its own last model",
               client_init=lambda init: {"params": init.zeros()},
               evaluation=personal_evaluation)(personal_round)


def test_scaffold_in_python_is_the_library_scaffold(femnist, tmp_path):
    """With an adaptive server optimizer too: its state is part of the server state."""
    for kw in ({}, dict(server_opt="yogi", server_lr=0.02)):
        mine, a = run(femnist, tmp_path, "py", algorithm="scaffold_py", **kw)
        ref, b = run(femnist, tmp_path, "c", algorithm="scaffold", **kw)
        assert scaffold.strip(mine["metrics"]) == scaffold.strip(ref["metrics"])
        assert [m["evaluated"] for m in mine["metrics"]] == [False, True, False, True]  # a row per round
        assert mine["test_accuracy"] > 0.1
        assert scaffold.same_run_end(a, b)
        ck = scaffold.read_safetensors(os.path.join(a, "checkpoint.safetensors"))
        assert np.abs(ck["server/c/dense1/w"]).max() > 0  # the control variate moved
        if kw:
            assert "server/opt/nu/dense1/w" in ck and "server/opt/count" in ck
        for d in (a, b):
            for f in glob.glob(os.path.join(d, "*")):
                os.remove(f)


def test_scaffold_in_python_resumes_bitwise(femnist, tmp_path):
    assert resumes_bitwise(femnist, tmp_path, "scaffold_py", server_opt="adam", server_lr=0.01)


def test_scaffold_in_python_refuses_a_non_sgd_client(femnist, tmp_path):
    with pytest.raises(ValueError, match="must be sgd"):
        run(femnist, tmp_path, "bad", algorithm="scaffold_py", client_opt="adam")


def test_per_client_state_and_evaluation(femnist, tmp_path):
    """Training is FedAvg's, to the bit; the evaluation reads each test client's stored
    model, so its figures differ from FedAvg's; and it resumes to the bit."""
    mine, a = run(femnist, tmp_path, "personal", algorithm="personal_py")
    ref, b = run(femnist, tmp_path, "fedavg", algorithm="fedavg")
    assert [m["train_loss"] for m in mine["metrics"]] == [m["train_loss"] for m in ref["metrics"]]
    assert mine["test_accuracy"] != ref["test_accuracy"]
    ca = scaffold.read_safetensors(os.path.join(a, "checkpoint.safetensors"))
    cb = scaffold.read_safetensors(os.path.join(b, "checkpoint.safetensors"))
    assert all(ca[k].tobytes() == cb[k].tobytes() for k in cb)
    assert os.path.getsize(os.path.join(a, "client_state.fcs")) > 0
    assert resumes_bitwise(femnist, tmp_path, "personal_py")


# --- a server_init with its own state, and a warm start ---------------------------

def counting_init(init):
    return {"params": init.params, "rounds": fedc.zeros_like(init.params["dense1"]["b"][0])}


def counting_round(r):
    delta, loss, examples, _ = scaffold.local_training(r)
    mean = r.aggregate(delta, r.weight(examples))
    params = fedc.tree_map(sub, r.server["params"], mean)
    return {"params": params, "rounds": r.server["rounds"] + 1.0}, loss, examples


def counting_warm_start(r):
    """Starts the count at the warm start's cohort size (hparam start=0: no warm start)."""
    if r.hparam("start") == 0:
        return None
    _, loss, examples, _ = scaffold.local_training(r)
    n = fedc.num_clients()
    return dict(r.server, rounds=r.server["rounds"] + n * r.hparam("start")), loss, examples


fedc.algorithm("counting_py", hparams={"start": (1.0, 0.0, 100.0, "warm start count, per client")},
               server_init=counting_init, warm_start=counting_warm_start)(counting_round)


def test_server_init_and_warm_start(femnist, tmp_path):
    ref, _ = run(femnist, tmp_path, "fedavg", algorithm="fedavg")
    for start, want in ((0.0, 4.0), (2.0, 4.0 + 2 * OPTS["clients_per_round"])):
        mine, out = run(femnist, tmp_path, "count%g" % start, algorithm="counting_py",
                        set={"start": start})
        ck = scaffold.read_safetensors(os.path.join(out, "checkpoint.safetensors"))
        assert ck["server/rounds"] == want
        assert [m["train_loss"] for m in mine["metrics"]] == [m["train_loss"] for m in ref["metrics"]]


# --- errors name the algorithm and what it returned ------------------------------

fedc.algorithm("bad_init_py", server_init=lambda init: {"c": init.params})(personal_round)
fedc.algorithm("bad_client_py", client_init=lambda init: init.zeros()["dense1"]["w"])(personal_round)
def three_round(r):
    server, _, loss, examples = personal_round(r)
    return server, loss, examples  # without the client state the algorithm keeps


fedc.algorithm("three_py", client_init=lambda init: {"params": init.zeros()})(three_round)


def test_stateful_errors(femnist, tmp_path):
    with pytest.raises(fedc.Error, match='no "params"'):
        run(femnist, tmp_path, "a", algorithm="bad_init_py")
    with pytest.raises(TypeError, match="client_init returns the state as a non-empty dict"):
        run(femnist, tmp_path, "b", algorithm="bad_client_py")
    with pytest.raises(TypeError, match=r"\(server state, client state, loss, examples\)"):
        run(femnist, tmp_path, "c", algorithm="three_py")


def test_init_reads_hparams_and_the_jobs_optimizers(femnist, tmp_path):
    seen = {}

    def init(i):
        seen.update(alpha=i.hparam("alpha"), client=i.client_optimizer.name,
                    server=i.server_optimizer.settings())
        with pytest.raises(fedc.Error, match="nope"):
            i.hparam("nope")
        return {"params": i.params}

    def plain_round(r):
        delta, loss, examples, _ = scaffold.local_training(r)
        mean = r.aggregate(delta, r.weight(examples))
        return {"params": fedc.tree_map(sub, r.server["params"], mean)}, loss, examples
    fedc.algorithm("init_py", hparams={"alpha": (0.5, 0, 1, "")}, server_init=init)(plain_round)
    r, _ = run(femnist, tmp_path, "init", algorithm="init_py", set={"alpha": 0.25},
               client_opt="momentum", server_opt="adam", server_lr=0.01, rounds=1)
    assert r["rounds_run"] == 1
    assert seen["alpha"] == 0.25 and seen["client"] == "momentum"
    assert seen["server"] == {"name": "adam", "learning_rate": 0.01, "b1": 0.9, "b2": 0.999,
                              "eps": 1e-8, "weight_decay": 0.0}
