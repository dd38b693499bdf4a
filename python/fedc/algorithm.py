"""Algorithms written in Python, registered with fedc's runner (fl.h's
fedc_algorithm_def, whole: server_init, client_init, round, evaluation, warm_start).

    @fedc.algorithm("damped", summary="FedAvg, its server step times alpha",
                    hparams={"alpha": (1.0, 0.0, 10.0, "server step, times the mean delta")})
    def damped(r):
        ...  # r.server, r.data, r.model, r.hparam("alpha"): build the round
        return new_server, loss, examples

    fedc.train(data, algorithm="damped", set={"alpha": 0.5}, ...)

The functions build programs when the job plans them: Python runs to trace them,
and every round then runs in C. The round gets a Round: `server`, the server state
as a nested dict of @server values (by default {"params": the model's parameters,
"opt": the server optimizer's state}; server_init decides); `client`, the cohort's
client state (@clients) when client_init gives one; `data`, the cohort's batches
(x, y, mask: [steps, batch, ...], steps: i32[] the real batches, key: i32[4] the
dropout stream); `model`; `hparam(name)`, `meta(name)`, `weight(examples)`,
`aggregate(update, weight)`, and the job's optimizers as fedc.optimizers builders.
It returns (new server state, loss, examples), or (new server state, new client
state, loss, examples) when the algorithm keeps client state: the states of the
same structure and types as given; loss and examples f32[]@clients.
"""

import ctypes
import math

from . import _lib
from . import ctree
from . import optimizers
from .errors import EINVAL
from .models import Model
from .ops import zeros
from .tracing import Builder, lift
from .tree import flatten

_L = _lib.lib
_registered = {}  # name -> what C keeps pointers into: the def, its strings, the callbacks
pending = []      # exceptions raised by builders, for fedc.train to raise


class _Job:
    """What every builder gets of the job: the model, the hyperparameters and the
    job's optimizers (`fedc train --client-opt/--server-opt`)."""

    def _job(self, model, alg, builder):
        self.model = Model.borrow(model)
        self._alg, self._b = alg, builder
        a = _lib.Algorithm.from_address(alg)
        self.client_optimizer = optimizers.from_c(a.client_opt)
        self.server_optimizer = optimizers.from_c(a.server_opt)
        self.dropout = bool(a.dropout)  # whether the model trains with dropout (r.data["key"])

    def hparam(self, name):
        """Hyperparameter `name`: its default unless `fedc train --set` (set=) gave it."""
        v = _L.fedc_algorithm_hparam(ctypes.cast(self._alg, ctypes.POINTER(_lib.Algorithm)),
                                     name.encode())
        if math.isnan(v):
            raise _lib.error(EINVAL)
        return v


class Init(_Job):
    """What server_init and client_init get: `params` (server_init: the model's
    parameters, @server, as a nested dict; None for client_init), `model`,
    `hparam(name)`, `client_optimizer`, `server_optimizer`, `zeros()`."""

    def __init__(self, model, alg, builder, params=None):
        self._job(model, alg, builder)
        self.params = params

    def zeros(self):
        """Local zeros shaped as the model's parameters (by path): a never-seen
        client's control variate."""
        out = {}
        for name, spec in self.model.params:
            ctree.put(out, name, zeros(spec.shape, spec.dtype))
        return out


class Round(_Job):
    """What a round, warm start or evaluation builder gets (see the module's comment)."""

    def __init__(self, r, builder, shapes):
        self._r = r
        c = r.contents
        self._job(c.model, c.alg, builder)
        self.server = _state(builder, c.server, shapes.get("server"))
        if "server" not in shapes:  # the default server state: SGD's "opt" has no leaves
            self.server.setdefault("opt", {})
        self.client = _state(builder, c.client, shapes.get("client")) if c.client else None
        self.data = ctree.from_c(builder, c.data)
        self.cohort = c.cohort  # a warm start's clients; 0 in a round

    def hparam(self, name):
        v = _L.fedc_round_hparam(self._r, name.encode())
        _lib.check(_L.fedc_program_status(self._b._get()))
        return v

    def weight(self, examples):
        """Each client's weight (f32[]@clients) under the job's --weighting."""
        return self._b.check(_L.fedc_round_weight(self._r, lift(self._b, examples).v))

    def meta(self, name):
        """Metadata the job binds: "num_examples", "seen", "domain", "index"
        (f32[]@clients) or "population" (f32[]@server, the training data's clients)."""
        return self._b.check(_L.fedc_round_meta(self._r, name.encode()))

    def aggregate(self, update, weight):
        """The server's mean of update (@clients, a structure) under the job's
        aggregation: the weighted mean, or --robust-zero's and --dp-clip's
        (fedc_round_aggregate; call it once a round). The same structure, @server."""
        t = _L.fedc_round_aggregate(self._r, ctree.to_c(self._b, update, "update"),
                                    lift(self._b, weight).v)
        if not t:
            self._b.status()
        return ctree.like(self._b, t, flatten(update)[1])


def _state(b, t, treedef):
    """A state tree as the structure its init returned (tuples stay tuples, empty parts
    stay), or as a nested dict by path when the job added leaves (an adaptive clip's)."""
    names = [n for n, _ in ctree.leaves(b, t)]
    if treedef is not None and sorted(treedef.paths("")) == sorted(names):
        return ctree.like(b, t, treedef)
    return ctree.from_c(b, t)


