"""Accuracy line plots as plain SVG, no plotting library: the frame the plot scripts of
bench/accuracy share (plot_privacy.py, plot_async.py). Test accuracy (0 to 100%) up; across, a
linear axis or a log10 one; a legend in the right margin.

    p = Plot("title", "x label", lo, hi, log=False)   # log=True: lo, hi are powers of ten
    p.xgrid([(value, "label"), ...])
    p.polyline([(x, accuracy), ...], color)
    p.save("plot.svg")"""
import math

W, H, L, R, T, B = 640, 400, 70, 150, 30, 50
COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"]


class Plot:
    def __init__(self, title, xlabel, lo, hi, log=False, title_x=W / 2 - 40):
        self.lo, self.hi, self.log, self.xlabel = lo, hi, log, xlabel
        self.out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" '
                    f'font-size="12">',
                    f'<rect width="{W}" height="{H}" fill="white"/>',
                    f'<text x="{title_x}" y="18">{title}</text>']

    def x(self, v):
        v = math.log10(v) if self.log else v
        return L + (v - self.lo) / (self.hi - self.lo) * (W - L - R)

    @staticmethod
    def y(a):
        return H - B - a * (H - T - B)

    def xgrid(self, ticks):
        """Vertical grid lines at the ticks (value, label); then the accuracy grid and the x label."""
        for v, label in ticks:
            self.out.append(f'<line x1="{self.x(v):.1f}" y1="{T}" x2="{self.x(v):.1f}" y2="{H - B}" stroke="#ddd"/>')
            self.out.append(f'<text x="{self.x(v) - 12:.1f}" y="{H - B + 16}">{label}</text>')
        for t in range(0, 11, 2):
            self.out.append(f'<line x1="{L}" y1="{self.y(t / 10):.1f}" x2="{W - R}" y2="{self.y(t / 10):.1f}" '
                            f'stroke="#ddd"/>')
            self.out.append(f'<text x="{L - 34}" y="{self.y(t / 10) + 4:.1f}">{t * 10}%</text>')
        self.out.append(f'<text x="{(W - R) / 2}" y="{H - 12}">{self.xlabel}</text>')

    def polyline(self, points, color, dash=None):
        path = " ".join(f"{self.x(v):.1f},{self.y(a):.1f}" for v, a in points)
        style = f' stroke-dasharray="{dash}"' if dash else ""
        self.out.append(f'<polyline points="{path}" fill="none" stroke="{color}" stroke-width="2"{style}/>')

    def marker(self, v, a, color, label=None):
        self.out.append(f'<circle cx="{self.x(v):.1f}" cy="{self.y(a):.1f}" r="3" fill="{color}"/>')
        if label is not None:
            self.out.append(f'<text x="{self.x(v) + 4:.1f}" y="{self.y(a) - 5:.1f}" fill="{color}">{label}</text>')

    def hline(self, a, color, dash="5,4"):
        """A horizontal line across the plot at accuracy a (a baseline, a target)."""
        self.out.append(f'<line x1="{L}" y1="{self.y(a):.1f}" x2="{W - R}" y2="{self.y(a):.1f}" '
                        f'stroke="{color}" stroke-dasharray="{dash}"/>')

    def legend(self, i, name, color, note=None, step=32):
        """The i-th legend entry in the right margin, with an optional smaller line under it."""
        self.out.append(f'<text x="{W - R + 8}" y="{T + 20 + step * i}" fill="{color}">{name}</text>')
        if note is not None:
            self.out.append(f'<text x="{W - R + 8}" y="{T + 34 + step * i}" fill="{color}" font-size="10">{note}</text>')

    def save(self, path):
        open(path, "w").write("\n".join(self.out + ["</svg>"]) + "\n")
