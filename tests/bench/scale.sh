#!/usr/bin/env bash
# The scaling sweep of `strata bench` (issue 7): 1-, 2- and 3-deep trees (edges from the
# front end to a daemon) from 1,024 to 1,048,576 tasks, 256 tasks per emulated daemon, 10
# samples, 3 classes, 0.1% noise; one JSON line per run in docs/bench/scale.jsonl, then the
# plot docs/bench/scale.svg (tests/bench/plot.py).
#
#   bash tests/bench/scale.sh [MAX_TASKS]        (default 1048576)
set -euo pipefail
cd "$(dirname "$0")/../.."
MAX=${1:-1048576}
cargo build -q --release -p strata-frontend --bin strata
strata=$PWD/target/release/strata
out=docs/bench/scale.jsonl
: > "$out"
for depth in 1 2 3; do
    tasks=1024
    while [ "$tasks" -le "$MAX" ]; do
        daemons=$((tasks / 256))
        if "$strata" bench --daemons "$daemons" --tasks-per-daemon 256 --depth "$depth" \
                --json /tmp/strata-scale.json > /dev/null 2> /tmp/strata-scale.err; then
            python3 -c 'import json,sys; print(json.dumps(json.load(open(sys.argv[1]))))' \
                /tmp/strata-scale.json >> "$out"
            python3 -c 'import json,sys; v=json.load(open(sys.argv[1])); m=v["ms"];
print("depth %d  %8d tasks  tree %-22s to root %8.1f ms  remap %6.1f ms  commnode peak %6.1f MB"
      % (int(sys.argv[2]), v["tasks"], "-".join(map(str, v["topology"])), m["to_root"], m["remap"],
         v["peak_rss_kib"]["commnode_max"] / 1024))' /tmp/strata-scale.json "$depth"
        else
            echo "depth $depth $tasks tasks: failed: $(tail -1 /tmp/strata-scale.err)"
        fi
        tasks=$((tasks * 4))
    done
done
python3 tests/bench/plot.py "$out" docs/bench/scale.svg
echo "wrote $out and docs/bench/scale.svg"
