#!/usr/bin/python3
"""Draws bench/accuracy/async.sh's study as an SVG through svgplot.py: test accuracy against
virtual seconds, one line a method, the target accuracy as a dashed grey line.

    plot_async.py async.tsv async.svg [TARGET]"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from svgplot import COLORS, Plot, nice_ticks  # noqa: E402

series = {}
for line in open(sys.argv[1]):
    if line.strip():
        method, _step, _reports, time, acc, *_ = line.rstrip("\n").split("\t")
        series.setdefault(method, []).append((float(time), float(acc)))
if not series:
    sys.exit("plot_async.py: no evaluations in " + sys.argv[1])
hi = max(t for pts in series.values() for t, _ in pts)
ticks = nice_ticks(hi)
p = Plot("FEMNIST, heavy-tailed client speeds: accuracy against virtual time", "virtual seconds", 0,
         max(hi, ticks[-1]) or 1, title_x=60)
p.xgrid([(t, f"{t:g}") for t in ticks])
if len(sys.argv) > 3 and sys.argv[3]:
    p.hline(float(sys.argv[3]), "#888")
for i, (method, pts) in enumerate(series.items()):
    c = COLORS[i % len(COLORS)]
    p.polyline(pts, c)
    p.legend(i, method, c, step=20)
if len(sys.argv) > 3 and sys.argv[3]:
    p.legend(len(series), "target", "#888", "dashed", step=20)
p.save(sys.argv[2])
