"""libfedc.so, found and declared: every C function the package calls, in one place.

The library is looked for, in order, at $FEDC_LIBRARY, next to this package in a
source tree (../../build/libfedc.so, so PYTHONPATH=python works from a build), in
the lib directory that `make install` put the package under, in the lib
directories of sys.prefix, /usr/local and /usr, and by the system loader; libfedc_formats.so
(the TFF and FedJAX readers) is loaded from beside it when it is there. ctypes.CDLL releases the GIL around every call, so C runs
while other Python threads go on.
"""

import ctypes
import os
import sys
from ctypes import (POINTER, Structure, c_bool, c_char_p, c_double, c_float, c_int, c_int32,
                    c_int64, c_size_t, c_uint32, c_uint64, c_void_p)

from .errors import Error

# The C constants the package uses, by their C names (python/tests/test_abi.py checks
# every FEDC_* here against the headers).
FEDC_MAX_RANK = 6
FEDC_NONE = -1
FEDC_FEATURE_STRINGS = 1
VALUE = c_int32  # fedc_value


class Type(Structure):
    """struct fedc_type (types.h)."""
    _c_struct_ = "fedc_type"
    _fields_ = [("dtype", c_int), ("placement", c_int), ("rank", c_int),
                ("dims", c_int64 * FEDC_MAX_RANK)]


class ExecOptions(Structure):
    """struct fedc_exec_options (exec.h)."""
    _c_struct_ = "fedc_exec_options"
    _fields_ = [("reference_kernels", c_bool), ("clients", c_int), ("threads", c_int),
                ("check_finite", c_bool), ("on_client_failure", c_int),
                ("client_ids", POINTER(c_char_p)), ("profile", c_bool), ("mpi", c_bool),
                ("device", c_char_p),
                ("groups", c_int), ("group_sizes", POINTER(c_int))]


class Feature(Structure):
    _c_struct_ = "fedc_feature"
    _fields_ = [("name", c_char_p), ("kind", c_int), ("type", Type), ("data", c_void_p),
                ("offsets", POINTER(c_int64))]


class ClientData(Structure):
    _c_struct_ = "fedc_client_data"
    _fields_ = [("id", c_char_p), ("num_examples", c_int64), ("num_features", c_int),
                ("features", POINTER(Feature))]


class Batches(Structure):
    _c_struct_ = "fedc_batches"
    _fields_ = [("steps", c_int64), ("batch_size", c_int64), ("num_features", c_int),
                ("features", POINTER(Feature)), ("mask", POINTER(c_float))]



class Optimizer(Structure):
    """struct fedc_optimizer (nn.h)."""
    _c_struct_ = "fedc_optimizer"
    _fields_ = [("kind", c_int), ("learning_rate", c_double), ("momentum", c_double),
                ("nesterov", c_bool), ("b1", c_double), ("b2", c_double), ("eps", c_double),
                ("initial_accumulator", c_double), ("weight_decay", c_double)]


class Robust(Structure):
    """struct fedc_robust (robust.h)."""
    _c_struct_ = "fedc_robust"
    _fields_ = [("kind", c_int), ("beta", c_double), ("f", c_int), ("m", c_int), ("nu", c_double),
                ("iterations", c_int), ("tolerance", c_double), ("tau", c_double), ("memory_mb", c_int)]


class Attack(Structure):
    """struct fedc_attack (attack.h)."""
    _c_struct_ = "fedc_attack"
    _fields_ = [("kind", c_int), ("value", c_double), ("fraction", c_double)]


class Aggregation(Structure):
    """struct fedc_aggregation (aggregate.h)."""
    _c_struct_ = "fedc_aggregation"
    _fields_ = [("zero_norm", c_double), ("clip", c_double), ("noise_multiplier", c_double),
                ("adaptive", c_bool), ("target_quantile", c_double), ("clip_learning_rate", c_double),
                ("count_stddev", c_double), ("expected_clients", c_double),
                # compression (src/fl/compress.c): --compress uniform:BITS[,rotate]
                ("compress_bits", c_int), ("compress_rotate", c_bool),
                # secure sum (fedc/secure_sum.h): --secure-sum BITS [--secure-bound B]
                ("secure_sum_bits", c_int), ("secure_sum_bound", c_double),
                # a Byzantine-robust aggregator (fedc/robust.h): --aggregator SPEC
                ("robust", Robust),
                # Byzantine clients for evaluation (fedc/attack.h): --attack SPEC --attackers FRAC
                ("attack", Attack)]


