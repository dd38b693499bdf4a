"""fedc from Python: federated programs traced from Python functions, run in C.

    import fedc, numpy as np

    @fedc.program(placements={"clients": 100})
    def fraction_over(threshold, values):
        over = fedc.map(lambda t, v: fedc.cast(v > t, "f32"), (fedc.broadcast(threshold), values))
        return fedc.mean(over)

    fraction_over(np.float32(0.5), np.random.rand(100).astype(np.float32))

docs/python.md is the guide and the reference.
"""

from . import _lib
from .errors import (EINTERNAL, EINVAL, EIO, ENOMEM, ENONFINITE, ENOTFOUND, EPARSE, ERANGE,
                     ESHAPE, ETYPE, EUNSUPPORTED, Error)
from .program import Program, parse
from .executor import devices
from .types import TypeSpec, bool_, clients, f32, f64, groups, i32, server, u8

__version__ = "0.1.0"
library_path = _lib.path
from .tracing import Value
from .tree import flatten, tree_map, unflatten
from .function import Function, jit, program
from .function import trace_program as trace
from .federated import (broadcast, broadcast_down, fold, group_size, map, map_fn, mean, mean_up, num_clients,
                        num_groups, sum, sum_up, weighted_mean, weighted_mean_up)
from .ad import grad, jvp, value_and_grad, vjp
from .ops import *  # noqa: F401,F403  every op of program.h

from . import data  # noqa: E402  fedc.data: datasets, batching, sampling, partitioning
from .train import STOP, algorithms, client_groups, evaluate, round_programs, train  # noqa: E402
from . import models  # noqa: E402  fedc.models: the built-in models by name
from .onnx import import_onnx  # noqa: E402  ONNX models as programs (docs/onnx.md)
from . import optimizers  # noqa: E402  fedc.optimizers: fedc's optimizers as builders
from . import safetensors  # noqa: E402  fedc.safetensors: tensors to and from safetensors bytes
from . import plan  # noqa: E402  fedc.plan: plans, their phases and client_work (libfedc_deploy, loaded on use)
from .algorithm import Init, Round, algorithm  # noqa: E402
