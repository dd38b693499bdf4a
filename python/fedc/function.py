"""@fedc.program: a Python function traced into a fedc program and run in C.

    @fedc.program(placements={"clients": 100})
    def round_(w, data): ...

Called on arrays, the function is traced once per signature (the structure,
dtypes, shapes and placements of its arguments; as jax.jit caches by shapes) into
a fedc.Program, which plans an executor once per cohort size and runs it. Called
on traced values (from another traced function, a map body, fedc.grad), it is
traced at those values' types and inlined, so programs compose.

Placements: an argument is @clients when `in_placements` says so, or, when it
does not, when its leading dimension is the cohort size of `placements`; other
arguments are @server in a program with placements and local in one without. A
@clients argument is an array of [clients, ...per-client shape].
"""

import inspect
import threading

import numpy as np

from . import _lib
from .errors import EINVAL
from .program import Program
from .tracing import Builder, Value, lift
from .tree import flatten, unflatten
from .types import TypeSpec, dtype_name


def trace(fn, arg_names, arg_trees, what="program", capturing=False, body=False):
    """Traces fn(*args) over inputs of the given TypeSpec trees, one per name.

    Returns (builder, outdef, out_names): the builder holds the finished program
    (the caller takes or discards it), outdef the structure of fn's result.
    """
    b = Builder(what, capturing, body)
    try:
        with b:
            args = []
            for name, spec_tree in zip(arg_names, arg_trees):
                leaves, td = flatten(spec_tree)
                vals = [b.input(path, spec) for path, spec in zip(td.paths(name), leaves)]
                args.append(unflatten(td, vals))
            out = fn(*args)
            leaves, outdef = flatten(out)
            names = [p or "out" for p in outdef.paths("")]
            for name, leaf in zip(names, leaves):
                b.output(name, lift(b, leaf))
            b.status()
    except BaseException:
        b.discard()
        raise
    return b, outdef, names


def inline(fn, args, arg_names=None):
    """fn(*args) for traced args: fn traced at their types, inlined into their program."""
    leaves, td = flatten(list(args))
    b = next(x.b for x in leaves if isinstance(x, Value))
    vals = [lift(b, x) for x in leaves]
    args = unflatten(td, vals)
    names = arg_names or ["a%d" % i for i in range(len(args))]
    specs = []
    for a in args:
        a_leaves, a_td = flatten(a)
        specs.append(unflatten(a_td, [v.spec for v in a_leaves]))
    with b:  # values that fn uses by closure are captured from b
        sub, outdef, _ = trace(fn, names, specs, "called program", capturing=True)
    try:
        n = _lib.lib.fedc_program_num_outputs(sub.ptr)
        results = (_lib.VALUE * max(n, 1))()
        vals += [outer for outer, _ in sub.captures]
        _lib.check(_lib.lib.fedc_program_inline(b._get(), sub.ptr, _lib.values([v.v for v in vals]),
                                                results))
    finally:
        sub.discard()
    return unflatten(outdef, [Value(b, results[i]) for i in range(n)])


def arg_names(fn, n):
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        params = []
    names = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return [names[i] if i < len(names) else "arg%d" % i for i in range(n)]


def leaf_spec(x):
    """The local TypeSpec of a concrete leaf; Python floats are f32 and ints i32 (JAX's rule)."""
    if isinstance(x, TypeSpec):
        return x
    if isinstance(x, np.generic):  # np.float64 is a float too: its dtype decides
        return TypeSpec(dtype_name(x.dtype), ())
    if isinstance(x, bool):
        return TypeSpec("bool", ())
    if isinstance(x, int):
        return TypeSpec("i32", ())
    if isinstance(x, float):
        return TypeSpec("f32", ())
    arr = np.asarray(x)
    return TypeSpec(dtype_name(arr.dtype), arr.shape)


def _leaf_key(x):
    if isinstance(x, np.ndarray):
        return (x.shape, x.dtype.char)
    if isinstance(x, np.generic):
        return ((), x.dtype.char)
    if isinstance(x, TypeSpec):
        return x
    return (type(x), np.shape(x)) if isinstance(x, (list, tuple)) else type(x)


