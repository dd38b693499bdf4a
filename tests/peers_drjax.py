"""peers_drjax.py [--programs N] [--seed S|random]: random federated programs, each
written once with DrJAX (drjax.program, broadcast, map_fn, reduce_sum,
reduce_mean, reduce_weighted_mean) and once through fedc's Python tracing (the
package in python/fedc over build/libfedc.so), run on the same inputs: their
values, JAX's jax.jacrev against fedc's reverse mode (fedc.vjp, one cotangent
per output element) and jax.jacfwd against fedc's forward mode (fedc.jvp, one
tangent per input element) must agree within 1e-5 relative (docs/python.md).
Run by tests/peers.sh under .peers/jax (scripts/install-peers); a failure
prints the program's seed, and `--seed S --programs 1` reruns it alone.

A program is a random sequence of statements over values at the server and at
the clients (a cohort of 1 to 64): broadcast, map (several operands and results;
bodies of elementwise ops, matmuls, transposes and reductions; maps of other
maps' results, and rounds: map, aggregate, broadcast, map again), sum, mean,
weighted mean, and local ops on server values. One interpreter runs a program
on either side, so both sides are the same program by construction; only the
primitives differ.
"""
import argparse
import copy
import os
import random
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")
os.environ.setdefault("JAX_PLATFORMS", "cpu")
# LLVM's optimisations would cost more time than the small programs save
os.environ.setdefault("XLA_FLAGS", "--xla_backend_optimization_level=0")
import absl.logging  # noqa: E402
import drjax  # noqa: E402
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import fedc  # noqa: E402

jax.config.update("jax_enable_x64", True)  # f64 programs stay f64 on the JAX side
absl.logging.set_verbosity(absl.logging.ERROR)  # DrJAX warns of the mesh it has not got
RTOL = 1e-5
BATCH = 20  # programs compiled by XLA at once

UNARY = ["tanh", "sigmoid", "square", "neg", "exp", "relu", "affine"]
BINARY = ["add", "sub", "mul", "div", "maximum"]


class JaxSide:
    """The primitives as DrJAX and jax.numpy spell them (looked up at call time:
    drjax.program patches the drjax module while the program runs)."""
    broadcast = staticmethod(lambda x: drjax.broadcast(x))
    map = staticmethod(lambda fn, args: drjax.map_fn(fn, args))
    sum = staticmethod(lambda x: drjax.reduce_sum(x))
    mean = staticmethod(lambda x: drjax.reduce_mean(x))
    wmean = staticmethod(lambda x, w: drjax.reduce_weighted_mean(x, w))
    un = {"tanh": jnp.tanh, "sigmoid": jax.nn.sigmoid, "square": jnp.square,
          "neg": lambda x: -x, "exp": lambda x: jnp.exp(0.5 * x), "relu": jax.nn.relu,
          "affine": lambda x: 0.75 * x + 0.25}
    bin = {"add": jnp.add, "sub": jnp.subtract, "mul": jnp.multiply,
           "div": lambda a, b: a / (1.0 + b * b), "maximum": jnp.maximum}
    rsum = staticmethod(lambda x, axis: jnp.sum(x, axis=axis))


class FedcSide:
    """The same primitives through fedc's Python tracing."""
    broadcast = staticmethod(fedc.broadcast)
    map = staticmethod(fedc.map)
    sum = staticmethod(fedc.sum)
    mean = staticmethod(fedc.mean)
    wmean = staticmethod(fedc.weighted_mean)
    un = {"tanh": fedc.tanh, "sigmoid": fedc.sigmoid, "square": fedc.square,
          "neg": lambda x: -x, "exp": lambda x: fedc.exp(0.5 * x), "relu": fedc.relu,
          "affine": lambda x: 0.75 * x + 0.25}
    bin = {"add": fedc.add, "sub": fedc.sub, "mul": fedc.mul,
           "div": lambda a, b: a / (1.0 + b * b), "maximum": fedc.maximum}
    rsum = staticmethod(lambda x, axis: fedc.reduce_sum(x, axis))


# ---- local bodies: straight-line code over local values of known shapes ----

