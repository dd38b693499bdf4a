#!/usr/bin/python3
"""Draws bench/accuracy/privacy.sh's study as an SVG: test accuracy against epsilon (log scale)
for the noise-multiplier runs (z...), one line per dataset, each dataset's accuracy without DP
as a dashed line. Plain SVG, no plotting library.

    plot_privacy.py privacy.tsv privacy.svg"""
import math
import sys

W, H, L, R, T, B = 640, 400, 70, 150, 30, 50
COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd"]

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


def x(e):
    return L + (math.log10(e) - lo) / (hi - lo) * (W - L - R)


def y(a):
    return H - B - a * (H - T - B)


out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="12">',
       f'<rect width="{W}" height="{H}" fill="white"/>',
       f'<text x="{W / 2 - 40}" y="18">DP-FedAvg: test accuracy against ε</text>']
for k in range(lo, hi + 1):
    out.append(f'<line x1="{x(10 ** k):.1f}" y1="{T}" x2="{x(10 ** k):.1f}" y2="{H - B}" stroke="#ddd"/>')
    out.append(f'<text x="{x(10 ** k) - 12:.1f}" y="{H - B + 16}">1e{k}</text>')
for t in range(0, 11, 2):
    out.append(f'<line x1="{L}" y1="{y(t / 10):.1f}" x2="{W - R}" y2="{y(t / 10):.1f}" stroke="#ddd"/>')
    out.append(f'<text x="{L - 34}" y="{y(t / 10) + 4:.1f}">{t * 10}%</text>')
out.append(f'<text x="{(W - R) / 2}" y="{H - 12}">ε (δ = 1 / clients), log scale</text>')
for i, (dataset, pts) in enumerate(sorted(series.items())):
    c = COLORS[i % len(COLORS)]
    pts.sort()
    path = " ".join(f"{x(e):.1f},{y(a):.1f}" for e, a, _ in pts)
    out.append(f'<polyline points="{path}" fill="none" stroke="{c}" stroke-width="2"/>')
    for e, a, z in pts:
        out.append(f'<circle cx="{x(e):.1f}" cy="{y(a):.1f}" r="3" fill="{c}"/>')
        out.append(f'<text x="{x(e) + 4:.1f}" y="{y(a) - 5:.1f}" fill="{c}">z={z}</text>')
    if dataset in baseline:
        out.append(f'<line x1="{L}" y1="{y(baseline[dataset]):.1f}" x2="{W - R}" y2="{y(baseline[dataset]):.1f}" '
                   f'stroke="{c}" stroke-dasharray="5,4"/>')
    out.append(f'<text x="{W - R + 8}" y="{T + 20 + 32 * i}" fill="{c}">{dataset}</text>')
    out.append(f'<text x="{W - R + 8}" y="{T + 34 + 32 * i}" fill="{c}" font-size="10">dashed: no DP</text>')
out.append("</svg>")
open(sys.argv[2], "w").write("\n".join(out) + "\n")
