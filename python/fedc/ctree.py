"""Python structures and fedc's value trees (tree.h), both ways.

A structure's leaves are named by path ("params/w", "opt/mu/0"), as fedc's trees
name theirs, so a nested dict of traced values becomes a fedc_tree of the same
program leaf by leaf, and a fedc_tree comes back as a nested dict by its names
(or, given a structure's TreeDef, as that structure: tuples stay tuples).
"""

from . import _lib
from .errors import EINVAL
from .tracing import Value, lift
from .tree import flatten, unflatten

_L = _lib.lib


def to_c(b, structure, what="a structure"):
    """A fedc_tree of builder b holding structure's leaves by path."""
    t = _L.fedc_tree_new(b._get())
    if not t:
        b.status()
    leaves, td = flatten(structure)
    for path, leaf in zip(td.paths(""), leaves):
        if not path:
            raise TypeError("%s must be a structure (a dict, tuple or list of arrays), not one "
                            "array" % what)
        _lib.check(_L.fedc_tree_set(b._get(), t, path.encode(), lift(b, leaf).v))
    return t


def leaves(b, t):
    """[(name, Value)] of a fedc_tree of builder b."""
    return [(_L.fedc_tree_name(t, i).decode(), Value(b, _L.fedc_tree_value(t, i)))
            for i in range(_L.fedc_tree_size(t))]


def from_c(b, t):
    """A fedc_tree as a nested dict of Values, by its leaves' paths."""
    out = {}
    for name, v in leaves(b, t):
        put(out, name, v)
    return out


def like(b, t, treedef, prefix=""):
    """The leaves prefix<path> of a fedc_tree, rebuilt as the structure `treedef`."""
    by_name = dict(leaves(b, t))
    names = [prefix + p if p else prefix.rstrip("/") for p in treedef.paths("")]
    missing = [n for n in names if n not in by_name]
    if missing:
        raise _lib.error(EINVAL, "fedc: the result has no leaf %s" % ", ".join(missing))
    return unflatten(treedef, [by_name[n] for n in names])


def put(tree, path, value):
    """tree[path split by '/'] = value, making the dicts on the way."""
    *heads, last = path.split("/")
    for h in heads:
        tree = tree.setdefault(h, {})
    tree[last] = value
