#!/usr/bin/env bash
# `strata attach JOBID` on the 4-node test cluster: wall time from the command to
# the printed tree, split into phases (STRATA_TIMINGS), next to the naive way: one
# `srun --overlap` running eu-stack on every rank of every node (the stacks then still
# have to be merged by hand).
#
#   bash tests/bench/slurm.sh            (as root: it starts tests/slurm/up.sh's cluster)
#
# Needs slurm-wlm, munge, libpmix-dev, openmpi-bin, libopenmpi-dev, elfutils.
set -euo pipefail
cd "$(dirname "$0")/../.."
RUNS=${RUNS:-7}
source tests/bench/lib.sh
need srun sbatch mpicc eu-stack
bash tests/slurm/up.sh > /dev/null
export SLURM_CONF=/tmp/strata-slurm/cluster/etc/slurm.conf

cargo build -q --release -p strata-frontend --bin strata
strata=$PWD/target/release/strata
mkdir -p /tmp/strata-slurm/bin
mpicc -O2 -g -o /tmp/strata-slurm/bin/bench_ring daemon/tests/fixtures/mpi_ring.c
OMPI_MCA_mpi_yield_when_idle=1 setsid srun -N4 -n8 --mpi=pmix -J strata-bench-ring \
    /tmp/strata-slurm/bin/bench_ring > "$work/ring.out" 2>&1 < /dev/null &
for _ in $(seq 300); do
    [ "$(grep -c '^rank .* pid' "$work/ring.out" 2>/dev/null)" -ge 8 ] && break
    sleep 0.1
done
job=$(squeue -h -n strata-bench-ring -o %i)
[ -n "$job" ] || { echo "the ring did not start:"; cat "$work/ring.out"; exit 1; }
trap 'scancel "$job" 2>/dev/null; cleanup' EXIT
sleep 1

# The naive way: on every node, every rank of the job through eu-stack.
cat > "$work/naive.sh" <<'NAIVE'
#!/bin/bash
for d in /proc/[0-9]*; do
  env=$(tr '\0' '\n' 2>/dev/null < "$d/environ") || continue
  grep -qx "SLURM_JOB_ID=$SLURM_JOB_ID" <<<"$env" || continue
  step=$(sed -n 's/^SLURM_STEP_ID=//p' <<<"$env"); [ "$step" = "$SLURM_STEP_ID" ] && continue
  grep -q '^PMIX_RANK=' <<<"$env" || continue
  eu-stack -p "${d#/proc/}"
done
NAIVE
chmod +x "$work/naive.sh"

echo "== $(nproc) cores, 4 Slurm nodes (namespaces) on one host, 8 hung ranks, medians of $RUNS"
bench_warm "strata attach $job -n 1 (tree 1 -> 4)" "$strata" attach "$job" -n 1 --no-files
bench_warm "strata attach $job -n 10 (tree 1 -> 4)" "$strata" attach "$job" -n 10 --no-files
bench_warm "strata attach $job -n 1 --fanout 2 (tree 1 -> 2 -> 4)" \
    "$strata" attach "$job" -n 1 --no-files --fanout 2
bench_warm "srun --overlap -N4 eu-stack on every rank (no merge)" \
    srun --jobid="$job" --overlap --mpi=none -N4 --ntasks-per-node=1 "$work/naive.sh"

echo "== phases of 'strata attach $job -n 1' (medians of $RUNS)"
for _ in $(seq "$RUNS"); do
    STRATA_TIMINGS=1 "$strata" attach "$job" -n 1 --no-files 2>&1 >/dev/null
done | phase_medians
