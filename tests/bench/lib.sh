# Shared by the benchmark scripts in this folder (sourced, not run).
# Provides: need TOOL..., $work (a temp dir removed at exit, with every pid in $pids killed),
# start_ring N (a hung Open MPI ring: sets $mpirun_pid and $ranks), seconds CMD...,
# median (of numbers on stdin), bench_warm LABEL CMD... (median of $RUNS runs after a
# warm-up), phase_medians (of `strata: timing:` lines on stdin).

need() {
    for tool in "$@"; do
        command -v "$tool" >/dev/null || {
            echo "$(basename "$0"): $tool not found (see the script's header)" >&2
            exit 2
        }
    done
}

work=$(mktemp -d)
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
    rm -rf "$work"
}
trap cleanup EXIT

# A hung ring of $1 ranks (daemon/tests/fixtures/mpi_ring.c: rank 1 sleeps before its send,
# rank 2 waits in MPI_Waitall, the others spin in MPI_Barrier).
start_ring() {
    mpicc -O2 -g -o "$work/ring" daemon/tests/fixtures/mpi_ring.c
    OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
        mpirun --oversubscribe -np "$1" "$work/ring" > "$work/ring.out" 2>&1 &
    mpirun_pid=$!
    disown "$mpirun_pid"
    pids+=("$mpirun_pid")
    for _ in $(seq 1000); do
        [ "$(grep -c '^rank .* pid' "$work/ring.out" 2>/dev/null)" -ge "$1" ] && break
        sleep 0.02
    done
    ranks=$(awk '/^rank .* pid/ {print $4}' "$work/ring.out" | paste -sd' ')
    # shellcheck disable=SC2206
    pids+=($ranks) # killed directly too: mpirun killed with -9 would leave them spinning
    sleep 1
}

# Wall seconds of "$@" (output discarded).
seconds() {
    local s=$EPOCHREALTIME
    "$@" > /dev/null 2>&1 || true
    local e=$EPOCHREALTIME
    awk "BEGIN {printf \"%.3f\n\", $e - $s}"
}

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

# "LABEL   1.234 s": the median wall time of $RUNS runs of CMD..., after one warm-up run.
bench_warm() {
    local label=$1; shift
    "$@" > /dev/null 2>&1 || true
    local t
    t=$(for _ in $(seq "$RUNS"); do seconds "$@"; done | median)
    printf '%-66s %7.3f s\n' "$label" "$t"
}

# The median of each phase in `strata: timing: PHASE: N ms` lines (STRATA_TIMINGS=1).
phase_medians() {
    awk -F': ' '/timing:/ {sub(/ ms$/, "", $4); print $3 "\t" $4}' | sort -t$'\t' -k1,1 -k2,2n \
        | awk -F'\t' '{v[$1] = v[$1] " " $2; n[$1]++}
            END {for (k in v) {split(substr(v[k], 2), a, " ");
                 printf "  %-28s %7.1f ms\n", k, a[int((n[k]+1)/2)]}}'
}

# Waits (up to a minute) for the detached index builders a cold attach started (`strata
# index-debug-info`, at idle priority, writing the whole entries of the partial indexes
# the front end sent): the next attach is measured alone and finds their entries.
wait_for_builders() {
    local end=$((SECONDS + 60))
    while pgrep -f -- " index-debug-info " > /dev/null && ((SECONDS < end)); do sleep 0.1; done
}

# Awk rules shared by the attach benches, reading `STRATA_TIMINGS=1` stderr: total = the
# total ms; n = the numbers of "debug info:" (daemons indexed distinct hits MB ms provided,
# from n[2]: the split leaves an empty field first); front = "MB read, binaries indexed" by
# the front end for "debug indexes down the tree:" (sent, MB sent, MB read, indexed,
# partially).
# Use as: awk "$STRATA_DEBUG_AWK"' END {...}'
STRATA_DEBUG_AWK='
    /timing: total:/ {total = $4}
    /^strata: debug info:/ {line = $0; gsub(/[^0-9. ]/, " ", line); split(line, n, " +")}
    /^strata: debug indexes down the tree:/ {
        line = $0; gsub(/[^0-9. ]/, " ", line); split(line, f, " +"); front = f[4] " " f[5]
    }
'
