#!/usr/bin/env bash
# Boot Debian bookworm's own kernel (it has ESP, xfrm interfaces...) under qemu with this machine's root
# filesystem shared read-only over 9p, and run a command inside from the repo directory.
#   bash test/vm/run.sh [command...]     default: the VM test suite (see README.md)
# Exits with the command's exit code. Env: STRAIT_VM_TIMEOUT (seconds, default 2400: the eBPF lab takes most of it).
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cache=$repo/build/vm
# The VM mounts a fresh /run over the host's: a repo there would vanish inside.
case $repo/ in /run/*) echo "strait-vm: the repo ($repo) must not be under /run, which the VM replaces" >&2; exit 1 ;; esac
timeout_s=${STRAIT_VM_TIMEOUT:-2400}
say() { echo "strait-vm: $*" >&2; }
fail() { say "error: $*"; exit 1; }

if [ $# -eq 0 ]; then
  # Globs are expanded by mocha itself. Strict (CI=true, --forbid-pending): a test that would skip, such
  # as one needing ESP on a kernel without it, fails; the tests for a kernel without ESP are left out. The
  # eBPF lab (@vm-lab, about 6 minutes of it; `npm run test:vm:lab` runs it alone) is in.
  set -- env CI=true node node_modules/.bin/mocha --no-config --reporter dist/test/support/reporter.js --timeout 60000 \
    --forbid-pending --grep @no-esp --invert 'dist/test/fallback/ipsec*.test.js' 'dist/test/vm/*.test.js'
fi

# --- host tools (installed only when missing; xz-utils and kmod are there on any Debian) ---
need=()
command -v qemu-system-x86_64 >/dev/null || need+=(qemu-system-x86)
command -v xz >/dev/null || need+=(xz-utils)
command -v depmod >/dev/null || need+=(kmod)
if [ ${#need[@]} -gt 0 ]; then
  [ "$(id -u)" = 0 ] || fail "missing packages ${need[*]}; run as root to install them"
  say "installing ${need[*]}"
  export DEBIAN_FRONTEND=noninteractive DEBCONF_NOWARNINGS=yes
  apt-get install -y -q --no-install-recommends "${need[@]}" >/dev/null ||
    { apt-get update -q >/dev/null && apt-get install -y -q --no-install-recommends "${need[@]}" >/dev/null; } ||
    fail "apt-get install ${need[*]} failed"
fi

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

# --- downloads: unpacked into the cache, never installed (no hooks, nothing in /boot or /lib/modules) ---
unpack() {  # unpack PACKAGE: download it into $cache/PACKAGE once
  local dir=$cache/$1
  [ -e "$dir/.done" ] && return
  say "downloading $1"
  mkdir -p "$tmp/deb"
  chown _apt "$tmp/deb" 2>/dev/null || true   # apt downloads as the _apt user when it can
  (cd "$tmp/deb" && apt-get download -q "$1" >/dev/null) || fail "apt-get download $1 failed"
  rm -rf "$dir"
  mkdir -p "$cache"
  dpkg-deb -x "$tmp/deb/$1"_*.deb "$dir" || fail "cannot unpack $1"
  rm -rf "$dir/usr/share" "$tmp/deb"
  touch "$dir/.done"
}
# The kernel: the versioned package linux-image-amd64 depends on.
kpkg() { apt-cache depends linux-image-amd64 2>/dev/null | sed -n 's/^ *Depends: \(linux-image-[0-9].*-amd64\)$/\1/p' | head -1; }
pkg=$(kpkg)
if [ -z "$pkg" ]; then
  say "apt does not know linux-image-amd64; running apt-get update"
  apt-get update -q >/dev/null || true
  pkg=$(kpkg)
fi
if [ -z "$pkg" ]; then
  # Offline with no lists: fall back on whatever kernel is already unpacked.
  pkg=$(ls -1d "$cache"/linux-image-* 2>/dev/null | sort -V | tail -1 | xargs -r basename)
  [ -n "$pkg" ] || fail "cannot resolve the kernel package linux-image-amd64 depends on"
fi
kroot=$cache/$pkg
unpack "$pkg"
kver=$(ls "$kroot/lib/modules")
moddir=$kroot/lib/modules/$kver
vmlinuz=$kroot/boot/vmlinuz-$kver
# The package ships no modules.dep (its postinst makes it); make it in the cache only.
[ -s "$moddir/modules.dep" ] || depmod -b "$kroot" "$kver"
find "$cache" -mindepth 1 -maxdepth 1 -name 'linux-image-*' ! -name "$pkg" -exec rm -rf {} +   # older ABIs
# busybox-static for the initramfs (no libc there). Downloaded rather than installed: it Conflicts with the
# dynamic busybox that initramfs-tools uses on many hosts.
unpack busybox-static
busybox=$cache/busybox-static/bin/busybox

# --- initramfs: busybox, the modules needed to reach the 9p root, and init.sh (rebuilt each run: ~0.1 s) ---
deps() {  # print module $1 (a modules.dep path) after its dependencies, each once
  local m=$1 d
  for d in $(sed -n "s|^$m: *||p" "$moddir/modules.dep"); do deps "$d"; done
  echo "$m"
}
ird=$tmp/initramfs
mkdir -p "$ird/bin" "$ird/modules"
cp "$busybox" "$ird/bin/busybox" && ln -s busybox "$ird/bin/sh"
cp "$repo/test/vm/init.sh" "$ird/init" && chmod +x "$ird/init"
for mod in virtio_pci 9pnet_virtio 9p overlay; do
  path=$(grep -o "^[^:]*/$mod\.ko[^:]*" "$moddir/modules.dep") || fail "module $mod not in $kver"
  deps "$path"
