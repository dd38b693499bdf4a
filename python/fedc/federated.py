"""The federated primitives on traced values and structures of them (program.h).

broadcast, sum, mean and weighted_mean (and the hierarchy's broadcast_down,
sum_up, mean_up and weighted_mean_up) apply leaf by leaf to a structure (as
fedc_tree_broadcast and friends do); map traces its function as the body run on
each client; fold traces its function as the body run over a sequence's steps,
with jax.lax.scan's signature: fn(carry, x) -> (carry, y).
"""

from . import _lib
from .errors import EINVAL
from .function import arg_names, trace
from .tracing import Value, builder_of, current, lift
from .tree import flatten, tree_map, unflatten
from .types import DTYPE_CODES, TypeSpec

_L = _lib.lib


def _leafwise(cfun):
    def one(x):
        b = builder_of(x)
        return b.check(cfun(b._get(), lift(b, x).v))
    return lambda tree: tree_map(one, tree)


def _weighted_leafwise(cfun):
    def apply(x, w):
        def one(leaf):
            b = builder_of(leaf, w)
            return b.check(cfun(b._get(), lift(b, leaf).v, lift(b, w).v))
        return tree_map(one, x)
    return apply


_broadcast, _sum, _mean = (_leafwise(f) for f in (_L.fedc_broadcast, _L.fedc_sum, _L.fedc_mean))


def broadcast(x):
    """T@server -> T@clients: every client gets the value (each leaf of a structure)."""
    return _broadcast(x)


def sum(x):
    """T@clients -> T@server: the sum over the clients (DrJAX's reduce_sum)."""
    return _sum(x)


def mean(x):
    """T@clients -> T@server: the mean over the clients (DrJAX's reduce_mean)."""
    return _mean(x)


def weighted_mean(x, w):
    """T@clients -> T@server: sum_i w_i x_i / sum_i w_i; w is one scalar per client."""
    return _weighted_leafwise(_L.fedc_weighted_mean)(x, w)


_broadcast_down, _sum_up, _mean_up = (_leafwise(f) for f in (_L.fedc_broadcast_down, _L.fedc_sum_up,
                                                               _L.fedc_mean_up))


def broadcast_down(x):
    """One level down the tree server > groups > clients: T@server -> T@groups, or
    T@groups -> T@clients (each client gets its group's value)."""
    return _broadcast_down(x)


def sum_up(x):
    """One level up: T@clients -> T@groups (over each group's clients), or
    T@groups -> T@server (over the groups)."""
    return _sum_up(x)


def mean_up(x):
    """One level up, the mean over each group's clients or over the groups."""
    return _mean_up(x)


def weighted_mean_up(x, w):
    """One level up, sum_i w_i x_i / sum_i w_i; w is one scalar per member, at x's level."""
    return _weighted_leafwise(_L.fedc_weighted_mean_up)(x, w)


def num_groups(dtype="f32"):
    """The number of groups as a server scalar (f32, f64 or i32)."""
    b = builder_of()
    return b.check(_L.fedc_num_groups(b._get(), DTYPE_CODES[TypeSpec(dtype).dtype]))


def group_size(dtype="f32"):
    """Each group's number of clients, a @groups scalar (f32, f64 or i32)."""
    b = builder_of()
    return b.check(_L.fedc_group_size(b._get(), DTYPE_CODES[TypeSpec(dtype).dtype]))


def num_clients(dtype="f32"):
    """The cohort's size as a server scalar (f32, f64 or i32)."""
    b = builder_of()
    return b.check(_L.fedc_num_clients(b._get(), DTYPE_CODES[TypeSpec(dtype).dtype]))


def _body_inputs(vals):
    """Local TypeSpecs of a body's arguments."""
    return [TypeSpec(v.dtype, v.shape) for v in vals]


