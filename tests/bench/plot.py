#!/usr/bin/env python3
"""Plots `strata bench` sweep results (JSON lines) as an SVG: time to the root (sampling
round through the tree, the root's merge, decode and remap) against tasks, one line per tree
depth, log-log. Standard library only, so it runs wherever the sweep runs.

    python3 tests/bench/plot.py docs/bench/scale.jsonl docs/bench/scale.svg
"""
import json
import math
import sys

runs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
W, H, L, R, T, B = 640, 420, 70, 150, 30, 50
by_depth = {}
for r in runs:
    by_depth.setdefault(len(r["topology"]) - 1, []).append((r["tasks"], r["ms"]["to_root"]))
xs = [t for pts in by_depth.values() for t, _ in pts]
ys = [ms for pts in by_depth.values() for _, ms in pts]
x0, x1 = math.log10(min(xs)), math.log10(max(xs))
y0, y1 = math.floor(math.log10(min(ys))), math.ceil(math.log10(max(ys)))
x1 = max(x1, x0 + 1)
y1 = max(y1, y0 + 1)


def px(t):
    return L + (math.log10(t) - x0) / (x1 - x0) * (W - L - R)


def py(ms):
    return H - B - (math.log10(ms) - y0) / (y1 - y0) * (H - T - B)


colors = {1: "#1b9e77", 2: "#d95f02", 3: "#7570b3", 4: "#e7298a"}
out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="12">',
       f'<rect width="{W}" height="{H}" fill="white"/>',
       f'<text x="{L}" y="18" font-size="14">strata bench: time to the root (ms) against tasks</text>']
for e in range(int(y0), int(y1) + 1):
    y = py(10 ** e)
    out.append(f'<line x1="{L}" y1="{y:.1f}" x2="{W - R}" y2="{y:.1f}" stroke="#ddd"/>')
    out.append(f'<text x="{L - 8}" y="{y + 4:.1f}" text-anchor="end">{10 ** e:g}</text>')
for t in sorted(set(xs)):
    x = px(t)
    out.append(f'<line x1="{x:.1f}" y1="{T}" x2="{x:.1f}" y2="{H - B}" stroke="#eee"/>')
    label = f"{t // 1024}K" if t >= 1024 else str(t)
    out.append(f'<text x="{x:.1f}" y="{H - B + 18}" text-anchor="middle">{label}</text>')
out.append(f'<text x="{(L + W - R) / 2}" y="{H - 10}" text-anchor="middle">tasks</text>')
for i, (depth, pts) in enumerate(sorted(by_depth.items())):
    pts.sort()
    c = colors.get(depth, "black")
    path = " ".join(f"{px(t):.1f},{py(ms):.1f}" for t, ms in pts)
    out.append(f'<polyline points="{path}" fill="none" stroke="{c}" stroke-width="2"/>')
    for t, ms in pts:
        out.append(f'<circle cx="{px(t):.1f}" cy="{py(ms):.1f}" r="3" fill="{c}"/>')
    out.append(f'<text x="{W - R + 12}" y="{T + 20 + 18 * i}" fill="{c}">{depth}-deep tree</text>')
out.append("</svg>")
open(sys.argv[2], "w").write("\n".join(out) + "\n")
