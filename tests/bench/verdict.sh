#!/bin/bash
# The verdict's cost (which MPI call every rank is in, whether it moved, the answer and its
# paragraph) on a real hung Open MPI job: REPS attaches with the default options
# (10 samples, 100 ms apart) and STRATA_TIMINGS, checking the answer each time. Prints the
# medians of the verdict step and of the whole attach, and their ratio.
#
#   bash tests/bench/verdict.sh [RANKS] [REPS]        (default 32 ranks, 7 attaches)
#
# The job is tests/hangs/stuck_computing.c: rank 2 loops outside MPI while every other rank
# waits in MPI_Allreduce. Needs mpicc/mpirun (tests/run-all.sh installs them); builds strata
# in release mode.
set -euo pipefail
RANKS=${1:-32}
REPS=${2:-7}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cargo build --release --quiet --manifest-path "$ROOT/Cargo.toml"
STRATA=$ROOT/target/release/strata
WORK=$(mktemp -d)
mpirun_pid=""
cleanup() {
  [ -z "$mpirun_pid" ] || kill -9 "$mpirun_pid" 2>/dev/null || true
  for p in $(awk '/^rank .* pid/ {print $4}' "$WORK/job.out" 2>/dev/null); do kill -9 "$p" 2>/dev/null || true; done
  rm -rf "$WORK"
}
trap cleanup EXIT
mpicc -O0 -g -o "$WORK/stuck" "$ROOT/tests/hangs/stuck_computing.c"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_mpi_yield_when_idle=1
median() { sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
timing() { sed -n "s/.*timing: $1: \([0-9.]*\) ms.*/\1/p" "$WORK/err.txt"; }

mpirun --oversubscribe -np "$RANKS" "$WORK/stuck" > "$WORK/job.out" 2>&1 &
mpirun_pid=$!
disown "$mpirun_pid"
until [ "$(grep -c '^rank .* pid' "$WORK/job.out" 2>/dev/null)" -ge "$RANKS" ]; do sleep 0.2; done
sleep 1.5
: > "$WORK/verdict.ms"; : > "$WORK/total.ms"
for _ in $(seq "$REPS"); do
  STRATA_TIMINGS=1 "$STRATA" attach --launcher-pid "$mpirun_pid" --no-files \
    > "$WORK/out.txt" 2> "$WORK/err.txt"
  grep -q "debug \[2\]: outside MPI in spin_forever" "$WORK/out.txt" || { cat "$WORK/out.txt"; exit 1; }
  timing verdict >> "$WORK/verdict.ms"
  timing total >> "$WORK/total.ms"
done
v=$(median < "$WORK/verdict.ms")
t=$(median < "$WORK/total.ms")
echo "$RANKS ranks, $REPS attaches: verdict median $v ms (runs: $(tr '\n' ' ' < "$WORK/verdict.ms")); attach total median $t ms; verdict/total $(awk "BEGIN {printf \"%.2f%%\", 100 * $v / $t}")"
