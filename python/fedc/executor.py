"""Running a program on numpy arrays (exec.h).

Inputs are bound without a copy when the array already is what C reads: the
input's dtype, C order, aligned. Otherwise a Fortran-ordered or strided array is
copied into C order, an array of another dtype is converted when numpy can do it
without losing anything (np.can_cast 'safe': i32 -> f64, f32 -> f64, bool -> i32),
and anything else is refused with fedc.Error naming the input and both types.
Outputs are copied into arrays that own their memory: the executor reuses its
buffers on the next run.
"""

import ctypes

import numpy as np

from . import _lib
from .errors import EINVAL, ESHAPE, ETYPE
from .handle import Handle
from .types import TypeSpec


def _extent(spec, clients, groups):
    """The leading extent of a value of `spec`: clients, groups, or none."""
    if spec.placement == "clients":
        return (clients,)
    if spec.placement == "groups":
        return (len(groups) if groups else 1,)
    return ()


def as_input(name, x, spec, clients, groups=None):
    """`x` as a C-ordered array of `spec` (and `clients` of them for @clients, one
    per group for @groups)."""
    want = spec.np_dtype
    shape = _extent(spec, clients, groups) + spec.shape
    if not isinstance(x, np.ndarray):
        try:
            x = np.asarray(x, dtype=want)  # Python scalars and lists take the input's dtype
        except (TypeError, ValueError) as e:
            raise _lib.error(ETYPE, "input '%s': cannot read %r as %s: %s"
                             % (name, type(x).__name__, spec, e)) from None
    if x.dtype != want:
        if not np.can_cast(x.dtype, want, "safe"):
            raise _lib.error(ETYPE, "input '%s' is %s: expected %s, got a %s array (convert it "
                             "with .astype(np.%s))" % (name, spec, want, x.dtype, want))
        x = x.astype(want)
    if x.shape != shape:
        what = "%d clients x %s" % (clients, spec) if spec.placement == "clients" else str(spec)
        raise _lib.error(ESHAPE, "input '%s' is %s: expected shape %s, got %s"
                         % (name, what, shape, x.shape))
    if not (x.flags.c_contiguous and x.flags.aligned):
        x = np.array(x, order="C")
    return x


def devices():
    """The names of the compute devices a program can run on (device=), the default first."""
    names = []
    while True:
        name = _lib.lib.fedc_device_name(len(names))
        if name is None:
            return names
        names.append(name.decode())


class Executor(Handle):
    """One planned executor of a program for one cohort size."""

    _destroy = "fedc_executor_destroy"

    def __init__(self, program_ptr, clients=0, threads=0, reference_kernels=False,
                 check_finite=False, device=None, groups=None):
        opts = _lib.ExecOptions()
        opts.clients = clients
        opts.threads = threads
        opts.reference_kernels = reference_kernels  # deprecated: device="cpu-reference"
        opts.check_finite = check_finite
        opts.device = device.encode() if device is not None else None
        if groups:
            sizes = (ctypes.c_int * len(groups))(*groups)  # read at create only
            opts.groups = len(groups)
            opts.group_sizes = sizes
        ptr = ctypes.c_void_p()
        _lib.check(_lib.lib.fedc_executor_create(ctypes.byref(ptr), program_ptr,
                                                 ctypes.byref(opts)))
        super().__init__(ptr, "executor")
        self.clients = clients
        self.groups = groups
        self._bound = {}  # name -> the array C reads: kept alive while bound

    def bind(self, name, arr):
        _lib.check(_lib.lib.fedc_executor_bind(self._get(), name.encode(), arr.ctypes.data))
        self._bound[name] = arr

    def set_absent(self, absent):
        """Marks the clients absent from the next runs (absent[i] true; None: none): their
        map bodies do not run and every aggregate leaves them out (exec.h)."""
        mask = None
        if absent is not None:
            if len(absent) != self.clients:
                raise _lib.error(EINVAL, "absent has %d entries for a cohort of %d clients" % (len(absent), self.clients))
            mask = (ctypes.c_uint8 * self.clients)(*(1 if a else 0 for a in absent))  # read during the call only
        _lib.check(_lib.lib.fedc_executor_set_absent(self._get(), mask))

    def run(self):
        _lib.check(_lib.lib.fedc_executor_run(self._get()))

    def output(self, name, spec=None):
        """A copy of output `name` of the last run, as an array that owns its memory
        (`spec`: its type, when the caller knows it)."""
        data = ctypes.c_void_p()
        t = _lib.Type() if spec is None else None
        _lib.check(_lib.lib.fedc_executor_output(self._get(), name.encode(), ctypes.byref(data),
                                                 ctypes.byref(t) if t is not None else None))
        spec = spec or TypeSpec.from_c(t)
        shape = _extent(spec, self.clients, self.groups) + spec.shape
        out = np.empty(shape, dtype=spec.np_dtype)
        if out.nbytes:
            ctypes.memmove(out.ctypes.data, data.value, out.nbytes)
        return out

    def dropped(self):
        n = _lib.lib.fedc_executor_dropped(self._get(), None, 0)
        buf = (ctypes.c_int * max(n, 1))()
        _lib.lib.fedc_executor_dropped(self._get(), buf, n)
        return list(buf[:n])
