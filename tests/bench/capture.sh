#!/usr/bin/env bash
# Capture benchmark: how long strata keeps a process stopped, and how long a
# whole stack dump takes next to eu-stack and gdb, on the same processes in one run.
#
#   bash tests/bench/capture.sh [RANKS]        (default 32 Open MPI ranks)
#
# Needs: gcc, elfutils (eu-stack), gdb, openmpi-bin + libopenmpi-dev (apt-get install them).
# Prints medians and p99s; docs/PERFORMANCE.md quotes a run of it.
set -euo pipefail
cd "$(dirname "$0")/../.."
RANKS=${1:-32}
CAPTURES=${CAPTURES:-300}
source tests/bench/lib.sh
need cc mpicc mpirun eu-stack gdb

cargo build -q --release -p strata-frontend --bin strata
cargo build -q --release -p strata-daemon --example stoptime
strata=target/release/strata
stoptime=target/release/examples/stoptime
cc -O2 -g -pthread -o "$work/target" daemon/tests/fixtures/capture_target.c
cc -O2 -g -pthread -o "$work/spin" daemon/tests/fixtures/capture_spin.c

start() { # start a fixture that prints "ready"; its pid in $started
    "$@" > "$work/out.$$" 2>&1 &
    started=$!
    disown "$started"
    pids+=("$started")
    for _ in $(seq 500); do grep -q ready "$work/out.$$" 2>/dev/null && break; sleep 0.01; done
}

echo "== machine: $(nproc) cores, $(uname -r)"
echo "== stop time, blocked targets (idle machine), $CAPTURES captures each, one capture thread"
start "$work/target" 0; one=$started
start "$work/target" 3; four=$started
sleep 0.2
$stoptime --threads 1 --captures "$CAPTURES" "$one"
$stoptime --threads 1 --captures "$CAPTURES" "$four"
kill -9 "$one" "$four"

echo "== stop time, 4 spinning threads (all cores busy)"
start "$work/spin" 3; spin=$started
sleep 0.2
$stoptime --captures "$CAPTURES" "$spin"
kill -9 "$spin"

echo "== $RANKS hung Open MPI ranks (ring, rank 1 sleeps before its send; the rest spin in MPI)"
start_ring "$RANKS"
echo "ranks: $(echo $ranks | wc -w) processes"
$stoptime --captures 50 $ranks

echo "== whole dump of all $RANKS ranks (capture + unwind + print), median of 5"
time_it() { for _ in 1 2 3 4 5; do seconds "$@"; done | median; }
echo "strata dump (all ranks, one command):   $(time_it $strata dump $(echo $ranks | tr ' ' ','))"
echo "eu-stack -p, one per rank, sequential:  $(time_it sh -c "for p in $ranks; do eu-stack -p \$p; done")"
echo "gdb -batch 'thread apply all bt', one per rank (1 run): $(
    seconds sh -c "for p in $ranks; do gdb -batch -p \$p -ex 'thread apply all bt'; done")"
