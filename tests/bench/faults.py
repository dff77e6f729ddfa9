#!/usr/bin/env python3
"""The runtime model's fault-injection study (tests/bench/faults.sh runs it).

For each mini-app and fault, N injections into a random rank at a random iteration (both
drawn from a seeded generator, printed with each run): the job runs with strata's PMPI
library preloaded, `strata attach --json` samples it once the fault has had time to show,
and the result is scored as AutomaDeD ("Large scale debugging of parallel tasks with
AutomaDeD", 2011) and Prodometer ("Accurate application progress analysis for large-scale
parallel debugging", 2014) score theirs:

- abnormal-rank recall: the injected rank is among the (at most 5) most abnormal ranks
  by nearest neighbours; also whether it is the first, and whether it is the only one that
  stands out; and the same for clustering (the ranks of the clusters apart from the rest,
  then the outliers of the others);
- least-progressed accuracy: the least progressed ranks include the injected rank;
  precision: the share of the least progressed ranks that are the injected one (0 when
  there are none, or the dependence was not decided); both on the runs that hung;
- the verdict: it names the injected rank when the job hangs, or sees it move when it does
  not (a slowdown; a master/worker code whose master serves the other workers; a halo
  exchange whose neighbour takes every message after the wrong one an iteration late).

Proportions are given with Wilson 95% intervals; precision, a mean of shares, with a
normal 95% interval. Usage (the script's defaults in brackets):

    faults.py STRATA LIBRARY BUILD_DIR [--apps halo,master,pipeline] [--faults
              hang,loop,slow,wrong] [--injections 20] [--ranks 16] [--seed 1] [--json FILE]
    faults.py - - - --report target/bench/faults.log --ranks 16 (the table of a log)
"""

import argparse
import json
import math
import os
import random
import signal
import subprocess
import sys
import time

PAPERS = {
    "AutomaDeD (2011), nearest neighbour, injected task in the top 5":
        "85% without, 100% with graph compression (CPU_INTENSIVE in NAS BT, 529 tasks)",
    "Prodometer (2014), least-progressed accuracy / precision": "93% / 98%",
    "AutomaDeD as Prodometer measured it, accuracy": "64%",
}

# How long after the ranks report (their 30th iteration) the fault has shown: a hang needs
# the others to block, a slowdown enough slow iterations to outweigh the fast ones.
SETTLE_S = {"hang": 1.5, "loop": 1.5, "wrong": 1.5, "slow": 3.0}


def wilson(k, n, z=1.96):
    if n == 0:
        return (0.0, 0.0, 0.0)
    p = k / n
    d = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / d
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d
    return (p, max(0.0, centre - half), min(1.0, centre + half))


def mean_ci(xs, z=1.96):
    if not xs:
        return (0.0, 0.0, 0.0)
    m = sum(xs) / len(xs)
    if len(xs) < 2:
        return (m, m, m)
    sd = math.sqrt(sum((x - m) ** 2 for x in xs) / (len(xs) - 1))
    half = z * sd / math.sqrt(len(xs))
    return (m, max(0.0, m - half), min(1.0, m + half))


def ranks_of(text):
    """`0-2,5` -> {0, 1, 2, 5}."""
    out = set()
    for run in filter(None, (text or "").split(",")):
        a, _, b = run.partition("-")
        out.update(range(int(a), int(b or a) + 1))
    return out


def launch(exe, library, ranks, args, out):
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    cmd = ["mpirun", "--oversubscribe", "-x", f"LD_PRELOAD={library}", "-np", str(ranks), exe]
    return subprocess.Popen(cmd + args, stdout=out, stderr=subprocess.STDOUT, env=env,
                            start_new_session=True)


