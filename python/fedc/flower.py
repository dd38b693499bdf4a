"""fedc plans on Flower (docs/flower.md): a Flower Strategy (and its
ServerApp) that runs a plan's server phases, and a ClientApp whose clients run its
client_work, both through fedc's C library, so that a Flower run of a plan ends with
the bits of `fedc train` on the same job.

    strategy = fedc.flower.FedcStrategy("plan", clients_per_round=3, out_dir="run",
                                        test_data="../shared/data/femnist-leaf/test", eval_every=1,
                                        evaluate_clients=5)
    server_app = fedc.flower.server_app(strategy, rounds=3)
    client_app = fedc.flower.client_app("plan", data="../shared/data/emnist", eval_data="local/{client}")

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
centralized evaluation, evaluate_fn); with evaluate_clients, the same rounds run
Flower's federated evaluation (configure_evaluate, aggregate_evaluate): those clients'
nodes evaluate the model on their own eval_data through fedc, averaged by examples as
FedAvg averages. A round attempt with fewer than min_reports replies is run again, as
fedc server runs it. A stateful algorithm's client state (SCAFFOLD's c_i) lives in the
ClientApp's Context.state, Flower's per-node state, a round's new state kept once the
server says the round added the client's report. Needs flwr (1.22: its Message API
strategies, flwr.serverapp.strategy).
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
from flwr.serverapp.strategy.strategy_utils import aggregate_metricrecords
from flwr.simulation import run_simulation

from . import data as fedc_data
from . import safetensors
from .plan import Plan
from .train import evaluate

_STATE = "fedc.client_state"  # the ClientApp's Context.state: the client's state (client/<leaf>),
_PENDING = "fedc.pending"     # its new state from a round not yet known to have added its report,
_HELD = "fedc.held"           # and its values of the round's earlier exchanges
_EVAL_STREAM = 0x65766131     # fedc train's stream of --eval-clients draws (seed ^ it, round)
_WEIGHT = "num-examples"      # the key Flower's FedAvg weights evaluation metrics by


class RoundAbandoned(RuntimeError):
    """An attempt at a round that got fewer than min_reports replies (FedcStrategy runs it again)."""


def _arrays(record):
    """{name: numpy array} of an ArrayRecord (Flower serialises with np.save: bits kept)."""
    return {k: v.numpy() for k, v in record.items()}


def _record(values):
    return ArrayRecord({k: Array(np.asarray(v, order="C")) for k, v in values.items()})


def _params(state):
    """The model's parameters, by name, of a server state (its server/params/<leaf>)."""
    return {k[len("server/params/"):]: v for k, v in state.items() if k.startswith("server/params/")}


