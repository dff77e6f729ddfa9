#!/usr/bin/env bash
# The strata watch benchmark, on this host with Open MPI (mpirun, oversubscribed)
# and the project's iterative program (daemon/tests/fixtures/mpi_iter.c):
#
#   1. slowdown: the healthy program (2 ranks, STEPS steps of a fixed amount of arithmetic,
#      default 600, about 15 s) timed alone and under `strata watch` (default settings),
#      alternately, SLOWDOWN_RUNS times each; the median of the paired ratios, and the
#      ratio of the means with a 95% confidence interval; with the CPU time strata used
#      (the watch and its daemon);
#   2. detection delay: HANGS runs of 8 ranks where a random rank stops after 25 s (sleeping
#      or spinning, alternately); the delay from the fault to the verified hang, and whether
#      the report names the right rank;
#   3. false alarms: the healthy program watched for HEALTHY_MIN minutes with
#      `--on-hang continue`; alarms raised, dismissed by verification, and hangs reported.
#
# Every measurement is a JSON line in docs/bench/watch.jsonl (or $OUT); the summary is
# printed at the end (tests/bench/watch_summary.py). A count of 0 skips that part.
#
#   bash tests/bench/watch.sh [HANGS] [HEALTHY_MIN] [SLOWDOWN_RUNS]     (default 10 30 7)
set -euo pipefail
cd "$(dirname "$0")/../.."
HANGS=${1:-10}
HEALTHY_MIN=${2:-30}
RUNS=${3:-7}
STEPS=${STEPS:-600}
cargo build -q --release -p strata-frontend --bin strata
strata=$PWD/target/release/strata
work=$(mktemp -d /tmp/strata-watch-bench.XXXXXX)
source tests/bench/kill_tree.sh
launcher=
trap 'kill_tree TERM "$launcher"; rm -rf "$work"' EXIT
mpicc -O1 -g daemon/tests/fixtures/mpi_iter.c -o "$work/mpi_iter"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_mpi_yield_when_idle=1
out=${OUT:-docs/bench/watch.jsonl}
: > "$out"

# start_job NP ARGS...: starts the program, waits for its ranks; sets $launcher.
start_job() {
    local np=$1
    shift
    mpirun --oversubscribe -np "$np" "$work/mpi_iter" "$@" > "$work/job.out" 2>&1 &
    launcher=$!
    for _ in $(seq 100); do
        [ "$(grep -c '^rank ' "$work/job.out" || true)" -ge "$np" ] && return
        sleep 0.1
    done
    echo "the job did not start: $(cat "$work/job.out")" >&2
    exit 1
}

seconds_of() { awk '/^iterations/ {print $4}' "$work/job.out"; }

# cpu_of OUT CMD...: runs CMD (its output in OUT) in a subshell and prints the CPU seconds
# (user + system) of CMD and the processes it waited for (the watch's daemon), from
# bash's `times`.
cpu_of() {
    local out=$1
    shift
    ( "$@" > "$out" || true; times ) | tail -1 | awk '{
        t = 0
        for (i = 1; i <= 2; i++) { split($i, p, "m"); t += p[1] * 60 + p[2] }
        printf "%.3f", t }'
}

echo "== slowdown: $RUNS runs alone and $RUNS under strata watch (2 ranks, $STEPS steps)"
for i in $(seq "$RUNS"); do
    for watched in false true; do
        start_job 2 "$STEPS" -1 0 sleep cpu
        cpu=0
        if [ "$watched" = true ]; then
            cpu=$(cpu_of "$work/watch.json" "$strata" watch --launcher-pid "$launcher" --json \
                2> "$work/watch.err")
        fi
        wait "$launcher" || true
        s=$(seconds_of)
        echo "{\"kind\": \"slowdown\", \"run\": $i, \"watched\": $watched, \"steps\": $STEPS, \"seconds\": $s, \"strata_cpu_s\": $cpu}" >> "$out"
        echo "  run $i watched=$watched: $s s (strata CPU $cpu s)"
    done
done

echo "== detection delay: $HANGS injected hangs, 8 ranks, fault after 25 s"
for i in $(seq "$HANGS"); do
    rank=$((RANDOM % 8))
    mode=sleep
    [ $((i % 2)) -eq 0 ] && mode=spin
    start_job 8 0 "$rank" 25 "$mode"
    rm -rf "$work/report"
    set +e
    "$strata" watch --launcher-pid "$launcher" --report-dir "$work/report" --json \
        > "$work/watch.json" 2> "$work/watch.err"
    code=$?
    set -e
    kill_tree TERM "$launcher"
    wait "$launcher" 2>/dev/null || true
    python3 - "$out" "$work" "$i" "$rank" "$mode" "$code" <<'EOF'
import json, re, sys
out, work, i, rank, mode, code = sys.argv[1:]
job = open(f"{work}/job.out").read()
m = re.search(r"hang rank (\d+) at ([\d.]+)", job)
line = {"kind": "hang", "run": int(i), "rank": int(rank), "mode": mode, "exit": int(code)}
try:
    w = json.load(open(f"{work}/report/watch.json"))
    line["delay_s"] = round(w["detected_at_unix"] - float(m.group(2)), 3) if m else None
    line["trigger"] = next(iter(w["trigger"]))
    c = w["classification"]
    line["named"] = c.get("computation", {}).get("suspects") == [int(rank)]
except (OSError, KeyError, ValueError) as e:
    line["error"] = str(e)
open(out, "a").write(json.dumps(line) + "\n")
print("  ", json.dumps(line))
EOF
done

if [ "$HEALTHY_MIN" -eq 0 ]; then
    python3 tests/bench/watch_summary.py "$out"
    exit 0
fi
echo "== false alarms: the healthy program watched for $HEALTHY_MIN minutes"
start_job 8 0 -1 0 sleep
set +e
"$strata" watch --launcher-pid "$launcher" --for "$((HEALTHY_MIN * 60))s" --on-hang continue \
    --report-dir "$work/false-report" -v > "$work/healthy.out" 2> "$work/healthy.err"
code=$?
set -e
kill "$launcher" 2>/dev/null || true
wait "$launcher" 2>/dev/null || true
probes=$(grep -c ' S_out ' "$work/healthy.err" || true)
alarms=$(grep -c 'alarm: ' "$work/healthy.err" || true)
still=$(grep -c 'has not told anything' "$work/healthy.err" || true)
dismissed=$(grep -c 'not a hang' "$work/healthy.err" || true)
reported=$(grep -c 'is HUNG' "$work/healthy.out" || true)
interval=$(grep -o 'interval doubled to [0-9]* ms' "$work/healthy.err" | tail -1 || true)
echo "{\"kind\": \"healthy\", \"minutes\": $HEALTHY_MIN, \"exit\": $code, \"probes\": $probes, \"alarms\": $alarms, \"stillness_checks\": $still, \"dismissed\": $dismissed, \"hangs_reported\": $reported, \"interval\": \"${interval:-400 ms}\"}" >> "$out"
tail -1 "$out"

python3 tests/bench/watch_summary.py "$out"
