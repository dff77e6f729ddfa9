#!/bin/bash
# The PMPI library's cost on Debian's Open MPI, with and without `strata run` (the library
# embedded in a release strata, preloaded in every rank):
#   - per call: one rank calling MPI_Iprobe N times (a cheap call that finds nothing);
#   - on a mini-app: a halo exchange of RANKS ranks (MPI_Isend, MPI_Irecv, MPI_Waitall, an
#     MPI_Allreduce every 100 iterations), ITERS iterations of DOUBLES doubles per message
#     and a 3-point stencil over WORK doubles per iteration;
# REPS runs of each, alternating with and without, medians. Prints the added ns per call and
# the mini-app's wall-time ratio. With valgrind, also the instructions the library adds,
# counted by callgrind (exact, where wall time on a shared machine is noisy): per
# MPI_Iprobe, and per iteration of the halo exchange on one rank (its own neighbour).
#
#   bash tests/bench/pmpi.sh [REPS] [RANKS] [ITERS] [DOUBLES] [WORK]
#        (default 7 runs, 2 ranks, 2000000 iterations of 64 doubles, no stencil)
# STRATA=target/debug/strata skips the release build: every strata embeds the same library,
# built optimised by frontend/build.rs whatever the profile.
set -euo pipefail
REPS=${1:-7}
RANKS=${2:-2}
ITERS=${3:-2000000}
DOUBLES=${4:-64}
WORK=${5:-0}
PROBES=2000000
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
if [ -z "${STRATA:-}" ]; then
  cargo build --release --quiet --manifest-path "$ROOT/Cargo.toml"
  STRATA=$ROOT/target/release/strata
fi
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpicc -O2 -o "$TMP/pmpi_cost" "$ROOT/tests/bench/pmpi_cost.c"
median() { sort -n | awk '{a[NR]=$1} END {if (NR == 0) print 0; else print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
launch() { # launch with|without NP ARGS...
  local how=$1; shift
  local np=$1; shift
  if [ "$how" = with ]; then
    "$STRATA" run --library-dir "$TMP/lib" -- mpirun --oversubscribe -np "$np" "$TMP/pmpi_cost" "$@"
  else
    mpirun --oversubscribe -np "$np" "$TMP/pmpi_cost" "$@"
  fi
}
for how in without with; do : > "$TMP/probe.$how"; : > "$TMP/halo.$how"; done
for _ in $(seq "$REPS"); do
  for how in without with; do
    launch "$how" 1 probe "$PROBES" | awk '/^ns_per_call/ {print $2}' >> "$TMP/probe.$how"
    launch "$how" "$RANKS" halo "$ITERS" "$DOUBLES" "$WORK" | awk '/^seconds/ {print $2}' >> "$TMP/halo.$how"
  done
done
p0=$(median < "$TMP/probe.without"); p1=$(median < "$TMP/probe.with")
h0=$(median < "$TMP/halo.without"); h1=$(median < "$TMP/halo.with")
echo "MPI_Iprobe: ${p0} ns per call without the library, ${p1} ns with (median of $REPS): +$(awk -v a="$p0" -v b="$p1" 'BEGIN {printf "%.1f", b - a}') ns"
echo "halo exchange, $RANKS ranks, $ITERS iterations of $DOUBLES doubles, stencil of $WORK: ${h0} s without, ${h1} s with (median of $REPS): $(awk -v a="$h0" -v b="$h1" 'BEGIN {printf "%+.2f%%", (b / a - 1) * 100}'), $(awk -v a="$h0" -v n="$ITERS" 'BEGIN {printf "%.0f", n / a}') iterations per second"
if command -v valgrind >/dev/null; then
  "$STRATA" run --library-dir "$TMP/lib" --dry-run -- mpirun true >/dev/null
  LIB=$(ls "$TMP"/lib/libstrata_pmpi-*.so)
  instructions() { # instructions PRELOAD ARGS...: the rank's instruction count
    local preload=$1; shift
    mpirun -np 1 ${preload:+-x LD_PRELOAD="$preload"} valgrind --tool=callgrind \
      --callgrind-out-file="$TMP/cg.out" "$TMP/pmpi_cost" "$@" 2>&1 |
      awk '/I *refs:/ {gsub(",", "", $NF); print $NF}'
  }
  # Per iteration: the difference between runs of 2n and n iterations, so that start-up
  # (MPI_Init, the library's lookups) cancels out.
  n=20000
  per() { # per PRELOAD MODE ARGS...: instructions per iteration
    local preload=$1 mode=$2; shift 2
    local one two
    one=$(instructions "$preload" "$mode" $n "$@"); two=$(instructions "$preload" "$mode" $((2 * n)) "$@")
    echo $(( (two - one) / n ))
  }
  a=$(per "" halo "$DOUBLES" 0); b=$(per "$LIB" halo "$DOUBLES" 0)
  c=$(per "" probe); d=$(per "$LIB" probe)
  echo "callgrind, one rank: a halo iteration is $a instructions without the library, $b with (+$(( b - a ))); an MPI_Iprobe $c without, $d with (+$(( d - c )))"
fi
