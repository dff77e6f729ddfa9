#!/bin/bash
# tests/slurm/down.sh - stop the test cluster started by tests/slurm/up.sh, using only the PIDs
# up.sh recorded in $C/run/pids (a system Slurm or munge is left alone).
set -uo pipefail
LAB=${LAB:-/tmp/strata-slurm}
C=$LAB/cluster
PIDS=$C/run/pids
export SLURM_CONF=$C/etc/slurm.conf
[ -f $PIDS ] || { echo "down.sh: nothing recorded ($PIDS missing)"; exit 0; }
alive() {  # pid comm : running (not a zombie waiting for PID 1 to reap it) and still that program
  [ "$(cat /proc/$1/comm 2>/dev/null)" = "$2" ] && ! grep -q '^State:[[:space:]]*Z' /proc/$1/status 2>/dev/null; }

# 1. cancel every job so slurmd/slurmstepd tear down the tasks (in MODE=plain slurmstepd and the
#    tasks would otherwise outlive slurmd; in MODE=ns the namespace teardown kills them anyway)
if grep -q '^slurmctld ' $PIDS && alive "$(awk '$1=="slurmctld"{print $2}' $PIDS)" slurmctld; then
  ids=$(timeout 5 squeue -h -o %i 2>/dev/null | tr '\n' ' ')
  if [ -n "${ids// }" ]; then
    timeout 5 scancel $ids 2>/dev/null
    for i in $(seq 1 150); do [ -z "$(timeout 5 squeue -h -o %i 2>/dev/null)" ] && break; sleep 0.1; done
  fi
fi

# 2. signal the recorded daemons: nodes first, then slurmctld, munged last
stop() {  # name pid
  local name=$1 pid=$2 child
  alive $pid $name || return 0
  if [ $name = unshare ]; then
    # unshare blocks SIGTERM; signal the node's PID 1 (its only child) instead
    child=$(cat /proc/$pid/task/$pid/children 2>/dev/null | awk '{print $1}')
    [ -n "$child" ] && kill -TERM $child 2>/dev/null
  else
    kill -TERM $pid 2>/dev/null
  fi
}
for order in unshare slurmd slurmctld munged; do
  while read -r name pid; do [ $name = $order ] && stop $name $pid; done < $PIDS
  for i in $(seq 1 100); do
    left=0
    while read -r name pid; do [ $name = $order ] && alive $pid $name && left=1; done < $PIDS
    [ $left = 0 ] && break; sleep 0.1
  done
  while read -r name pid; do   # still there after 10 s: SIGKILL (unshare --kill-child takes its node with it)
    [ $name = $order ] && alive $pid $name && { echo "down.sh: SIGKILL $name $pid"; kill -KILL $pid; }
  done < $PIDS
done
mv $PIDS $PIDS.stopped
echo "down.sh: stopped"