class Algorithm(Structure):
    """struct fedc_algorithm (fl.h)."""
    _c_struct_ = "fedc_algorithm"
    _fields_ = [("def_", c_void_p), ("client_opt", Optimizer), ("server_opt", Optimizer),
                ("batch_size", c_int64), ("max_steps", c_int64), ("dropout", c_bool),
                ("weighting", c_int), ("hparam", c_double * 16), ("hparam_set", c_bool * 16),
                ("aggregation", Aggregation)]


class TrainResult(Structure):
    """struct fedc_train_result (fl.h)."""
    _c_struct_ = "fedc_train_result"
    _fields_ = [("rounds_run", c_int), ("already_complete", c_bool), ("dropped", c_int64),
                ("train_loss", c_double), ("test_loss", c_double), ("test_accuracy", c_double),
                ("accuracy_quantiles", c_double * 3), ("clients_evaluated", c_int64),
                ("seconds", c_double), ("examples_per_s", c_double)]


class HparamDef(Structure):
    """struct fedc_hparam_def (fl.h)."""
    _c_struct_ = "fedc_hparam_def"
    _fields_ = [("name", c_char_p), ("value", c_double), ("min", c_double), ("max", c_double),
                ("help", c_char_p)]


class AlgorithmDefHead(Structure):
    """The first fields of struct fedc_algorithm_def (fl.h): what listing reads."""
    _c_struct_ = "fedc_algorithm_def"
    _c_prefix_ = True
    _fields_ = [("name", c_char_p), ("summary", c_char_p), ("hparams", POINTER(HparamDef)),
                ("nhparams", c_int), ("one_pass", c_bool)]


class ModelOptions(Structure):
    """struct fedc_model_options (nn.h). Passed inside a larger zeroed buffer, so that
    fields a newer library appends read as zeros: their defaults."""
    _c_struct_ = "fedc_model_options"
    _fields_ = [("num_classes", c_int), ("input_height", c_int), ("input_width", c_int),
                ("input_channels", c_int), ("input_dim", c_int), ("hidden", c_int),
                ("layers", c_int), ("width", c_int), ("heads", c_int), ("context", c_int),
                ("sinusoidal_positions", c_bool), ("tied_embeddings", c_bool),
                ("sequence_length", c_int), ("mask_eos", c_bool), ("mask_oov", c_bool),
                ("frozen_batchnorm", c_bool)]


class ModelOutputs(Structure):
    """struct fedc_model_outputs (nn.h)."""
    _c_struct_ = "fedc_model_outputs"
    _fields_ = [("loss", VALUE), ("logits", VALUE), ("correct", VALUE), ("count", VALUE),
                ("example_loss", VALUE), ("example_correct", VALUE), ("example_count", VALUE),
                ("updates", c_void_p)]


class MlirOptions(Structure):
    """struct fedc_mlir_options (export.h)."""
    _c_struct_ = "fedc_mlir_options"
    _fields_ = [("clients", c_int), ("func_name", c_char_p), ("shard_clients", c_int),
                ("entry_main", c_bool), ("ninputs", c_int), ("input_names", POINTER(c_char_p)),
                ("input_data", POINTER(c_void_p)), ("groups", c_int), ("shard_groups", c_int)]


class Round(Structure):
    """struct fedc_round (fl.h): what a round builder gets."""
    _c_struct_ = "fedc_round"
    _fields_ = [("model", c_void_p), ("alg", c_void_p), ("p", c_void_p), ("server", c_void_p),
                ("client", c_void_p), ("data", c_void_p), ("cohort", c_int), ("group", c_void_p)]


