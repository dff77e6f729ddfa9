#!/usr/bin/env bash
# The fast tier: every test that needs no root, no MPI and no Slurm (docs/TESTING.md).
# The pure crates' unit and property tests, the architecture rules, and the front end's
# golden and `strata view` tests (a built binary on saved results). Needs Graphviz's `dot`
# for the DOT test; run `bash tests/run-all.sh` once to install what the suite needs.
# Usage: bash tests/fast.sh [extra cargo test arguments]
set -euo pipefail
cd "$(dirname "$0")/.."
CI=true cargo test --locked --no-fail-fast \
    -p strata-proto -p strata-filters -p strata-result -p strata-progress -p strata-verdict -p strata-tui \
    -p strata-watch -p strata-commnode -p strata-launcher -p strata-pmpi -p strata-pmpi-layout \
    -p strata-architecture "$@"
CI=true cargo test --locked --no-fail-fast -p strata-frontend \
    --lib --test golden_cli --test view_cli --test docs "$@"