def _guarded(name, what, program, build):
    """build(builder) on the program C is building; a Python exception fails the
    program (its message naming the algorithm) and is kept for fedc.train to raise."""
    b = Builder.wrap(program, "%s of %s" % (what, name))
    try:
        with b:
            return build(b) or 0
    except _lib.Error as e:
        if not _L.fedc_program_status(program):
            _L.fedc_program_fail(program, e.status, b"%s", ("algorithm %s: %s" % (name, e.message)).encode())
        return e.status
    except BaseException as e:  # noqa: B902 - raised again by fedc.train
        pending.append(e)
        msg = ("algorithm %s: %s: %s" % (name, type(e).__name__, e)).encode()
        _L.fedc_program_fail(program, EINVAL, b"%s", msg)
        return EINVAL
    finally:
        b.ptr = None  # the program is C's: its values die with this call


def _state_out(b, state, out, what, shapes, key):
    if not isinstance(state, dict) or not state:
        raise TypeError("%s returns the state as a non-empty dict of arrays" % what)
    out[0] = ctree.to_c(b, state, what)
    shapes[key] = flatten(state)[1]  # the rounds get the state back in this structure
    return 0


def _round_hook(name, fn, stateful, what, shapes):
    """A ROUND_FN calling fn(Round) and finishing the round from what it returns."""
    want = 4 if stateful else 3
    shape = "(server state, client state, loss, examples)" if stateful else "(server state, loss, examples)"

    def build(r):
        def finish(b):
            out = fn(Round(r, b, shapes))
            if out is None and what == "warm start":
                return 0  # adds nothing: no warm start (a hyperparameter turned it off)
            if not (isinstance(out, tuple) and len(out) == want):
                raise TypeError("algorithm %s: the %s returns %s" % (name, what, shape))
            server, client, loss, examples = out if stateful else (out[0], None) + out[1:]
            return _L.fedc_round_finish(r, ctree.to_c(b, server, "the server state"),
                                        ctree.to_c(b, client, "the client state") if stateful else None,
                                        lift(b, loss).v, lift(b, examples).v)
        return _guarded(name, what, r.contents.p, finish)
    return _lib.ROUND_FN(build)


def _evaluation_hook(name, fn, shapes):
    def build(r):
        def evaluate(b):
            w = fn(Round(r, b, shapes))
            return _L.fedc_round_evaluate(r, ctree.to_c(b, w, "the evaluated models"), None)
        return _guarded(name, "evaluation", r.contents.p, evaluate)
    return _lib.ROUND_FN(build)


def _server_init_hook(name, fn, shapes):
    def build(m, a, p, params, state):
        return _guarded(name, "server_init", p, lambda b: _state_out(
            b, fn(Init(m, a, b, ctree.from_c(b, params))), state, "server_init", shapes, "server"))
    return _lib.SERVER_INIT_FN(build)


def _client_init_hook(name, fn, shapes):
    def build(m, a, p, state):
        return _guarded(name, "client_init", p, lambda b: _state_out(
            b, fn(Init(m, a, b)), state, "client_init", shapes, "client"))
    return _lib.CLIENT_INIT_FN(build)


def algorithm(name, summary="", hparams=None, one_pass=False, server_init=None, client_init=None,
              evaluation=None, warm_start=None):
    """Decorator: registers fn as the round builder of algorithm `name`.

    hparams: {name: (default, min, max, help)}. server_init(init) -> the server
    state (a dict with "params"; default {"params", "opt": the server optimizer's
    state}); client_init(init) -> a never-seen client's state (local constants;
    default none); evaluation(r) -> each test client's model (@clients, by the
    model's parameter paths; default the server's params); warm_start(r) -> as the
    round returns, run once before the first round on r.cohort clients."""
    hparams = dict(hparams or {})

    def register(fn):
        if name in _registered:
            raise _lib.error(EINVAL, "algorithm '%s' is registered already" % name)
        keep = [name.encode(), summary.encode()]
        hp = (_lib.HparamDef * max(len(hparams), 1))()
        for i, (hname, (default, lo, hi, help_)) in enumerate(hparams.items()):
            keep += [hname.encode(), help_.encode()]
            hp[i].name, hp[i].value, hp[i].min, hp[i].max, hp[i].help = keep[-2], default, lo, hi, keep[-1]
        stateful = client_init is not None
        buf = ctypes.create_string_buffer(ctypes.sizeof(_lib.AlgorithmDef) + 256)
        d = _lib.AlgorithmDef.from_buffer(buf)
        d.name, d.summary, d.hparams, d.nhparams, d.one_pass = keep[0], keep[1], hp, len(hparams), one_pass
        shapes = {}  # the structures server_init and client_init last returned
        hooks = {"round": _round_hook(name, fn, stateful, "round", shapes)}  # C calls these: kept alive
        if server_init is not None:
            hooks["server_init"] = _server_init_hook(name, server_init, shapes)
        if stateful:
            hooks["client_init"] = _client_init_hook(name, client_init, shapes)
        if evaluation is not None:
            hooks["evaluation"] = _evaluation_hook(name, evaluation, shapes)
        if warm_start is not None:
            hooks["warm_start"] = _round_hook(name, warm_start, stateful, "warm start", shapes)
        for field, hook in hooks.items():
            setattr(d, field, hook)
        _lib.check(_L.fedc_algorithm_register(ctypes.addressof(buf)))
        _registered[name] = (buf, keep, hp, hooks, fn)
        return fn
    return register
