"""fedc.train: fedc train's job from Python, its per-round callback and metrics."""

import glob
import json
import os
import subprocess

import numpy as np
import pytest

import fedc

HERE = os.path.dirname(os.path.abspath(__file__))
# FEDC_DATA: laid out as ../shared/data (ctest sets it: real sets or small ones), else ../shared/data
FEMNIST = os.path.join(os.environ.get("FEDC_DATA") or os.path.join(HERE, "..", "..", "..", "shared", "data"),
                       "femnist-leaf", "train")
OPTS = dict(task="emnist", model="logistic", rounds=4, clients_per_round=4, eval_every=2,
            eval_clients=5, seed=1, threads=2, client_lr=0.1)


@pytest.fixture
def femnist():
    if not glob.glob(os.path.join(FEMNIST, "*.json.gz")):
        pytest.skip("no FEMNIST at %s" % FEMNIST)
    return FEMNIST


def test_algorithms_are_listed_with_their_hyperparameters():
    algs = fedc.algorithms()
    assert {"fedavg", "fedsgd", "fedprox", "scaffold"} <= set(algs)
    default, lo, hi, help_ = algs["fedprox"]["hparams"]["mu"]
    assert lo <= default <= hi and "proximal" in help_
    assert "FedAvg" in algs["fedavg"]["summary"] or algs["fedavg"]["summary"]


def test_train_reports_every_round(femnist, tmp_path):
    reports = []
    r = fedc.train(femnist, out_dir=str(tmp_path), on_round=reports.append, **OPTS)
    assert [x["round"] for x in reports] == [1, 2, 3, 4]
    assert [x["evaluated"] for x in reports] == [False, True, False, True]
    assert reports[0]["test_loss"] is None and reports[1]["test_accuracy"] > 0
    assert r["rounds_run"] == 4 and not r["stopped"] and r["dropped"] == 0
    assert reports[-1]["train_loss"] == r["train_loss"]
    assert reports[-1]["test_accuracy"] == r["test_accuracy"]
    assert reports[-1]["train_loss"] < reports[0]["train_loss"]  # it learns
    rows = r["metrics"]  # a row per round, the test figures where evaluated
    assert [row["round"] for row in rows] == [1, 2, 3, 4]
    assert [row["evaluated"] for row in rows] == [False, True, False, True]
    for row, rep in zip(rows, reports):
        assert row["train_loss"] == pytest.approx(rep["train_loss"], rel=1e-5)
        if row["evaluated"]:
            assert row["test_accuracy"] == pytest.approx(rep["test_accuracy"], rel=1e-5)
        else:
            assert row["test_loss"] is None and row["test_accuracy"] is None
    assert os.path.exists(tmp_path / "metrics.csv")


def same_as_cli(data, tmp_path, opts, flags=()):
    """fedc.train(**opts) and `fedc train` with the same options (and `flags`) give the
    same metrics, bit for bit as printed."""
    cli = os.path.join(os.path.dirname(fedc.library_path), "fedc")
    if not os.access(cli, os.X_OK):
        pytest.skip("no fedc binary beside libfedc.so")
    args = [cli, "train", "--data", data, "--out", str(tmp_path / "cli"), "--quiet"] + list(flags)
    for k, v in OPTS.items():
        args += ["--" + k.replace("_", "-"), str(v)]
    subprocess.run(args, check=True, capture_output=True)
    with open(tmp_path / "cli" / "metrics.jsonl") as f:
        want = [json.loads(line) for line in f]
    got = fedc.train(data, out_dir=str(tmp_path / "py"), **opts)["metrics"]
    strip = lambda rows: [{k: v for k, v in r.items() if k not in ("seconds", "examples_per_s")}
                          for r in rows]
    assert strip(got) == strip(want)
    return got


def test_train_is_fedc_train(femnist, tmp_path):
    same_as_cli(femnist, tmp_path, OPTS)


