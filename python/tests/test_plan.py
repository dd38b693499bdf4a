"""fedc.plan: a plan's rounds run in this process through the calls fedc.flower makes
(the server phases as Programs, each client's client_work through libfedc_deploy's
fedc_plan_worker) end with fedc.train's bits; the worker's refusals."""

import json
import os

import numpy as np
import pytest

import fedc
from fedc import safetensors

try:
    fedc.plan._libdeploy()
except ImportError as e:
    pytest.skip(str(e), allow_module_level=True)

JOB = dict(task="emnist", model="logistic", batch_size=5, seed=3)


@pytest.fixture(scope="module")
def emnist_like(tmp_path_factory):
    """A LEAF JSON dataset of EMNIST's shape: 5 writers of 6 to 12 images, 62 classes."""
    path = tmp_path_factory.mktemp("emnist")
    rng = np.random.default_rng(7)
    sizes = [9, 6, 12, 7, 10]
    users = ["f%04d_%02d" % (i, i) for i in range(len(sizes))]
    data = {u: {"x": rng.uniform(0, 1, (n, 784)).round(4).tolist(), "y": rng.integers(0, 62, n).tolist()}
            for u, n in zip(users, sizes)}
    with open(path / "all_data_0.json", "w") as f:
        json.dump({"users": users, "num_samples": sizes, "user_data": data}, f)
    return str(path)


@pytest.mark.parametrize("algorithm", ["fedavg", "scaffold", "mime"])
def test_a_plan_run_client_by_client_has_fedc_trains_bits(emnist_like, tmp_path, algorithm):
    plan = fedc.plan.build(emnist_like, tmp_path / "plan", algorithm=algorithm, **JOB)
    assert len(plan.exchanges) == (2 if algorithm == "mime" else 1)  # Mime's full gradient first
    assert (plan.client_init is not None) == (algorithm == "scaffold")
    state, rows = plan.run(emnist_like, rounds=3, clients_per_round=3)
    ref = fedc.train(emnist_like, algorithm=algorithm, rounds=3, clients_per_round=3, checkpoint_every=3,
                     out_dir=str(tmp_path / "sim"), **JOB)
    want = safetensors.read(os.path.join(tmp_path, "sim", "checkpoint.safetensors"))
    got = {k[len("server/params/"):] if k.startswith("server/params/") else k: v for k, v in state.items()}
    assert sorted(got) == sorted(want)
    assert all(got[k].tobytes() == want[k].tobytes() for k in want), [k for k in want if got[k].tobytes() !=
                                                                        want[k].tobytes()]
    assert any(plan.model[k].tobytes() != v.tobytes() for k, v in state.items())  # it trained
    assert [float("%.6g" % r["train_loss"]) for r in rows] == [m["train_loss"] for m in ref["metrics"]]


def test_the_worker_refuses_what_client_work_does_not_take(emnist_like, tmp_path):
    plan = fedc.plan.build(emnist_like, tmp_path / "plan", **JOB)
    worker = plan.worker(emnist_like)
    sent = plan.prepare(0, plan.start_round(plan.model), 3)
    inputs = plan.client_inputs(None, {}, sent, 0)
    first = worker.run(1, 0, 0, False, inputs)
    assert worker.run(2, 0, 0, False, inputs).keys() == first.keys()
    again = worker.run(1, 0, 0, False, inputs)  # another client between: its batches are loaded again
    assert all(again[k].tobytes() == first[k].tobytes() for k in first)
    later = worker.run(1, 1, 0, False, inputs)  # round 2's batches: shuffled by the round
    assert any(later[k].tobytes() != first[k].tobytes() for k in first)
    name = next(iter(sent))
    with pytest.raises(fedc.Error, match="reads \"%s\", which the inputs do not hold" % name):
        worker.run(1, 0, 0, False, {k: v for k, v in inputs.items() if k != name})
    with pytest.raises(fedc.Error, match="input \"%s\" is f64" % name):
        worker.run(1, 0, 0, False, {**inputs, name: inputs[name].astype(np.float64)})
    with pytest.raises(fedc.Error, match="has clients 0 to 4"):
        worker.run(5, 0, 0, False, inputs)
    with pytest.raises(fedc.Error, match="exchange 1; the plan's rounds count from 0 and it has 1 exchanges"):
        worker.run(1, 0, 1, False, inputs)
