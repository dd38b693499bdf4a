"""fedc.train: fedc train's job from Python, its per-round callback and metrics."""

import glob
import json
import os
import subprocess

import pytest

import fedc

HERE = os.path.dirname(os.path.abspath(__file__))
FEMNIST = os.path.join(HERE, "..", "..", "..", "shared", "data", "femnist-leaf", "train")
OPTS = dict(task="emnist", model="logistic", rounds=4, clients_per_round=4, eval_every=2,
            eval_clients=5, seed=1, threads=2, client_lr=0.1)


@pytest.fixture
def femnist():
    if not glob.glob(os.path.join(FEMNIST, "*.json.gz")):
        pytest.skip("no ../shared/data/femnist-leaf")
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
    rows = r["metrics"]
    assert [row["round"] for row in rows] == [2, 4]
    for row, rep in zip(rows, (reports[1], reports[3])):
        assert row["train_loss"] == pytest.approx(rep["train_loss"], rel=1e-5)
        assert row["test_accuracy"] == pytest.approx(rep["test_accuracy"], rel=1e-5)
    assert os.path.exists(tmp_path / "metrics.csv")


def test_train_is_fedc_train(femnist, tmp_path):
    """The same options give the CLI's metrics, bit for bit as printed."""
    cli = os.path.join(os.path.dirname(fedc.library_path), "fedc")
    if not os.access(cli, os.X_OK):
        pytest.skip("no fedc binary beside libfedc.so")
    args = [cli, "train", "--data", femnist, "--out", str(tmp_path / "cli"), "--quiet"]
    for k, v in OPTS.items():
        args += ["--" + k.replace("_", "-"), str(v)]
    subprocess.run(args, check=True, capture_output=True)
    with open(tmp_path / "cli" / "metrics.jsonl") as f:
        want = [json.loads(line) for line in f]
    got = fedc.train(femnist, out_dir=str(tmp_path / "py"), **OPTS)["metrics"]
    strip = lambda rows: [{k: v for k, v in r.items() if k not in ("seconds", "examples_per_s")}
                          for r in rows]
    assert strip(got) == strip(want)


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
