#!/usr/bin/env bash
# The scaling sweep of `strata bench`: 1-, 2- and 3-deep trees (edges from the
# front end to a daemon), 256 tasks per emulated daemon, 10 samples, 3 classes, 0.1% noise,
# in two task-set encodings:
#   runs   strata's subtree-scoped task lists, from 1,024 to 1,048,576 tasks;
#   dense  job-wide bit vectors at every level, as STAT had before the 208K paper, from
#          1,024 to 131,072 tasks (every daemon sends job-size vectors: 1M would not fit).
# Each point runs REPS times (default 3); every run is one JSON line in
# docs/bench/scale.jsonl. tests/bench/plot.py then draws docs/bench/*.svg from the medians
# and prints the tables of docs/PERFORMANCE.md.
#
#   bash tests/bench/scale.sh [MAX_TASKS]        (default 1048576)
set -euo pipefail
cd "$(dirname "$0")/../.."
MAX=${1:-1048576}
DENSE_MAX=131072
REPS=${REPS:-3}
cargo build -q --release -p strata-frontend --bin strata
strata=$PWD/target/release/strata
out=docs/bench/scale.jsonl
: > "$out"
for sets in runs dense; do
    max=$MAX
    [ "$sets" = dense ] && [ "$max" -gt "$DENSE_MAX" ] && max=$DENSE_MAX
    for depth in 1 2 3; do
        tasks=1024
        while [ "$tasks" -le "$max" ]; do
            daemons=$((tasks / 256))
            for rep in $(seq "$REPS"); do
                flag=(); [ "$sets" = dense ] && flag=(--dense)
                if "$strata" bench --daemons "$daemons" --tasks-per-daemon 256 --depth "$depth" \
                        "${flag[@]}" --json /tmp/strata-scale.json > /dev/null 2> /tmp/strata-scale.err; then
                    python3 -c 'import json,sys; print(json.dumps(json.load(open(sys.argv[1]))))' \
                        /tmp/strata-scale.json >> "$out"
                    python3 -c 'import json,sys; v=json.load(open(sys.argv[1])); m=v["ms"];
print("%-5s depth %d  %8d tasks  run %s  to root %8.1f ms  remap %6.1f ms  commnode peak %6.1f MB"
      % (v["task_sets"], len(v["topology"]) - 1, v["tasks"], sys.argv[2], m["to_root"], m["remap"],
         v["peak_rss_kib"]["commnode_max"] / 1024))' /tmp/strata-scale.json "$rep"
                else
                    echo "$sets depth $depth $tasks tasks: failed: $(tail -1 /tmp/strata-scale.err)"
                fi
            done
            tasks=$((tasks * 2))
        done
    done
done
python3 tests/bench/plot.py "$out" docs/bench
