"""fedc plans (`fedc plan build`, docs/deployment.md) from Python: a plan read and
checked by fedc, its deployment form's phases as fedc.Programs, and its client_work
run on a client's data through libfedc_deploy (fedc_plan_worker), the values
crossing between them as {name: numpy array}. fedc.flower runs plans on Flower with
these; Plan.run runs one in this process (docs/flower.md).

    plan = fedc.plan.build("../shared/data/heart-disease-uci", "plan", model="heart")
    state, rows = plan.run("../shared/data/heart-disease-uci", rounds=3, clients_per_round=3)
"""

import ctypes
import os

import numpy as np

from . import _lib, data, safetensors
from .program import parse

_deploy = None


def _libdeploy():
    global _deploy
    if _deploy is None:
        _deploy = _lib.load_deploy()
    return _deploy


class Plan:
    """A plan read and checked by fedc (fedc_plan_read: its hash, that the phases are
    its round's form, its model), with its phases as fedc.Programs."""

    def __init__(self, path):
        self.path, self._handle = path, None
        d = _libdeploy()
        handle = ctypes.c_void_p()
        _lib.check(d.fedc_plan_read(path.encode(), ctypes.byref(handle)))
        self._handle = handle
        self.hash = d.fedc_plan_hash(handle).decode()
        self.settings, self.exchanges, files = {}, [], {}
        with open(os.path.join(path, "plan.txt")) as f:
            for line in f:
                w = line.split()
                if w[0] == "setting":
                    self.settings[w[1]] = w[2]
                elif w[0] == "phase":
                    while len(self.exchanges) <= int(w[1]):
                        self.exchanges.append({})
                    self.exchanges[int(w[1])][w[2]] = parse(self._text(w[3]))
                elif w[0] in ("client_init", "model", "warm_start"):
                    files[w[0]] = w[1]
        if "warm_start" in files:
            raise ValueError(f"plan {path}: {self.settings.get('algorithm')}'s warm start runs on fedc's own server "
                             "(fedc server), not on Flower")
        self.client_init = parse(self._text(files["client_init"])) if "client_init" in files else None
        self.model = safetensors.read(os.path.join(path, files["model"]))

    def _text(self, name):
        with open(os.path.join(self.path, name)) as f:
            return f.read()

    def setting(self, key):
        return int(self.settings[key])

    def cohort(self, round, clients_per_round):
        """Round `round`'s clients (from 0), as fedc train and fedc server draw them."""
        return [int(c) for c in data.sample_clients(self.setting("population"), clients_per_round,
                                                    self.setting("seed"), round)]

    def start_round(self, server_state):
        """The values a round's phases read and write, by name: the server state's first."""
        env = dict(server_state)
        env["meta/population"] = np.float32(self.setting("population"))
        return env

    def prepare(self, e, env, clients):
        """Exchange e's server_prepare and broadcast run on env; {name: array}, what every
        client of the exchange is sent (the same copy to all)."""
        phases = self.exchanges[e]
        _run(phases["server_prepare"], env, clients)
        bcast = phases["server_to_client_broadcast"]
        if bcast.inputs:  # run for one client: each gets the same copy
            env.update({k: v[0] for k, v in bcast.run({n: env[n] for n, _ in bcast.inputs}, clients=1).items()})
        return {n: env[n] for n, _ in phases["client_work"].inputs if n.startswith("broadcast/")}

    def finish(self, e, env, reports):
        """Exchange e's reports ({name: array} of each client, in slot order) added by its
        aggregation phase (the simulator's summation, so fedc train's bits), and its
        server_result run on env. A report None is a client left out (it failed, or did
        not report by a deadline): every aggregate leaves it out, as fedc train leaves out
        a client that fails, and as fedc server one that does not report."""
        present = [r for r in reports if r is not None]
        if not present:
            raise ValueError(f"exchange {e}: none of the {len(reports)} clients reported")
        absent = [r is None for r in reports] if len(present) < len(reports) else None
        agg = self.exchanges[e]["client_to_server_aggregation"]
        for name, _ in agg.inputs:
            if name not in env:
                env[name] = np.stack([r[name] if r is not None else np.zeros_like(present[0][name]) for r in reports])
        _run(agg, env, len(reports), absent)
        _run(self.exchanges[e]["server_result"], env, len(reports))

    def report(self, e, values):
        """What a client reports of exchange e: the values its aggregation reads, from the
        client's values of the round ({name: array}: client_work's outputs and inputs)."""
        return {n: values[n] for n, _ in self.exchanges[e]["client_to_server_aggregation"].inputs}

    def server_state(self, env):
        """The next server state, from a round's env."""
        return {k: env[k] for k in self.model}

    def client_inputs(self, state, held, sent, slot):
        """A client's client_work inputs besides its batches: its state (client_init's for
        a client never seen: state None), what it holds of the round's earlier exchanges,
        what it was sent, and its slot (meta/index)."""
        inputs = dict(state) if state is not None else (self.client_init.run() if self.client_init else {})
        inputs.update(held)
        inputs.update(sent)
        inputs["meta/index"] = np.float32(slot)
        return inputs

    def run(self, data_path, rounds, clients_per_round):
        """The plan's rounds in this process, client by client, through the calls fedc.flower
        makes: (server state, [{"round", "train_loss", "examples"}]) after `rounds` rounds."""
        worker, state, states, rows = self.worker(data_path), dict(self.model), {}, []
        for r in range(rounds):
            cohort, env, held = self.cohort(r, clients_per_round), self.start_round(state), {}
            for e in range(len(self.exchanges)):
                sent, reports = self.prepare(e, env, len(cohort)), []
                for slot, c in enumerate(cohort):
                    seen = c in states
                    out = worker.run(c, r, e, seen, self.client_inputs(states.get(c), held.get(c, {}), sent, slot))
                    held[c] = {**held.get(c, {}), **sent,
                               **{("next/" + k if k.startswith("client/") else k): v for k, v in out.items()}}
                    reports.append(self.report(e, held[c]))
                self.finish(e, env, reports)
            for c in cohort:  # the clients' new states, once the round's work is done
                states.update({c: {k[5:]: v for k, v in held[c].items() if k.startswith("next/")}}
                              if any(k.startswith("next/") for k in held[c]) else {})
            state = self.server_state(env)
            rows.append({"round": r + 1, **{k: float(env[k]) for k in ("train_loss", "examples") if k in env}})
        return state, rows

    def worker(self, data_path):
        """client_work for the clients of `data_path`, on fedc (fedc_plan_worker)."""
        return Worker(self, data_path)

    def close(self):
        if self._handle:
            _libdeploy().fedc_plan_destroy(self._handle)
            self._handle = None

    def __del__(self):
        self.close()


