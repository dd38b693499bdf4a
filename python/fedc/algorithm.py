"""Algorithms written in Python, registered with fedc's runner (fl.h).

    @fedc.algorithm("damped", summary="FedAvg, its server step times alpha",
                    hparams={"alpha": (1.0, 0.0, 10.0, "server step, times the mean delta")})
    def damped(r):
        ...  # r.server, r.data, r.model, r.hparam("alpha"): build the round
        return new_server, loss, examples

    fedc.train(data, algorithm="damped", set={"alpha": 0.5}, ...)

The function builds the round once, when the job plans its programs: Python runs to
trace it, and every round then runs in C. It gets a Round: `server`, the server state
as a nested dict of @server values ({"params": the model's parameters, "opt": the
server optimizer's state}); `data`, the cohort's batches as @clients values (x, y,
mask: [steps, batch, ...], steps: i32[] the real batches, key: i32[4] the dropout
stream); `model`, the job's fedc.models.Model; `hparam(name)`; `weight(examples)`
(each client's weight under the job's weighting). It returns (new server state, of
the same structure and types; loss, f32[]@clients, each client's mean loss;
examples, f32[]@clients, the examples each trained on).
"""

import ctypes

from . import _lib
from .errors import EINVAL
from .models import Model, _put
from .tracing import Builder, Value, lift
from .tree import flatten

_L = _lib.lib
_registered = {}  # name -> what C keeps pointers into: the def, its strings, the callback
pending = []      # exceptions raised by round builders, for fedc.train to raise


class Round:
    """What a Python round builder gets (see the module's comment)."""

    def __init__(self, r, builder):
        self._r = r
        c = r.contents
        self.server = _tree(builder, c.server)
        self.client = _tree(builder, c.client) if c.client else None
        self.data = _tree(builder, c.data)
        self.model = Model.borrow(c.model)
        self._b = builder

    def hparam(self, name):
        v = _L.fedc_round_hparam(self._r, name.encode())
        _lib.check(_L.fedc_program_status(self._b._get()))
        return v

    def weight(self, examples):
        return self._b.check(_L.fedc_round_weight(self._r, lift(self._b, examples).v))


def _tree(b, t):
    """A fedc_tree as a nested dict of Values, by its leaves' paths."""
    out = {}
    for i in range(_L.fedc_tree_size(t)):
        _put(out, _L.fedc_tree_name(t, i).decode(), Value(b, _L.fedc_tree_value(t, i)))
    return out


def _c_tree(b, structure):
    t = _L.fedc_tree_new(b._get())
    leaves, td = flatten(structure)
    for path, leaf in zip(td.paths(""), leaves):
        _lib.check(_L.fedc_tree_set(b._get(), t, path.encode(), lift(b, leaf).v))
    return t


def algorithm(name, summary="", hparams=None, one_pass=False):
    """Decorator: registers fn as the round builder of algorithm `name`."""
    hparams = dict(hparams or {})

    def register(fn):
        if name in _registered:
            raise _lib.error(EINVAL, "algorithm '%s' is registered already" % name)
        keep = [name.encode(), summary.encode()]
        hp = (_lib.HparamDef * max(len(hparams), 1))()
        for i, (hname, (default, lo, hi, help_)) in enumerate(hparams.items()):
            keep += [hname.encode(), help_.encode()]
            hp[i].name, hp[i].value, hp[i].min, hp[i].max, hp[i].help = keep[-2], default, lo, hi, keep[-1]
        def build(r):
            b = Builder.wrap(r.contents.p, "round of " + name)
            try:
                with b:
                    out = fn(Round(r, b))
                    if not (isinstance(out, tuple) and len(out) == 3):
                        raise TypeError("algorithm %s: the round returns (server state, loss, "
                                        "examples)" % name)
                    server, loss, examples = out
                    return _L.fedc_round_finish(r, _c_tree(b, server), None, lift(b, loss).v,
                                                lift(b, examples).v)
            except _lib.Error as e:
                return e.status
            except BaseException as e:  # noqa: B902 - raised again by fedc.train
                pending.append(e)
                msg = ("algorithm %s: %s: %s" % (name, type(e).__name__, e)).encode()
                _L.fedc_program_fail(r.contents.p, EINVAL, b"%s", msg)
                return EINVAL
            finally:
                b.ptr = None  # the program is C's: its values die with this call

        cb = _lib.ROUND_FN(build)
        buf = ctypes.create_string_buffer(ctypes.sizeof(_lib.AlgorithmDef) + 256)
        d = _lib.AlgorithmDef.from_buffer(buf)
        d.name, d.summary, d.hparams, d.nhparams, d.one_pass = keep[0], keep[1], hp, len(hparams), one_pass
        d.round = cb
        _lib.check(_L.fedc_algorithm_register(ctypes.addressof(buf)))
        _registered[name] = (buf, keep, hp, cb, fn)
        return fn
    return register
