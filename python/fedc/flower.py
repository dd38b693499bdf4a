"""fedc plans on Flower (docs/flower.md): a Flower Strategy (and its
ServerApp) that runs a plan's server phases, and a ClientApp whose clients run its
client_work, both through fedc's C library, so that a Flower run of a plan ends with
the bits of `fedc train` on the same job.

    strategy = fedc.flower.FedcStrategy("plan", clients_per_round=3, out_dir="run",
                                        test_data="../shared/data/femnist-leaf/test", eval_every=1)
    server_app = fedc.flower.server_app(strategy, rounds=3)
    client_app = fedc.flower.client_app("plan", data="../shared/data/emnist")

The plan is `fedc plan build`'s (docs/deployment.md). Each exchange of a round is the
deployment form's five phases: the Strategy runs server_prepare and the broadcast,
sends each sampled client a Flower "train" Message holding the broadcast values
(an ArrayRecord, by the form's names) and where it is (a ConfigRecord: round,
exchange, slot, client, the plan's hash); the ClientApp runs client_work on that
client's batches, loaded as fedc train loads them (libfedc_deploy's
fedc_plan_worker), and answers with what client_work sends up (an ArrayRecord);
the Strategy adds them in slot order with the aggregation phase (the simulator's own
summation) and runs server_result. With test_data, the Strategy evaluates the new model
on it as fedc train does (every eval_every rounds and after the last; Flower's
centralized evaluation, evaluate_fn). A stateful algorithm's client state (SCAFFOLD's
c_i) lives in the ClientApp's Context.state, Flower's per-node state. Needs flwr
(1.22: its Message API strategies, flwr.serverapp.strategy).
"""

import json
import os
import tempfile
import time

import numpy as np
from flwr.app import Array, ArrayRecord, ConfigRecord, Context, Message, MetricRecord, RecordDict
from flwr.clientapp import ClientApp
from flwr.server.superlink.fleet.vce.backend import Backend, supported_backends
from flwr.serverapp import Grid, ServerApp
from flwr.serverapp.strategy import Strategy
from flwr.simulation import run_simulation

from . import safetensors
from .plan import Plan
from .train import evaluate

_STATE = "fedc.client_state"  # the ClientApp's Context.state: the client's state (client/<leaf>)
_HELD = "fedc.held"           # and its values of the round's earlier exchanges


def _arrays(record):
    """{name: numpy array} of an ArrayRecord (Flower serialises with np.save: bits kept)."""
    return {k: v.numpy() for k, v in record.items()}


def _record(values):
    return ArrayRecord({k: Array(np.asarray(v, order="C")) for k, v in values.items()})


