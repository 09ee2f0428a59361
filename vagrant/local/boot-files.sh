#!/usr/bin/env bash
# What the local lab VMs boot (test/multivm/machines.ts runs this before starting them): the root
# directory (vagrant/local/image.sh), Debian's kernel and its modules (test/vm/lib.sh, the same cache as
# `npm run test:vm`) and an initramfs with vagrant/local/init.sh, written into DIR. Prints key=value lines:
# root, kernel, initrd, modules, and accel (qemu's accelerator arguments, space-separated).
#   bash vagrant/local/boot-files.sh DIR
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
dir=${1:?usage: boot-files.sh DIR}
say() { echo "strait-mvm: $*" >&2; }
fail() { say "error: $*"; exit 1; }
# shellcheck source=test/vm/lib.sh
source "$repo/test/vm/lib.sh"
vm_host_tools

root=$(bash "$repo/vagrant/local/image.sh")
tmp=$(mktemp -d /tmp/strait-mvm-files.XXXXXX)
chmod 711 "$tmp"   # apt-get download writes as the _apt user when it can reach the directory
trap 'rm -rf "$tmp"' EXIT
vm_kernel "$repo/build/vm" "$tmp"
vm_initramfs "$dir/initramfs.cpio" "$repo/vagrant/local/init.sh" virtio_pci 9pnet_virtio 9p overlay
vm_accel
printf '%s\n' "root=$root" "kernel=$vmlinuz" "initrd=$dir/initramfs.cpio" "modules=$moddir" "append=$vm_append" \
  "accel=${accel_args[*]}"
