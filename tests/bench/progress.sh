#!/bin/bash
# The time of one progress-order refinement (STAT's temporal order analysis: the progress
# order and its loop-order variables) on real hung Open MPI jobs at 8 and 32 ranks, with
# STRATA_TIMINGS, REPS times per size:
#   - mpi_progress.c straight: the order by position in the code alone;
#   - mpi_lov.c flat: every rank in the same MPI_Recv, ordered by the loop counter `it`,
#     which `--progress` reads from every rank (the "read variables" phase).
# Prints medians of the progress step, the variable reads and the whole attach.
#
#   bash tests/bench/progress.sh [REPS]        (default 7)
#
# Needs mpicc/mpirun (tests/run-all.sh installs them); builds strata in release mode.
set -euo pipefail
REPS=${1:-7}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cargo build --release --quiet --manifest-path "$ROOT/Cargo.toml"
STRATA=$ROOT/target/release/strata
WORK=$(mktemp -d)
source "$ROOT/tests/bench/kill_tree.sh"
mpirun=
trap 'kill_tree KILL "$mpirun"; rm -rf "$WORK"' EXIT
mpicc -O2 -g -o "$WORK/mpi_progress" "$ROOT/daemon/tests/fixtures/mpi_progress.c"
mpicc -O0 -g -o "$WORK/mpi_lov" "$ROOT/daemon/tests/fixtures/mpi_lov.c"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_mpi_yield_when_idle=1
median() { sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
timing() { sed -n "s/.*timing: $1: \([0-9.]*\) ms.*/\1/p" "$WORK/err.txt"; }

# run NAME NP PROGRAM ARGS... EXPECTED: REPS attaches with --progress, one without.
run() {
  local name=$1 np=$2 expect=$3; shift 3
  : > "$WORK/progress.ms"; : > "$WORK/vars.ms"; : > "$WORK/total.ms"; : > "$WORK/plain.ms"
  for _ in $(seq "$REPS"); do
    mpirun --oversubscribe -np "$np" "$@" > "$WORK/job.out" 2>&1 &
    mpirun=$!
    disown $mpirun  # no "Killed" line from bash when it is killed below
    until [ "$(grep -c '^rank .* pid' "$WORK/job.out" 2>/dev/null)" -ge "$np" ]; do sleep 0.2; done
    sleep 1.5
    STRATA_TIMINGS=1 "$STRATA" attach --launcher-pid $mpirun -n 1 --progress --no-files \
      > "$WORK/out.txt" 2> "$WORK/err.txt"
    grep -q "$expect" "$WORK/out.txt" || { cat "$WORK/out.txt"; exit 1; }
    timing "progress order" >> "$WORK/progress.ms"
    timing "read variables" >> "$WORK/vars.ms"
    timing total >> "$WORK/total.ms"
    STRATA_TIMINGS=1 "$STRATA" attach --launcher-pid $mpirun -n 1 --no-files > /dev/null 2> "$WORK/err.txt"
    timing total >> "$WORK/plain.ms"
    kill_tree KILL $mpirun
    while kill -0 $mpirun 2>/dev/null; do sleep 0.1; done
  done
  local vars="-"
  [ -s "$WORK/vars.ms" ] && vars="$(median < "$WORK/vars.ms") ms"
  echo "$name, $np ranks: progress step median $(median < "$WORK/progress.ms") ms (runs: $(tr '\n' ' ' < "$WORK/progress.ms")); read variables median $vars; attach --progress total median $(median < "$WORK/total.ms") ms; attach without --progress median $(median < "$WORK/plain.ms") ms"
}

for NP in 8 32; do
  run "straight-line stall" "$NP" 'Least progressed: T1 (1 rank \[3\])' "$WORK/mpi_progress" straight 3
  run "same stack, loop counter" "$NP" 'Least progressed: T1' "$WORK/mpi_lov" flat 2
done