ROUND_FN = ctypes.CFUNCTYPE(c_int, POINTER(Round))
# server_init(model, algorithm, program, params tree, fedc_tree **state)
SERVER_INIT_FN = ctypes.CFUNCTYPE(c_int, c_void_p, c_void_p, c_void_p, c_void_p, POINTER(c_void_p))
# client_init and group_init(model, algorithm, program, fedc_tree **state)
CLIENT_INIT_FN = ctypes.CFUNCTYPE(c_int, c_void_p, c_void_p, c_void_p, POINTER(c_void_p))


class AlgorithmDef(Structure):
    """struct fedc_algorithm_def (fl.h), for algorithms written in Python. Registered
    inside a larger zeroed buffer, so that hooks a newer library appends are NULL."""
    _c_struct_ = "fedc_algorithm_def"
    _fields_ = [("name", c_char_p), ("summary", c_char_p), ("hparams", POINTER(HparamDef)),
                ("nhparams", c_int), ("one_pass", c_bool), ("server_init", SERVER_INIT_FN),
                ("client_init", CLIENT_INIT_FN), ("round", ROUND_FN), ("evaluation", ROUND_FN),
                ("warm_start", ROUND_FN), ("grouped", c_bool), ("group_init", CLIENT_INIT_FN)]


ON_ROUND = ctypes.CFUNCTYPE(c_int, c_void_p, c_int, c_bool, POINTER(TrainResult))


class TrainConfig(Structure):
    """struct fedc_train_config (fl.h); fedc_train_config_size() checks the copy."""
    _c_struct_ = "fedc_train_config"
    _fields_ = [("data", c_char_p), ("test_data", c_char_p), ("holdout", c_double),
                ("format", c_int), ("task", c_char_p), ("client_domains", c_char_p),
                ("partition", c_char_p), ("num_clients", c_int64), ("model", c_char_p),
                ("vocab", c_char_p), ("vocab_size", c_int64), ("algorithm", Algorithm),
                ("epochs", c_int), ("steps", c_int64), ("rounds", c_int),
                ("clients_per_round", c_int), ("seed", c_uint64), ("threads", c_int),
                ("eval_every", c_int), ("eval_clients", c_int64), ("eval_batch_size", c_int64),
                ("eval_unpacked", c_bool), ("out_dir", c_char_p), ("checkpoint_every", c_int),
                ("resume", c_bool), ("strict", c_bool), ("quiet", c_bool), ("profile", c_bool),
                ("poisson", c_bool), ("sampling_rate", c_double), ("dp_delta", c_double), ("log", c_void_p),
                ("on_round", ON_ROUND), ("on_round_ctx", c_void_p),
                ("clock", c_char_p), ("round_deadline", c_double), ("over_select", c_double),
                ("replay", c_char_p),
                ("groups", c_int), ("groups_alpha", c_double), ("groups_file", c_char_p),
                ("groups_per_round", c_int), ("clients_per_group", c_int), ("rng", c_int),
                ("frozen_batchnorm", c_bool)]

def _candidates():
    env = os.environ.get("FEDC_LIBRARY")
    if env:
        return [env]  # an explicit choice is never second-guessed
    here = os.path.dirname(os.path.abspath(__file__))
    out = [os.path.join(here, "..", "..", "build", "libfedc.so"),
           # installed by make install: <prefix>/lib/python3.X/dist-packages/fedc
           os.path.join(here, "..", "..", "..", "libfedc.so"),
           os.path.join(here, "..", "..", "..", "..", "lib", "libfedc.so")]
    for prefix in (sys.prefix, "/usr/local", "/usr"):
        for lib in ("lib", "lib64", "lib/x86_64-linux-gnu", "lib/aarch64-linux-gnu"):
            out.append(os.path.join(prefix, lib, "libfedc.so"))
    out.append("libfedc.so.0")
    return out


def _load():
    tried = []
    for path in _candidates():
        if os.sep in path and not os.path.exists(path):
            tried.append(path + " (absent)")
            continue
        try:
            return ctypes.CDLL(path), os.path.abspath(path) if os.sep in path else path
        except OSError as e:
            tried.append("%s (%s)" % (path, e))
    raise ImportError("fedc: cannot load libfedc.so; build it (cmake --build build --target "
                      "fedc_shared) or set FEDC_LIBRARY. Tried: " + "; ".join(tried))


