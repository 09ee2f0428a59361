#!/usr/bin/env bash
# The lab's checks on the VMs of `vagrant up` (vagrant/README.md), from the host: `lab.sh test` on every
# machine (each runs the checks whose source pod it holds and writes its results to the shared run
# directory), then `lab.sh report` on one of them: the table of every machine's rows and "N passed,
# N failed". Exit status: the report's (1 when a check failed or a machine's results are missing).
# Environment: STRAIT_TOPOLOGY and STRAIT_PACE as for `vagrant up`.
set -euo pipefail
# A relative STRAIT_TOPOLOGY is the caller's; the Vagrantfile, loaded by vagrant ssh, must see the same file.
if [[ -n ${STRAIT_TOPOLOGY:-} ]]; then STRAIT_TOPOLOGY=$(realpath "$STRAIT_TOPOLOGY"); export STRAIT_TOPOLOGY; fi
cd "$(dirname "$0")"
# Where the Vagrantfile puts the repository in every VM.
guest_repo=/strait
pace=${STRAIT_PACE:-host}
mapfile -t machines < <(ruby -r ./plan -e 'StraitPlan.load(ARGV[0])["machines"].each { |m| puts m["name"] }' \
  "${STRAIT_TOPOLOGY:-../lab/src/topologies/default.yaml}")

in_vm() {
  local machine=$1; shift
  vagrant ssh "$machine" -c "sudo env STRAIT_NODE=$machine STRAIT_PACE=$pace bash $guest_repo/vagrant/provision/lab.sh $*"
}

# A machine whose checks fail does not stop the others: the report shows every machine's rows.
for m in "${machines[@]}"; do
  echo "--- $m: lab.sh test"
  in_vm "$m" test || echo "--- $m: some checks failed (the report below has them)"
done
echo "--- report (on ${machines[0]})"
in_vm "${machines[0]}" report
