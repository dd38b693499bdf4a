"""fedc.models: the built-in models by name (nn.h), their parameters as numpy, and
their forward pass on traced values, so an algorithm written in Python trains them.

    m = fedc.models.Model("cnn")                 # FedJAX's EMNIST CNN
    params = m.init(seed=0)                      # {"conv1/w": array, ...}
    @fedc.program
    def loss(params, x, y, mask):
        return m.apply(params, x, y, mask)["loss"]
"""

import ctypes

import numpy as np

from . import _lib
from .ctree import put as _put
from .handle import Handle
from .tracing import Value, builder_of, lift
from .types import TypeSpec

_L = _lib.lib
_OPTION_NAMES = [name for name, _ in _lib.ModelOptions._fields_]


class Model(Handle):
    """A model of docs/models.md by name ("logistic", "dense", "cnn", "heart",
    "shakespeare_lstm", "stackoverflow_lstm", "transformer[:PRESET]"); options are
    fedc_model_options' fields (num_classes=10, hidden=100, ...)."""

    _destroy = "fedc_model_destroy"

    def __init__(self, name, **options):
        unknown = set(options) - set(_OPTION_NAMES)
        if unknown:
            raise TypeError("fedc.models.Model: no option %s (it has %s)"
                            % (", ".join(sorted(unknown)), ", ".join(_OPTION_NAMES)))
        buf = None
        if options:  # zeroed room past the struct: fields a newer fedc adds read as 0
            buf = ctypes.create_string_buffer(ctypes.sizeof(_lib.ModelOptions) + 256)
            opts = _lib.ModelOptions.from_buffer(buf)
            for k, v in options.items():
                setattr(opts, k, v)
        ptr = ctypes.c_void_p()
        _lib.check(_L.fedc_model_create(ctypes.byref(ptr), name.encode(), buf))
        super().__init__(ptr, "model")
        self._read()

    @classmethod
    def borrow(cls, ptr):
        """A view of a model C owns (a round's): never destroyed from Python."""
        m = cls.__new__(cls)
        Handle.__init__(m, ctypes.c_void_p(ptr), "model")
        m._destroy = None
        m._read()
        return m

    def _read(self):
        p = self._get()
        self.name = _L.fedc_model_name(p).decode()
        self.params = [(_L.fedc_model_param_name(p, i).decode(),
                        TypeSpec.from_c(_L.fedc_model_param_type(p, i)))
                       for i in range(_L.fedc_model_num_params(p))]
        self.num_classes = _L.fedc_model_num_classes(p)
        self.size = _L.fedc_model_size(p)

    def input_spec(self, batch):
        return TypeSpec.from_c(_L.fedc_model_input_type(self._get(), batch))

    def label_spec(self, batch):
        return TypeSpec.from_c(_L.fedc_model_label_type(self._get(), batch))

    def init(self, seed=0):
        """FedJAX's initialisers from the counter RNG at `seed`, as a nested dict by the
        parameters' paths ({"conv1": {"w": array, "b": array}, ...}: the leaf "conv1/w"
        is the tree path fedc names it by)."""
        flat = np.empty(self.size, np.float32)
        _lib.check(_L.fedc_model_init(self._get(), seed, flat.ctypes.data_as(ctypes.POINTER(ctypes.c_float))))
        p, out = self._get(), {}
        for i, (name, spec) in enumerate(self.params):
            off = _L.fedc_model_param_offset(p, i)
            n = int(np.prod(spec.shape, dtype=np.int64))
            _put(out, name, flat[off:off + n].reshape(spec.shape).copy())
        return out

    def _haiku_names(self):
        key = self.name
        if key == "stackoverflow_lstm" and "output/w" not in dict(self.params):
            key += " tied"
        if key not in HAIKU_NAMES:
            raise KeyError("%s has no FedJAX counterpart (FedJAX has %s)"
                           % (self.name, ", ".join(n for n in HAIKU_NAMES if " " not in n)))
        return HAIKU_NAMES[key]

    def from_haiku(self, params):
        """FedJAX's Haiku parameters of this model (its `model.init`'s dict) as fedc's
        nested dict, as init gives it: the same arrays, renamed (HAIKU_NAMES)."""
        return {layer: {ours: params[module][theirs] for ours, theirs in leaves.items()}
                for layer, (module, leaves) in self._haiku_names().items()}

    def to_haiku(self, params):
        """This model's parameters (a nested dict, as init gives it) as FedJAX's Haiku dict."""
        return {module: {theirs: params[layer][ours] for ours, theirs in leaves.items()}
                for layer, (module, leaves) in self._haiku_names().items()}

    def apply(self, params, x, y, mask, dropout_key=None):
        """The forward pass on one batch, traced: {"loss", "logits", "correct", "count",
        "example_loss", "example_correct", "example_count"} (fedc_model_outputs). params is a structure as init gives it (by path; any
        order); dropout_key, an i32[4] value, turns dropout on (training)."""
        leaves = [_get(params, n, self.name) for n, _ in self.params]
        b = builder_of(x, y, mask, *leaves)
        pv = [lift(b, v).v for v in leaves]
        key = _lib.FEDC_NONE if dropout_key is None else lift(b, np.asarray(dropout_key, np.int32)
                                                        if not isinstance(dropout_key, Value)
                                                        else dropout_key).v
        # room for fields a newer library appends to fedc_model_outputs (it writes them all)
        buf = ctypes.create_string_buffer(ctypes.sizeof(_lib.ModelOutputs) + 256)
        out = _lib.ModelOutputs.from_buffer(buf)
        _lib.check(_L.fedc_model_apply(self._get(), b._get(), _lib.values(pv), lift(b, x).v,
                                       lift(b, y).v, lift(b, mask).v, key, ctypes.byref(out)))
        return {k: Value(b, getattr(out, k)) for k, _ in _lib.ModelOutputs._fields_ if k != "updates"}