def gen_local(r, shapes, count):
    """count random local statements over values of `shapes`; returns
    (statements, shapes of all values). A statement names its operands by index."""
    shapes = list(shapes)
    stmts = []
    for _ in range(count):
        i = r.randrange(len(shapes))
        s = shapes[i]
        kinds = ["un", "bin", "bin"] + (["matmul", "matmul"] if len(s) == 2 else []) + \
                (["rsum"] if s else []) + (["T"] if len(s) == 2 else [])
        kind = r.choice(kinds)
        if kind == "un":
            stmts.append(("un", r.choice(UNARY), i))
        elif kind == "bin":
            same = [j for j, t in enumerate(shapes) if t == s]
            stmts.append(("bin", r.choice(BINARY), i, r.choice(same)))
        elif kind == "matmul":
            # a [p, q] times a [q, m] or, transposed, a [m, q]; a @ a.T when none fits
            cands = [(j, False) for j, t in enumerate(shapes) if len(t) == 2 and t[0] == s[1]]
            cands += [(j, True) for j, t in enumerate(shapes) if len(t) == 2 and t[1] == s[1]]
            j, tb = r.choice(cands)
            out = (s[0], shapes[j][0] if tb else shapes[j][1])
            stmts.append(("matmul", i, j, tb))
            shapes.append(out)
            continue
        elif kind == "rsum":
            axis = r.randrange(len(s))
            stmts.append(("rsum", i, axis))
            shapes.append(s[:axis] + s[axis + 1:])
            continue
        else:
            stmts.append(("T", i))
            shapes.append((s[1], s[0]))
            continue
        shapes.append(s)
    return stmts, shapes


def run_local(side, stmts, vals):
    vals = list(vals)
    for st in stmts:
        if st[0] == "un":
            vals.append(side.un[st[1]](vals[st[2]]))
        elif st[0] == "bin":
            vals.append(side.bin[st[1]](vals[st[2]], vals[st[3]]))
        elif st[0] == "matmul":
            b = vals[st[2]]
            vals.append(vals[st[1]] @ (b.T if st[3] else b))
        elif st[0] == "rsum":
            vals.append(side.rsum(vals[st[1]], st[2]))
        else:
            vals.append(vals[st[1]].T)
    return vals


# ---- federated programs ----

class Program:
    """A random federated program: inputs (placement, shape), statements, outputs."""

    def __init__(self, seed):
        r = random.Random(seed)
        self.seed = seed
        self.n = r.choice([1, 2, 3, r.randint(4, 16), r.randint(17, 64)])
        self.dtype = r.choice(["float32", "float64"])
        pool = [tuple(r.randint(1, 3) for _ in range(r.randint(0, 2))) for _ in range(r.randint(1, 3))]
        self.inputs = [("server", r.choice(pool)) for _ in range(r.randint(1, 2))]
        self.inputs += [("clients", r.choice(pool)) for _ in range(r.randint(0, 2))]
        self.weighted = r.random() < 0.5
        if self.weighted:
            self.inputs.append(("clients", ()))
        vals = list(self.inputs)
        self.weight = len(vals) - 1 if self.weighted else None
        self.stmts = []
        for _ in range(r.randint(2, 6)):
            server = [i for i, v in enumerate(vals) if v[0] == "server"]
            clients = [i for i, v in enumerate(vals) if v[0] == "clients" and i != self.weight]
            kinds = ["bcast"] + (["map", "map", "agg", "agg"] if clients else []) + ["slocal"]
            kind = r.choice(kinds)
            if kind == "bcast":
                i = r.choice(server)
                self.stmts.append(("bcast", i))
                vals.append(("clients", vals[i][1]))
            elif kind == "agg":
                how = r.choice(["sum", "mean"] + (["wmean"] if self.weighted else []))
                i = r.choice(clients)
                self.stmts.append(("agg", how, i))
                vals.append(("server", vals[i][1]))
            elif kind == "map":
                ops = r.sample(clients, r.randint(1, min(3, len(clients))))
                body, bshapes = gen_local(r, [vals[i][1] for i in ops], r.randint(1, 4))
                k = len(ops) + len(body)
                outs = sorted({k - 1} | set(r.sample(range(k), r.randint(0, min(2, k - 1)))))
                self.stmts.append(("map", ops, body, outs))
                vals += [("clients", bshapes[j]) for j in outs]
            else:
                ops = r.sample(server, r.randint(1, min(2, len(server))))
                body, bshapes = gen_local(r, [vals[i][1] for i in ops], r.randint(1, 2))
                self.stmts.append(("slocal", ops, body))
                vals += [("server", s) for s in bshapes[len(ops):]]
        self.vals = vals
        last = len(vals) - 1
        fresh = list(range(len(self.inputs), last))
        self.outputs = sorted({last} | set(r.sample(fresh, min(len(fresh), r.randint(0, 2)))))
        rng = np.random.default_rng(seed)
        self.args = []
        for i, (pl, s) in enumerate(self.inputs):
            shape = ((self.n,) if pl == "clients" else ()) + s
            if i == self.weight:
                a = rng.uniform(0.5, 2.0, shape)
            else:
                a = rng.normal(size=shape)
            self.args.append(np.asarray(a, self.dtype))

    def run(self, side, args):
        vals = list(args)
        for st in self.stmts:
            if st[0] == "bcast":
                vals.append(side.broadcast(vals[st[1]]))
            elif st[0] == "agg":
                x = vals[st[2]]
                vals.append(side.wmean(x, vals[self.weight]) if st[1] == "wmean" else
                            getattr(side, st[1])(x))
            elif st[0] == "map":
                _, ops, body, outs = st

                def fn(*xs, body=body, outs=outs):
                    got = run_local(side, body, xs)
                    return tuple(got[j] for j in outs)
                vals += list(side.map(fn, tuple(vals[i] for i in ops)))
            else:
                _, ops, body = st
                vals += run_local(side, body, [vals[i] for i in ops])[len(ops):]
        return tuple(vals[i] for i in self.outputs)

    def describe(self):
        lines = ["n=%d dtype=%s inputs=%s" % (self.n, self.dtype, self.inputs)]
        lines += ["  %r" % (st,) for st in self.stmts]
        lines.append("  outputs %s: %s" % (self.outputs, [self.vals[i] for i in self.outputs]))
        return "\n".join(lines)


