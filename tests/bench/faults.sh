#!/bin/bash
# The runtime model's fault-injection study (docs/PERFORMANCE.md, "The runtime model"):
# three mini-apps (daemon/tests/fixtures/model_{halo,master,pipeline}.c) on Debian's Open
# MPI with strata's PMPI library, four faults (a hang, an infinite loop, a rank ten times
# slower, a message with the wrong tag), INJECTIONS injections of each into a random rank at
# a random iteration, from SEED; prints the table (abnormal-rank recall, least-progressed
# accuracy and precision, the verdict) and writes every run to target/bench/faults.json.
#
#   bash tests/bench/faults.sh [INJECTIONS] [RANKS] [SEED] [APPS] [FAULTS]
#        (default 20 injections, 16 ranks, seed 1, halo,master,pipeline, hang,loop,slow,wrong)
# STRATA=target/debug/strata skips the release build. Takes about 5 s a run.
set -euo pipefail
INJECTIONS=${1:-20}
RANKS=${2:-16}
SEED=${3:-1}
APPS=${4:-halo,master,pipeline}
FAULTS=${5:-hang,loop,slow,wrong}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
if [ -z "${STRATA:-}" ]; then
  cargo build --release --quiet --manifest-path "$ROOT/Cargo.toml" -p strata-frontend
  STRATA=$ROOT/target/release/strata
fi
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
# The library every strata embeds, written out as `strata run` writes it.
"$STRATA" run --library-dir "$TMP/lib" --dry-run -- mpirun true > /dev/null
LIB=$(ls "$TMP"/lib/libstrata_pmpi-*.so)
for app in ${APPS//,/ }; do
  mpicc -O2 -g -o "$TMP/model_$app" "$ROOT/daemon/tests/fixtures/model_$app.c"
done
mkdir -p "$ROOT/target/bench"
TMPDIR=$TMP python3 "$ROOT/tests/bench/faults.py" "$STRATA" "$LIB" "$TMP" --apps "$APPS" \
  --faults "$FAULTS" --injections "$INJECTIONS" --ranks "$RANKS" --seed "$SEED" \
  --json "$ROOT/target/bench/faults.json" 2> "$ROOT/target/bench/faults.log"
