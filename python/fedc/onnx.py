"""fedc.import_onnx: an ONNX model as a fedc Program (docs/onnx.md), through
libfedc_formats's fedc_program_from_onnx."""

import ctypes

import numpy as np

from . import _lib
from .errors import EUNSUPPORTED
from .program import Program
from .types import TypeSpec


def import_onnx(path, batch=1, frozen=False):
    """(program, params) for the ONNX model at `path` (opsets 13 to 18).

    The program's inputs are the graph's inputs, by name, then "params/<name>"
    for each float initializer; its outputs are the graph's outputs. `params`
    maps each initializer name to a numpy array of its values (PyTorch's
    state_dict names and shapes for torch.onnx.export's files). `batch` is the
    size of every symbolic dimension of the inputs; frozen=True makes the
    initializers constants of the program instead (params is then empty).
    An op fedc does not import raises fedc.Error naming the op, node and opset."""
    if _lib.formats is None:
        raise _lib.error(EUNSUPPORTED, "fedc.import_onnx needs libfedc_formats.so "
                         "(a build with FEDC_FORMATS=ON)")
    options = _lib.OnnxOptions(batch=int(batch), frozen=bool(frozen))
    model = ctypes.POINTER(_lib.OnnxModel)()
    _lib.check(_lib.formats.fedc_program_from_onnx(str(path).encode(), ctypes.byref(options),
                                                   ctypes.byref(model)))
    try:
        m = model.contents
        params = {}
        for i in range(m.num_params):
            e = m.param_values[i]
            spec = TypeSpec.from_c(e.type)
            n = int(np.prod(spec.shape, dtype=np.int64))
            raw = ctypes.string_at(e.data, n * spec.np_dtype.itemsize)
            params[e.name.decode()] = np.frombuffer(raw, dtype=spec.np_dtype).reshape(spec.shape).copy()
        out = ctypes.c_void_p()
        _lib.check(_lib.lib.fedc_program_clone(m.program, ctypes.byref(out)))
        return Program(out), params
    finally:
        _lib.formats.fedc_onnx_model_destroy(model)
