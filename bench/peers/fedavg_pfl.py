"""pfl-research's CIFAR-10 benchmark round on its PyTorch backend: bench/peers/run's pfl peer of
workload 2 (docs/benchmarks.md, "Against today's peers").

    .peers/pfl/bin/python bench/peers/fedavg_pfl.py --data cifar-10-batches-py [--threads 1|2]

What pfl's benchmarks/image_classification/pytorch/train.py builds from configs/baseline.yaml,
with pfl's own classes: its simple_cnn (Transpose2D of the channels-last images, then the layers
and Xavier-uniform weights of benchmarks/model/pytorch/cnn.py, its loss and metrics),
PyTorchModel with torch.optim.SGD locally and SGD lr 1.0 centrally, FederatedAveraging over a
SimulatedBackend with WeightByUser (unweighted), NNTrainHyperParams(local_learning_rate=0.1,
local_num_epochs=1, local_batch_size=10), cohorts of 50. The data are bench/peers/peer_data's
1,000 IID clients of 50 as a pfl FederatedDataset (pfl's benchmark draws 50 images a user from
the pool at random each time: the same distribution), users sampled by pfl's 'random' sampler.

The first --warmup-rounds central iterations are run, not timed; then --rounds are timed (a
callback's clock after each central iteration, less the evaluations' time). The accuracy is of
the central model on the 10,000 test images, by pfl's central evaluation (its benchmark's
CentralEvaluationCallback, batch 10,000) after the last round and every --eval-every-th, each
timed. Prints a `json: {...}` line as bench/peers/fedavg_torch2.py does.
"""

import json
import os
import sys
import time
import types
from importlib.metadata import version

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from pfl.aggregate.simulate import SimulatedBackend
from pfl.aggregate.weighting import WeightByUser
from pfl.algorithm import FederatedAveraging, NNAlgorithmParams
from pfl.callback.base import TrainingProcessCallback
from pfl.callback.central_evaluation import CentralEvaluationCallback
from pfl.data.dataset import Dataset
from pfl.data.federated_dataset import FederatedDataset
from pfl.data.sampling import get_user_sampler
from pfl.hyperparam import NNEvalHyperParams, NNTrainHyperParams
from pfl.metrics import Metrics, Weighted
from pfl.model.pytorch import PyTorchModel

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peer_data  # noqa: E402


class Transpose2D(nn.Module):
    """pfl's benchmarks/model/pytorch/layer.py: channels-last images to PyTorch's NCHW."""

    def forward(self, x):
        return x.permute(0, 3, 1, 2)


def loss(self, inputs, targets, eval=False):
    self.eval() if eval else self.train()
    return F.cross_entropy(self(inputs), targets.long())


@torch.no_grad()
def metrics(self, inputs, targets, eval=True):
    self.eval() if eval else self.train()
    logits = self(inputs)
    return {"loss": Weighted(F.cross_entropy(logits, targets.long(), reduction="sum").item(), len(inputs)),
            "accuracy": Weighted((logits.argmax(-1) == targets.long()).float().sum().item(), len(inputs))}


def simple_cnn():
    model = nn.Sequential(Transpose2D(), nn.Conv2d(3, 32, 3), nn.ReLU(), nn.Conv2d(32, 64, 3), nn.ReLU(),
                          nn.MaxPool2d((2, 2)), nn.Dropout(0.25), nn.Flatten(), nn.Linear(14 * 14 * 64, 128),
                          nn.ReLU(), nn.Dropout(0.5), nn.Linear(128, 10))
    for m in model.modules():
        if isinstance(m, (nn.Conv2d, nn.Linear)):
            nn.init.xavier_uniform_(m.weight)
    model.loss = types.MethodType(loss, model)
    model.metrics = types.MethodType(metrics, model)
    return model


class TimedCentralEvaluation(CentralEvaluationCallback):
    """pfl's central evaluation (its benchmark's CentralEvaluationCallback, batch 10,000) after
    the given rounds (1-based), timed; not before training (pfl's does that too: one of the 150
    evaluations of its 1,500 rounds)."""

    def __init__(self, dataset, rounds):
        super().__init__(dataset, model_eval_params=NNEvalHyperParams(local_batch_size=10000))
        self.rounds, self.evals, self.total_s = set(rounds), [], 0.0

    def on_train_begin(self, *, model):
        return Metrics()

    def after_central_iteration(self, aggregate_metrics, model, *, central_iteration):
        if central_iteration + 1 not in self.rounds:
            return False, Metrics()
        t0 = time.perf_counter()
        stop, metrics = self._eval(model)
        seconds = time.perf_counter() - t0
        self.total_s += seconds
        self.evals.append({"round": central_iteration + 1, "seconds": seconds,
                           "accuracy": metrics.to_simple_dict()["Central val | accuracy"]})
        return stop, metrics


class Clock(TrainingProcessCallback):
    """The time at the end of every central iteration, less the evaluations' time so far (it
    runs after the evaluation's callback)."""

    def __init__(self, evaluation):
        self.evaluation = evaluation
        self.times = [time.perf_counter()]

    def after_central_iteration(self, aggregate_metrics, model, *, central_iteration):
        self.times.append(time.perf_counter() - self.evaluation.total_s)
        return False, Metrics()


def main():
    a = peer_data.arguments(__doc__, "cifar-10-batches-py")
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    np.random.seed(a.seed)

    train, tx, ty = peer_data.load(2, a.data)
    users = {int(cid): [torch.from_numpy(x), torch.from_numpy(y)] for cid, x, y in train}
    federated = FederatedDataset.from_slices(users, get_user_sampler("random", list(users)))
    net = simple_cnn()
    model = PyTorchModel(model=net, local_optimizer_create=torch.optim.SGD,
                         central_optimizer=torch.optim.SGD(net.parameters(), 1.0))
    backend = SimulatedBackend(training_data=federated, val_data=None, postprocessors=[WeightByUser()])
    total = a.warmup_rounds + a.rounds
    evaluation = TimedCentralEvaluation(Dataset(raw_data=[torch.from_numpy(tx), torch.from_numpy(ty)]),
                                        peer_data.eval_rounds(a))
    clock = Clock(evaluation)
    FederatedAveraging().run(
        algorithm_params=NNAlgorithmParams(central_num_iterations=total, evaluation_frequency=total + 1,
                                           train_cohort_size=50, val_cohort_size=0),
        backend=backend, model=model,
        model_train_params=NNTrainHyperParams(local_learning_rate=0.1, local_num_epochs=1, local_batch_size=10),
        model_eval_params=NNEvalHyperParams(local_batch_size=10000), callbacks=[evaluation, clock])
    t, evals = clock.times, evaluation.evals
    timed = t[-1] - t[a.warmup_rounds]
    print("json: " + json.dumps({
        "system": "pfl-research", "version": f"pfl {version('pfl')}, torch {torch.__version__}",
        "threads": torch.get_num_threads(), "examples_per_s": a.rounds * 50 * 50 / timed,
        "s_per_round": timed / a.rounds, "warmup_s": t[a.warmup_rounds] - t[0],
        "accuracy": evals[-1]["accuracy"], "eval_s": evals[-1]["seconds"], "evals": evals}), flush=True)


if __name__ == "__main__":
    main()
