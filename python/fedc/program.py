"""fedc.Program: a program (program.h) held from Python, printed, parsed and run.

Running plans an executor once per (cohort size, threads) and keeps it; a run binds
the arrays and calls C, which runs with the GIL released. Each executor serves one
run at a time, so concurrent runs from several threads take one executor each from
a small pool (made on demand, kept for the next calls).
"""

import ctypes
import threading

from . import _lib
from .errors import EINVAL
from .executor import Executor, as_input
from .handle import Handle
from .types import TypeSpec


class Program(Handle):
    _destroy = "fedc_program_destroy"

    def __init__(self, ptr):
        super().__init__(ptr, "program")
        self._pool_lock = threading.Lock()
        self._idle = {}  # (clients, threads, reference, finite, device, groups) -> [Executor]
        self._inputs = self._outputs = None

    # ------------------------------------------------------------ inspection --
    # A Program is never changed once made (the builders make new ones), so its
    # interface is read from C once.
    @property
    def inputs(self):
        """[(name, TypeSpec)] in order."""
        p, lib = self._get(), _lib.lib
        if self._inputs is None:
            self._inputs = [(lib.fedc_program_input_name(p, i).decode(),
                             TypeSpec.from_c(lib.fedc_value_type(p, lib.fedc_program_input(p, i))))
                            for i in range(lib.fedc_program_num_inputs(p))]
        return list(self._inputs)

    @property
    def outputs(self):
        p, lib = self._get(), _lib.lib
        if self._outputs is None:
            self._outputs = [(lib.fedc_program_output_name(p, i).decode(),
                              TypeSpec.from_c(lib.fedc_value_type(p, lib.fedc_program_output_value(p, i))))
                             for i in range(lib.fedc_program_num_outputs(p))]
        return list(self._outputs)

    def __len__(self):
        return _lib.lib.fedc_program_size(self._get())

    def text(self):
        """The program in fedc's text format (docs/text-format.md)."""
        s = ctypes.c_void_p()
        _lib.check(_lib.lib.fedc_program_to_string(self._get(), ctypes.byref(s)))
        try:
            return ctypes.string_at(s.value).decode("utf-8")
        finally:
            _lib.lib.fedc_free(s)

    def __str__(self):
        return self.text() if not self.closed else "<closed fedc.Program>"

    def mlir(self, clients=None, func_name=None):
        """The program as an MLIR module (docs/export.md); `clients` is required for a
        federated program. fedc.Error names an op that has no lowering."""
        opts = _lib.MlirOptions()
        opts.clients = clients or 0
        name = func_name.encode() if func_name else None
        opts.func_name = name
        return self._export(_lib.lib.fedc_program_to_mlir, opts)

    def stablehlo(self, clients=None, groups=None, shard_clients=0, shard_groups=0):
        """The program as StableHLO for XLA or IREE (docs/export.md); `clients` is
        required for a federated program, `groups` (their number, of equal size) for
        one with a groups level; shard_clients and shard_groups lay it out over a
        mesh of devices (mhlo.sharding)."""
        opts = _lib.MlirOptions()
        opts.clients, opts.groups = clients or 0, groups or 0
        opts.shard_clients, opts.shard_groups = shard_clients, shard_groups
        return self._export(_lib.lib.fedc_program_to_stablehlo, opts)

    def _export(self, to, opts):
        """The text that export function `to` writes with options opts."""
        s = ctypes.c_void_p()
        _lib.check(to(self._get(), ctypes.byref(opts), ctypes.byref(s)))
        try:
            return ctypes.string_at(s.value).decode("utf-8")
        finally:
            _lib.lib.fedc_free(s)

    def run_on(self, compiler, inputs=None, *, clients=None, groups=None, **named):
        """Runs the program's StableHLO export on `compiler`, "xla" (jaxlib) or "iree"
        (iree-base-compiler and -runtime), which this Python must have (scripts/
        install-peers puts them in .peers/jax); returns {output: array} as run() does,
        for comparing with it. `groups`: the sizes of the groups, all equal."""
        from . import compilers
        args = dict(inputs or {})
        args.update(named)
        specs = self.inputs
        missing = [n for n, _ in specs if n not in args]
        if missing:
            self._check_names(args)
        clients = _cohort(args, specs, clients)
        if groups is not None and len(set(int(g) for g in groups)) > 1:
            raise _lib.error(EINVAL, "run_on: the export's groups are of equal size, not %s" % list(groups))
        groups = tuple(int(g) for g in groups) if groups is not None else None
        text = self.stablehlo(clients, len(groups) if groups is not None else None)
        got = compilers.run(compiler, text, [as_input(n, args[n], spec, clients, groups) for n, spec in specs])
        return {name: value for (name, _), value in zip(self.outputs, got)}

    def verify(self):
        _lib.check(_lib.lib.fedc_program_verify(self._get()))

    def clone(self):
        out = ctypes.c_void_p()
        _lib.check(_lib.lib.fedc_program_clone(self._get(), ctypes.byref(out)))
        return Program(out)

    # --------------------------------------------------------------- running --
    def run(self, inputs=None, *, clients=None, threads=0, reference_kernels=False,
            check_finite=False, device=None, groups=None, absent=None, **named):
        """Runs the program: inputs by name (a dict, or keywords); returns {output: array}.

        A @clients input is an array of [clients, ...type]; the cohort's size comes
        from those inputs, or from `clients` for a program that has none. `device`
        names the compute device (fedc.devices(); None: "cpu", the fast kernels);
        reference_kernels=True is the older spelling of device="cpu-reference".
        `groups`: the sizes of the groups of the hierarchy (the clients ordered by
        group; None: one group); a @groups input is an array of [len(groups), ...type].
        `absent`: a truth value per client, true for a client left out of this run (its
        map bodies not run, every aggregate leaving it out as a dropped client;
        num_clients still counts it: fedc_executor_set_absent).
        """
        args = dict(inputs or {})
        args.update(named)
        if self._inputs is None or self._outputs is None:
            self.inputs, self.outputs  # noqa: B018  (read once, kept)
        specs = self._inputs
        if len(args) != len(specs) or any(name not in args for name, _ in specs):
            self._check_names(args)
        clients = _cohort(args, specs, clients)
        groups = tuple(int(g) for g in groups) if groups is not None else None
        arrays = [(name, as_input(name, args[name], spec, clients, groups)) for name, spec in specs]
        key = (clients, threads, reference_kernels, check_finite, device, groups)
        ex = self._acquire(key)
        try:
            for name, arr in arrays:
                ex.bind(name, arr)
            if absent is not None:
                ex.set_absent(absent)
            try:
                ex.run()
            finally:
                if absent is not None:
                    ex.set_absent(None)  # the pooled executor is reused by runs without
            return {name: ex.output(name, spec) for name, spec in self._outputs}
        finally:
            self._release(key, ex)

    def _check_names(self, args):
        names = [n for n, _ in self._inputs]
        for name in args:
            if name not in names:
                raise _lib.error(EINVAL, "program has no input '%s' (its inputs: %s)"
                                 % (name, ", ".join(names) or "none"))
        for name, spec in self._inputs:
            if name not in args:
                raise _lib.error(EINVAL, "input '%s' (%s) is not given" % (name, spec))

    __call__ = run

    def _acquire(self, key):
        with self._pool_lock:
            idle = self._idle.get(key)
            if idle:
                return idle.pop()
        clients, threads, ref, finite, device, groups = key
        return Executor(self._get(), clients, threads, ref, finite, device, groups)

    def _release(self, key, ex):
        ex._bound.clear()  # the caller's arrays are not kept past the run
        with self._pool_lock:
            if self.closed:
                ex.close()
            else:
                self._idle.setdefault(key, []).append(ex)

    def close(self):
        with self._pool_lock:
            idle, self._idle = self._idle, {}
        for exs in idle.values():
            for ex in exs:
                ex.close()
        super().close()


def _cohort(args, specs, clients):
    """The cohort's size: the leading extent shared by every @clients input."""
    for name, spec in specs:
        if spec.placement != "clients" or name not in args:
            continue
        shape = getattr(args[name], "shape", None)
        n = shape[0] if shape else None
        if n is None:
            raise _lib.error(EINVAL, "input '%s' is %s: give an array with one row per client"
                             % (name, spec))
        if clients is None:
            clients = int(n)
        elif n != clients:
            raise _lib.error(EINVAL, "input '%s' has %d clients, but the cohort has %d"
                             % (name, n, clients))
    return 0 if clients is None else int(clients)


def parse(text):
    """A Program from fedc's text format; fedc.Error (EPARSE) says line and column."""
    data = text.encode("utf-8") if isinstance(text, str) else bytes(text)
    out = ctypes.c_void_p()
    _lib.check(_lib.lib.fedc_program_parse_n(data, len(data), ctypes.byref(out)))
    return Program(out)
