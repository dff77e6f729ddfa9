#!/usr/bin/env bash
# The HTML report in a real headless Chromium: file size, first paint, the tree drawn,
# expanding a node, "expand all" and a rank's stack, for a real hung 32-rank Open MPI ring
# and for `strata bench` results of 32,768 and 1,048,576 emulated tasks. Also what writing
# the 1M result directory and its report costs. A benchmark (docs/PERFORMANCE.md), not a
# test.
#
#   bash tests/bench/report.sh          # RUNS=5 page loads per report by default
#
# Needs mpicc/mpirun (Open MPI), python3, chromium and chromedriver (Debian's chromium and
# chromium-driver).
set -euo pipefail
cd "$(dirname "$0")/../.."
source tests/bench/lib.sh
need mpicc mpirun python3 chromium chromedriver
export RUNS=${RUNS:-5}

cargo build -q --release -p strata-frontend --bin strata
strata=$PWD/target/release/strata

start_ring 32
"$strata" attach --launcher-pid "$mpirun_pid" -n 3 -o "$work/ring32" > /dev/null 2>&1
# What the files cost an attach (STRATA_TIMINGS), medians of RUNS attaches.
echo "strata attach on the 32-rank ring, medians of $RUNS:"
for _ in $(seq "$RUNS"); do
    STRATA_TIMINGS=1 "$strata" attach --launcher-pid "$mpirun_pid" -n 3 -o "$work/ring32-t" \
        2>&1 > /dev/null
done | grep -E "timing: (verdict|render|result files|report.html|total)" \
    | sed 's/ (.*)$//' | phase_medians
"$strata" bench --daemons 128 --tasks-per-daemon 256 --output "$work/bench32k" \
    > "$work/bench32k.json" 2> /dev/null
"$strata" bench --daemons 4096 --tasks-per-daemon 256 --output "$work/bench1m" \
    > "$work/bench1m.json" 2> /dev/null

python3 - "$work/bench1m.json" <<'PY'
import json, sys
o = json.load(open(sys.argv[1]))["output"]
ms = o["ms"]
print("writing the 1,048,576-task result directory (ms): " + ", ".join(
    f"{k} {v:.0f}" for k, v in ms.items()) + f"; report.html {o['report_html_bytes'] / 1e6:.1f} MB")
PY
python3 tests/bench/report.py ring-32="$work/ring32/report.html" \
    bench-32K="$work/bench32k/report.html" bench-1M="$work/bench1m/report.html"