lib, path = _load()


class TensorEntry(Structure):
    _c_struct_ = "fedc_tensor_entry"
    _fields_ = [("name", c_char_p), ("type", Type), ("data", c_void_p)]


class OnnxOptions(Structure):
    _c_struct_ = "fedc_onnx_options"
    _fields_ = [("batch", c_int64), ("frozen", c_bool), ("batchnorm", c_int)]


class OnnxModel(Structure):
    _c_struct_ = "fedc_onnx_model"
    _fields_ = [("program", c_void_p), ("params", c_void_p), ("num_params", c_int),
                ("param_values", POINTER(TensorEntry)), ("opset", c_int64),
                ("param_batchnorm", POINTER(c_bool))]


# name: (restype, argtypes), as _SIGNATURES below, of what is called in libfedc_formats.so.
_FORMATS_SIGNATURES = {
    "fedc_formats_register": (None, []),  # formats.h
    "fedc_program_from_onnx": (c_int, [c_char_p, POINTER(OnnxOptions), POINTER(POINTER(OnnxModel))]),
    "fedc_onnx_model_destroy": (None, [POINTER(OnnxModel)]),
}


def _load_beside(stem, signatures):
    """lib<stem>.so beside libfedc.so, else lib<stem>.so.0 from the system loader, its
    functions given their signatures; (library or None, the names tried)."""
    here = os.path.dirname(path) if os.sep in path else ""
    tried = ([os.path.join(here, "lib%s.so" % stem)] if here else []) + ["lib%s.so.0" % stem]
    for name in tried:
        if os.sep in name and not os.path.exists(name):
            continue
        try:
            found = ctypes.CDLL(name)
        except OSError:
            continue
        for fn, (restype, argtypes) in signatures.items():
            getattr(found, fn).restype, getattr(found, fn).argtypes = restype, argtypes
        return found, tried
    return None, tried


def _load_formats():
    """libfedc_formats.so, when the build has it (FEDC_FORMATS): its TFF and FedJAX
    readers, registered into libfedc's table; None without it (opening such data then
    says which library is missing)."""
    formats, _ = _load_beside("fedc_formats", _FORMATS_SIGNATURES)
    if formats:
        formats.fedc_formats_register()
    return formats


formats = _load_formats()

# name: (restype, argtypes) of what is called in libfedc_deploy.so (deploy.h): the
# plans and their client_work, for fedc.flower.
_DEPLOY_SIGNATURES = {
    "fedc_plan_build": (c_int, [c_void_p, c_char_p]),
    "fedc_plan_read": (c_int, [c_char_p, POINTER(c_void_p)]),
    "fedc_plan_destroy": (None, [c_void_p]),
    "fedc_plan_hash": (c_char_p, [c_void_p]),
    "fedc_plan_worker_create": (c_int, [c_void_p, c_char_p, POINTER(c_void_p)]),
    "fedc_plan_worker_destroy": (None, [c_void_p]),
    "fedc_plan_worker_run": (c_int, [c_void_p, c_int64, c_int64, c_int, c_bool, c_void_p, c_size_t,
                                     POINTER(c_void_p), POINTER(c_size_t)]),
}


def load_deploy():
    """libfedc_deploy.so (a build with FEDC_DEPLOY); ImportError naming what was tried."""
    deploy, tried = _load_beside("fedc_deploy", _DEPLOY_SIGNATURES)
    if not deploy:
        raise ImportError("fedc: no libfedc_deploy (plans need a build with FEDC_DEPLOY=ON); tried " +
                          ", ".join(tried))
    return deploy


P = c_void_p       # fedc_program *, fedc_executor *: opaque handles
V = VALUE
PV = POINTER(VALUE)
PI64 = POINTER(c_int64)
PINT = POINTER(c_int)

