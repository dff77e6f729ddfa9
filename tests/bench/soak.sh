#!/usr/bin/env bash
# strata soak: many attaches in a row on hung Open MPI jobs under CPU load, counting every
# attach that lost a daemon, showed a rank strata could not attach to, a state label it did
# not see, a thread no sample could stop (true, but counted), other classes than the first
# attach's, or left a rank stopped or traced.
# A benchmark (it reports counts and times, docs/RELIABILITY.md), not a test.
#
#   bash tests/bench/soak.sh [ATTACHES] [RANKS] [HOGS]      (default 500 8 1)
#
# Half the attaches run on a ring (daemon/tests/fixtures/mpi_ring.c), half on two ranks
# deadlocked in MPI_Recv beside ranks in MPI_Finalize (mpi_finalize_cycle.c), each job in a
# session of its own; every attach draws -n from 1-150 (interval 10 ms) and --threads and
# --serial at random. Needs root (ptrace of the ranks), gcc, openmpi-bin, libopenmpi-dev.
set -euo pipefail
cd "$(dirname "$0")/../.."
ATTACHES=${1:-500}
RANKS=${2:-8}
HOGS=${3:-1}
SEED=${SEED:-$RANDOM}
source tests/bench/lib.sh
need mpicc mpirun setsid

cargo build -q --release -p strata-frontend --bin strata
strata=$PWD/target/release/strata
RANDOM=$SEED

# A job in a session of its own: $1 program, $2 ranks; sets $launched to the launcher's pid
# (not printed: pids+= must run in this shell for the cleanup to kill the ranks).
start_job() {
    local exe=$1 np=$2 out=$work/$(basename "$1").out
    OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
        setsid mpirun --oversubscribe -np "$np" "$exe" > "$out" 2>&1 &
    local launcher=$!
    pids+=("$launcher")
    for _ in $(seq 1000); do
        [ "$(grep -c '^rank .* pid' "$out" 2>/dev/null)" -ge "$np" ] && break
        sleep 0.02
    done
    # shellcheck disable=SC2207
    pids+=($(awk '/^rank .* pid/ {print $4}' "$out"))
    launched=$launcher
}

mpicc -O1 -g -o "$work/ring" daemon/tests/fixtures/mpi_ring.c
mpicc -O0 -g -o "$work/finalize" daemon/tests/fixtures/mpi_finalize_cycle.c
start_job "$work/ring" "$RANKS"; ring=$launched
start_job "$work/finalize" 4; finalize=$launched
sleep 1
for _ in $(seq "$HOGS"); do (while :; do :; done) & pids+=($!); done

classes() { sed -n '/equivalence class/,/^$/p' | grep -E '^  [0-9]'; }
declare -A first
bad=0 lost=0 false_label=0 not_stopped=0 other_classes=0 left=0 times=() owns=()
for i in $(seq "$ATTACHES"); do
    job=ring; launcher=$ring
    ((i % 2)) || { job=finalize; launcher=$finalize; }
    n=$((RANDOM % 150 + 1)); extra=()
    ((RANDOM % 3)) || extra+=(--threads)
    ((RANDOM % 3)) || extra+=(--serial)
    s=$EPOCHREALTIME
    out=$(STRATA_TIMINGS=1 "$strata" attach --launcher-pid "$launcher" -n "$n" --interval 10ms \
        --no-files "${extra[@]}" 2>&1) && rc=0 || rc=$?
    wall=$(awk "BEGIN {printf \"%.3f\", $EPOCHREALTIME - $s}")
    times+=("$wall")
    # strata's own total, to tell a slow attach from this script waiting for a core.
    own=$(awk '/timing: total:/ {print $4}' <<<"$out")
    [ -z "$own" ] || owns+=("$(awk "BEGIN {printf \"%.3f\", $own / 1000}")")
    awk "BEGIN {exit !($wall > 10)}" && echo "attach $i ($job -n $n ${extra[*]}): slow, ${wall} s (strata's own total ${own:-?} ms)" >&2
    problem=""
    grep -qiE 'silent for|did not answer|unreachable' <<<"$out" && { lost=$((lost + 1)); problem="lost daemon"; }
    grep -qiE 'not attached|already traced|uninterruptible' <<<"$out" &&
        { false_label=$((false_label + 1)); problem="$problem false label"; }
    # True, but worth counting: a thread that no sample of the attach could stop.
    grep -qi 'not stopped in time' <<<"$out" && { not_stopped=$((not_stopped + 1)); problem="$problem never stopped"; }
    # Classes of the ring's main threads only: --threads adds helper threads' classes, and
    # the ranks in MPI_Finalize show Open MPI's internals there, which vary by sample.
    if [ "$job" = ring ] && { [ ${#extra[@]} -eq 0 ] || [ "${extra[*]}" = --serial ]; }; then
        got=$(classes <<<"$out")
        if [ -z "${first[$job]+x}" ]; then first[$job]=$got
        elif [ "$got" != "${first[$job]}" ]; then
            other_classes=$((other_classes + 1)); problem="$problem classes"
            ((other_classes > 3)) || printf 'classes of attach %s:\n%s\nfirst:\n%s\n' "$i" "$got" "${first[$job]}" >&2
        fi
    fi
    for p in $(pgrep -s "$ring"; pgrep -s "$finalize"); do
        st=$(awk '/^State:/{print $2}' /proc/$p/status 2>/dev/null || true)
        tr=$(awk '/^TracerPid:/{print $2}' /proc/$p/status 2>/dev/null || true)
        if [ "$st" = t ] || [ "$st" = T ] || [ "${tr:-0}" != 0 ]; then left=$((left + 1)); problem="$problem left $p"; fi
    done
    [ "$rc" = 0 ] || problem="$problem exit $rc"
    if [ -n "$problem" ]; then
        bad=$((bad + 1))
        echo "attach $i ($job -n $n ${extra[*]}): $problem" >&2
    fi
done
median=$(printf '%s\n' "${times[@]}" | median)
worst=$(printf '%s\n' "${times[@]}" | sort -n | tail -1)
echo "== $(nproc) cores, $(uname -r), seed $SEED, $HOGS busy loop(s), rings of $RANKS and 4 ranks"
echo "attaches $ATTACHES  bad $bad  lost-daemon $lost  false-label $false_label  never-stopped $not_stopped  other-classes $other_classes  left-stopped-or-traced $left"
echo "attach wall time: median ${median} s, worst ${worst} s"
# The wall time includes this script's shell waiting for a core (under load it was seen to
# leave a finished strata unreaped for 25 s); strata's own total is what strata took.
own_median=$(printf '%s\n' "${owns[@]}" | median)
own_worst=$(printf '%s\n' "${owns[@]}" | sort -n | tail -1)
echo "strata's own total: median ${own_median} s, worst ${own_worst} s (${#owns[@]} attaches)"