class FedcStrategy(Strategy):
    """A Flower Strategy that runs a fedc plan's server phases. The server state
    (the plan's model.safetensors, then each round's server/<leaf> outputs) is the
    ArrayRecord that Strategy.start carries from round to round; each round's cohort
    is `fedc train`'s (seed, round, the plan's population) of `clients_per_round`
    clients, client i of the data being the Flower node whose ClientApp says it holds
    client i (asked once, with a "query" Message). With out_dir, the server state is
    written to out_dir/checkpoint.safetensors and a metrics row (round, train_loss,
    examples) to out_dir/metrics.jsonl after every round.

    With test_data (a test split fedc reads), the model is evaluated on it as fedc train
    --test-data evaluates: every eval_every rounds and after the last (eval_every 0:
    after the last only; the last is server_app's rounds), with the plan's task, model
    and seed and fedc train's options in eval_options (eval_batch_size, eval_clients,
    vocab, ...). The round's test_loss and test_accuracy (fedc train's bits) go into its
    metrics row and its MetricRecord, and evaluate_fn gives them to Flower as its
    centralized evaluation.

    timeout is each exchange's deadline (seconds; Flower's send_and_receive). A client
    whose reply fails or does not come by then is left out of the round, as fedc server
    leaves out a client past --report-deadline: every aggregate leaves it out (fedc
    train's bits with that client dropped), its later exchanges are not sent, and the
    metrics row counts it (dropped, left_out). Fewer than min_reports replies (default:
    every client's) fail the round."""

    def __init__(self, plan, clients_per_round, out_dir=None, timeout=3600.0, test_data=None, eval_every=10,
                 eval_options=None, min_reports=None):
        self.plan = plan if isinstance(plan, Plan) else Plan(plan)
        self.k = int(clients_per_round)
        population = self.plan.setting("population")
        if not 1 <= self.k <= population:
            raise ValueError(f"{self.k} clients per round, but the plan's population is {population} clients")
        if int(eval_every) < 0:
            raise ValueError(f"eval_every is {eval_every}; use 0 (after the last round only) or more")
        self.min_reports = self.k if min_reports is None else int(min_reports)
        if not 1 <= self.min_reports <= self.k:
            raise ValueError(f"min_reports is {min_reports}; use 1 to the {self.k} clients per round")
        self.out_dir, self.timeout = out_dir, timeout
        self.test_data, self.eval_every, self.rounds = test_data, int(eval_every), None
        self.eval_options = {"task": self.plan.settings.get("task"), "model": self.plan.settings.get("model"),
                             "seed": self.plan.setting("seed"), **(eval_options or {})}
        self._grid, self._nodes, self._asked, self._round, self._tested = None, {}, set(), None, {}

    def initial_arrays(self):
        """The plan's initial server state, for Strategy.start."""
        return _record(self.plan.model)

    def summary(self):
        print(f"fedc.flower: plan {self.plan.hash[:16]}..., {self.plan.settings.get('algorithm')} on "
              f"{self.plan.settings.get('model')}, {len(self.plan.exchanges)} exchange(s) a round, "
              f"{self.k} clients per round")

    # --- training: one round, its exchanges --------------------------------------------

    def configure_train(self, server_round, arrays, config, grid):
        self._grid = grid
        r = server_round - 1  # fedc counts rounds from 0
        cohort = self.plan.cohort(r, self.k)
        self._find_clients(grid, cohort, server_round)
        self._round = (r, cohort, self.plan.start_round(_arrays(arrays)), set())
        return self._tasks(0)

    def aggregate_train(self, server_round, replies):
        r, cohort, env, left_out = self._round
        for e in range(len(self.plan.exchanges)):
            if e:
                replies = self._grid.send_and_receive(self._tasks(e), timeout=self.timeout)
            self._collect(e, list(replies))
        state = self.plan.server_state(env)
        metrics = {k: float(env[k]) for k in ("train_loss", "examples") if k in env}
        metrics["dropped"] = float(len(left_out))
        if self._evaluates(server_round):
            self._tested[server_round] = self._evaluate(state)
            metrics.update(self._tested[server_round])
        self._write(server_round, state, {**metrics, "left_out": sorted(cohort[s] for s in left_out)})
        return _record(state), MetricRecord(metrics)

    def _evaluates(self, server_round):
        """Whether fedc train --eval-every would evaluate after this round."""
        if self.test_data is None:
            return False
        return server_round == self.rounds or (self.eval_every > 0 and server_round % self.eval_every == 0)

    def _evaluate(self, state):
        """{test_loss, test_accuracy} of the server state's model on test_data, by fedc's
        evaluation of its parameters (fedc.evaluate: fedc eval)."""
        params = {k[len("server/params/"):]: v for k, v in state.items() if k.startswith("server/params/")}
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "params.safetensors")
            with open(path, "wb") as f:
                f.write(safetensors.encode(params, {}))
            r = evaluate(path, self.test_data, **self.eval_options)
        return {"test_loss": r["test_loss"], "test_accuracy": r["test_accuracy"]}

    def evaluate_fn(self, server_round, arrays):
        """Flower's centralized evaluation (Strategy.start's evaluate_fn): the round's
        test_loss and test_accuracy, or None where the round is not evaluated."""
        tested = self._tested.get(server_round)
        return MetricRecord(tested) if tested else None

    def _tasks(self, e):
        """Exchange e's server_prepare and broadcast run; a "train" Message to each client
        still in the round."""
        r, cohort, env, left_out = self._round
        sent = self.plan.prepare(e, env, len(cohort))
        out = []
        for slot, client in enumerate(cohort):
            if slot in left_out:
                continue
            where = ConfigRecord({"round": r, "exchange": e, "slot": slot, "client": client, "plan": self.plan.hash})
            content = RecordDict({"fedc": _record(sent), "config": where})
            out.append(Message(content=content, dst_node_id=self._nodes[client], message_type="train"))
        return out

    def _collect(self, e, replies):
        """Exchange e's reports, in slot order, summed by the aggregation phase; server_result
        run. A client whose reply failed or did not come is left out of the round."""
        r, cohort, env, left_out = self._round
        by_slot, failed = {}, []
        for m in replies:
            if m.has_error():
                failed.append(m.error.reason)
                continue
            slot = int(m.content["config"]["slot"])
            if slot in left_out or not 0 <= slot < len(cohort) or slot in by_slot:
                raise RuntimeError(f"round {r + 1}, exchange {e}: a reply for slot {slot}, not one awaited")
            by_slot[slot] = _arrays(m.content["fedc"])
        left_out.update(s for s in range(len(cohort)) if s not in by_slot)
        if len(by_slot) < self.min_reports:
            raise RuntimeError(f"round {r + 1}, exchange {e}: {len(by_slot)} of {len(cohort)} clients reported, fewer "
                               f"than min_reports {self.min_reports}" + (f"; failed: {failed}" if failed else ""))
        self.plan.finish(e, env, [by_slot.get(s) for s in range(len(cohort))])

    def _find_clients(self, grid, cohort, server_round):
        """Which Flower node holds each fedc client of the cohort: every node not asked
        yet is asked (a "query" Message; its ClientApp says its client), until all are
        found or the timeout passes (nodes may join late)."""
        deadline = time.monotonic() + self.timeout
        while any(c not in self._nodes for c in cohort):
            new = [n for n in grid.get_node_ids() if n not in self._asked]
            if not new and time.monotonic() > deadline:
                missing = [c for c in cohort if c not in self._nodes]
                raise RuntimeError(f"round {server_round}: no Flower node holds fedc clients {missing}")
            if not new:
                time.sleep(0.1)
                continue
            self._asked.update(new)
            ask = [Message(content=RecordDict({"config": ConfigRecord({"plan": self.plan.hash})}), dst_node_id=n,
                           message_type="query") for n in new]
            for m in grid.send_and_receive(ask, timeout=self.timeout):
                if m.has_error():
                    raise RuntimeError(f"Flower node {m.metadata.src_node_id} could not say its fedc client: "
                                       f"{m.error.reason}")
                self._nodes[int(m.content["config"]["client"])] = m.metadata.src_node_id

    def _write(self, server_round, state, metrics):
        if not self.out_dir:
            return
        os.makedirs(self.out_dir, exist_ok=True)
        path = os.path.join(self.out_dir, "checkpoint.safetensors")
        saved = {k[len("server/params/"):] if k.startswith("server/params/") else k: v for k, v in state.items()}
        meta = {"format": "fedc flower checkpoint", "next_round": str(server_round), "plan_hash": self.plan.hash}
        with open(path + ".tmp", "wb") as f:  # named as fedc server's and fedc train's checkpoints
            f.write(safetensors.encode(saved, meta))
        os.replace(path + ".tmp", path)
        with open(os.path.join(self.out_dir, "metrics.jsonl"), "a") as f:
            f.write(json.dumps({"round": server_round, **metrics}) + "\n")

    # --- federated evaluation (on the ClientApps): none; fedc train's evaluation is over
    # test clients the plan does not hold, run centrally above (test_data) ---

    def configure_evaluate(self, server_round, arrays, config, grid):
        return []

    def aggregate_evaluate(self, server_round, replies):
        return None


