"""Algorithms written in Python, registered with fedc's runner and trained by fedc.train."""

import glob
import os
import sys

import pytest

import fedc

HERE = os.path.dirname(os.path.abspath(__file__))
# FEDC_DATA: laid out as ../shared/data (ctest sets it: real sets or small ones), else ../shared/data
FEMNIST = os.path.join(os.environ.get("FEDC_DATA") or os.path.join(HERE, "..", "..", "..", "shared", "data"),
                       "femnist-leaf", "train")
OPTS = dict(task="emnist", model="logistic", rounds=4, clients_per_round=4, eval_every=2,
            eval_clients=5, seed=1, threads=2)
sys.path.insert(0, os.path.join(HERE, "..", "..", "examples", "python"))
import new_algorithm  # noqa: E402  registers "damped_py": FedAvg, its server step times alpha


@fedc.algorithm("py_broken")
def py_broken(r):
    raise ValueError("this round cannot be built")


@fedc.algorithm("py_wrong_shape")
def py_wrong_shape(r):
    return r.server, 1.0


@pytest.fixture
def femnist():
    if not glob.glob(os.path.join(FEMNIST, "*.json.gz")):
        pytest.skip("no FEMNIST at %s" % FEMNIST)
    return FEMNIST


def test_registered_and_listed():
    algs = fedc.algorithms()
    assert algs["damped_py"]["summary"] == "FedAvg, its server step times alpha (in Python)"
    assert algs["damped_py"]["hparams"]["alpha"][0] == 1.0
    with pytest.raises(fedc.Error):
        fedc.algorithm("damped_py")(new_algorithm.damped)


def test_python_fedavg_is_builtin_fedavg(femnist, tmp_path):
    """The same round written in Python trains exactly as the library's FedAvg."""
    mine = fedc.train(femnist, algorithm="damped_py", out_dir=str(tmp_path / "py"), **OPTS)
    ref = fedc.train(femnist, algorithm="fedavg", out_dir=str(tmp_path / "c"), **OPTS)
    strip = lambda rows: [{k: v for k, v in r.items() if k not in ("seconds", "examples_per_s")}
                          for r in rows]
    assert strip(mine["metrics"]) == strip(ref["metrics"])
    assert mine["test_accuracy"] == ref["test_accuracy"] > 0.2
    damped = fedc.train(femnist, algorithm="damped_py", set={"alpha": 0.5},
                        out_dir=str(tmp_path / "half"), **OPTS)
    assert damped["train_loss"] != mine["train_loss"]


def test_round_builder_errors_are_raised(femnist, tmp_path):
    with pytest.raises(ValueError, match="cannot be built"):
        fedc.train(femnist, algorithm="py_broken", out_dir=str(tmp_path / "a"), **OPTS)
    with pytest.raises(TypeError, match="returns"):
        fedc.train(femnist, algorithm="py_wrong_shape", out_dir=str(tmp_path / "b"), **OPTS)
    with pytest.raises(fedc.Error) as e:
        fedc.train(femnist, algorithm="damped_py", set={"alpha": 11.0}, out_dir=str(tmp_path / "c"),
                   **OPTS)
    assert "alpha" in e.value.message
