#!/usr/bin/env bash
# Debug information per attach: what the daemons read and index, on a hung 32-rank Open MPI
# ring (one binary, libc with libc6-dbg's separate debug file), with the default tree (one
# daemon) and with --daemons 4 --fanout 2, each without the debug index cache (every
# daemon reads DWARF), with a cold cache (a new directory per attach: one build per
# binary per job), with a warm one, and with the warm one marked as shared between nodes
# (--debug-cache-shared: the front end reads each entry and sends it down the tree).
# Prints the medians of RUNS attaches (-n 1): the whole attach, the binaries indexed
# (summed over daemons) against the distinct build-ids, the entries taken from the cache,
# the bytes of debug files and cache entries read, the time spent loading them (summed
# over daemons), and what came down the tree.
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

# One attach: "total_ms daemons indexed distinct hits megabytes load_ms provided
# front_end_megabytes front_end_indexed" (provided: the indexes the daemons took from the
# tree; the front end's bytes read and indexes built to send them).
attach_once() {
    STRATA_TIMINGS=1 "$strata" attach --launcher-pid "$mpirun_pid" -n 1 --no-files "$@" \
        2>&1 >/dev/null | awk "$STRATA_DEBUG_AWK"'
        END {
            if (front == "") front = "0 0"
            print total, n[2], n[3], n[4], n[5], n[6], n[7], n[8], front
        }'
    wait_for_builders
}

row='%-24s %-6s %9s %8s %8s %9s %6s %8s %8s %9s %6s %8s\n'
# "indexed", "MB read" and "load ms" are the daemons'; "FE MB" and "FE built" what the
# front end read and indexed to send "from tree" indexes down.
printf "$row" tree cache "attach ms" daemons indexed distinct hits "MB read" "load ms" \
    "from tree" "FE MB" "FE built"
for tree in default "--daemons 4 --fanout 2"; do
    args=()
    [ "$tree" = default ] || read -ra args <<< "$tree"
    for cache in none cold warm shared; do
        case $cache in
            none) cache_args=(--no-debug-cache) ;;
            warm) cache_args=(--debug-cache "$work/warm-cache") ;;
            # a warm cache on a file system the nodes share: the front end reads each
            # entry once and sends it down, the daemons read none
            shared) cache_args=(--debug-cache "$work/warm-cache" --debug-cache-shared) ;;
        esac
        # warm-up: the page cache (and, for "warm", the index cache)
        [ "$cache" = cold ] || attach_once "${args[@]}" "${cache_args[@]}" > /dev/null
        for i in $(seq "$RUNS"); do
            [ "$cache" = cold ] && cache_args=(--debug-cache "$work/cold-cache-$tree-$i")
            attach_once "${args[@]}" "${cache_args[@]}"
        done > "$work/runs"
        col() { awk -v c="$1" '{print $c}' "$work/runs" | median; }
        printf "$row" "$tree" "$cache" "$(col 1)" "$(col 2)" "$(col 3)" "$(col 4)" \
            "$(col 5)" "$(col 6)" "$(col 7)" "$(col 8)" "$(col 9)" "$(col 10)"
    done
done