# name: (restype, argtypes). The declarations of include/fedc/*.h, as ctypes sees them.
_SIGNATURES = {
    # core.h, types.h
    "fedc_status_str": (c_char_p, [c_int]),
    "fedc_errmsg": (c_char_p, []),
    "fedc_dtype_name": (c_char_p, [c_int]),
    # program.h: lifecycle and inspection
    "fedc_program_create": (c_int, [POINTER(P)]),
    "fedc_program_destroy": (None, [P]),
    "fedc_program_status": (c_int, [P]),
    "fedc_program_output": (c_int, [P, c_char_p, V]),
    "fedc_program_size": (c_int, [P]),
    "fedc_program_num_inputs": (c_int, [P]),
    "fedc_program_num_outputs": (c_int, [P]),
    "fedc_program_input": (V, [P, c_int]),
    "fedc_program_input_name": (c_char_p, [P, c_int]),
    "fedc_program_output_value": (V, [P, c_int]),
    "fedc_program_output_name": (c_char_p, [P, c_int]),
    "fedc_value_type": (Type, [P, V]),
    "fedc_value_op_name": (c_char_p, [P, V]),
    "fedc_program_verify": (c_int, [P]),
    "fedc_program_dce": (c_int, [P]),
    "fedc_program_inline": (c_int, [P, P, PV, PV]),
    "fedc_program_clone": (c_int, [P, POINTER(P)]),
    "fedc_program_to_string": (c_int, [P, POINTER(c_void_p)]),
    "fedc_program_parse_n": (c_int, [c_char_p, c_size_t, POINTER(P)]),
    "fedc_free": (None, [c_void_p]),
    # program.h: builders
    "fedc_input": (V, [P, c_char_p, Type]),
    "fedc_constant": (V, [P, Type, c_void_p]),
    "fedc_scalar": (V, [P, c_int, c_double]),
    "fedc_scalar_like": (V, [P, V, c_double]),
    "fedc_full": (V, [P, Type, c_double]),
    "fedc_iota": (V, [P, Type, c_int]),
    "fedc_select": (V, [P, V, V, V]),
    "fedc_pow": (V, [P, V, c_double]),
    "fedc_reduce_sum": (V, [P, V, PINT, c_int, c_bool]),
    "fedc_reduce_mean": (V, [P, V, PINT, c_int, c_bool]),
    "fedc_reduce_max": (V, [P, V, PINT, c_int, c_bool]),
    "fedc_argmax": (V, [P, V, c_int]),
    "fedc_reshape": (V, [P, V, c_int, PI64]),
    "fedc_broadcast_to": (V, [P, V, c_int, PI64]),
    "fedc_transpose": (V, [P, V, PINT]),
    "fedc_slice": (V, [P, V, PI64, PI64]),
    "fedc_concat": (V, [P, PV, c_int, c_int]),
    "fedc_pad": (V, [P, V, PI64, PI64]),
    "fedc_matmul": (V, [P, V, V, c_bool, c_bool]),
    "fedc_gather": (V, [P, V, V]),
    "fedc_scatter_add": (V, [P, V, V, c_int64]),
    "fedc_one_hot": (V, [P, V, c_int64, c_int]),
    "fedc_conv2d": (V, [P, V, V, c_int, c_int, c_int]),
    "fedc_max_pool2d": (V, [P, V, c_int, c_int, c_int, c_int, c_int]),
    "fedc_avg_pool2d": (V, [P, V, c_int, c_int, c_int, c_int, c_int]),
    "fedc_softmax_cross_entropy": (V, [P, V, V, V]),
    "fedc_softmax_cross_entropy_grad": (V, [P, V, V, V]),
    "fedc_dropout": (V, [P, V, V, c_double]),
    "fedc_random_normal": (V, [P, V, Type]),
    "fedc_random_uniform": (V, [P, V, Type]),
    "fedc_cast": (V, [P, V, c_int]),
    "fedc_conv2d_input_grad": (V, [P, V, V, POINTER(Type), c_int, c_int, PI64]),
    "fedc_conv2d_filter_grad": (V, [P, V, V, c_int, c_int, c_int, c_int, PI64]),
    "fedc_max_pool2d_grad": (V, [P, V, V, c_int, c_int, c_int, c_int, PI64]),
    "fedc_avg_pool2d_grad": (V, [P, V, POINTER(Type), c_int, c_int, c_int, c_int, PI64]),
    "fedc_lstm": (V, [P, V, V]),
    "fedc_lstm_grad": (V, [P, V, V, V]),
    "fedc_lstm_tangent": (V, [P, V, V, V]),
    "fedc_layer_norm": (V, [P, V, V, V, c_double]),
    "fedc_causal_attention": (V, [P, V, c_int]),
    "fedc_gelu_grad": (V, [P, V, V]),
    "fedc_layer_norm_grad": (V, [P, V, V, V, c_double]),
    "fedc_layer_norm_param_grad": (V, [P, V, V, c_double]),
    "fedc_causal_attention_grad": (V, [P, V, V, c_int]),
    # program.h: federated primitives
    "fedc_weighted_mean": (V, [P, V, V]),
    "fedc_weighted_mean_up": (V, [P, V, V]),
    "fedc_num_groups": (V, [P, c_int]),
    "fedc_group_size": (V, [P, c_int]),
    "fedc_map_groups": (c_int, [P, P, PV, c_int, PV]),
    "fedc_num_clients": (V, [P, c_int]),
    "fedc_map": (c_int, [P, P, PV, c_int, PV]),
    "fedc_fold": (c_int, [P, P, PV, c_int, PV, c_int, V, PV]),
    # ad.h
    "fedc_grad": (c_int, [P, c_char_p, POINTER(c_char_p), c_int, POINTER(P)]),
    "fedc_vjp": (c_int, [P, POINTER(c_char_p), c_int, POINTER(P)]),
    "fedc_jvp": (c_int, [P, POINTER(c_char_p), c_int, POINTER(P)]),
    # exec.h
    "fedc_device_name": (c_char_p, [c_int]),
    "fedc_executor_create": (c_int, [POINTER(P), P, POINTER(ExecOptions)]),
    "fedc_executor_destroy": (None, [P]),
    "fedc_executor_bind": (c_int, [P, c_char_p, c_void_p]),
    "fedc_executor_run": (c_int, [P]),
    "fedc_executor_output": (c_int, [P, c_char_p, POINTER(c_void_p), POINTER(Type)]),
    "fedc_executor_dropped": (c_int, [P, PINT, c_int]),
    "fedc_executor_set_absent": (c_int, [P, POINTER(ctypes.c_uint8)]),
    # fl.h: algorithms and the training job
    "fedc_algorithm_find": (c_void_p, [c_char_p]),
    "fedc_algorithm_count": (c_int, []),
    "fedc_algorithm_at": (c_void_p, [c_int]),
    "fedc_algorithm_set": (c_int, [POINTER(Algorithm), c_char_p, c_double]),
    "fedc_algorithm_hparam": (c_double, [POINTER(Algorithm), c_char_p]),
    "fedc_algorithm_server_init": (c_int, [c_void_p, POINTER(Algorithm), POINTER(c_void_p)]),
    "fedc_algorithm_client_init": (c_int, [c_void_p, POINTER(Algorithm), POINTER(c_void_p)]),
    "fedc_algorithm_round": (c_int, [c_void_p, POINTER(Algorithm), POINTER(c_void_p)]),
    "fedc_optimizer_parse": (c_int, [c_char_p, c_double, POINTER(Optimizer)]),
    "fedc_optimizer_name": (c_char_p, [c_int]),
    "fedc_optimizer_slots": (c_int, [POINTER(Optimizer)]),
    "fedc_optimizer_counts_steps": (c_bool, [POINTER(Optimizer)]),
    "fedc_optimizer_init_tree": (c_void_p, [POINTER(Optimizer), P, c_void_p]),
    "fedc_optimizer_step_tree": (c_int, [POINTER(Optimizer), P, V, c_void_p, c_void_p, c_void_p,
                                         POINTER(c_void_p), POINTER(c_void_p)]),
    "fedc_weighting_parse": (c_int, [c_char_p, POINTER(c_int)]),
    "fedc_aggregation_parse_adaptive": (c_int, [c_char_p, POINTER(Aggregation)]),
    "fedc_aggregation_parse_compress": (c_int, [c_char_p, POINTER(Aggregation)]),
    "fedc_aggregation_check": (c_int, [POINTER(Aggregation)]),
    "fedc_robust_parse": (c_int, [c_char_p, POINTER(Robust)]),
    "fedc_attack_parse": (c_int, [c_char_p, POINTER(Attack)]),
    "fedc_data_format_parse": (c_int, [c_char_p, POINTER(c_int)]),
    "fedc_train_defaults": (None, [POINTER(TrainConfig)]),
    "fedc_train": (c_int, [POINTER(TrainConfig), POINTER(TrainResult)]),
    "fedc_evaluate_checkpoint": (c_int, [POINTER(TrainConfig), c_char_p, POINTER(TrainResult)]),
    "fedc_train_config_size": (c_size_t, []),
    "fedc_train_result_size": (c_size_t, []),
    "fedc_algorithm_register": (c_int, [c_void_p]),
    # variadic: called with one "%s" argument only
    "fedc_program_fail": (V, [P, c_int, c_char_p, c_char_p]),
    "fedc_round_hparam": (c_double, [POINTER(Round), c_char_p]),
    "fedc_round_weight": (V, [POINTER(Round), V]),
    "fedc_round_finish": (c_int, [POINTER(Round), c_void_p, c_void_p, V, V]),
    "fedc_round_meta": (V, [POINTER(Round), c_char_p]),
    "fedc_round_aggregate": (c_void_p, [POINTER(Round), c_void_p, V]),
    "fedc_round_evaluate": (c_int, [POINTER(Round), c_void_p, c_void_p]),
    # tree.h
    "fedc_tree_new": (c_void_p, [P]),
    "fedc_tree_set": (c_int, [P, c_void_p, c_char_p, V]),
    "fedc_tree_size": (c_int, [c_void_p]),
    "fedc_tree_name": (c_char_p, [c_void_p, c_int]),
    "fedc_tree_value": (V, [c_void_p, c_int]),
    # nn.h: models by name
    "fedc_model_create": (c_int, [POINTER(P), c_char_p, c_void_p]),
    "fedc_model_destroy": (None, [P]),
    "fedc_model_name": (c_char_p, [P]),
    "fedc_model_num_params": (c_int, [P]),
    "fedc_model_size": (c_int64, [P]),
    "fedc_model_param_name": (c_char_p, [P, c_int]),
    "fedc_model_param_type": (Type, [P, c_int]),
    "fedc_model_param_offset": (c_int64, [P, c_int]),
    "fedc_model_input_type": (Type, [P, c_int64]),
    "fedc_model_label_type": (Type, [P, c_int64]),
    "fedc_model_num_classes": (c_int, [P]),
    "fedc_model_init": (c_int, [P, c_uint64, POINTER(c_float)]),
    "fedc_model_apply": (c_int, [P, P, PV, V, V, V, V, POINTER(ModelOutputs)]),
    # export.h
    "fedc_program_to_mlir": (c_int, [P, POINTER(MlirOptions), POINTER(c_void_p)]),
    "fedc_program_to_stablehlo": (c_int, [P, POINTER(MlirOptions), POINTER(c_void_p)]),
    # data.h
    "fedc_dataset_open": (c_int, [POINTER(P), c_char_p, c_int]),
    "fedc_dataset_destroy": (None, [P]),
    "fedc_dataset_format": (c_int, [P]),
    "fedc_dataset_num_clients": (c_int64, [P]),
    "fedc_dataset_total_examples": (c_int64, [P]),
    "fedc_dataset_client_id": (c_char_p, [P, c_int64]),
    "fedc_dataset_client_examples": (c_int64, [P, c_int64]),
    "fedc_dataset_find": (c_int, [P, c_char_p, PI64]),
    "fedc_dataset_client": (c_int, [P, c_int64, POINTER(POINTER(ClientData))]),
    "fedc_dataset_slice": (c_int, [P, c_int64, c_int64, POINTER(P)]),
    "fedc_dataset_holdout": (c_int, [P, c_double, POINTER(P), POINTER(P)]),
    "fedc_dataset_partition": (c_int, [P, PI64, c_int64, POINTER(P)]),
    "fedc_client_data_destroy": (None, [POINTER(ClientData)]),
    "fedc_batches_destroy": (None, [POINTER(Batches)]),
    "fedc_batch": (c_int, [POINTER(ClientData), c_int64, c_bool, POINTER(POINTER(Batches))]),
    "fedc_padded_batch": (c_int, [POINTER(ClientData), c_int64, c_int, POINTER(POINTER(Batches))]),
    "fedc_shuffle_repeat_batch": (c_int, [POINTER(ClientData), c_int64, c_int, c_int64, c_bool, c_uint64,
                                          c_uint32, c_uint32, POINTER(POINTER(Batches))]),
    "fedc_shuffle_repeat_batch_numpy": (c_int, [POINTER(ClientData), c_int64, c_int, c_int64, c_bool, c_uint32,
                                                POINTER(POINTER(Batches))]),
    "fedc_sample_clients": (c_int, [c_int64, c_int64, c_uint64, c_uint32, PI64]),
    "fedc_sample_clients_epochs": (c_int, [c_int64, c_int64, c_uint64, c_uint32, PI64]),
    "fedc_sample_clients_fedjax": (c_int, [c_int64, c_int64, c_uint32, c_uint32, PI64]),
    "fedc_partition_iid": (c_int, [c_int64, c_int64, c_uint64, PI64]),
    "fedc_partition_dirichlet": (c_int, [POINTER(c_int32), c_int64, c_int32, c_int64, c_double, c_uint64,
                                         PI64]),
    "fedc_partition_shards": (c_int, [POINTER(c_int32), c_int64, c_int64, c_int, c_uint64, PI64]),
    "fedc_partition_groups_dirichlet": (c_int, [c_int64, c_int, c_double, c_uint64, POINTER(c_int32)]),
    "fedc_train_client_groups": (c_int, [POINTER(TrainConfig), P, POINTER(c_int32), POINTER(c_int)]),
    "fedc_synthetic_fedprox": (c_int, [c_double, c_double, c_int64, c_uint64, POINTER(P)]),
    "fedc_synthetic_zipf": (c_int, [c_int64, c_int64, c_int64, c_int32, c_double, c_uint64, POINTER(P)]),
}

