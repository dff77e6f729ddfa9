#!/usr/bin/env bash
# The tree at scale with real daemons (STATBench's idea, "Lessons Learned at 208K", 2008):
# 64 to MAX `strata daemon` processes over loopback, each serving RANKS_PER_DAEMON real
# processes (a C++ -O2 -g binary blocked in pause(): it maps libstdc++, libm, libgcc_s and
# libc, whose libc6-dbg file is the big read), under commnodes of the default fan-out.
# For each daemon count, one attach with a cold debug index cache (a new directory) and
# RUNS with a warm one, -n 1, printing what does not depend on this machine's 2 cores:
# binaries indexed against distinct build-ids (goal: equal cold, 0 warm), bytes of debug
# files and cache entries read, CPU time per daemon (median and max, the sample phase
# included), peak daemon memory; and the attach's wall time, without a goal (every daemon
# shares the same 2 cores).
#
#   bash tests/bench/daemons.sh [MAX]     (1024 by default; RUNS=3, RANKS_PER_DAEMON=1,
#                                          MIN=64: the first daemon count, STDERR_DIR=DIR
#                                          keeps each attach's messages)
#
# Needs c++ and libc6-dbg (tests/run-all.sh installs them); builds strata in release mode.
set -euo pipefail
cd "$(dirname "$0")/../.."
MAX=${1:-1024}
RUNS=${RUNS:-3}
PER=${RANKS_PER_DAEMON:-1}
source tests/bench/lib.sh
need c++
cargo build -q --release -p strata-frontend --bin strata
strata=$PWD/target/release/strata
c++ -O2 -g -o "$work/blocked" daemon/tests/fixtures/templates.cpp
ulimit -n "$(ulimit -Hn)"

# MAX * PER processes blocked in pause(), each having written "ready".
total=$((MAX * PER))
for i in $(seq "$total"); do
    "$work/blocked" > "$work/out.$i" 2>&1 &
    pids+=("$!")
done
for i in $(seq "$total"); do
    until grep -q ready "$work/out.$i" 2>/dev/null; do sleep 0.01; done
done

# One attach: "total_ms daemons indexed distinct hits megabytes cpu_median_ms cpu_max_ms
# rss_median_mib rss_max_mib missing provided front_end_megabytes front_end_indexed"
# (missing: lines naming ranks not sampled, one per lost daemon or commnode; provided: the
# indexes daemons took from the tree; the front end's bytes read and indexes built to
# send them).
attach_once() {
    local daemons=$1 cache=$2
    local list
    list=$(IFS=,; echo "${pids[*]:0:$((daemons * PER))}")
    # Exit 4 (some ranks missing: daemons that did not answer in time on 2 cores) is a
    # result to report, not a failure of the bench.
    STRATA_TIMINGS=1 "$strata" attach --pids "$list" --daemons "$daemons" -n 1 --no-files \
        --debug-cache "$cache" 2> "$work/stderr" > /dev/null || {
        local rc=$?
        [ "$rc" -eq 4 ] || { tail -5 "$work/stderr" >&2; return "$rc"; }
    }
    # STDERR_DIR=DIR keeps every attach's messages.
    [ -z "${STDERR_DIR:-}" ] || cp "$work/stderr" "$STDERR_DIR/$daemons-$(date +%s%N).txt"
    awk "$STRATA_DEBUG_AWK"'
        /^strata: daemons:/ {
            line = $0; gsub(/[^0-9. ]/, " ", line); split(line, d, " +")
            # d: count, cpu median, cpu max, rss median, rss max
            cost = d[3] " " d[4] " " d[5] " " d[6]
        }
        /^strata: rank/ {missing++}
        END {
            if (front == "") front = "0 0"
            debug = n[2] " " n[3] " " n[4] " " n[5] " " n[6]
            print total, debug, cost, missing + 0, n[8] + 0, front
        }' "$work/stderr"
    wait_for_builders
}

row='%8s %-5s %9s %8s %9s %5s %8s %9s %8s %8s %12s %9s %12s %9s %8s\n'
# "MB read" is what the daemons read; "FE MB" and "FE built" what the front end read and
# indexed to send "from tree" indexes down.
printf "$row" daemons cache "attach ms" indexed distinct hits "MB read" "from tree" "FE MB" \
    "FE built" "cpu med ms" "cpu max" "rss med MiB" "rss max" "missing"
daemons=${MIN:-64}
while [ "$daemons" -le "$MAX" ]; do
    cold="$work/cache-cold-$daemons"
    attach_once "$daemons" "$cold" > "$work/cold"
    for _ in $(seq "$RUNS"); do attach_once "$daemons" "$cold"; done > "$work/warm"
    for cache in cold warm; do
        col() { awk -v c="$1" '{print $c}' "$work/$cache" | median; }
        printf "$row" "$daemons" "$cache" "$(col 1)" "$(col 3)" "$(col 4)" "$(col 5)" \
            "$(col 6)" "$(col 12)" "$(col 13)" "$(col 14)" "$(col 7)" "$(col 8)" "$(col 9)" \
            "$(col 10)" "$(col 11)"
    done
    daemons=$((daemons * 2))
done
