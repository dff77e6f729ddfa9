#!/usr/bin/env bash
# strata view on very wide and very deep result files: wall time and peak memory per format.
# A benchmark (docs/PERFORMANCE.md), not a test.
#
#   bash tests/bench/view.sh [LEAVES...]        (default 10000 100000 300000)
#
# Each wide file is a job of LEAVES ranks, each alone in its own leaf under main (the worst
# case for classes: one per rank); the deep file is one path 30,000 frames deep. The files
# are generated into a temporary folder. Needs python3 and GNU time (/usr/bin/time).
set -euo pipefail
cd "$(dirname "$0")/../.."
source tests/bench/lib.sh
need python3 /usr/bin/time
leaves=("$@")
[ ${#leaves[@]} -gt 0 ] || leaves=(10000 100000 300000)
RUNS=${RUNS:-3}

cargo build -q --release -p strata-frontend --bin strata
strata=$PWD/target/release/strata

# A result file: `wide N` (N ranks, a leaf each) or `deep D` (one rank, a D-deep path).
generate() {
    python3 - "$1" "$2" <<'EOF'
import json, sys
kind, n = sys.argv[1], int(sys.argv[2])
nodes = []
def node(i, parent, function, ranks, count):
    nodes.append({"id": i, "parent": parent,
                  "frame": None if function is None else {"function": function},
                  "ranks": ranks, "count": count})
if kind == "wide":
    ranks = n
    everyone = f"0-{n - 1}"
    node(0, None, None, everyone, n)
    node(1, 0, "main", everyone, n)
    for r in range(n):
        node(2 + r, 1, f"leaf_{r}", str(r), 1)
else:
    ranks = 1
    node(0, None, None, "0", 1)
    for d in range(n):
        node(1 + d, d, f"frame_{d}", "0", 1)
tree = {"thread_space": 0, "nodes": nodes}
doc = {
    "format": "strata-result", "format_version": 1, "strata_version": "bench",
    "created": "2026-01-01T00:00:00Z",
    "job": {"id": f"{kind}-{n}", "resource_manager": "local"},
    "sampling": {"samples": 1, "interval_ms": 100, "threads": False,
                 "started": "2026-01-01T00:00:00Z", "finished": "2026-01-01T00:00:01Z"},
    "job_size": ranks,
    "ranks": [{"rank": r, "host": "node1", "pid": 1000 + r, "executable": "/bin/bench",
               "state": "S"} for r in range(ranks)],
    "default_view": {"tree": "3d", "granularity": "function", "cut_below_mpi": True},
    "classes": [],
    "trees": {"2d": tree, "3d": tree},
}
json.dump(doc, sys.stdout)
EOF
}

# Median wall seconds and median peak RSS (MiB) of $RUNS runs of `strata view FILE ARGS`.
measure() {
    local file=$1; shift
    local walls=() rss=()
    for _ in $(seq "$RUNS"); do
        /usr/bin/time -f '%e %M' -o "$work/time" "$strata" view "$file" "$@" > /dev/null
        read -r w m < "$work/time"
        walls+=("$w"); rss+=("$((m / 1024))")
    done
    printf '%s s  %s MiB' "$(printf '%s\n' "${walls[@]}" | median)" \
        "$(printf '%s\n' "${rss[@]}" | median)"
}

echo "== $(nproc) cores, $(uname -r), release build, median of $RUNS runs"
files=()
for n in "${leaves[@]}"; do
    generate wide "$n" > "$work/wide-$n.json"
    files+=("$work/wide-$n.json")
done
generate deep 30000 > "$work/deep-30000.json"
files+=("$work/deep-30000.json")
for f in "${files[@]}"; do
    size=$(( $(stat -c %s "$f") / 1024 / 1024 ))
    echo "$(basename "$f" .json) (file ${size} MiB):"
    for format in text dot json folded; do
        echo "  $format: $(measure "$f" -f "$format")"
    done
done