# fedc's parameter paths and the Haiku names FedJAX's models give them (fedjax/models/
# emnist.py, shakespeare.py, stackoverflow.py on dm-haiku 0.0.12): {model: {fedc layer:
# (Haiku module, {fedc leaf: Haiku leaf})}}. Shapes and layouts are the same (docs/models.md).
_LINEAR = {"w": "w", "b": "b"}
_EMBED = ("embed", {"w": "embeddings"})
HAIKU_NAMES = {
    "logistic": {"dense1": ("linear", _LINEAR)},
    "dense": {"dense1": ("linear", _LINEAR), "dense2": ("linear_1", _LINEAR),
              "dense3": ("linear_2", _LINEAR)},
    "cnn": {"conv1": ("conv_dropout_module/conv2_d", _LINEAR),
            "conv2": ("conv_dropout_module/conv2_d_1", _LINEAR),
            "dense1": ("conv_dropout_module/linear", _LINEAR),
            "dense2": ("conv_dropout_module/linear_1", _LINEAR)},
    "shakespeare_lstm": {"embed": _EMBED, "lstm1": ("lstm/linear", _LINEAR),
                         "lstm2": ("lstm_1/linear", _LINEAR), "output": ("linear", _LINEAR)},
    "stackoverflow_lstm": {"embed": _EMBED, "lstm1": ("lstm/linear", _LINEAR),
                           "project": ("linear", _LINEAR), "output": ("linear_1", _LINEAR)},
    # share_input_output_embeddings: the output is Embed^T and an hk.Bias
    "stackoverflow_lstm tied": {"embed": _EMBED, "lstm1": ("lstm/linear", _LINEAR),
                                "project": ("linear", _LINEAR), "output": ("bias", {"b": "b"})},
}


def _get(tree, path, model):
    node = tree
    for part in path.split("/"):
        if not isinstance(node, dict) or part not in node:
            raise KeyError("%s.apply: params have no '%s'" % (model, path))
        node = node[part]
    return node
