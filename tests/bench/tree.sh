#!/usr/bin/env bash
# strata attach through the tree network: wall time of `strata attach` on a hung
# Open MPI ring with the default tree (1 daemon), a three-level tree (4 daemons under 2
# commnodes), the serial mode (no daemons), and eu-stack looped over the ranks; then the
# phases of the three-level tree (STRATA_TIMINGS).
#
#   bash tests/bench/tree.sh [RANKS]        (default 32)
#
# Needs gcc, elfutils, openmpi-bin, libopenmpi-dev. Caches warm (see attach.sh for cold).
set -euo pipefail
cd "$(dirname "$0")/../.."
RANKS=${1:-32}
RUNS=${RUNS:-7}
source tests/bench/lib.sh
need mpicc mpirun eu-stack

cargo build -q --release -p strata-frontend --bin strata
strata=$PWD/target/release/strata
start_ring "$RANKS"

echo "== $(nproc) cores, $(uname -r), $RANKS hung ranks, medians of $RUNS warm runs"
for n in 1 10; do
    bench_warm "strata attach -n $n, tree 1 -> 1 (default: one daemon)" \
        "$strata" attach --launcher-pid "$mpirun_pid" -n "$n" --no-files
    bench_warm "strata attach -n $n, tree 1 -> 2 -> 4 (--daemons 4 --fanout 2)" \
        "$strata" attach --launcher-pid "$mpirun_pid" -n "$n" --no-files --daemons 4 --fanout 2
    bench_warm "strata attach -n $n, tree 1 -> 2 -> 4 -> 8 (--daemons 8 --fanout 2)" \
        "$strata" attach --launcher-pid "$mpirun_pid" -n "$n" --no-files --daemons 8 --fanout 2
    bench_warm "strata attach -n $n --serial (no daemons, no tree)" \
        "$strata" attach --launcher-pid "$mpirun_pid" -n "$n" --no-files --serial
done
bench_warm "eu-stack -p, each rank once, sequential" \
    sh -c "for p in $ranks; do eu-stack -p \$p; done"

phases() { # label, extra strata arguments...: median of each STRATA_TIMINGS phase
    local label=$1; shift
    echo "== phases of 'strata attach -n 1 $label' (medians of $RUNS)"
    for _ in $(seq "$RUNS"); do
        STRATA_TIMINGS=1 "$strata" attach --launcher-pid "$mpirun_pid" -n 1 --no-files "$@" \
            2>&1 >/dev/null
    done | phase_medians
}
phases "(tree 1 -> 1)"
phases "--daemons 4 --fanout 2 (tree 1 -> 2 -> 4)" --daemons 4 --fanout 2
phases "--serial" --serial