def test_evaluate_is_the_trainings_evaluation(femnist, tmp_path):
    test = os.path.join(os.path.dirname(femnist), "test")
    job = dict(task="emnist", model="logistic", seed=1)
    r = fedc.train(femnist, test_data=test, rounds=2, clients_per_round=4, eval_every=0, checkpoint_every=2,
                   out_dir=str(tmp_path), **job)
    e = fedc.evaluate(str(tmp_path / "checkpoint.safetensors"), test, **job)
    assert (e["test_loss"], e["test_accuracy"]) == (r["test_loss"], r["test_accuracy"])  # the same bits
    assert e["clients_evaluated"] == r["clients_evaluated"] > 0
    with pytest.raises(fedc.Error, match="nowhere"):
        fedc.evaluate(str(tmp_path / "nowhere.safetensors"), test, **job)


def test_privacy_options_are_fedc_trains(femnist, tmp_path):
    """DP-FedAvg with an adaptive clip, Poisson sampling, zeroing and compression: the
    command line's flags, and their metrics (clip, noise, epsilon, bits)."""
    priv = dict(dp_clip=0.5, dp_noise=0.3, dp_adaptive="quantile=0.7", dp_delta=1e-3, robust_zero=50,
                sampling="poisson:0.1", compress="uniform:8")
    flags = ["--dp-clip", "0.5", "--dp-noise", "0.3", "--dp-adaptive", "quantile=0.7", "--dp-delta", "1e-3",
             "--robust-zero", "50", "--sampling", "poisson:0.1", "--compress", "uniform:8"]
    rows = same_as_cli(femnist, tmp_path, dict(OPTS, **priv), flags)
    last = rows[-1]
    assert last["dp_clip"] != 0.5 and last["epsilon"] > 0 and last["compress_bits"] > 0
    with open(tmp_path / "cli" / "metrics.jsonl") as f:
        assert "epsilon" in f.readline()


def test_secure_sum_option(femnist, tmp_path):
    r = fedc.train(femnist, out_dir=str(tmp_path / "s"), secure_sum=16, secure_bound=5.0,
                   **dict(OPTS, rounds=2))
    plain = fedc.train(femnist, out_dir=str(tmp_path / "p"), **dict(OPTS, rounds=2))
    assert r["rounds_run"] == 2 and r["train_loss"] != plain["train_loss"]
    assert abs(r["test_loss"] - plain["test_loss"]) < 0.05  # 16 bits: the mean to about 1e-4 of B


def test_robust_options_are_fedc_trains(femnist, tmp_path):
    """A robust aggregator against a label-flipping fifth of the clients: the command line's
    flags, and their metrics (the clients Krum kept, the attackers)."""
    opts = dict(aggregator="krum:f=0", attack="label_flip", attackers=0.2)
    flags = ["--aggregator", "krum:f=0", "--attack", "label_flip", "--attackers", "0.2"]
    rows = same_as_cli(femnist, tmp_path, dict(OPTS, **opts), flags)
    assert all(len(r["kept"]) == 1 for r in rows) and sum(r["attackers"] for r in rows) > 0


def test_bad_robust_options_raise(tmp_path):
    with pytest.raises(fedc.Error) as e:
        fedc.train(FEMNIST, aggregator="krum:g=1", out_dir=str(tmp_path))
    assert "no setting 'g'" in e.value.message
    with pytest.raises(ValueError, match="attack and attackers"):
        fedc.train(FEMNIST, attack="sign_flip", out_dir=str(tmp_path))


def test_bad_privacy_options_raise(tmp_path):
    with pytest.raises(ValueError, match="dp_noise needs dp_clip"):
        fedc.train(FEMNIST, dp_noise=1.0, out_dir=str(tmp_path))
    with pytest.raises(ValueError, match="sampling"):
        fedc.train(FEMNIST, sampling="uniform", out_dir=str(tmp_path))
    with pytest.raises(fedc.Error) as e:
        fedc.train(FEMNIST, compress="uniform:40", out_dir=str(tmp_path))
    assert "uniform:40" in e.value.message or "40" in e.value.message
    with pytest.raises(fedc.Error) as e:
        fedc.train(FEMNIST, dp_clip=1.0, dp_adaptive="rate=1", out_dir=str(tmp_path))
    assert "rate=1" in e.value.message


