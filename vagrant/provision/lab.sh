#!/usr/bin/env bash
# This machine's part of the multi-VM lab (root), shared by the Vagrantfile and the local qemu VMs:
#   lab.sh up       bring up node $STRAIT_NODE of $STRAIT_TOPOLOGY (its NICs, pods, agent; the controller
#                   on a cluster's first node) and wait for its agent to be Ready
#   lab.sh test     run the checks whose source pod is on $STRAIT_NODE (after the whole lab converged);
#                   with STRAIT_REPORT=1 then also the report of every machine's results
#   lab.sh report   the table of every machine's results (any machine; no STRAIT_NODE needed)
#   lab.sh down     stop and remove this machine's part; safe to run twice
# Environment: STRAIT_NODE (the machine's node), STRAIT_RUN_DIR (the run directory every machine shares,
# default /run/strait-mvm), STRAIT_TOPOLOGY (default: the repository's default topology), STRAIT_DATAPLANE
# (auto|ebpf|kernel, default auto), STRAIT_PACE (host|emulated, default host: emulated VMs are slow).
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
usage="usage: STRAIT_NODE=NAME $0 up|test|report|down"
verb=${1:?$usage}
run_dir=${STRAIT_RUN_DIR:-/run/strait-mvm}
topology=${STRAIT_TOPOLOGY:-$repo/lab/src/topologies/default.yaml}
dataplane=${STRAIT_DATAPLANE:-auto}
pace=${STRAIT_PACE:-host}

lab() { node "$repo/dist/lab/src/main.js" --run-dir "$run_dir" "$@"; }
case $verb in
  up | test | down) node=${STRAIT_NODE:?is required: the name of this machine in the topology ($usage)} ;;
esac

case $verb in
  up) lab up --node "$node" --topology "$topology" --dataplane "$dataplane" --pace "$pace" ;;
  test)
    rc=0
    lab test --node "$node" --pace "$pace" || rc=$?
    # The report even when this machine's checks failed: it shows every machine's rows.
    if [[ ${STRAIT_REPORT:-0} == 1 ]]; then lab report || rc=$((rc ? rc : $?)); fi
    exit "$rc"
    ;;
  report) lab report ;;
  down) lab down --node "$node" ;;
  *) echo "$usage" >&2; exit 2 ;;
esac
