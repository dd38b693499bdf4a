"""Nested structures as values: dicts, lists and tuples of arrays, flattened to leaves.

A structure's leaves get path names joined by '/' ("params/w", "batch/0"), which
are the names fedc's value trees use (tree.h): a traced program's input "params/w"
is leaf "w" of the tree at "params", so fedc_tree_of_inputs(p, "params") reads it
back in C, and fedc_grad_tree differentiates with respect to the whole tree.
Dicts keep their insertion order, as fedc's trees keep the order leaves were added
in; None is an empty node.
"""


class TreeDef:
    """The shape of a structure without its leaves: what unflatten rebuilds."""

    __slots__ = ("kind", "keys", "children", "cls", "_s")

    def __init__(self, kind, keys=(), children=(), cls=None):
        self.kind, self.keys, self.children, self.cls = kind, tuple(keys), tuple(children), cls
        self._s = None

    def _sig(self):
        if self._s is None:  # immutable: computed once (it keys the programs' caches)
            self._s = (self.kind, self.keys, self.cls, tuple(c._sig() for c in self.children))
        return self._s

    def __eq__(self, other):
        return isinstance(other, TreeDef) and self._sig() == other._sig()

    def __hash__(self):
        return hash(self._sig())

    @property
    def num_leaves(self):
        if self.kind == "leaf":
            return 1
        return sum(c.num_leaves for c in self.children)

    def paths(self, prefix=""):
        """The leaves' path names, in flattening order."""
        if self.kind == "leaf":
            return [prefix]
        out = []
        for k, c in zip(self.keys, self.children):
            out += c.paths(k if not prefix else prefix + "/" + k)
        return out

    def __repr__(self):
        return "TreeDef(%s)" % (self.kind if self.kind == "leaf" else
                                {k: c for k, c in zip(self.keys, self.children)})


LEAF = TreeDef("leaf")


def flatten(obj):
    """(leaves, treedef) of a nested dict/list/tuple structure."""
    leaves = []
    return leaves, _flatten(obj, leaves)


def _flatten(obj, leaves):
    if obj is None:
        return TreeDef("none")
    if isinstance(obj, dict):
        for k in obj:
            if not isinstance(k, str) or not k or "/" in k:
                raise TypeError("a structure's dict keys name its leaves: they must be non-empty "
                                "strings without '/', not %r" % (k,))
        keys = list(obj)
        return TreeDef("dict", keys, [_flatten(obj[k], leaves) for k in keys])
    if isinstance(obj, (list, tuple)):
        kind = "list" if isinstance(obj, list) else "tuple"
        cls = type(obj) if kind == "tuple" and hasattr(obj, "_fields") else None
        keys = obj._fields if cls else [str(i) for i in range(len(obj))]
        return TreeDef(kind, keys, [_flatten(x, leaves) for x in obj], cls)
    leaves.append(obj)
    return LEAF


def unflatten(treedef, leaves):
    it = iter(leaves)
    out = _unflatten(treedef, it)
    rest = list(it)
    if rest:
        raise ValueError("unflatten: %d leaves too many" % len(rest))
    return out


def _unflatten(td, it):
    if td.kind == "leaf":
        return next(it)
    if td.kind == "none":
        return None
    children = [_unflatten(c, it) for c in td.children]
    if td.kind == "dict":
        return dict(zip(td.keys, children))
    if td.kind == "list":
        return children
    return td.cls(*children) if td.cls else tuple(children)


def tree_map(fn, obj, *rest):
    """fn applied leaf by leaf to structures of the same shape."""
    leaves, td = flatten(obj)
    others = []
    for r in rest:
        rl, rtd = flatten(r)
        if rtd != td:
            raise ValueError("structures differ: %r and %r" % (td, rtd))
        others.append(rl)
    return unflatten(td, [fn(*xs) for xs in zip(leaves, *others)])