def test_callback_stops_the_job(femnist, tmp_path):
    r = fedc.train(femnist, out_dir=str(tmp_path / "a"),
                   on_round=lambda x: fedc.STOP if x["round"] == 2 else None, **OPTS)
    assert r["stopped"] and r["rounds_run"] == 2
    r = fedc.train(femnist, out_dir=str(tmp_path / "c"), on_round=lambda x: False, **OPTS)
    assert not r["stopped"] and r["rounds_run"] == 4  # only fedc.STOP stops

    def boom(report):
        raise RuntimeError("stop at round %d" % report["round"])
    with pytest.raises(RuntimeError, match="stop at round 1"):
        fedc.train(femnist, out_dir=str(tmp_path / "b"), on_round=boom, **OPTS)


def test_algorithm_options(femnist, tmp_path):
    r = fedc.train(femnist, out_dir=str(tmp_path), algorithm="fedprox", set={"mu": 0.5},
                   server_opt="adam", server_lr=0.01, weighting="uniform", dropout=False,
                   **dict(OPTS, rounds=2))
    assert r["rounds_run"] == 2 and r["test_accuracy"] > 0


def test_bad_options_raise(tmp_path):
    with pytest.raises(fedc.Error) as e:
        fedc.train(FEMNIST, algorithm="fedavgg", out_dir=str(tmp_path))
    assert "fedavgg" in e.value.message
    with pytest.raises(fedc.Error) as e:
        fedc.train(FEMNIST, set={"nu": 1.0}, out_dir=str(tmp_path))
    assert "nu" in e.value.message
    with pytest.raises(fedc.Error):
        fedc.train(FEMNIST, client_opt="sgdd", out_dir=str(tmp_path))
    with pytest.raises(TypeError):
        fedc.train(FEMNIST, learning_rate=0.1, out_dir=str(tmp_path))
    with pytest.raises(fedc.Error) as e:
        fedc.train("/nonexistent/data", model="logistic", task="emnist", out_dir=str(tmp_path))
    assert "/nonexistent/data" in e.value.message


def test_round_programs_run_the_library_round_on_given_batches():
    # fedavg's round on the logistic model, one client of one batch of 3 real examples
    # and one padding row: the server SGD step of 1 gives the client's SGD step, as numpy
    m = fedc.models.Model("logistic")
    progs = fedc.round_programs(m, 1, batch_size=4, client_lr=0.1)
    assert progs["client_init"] is None
    names = [n for n, _ in progs["round"].inputs]
    assert names[:2] == ["server/params/dense1/w", "server/params/dense1/b"]
    rng = np.random.default_rng(4)
    p = m.init(seed=2)
    x = rng.uniform(size=(1, 1, 4, 28, 28, 1)).astype(np.float32)
    y = np.array([[[3, 7, 61, 0]]], np.int32)
    mask = np.array([[[1, 1, 1, 0]]], np.float32)
    server = progs["server_init"].run({"params/dense1/w": p["dense1"]["w"], "params/dense1/b": p["dense1"]["b"]},
                                      clients=1)
    out = progs["round"].run(dict(server, x=x, y=y, mask=mask, steps=np.array([1], np.int32),
                                  key=np.zeros((1, 4), np.int32)))
    xs = x.reshape(4, 784).astype(np.float64)
    z = xs @ p["dense1"]["w"] + p["dense1"]["b"]
    e = np.exp(z - z.max(1, keepdims=True))
    d = (e / e.sum(1, keepdims=True) - np.eye(62)[y.reshape(4)]) * mask.reshape(4, 1) / 3
    np.testing.assert_allclose(out["server/params/dense1/w"], p["dense1"]["w"] - 0.1 * xs.T @ d, atol=1e-6)
    np.testing.assert_allclose(out["server/params/dense1/b"], p["dense1"]["b"] - 0.1 * d.sum(0), atol=1e-6)
    assert out["examples"] == 3
    with pytest.raises(TypeError, match="unknown option"):
        fedc.round_programs(m, 1, rounds=3)
    for prog in progs.values():
        if prog is not None:
            prog.close()
    m.close()
