"""fedc.train: the training job of `fedc train` from Python (fl.h), its metrics as
Python values, and a callback after every round.

    result = fedc.train("../shared/data/femnist-leaf/train", task="emnist", model="cnn",
                        algorithm="fedavg", rounds=20, clients_per_round=10,
                        on_round=lambda r: print(r["round"], r["train_loss"]))
    result["test_accuracy"], result["metrics"]  # the last evaluation; every metrics row

The options are `fedc train`'s (docs/training.md), with '_' for '-': client_opt,
client_lr, server_opt, server_lr, server_eps, weighting, set={"mu": 0.01} for
--set, dropout=False for --no-dropout; the aggregators of docs/privacy.md as
robust_zero, dp_clip, dp_noise, dp_adaptive ("on" or a SPEC; True for "on"),
dp_delta, sampling ("fixed", "poisson", "poisson:Q"), rng ("counter", or "fedjax"
for FedJAX's client sampling and shuffles, --rng fedjax), compress ("uniform:8",
"uniform:1,rotate"), secure_sum (BITS) and secure_bound; a robust aggregator as
aggregator ("median", "krum:f=2", ...), and for evaluation attack ("sign_flip",
"label_flip", ...) with attackers (the malicious fraction). on_round returns
fedc.STOP to end the job.
Training runs in C with the GIL released;
the callback runs on the calling thread between rounds, and an exception it
raises stops the job and is raised from fedc.train.
"""

import ctypes
import json
import math
import os

from . import _lib
from . import algorithm as _algorithm
from .errors import EINVAL, EINTERNAL
from .program import Program

_L = _lib.lib

if (ctypes.sizeof(_lib.TrainConfig) != _L.fedc_train_config_size()
        or ctypes.sizeof(_lib.TrainResult) != _L.fedc_train_result_size()):
    _MISMATCH = ("this fedc package's copy of fedc_train_config (%d bytes) or fedc_train_result "
                 "(%d) differs from %s's (%d, %d): use the package of the same fedc"
                 % (ctypes.sizeof(_lib.TrainConfig), ctypes.sizeof(_lib.TrainResult), _lib.path,
                    _L.fedc_train_config_size(), _L.fedc_train_result_size()))
else:
    _MISMATCH = None

_STRINGS = ("data", "test_data", "task", "client_domains", "partition", "model", "vocab", "out_dir",
            "groups_file")
_NUMBERS = ("holdout", "num_clients", "vocab_size", "epochs", "steps", "rounds", "clients_per_round",
            "seed", "threads", "eval_every", "eval_clients", "eval_batch_size", "checkpoint_every",
            "groups", "groups_alpha", "groups_per_round", "clients_per_group")
_FLAGS = ("resume", "strict", "quiet", "profile")
# fedc_rng_kind (fl.h) by name: rng="fedjax" is --rng fedjax
RNGS = {"counter": 0, "fedjax": 1}


class _Stop:
    def __repr__(self):
        return "fedc.STOP"


STOP = _Stop()  # on_round returns it to end the job after that round


def algorithms():
    """The known algorithms: {name: {"summary", "hparams": {name: (default, min, max, help)}}}."""
    out = {}
    for i in range(_L.fedc_algorithm_count()):
        d = _lib.AlgorithmDefHead.from_address(_L.fedc_algorithm_at(i))
        hp = {}
        for k in range(d.nhparams):
            h = d.hparams[k]
            hp[h.name.decode()] = (h.value, h.min, h.max, (h.help or b"").decode())
        out[d.name.decode()] = {"summary": (d.summary or b"").decode(), "hparams": hp}
    return out


def _result(r):
    figures = {name: getattr(r, name) for name, _ in _lib.TrainResult._fields_}
    figures["accuracy_quantiles"] = [_finite(q) for q in r.accuracy_quantiles]
    return {k: _finite(v) for k, v in figures.items()}


def _finite(v):
    return None if isinstance(v, float) and math.isnan(v) else v