class Worker:
    def __init__(self, plan, data_path):
        d = _libdeploy()
        self.plan, handle = plan, ctypes.c_void_p()  # the plan outlives its worker
        _lib.check(d.fedc_plan_worker_create(plan._handle, data_path.encode(), ctypes.byref(handle)))
        self._handle = handle

    def run(self, client, round, exchange, seen, inputs):
        """{name: array} of client `client`'s client_work outputs for {name: array} inputs."""
        d, blob = _libdeploy(), safetensors.encode(inputs)
        out, size = ctypes.c_void_p(), ctypes.c_size_t()
        _lib.check(d.fedc_plan_worker_run(self._handle, client, round, exchange, bool(seen), blob, len(blob),
                                          ctypes.byref(out), ctypes.byref(size)))
        try:
            return safetensors.decode(ctypes.string_at(out, size.value))
        finally:
            _lib.lib.fedc_free(out)

    def __del__(self):
        if getattr(self, "_handle", None):
            _libdeploy().fedc_plan_worker_destroy(self._handle)


def build(data, out, **options):
    """`fedc plan build --data DATA --out OUT` with fedc train's options (those of
    fedc.train, '_' for '-'); the Plan."""
    from .train import _config
    c, keep = _config(data, dict(options))
    _lib.check(_libdeploy().fedc_plan_build(ctypes.byref(c), os.fsencode(out)))
    del keep  # the strings C read, alive until here
    return Plan(os.fspath(out))


def _run(program, env, clients, absent=None):
    """Runs a phase on its inputs from env; its outputs added to env."""
    if program.inputs or program.outputs:
        env.update(program.run({name: env[name] for name, _ in program.inputs}, clients=clients, absent=absent))