done | awk '!seen[$0]++' | while read -r path; do
  name=$(basename "$path")
  case $name in   # busybox insmod reads plain .ko only
    *.xz) xz -dc "$moddir/$path" >"$ird/modules/${name%.xz}" ;;
    *.zst) zstd -dqc "$moddir/$path" >"$ird/modules/${name%.zst}" ;;
    *) cp "$moddir/$path" "$ird/modules/$name" ;;
  esac
  name=${name%.xz}; echo "${name%.zst}" >>"$ird/modules/order"
done
(cd "$ird" && find . | "$busybox" cpio -o -H newc 2>/dev/null) >"$tmp/initramfs.cpio"

# --- the share: command in, exit code out ---
share=$tmp/share
mkdir "$share"
echo "$kver" >"$share/kver"
echo "$moddir" >"$share/moddir"
{ printf 'cd %q || exit 126\nexec' "$repo"; printf ' %q' "$@"; echo; } >"$share/cmd.sh"

# KVM needs the hardware backend (kvm_intel/kvm_amd). A /dev/kvm served only by kvm_pvm (PVM, a
# software hypervisor for nested clouds) runs only PVM-enabled guest kernels; Debian's crawls there
# (no kernel output after minutes), so that counts as no KVM. STRAIT_VM_ACCEL=kvm|tcg overrides.
accel=${STRAIT_VM_ACCEL:-}
if [ -z "$accel" ]; then
  accel=tcg
  if [ -r /dev/kvm ] && [ -w /dev/kvm ] && { [ -d /sys/module/kvm_intel ] || [ -d /sys/module/kvm_amd ]; }; then accel=kvm; fi
fi
if [ "$accel" = kvm ]; then
  # -arch-capabilities: under nested KVM qemu 7.2 can abort setting MSR 0x10a with a plain "-cpu host";
  # without it the guest merely assumes it is vulnerable to the speculation bugs that MSR reports.
  accel_args=(-enable-kvm -cpu host,-arch-capabilities)
else
  say "WARNING: no usable hardware KVM (/dev/kvm missing or kvm_pvm only): TCG emulation, several times slower"
  accel_args=(-accel tcg,thread=multi -cpu max)
fi

say "booting $kver (timeout ${timeout_s}s): $*"
start=$(date +%s)
# stdin from /dev/null: the console is output only, and qemu must not put a terminal into raw mode.
{
  rc=0
  timeout -k 10 "$timeout_s" qemu-system-x86_64 "${accel_args[@]}" -m 2048 -smp 2 -nographic -vga none -bios qboot.rom -no-reboot -nic none \
    -pidfile "$tmp/qemu.pid" \
    -kernel "$vmlinuz" -initrd "$tmp/initramfs.cpio" -append "console=ttyS0 quiet loglevel=3 panic=-1 mitigations=off" \
    -fsdev local,id=hostroot,path=/,security_model=none,readonly=on,multidevs=remap \
    -device virtio-9p-pci,fsdev=hostroot,mount_tag=hostroot \
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