def _config(data, options):
    c = _lib.TrainConfig()
    _L.fedc_train_defaults(ctypes.byref(c))
    keep = []  # the bytes C reads: alive until fedc_train returns

    def text(v):
        b = os.fsencode(v) if isinstance(v, (str, os.PathLike)) else bytes(v)
        keep.append(b)
        return b
    c.data = text(data)
    c.quiet = True  # Python callers have on_round; say quiet=False for the progress lines
    _algorithm_options(c.algorithm, options, text)
    if "format" in options:
        f = ctypes.c_int()
        _lib.check(_L.fedc_data_format_parse(text(options.pop("format")), ctypes.byref(f)))
        c.format = f.value
    _aggregation(c, options, text)
    rng = options.pop("rng", "counter")
    if rng not in RNGS:
        raise ValueError("fedc.train: rng must be 'counter' or 'fedjax', not %r" % (rng,))
    c.rng = RNGS[rng]
    for name in list(options):
        v = options.pop(name)
        if name in _STRINGS:
            setattr(c, name, None if v is None else text(v))
        elif name in _NUMBERS:
            setattr(c, name, v)
        elif name in _FLAGS:
            setattr(c, name, bool(v))
        else:
            raise TypeError("fedc.train: unknown option %r (the options of fedc train, with '_' "
                            "for '-': see docs/training.md)" % name)
    return c, keep


def _aggregation(c, options, text):
    """The aggregator options (`fedc train`'s --robust-zero ... --secure-bound), checked as
    the command line checks them."""
    a = c.algorithm.aggregation
    for name, field in (("robust_zero", "zero_norm"), ("dp_clip", "clip"), ("dp_noise", "noise_multiplier"),
                        ("secure_bound", "secure_sum_bound")):
        if name in options:
            setattr(a, field, float(options.pop(name)))
    if "secure_sum" in options:
        a.secure_sum_bits = int(options.pop("secure_sum"))
    if options.get("aggregator"):
        _lib.check(_L.fedc_robust_parse(text(options.pop("aggregator")), ctypes.byref(a.robust)))
    options.pop("aggregator", None)
    if "attackers" in options:
        a.attack.fraction = float(options.pop("attackers"))
    if options.get("attack"):
        _lib.check(_L.fedc_attack_parse(text(options.pop("attack")), ctypes.byref(a.attack)))
    options.pop("attack", None)
    if (a.attack.kind != 0) != (a.attack.fraction > 0):
        raise ValueError("fedc.train: attack and attackers (> 0) go together: the attack, and the fraction of "
                         "the clients that make it")
    if "dp_delta" in options:
        c.dp_delta = float(options.pop("dp_delta"))
    adaptive = options.pop("dp_adaptive", None)
    if adaptive:
        _lib.check(_L.fedc_aggregation_parse_adaptive(text("on" if adaptive is True else adaptive), ctypes.byref(a)))
    if options.get("compress"):
        _lib.check(_L.fedc_aggregation_parse_compress(text(options.pop("compress")), ctypes.byref(a)))
    options.pop("compress", None)
    sampling = options.pop("sampling", "fixed")
    if sampling == "poisson" or str(sampling).startswith("poisson:"):
        c.poisson = True
        c.sampling_rate = float(sampling[8:]) if sampling.startswith("poisson:") else 0.0
    elif sampling != "fixed":
        raise ValueError("fedc.train: sampling must be 'fixed', 'poisson' or 'poisson:Q', not %r" % (sampling,))
    if a.noise_multiplier > 0 and a.clip == 0:
        raise ValueError("fedc.train: dp_noise needs dp_clip or dp_adaptive (the noise's stddev is Z x C)")
    _lib.check(_L.fedc_aggregation_check(ctypes.byref(a)))


def _metrics(out_dir):
    path = os.path.join(out_dir, "metrics.jsonl")
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def _algorithm_options(a, options, text):
    """Fills fedc_algorithm a from (and pops) options' algorithm, client_opt,
    client_lr, server_opt, server_lr, server_eps, batch_size, dropout, weighting, set."""
    d = _L.fedc_algorithm_find(text(options.pop("algorithm", "fedavg")))
    if not d:
        raise _lib.error(EINVAL)
    a.def_ = d
    opt = {k: options.pop(k, v) for k, v in (("client_opt", "sgd"), ("client_lr", 0.1),
                                               ("server_opt", "sgd"), ("server_lr", 1.0))}
    _lib.check(_L.fedc_optimizer_parse(text(opt["client_opt"]), opt["client_lr"],
                                       ctypes.byref(a.client_opt)))
    _lib.check(_L.fedc_optimizer_parse(text(opt["server_opt"]), opt["server_lr"],
                                       ctypes.byref(a.server_opt)))
    if "server_eps" in options:
        a.server_opt.eps = float(options.pop("server_eps"))
    if "batch_size" in options:
        a.batch_size = int(options.pop("batch_size"))
    if "dropout" in options:
        a.dropout = bool(options.pop("dropout"))
    if "weighting" in options:
        w = ctypes.c_int()
        _lib.check(_L.fedc_weighting_parse(text(options.pop("weighting")), ctypes.byref(w)))
        a.weighting = w.value
    for name, value in dict(options.pop("set", {}) or {}).items():
        _lib.check(_L.fedc_algorithm_set(ctypes.byref(a), text(name), float(value)))


