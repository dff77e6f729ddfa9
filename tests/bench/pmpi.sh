#!/bin/bash
# The PMPI library's cost on Debian's Open MPI, with and without `strata run` (the library
# embedded in a release strata, preloaded in every rank):
#   - per call: one rank calling MPI_Iprobe N times (a cheap call that finds nothing);
#   - on a mini-app: a halo exchange of RANKS ranks (MPI_Isend, MPI_Irecv, MPI_Waitall, an
#     MPI_Allreduce every 100 iterations), ITERS iterations of DOUBLES doubles per message;
# REPS runs of each, alternating with and without, medians. Prints the added ns per call and
# the mini-app's wall-time ratio.
#
#   bash tests/bench/pmpi.sh [REPS] [RANKS] [ITERS] [DOUBLES]
#        (default 7 runs, 2 ranks, 2000000 iterations of 64 doubles)
set -euo pipefail
REPS=${1:-7}
RANKS=${2:-2}
ITERS=${3:-2000000}
DOUBLES=${4:-64}
PROBES=2000000
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cargo build --release --quiet --manifest-path "$ROOT/Cargo.toml"
STRATA=$ROOT/target/release/strata
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpicc -O2 -o "$WORK/pmpi_cost" "$ROOT/tests/bench/pmpi_cost.c"
median() { sort -n | awk '{a[NR]=$1} END {if (NR == 0) print 0; else print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
launch() { # launch with|without NP ARGS...
  local how=$1; shift
  local np=$1; shift
  if [ "$how" = with ]; then
    "$STRATA" run --library-dir "$WORK/lib" -- mpirun --oversubscribe -np "$np" "$WORK/pmpi_cost" "$@"
  else
    mpirun --oversubscribe -np "$np" "$WORK/pmpi_cost" "$@"
  fi
}
for how in without with; do : > "$WORK/probe.$how"; : > "$WORK/halo.$how"; done
for _ in $(seq "$REPS"); do
  for how in without with; do
    launch "$how" 1 probe "$PROBES" | awk '/^ns_per_call/ {print $2}' >> "$WORK/probe.$how"
    launch "$how" "$RANKS" halo "$ITERS" "$DOUBLES" | awk '/^seconds/ {print $2}' >> "$WORK/halo.$how"
  done
done
p0=$(median < "$WORK/probe.without"); p1=$(median < "$WORK/probe.with")
h0=$(median < "$WORK/halo.without"); h1=$(median < "$WORK/halo.with")
echo "MPI_Iprobe: ${p0} ns per call without the library, ${p1} ns with (median of $REPS): +$(awk -v a="$p0" -v b="$p1" 'BEGIN {printf "%.1f", b - a}') ns"
echo "halo exchange, $RANKS ranks, $ITERS iterations of $DOUBLES doubles: ${h0} s without, ${h1} s with (median of $REPS): $(awk -v a="$h0" -v b="$h1" 'BEGIN {printf "%+.2f%%", (b / a - 1) * 100}'), $(awk -v a="$h0" -v n="$ITERS" 'BEGIN {printf "%.0f", n / a}') iterations per second"
