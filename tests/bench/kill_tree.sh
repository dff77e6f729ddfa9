# kill_tree SIG PID: sends SIG to PID and every process below it, by pid (a launcher
# and the ranks it started), children first so that none is reparented and missed.
# Sourced by the benchmarks; never matches processes by name, so nothing that the
# benchmark did not start is ever signalled.
kill_tree() {
    local sig=$1 pid=$2 child
    [ -n "$pid" ] && [ "$pid" -gt 0 ] || return 0
    for child in $(pgrep -P "$pid" 2>/dev/null || true); do
        kill_tree "$sig" "$child"
    done
    kill "-$sig" "$pid" 2>/dev/null || true
}