# ---- the two sides ----

def jax_function(p):
    """p's values, jax.jacrev and jax.jacfwd, as one function of its arguments."""
    f = drjax.program(placements={"clients": p.n})(lambda *a: p.run(JaxSide, a))
    argnums = tuple(range(len(p.args)))
    return lambda *a: (f(*a), jax.jacrev(f, argnums=argnums)(*a), jax.jacfwd(f, argnums=argnums)(*a))


def jax_side(programs):
    """[(values, jacrev, jacfwd)] of the programs, compiled by XLA as one function: XLA's
    fixed cost per compilation, not the programs, would dominate the test's time."""
    fns = [jax_function(p) for p in programs]
    out = jax.jit(lambda args: [f(*a) for f, a in zip(fns, args)])([p.args for p in programs])
    np_ = lambda t: jax.tree_util.tree_map(np.asarray, t)  # noqa: E731
    return [(list(np_(v)), [list(r) for r in np_(rev)], [list(r) for r in np_(fwd)])
            for v, rev, fwd in out]


def basis(arrays):
    """(index of the array, flat index, arrays with a 1 there and 0 elsewhere)."""
    for i, a in enumerate(arrays):
        for e in range(a.size):
            t = [np.zeros_like(b) for b in arrays]
            t[i].reshape(-1)[e] = 1
            yield i, e, t


def fedc_side(p):
    k = len(p.args)
    in_pl = tuple(pl for pl, _ in p.inputs)
    out_pl = tuple(p.vals[i][0] for i in p.outputs)
    fn = lambda *a: p.run(FedcSide, a)  # noqa: E731
    pls = {"clients": p.n}
    value_fn = fedc.program(fn, placements=pls, in_placements=in_pl)
    fwd_fn = fedc.program(lambda *a: fedc.jvp(fn, a[:k], a[k:])[1], placements=pls,
                          in_placements=in_pl + in_pl)
    rev_fn = fedc.program(lambda *a: fedc.vjp(fn, *a[:k])[1](tuple(a[k:])), placements=pls,
                          in_placements=in_pl + out_pl)
    try:
        value = [np.asarray(v) for v in value_fn(*p.args)]
        # jac[o][i] has shape out_shape + in_shape, as jax.jacfwd/jacrev give it
        fwd = [[np.zeros(v.shape + a.shape, p.dtype) for a in p.args] for v in value]
        for i, e, t in basis(p.args):
            col = fwd_fn(*p.args, *t)
            for o, c in enumerate(col):
                fwd[o][i].reshape(c.shape + (-1,))[..., e] = c
        rev = [[np.zeros(v.shape + a.shape, p.dtype) for a in p.args] for v in value]
        for o, e, ct in basis(value):
            row = rev_fn(*p.args, *ct)
            for i, g in enumerate(row):
                rev[o][i].reshape(-1, g.size)[e] = g.reshape(-1)
    finally:
        for f in (value_fn, fwd_fn, rev_fn):
            f.close()
    return value, rev, fwd


