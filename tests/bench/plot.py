#!/usr/bin/env python3
"""Draws the `strata bench` sweep (tests/bench/scale.sh, JSON lines, several runs per point)
as SVG charts from the medians, and prints the markdown tables of docs/PERFORMANCE.md.
Standard library only, so it runs wherever the sweep runs.

    python3 tests/bench/plot.py docs/bench/scale.jsonl docs/bench

Writes, in the output folder:
  scale.svg   time to the root against tasks, per tree depth, runs against dense vectors
  bytes.svg   bytes one daemon sends, and a commnode's peak memory, against tasks
  phases.svg  where the time goes in the 3-deep tree with task runs
"""
import json
import math
import statistics
import sys
from collections import defaultdict

runs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
outdir = sys.argv[2]


def depth(r):
    return len(r["topology"]) - 1


def sets(r):
    return r.get("task_sets", "runs")


# (task sets, depth, tasks) -> the runs of that point
points = defaultdict(list)
for r in runs:
    points[(sets(r), depth(r), r["tasks"])].append(r)


def median(key, metric):
    return statistics.median(metric(r) for r in points[key])


def series(kind, d, metric):
    return sorted((t, median((kind, d, t), metric)) for (k, dd, t) in points if k == kind and dd == d)


def daemon_bytes(r):
    return r["levels"][-1]["bytes_out_max"]


def level_merge(level):
    return lambda r: r["levels"][level - 1]["merge_ms_max"]


COLORS = {1: "#1b9e77", 2: "#d95f02", 3: "#7570b3"}