def _evaluate(params, data, options):
    """{test_loss, test_accuracy} of a model's parameters on every client of `data`, by
    fedc's evaluation (fedc.evaluate: fedc eval) with fedc train's options."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "params.safetensors")
        with open(path, "wb") as f:
            f.write(safetensors.encode(params, {}))
        r = evaluate(path, data, **options)
    return {"test_loss": r["test_loss"], "test_accuracy": r["test_accuracy"]}


class FedcStrategy(Strategy):
    """A Flower Strategy that runs a fedc plan's server phases. The server state
    (the plan's model.safetensors, then each round's server/<leaf> outputs) is the
    ArrayRecord that Strategy.start carries from round to round; each round's cohort
    is `fedc train`'s (seed, round, the plan's population) of `clients_per_round`
    clients, client i of the data being the Flower node whose ClientApp says it holds
    client i (asked once, with a "query" Message). With out_dir, the server state is
    written to out_dir/checkpoint.safetensors and a metrics row (round, train_loss,
    examples, ...) to out_dir/metrics.jsonl after every round.

    With test_data (a test split fedc reads), the model is evaluated on it as fedc train
    --test-data evaluates: every eval_every rounds and after the last (eval_every 0:
    after the last only; the last is server_app's rounds), with the plan's task, model
    and seed and fedc train's options in eval_options (eval_batch_size, eval_clients,
    vocab, ...). The round's test_loss and test_accuracy (fedc train's bits) go into its
    metrics row and its MetricRecord, and evaluate_fn gives them to Flower as its
    centralized evaluation.

    With evaluate_clients ("all", a list of fedc clients, or k: k clients drawn each
    time as fedc train draws --eval-clients), the same rounds also run Flower's
    federated evaluation: configure_evaluate sends those clients' nodes the model's
    parameters (an "evaluate" Message), each ClientApp evaluates them on its own
    eval_data through fedc and replies eval_loss, eval_accuracy and num-examples, and
    aggregate_evaluate averages them weighted by num-examples, as Flower's FedAvg does.

    timeout is each exchange's deadline (seconds; Flower's send_and_receive). A client
    whose reply fails or does not come by then is left out of the round, as fedc server
    leaves out a client past --report-deadline: every aggregate leaves it out (fedc
    train's bits with that client dropped), its later exchanges are not sent, and the
    metrics row counts it (dropped, left_out). An attempt at a round with fewer than
    min_reports replies (default: every client's) is abandoned and the round run again,
    as fedc server does: the same clients in the same slots (same seed, round, keys), the
    clients' states as before the round; after `attempts` attempts the run fails."""

    def __init__(self, plan, clients_per_round, out_dir=None, timeout=3600.0, test_data=None, eval_every=10,
                 eval_options=None, min_reports=None, attempts=3, evaluate_clients=None):
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
        self.attempts = int(attempts)
        if self.attempts < 1:
            raise ValueError(f"attempts is {attempts}; use 1 (no retry) or more")
        self.evaluate_clients = _checked_clients(evaluate_clients, population)
        self.out_dir, self.timeout = out_dir, timeout
        self.test_data, self.eval_every, self.rounds = test_data, int(eval_every), None
        self.eval_options = {"task": self.plan.settings.get("task"), "model": self.plan.settings.get("model"),
                             "seed": self.plan.setting("seed"), **(eval_options or {})}
        self._grid, self._nodes, self._asked, self._round, self._tested = None, {}, set(), None, {}
        self._added = {}  # client: the last round whose aggregate added its report (its state commits then)
        self._start, self._row, self._eval_sent = None, None, 0
        self.result = None  # Strategy.start's Result, once server_app's run has ended

    def initial_arrays(self):
        """The plan's initial server state, for Strategy.start."""
        return _record(self.plan.model)

    def summary(self):
        print(f"fedc.flower: plan {self.plan.hash[:16]}..., {self.plan.settings.get('algorithm')} on "
              f"{self.plan.settings.get('model')}, {len(self.plan.exchanges)} exchange(s) a round, "
              f"{self.k} clients per round")

    # --- training: one round, its exchanges, its attempts ------------------------------

    def configure_train(self, server_round, arrays, config, grid):
        self._grid = grid
        cohort = self.plan.cohort(server_round - 1, self.k)  # fedc counts rounds from 0
        self._find_clients(grid, cohort, server_round)
        self._start = (server_round - 1, cohort, _arrays(arrays))
        return self._attempt()

    def _attempt(self):
        """A fresh attempt at the round: its env from the round's server state, exchange 0's tasks."""
        r, cohort, state = self._start
        self._round = (r, cohort, self.plan.start_round(state), set())
        return self._tasks(0)

    def aggregate_train(self, server_round, replies):
        for attempt in range(1, self.attempts + 1):
            if attempt > 1:
                replies = self._grid.send_and_receive(self._attempt(), timeout=self.timeout)
            try:
                return self._train(server_round, attempt, replies)
            except RoundAbandoned as e:
                why = str(e)
                r, cohort, _, left_out = self._round
                print(f"fedc.flower: {why}: attempt {attempt} of {self.attempts} abandoned")
                self._write_row({"round": server_round, "attempt": attempt, "abandoned": True,
                                 "dropped": len(left_out), "left_out": sorted(cohort[s] for s in left_out)})
        raise RuntimeError(f"round {server_round}: abandoned {self.attempts} times, fewer than min_reports "
                           f"{self.min_reports} replies each time (the last: {why})")

    def _train(self, server_round, attempt, replies):
        """One attempt at the round: its exchanges, each one's replies collected."""
        r, cohort, env, left_out = self._round
        for e in range(len(self.plan.exchanges)):
            if e:
                replies = self._grid.send_and_receive(self._tasks(e), timeout=self.timeout)
            self._collect(e, list(replies))
        for slot, client in enumerate(cohort):  # told to the client with its next task: its state commits
            if slot not in left_out:
                self._added[client] = r
        state = self.plan.server_state(env)
        metrics = {k: float(env[k]) for k in ("train_loss", "examples") if k in env}
        metrics.update(dropped=float(len(left_out)), attempt=float(attempt))
        if self.test_data is not None and self._evaluates(server_round):
            self._tested[server_round] = _evaluate(_params(state), self.test_data, self.eval_options)
            metrics.update(self._tested[server_round])
        self._write_checkpoint(server_round, state)
        self._row = {"round": server_round, **metrics, "left_out": sorted(cohort[s] for s in left_out)}
        if not self._federated(server_round):  # else written once the clients' evaluation is in
            self._write_row(self._row)
        return _record(state), MetricRecord(metrics)

    def _evaluates(self, server_round):
        """Whether fedc train --eval-every would evaluate after this round."""
        return server_round == self.rounds or (self.eval_every > 0 and server_round % self.eval_every == 0)

    def evaluate_fn(self, server_round, arrays):
        """Flower's centralized evaluation (Strategy.start's evaluate_fn): the round's
        test_loss and test_accuracy, or None where the round is not evaluated."""
        tested = self._tested.get(server_round)
        return MetricRecord(tested) if tested else None

    def _tasks(self, e):
        """Exchange e's server_prepare and broadcast run; a "train" Message to each client
        still in the round, saying where it is and the last round that added its report."""
        r, cohort, env, left_out = self._round
        sent = self.plan.prepare(e, env, len(cohort))
        out = []
        for slot, client in enumerate(cohort):
            if slot in left_out:
                continue
            where = ConfigRecord({"round": r, "exchange": e, "slot": slot, "client": client, "plan": self.plan.hash,
                                  "added": self._added.get(client, -1)})
            content = RecordDict({"fedc": _record(sent), "config": where})
            out.append(Message(content=content, dst_node_id=self._nodes[client], message_type="train"))
        return out

    def _collect(self, e, replies):
        """Exchange e's reports, in slot order, summed by the aggregation phase; server_result
        run. A client whose reply failed or did not come is left out of the round; fewer
        than min_reports replies abandon the attempt (RoundAbandoned)."""
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
            raise RoundAbandoned(f"round {r + 1}, exchange {e}: {len(by_slot)} of {len(cohort)} clients reported, "
                                 f"fewer than min_reports {self.min_reports}"
                                 + (f"; failed: {failed}" if failed else ""))
        self.plan.finish(e, env, [by_slot.get(s) for s in range(len(cohort))])

    def _find_clients(self, grid, clients, server_round):
        """Which Flower node holds each of these fedc clients: every node not asked yet
        is asked (a "query" Message; its ClientApp says its client), until all are
        found or the timeout passes (nodes may join late)."""
        deadline = time.monotonic() + self.timeout
        while any(c not in self._nodes for c in clients):
            new = [n for n in grid.get_node_ids() if n not in self._asked]
            if not new and time.monotonic() > deadline:
                missing = [c for c in clients if c not in self._nodes]
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

    def _write_checkpoint(self, server_round, state):
        if not self.out_dir:
            return
        os.makedirs(self.out_dir, exist_ok=True)
        path = os.path.join(self.out_dir, "checkpoint.safetensors")
        saved = {k[len("server/params/"):] if k.startswith("server/params/") else k: v for k, v in state.items()}
        meta = {"format": "fedc flower checkpoint", "next_round": str(server_round), "plan_hash": self.plan.hash}
        with open(path + ".tmp", "wb") as f:  # named as fedc server's and fedc train's checkpoints
            f.write(safetensors.encode(saved, meta))
        os.replace(path + ".tmp", path)

    def _write_row(self, row):
        if not self.out_dir:
            return
        os.makedirs(self.out_dir, exist_ok=True)
        with open(os.path.join(self.out_dir, "metrics.jsonl"), "a") as f:
            f.write(json.dumps(row) + "\n")

    # --- federated evaluation: on the ClientApps, each on its own eval_data ------------

    def _federated(self, server_round):
        return self.evaluate_clients is not None and self._evaluates(server_round)

    def evaluated_clients(self, server_round):
        """The fedc clients whose nodes evaluate the model after this round (from 1)."""
        which, population = self.evaluate_clients, self.plan.setting("population")
        if which == "all" or (isinstance(which, int) and which >= population):
            return list(range(population))
        if isinstance(which, int):
            seed = self.plan.setting("seed") ^ _EVAL_STREAM
            return [int(c) for c in fedc_data.sample_clients(population, which, seed, server_round - 1)]
        return list(which)

    def configure_evaluate(self, server_round, arrays, config, grid):
        """An "evaluate" Message to the node of each evaluated client: the model's
        parameters (an ArrayRecord, by name) and where (round, client, the plan's hash)."""
        if not self._federated(server_round):
            return []
        clients = self.evaluated_clients(server_round)
        self._find_clients(grid, clients, server_round)
        self._eval_sent = len(clients)
        params = _record(_params(_arrays(arrays)))
        return [Message(content=RecordDict({"fedc": params, "config": ConfigRecord(
                    {"round": server_round - 1, "client": c, "plan": self.plan.hash})}),
                        dst_node_id=self._nodes[c], message_type="evaluate") for c in clients]

    def aggregate_evaluate(self, server_round, replies):
        """The clients' eval_loss and eval_accuracy weighted by their num-examples (Flower's
        aggregate_metricrecords, as FedAvg's aggregate_evaluate); a failed reply, or one that
        did not come by the timeout, is left out (eval_failed)."""
        if not self._federated(server_round):
            return None
        valid, failed = [], []
        for m in replies:
            (failed if m.has_error() else valid).append(m)
        for m in failed:
            print(f"fedc.flower: round {server_round}: a client's evaluation failed: {m.error.reason}")
        valid.sort(key=lambda m: int(m.content["config"]["client"]))  # the replies' order: the sum's, so its bits
        metrics = aggregate_metricrecords([m.content for m in valid], _WEIGHT) if valid else MetricRecord()
        metrics["eval_clients"], metrics["eval_failed"] = float(len(valid)), float(self._eval_sent - len(valid))
        self._row.update({k: metrics[k] for k in metrics.keys()})
        self._write_row(self._row)
        return metrics


def _checked_clients(which, population):
    """evaluate_clients as given, checked: None, "all", k >= 1, or clients of the population."""
    if which is None or which == "all":
        return which
    if isinstance(which, (int, np.integer)):
        if which < 1:
            raise ValueError(f"evaluate_clients is {which}; use 1 or more clients, \"all\" or a list of them")
        return int(which)
    clients = [int(c) for c in which]
    bad = [c for c in clients if not 0 <= c < population]
    if bad or not clients:
        raise ValueError(f"evaluate_clients {clients}: use clients 0 to {population - 1} of the plan's population")
    return clients


def server_app(strategy, rounds):
    """A ServerApp running `strategy` (a FedcStrategy) for `rounds` rounds; Flower's
    Result in strategy.result. In simulate(), an error that ends the run ends the
    simulation and simulate raises it (Flower's own would say only "Exception in
    ServerApp thread", after waiting for a context that does not come)."""
    app = ServerApp()
    strategy.rounds = rounds
    app._fedc_error, app._fedc_simulated = None, False

    @app.main()
    def main(grid: Grid, context: Context):
        try:
            strategy.result = strategy.start(grid, strategy.initial_arrays(), num_rounds=rounds,
                                             timeout=strategy.timeout, evaluate_fn=strategy.evaluate_fn)
        except Exception as e:
            if not app._fedc_simulated:
                raise
            app._fedc_error = e

    return app


def client_app(plan, data, client_of=None, mods=None, eval_data=None, eval_options=None):
    """A ClientApp whose node holds fedc client `client_of(context)` of `data` (any
    dataset fedc reads; by default the node's "partition-id", as Flower's simulation
    numbers its nodes) and runs the plan's client_work for it; `mods`: Flower's client
    mods around it. eval_data is the node's own evaluation data for Flower's federated
    evaluation (FedcStrategy's evaluate_clients): a path fedc reads, where "{client}"
    stands for the node's client, or a function of the Context giving one; evaluated
    with the plan's task, model and seed and fedc train's options in eval_options."""
    client_of = client_of or (lambda context: int(context.node_config["partition-id"]))
    opened = {}  # the plan and its worker, opened once in the process that runs the app
    app = ClientApp(mods=mods)

    def the_plan():  # opened where the app runs: the app itself holds only paths (Ray pickles it)
        if "plan" not in opened:
            opened["plan"] = plan if isinstance(plan, Plan) else Plan(plan)
        return opened["plan"]

    def check(msg, context):
        """The plan of the message's, and its client this node's: the client."""
        plan, where = the_plan(), msg.content["config"]
        if where["plan"] != plan.hash:
            raise ValueError(f"the server runs plan {where['plan'][:16]}..., this client plan {plan.hash[:16]}...")
        if "client" in where and int(where["client"]) != client_of(context):
            raise ValueError(f"a task of fedc client {where['client']} sent to the node of client {client_of(context)}")
        return client_of(context)

    @app.query()
    def query(msg: Message, context: Context):
        return Message(RecordDict({"config": ConfigRecord({"client": check(msg, context)})}), reply_to=msg)

    @app.train()
    def train(msg: Message, context: Context):
        client, plan, where = check(msg, context), the_plan(), msg.content["config"]
        r, e = int(where["round"]), int(where["exchange"])
        if "worker" not in opened:  # the data opened once, for every client of this process
            opened["worker"] = plan.worker(data)
        state = context.state
        _commit(state, int(where["added"]))
        seen = _STATE in state.array_records
        held = _arrays(state[_HELD]) if e and _HELD in state.array_records else {}
        inputs = plan.client_inputs(_arrays(state[_STATE]) if seen else None, held, _arrays(msg.content["fedc"]),
                                    int(where["slot"]))
        out = opened["worker"].run(client, r, e, seen, inputs)
        held.update(_arrays(msg.content["fedc"]))
        held.update({("next/" + k if k.startswith("client/") else k): v for k, v in out.items()})
        if e + 1 < len(plan.exchanges):  # what the round's later exchanges read on this client
            state[_HELD] = _record(held)
        else:  # the new state, the client's once the server says the round added its report
            next_state = {k[5:]: v for k, v in held.items() if k.startswith("next/")}
            if next_state:
                state[_PENDING] = _record(next_state)
                state[_PENDING + ".round"] = ConfigRecord({"round": r})
        report = plan.report(e, held)
        return Message(RecordDict({"fedc": _record(report), "config": ConfigRecord({"slot": int(where["slot"])})}),
                       reply_to=msg)

    @app.evaluate()
    def evaluate_here(msg: Message, context: Context):
        client, plan = check(msg, context), the_plan()
        if eval_data is None:
            raise ValueError(f"the node of fedc client {client} has no eval_data (client_app's) to evaluate on")
        path = eval_data(context) if callable(eval_data) else eval_data.format(client=client)
        options = {"task": plan.settings.get("task"), "model": plan.settings.get("model"),
                   "seed": plan.setting("seed"), **(eval_options or {})}
        if ("examples", path) not in opened:  # its examples, counted once: Flower's num-examples
            opened["examples", path] = fedc_data.open(path, options.get("format", "auto")).num_examples
        n = opened["examples", path]
        got = _evaluate(_arrays(msg.content["fedc"]), path, options) if n else {"test_loss": 0.0, "test_accuracy": 0.0}
        metrics = MetricRecord({"eval_loss": float(got["test_loss"]), "eval_accuracy": float(got["test_accuracy"]),
                                _WEIGHT: float(n)})
        return Message(RecordDict({"metrics": metrics, "config": ConfigRecord({"client": client})}), reply_to=msg)

    return app


def _commit(state, added):
    """The client's new state of its last round its own once the server says that round
    added its report (`added`: the last round that did), else dropped: a round abandoned
    and run again, or one that left the client out, leaves its state as it was (as fedc
    client keeps it: src/deploy/client_keep.c)."""
    if _PENDING not in state.array_records:
        return
    if int(state[_PENDING + ".round"]["round"]) == added:
        state[_STATE] = state[_PENDING]
    del state[_PENDING]
    del state[_PENDING + ".round"]


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
    server_app._fedc_simulated, server_app._fedc_error = True, None
    run_simulation(server_app=server_app, client_app=client_app, num_supernodes=num_supernodes,
                   backend_name="in-process")
    if server_app._fedc_error is not None:
        raise server_app._fedc_error
