#!/usr/bin/env bash
# Debug information per attach: what the daemons read and index, on a hung 32-rank Open MPI
# ring (one binary, libc with libc6-dbg's separate debug file), with the default tree (one
# daemon) and with --daemons 4 --fanout 2. Prints the medians of RUNS attaches (-n 1): the
# whole attach, the binaries indexed (summed over daemons) against the distinct build-ids,
# the bytes of debug files read, and the time spent loading them (summed over daemons).
# The baseline for "read each binary's debug information once per job".
#
#   bash tests/bench/debuginfo.sh [RANKS]     (32 by default; RUNS=5)
#
# Needs mpicc/mpirun and libc6-dbg (tests/run-all.sh installs them); builds strata in
# release mode.
set -euo pipefail
cd "$(dirname "$0")/../.."
RANKS=${1:-32}
RUNS=${RUNS:-5}
source tests/bench/lib.sh
need mpicc mpirun
cargo build -q --release -p strata-frontend --bin strata
strata=target/release/strata
start_ring "$RANKS"

# One attach: "total_ms daemons indexed distinct megabytes load_ms".
attach_once() {
    STRATA_TIMINGS=1 "$strata" attach --launcher-pid "$mpirun_pid" -n 1 --no-files "$@" \
        2>&1 >/dev/null | awk '
        /timing: total:/ {total = $4}
        /^strata: debug info:/ {
            line = $0; gsub(/[^0-9. ]/, " ", line); split(line, n, " +")
            # n: daemons indexed distinct MB ms (after the leading empty field)
            printf "%s %s %s %s %s %s\n", total, n[2], n[3], n[4], n[5], n[6]
        }'
}

printf '%-28s %9s %8s %8s %9s %8s %10s\n' tree "attach ms" daemons indexed distinct "MB read" "load ms"
for tree in default "--daemons 4 --fanout 2"; do
    args=()
    [ "$tree" = default ] || read -ra args <<< "$tree"
    attach_once "${args[@]}" > /dev/null # warm-up: the page cache, not strata's
    for _ in $(seq "$RUNS"); do attach_once "${args[@]}"; done > "$work/runs"
    col() { awk -v c="$1" '{print $c}' "$work/runs" | median; }
    printf '%-28s %9s %8s %8s %9s %8s %10s\n' "$tree" "$(col 1)" "$(col 2)" "$(col 3)" \
        "$(col 4)" "$(col 5)" "$(col 6)"
done