def wait_for_ranks(path, ranks, timeout=60.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        with open(path) as f:
            pids = [int(l.split()[3]) for l in f if l.startswith("rank ") and " pid " in l]
        if len(pids) >= ranks:
            return pids
        time.sleep(0.05)
    raise RuntimeError(f"{path}: {ranks} ranks did not report in {timeout:.0f} s")


def stop(job, pids):
    try:
        os.killpg(job.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    for pid in pids:
        if pid > 0:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    job.wait()


def one_run(opts, app, fault, rank, at, work):
    out_path = os.path.join(work, f"{app}.out")
    with open(out_path, "w") as out:
        job = launch(os.path.join(opts.build, f"model_{app}"), opts.library, opts.ranks,
                     [fault, str(rank), str(at)], out)
    pids = []
    try:
        pids = wait_for_ranks(out_path, opts.ranks)
        time.sleep(SETTLE_S[fault])
        attach = subprocess.run(
            [opts.strata, "attach", "--launcher-pid", str(job.pid), "-n", "3", "--json",
             "--no-files"], capture_output=True, text=True, timeout=120)
        if attach.returncode != 0:
            raise RuntimeError(f"strata attach exited {attach.returncode}: {attach.stderr}")
        return json.loads(attach.stdout)
    finally:
        stop(job, pids)


def hangs(app, fault, rank):
    """Whether the fault hangs the job: a slow rank slows it; the master serves the other
    workers when one stops (or when it sent one of them a wrong message)."""
    if fault == "slow":
        return False
    if app == "master":
        return rank == 0 and fault in ("hang", "loop")
    if app == "halo" and fault == "wrong":
        # The neighbour takes the sender's next message for the lost one, and every
        # message after it one iteration late: wrong data, no hang.
        return False
    return True


def verdict_right(app, fault, rank, kind, ranks):
    if hangs(app, fault, rank):
        return kind not in ("no_hang_seen", "undecided") and rank in ranks_of(ranks)
    return kind == "no_hang_seen"


def score(result, app, fault, rank):
    model = result.get("verdict", {}).get("runtime_model") or result.get("runtime_model") or {}
    verdict = result.get("verdict", {})
    abnormal = [a["rank"] for a in model.get("abnormal", [])]
    standing = [a["rank"] for a in model.get("abnormal", []) if a.get("stands_out")]
    progress = model.get("progress", {})
    lp = set()
    for ranks in progress.get("least_progressed", []):
        lp |= ranks_of(ranks)
    clustered = (model.get("behaviours") or {}).get("abnormal_ranks", [])
    return {
        "cluster_top5": rank in clustered[:5],
        "cluster_top1": bool(clustered) and clustered[0] == rank,
        "clustered": clustered[:5],
        "top5": rank in abnormal[:5],
        "top1": bool(abnormal) and abnormal[0] == rank,
        "alone": standing == [rank],
        "lp_accurate": rank in lp,
        "lp_precision": (1.0 / len(lp)) if rank in lp else 0.0,
        "lp": sorted(lp),
        "abnormal": abnormal,
        "verdict": verdict.get("kind"),
        "verdict_ranks": verdict.get("ranks"),
        "verdict_right": verdict_right(app, fault, rank, verdict.get("kind"),
                                       verdict.get("ranks", "")),
        "not_decided": progress.get("not_decided"),
    }


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("strata")
    p.add_argument("library")
    p.add_argument("build")
    p.add_argument("--apps", default="halo,master,pipeline")
    p.add_argument("--faults", default="hang,loop,slow,wrong")
    p.add_argument("--injections", type=int, default=20)
    p.add_argument("--ranks", type=int, default=16)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--json")
    p.add_argument("--report", metavar="LOG",
                   help="only print the table of the runs in LOG (the script's log)")
    opts = p.parse_args()
    if opts.report:
        with open(opts.report) as f:
            runs = [json.loads(line) for line in f if line.startswith("{")]
        opts.injections = max(r["injection"] for r in runs) + 1
        opts.faults = ",".join(dict.fromkeys(r["fault"] for r in runs))
        report(runs, opts)
        return
    work = os.environ.get("TMPDIR", "/tmp")
    runs = []
    for app in opts.apps.split(","):
        for fault in opts.faults.split(","):
            rng = random.Random(f"{opts.seed}/{app}/{fault}")
            for k in range(opts.injections):
                rank = rng.randrange(opts.ranks)
                if app == "pipeline" and fault == "wrong":
                    rank = rng.randrange(opts.ranks - 1)  # the last stage passes nothing on
                at = rng.randrange(40, 80)
                try:
                    s = score(one_run(opts, app, fault, rank, at, work), app, fault, rank)
                except (RuntimeError, subprocess.TimeoutExpired, json.JSONDecodeError) as e:
                    s = {"error": str(e)}
                s.update(app=app, fault=fault, injection=k, rank=rank, iteration=at,
                         seed=opts.seed)
                runs.append(s)
                print(json.dumps(s), file=sys.stderr, flush=True)
    if opts.json:
        with open(opts.json, "w") as f:
            json.dump({"seed": opts.seed, "ranks": opts.ranks, "runs": runs}, f, indent=1)
    report(runs, opts)


def report(runs, opts):
    def pct(t):
        return f"{t[0] * 100:.0f}% [{t[1] * 100:.0f}-{t[2] * 100:.0f}]"

    print(f"{opts.ranks} ranks, {opts.injections} injections per app and fault, seed "
          f"{opts.seed}; 95% intervals in brackets")
    print("| app | fault | runs | abnormal (NN) in top 5 | first | alone standing out | "
          "clustering: in top 5 | first | "
          "least progressed: accuracy | precision | verdict right |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    groups = {}
    for r in runs:
        groups.setdefault((r["app"], r["fault"]), []).append(r)
    for key in list(groups) + [("all", f) for f in opts.faults.split(",")]:
        if key[0] == "all":
            rs = [r for r in runs if r["fault"] == key[1]]
        else:
            rs = groups[key]
        ok = [r for r in rs if "error" not in r]
        for r in ok:  # scored again: a log keeps what happened, the rules may be newer
            r["verdict_right"] = verdict_right(r["app"], r["fault"], r["rank"], r["verdict"],
                                               r["verdict_ranks"])
        n = len(ok)
        count = lambda field, rs=ok: sum(1 for r in rs if r.get(field))
        # Least progressed is a question about a hang: scored on the runs that hung.
        hung = [r for r in ok if hangs(r["app"], r["fault"], r["rank"])]
        lp = (f"{pct(wilson(count('lp_accurate', hung), len(hung)))} | "
              f"{pct(mean_ci([r['lp_precision'] for r in hung]))}" if hung else "- | -")
        if hung and len(hung) < n:
            lp = lp.replace(" | ", f" of {len(hung)} | ", 1)
        print(f"| {key[0]} | {key[1]} | {n}{'' if n == len(rs) else f' (+{len(rs) - n} failed)'}"
              f" | {pct(wilson(count('top5'), n))} | {pct(wilson(count('top1'), n))}"
              f" | {pct(wilson(count('alone'), n))}"
              f" | {pct(wilson(count('cluster_top5'), n))} | {pct(wilson(count('cluster_top1'), n))}"
              f" | {lp}"
              f" | {pct(wilson(count('verdict_right'), n))} |")
    print()
    for what, number in PAPERS.items():
        print(f"{what}: {number}")


if __name__ == "__main__":
    main()
