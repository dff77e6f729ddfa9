#!/bin/bash
# The time of one progress-order refinement (STAT's temporal order analysis, issue 10) on a
# real hung Open MPI job at 8 and 32 ranks: `strata attach --progress` with STRATA_TIMINGS,
# REPS times per size; prints the median of the progress step and of the whole attach.
#
#   bash tests/bench/progress.sh [REPS]        (default 7)
#
# Needs mpicc/mpirun (tests/run-all.sh installs them) and a release build of strata.
set -euo pipefail
REPS=${1:-7}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cargo build --release --quiet --manifest-path "$ROOT/Cargo.toml"
STRATA=$ROOT/target/release/strata
WORK=$(mktemp -d)
trap 'pkill -9 -f "$WORK/mpi_progress" 2>/dev/null || true; rm -rf "$WORK"' EXIT
mpicc -O2 -g -o "$WORK/mpi_progress" "$ROOT/daemon/tests/fixtures/mpi_progress.c"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_mpi_yield_when_idle=1
median() { sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
for NP in 8 32; do
  : > "$WORK/progress.ms"; : > "$WORK/total.ms"; : > "$WORK/plain.ms"
  for _ in $(seq "$REPS"); do
    mpirun --oversubscribe -np "$NP" "$WORK/mpi_progress" straight 3 > "$WORK/job.out" 2>&1 &
    MPIRUN=$!
    until [ "$(grep -c '^rank .* pid' "$WORK/job.out" 2>/dev/null)" -ge "$NP" ]; do sleep 0.2; done
    sleep 1.5
    STRATA_TIMINGS=1 "$STRATA" attach --launcher-pid $MPIRUN -n 1 --progress --no-files \
      > "$WORK/out.txt" 2> "$WORK/err.txt"
    grep -q "Least progressed: T1 (1 rank \[3\])" "$WORK/out.txt" || { cat "$WORK/out.txt"; exit 1; }
    sed -n 's/.*timing: progress order: \([0-9.]*\) ms.*/\1/p' "$WORK/err.txt" >> "$WORK/progress.ms"
    sed -n 's/.*timing: total: \([0-9.]*\) ms.*/\1/p' "$WORK/err.txt" >> "$WORK/total.ms"
    STRATA_TIMINGS=1 "$STRATA" attach --launcher-pid $MPIRUN -n 1 --no-files > /dev/null 2> "$WORK/err.txt"
    sed -n 's/.*timing: total: \([0-9.]*\) ms.*/\1/p' "$WORK/err.txt" >> "$WORK/plain.ms"
    kill -9 $MPIRUN 2>/dev/null || true; pkill -9 -f "$WORK/mpi_progress" 2>/dev/null || true
    { wait $MPIRUN; } 2>/dev/null || true
  done
  echo "ranks $NP: progress step median $(median < "$WORK/progress.ms") ms (runs: $(tr '\n' ' ' < "$WORK/progress.ms")); attach --progress total median $(median < "$WORK/total.ms") ms; attach without --progress median $(median < "$WORK/plain.ms") ms"
done
