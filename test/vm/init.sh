#!/bin/sh
# PID 1 of the test VM (see README.md), in two stages (test/vm/init-lib.sh):
#   stage 1 (no argument): /init of the initramfs: the host's root, read-only, under a tmpfs overlay.
#   stage 2: runs the command from /run/strait-vm/cmd.sh, prints "STRAIT-VM-EXIT <code>" on the console
#     and powers off.
# The harness's writable 9p share (tag "strait-vm", at /run/strait-vm) carries cmd.sh in; exit comes back.

if [ "${1:-}" != stage2 ]; then
  . /init-lib.sh
  vm_stage1
fi

. /run/strait-init-lib.sh
vm_stage2 strait-vm esp4 xfrm_user xfrm_interface vxlan veth nf_tables nft_nat nft_chain_nat macvlan ipvlan
read -r up _ </proc/uptime
echo "strait-vm: $(uname -r), command starts ${up}s after boot"
/bin/bash /run/strait-vm/cmd.sh
rc=$?
echo "$rc" >/run/strait-vm/exit
echo "STRAIT-VM-EXIT $rc"
sync
echo o >/proc/sysrq-trigger
# Poweroff is asynchronous; PID 1 must not exit meanwhile (a panic), nor exec anything from the 9p root
# being torn down: spin on a builtin for the few milliseconds left.
while :; do :; done
