#!/usr/bin/env bash
# strata attach benchmark: wall time of `strata attach` with 10 samples of hung
# Open MPI ranks at function and at line granularity, next to eu-stack and gdb looped over
# the same ranks, with cold (page cache dropped) and warm caches.
#
#   bash tests/bench/attach.sh [RANKS]        (default 32)
#
# Needs root (to drop the page cache), gcc, elfutils, gdb, openmpi-bin, libopenmpi-dev.
set -euo pipefail
cd "$(dirname "$0")/../.."
RANKS=${1:-32}
RUNS=${RUNS:-5}
source tests/bench/lib.sh
need mpicc mpirun eu-stack gdb

cargo build -q --release -p strata-frontend --bin strata
strata=$PWD/target/release/strata
start_ring "$RANKS"

cold() { sync; echo 3 > /proc/sys/vm/drop_caches; }
bench() { # label, command...: median of RUNS warm runs, and RUNS cold runs
    local label=$1; shift
    local warm cold_t
    "$@" > /dev/null 2>&1 || true   # warm-up
    warm=$(for _ in $(seq "$RUNS"); do seconds "$@"; done | median)
    cold_t=$(for _ in $(seq "$RUNS"); do cold; seconds "$@"; done | median)
    printf '%-58s warm %7.3f s   cold %7.3f s\n' "$label" "$warm" "$cold_t"
}
echo "== $(nproc) cores, $(uname -r), $RANKS hung ranks, medians of $RUNS runs"
bench "strata attach -n 10 (function granularity)" \
    "$strata" attach --launcher-pid "$mpirun_pid" -n 10 --no-files -g function
bench "strata attach -n 10 (line granularity)" \
    "$strata" attach --launcher-pid "$mpirun_pid" -n 10 --no-files -g line
bench "strata attach -n 1" \
    "$strata" attach --launcher-pid "$mpirun_pid" -n 1 --no-files
bench "eu-stack -p, each rank once, sequential" \
    sh -c "for p in $ranks; do eu-stack -p \$p; done"
bench "eu-stack -i -s -p (inlines, lines), each rank once" \
    sh -c "for p in $ranks; do eu-stack -i -s -p \$p; done"
RUNS=1 bench "gdb -batch 'thread apply all bt', each rank once (1 run)" \
    sh -c "for p in $ranks; do gdb -batch -p \$p -ex 'thread apply all bt'; done"