def map(fn, args):
    """fn run on every client: args is a @clients value, or a tuple of them (passed
    to fn as positional arguments, as DrJAX's map_fn does), or any structure. With
    @groups values (all of them), fn runs on every group instead."""
    positional = isinstance(args, tuple) and not hasattr(args, "_fields")
    args_list = list(args) if positional else [args]
    leaves, td = flatten(args_list)
    b = builder_of(*leaves)
    vals = [lift(b, x) for x in leaves]
    level = vals[0].placement if vals and vals[0].placement == "groups" else "clients"
    for v, path in zip(vals, td.paths("")):
        if v.placement != level:
            raise _lib.error(EINVAL, "map: argument %s is %s: map takes @%s values "
                             "(broadcast a server value first)" % (path, v.spec, level))
    trees = []
    for a in unflatten(td, vals):
        a_leaves, a_td = flatten(a)
        trees.append(unflatten(a_td, _body_inputs(a_leaves)))
    with b:  # the body's closures over b's values become inputs after the arguments
        body, outdef, _ = trace(fn, arg_names(fn, len(trees)), trees, "map body", capturing=True,
                               body=True)
    try:
        for outer, _ in body.captures:
            if outer.placement != level:
                raise _lib.error(EINVAL, "map: the body uses %s, a value of the program around it, "
                                 "by closure: a map body reads @%s values only (broadcast it "
                                 "and pass it in)" % (outer.spec, level))
        vals += [outer for outer, _ in body.captures]
        n = _L.fedc_program_num_outputs(body.ptr)
        results = (_lib.VALUE * max(n, 1))()
        _lib.check(_L.fedc_map(b._get(), body.ptr, _lib.values([v.v for v in vals]), len(vals),
                               results))
    finally:
        body.discard()
    return unflatten(outdef, [Value(b, results[i]) for i in range(n)])


map_fn = map


def fold(fn, init, xs, length=None):
    """jax.lax.scan over fedc's fold: fn(carry, x) -> (carry, y) for each step of xs
    (structures whose leaves have the steps on their leading axis). Returns
    (final carry, ys stacked on a leading axis). `length` (an i32 scalar, per client
    inside a map) runs only the first `length` steps; ys past it are zero."""
    c_leaves, c_td = flatten(init)
    x_leaves, x_td = flatten(xs)
    if not x_leaves:
        raise _lib.error(EINVAL, "fold: xs must hold at least one sequence")
    b = builder_of(*(c_leaves + x_leaves))
    cvals = [lift(b, x) for x in c_leaves]
    xvals = [lift(b, x) for x in x_leaves]
    steps = xvals[0].shape[0] if xvals[0].shape else None
    if steps is None:
        raise _lib.error(EINVAL, "fold: a sequence needs a leading axis of steps, not %s"
                         % xvals[0].spec)
    x_specs = unflatten(x_td, [TypeSpec(v.dtype, v.shape[1:]) for v in xvals])
    # Values of b that fn uses by closure are carried through the steps unchanged: a
    # first trace finds them, a second declares them as carries after init's.
    caps = []
    for _ in range(2):
        carry_def = []
        c_specs = (unflatten(c_td, _body_inputs(cvals)), _body_inputs(caps))

        def body_fn(carry, x):
            carry, cap_inputs = carry
            current().captures[:0] = list(zip(caps, cap_inputs))
            out = fn(carry, x)
            if not (isinstance(out, tuple) and len(out) == 2):
                raise TypeError("fold: the body must return (carry, y), as jax.lax.scan's does")
            new_carry, y = out
            carry_def.append(flatten(new_carry)[1])
            return ((new_carry, cap_inputs), y)

        with b:
            body, outdef, _ = trace(body_fn, ["carry", "x"], [c_specs, x_specs], "fold body",
                                    capturing=True, body=True)
        found = [outer for outer, _ in body.captures[len(caps):]]
        if not found:
            break
        body.discard()
        if caps:  # the second trace used values the first did not
            raise _lib.error(EINVAL, "fold: the body used different values by closure when "
                             "traced again (does it depend on Python state?)")
        caps += found
    try:
        if carry_def[0] != c_td:
            raise _lib.error(EINVAL, "fold: the body's new carry has structure %r, the initial "
                             "carry %r" % (carry_def[0], c_td))
        if length is None:
            length = b.check(_L.fedc_scalar(b._get(), DTYPE_CODES["i32"], float(steps)))
        vlen = lift(b, length)
        cvals += caps
        n = _L.fedc_program_num_outputs(body.ptr)
        results = (_lib.VALUE * max(n, 1))()
        _lib.check(_L.fedc_fold(b._get(), body.ptr, _lib.values([v.v for v in cvals]), len(cvals),
                                _lib.values([v.v for v in xvals]), len(xvals), vlen.v, results))
    finally:
        body.discard()
    (carry, _), ys = unflatten(outdef, [Value(b, results[i]) for i in range(n)])
    return carry, ys