class Function:
    """A traced Python function; see the module's comment."""

    def __init__(self, fn, placements=None, in_placements=None, threads=0):
        self.fn = fn
        self.__name__ = getattr(fn, "__name__", "program")
        self.__doc__ = getattr(fn, "__doc__", None)
        placements = dict(placements or {})
        if len(placements) > 1:
            raise ValueError("fedc has one placement of many values, the clients: placements "
                             "takes one name, not %s" % sorted(placements))
        self.federated = bool(placements) or bool(in_placements)
        self.clients_name = next(iter(placements), "clients")
        self.clients = next(iter(placements.values()), None)
        self.in_placements = in_placements
        self.threads = threads
        self._cache = {}
        self._names = {}  # number of arguments -> their names (inspect is slow)
        self._fast = {}   # (structure, leaf shapes and dtypes) -> _traced's entry
        self._lock = threading.Lock()

    def _placement(self, i, name):
        ip = self.in_placements
        if ip is None:
            return None
        p = ip.get(name) if isinstance(ip, dict) else ip[i] if i < len(ip) else None
        return "clients" if p == self.clients_name else p

    def _spec(self, x, placement):
        if isinstance(x, TypeSpec):
            return x if placement is None else x.at(placement)
        s = leaf_spec(x)
        if placement is None:
            n = self.clients
            placement = ("clients" if n is not None and s.shape and s.shape[0] == n else
                         "server" if self.federated else "local")
        if placement == "clients":
            if not s.shape:
                raise _lib.error(EINVAL, "%s: a @clients argument needs a leading axis of clients"
                                 % self.__name__)
            return TypeSpec(s.dtype, s.shape[1:], "clients")
        return s.at(placement)

    def _arg_names(self, n):
        names = self._names.get(n)
        if names is None:
            names = self._names[n] = arg_names(self.fn, n)
        return names

    def _signature(self, args):
        names = self._arg_names(len(args))
        trees = []
        for i, (name, a) in enumerate(zip(names, args)):
            leaves, td = flatten(a)
            pl = self._placement(i, name)
            trees.append(unflatten(td, [self._spec(x, pl) for x in leaves]))
        return names, trees

    def trace(self, *args):
        """The fedc.Program for arguments like these (arrays or TypeSpecs), cached."""
        return self._traced(args)[0]

    def _traced(self, args):
        names, trees = self._signature(args)
        flat = [flatten(t) for t in trees]
        key = tuple((td, tuple(leaves)) for leaves, td in flat)
        with self._lock:
            hit = self._cache.get(key)
        if hit is None:
            b, outdef, outs = trace(self.fn, names, trees)
            prog = Program(b.take())
            _lib.check(_lib.lib.fedc_program_dce(prog._get()))
            ins = [p for (leaves, td), n in zip(flat, names) for p in td.paths(n)]
            hit = (prog, outdef, outs, ins)
            with self._lock:
                hit = self._cache.setdefault(key, hit)
        return hit

    def __call__(self, *args, **kwargs):
        if kwargs:
            bound = inspect.signature(self.fn).bind(*args, **kwargs)
            args = bound.args
        leaves, td = flatten(list(args))
        if any(isinstance(x, Value) for x in leaves):
            return inline(self.fn, args, self._arg_names(len(args)))
        # The arguments' structure, shapes and dtypes find the program without making
        # TypeSpecs (the cache of _traced is by specs; this one by what numpy says).
        fast = (td, tuple(_leaf_key(x) for x in leaves))
        hit = self._fast.get(fast)
        if hit is None:
            hit = self._fast[fast] = self._traced(args)
        prog, outdef, outs, ins = hit
        inputs = {}
        for path, x in zip(ins, (x for x in leaves if not isinstance(x, TypeSpec))):
            inputs[path] = x
        results = prog.run(inputs, clients=self._cohort(prog, inputs), threads=self.threads)
        return unflatten(outdef, [results[n] for n in outs])

    def _cohort(self, prog, inputs):
        has_clients_input = any(s.placement == "clients" for n, s in prog._inputs or prog.inputs)
        return None if has_clients_input else self.clients

    def close(self):
        """Frees the traced programs and their executors."""
        with self._lock:
            cache, self._cache = self._cache, {}
            self._fast = {}
        for prog, *_ in cache.values():
            prog.close()


def program(fn=None, *, placements=None, in_placements=None, threads=0):
    """Decorator: @fedc.program, or @fedc.program(placements={"clients": n}, ...)."""
    if fn is None:
        return lambda f: Function(f, placements, in_placements, threads)
    return Function(fn, placements, in_placements, threads)


jit = program


def as_function(fn):
    """fn as a Function (keeping a Function's placements), for running on arrays."""
    return fn if isinstance(fn, Function) else Function(fn)


def python_fn(fn):
    return fn.fn if isinstance(fn, Function) else fn



def trace_program(fn, *args, placements=None, in_placements=None):
    """The fedc.Program of fn for arguments like args (arrays or TypeSpecs)."""
    return Function(python_fn(fn), placements, in_placements).trace(*args)
