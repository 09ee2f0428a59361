#!/usr/bin/env bash
# Boot Debian bookworm's own kernel (it has ESP, xfrm interfaces...) under qemu with this machine's root
# filesystem shared read-only over 9p, and run a command inside from the repo directory.
#   bash test/vm/run.sh [command...]     default: the VM test suite (see README.md)
# Exits with the command's exit code. Env: STRAIT_VM_KERNEL (6.1, the default, or 6.12; test/vm/kernels.sh
# runs both), STRAIT_VM_TIMEOUT (seconds, default 2400: the eBPF lab takes most of it).
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cache=$repo/build/vm
# The VM mounts a fresh /run over the host's: a repo there would vanish inside.
case $repo/ in /run/*) echo "strait-vm: the repo ($repo) must not be under /run, which the VM replaces" >&2; exit 1 ;; esac
timeout_s=${STRAIT_VM_TIMEOUT:-2400}
say() { echo "strait-vm: $*" >&2; }
fail() { say "error: $*"; exit 1; }

if [ $# -eq 0 ]; then
  # The VM suite (test/suites.js: the tests tagged @esp or @vm-kernel, from every test file), strict:
  # a test that would skip, such as one needing ESP on a kernel without it, fails. The eBPF lab (@vm-lab,
  # about 6 minutes of it; `npm run test:vm:lab` runs it alone) is in.
  set -- env CI=true node node_modules/.bin/mocha --config test/vm/mocharc.js
fi

# shellcheck source=test/vm/lib.sh
source "$repo/test/vm/lib.sh"
vm_host_tools

tmp=$(mktemp -d /tmp/strait-vm.XXXXXX)
chmod 711 "$tmp"   # apt-get download writes as the _apt user when it can reach the directory
cleanup() {
  # The pid file exists while qemu runs; never leave a VM behind, whatever ended this script.
  if [ -s "$tmp/qemu.pid" ]; then kill "$(cat "$tmp/qemu.pid")" 2>/dev/null || true; sleep 0.5; fi
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'say "interrupted"; exit 130' INT
trap 'say "terminated"; exit 143' TERM

# --- the kernel (downloaded once into the cache) and the initramfs with what reaches the 9p root ---
vm_kernel "$cache" "$tmp"
vm_initramfs "$tmp/initramfs.cpio" "$repo/test/vm/init.sh" virtio_pci 9pnet_virtio 9p overlay

# --- the share: command in, exit code out ---
share=$tmp/share
mkdir "$share"
{ printf 'cd %q || exit 126\nexec' "$repo"; printf ' %q' "$@"; echo; } >"$share/cmd.sh"

vm_accel

say "booting $kver (timeout ${timeout_s}s): $*"
start=$(date +%s)
# stdin from /dev/null: the console is output only, and qemu must not put a terminal into raw mode.
{
  rc=0
  timeout -k 10 "$timeout_s" qemu-system-x86_64 "${accel_args[@]}" -m 2048 -smp "$vm_cpus" -nographic -vga none -bios qboot.rom -no-reboot -nic none \
    -pidfile "$tmp/qemu.pid" \
    -kernel "$vmlinuz" -initrd "$tmp/initramfs.cpio" -append "$vm_append" \
    -fsdev local,id=hostroot,path=/,security_model=none,readonly=on,multidevs=remap \
    -device virtio-9p-pci,fsdev=hostroot,mount_tag=hostroot \
    -fsdev local,id=modules,path="$moddir",security_model=none,readonly=on \
    -device virtio-9p-pci,fsdev=modules,mount_tag=modules \
    -fsdev local,id=share,path="$share",security_model=none,multidevs=remap \
    -device virtio-9p-pci,fsdev=share,mount_tag=strait-vm </dev/null 2>&1 || rc=$?
  echo "$rc" >"$tmp/qemu.rc"
} | tee "$tmp/console.log" &
wait $! || true   # wait on a background job, not a foreground pipeline, so INT/TERM reach the trap at once
say "VM ran $(( $(date +%s) - start ))s"

qrc=$(cat "$tmp/qemu.rc" 2>/dev/null || echo '?')
code=$(tr -d '\r' <"$tmp/console.log" | sed -n 's/^STRAIT-VM-EXIT \([0-9]\{1,3\}\)$/\1/p' | tail -1)
if [ -z "$code" ]; then
  [ "$qrc" != 124 ] && [ "$qrc" != 137 ] || fail "time limit of ${timeout_s}s reached (STRAIT_VM_TIMEOUT) with no exit marker"
  fail "the VM stopped without an exit marker (qemu exit status $qrc; see the console above)"
fi
exit "$code"
