#!/usr/bin/env python3
"""Summarises tests/bench/watch.sh's measurements (docs/bench/watch.jsonl) as the markdown
of docs/PERFORMANCE.md. Standard library only.

    python3 tests/bench/watch_summary.py docs/bench/watch.jsonl
"""
import json
import math
import statistics
import sys

lines = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]

# Student's t, two-sided 95%, by degrees of freedom (enough for the run counts used).
T95 = {1: 12.71, 2: 4.30, 3: 3.18, 4: 2.78, 5: 2.57, 6: 2.45, 7: 2.36, 8: 2.31, 9: 2.26,
       10: 2.23, 12: 2.18, 15: 2.13, 20: 2.09, 30: 2.04}


def t95(df):
    return T95.get(df) or T95[max(k for k in T95 if k <= df)]


slow = [l for l in lines if l["kind"] == "slowdown"]
alone = [l["seconds"] for l in slow if not l["watched"]]
watched = [l["seconds"] for l in slow if l["watched"]]
if alone and watched:
    steps = slow[0].get("steps", 150)
    # Each watched run follows an unwatched one: their ratio cancels the machine's drift.
    by_run = {}
    for l in slow:
        by_run.setdefault(l["run"], {})[l["watched"]] = l
    pairs = [r for r in by_run.values() if True in r and False in r]
    ratios = [r[True]["seconds"] / r[False]["seconds"] for r in pairs]
    cpu = [r[True]["strata_cpu_s"] / r[True]["seconds"] for r in pairs if "strata_cpu_s" in r[True]]
    ma, mw = statistics.mean(alone), statistics.mean(watched)
    # Ratio of means; its standard error by the delta method, Welch's degrees of freedom.
    va = statistics.variance(alone) / len(alone) if len(alone) > 1 else 0.0
    vw = statistics.variance(watched) / len(watched) if len(watched) > 1 else 0.0
    ratio = mw / ma
    se = ratio * math.sqrt(va / ma**2 + vw / mw**2)
    df = max(1, min(len(alone), len(watched)) - 1)
    half = t95(df) * se
    print(f"| healthy program, 2 ranks, {steps} steps | mean | runs |")
    print("|---|---|---|")
    print(f"| alone | {ma:.3f} s (median {statistics.median(alone):.3f}) | {len(alone)} |")
    print(f"| under strata watch | {mw:.3f} s (median {statistics.median(watched):.3f}) | {len(watched)} |")
    print(f"\nslowdown: median of {len(ratios)} paired runs {100 * (statistics.median(ratios) - 1):+.2f}% "
          f"(pairs {', '.join(f'{100 * (r - 1):+.1f}%' for r in ratios)}); ratio of the means "
          f"{100 * (ratio - 1):+.2f}% (95% CI {100 * (ratio - 1 - half):+.2f}% to "
          f"{100 * (ratio - 1 + half):+.2f}%)")
    if cpu:
        print(f"\nstrata's CPU time (the watch and its daemon) per second of the watched run: median "
              f"{1000 * statistics.median(cpu):.1f} ms ({100 * statistics.median(cpu) / 2:.2f}% of the "
              f"2 cores the ranks use)")
    print()

hangs = [l for l in lines if l["kind"] == "hang"]
if hangs:
    delays = sorted(l["delay_s"] for l in hangs if l.get("delay_s") is not None)
    print("| run | fault | rank | detected by | delay | rank named |")
    print("|---|---|---|---|---|---|")
    for l in hangs:
        d = l.get("delay_s")
        print(f"| {l['run']} | {l['mode']} | {l['rank']} | {l.get('trigger', l.get('error', '?'))} | "
              f"{'%.1f s' % d if d is not None else 'not detected'} | {l.get('named')} |")
    if delays:
        q = lambda p: delays[min(len(delays) - 1, int(p * (len(delays) - 1) + 0.5))]
        print(f"\ndetection delay over {len(delays)} of {len(hangs)} hangs: median "
              f"{statistics.median(delays):.1f} s, min {delays[0]:.1f} s, max {delays[-1]:.1f} s, "
              f"quartiles {q(0.25):.1f}-{q(0.75):.1f} s\n")

for l in lines:
    if l["kind"] == "healthy":
        print(f"healthy watching, {l['minutes']} min: {l['probes']} probes, {l['alarms']} alarms and "
              f"{l['stillness_checks']} stillness checks, {l['dismissed']} dismissed by verification, "
              f"{l['hangs_reported']} hangs reported (false alarms); last interval {l['interval']}")
