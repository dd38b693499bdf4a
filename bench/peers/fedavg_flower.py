"""Workload 2 on Flower's simulation engine: bench/peers/run's Flower peer (docs/benchmarks.md,
"Against today's peers").

    PYTHONPATH=python:<.peers/torch's site-packages> .peers/flower/bin/python \
      bench/peers/fedavg_flower.py --data cifar-10-batches-py [--threads 1|2]

A Flower user's PyTorch FedAvg (flwr 1.22's Message API, as its quickstart-pytorch app): a
ServerApp running Flower's FedAvg strategy (flwr.serverapp.strategy.FedAvg: 50 of the 1,000
nodes a round, no federated evaluation, the mean weighted by "num-examples", 50 for every client,
so unweighted), and a ClientApp that loads the broadcast ArrayRecord into pfl's simple_cnn
(bench/peers/fedavg_torch2.py's model), trains one epoch of batch 10 with torch.optim.SGD lr 0.1
on its node's client (bench/peers/peer_data's IID split; node i holds client i) and answers with
its weights. flwr.simulation.run_simulation runs them on 1,000 SuperNodes with fedc.flower's
in-process backend (.peers/flower has Flower without its Ray extra; every ClientApp call runs in
this process, one after another, as a 1-worker Ray backend would).

The first --warmup-rounds rounds are run, not timed (the clock reads at the end of each round's
aggregation). The accuracy is the final model's on the 10,000 test images (its evaluation timed
on its own; --eval-every is not taken). Prints a `json: {...}` line as
bench/peers/fedavg_torch2.py does.
"""

import json
import os
import sys
import time
from importlib.metadata import version

import numpy as np
import torch
import torch.nn.functional as F
from flwr.app import ArrayRecord, Context, Message, MetricRecord, RecordDict
from flwr.clientapp import ClientApp
from flwr.serverapp import Grid, ServerApp
from flwr.serverapp.strategy import FedAvg

from fedc.flower import simulate

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peer_data  # noqa: E402
from fedavg_torch2 import make_model, nchw, timed_accuracy  # noqa: E402

a = peer_data.arguments(__doc__, "cifar-10-batches-py")
torch.set_num_threads(a.threads)
torch.manual_seed(a.seed)

TRAIN, TX, TY = peer_data.load(2, a.data)
TRAIN = [(nchw(x), torch.from_numpy(y)) for _, x, y in TRAIN]
NET = make_model(2)  # the client's model, reused by every ClientApp call (all in this process)
FINAL = {}
CLOCK = []


class TimedFedAvg(FedAvg):
    """Flower's FedAvg, with the time at the end of each round's aggregation."""

    def aggregate_train(self, server_round, replies):
        out = super().aggregate_train(server_round, replies)
        CLOCK.append(time.perf_counter())
        return out


client_app = ClientApp()


@client_app.train()
def train(msg: Message, context: Context):
    x, y = TRAIN[int(context.node_config["partition-id"])]
    NET.load_state_dict(msg.content["arrays"].to_torch_state_dict())
    NET.train()
    opt = torch.optim.SGD(NET.parameters(), lr=0.1)
    rng = np.random.default_rng([a.seed, int(msg.content["config"]["server-round"]),
                                 int(context.node_config["partition-id"])])
    for idx in peer_data.batches(len(y), 10, rng):
        idx = torch.from_numpy(idx)
        opt.zero_grad(set_to_none=True)
        F.cross_entropy(NET(x[idx]), y[idx]).backward()
        opt.step()
    return Message(RecordDict({"arrays": ArrayRecord(NET.state_dict()),
                               "metrics": MetricRecord({"num-examples": len(y)})}), reply_to=msg)


server_app = ServerApp()


@server_app.main()
def main(grid: Grid, context: Context):
    strategy = TimedFedAvg(fraction_train=50 / len(TRAIN), fraction_evaluate=0.0, min_train_nodes=50,
                           min_available_nodes=len(TRAIN))
    CLOCK.append(time.perf_counter())
    result = strategy.start(grid=grid, initial_arrays=ArrayRecord(make_model(2).state_dict()),
                            num_rounds=a.warmup_rounds + a.rounds)
    FINAL["state"] = result.arrays.to_torch_state_dict()


simulate(server_app, client_app, len(TRAIN))
timed = CLOCK[-1] - CLOCK[a.warmup_rounds]
model = make_model(2)
model.load_state_dict(FINAL["state"])
final = timed_accuracy(model, nchw(TX), torch.from_numpy(TY), a.warmup_rounds + a.rounds)
print("json: " + json.dumps({
    "system": "Flower", "version": f"flwr {version('flwr')}, torch {torch.__version__}",
    "threads": torch.get_num_threads(), "examples_per_s": a.rounds * 50 * 50 / timed,
    "s_per_round": timed / a.rounds, "warmup_s": CLOCK[a.warmup_rounds] - CLOCK[0],
    "accuracy": final["accuracy"], "eval_s": final["seconds"], "evals": [final]}), flush=True)
