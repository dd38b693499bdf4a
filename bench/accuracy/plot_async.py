#!/usr/bin/python3
"""Draws bench/accuracy/async.sh's study as an SVG through svgplot.py: test accuracy against
virtual seconds (log scale: the methods' times differ by an order of magnitude), one line a
method, the target accuracy as a dashed grey line.

    plot_async.py async.tsv async.svg [TARGET [DATA]]"""
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from svgplot import COLORS, Plot  # noqa: E402

series = {}
for line in open(sys.argv[1]):
    if line.strip():
        method, _step, _reports, time, acc, *_ = line.rstrip("\n").split("\t")
        if float(time) > 0:
            series.setdefault(method, []).append((float(time), float(acc)))
if not series:
    sys.exit("plot_async.py: no evaluations at a virtual time above 0 in " + sys.argv[1])
times = [t for pts in series.values() for t, _ in pts]
lo, hi = math.floor(math.log10(min(times))), math.ceil(math.log10(max(times)))
hi = hi if hi > lo else lo + 1
target = float(sys.argv[3]) if len(sys.argv) > 3 and sys.argv[3] else None
data = sys.argv[4] if len(sys.argv) > 4 else "FEMNIST-LEAF"
p = Plot(f"{data}: test accuracy against virtual time", "virtual seconds, log scale", lo, hi, log=True, title_x=60)
p.xgrid([(10 ** k, f"{10 ** k:g}") for k in range(lo, hi + 1)])
if target is not None:
    p.hline(target, "#888")
for i, (method, pts) in enumerate(series.items()):
    p.polyline(pts, COLORS[i % len(COLORS)])
    p.legend(i, method, COLORS[i % len(COLORS)], step=20)
if target is not None:
    p.legend(len(series), f"target {100 * target:.1f}%", "#888", "dashed", step=20)
p.save(sys.argv[2])
