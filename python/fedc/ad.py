"""Derivatives: fedc.grad, value_and_grad, vjp and jvp (ad.h), as JAX spells them.

Each traces the function at its arguments' types into a program of its own,
differentiates that program in C (fedc_grad, fedc_vjp, fedc_jvp: program
transforms that go through broadcast, sum, mean, weighted_mean, map and fold),
and inlines the derived program where it is called. Under a trace that is all;
called on arrays, the same is traced as a program of its own and run, so
fedc.grad(f)(w, data) returns arrays. Only floating-point values have
derivatives: differentiating with respect to an integer value is an error.
"""

import ctypes
import functools

from . import _lib
from .errors import ETYPE
from .function import Function, arg_names, as_function, python_fn, trace
from .tracing import Value, lift
from .tree import flatten, unflatten
from .types import TypeSpec

_L = _lib.lib


def _traced_args(args):
    leaves = flatten(list(args))[0]
    return any(isinstance(x, Value) for x in leaves)


def _concrete(fun, traced, args, placements=None):
    """Runs `traced` (a function of traced values) on arrays, with fun's placements
    (or `placements`, one per argument: None infers it)."""
    f = fun if isinstance(fun, Function) else None
    g = Function(traced, placements=({f.clients_name: f.clients} if f and f.clients else None),
                 in_placements=placements or (f.in_placements if f else None),
                 threads=f.threads if f else 0)
    try:
        return g(*args)
    finally:
        g.close()


def _placements_of(fun, args):
    """The placement fun gives each of args (that of its first leaf), or None."""
    if not isinstance(fun, Function):
        return None
    _, trees = fun._signature(args)
    out = []
    for t in trees:
        leaves = flatten(t)[0]
        out.append(leaves[0].placement if leaves else None)
    return tuple(out)


class _Derived:
    """fn traced at args' types, a transform of it, and the values to inline it with."""

    def __init__(self, fn, args):
        leaves, self.td = flatten(list(args))
        self.b = next(x.b for x in leaves if isinstance(x, Value))
        self.vals = [lift(self.b, x) for x in leaves]
        self.args = unflatten(self.td, self.vals)
        names = arg_names(fn, len(self.args))
        specs = []
        self.paths = []
        for name, a in zip(names, self.args):
            a_leaves, a_td = flatten(a)
            specs.append(unflatten(a_td, [v.spec for v in a_leaves]))
            self.paths.append(a_td.paths(name))
        with self.b:  # values that fn uses by closure are captured from b
            self.sub, self.outdef, self.out_names = trace(fn, names, specs,
                                                          "differentiated program", capturing=True)
        # The captured values are inputs too, after the arguments: inlined with them.
        self.vals += [outer for outer, _ in self.sub.captures]

    def out_specs(self):
        p = self.sub.ptr
        return [TypeSpec.from_c(_L.fedc_value_type(p, _L.fedc_program_output_value(p, i)))
                for i in range(_L.fedc_program_num_outputs(p))]

    def transform(self, cfun, *extra):
        out = ctypes.c_void_p()
        try:
            _lib.check(cfun(self.sub.ptr, *extra, ctypes.byref(out)))
        finally:
            self.sub.discard()
        return out

    def inline(self, prog, extra_vals=()):
        try:
            n = _L.fedc_program_num_outputs(prog)
            results = (_lib.VALUE * max(n, 1))()
            vals = [v.v for v in self.vals] + [v.v for v in extra_vals]
            _lib.check(_L.fedc_program_inline(self.b._get(), prog, _lib.values(vals), results))
        finally:
            _L.fedc_program_destroy(prog)
        return [Value(self.b, results[i]) for i in range(n)]


def _float_paths(paths, vals, what):
    for p, v in zip(paths, vals):
        if v.dtype not in ("f32", "f64"):
            raise _lib.error(ETYPE, "%s: '%s' is %s: only floating-point values have derivatives"
                             % (what, p, v.spec))
    return paths


def _wrt(d, argnums, what):
    """The names of the leaves of args[argnums], and their structures."""
    nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    names, defs = [], []
    for i in nums:
        if not 0 <= i < len(d.args):
            raise ValueError("%s: argnums %d is out of range for %d arguments" % (what, i, len(d.args)))
        leaves, td = flatten(d.args[i])
        names += _float_paths(d.paths[i], leaves, what)
        defs.append((td, len(leaves)))
    return nums, names, defs


