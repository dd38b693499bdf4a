"""What the peer tests share (tests/peers.sh): the cases peers_cases wrote, each
exported by `fedc program export --to stablehlo`, and the comparison of a peer's
outputs with fedc's executor's.

A float output agrees when every element is within 1e-5 of fedc's relatively, with
a floor of 1e-6 times the output's largest magnitude (an element that is a
cancelling sum of terms of that size is as exact as those terms). The draws of the
cases that test them (dropout, random_uniform: fedc's Philox stream is written out
in the module) must be fedc's bits; normal variates (Box-Muller over the backend's
log and cosine) must be within the tolerance, and the report says whether their
bits are fedc's too. Integer and bool outputs must be equal.
"""
import glob
import os
import subprocess
import sys

import numpy as np

RTOL = 1e-5
FLOOR = 1e-6
BITS = ("dropout", "random")  # the names of the cases whose outputs are draws


class Case:
    def __init__(self, fedc, path):
        self.path = path
        meta = dict(line.split("=", 1) for line in open(os.path.join(path, "case.txt")).read().splitlines())
        self.meta = meta
        self.name = meta["name"]
        self.clients = int(meta["clients"])
        self.normal = {int(k) for k in meta["normal"].split()}
        self.program = os.path.join(path, "program.fedc")
        self.bits = self.name.startswith(BITS)
        self.inputs = self._arrays("in")
        self.want = self._arrays("out")
        self.module = os.path.join(path, "module.stablehlo.mlir")
        self.export_args = ["--groups", meta["groups"]] if "groups" in meta else []
        cmd = [fedc, "program", "export", self.program, "--to", "stablehlo", "-o", self.module] + self.export_args
        if self.clients:
            cmd += ["--clients", str(self.clients)]
        subprocess.run(cmd, check=True)

    def _arrays(self, kind):
        arrays, k = [], 0
        while os.path.exists(os.path.join(self.path, "%s_%d.npy" % (kind, k))):
            arrays.append(np.load(os.path.join(self.path, "%s_%d.npy" % (kind, k))))
            k += 1
        return arrays


def cases(fedc, directory, kinds="[0-9r]"):
    """The cases in directory whose names start with one of kinds (a glob class)."""
    return [Case(fedc, d) for d in sorted(glob.glob(os.path.join(directory, kinds + "*")))]


def compare(case, got):
    """Problems (strings) of got against fedc's outputs; the worst error as a
    fraction of its tolerance, for the report."""
    problems, worst, normal_bits = [], 0.0, 0
    if len(got) != len(case.want):
        return ["%d outputs, fedc has %d" % (len(got), len(case.want))], worst, normal_bits
    for k, (g, w) in enumerate(zip(got, case.want)):
        g = np.asarray(g)
        if g.shape != w.shape or g.dtype != w.dtype:
            problems.append("output %d is %s %s, fedc's %s %s" % (k, g.dtype, g.shape, w.dtype, w.shape))
            continue
        if w.size == 0:
            continue
        bits = "u%d" % w.itemsize  # floats compared as their bits
        same = g.reshape(-1).view(bits) == w.reshape(-1).view(bits) if w.dtype.kind == "f" else g.reshape(-1) == w.reshape(-1)
        normal_bits += k in case.normal and bool(np.all(same))
        if w.dtype.kind != "f" or (case.bits and k not in case.normal):
            if not np.all(same):
                i = int(np.argmin(same))
                problems.append("output %d: %d of %d elements differ%s; first at %d: %r, fedc %r"
                                % (k, int(np.sum(~same)), w.size, " in their bits" if w.dtype.kind == "f" else "",
                                   i, g.flat[i], w.flat[i]))
            continue
        w64, g64 = w.astype(np.float64), g.astype(np.float64)
        tol = RTOL * np.abs(w64) + FLOOR * np.max(np.abs(w64))
        err = np.abs(g64 - w64)
        ratio = np.where(tol > 0, err / np.where(tol > 0, tol, 1), np.where(err > 0, np.inf, 0))
        ratio = np.where(np.isnan(g64) & np.isnan(w64), 0, np.where(np.isnan(ratio), np.inf, ratio))
        i = int(np.argmax(ratio))
        worst = max(worst, float(ratio.flat[i]))
        if ratio.flat[i] > 1:
            problems.append("output %d: %d of %d elements off; worst at %d: %.9g, fedc %.9g (relative %.3g)"
                            % (k, int(np.sum(ratio > 1)), w.size, i, g64.flat[i], w64.flat[i],
                               err.flat[i] / max(abs(w64.flat[i]), 1e-300)))
    return problems, worst, normal_bits


def report(peer, results):
    """Prints one line a case; the exit status: 0 when every case agreed."""
    bad = 0
    for case, problems, worst, normal_bits in results:
        if problems:
            bad += 1
            print("FAIL %s: %s" % (case.name, "; ".join(problems)))
        else:
            how = "worst error %.2f of the tolerance" % worst
            if case.bits:
                how = "the uniforms and dropout masks fedc's bits"
                if case.normal:
                    how += ", normals within the tolerance (%s)" % (
                    "and fedc's bits" if normal_bits == len(case.normal) else
                    "%d of %d outputs fedc's bits" % (normal_bits, len(case.normal)))
            print("ok   %s: %d outputs, %s" % (case.name, len(case.want), how))
    print("%s: %d of %d cases run agree with fedc's executor" % (peer, len(results) - bad, len(results)))
    sys.stdout.flush()
    return 1 if bad else 0
