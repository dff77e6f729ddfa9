#!/usr/bin/env bash
# Python capture cost: what reading a CPython process's own frames adds to strata's dump,
# and the whole dump next to py-spy's, on the same idle processes (tests/python/hang.py:
# the main thread in time.sleep under three Python calls, a second thread in Event.wait).
#
#   bash tests/bench/python.sh            (RUNS=20 by default)
#
# Needs: Debian's python3.11 (python3-dev); py-spy in target/python-tools (the Python
# tests install it: cargo test -p strata-frontend --test python_cli). Also measures every
# pyenv CPython 3.9-3.13 found under ~/.pyenv/versions. Prints medians; docs/PERFORMANCE.md
# quotes a run of it.
set -euo pipefail
cd "$(dirname "$0")/../.."
RUNS=${RUNS:-20}
source tests/bench/lib.sh
py_spy=target/python-tools/bin/py-spy
[ -x "$py_spy" ] || { echo "python.sh: $py_spy missing (run the Python tests once)" >&2; exit 2; }
need python3.11
cargo build -q --release -p strata-frontend --bin strata
strata=target/release/strata

interpreters=(/usr/bin/python3.11)
for dir in "$HOME"/.pyenv/versions/3.{9,10,11,12,13}.*; do
    [ -d "$dir" ] || continue
    minor=$(basename "$dir" | cut -d. -f2)
    interpreters+=("$dir/bin/python3.$minor")
done

median_of() { for _ in $(seq "$RUNS"); do seconds "$@"; done | median; }

echo "== machine: $(nproc) cores, $(uname -r); medians of $RUNS runs after a warm-up"
printf '%-34s %12s %12s %12s %14s %14s\n' interpreter "py read us" "stop us" \
    "strata dump s" "py-spy dump s" "--native s"
for py in "${interpreters[@]}"; do
    "$py" tests/python/hang.py sleep > "$work/out" 2>&1 &
    pid=$!
    pids+=("$pid")
    for _ in $(seq 500); do grep -q ready "$work/out" 2>/dev/null && break; sleep 0.01; done
    sleep 0.3
    "$strata" dump "$pid" > /dev/null
    read_us=$(for _ in $(seq "$RUNS"); do
        "$strata" dump "$pid" | awk '/frames read in/ {print $(NF-1); exit}'
    done | median)
    stop_us=$(for _ in $(seq "$RUNS"); do
        "$strata" dump "$pid" | awk '/stopped for/ {print $(NF-1); exit}'
    done | median)
    "$py_spy" dump --pid "$pid" > /dev/null 2>&1 || true
    version=$("$py" -c 'import sys; print("%d.%d.%d" % sys.version_info[:3])')
    printf '%-34s %12s %12s %12s %14s %14s\n' "$version ($(basename "$py"))" "$read_us" "$stop_us" \
        "$(median_of "$strata" dump "$pid")" \
        "$(median_of "$py_spy" dump --pid "$pid")" \
        "$(median_of "$py_spy" dump --native --pid "$pid")"
    kill -9 "$pid"
    wait "$pid" 2>/dev/null || true
done