def value_and_grad(fun, argnums=0, has_aux=False):
    """(value, gradient) of a function with a scalar floating-point result (or
    (value, aux) when has_aux), with respect to the arguments at argnums."""
    fn = python_fn(fun)

    @functools.wraps(fn)
    def vg(*args):
        if not _traced_args(args):
            return _concrete(fun, vg, args)
        d = _Derived(fn, args)
        nouts = len(d.out_names)
        of = d.out_names[0] if has_aux else (d.out_names[0] if nouts == 1 else None)
        if of is None:
            d.sub.discard()
            raise TypeError("grad: the function must return one scalar (or (scalar, aux) with "
                            "has_aux=True), not %d values" % nouts)
        nums, names, defs = _wrt(d, argnums, "grad")
        g = d.transform(_L.fedc_grad, of.encode(), _lib.strings(names), len(names))
        results = d.inline(g)
        outs, grads = results[:nouts], results[nouts:]
        value = unflatten(d.outdef, outs)
        split, k = [], 0
        for td, n in defs:
            split.append(unflatten(td, grads[k:k + n]))
            k += n
        grad_val = split[0] if isinstance(argnums, int) else tuple(split)
        return (value, grad_val)

    return vg


def grad(fun, argnums=0, has_aux=False):
    """The gradient of a function with a scalar floating-point result, as jax.grad."""
    vg = value_and_grad(fun, argnums, has_aux)

    @functools.wraps(python_fn(fun))
    def g(*args):
        if not _traced_args(args):
            return _concrete(fun, g, args)
        value, gr = vg(*args)
        return (gr, value[1]) if has_aux else gr
    return g


def vjp(fun, *primals):
    """(out, vjp_fn), as jax.vjp: vjp_fn(cotangent of out) is the tuple of the
    primals' cotangents. On arrays both parts run programs of their own."""
    fn = python_fn(fun)
    if not _traced_args(primals):
        out = as_function(fun)(*primals) if isinstance(fun, Function) else _concrete(fun, fn, primals)

        def vjp_arrays(ct):
            pl = _placements_of(fun, primals)
            return _concrete(fun, lambda *a: vjp(fn, *a[:-1])[1](a[-1]), list(primals) + [ct],
                             pl and pl + (None,))
        return out, vjp_arrays
    d = _Derived(fn, primals)
    out_specs = d.out_specs()
    float_outs = [i for i, s in enumerate(out_specs) if s.dtype in ("f32", "f64")]
    names = [p for paths in d.paths for p in paths]
    wrt = [p for p, v in zip(names, d.vals) if v.dtype in ("f32", "f64")]
    prog = d.transform(_L.fedc_vjp, _lib.strings(wrt), len(wrt))
    nouts = len(d.out_names)
    # The forward outputs, from the vjp program itself inlined with zero cotangents,
    # would cost a backward pass: inline the forward once more instead.
    out = _forward(fn, primals)
    out_leaves = flatten(out)[0]

    def vjp_fn(ct):
        ct_leaves, ct_td = flatten(ct)
        if ct_td != d.outdef:
            raise ValueError("vjp: the cotangent has structure %r; the output has %r" % (ct_td, d.outdef))
        cts = [lift(d.b, ct_leaves[i], out_leaves[i]) for i in float_outs]
        clone = ctypes.c_void_p()
        _lib.check(_L.fedc_program_clone(prog, ctypes.byref(clone)))
        results = d.inline(clone, cts)[nouts:]
        by_name = dict(zip(wrt, results))
        grads = [by_name.get(p) for p in names]  # None for integer primals
        return tuple(unflatten(d.td, grads))

    return out, _Keep(vjp_fn, prog)


def _forward(fn, args):
    from .function import inline
    return inline(fn, args, arg_names(fn, len(args)))


class _Keep:
    """vjp_fn, owning the vjp program until it is collected."""

    def __init__(self, fn, prog):
        self.fn, self.prog = fn, prog

    def __call__(self, ct):
        return self.fn(ct)

    def __del__(self):
        try:
            _L.fedc_program_destroy(self.prog)
        except Exception:
            pass


def jvp(fun, primals, tangents):
    """(out, tangent of out), as jax.jvp: primals and tangents are tuples of the
    same structure; integer outputs have tangent None."""
    fn = python_fn(fun)
    primals, tangents = tuple(primals), tuple(tangents)
    if not _traced_args(primals + tangents):
        pl = _placements_of(fun, primals)
        return _concrete(fun, lambda *a: jvp(fn, a[:len(primals)], a[len(primals):]),
                         list(primals) + list(tangents), pl and pl + pl)
    d = _Derived(fn, primals)
    t_leaves, t_td = flatten(list(tangents))
    if t_td != d.td:
        d.sub.discard()
        raise ValueError("jvp: tangents have structure %r; primals %r" % (t_td, d.td))
    names = [p for paths in d.paths for p in paths]
    wrt = [p for p, v in zip(names, d.vals) if v.dtype in ("f32", "f64")]
    tans = [lift(d.b, t, v) for t, v, p in zip(t_leaves, d.vals, names) if p in wrt]
    out_specs = d.out_specs()
    prog = d.transform(_L.fedc_jvp, _lib.strings(wrt), len(wrt))
    results = d.inline(prog, tans)
    nouts = len(out_specs)
    outs, touts = results[:nouts], iter(results[nouts:])
    tangent_out = [next(touts) if s.dtype in ("f32", "f64") else None for s in out_specs]
    return unflatten(d.outdef, outs), unflatten(d.outdef, tangent_out)
