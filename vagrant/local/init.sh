#!/bin/sh
# PID 1 of a local lab VM (vagrant/local/README.md). Stage 1 as the test VM's (test/vm/init-lib.sh): the
# root (vagrant/local/image.sh) read-only under a tmpfs overlay. Stage 2 mounts the lab's shares, then
# runs the host's commands one at a time, in order, until the host kills the VM.
# The control share (tag strait-vm, /run/strait-vm) carries in: hostname, repo (the repository's path,
# the same as on the host), cmd/<id>.sh (a command, renamed into place whole); and out: ready (the loop
# runs), out/<id>.log (its stdout and stderr), then out/<id>.rc (its exit code, renamed into place).

if [ "${1:-}" != stage2 ]; then
  . /init-lib.sh
  vm_stage1
fi

. /run/strait-init-lib.sh
ctl=/run/strait-vm
# virtio_net: no udev here to load it for the NICs. The rest is what the lab's datapaths need up front.
vm_stage2 "$(cat $ctl/hostname)" virtio_net veth vxlan nf_tables nft_nat nft_chain_nat
repo=$(cat $ctl/repo) || die "the control share has no repo"
# The repository, read-only and built on the host: cached. The run directory every VM shares: cache=none,
# so a file one VM renames into place is seen by the others at once (the lab's control plane polls).
mkdir -p "$repo" /run/strait-mvm &&
  mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000,cache=loose,ro repo "$repo" &&
  mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000,cache=none rundir /run/strait-mvm ||
  die "cannot mount the repository or the run directory"
cd "$repo" || die "no $repo"
mkdir -p $ctl/out
read -r up _ </proc/uptime
echo "strait-mvm: $(cat /proc/sys/kernel/hostname) on $(uname -r), ready ${up}s after boot"
: >$ctl/ready
while :; do
  for cmd in $ctl/cmd/*.sh; do
    [ -e "$cmd" ] || break
    id=${cmd##*/}
    id=${id%.sh}
    /bin/bash "$cmd" >"$ctl/out/$id.log" 2>&1 </dev/null
    echo $? >"$ctl/out/$id.rc.new"
    rm -f "$cmd"
    mv "$ctl/out/$id.rc.new" "$ctl/out/$id.rc"
  done
  sleep 0.2
done
