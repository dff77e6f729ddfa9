#!/bin/bash
# The verdict's cost on real hung Open MPI jobs: REPS attaches with the default options
# (10 samples, 100 ms apart) and STRATA_TIMINGS, checking the answer each time. Prints, per
# job, the medians of the verdict step (which MPI call every rank is in, whether it moved,
# the wait-for graph, the answer and its paragraph), of the variable reads it asked for
# (the peers of the calls; every rank is stopped once more), and of the whole attach.
#
#   bash tests/bench/verdict.sh [RANKS] [REPS]        (default 32 ranks, 7 attaches)
#
# Jobs (tests/hangs/):
#   stuck_computing.c  rank 2 loops outside MPI; the others wait in MPI_Allreduce on
#                      MPI_COMM_WORLD (a constant: nothing to read).
#   recv_cycle3.c      ranks 0-2 receive from each other in a cycle (the peer is a variable,
#                      read in every rank); the others wait in MPI_Barrier.
# Needs mpicc/mpirun (tests/run-all.sh installs them); builds strata in release mode.
set -euo pipefail
RANKS=${1:-32}
REPS=${2:-7}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cargo build --release --quiet --manifest-path "$ROOT/Cargo.toml"
STRATA=$ROOT/target/release/strata
WORK=$(mktemp -d)
mpirun_pid=""
stop_job() {
  [ -z "$mpirun_pid" ] || kill -9 "$mpirun_pid" 2>/dev/null || true
  for p in $(awk '/^rank .* pid/ {print $4}' "$WORK/job.out" 2>/dev/null); do kill -9 "$p" 2>/dev/null || true; done
  mpirun_pid=""
}
cleanup() {
  stop_job
  rm -rf "$WORK"
}
trap cleanup EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_mpi_yield_when_idle=1
median() { sort -n | awk '{a[NR]=$1} END {if (NR == 0) print 0; else print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
timing() { sed -n "s/.*timing: $1: \([0-9.]*\) ms.*/\1/p" "$WORK/err.txt"; }

# bench PROGRAM EXPECTED-LINE: attaches REPS times to PROGRAM on RANKS ranks.
bench() {
  local program=$1 expected=$2
  mpicc -O0 -g -I"$ROOT/tests/hangs" -o "$WORK/$program" "$ROOT/tests/hangs/$program.c"
  mpirun --oversubscribe -np "$RANKS" "$WORK/$program" > "$WORK/job.out" 2>&1 &
  mpirun_pid=$!
  disown "$mpirun_pid"
  until [ "$(grep -c '^rank .* pid' "$WORK/job.out" 2>/dev/null)" -ge "$RANKS" ]; do sleep 0.2; done
  sleep 1.5
  : > "$WORK/verdict.ms"; : > "$WORK/reads.ms"; : > "$WORK/total.ms"
  for _ in $(seq "$REPS"); do
    STRATA_TIMINGS=1 "$STRATA" attach --launcher-pid "$mpirun_pid" --no-files \
      > "$WORK/out.txt" 2> "$WORK/err.txt"
    grep -q "$expected" "$WORK/out.txt" || { cat "$WORK/out.txt"; exit 1; }
    timing verdict >> "$WORK/verdict.ms"
    timing "read variables" >> "$WORK/reads.ms"
    timing total >> "$WORK/total.ms"
  done
  stop_job
  local v r t
  v=$(median < "$WORK/verdict.ms")
  r=$(median < "$WORK/reads.ms")
  t=$(median < "$WORK/total.ms")
  echo "$program, $RANKS ranks, $REPS attaches: verdict median $v ms (runs: $(tr '\n' ' ' < "$WORK/verdict.ms")); reads median $r ms (runs: $(tr '\n' ' ' < "$WORK/reads.ms")); attach total median $t ms; (verdict + reads)/total $(awk "BEGIN {printf \"%.2f%%\", 100 * ($v + $r) / $t}")"
}

bench stuck_computing "debug \[2\]: outside MPI in spin_forever"
bench recv_cycle3 "ranks \[0-2\] wait for each other in a cycle"
