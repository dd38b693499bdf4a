"""fedc.optimizers: fedc's optimizers (nn.h, docs/optimizers.md) as builders of a
traced program, used as FedJAX's `fedjax.optimizers` are in its algorithms.

    opt = fedc.optimizers.adam(learning_rate=0.01)      # FedJAX's (optax's) defaults
    state = opt.init(params)                            # {"mu": like params, "nu": ..., "count"}
    state, params = opt.apply(grads, state, params)     # one step, FedJAX's order

Inside a traced function (a round, a map or fold body) init and apply add the
optimizer's ops to the program being traced: they are fedc_optimizer_init_tree and
fedc_optimizer_step_tree, the functions the library's own algorithms call, so a
step written in Python has the library's bits. On numpy arrays they run at once.
params and grads are structures (dicts, tuples, lists) of f32 or f64 arrays; the
state holds optax's slots, each a structure like params (trace: momentum; mu, nu:
adam and yogi; sum_of_squares: adagrad; nu: rmsprop), and a f32 "count" for the
optimizers that count steps. learning_rate may be a traced scalar (of the
parameters' dtype) for a hypergradient through the step.
"""

import ctypes

from . import _lib
from . import ctree
from .errors import EINVAL
from .tracing import Value, builder_of, current, lift
from .tree import flatten

_L = _lib.lib

NAMES = ("sgd", "momentum", "nesterov", "adam", "adagrad", "yogi", "rmsprop")
_FIELDS = ("momentum", "b1", "b2", "eps", "initial_accumulator", "weight_decay")
_READS = {"sgd": (), "momentum": ("momentum",), "nesterov": ("momentum",), "adam": ("b1", "b2", "eps"),
          "adagrad": ("initial_accumulator", "eps"), "yogi": ("b1", "b2", "eps", "initial_accumulator"),
          "rmsprop": ("b2", "eps", "initial_accumulator")}  # the settings each kind reads


class Optimizer:
    """One of fedc's optimizers with its settings (struct fedc_optimizer)."""

    def __init__(self, c_opt, learning_rate=None):
        self._c = _lib.Optimizer()
        ctypes.pointer(self._c)[0] = c_opt
        # a traced learning rate (a hypergradient's variable); None: the constant
        self._lr = learning_rate if isinstance(learning_rate, Value) else None

    @property
    def name(self):
        n = _L.fedc_optimizer_name(self._c.kind).decode()
        return "nesterov" if n == "momentum" and self._c.nesterov else n

    learning_rate = property(lambda self: self._lr if self._lr is not None else self._c.learning_rate)

    def settings(self):
        """{"name", "learning_rate", and the settings the kind reads}."""
        out = {"name": self.name, "learning_rate": self.learning_rate}
        out.update({f: getattr(self._c, f) for f in _READS[self.name] + ("weight_decay",)})
        return out

    def __repr__(self):
        return "fedc.optimizers.%s(%s)" % (self.name, ", ".join(
            "%s=%r" % kv for kv in self.settings().items() if kv[0] != "name"))

    @property
    def slots(self):
        return _L.fedc_optimizer_slots(ctypes.byref(self._c))

    @property
    def counts_steps(self):
        return bool(_L.fedc_optimizer_counts_steps(ctypes.byref(self._c)))

    def init(self, params):
        """The optimizer's state for params: its initial values, at params' placement."""
        leaves, td = flatten(params)
        if not self.slots and not self.counts_steps:
            return {}  # SGD keeps nothing
        if not any(isinstance(x, Value) for x in leaves) and current() is None:
            return _eager(self.init, params)
        b = builder_of(*leaves)
        t = _L.fedc_optimizer_init_tree(ctypes.byref(self._c), b._get(), ctree.to_c(b, params, "params"))
        if not t:
            b.status()
        return self._state(b, t, td)

    def apply(self, grads, state, params):
        """One step: (new state, new params), as FedJAX's Optimizer.apply returns them."""
        p_leaves, td = flatten(params)
        g_leaves, gtd = flatten(grads)
        if gtd != td:
            raise _lib.error(EINVAL, "%s.apply: grads and params differ in structure: %r and %r"
                             % (self.name, gtd, td))
        s_leaves, _ = flatten(state)
        every = p_leaves + g_leaves + s_leaves + ([self._lr] if self._lr is not None else [])
        if not any(isinstance(x, Value) for x in every) and current() is None:
            return _eager(self.apply, grads, state, params)
        b = builder_of(*every)
        lr = lift(b, self._lr).v if self._lr is not None else _lib.FEDC_NONE
        new_p, new_s = ctypes.c_void_p(), ctypes.c_void_p()
        _lib.check(_L.fedc_optimizer_step_tree(
            ctypes.byref(self._c), b._get(), lr, ctree.to_c(b, params, "params"),
            ctree.to_c(b, grads, "grads"), ctree.to_c(b, state or {}), ctypes.byref(new_p),
            ctypes.byref(new_s)))
        return self._state(b, new_s.value, td), ctree.like(b, new_p.value, td)

    def _state(self, b, t, td):
        """A C state tree as {slot: a structure like params, "count": f32[]}."""
        out, names = {}, set(n.split("/", 1)[0] for n, _ in ctree.leaves(b, t))
        for slot in sorted(names - {"count"}, key=["trace", "sum_of_squares", "mu", "nu"].index):
            out[slot] = ctree.like(b, t, td, slot + "/")
        if "count" in names:
            out["count"] = dict(ctree.leaves(b, t))["count"]
        return out


