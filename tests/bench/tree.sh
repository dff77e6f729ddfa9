#!/usr/bin/env bash
# strata attach through the tree network (issue 5): wall time of `strata attach` on a hung
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

bench() { # label, command...: median of RUNS warm runs
    local label=$1; shift
    "$@" > /dev/null 2>&1 || true   # warm-up
    local t
    t=$(for _ in $(seq "$RUNS"); do seconds "$@"; done | median)
    printf '%-62s %7.3f s\n' "$label" "$t"
}
echo "== $(nproc) cores, $(uname -r), $RANKS hung ranks, medians of $RUNS warm runs"
for n in 1 10; do
    bench "strata attach -n $n, tree 1 -> 1 (default: one daemon)" \
        "$strata" attach --launcher-pid "$mpirun_pid" -n "$n" --no-files
    bench "strata attach -n $n, tree 1 -> 2 -> 4 (--daemons 4 --fanout 2)" \
        "$strata" attach --launcher-pid "$mpirun_pid" -n "$n" --no-files --daemons 4 --fanout 2
    bench "strata attach -n $n, tree 1 -> 2 -> 4 -> 8 (--daemons 8 --fanout 2)" \
        "$strata" attach --launcher-pid "$mpirun_pid" -n "$n" --no-files --daemons 8 --fanout 2
    bench "strata attach -n $n --serial (no daemons, no tree)" \
        "$strata" attach --launcher-pid "$mpirun_pid" -n "$n" --no-files --serial
done
bench "eu-stack -p, each rank once, sequential" \
    sh -c "for p in $ranks; do eu-stack -p \$p; done"

phases() { # label, extra strata arguments...: median of each STRATA_TIMINGS phase
    local label=$1; shift
    echo "== phases of 'strata attach -n 1 $label' (medians of $RUNS)"
    for _ in $(seq "$RUNS"); do
        STRATA_TIMINGS=1 "$strata" attach --launcher-pid "$mpirun_pid" -n 1 --no-files "$@" \
            2>&1 >/dev/null | grep 'timing:'
    done | awk -F': ' '{sub(/ ms$/, "", $4); print $3 "\t" $4}' | sort -t$'\t' -k1,1 -k2,2n \
        | awk -F'\t' '{v[$1] = v[$1] " " $2; n[$1]++}
            END {for (k in v) {split(substr(v[k], 2), a, " ");
                 printf "  %-28s %7.1f ms\n", k, a[int((n[k]+1)/2)]}}'
}
phases "(tree 1 -> 1)"
phases "--daemons 4 --fanout 2 (tree 1 -> 2 -> 4)" --daemons 4 --fanout 2
phases "--serial" --serial