def chart(path, title, ylabel, lines):
    """lines: [(label, [(tasks, value)], color, dashed)], log-log."""
    W, H, L, R, T, B = 760, 440, 80, 240, 30, 50
    lines = [l for l in lines if l[1]]
    xs = [x for _, pts, _, _ in lines for x, _ in pts]
    ys = [y for _, pts, _, _ in lines for _, y in pts if y > 0]
    x0, x1 = math.log10(min(xs)), math.log10(max(xs))
    y0, y1 = math.floor(math.log10(min(ys))), math.ceil(math.log10(max(ys)))
    x1, y1 = max(x1, x0 + 1), max(y1, y0 + 1)

    def px(x):
        return L + (math.log10(x) - x0) / (x1 - x0) * (W - L - R)

    def py(y):
        return H - B - (math.log10(max(y, 10 ** y0)) - y0) / (y1 - y0) * (H - T - B)

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="12">',
           f'<rect width="{W}" height="{H}" fill="white"/>',
           f'<text x="{L}" y="18" font-size="14">{title}</text>']
    for e in range(int(y0), int(y1) + 1):
        y = py(10 ** e)
        out.append(f'<line x1="{L}" y1="{y:.1f}" x2="{W - R}" y2="{y:.1f}" stroke="#ddd"/>')
        label = f"{10 ** e:,}" if e >= 0 else f"{10 ** e:g}"
        out.append(f'<text x="{L - 8}" y="{y + 4:.1f}" text-anchor="end">{label}</text>')
    for x in sorted(set(xs)):
        out.append(f'<line x1="{px(x):.1f}" y1="{T}" x2="{px(x):.1f}" y2="{H - B}" stroke="#eee"/>')
        label = f"{x // 1024}K" if x >= 1024 else str(x)
        out.append(f'<text x="{px(x):.1f}" y="{H - B + 18}" text-anchor="middle" font-size="10">{label}</text>')
    out.append(f'<text x="{(L + W - R) / 2}" y="{H - 10}" text-anchor="middle">tasks (log scale)</text>')
    out.append(f'<text x="16" y="{(T + H - B) / 2}" transform="rotate(-90 16 {(T + H - B) / 2})" text-anchor="middle">{ylabel}</text>')
    for i, (label, pts, color, dashed) in enumerate(lines):
        dash = ' stroke-dasharray="6 4"' if dashed else ""
        path_d = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in pts)
        out.append(f'<polyline points="{path_d}" fill="none" stroke="{color}" stroke-width="2"{dash}/>')
        for x, y in pts:
            out.append(f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="3" fill="{color}"/>')
        ly = T + 20 + 18 * i
        out.append(f'<line x1="{W - R + 10}" y1="{ly - 4}" x2="{W - R + 34}" y2="{ly - 4}" stroke="{color}" stroke-width="2"{dash}/>')
        out.append(f'<text x="{W - R + 40}" y="{ly}">{label}</text>')
    out.append("</svg>")
    open(path, "w").write("\n".join(out) + "\n")


def to_root(r):
    return r["ms"]["to_root"]


kinds = [("runs", "task runs", False), ("dense", "dense vectors", True)]
depths = sorted({d for (_, d, _) in points})
chart(f"{outdir}/scale.svg", "strata bench: time to the root, remap included (median)", "ms",
      [(f"{name}, {d}-deep", series(k, d, to_root), COLORS.get(d, "black"), dashed)
       for k, name, dashed in kinds for d in depths])
chart(f"{outdir}/bytes.svg", "bytes one daemon sends; a commnode's peak memory (median)", "KB",
      [(f"a daemon sends, {name}", series(k, 2, lambda r: daemon_bytes(r) / 1024), "#1b9e77", dashed)
       for k, name, dashed in kinds] +
      [(f"commnode peak, {name}", series(k, 2, lambda r: r["peak_rss_kib"]["commnode_max"]), "#d95f02", dashed)
       for k, name, dashed in kinds])
phases = [
    ("sample round (all levels)", lambda r: r["ms"]["sample_through_tree"], "#1b9e77"),
    ("slowest level-2 merge", level_merge(2), "#d95f02"),
    ("slowest level-1 merge", level_merge(1), "#7570b3"),
    ("merge at the root", lambda r: r["ms"]["merge_at_root"], "#e7298a"),
    ("decode at the root", lambda r: r["ms"]["decode_at_root"], "#66a61e"),
    ("index map (from the rank map)", lambda r: r["ms"].get("index_map", 0), "#a6761d"),
    ("remap", lambda r: r["ms"]["remap"], "#e6ab02"),
    ("view and classes", lambda r: r["ms"]["view_and_classes"], "#666666"),
]
chart(f"{outdir}/phases.svg", "strata bench, task runs, 3-deep tree: each phase (median)", "ms",
      [(name, series("runs", 3, f), color, False) for name, f, color in phases])


def fmt_ms(v):
    return f"{v:,.0f} ms" if v >= 10 else f"{v:.1f} ms"


tasks = sorted({t for (_, _, t) in points})
reps = sorted({len(v) for v in points.values()})
print(f"Medians of {'-'.join(map(str, reps))} runs per point.\n")
print("| tasks | " + " | ".join(f"{name}, {d}-deep" for _, name, _ in kinds for d in depths) + " |")
print("|---" * (1 + len(kinds) * len(depths)) + "|")
for t in tasks:
    cells = [fmt_ms(median((k, d, t), to_root)) if (k, d, t) in points else "" for k, _, _ in kinds for d in depths]
    print(f"| {t:,} | " + " | ".join(cells) + " |")
print()
print("| tasks (2-deep tree) | a daemon sends, runs | dense | slowest commnode merge, runs | dense | commnode peak RSS, runs | dense |")
print("|---|---|---|---|---|---|---|")
for t in tasks:
    row = []
    for metric, unit in [(daemon_bytes, "KB"), (level_merge(1), "ms"), (lambda r: r["peak_rss_kib"]["commnode_max"], "MB")]:
        for k, _, _ in kinds:
            if ("runs" if k == "runs" else "dense", 2, t) not in points:
                row.append("")
                continue
            v = median((k, 2, t), metric)
            row.append(f"{v / 1024:,.1f} KB" if unit == "KB" else f"{v / 1024:,.1f} MB" if unit == "MB" else fmt_ms(v))
    print(f"| {t:,} | " + " | ".join(row) + " |")