def relative_error(got, want, dtype, scale, exact=None):
    """max |got - want| / |want| over the elements; an element under a floor, 1/10 of
    `scale` in f32 (1e-9 of it in f64), is measured against the floor instead: there
    only rounding is left (a derivative that is 0 in exact arithmetic comes out as
    rounding noise on both sides, and a sum of clients' values that cancel keeps the
    rounding of its terms). scale is the largest of the array's largest element, its
    output's largest value and 1, the order of the inputs.

    exact, where given, is the same array computed by JAX in f64 from the same f32
    inputs: an element where JAX's f32 value is itself further than the tolerance from
    it (a saturated tanh, whose derivative 1 - tanh^2 is all rounding in f32) may differ
    from JAX's by up to twice JAX's own error."""
    if got.shape != want.shape:
        return np.inf
    if want.size == 0:
        return 0.0
    floor = max(scale * (1e-1 if dtype == "float32" else 1e-9), 1e-30)
    room = np.maximum(np.abs(want), floor)
    if exact is not None:
        room = np.maximum(room, 2 * np.abs(want - exact) / RTOL)
    return float(np.max(np.abs(got.astype(np.float64) - want) / room))


def arrays(result):
    """[(name, output index, array)] of a side's (values, jacrev, jacfwd), in one order
    for every side."""
    value, rev, fwd = result
    named = [("value[%d]" % o, o, v) for o, v in enumerate(value)]
    for name, jac in (("jacrev", rev), ("jacfwd", fwd)):
        named += [("%s[out %d][in %d]" % (name, o, i), o, jac[o][i])
                  for o in range(len(jac)) for i in range(len(jac[o]))]
    return named


def compare(p, jax_result, fedc_result, exact=None):
    """The largest relative error of fedc's values and Jacobians against JAX's, and where;
    exact: JAX's result in f64 on the same inputs, for an f32 program (relative_error)."""
    big = [float(np.max(np.abs(v), initial=1.0)) for v in jax_result[0]]
    exact = arrays(exact) if exact is not None else None
    worst, where = 0.0, None
    for k, ((name, o, want), (_, _, got)) in enumerate(zip(arrays(jax_result),
                                                           arrays(fedc_result))):
        scale = max(big[o], float(np.max(np.abs(want), initial=0.0)))
        err = relative_error(got, want, p.dtype, scale,
                             exact[k][2] if exact is not None else None)
        if not err <= worst:
            worst, where = err, name
    return worst, where


def in_f64(p):
    """p on its own inputs, computed in f64: the exact answer an f32 result is measured by."""
    q = copy.copy(p)
    q.dtype = "float64"
    q.args = [a.astype(np.float64) for a in p.args]
    return q


def check(programs):
    """[(seed, relative error, where)] for a batch of programs; a batch JAX refuses is
    run again one program at a time, so the failure names its program."""
    try:
        jax_results = jax_side(programs)
    except Exception:
        if len(programs) > 1:
            return [r for p in programs for r in check([p])]
        raise
    out = []
    for p, jr in zip(programs, jax_results):
        try:
            fr = fedc_side(p)
            err, where = compare(p, jr, fr)
            if not err <= RTOL and p.dtype == "float32":
                err, where = compare(p, jr, fr, jax_side([in_f64(p)])[0])
            out.append((p, err, where))
        except Exception as e:  # fedc refused the program: a failure of that seed
            out.append((p, np.inf, "%s: %s" % (type(e).__name__, str(e)[:500])))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--programs", type=int, default=200)
    ap.add_argument("--seed", default="1", help="the first program's seed, or 'random' (a fresh "
                    "one, printed) to look beyond the programs the test runs")
    args = ap.parse_args()
    first = random.SystemRandom().randrange(1 << 31) if args.seed == "random" else int(args.seed)
    print("peers_drjax: drjax %s, jax %s, fedc %s; %d programs from seed %d"
          % (drjax.__version__, jax.__version__, fedc.library_path, args.programs, first))
    failed, worst = 0, 0.0
    kinds = {"bcast": 0, "map": 0, "agg": 0, "slocal": 0, "matmul": 0, "wmean": 0}
    programs = [Program(seed) for seed in range(first, first + args.programs)]
    for p in programs:
        for st in p.stmts:
            kinds[st[0]] += 1
            if st[0] in ("map", "slocal"):
                kinds["matmul"] += sum(1 for b in st[2] if b[0] == "matmul")
            if st[0] == "agg" and st[1] == "wmean":
                kinds["wmean"] += 1
    results = []
    for k in range(0, len(programs), BATCH):
        try:
            results += check(programs[k:k + BATCH])
        except Exception as e:  # JAX refused the program
            results.append((programs[k], np.inf, "JAX: %s: %s" % (type(e).__name__, str(e)[:500])))
    for p, err, where in results:
        worst = max(worst, err if np.isfinite(err) else worst)
        if not err <= RTOL:
            failed += 1
            print("FAIL seed %d: %s, relative error %.3g\n%s" % (p.seed, where, err, p.describe()))
    print("peers_drjax: %d programs, %d failed; largest relative error %.3g (tolerance %g); "
          "statements %s" % (args.programs, failed, worst, RTOL, kinds))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