def round_programs(model, steps, **options):
    """The programs `fedc train` runs for an algorithm (fl.h's interface) on `model` (a
    fedc.models.Model), for cohorts of `steps` batches each: {"server_init", "client_init"
    (None for an algorithm without client state), "round"} as fedc.Programs. The options
    are train's that shape a round: algorithm (default "fedavg"), client_opt, client_lr,
    server_opt, server_lr, server_eps, batch_size, dropout, weighting, set. So a round of
    the library's algorithm runs on batches given from Python."""
    c = _lib.TrainConfig()
    _L.fedc_train_defaults(ctypes.byref(c))
    a = c.algorithm
    _algorithm_options(a, options, lambda v: v.encode())
    if options:
        raise TypeError("fedc.round_programs: unknown option %r" % sorted(options)[0])
    a.max_steps = int(steps)
    out = {}
    for key, fn in (("server_init", _L.fedc_algorithm_server_init),
                    ("client_init", _L.fedc_algorithm_client_init), ("round", _L.fedc_algorithm_round)):
        ptr = ctypes.c_void_p()
        _lib.check(fn(model._get(), ctypes.byref(a), ctypes.byref(ptr)))
        out[key] = Program(ptr) if ptr.value else None
    return out


def client_groups(dataset, **options):
    """The groups of a fedc.data.Dataset's clients as fedc.train assigns them with the
    same options (groups, groups_alpha with seed, groups_file): (each client's group as
    a list, the number of groups); (None, 0) without groups."""
    c, keep = _config("", options)
    n = len(dataset)
    out = (ctypes.c_int32 * max(n, 1))()
    groups = ctypes.c_int()
    _lib.check(_L.fedc_train_client_groups(ctypes.byref(c), dataset._get(), out, ctypes.byref(groups)))
    del keep
    return (list(out[:n]) if groups.value else None), groups.value


def train(data, *, on_round=None, **options):
    """Runs fedc's training job on `data` (a path, or synthetic:zipf:...); returns its
    result as a dict (fedc_train_result's fields; None for a figure never measured)
    with "metrics": metrics.jsonl's rows. on_round(report) is called after every
    round with {"round", "evaluated", and the result's fields so far}; returning
    fedc.STOP stops the job after that round (raising stops it too, and is
    re-raised). Any other return value is ignored."""
    if _MISMATCH:
        raise _lib.error(EINTERNAL, _MISMATCH)
    c, keep = _config(data, dict(options))
    failure = []

    def report(_ctx, rnd, evaluated, so_far):
        try:
            r = _result(so_far.contents)
            r.update(round=rnd, evaluated=bool(evaluated))
            if on_round(r) is STOP:
                failure.append(StopIteration)
                return EINVAL
            return 0
        except BaseException as e:  # noqa: B902 - re-raised from train below
            failure.append(e)
            return EINVAL
    if on_round is not None:
        cb = _lib.ON_ROUND(report)
        keep.append(cb)
        c.on_round = cb
    res = _lib.TrainResult()
    del _algorithm.pending[:]
    st = _L.fedc_train(ctypes.byref(c), ctypes.byref(res))
    if _algorithm.pending:  # a round written in Python failed while it was built
        raise _algorithm.pending.pop()
    if failure and failure[0] is not StopIteration:
        raise failure[0]
    if st and not failure:
        raise _lib.error(st)
    out = _result(res)
    out["stopped"] = bool(failure)
    out["metrics"] = _metrics(c.out_dir.decode())
    return out


def evaluate(checkpoint, data, **options):
    """`fedc eval`: the model in `checkpoint` (a safetensors file holding its parameters
    by name, as fedc train's checkpoints do) evaluated on every client of `data` (a test
    split), with fedc train's options for the task and model (task, model, vocab,
    eval_batch_size, ...): {"test_loss", "test_accuracy", "accuracy_quantiles",
    "clients_evaluated"}, fedc train's evaluation of the same parameters bit for bit."""
    if _MISMATCH:
        raise _lib.error(EINTERNAL, _MISMATCH)
    c, keep = _config(data, dict(options))
    res = _lib.TrainResult()
    _lib.check(_L.fedc_evaluate_checkpoint(ctypes.byref(c), os.fsencode(checkpoint), ctypes.byref(res)))
    out = _result(res)
    return {k: out[k] for k in ("test_loss", "test_accuracy", "accuracy_quantiles", "clients_evaluated")}