# The ops of one shape of signature, declared together: fedc_value f(p, a[, b]).
UNARY = ("neg exp log tanh sigmoid relu sqrt square log_softmax gelu broadcast sum mean broadcast_down sum_up "
         "mean_up").split()
BINARY = ("add sub mul div maximum minimum eq ne lt le gt ge").split()
for _name in UNARY:
    _SIGNATURES["fedc_" + _name] = (V, [P, V])
for _name in BINARY:
    _SIGNATURES["fedc_" + _name] = (V, [P, V, V])

for _name, (_res, _args) in _SIGNATURES.items():
    _f = getattr(lib, _name)
    _f.restype = _res
    _f.argtypes = _args


def error(status, message=None):
    """A fedc.Error for `status` with this thread's fedc_errmsg() (or `message`)."""
    if message is None:
        message = lib.fedc_errmsg().decode("utf-8", "replace")
    return Error(int(status), message)


def check(status):
    """Raises fedc.Error carrying fedc's message unless `status` is FEDC_OK."""
    if status:
        raise error(status)


def strings(names):
    """A const char *const[] of `names` (the bytes objects must outlive the call)."""
    arr = (c_char_p * max(len(names), 1))()
    for i, n in enumerate(names):
        arr[i] = n.encode() if isinstance(n, str) else n
    return arr


def values(vs):
    arr = (VALUE * max(len(vs), 1))()
    for i, v in enumerate(vs):
        arr[i] = v
    return arr


def int64s(xs):
    return (c_int64 * max(len(xs), 1))(*xs)


def ints(xs):
    return (c_int * max(len(xs), 1))(*xs)