def server_app(strategy, rounds):
    """A ServerApp running `strategy` (a FedcStrategy) for `rounds` rounds."""
    app = ServerApp()
    strategy.rounds = rounds

    @app.main()
    def main(grid: Grid, context: Context):
        strategy.start(grid, strategy.initial_arrays(), num_rounds=rounds, timeout=strategy.timeout,
                       evaluate_fn=strategy.evaluate_fn)

    return app


def client_app(plan, data, client_of=None, mods=None):
    """A ClientApp whose node holds fedc client `client_of(context)` of `data` (any
    dataset fedc reads; by default the node's "partition-id", as Flower's simulation
    numbers its nodes) and runs the plan's client_work for it; `mods`: Flower's client
    mods around it."""
    client_of = client_of or (lambda context: int(context.node_config["partition-id"]))
    opened = {}  # the plan and its worker, opened once in the process that runs the app
    app = ClientApp(mods=mods)

    def the_plan():  # opened where the app runs: the app itself holds only paths (Ray pickles it)
        if "plan" not in opened:
            opened["plan"] = plan if isinstance(plan, Plan) else Plan(plan)
        return opened["plan"]

    def check_plan(msg):
        plan = the_plan()
        if msg.content["config"]["plan"] != plan.hash:
            raise ValueError(f"the server runs plan {msg.content['config']['plan'][:16]}..., "
                             f"this client plan {plan.hash[:16]}...")

    @app.query()
    def query(msg: Message, context: Context):
        check_plan(msg)
        return Message(RecordDict({"config": ConfigRecord({"client": client_of(context)})}), reply_to=msg)

    @app.train()
    def train(msg: Message, context: Context):
        check_plan(msg)
        plan, where = the_plan(), msg.content["config"]
        r, e, client = int(where["round"]), int(where["exchange"]), int(where["client"])
        if client != client_of(context):
            raise ValueError(f"a task of fedc client {client} sent to the node of client {client_of(context)}")
        if "worker" not in opened:  # the data opened once, for every client of this process
            opened["worker"] = plan.worker(data)
        state = context.state
        seen = _STATE in state.array_records
        held = _arrays(state[_HELD]) if e and _HELD in state.array_records else {}
        inputs = plan.client_inputs(_arrays(state[_STATE]) if seen else None, held, _arrays(msg.content["fedc"]),
                                    int(where["slot"]))
        out = opened["worker"].run(client, r, e, seen, inputs)
        held.update(_arrays(msg.content["fedc"]))
        held.update({("next/" + k if k.startswith("client/") else k): v for k, v in out.items()})
        if e + 1 < len(plan.exchanges):  # what the round's later exchanges read on this client
            state[_HELD] = _record(held)
        else:  # the new state, kept once the round's work is done (a report then lost leaves it changed)
            next_state = {k[5:]: v for k, v in held.items() if k.startswith("next/")}
            if next_state:
                state[_STATE] = _record(next_state)
        report = plan.report(e, held)
        return Message(RecordDict({"fedc": _record(report), "config": ConfigRecord({"slot": int(where["slot"])})}),
                       reply_to=msg)

    return app



class InProcessBackend(Backend):
    """A backend of Flower's simulation engine that runs each ClientApp call in the
    engine's own process, one at a time (Flower ships only Ray's). simulate() registers
    it as "in-process"."""

    def __init__(self, backend_config):
        super().__init__(backend_config)
        self.app_fn = None

    def build(self, app_fn):
        self.app_fn = app_fn

    @property
    def num_workers(self):
        return 1

    def is_worker_idle(self):
        return True

    def terminate(self):
        pass

    def process_message(self, message, context):
        return self.app_fn()(message, context), context


def simulate(server_app, client_app, num_supernodes):
    """Flower's simulation (flwr.simulation.run_simulation: its SuperLink, nodes and
    Messages, in memory) of the apps on num_supernodes nodes, each ClientApp call run in
    this process by InProcessBackend, so without Ray."""
    supported_backends.setdefault("in-process", InProcessBackend)
    run_simulation(server_app=server_app, client_app=client_app, num_supernodes=num_supernodes,
                   backend_name="in-process")
