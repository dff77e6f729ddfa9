#!/usr/bin/env bash
# The whole strata test suite, from a fresh Debian 12 machine with a Rust toolchain:
# installs the system packages the tests need, then builds and runs everything.
# Usage: bash tests/run-all.sh        (CI calls it through .ci/run)
set -euo pipefail
cd "$(dirname "$0")/.."

say() { printf '\n==> %s\n' "$*"; }

if ! command -v cargo >/dev/null 2>&1; then
    echo "tests/run-all.sh: cargo not found: install Rust 1.90 or newer (https://rustup.rs), then rerun" >&2
    exit 2
fi

# System packages the tests use:
# - graphviz: the DOT test runs `dot -Tsvg` on a 1M-task tree;
# - gcc, g++, libc6-dev: the capture and unwinding tests compile their C/C++ target programs
#   (libc6-dev also brings libc.a for the statically linked container test);
# - elfutils: the unwinding tests compare strata's stacks with `eu-stack`;
# - util-linux: `runuser`, to run strata as the user nobody; `script`, the pseudo-terminal
#   of the `strata view` terminal tests;
# - tmux: the live terminal-UI tests type keys into a real terminal and read its screen;
# - gdb: the terminal UI's debugger hand-off is tested by opening gdb on a rank;
# - dwz: the symbolization tests build binaries whose DWARF shares a dwz file
#   (.gnu_debugaltlink);
# - libc6-dbg: libc's separate debug file (by build-id, compressed sections), which the
#   symbolization tests read and compare with eu-stack's;
# - openmpi-bin, libopenmpi-dev, gfortran: `strata attach` is tested on hung Open MPI jobs
#   in C and in Fortran;
# - mpich, libmpich-dev: and on Debian's MPICH (Open MPI stays the default `mpicc`);
# - python3-dev: Debian's CPython 3.11 and its headers, which tests/python_cli.rs checks
#   strata's CPython layouts against (and py-spy, from PyPI, its Python frames);
#   tests/mpi/stacks.sh adds Open MPI 5, MPICH 5 and Intel MPI from PyPI (python3-venv
#   makes their virtual environments);
# - slurm-wlm, munge, libpmix-dev: `strata attach JOBID` is tested on a real 4-node Slurm
#   cluster that tests/slurm/up.sh starts on this machine (each node in its own namespaces)
#   and this script stops at the end (tests/slurm/down.sh); Slurm's pmix plugin loads
#   libpmix from libpmix-dev.
PACKAGES=(graphviz gcc g++ gfortran libc6-dev elfutils util-linux tmux gdb dwz libc6-dbg openmpi-bin libopenmpi-dev
          mpich libmpich-dev python3-venv python3-dev slurm-wlm munge libpmix-dev
          chromium chromium-driver poppler-utils)
missing=()
for p in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
    say "installing ${missing[*]}"
    SUDO=""
    if [ "$(id -u)" -ne 0 ]; then
        command -v sudo >/dev/null || { echo "need root or sudo to install: ${missing[*]}" >&2; exit 2; }
        SUDO=sudo
    fi
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

say "MPI stacks from PyPI (target/mpi-stacks, kept between runs)"
bash tests/mpi/stacks.sh

say "format and lints"
cargo fmt --all --check
cargo clippy --workspace --all-targets --locked -- -D warnings

say "API docs (broken links and markup fail)"
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --locked

say "build"
cargo build --workspace --all-targets --locked

say "tests"
# CI=true keeps insta from writing new snapshots: a changed rendering fails the run.
log=$(mktemp)
# The Slurm tests start the test cluster on first use; it is stopped whatever happens.
trap 'rm -f "$log"; bash tests/slurm/down.sh > /dev/null 2>&1 || true' EXIT
set +e
cargo test --workspace --locked --no-fail-fast 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
set -e
# One closing line for the whole suite (cargo's own last line is a crate's doc tests).
awk '/^test result:/ {
        for (i = 1; i <= NF; i++) {
            if ($i ~ /^passed;/) p += $(i - 1)
            if ($i ~ /^failed;/) f += $(i - 1)
        }
     }
     END { printf "\ntests: %d passed, %d failed\n", p, f }' "$log"
exit "$status"