def _eager(method, *args):
    """method(*args) on concrete arrays: traced into a program of its own and run."""
    from .function import program
    return program(lambda *a: method(*a))(*args)


def create(name, learning_rate, **settings):
    """The optimizer called `name` ("sgd", "momentum", "nesterov", "adam", "adagrad",
    "yogi", "rmsprop"), FedJAX's defaults, then `settings` (momentum, b1, b2, eps,
    initial_accumulator, weight_decay) changed."""
    unknown = set(settings) - set(_FIELDS)
    if unknown:
        raise TypeError("fedc.optimizers.%s: no setting %s (they are %s)"
                        % (name, ", ".join(sorted(unknown)), ", ".join(_FIELDS)))
    c = _lib.Optimizer()
    lr = learning_rate if not isinstance(learning_rate, Value) else 0.0
    _lib.check(_L.fedc_optimizer_parse(str(name).encode(), float(lr), ctypes.byref(c)))
    for k, v in settings.items():
        setattr(c, k, float(v))
    return Optimizer(c, learning_rate)


def from_c(c_opt):
    """An Optimizer of a struct fedc_optimizer (a job's client or server optimizer)."""
    return Optimizer(c_opt)


def sgd(learning_rate, momentum=None, nesterov=False, weight_decay=0.0):
    """optax.sgd: plain SGD, or with momentum (heavy ball, or Nesterov's)."""
    if momentum is None:
        return create("sgd", learning_rate, weight_decay=weight_decay)
    return create("nesterov" if nesterov else "momentum", learning_rate, momentum=momentum,
                  weight_decay=weight_decay)


def momentum(learning_rate, momentum=0.9, weight_decay=0.0):
    return create("momentum", learning_rate, momentum=momentum, weight_decay=weight_decay)


def nesterov(learning_rate, momentum=0.9, weight_decay=0.0):
    return create("nesterov", learning_rate, momentum=momentum, weight_decay=weight_decay)


def adam(learning_rate, b1=0.9, b2=0.999, eps=1e-8, weight_decay=0.0):
    """optax.adam (optax.adamw with weight_decay)."""
    return create("adam", learning_rate, b1=b1, b2=b2, eps=eps, weight_decay=weight_decay)


def adagrad(learning_rate, initial_accumulator_value=0.1, eps=1e-6):
    """FedJAX's adagrad: optax.adagrad with its initial accumulator 0.1, eps 1e-6."""
    return create("adagrad", learning_rate, initial_accumulator=initial_accumulator_value, eps=eps)


def yogi(learning_rate, b1=0.9, b2=0.999, eps=1e-3, initial_accumulator_value=1e-6):
    """optax.yogi."""
    return create("yogi", learning_rate, b1=b1, b2=b2, eps=eps,
                  initial_accumulator=initial_accumulator_value)


def rmsprop(learning_rate, decay=0.9, eps=1e-8, initial_scale=0.0):
    """optax.rmsprop (eps inside the root, no momentum); decay is fedc's b2."""
    return create("rmsprop", learning_rate, b2=decay, eps=eps, initial_accumulator=initial_scale)
