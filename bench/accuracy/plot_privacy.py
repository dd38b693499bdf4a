#!/usr/bin/python3
"""Draws bench/accuracy/privacy.sh's study as an SVG: test accuracy against epsilon (log scale)
for the noise-multiplier runs (z...), one line per dataset, each dataset's accuracy without DP
as a dashed line. Plain SVG through svgplot.py.

    plot_privacy.py privacy.tsv privacy.svg"""
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from svgplot import COLORS, Plot  # noqa: E402

rows = [line.rstrip("\n").split("\t") for line in open(sys.argv[1]) if line.strip()]
series, baseline = {}, {}
for dataset, name, _flags, eps, acc, _secs, *_ in rows:
    if not acc:
        continue
    if name == "no-dp":
        baseline[dataset] = float(acc)
    elif name.startswith("z") and eps not in ("", "inf", "nan"):
        series.setdefault(dataset, []).append((float(eps), float(acc), name[1:]))
points = [p for s in series.values() for p in s]
if not points:
    sys.exit("plot_privacy.py: no DP runs with an epsilon in " + sys.argv[1])
lo = math.floor(math.log10(min(e for e, _, _ in points)))
hi = math.ceil(math.log10(max(e for e, _, _ in points)))
hi = hi if hi > lo else lo + 1

p = Plot("DP-FedAvg: test accuracy against ε", "ε (δ = 1 / clients), log scale", lo, hi, log=True)
p.xgrid([(10 ** k, f"1e{k}") for k in range(lo, hi + 1)])
for i, (dataset, pts) in enumerate(sorted(series.items())):
    c = COLORS[i % 4]
    pts.sort()
    p.polyline([(e, a) for e, a, _ in pts], c)
    for e, a, z in pts:
        p.marker(e, a, c, f"z={z}")
    if dataset in baseline:
        p.hline(baseline[dataset], c)
    p.legend(i, dataset, c, "dashed: no DP")
p.save(sys.argv[2])
