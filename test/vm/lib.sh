# Sourced by test/vm/run.sh (`npm run test:vm`) and vagrant/local/boot-files.sh (the local lab VMs): the
# host side of booting Debian bookworm's own kernel under qemu. Needs $repo and say()/fail() from the
# caller. See README.md for why each step is as it is.
#   vm_host_tools            installs qemu (and xz, kmod) when missing
#   vm_kernel CACHE TMP      downloads + unpacks the kernel of the series STRAIT_VM_KERNEL (6.1, the
#                            default, or 6.12); sets kver, moddir, vmlinuz, busybox
#   vm_initramfs OUT INIT MODULE...   the initramfs: busybox, INIT as /init, init-lib.sh, the MODULEs
#   vm_accel                 sets accel_args (KVM when really usable, else TCG, threaded as the kernel
#                            of vm_kernel, called first, needs)

vm_host_tools() {  # installed only when missing; xz-utils and kmod are there on any Debian
  local need=()
  command -v qemu-system-x86_64 >/dev/null || need+=(qemu-system-x86)
  command -v xz >/dev/null || need+=(xz-utils)
  command -v depmod >/dev/null || need+=(kmod)
  [ ${#need[@]} -gt 0 ] || return 0
  [ "$(id -u)" = 0 ] || fail "missing packages ${need[*]}; run as root to install them"
  say "installing ${need[*]}"
  export DEBIAN_FRONTEND=noninteractive DEBCONF_NOWARNINGS=yes
  apt-get install -y -q --no-install-recommends "${need[@]}" >/dev/null ||
    { apt-get update -q >/dev/null && apt-get install -y -q --no-install-recommends "${need[@]}" >/dev/null; } ||
    fail "apt-get install ${need[*]} failed"
}

# Downloads are unpacked into CACHE, never installed (no hooks, nothing in /boot or /lib/modules).
vm_unpack() {  # vm_unpack CACHE TMP PACKAGE: download PACKAGE into CACHE/PACKAGE once
  local dir=$1/$3
  [ -e "$dir/.done" ] && return
  say "downloading $3"
  mkdir -p "$2/deb"
  chown _apt "$2/deb" 2>/dev/null || true   # apt downloads as the _apt user when it can
  (cd "$2/deb" && apt-get download -q "$3" >/dev/null) || fail "apt-get download $3 failed"
  rm -rf "$dir"
  mkdir -p "$1"
  dpkg-deb -x "$2/deb/$3"_*.deb "$dir" || fail "cannot unpack $3"
  rm -rf "$dir/usr/share" "$2/deb"
  touch "$dir/.done"
}

# The kernel series the VMs boot: STRAIT_VM_KERNEL=6.1 (default: bookworm's own, through the meta package
# linux-image-amd64) or 6.12 (bookworm-security's backport, through linux-image-6.12-amd64; it has tcx).
# Sets kmeta (the meta package) and kglob (the versioned packages of that series, for the cache),
# vm_tcg_thread, how qemu's TCG runs the vCPUs (vm_accel), and vm_tcg_cpus, how many it gets under TCG:
# 6.12 patching its own code under multi-threaded TCG dies in seconds (README.md, "Things that were not
# obvious"), so it runs on one thread, and with one vCPU: two vCPUs taking turns on one thread spin on
# each other's locks, and the eBPF lab took 719 s there against 368 s on one vCPU.
vm_kernel_series() {
  case ${STRAIT_VM_KERNEL:-6.1} in
    6.1) kmeta=linux-image-amd64 kglob='linux-image-6.1.0-*-amd64' vm_tcg_thread=multi vm_tcg_cpus=2 ;;
    6.12) kmeta=linux-image-6.12-amd64 kglob='linux-image-6.12.*-amd64' vm_tcg_thread=single vm_tcg_cpus=1 ;;
    *) fail "STRAIT_VM_KERNEL=${STRAIT_VM_KERNEL}: expected 6.1 or 6.12" ;;
  esac
}

vm_kernel() {  # vm_kernel CACHE TMP (TMP: a directory the _apt user can reach)
  local cache=$1 pkg kroot kmeta kglob
  vm_kernel_series
  # The kernel: the versioned package the series' meta package depends on.
  kpkg() { apt-cache depends "$kmeta" 2>/dev/null | sed -n 's/^ *Depends: \(linux-image-[0-9].*-amd64\)$/\1/p' | head -1; }
  pkg=$(kpkg)
  if [ -z "$pkg" ]; then
    say "apt does not know $kmeta; running apt-get update"
    apt-get update -q >/dev/null || true
    pkg=$(kpkg)
  fi
  if [ -z "$pkg" ]; then
    # Offline with no lists: fall back on whatever kernel of the series is already unpacked.
    pkg=$(find "$cache" -mindepth 1 -maxdepth 1 -name "$kglob" -printf '%f\n' 2>/dev/null | sort -V | tail -1)
    [ -n "$pkg" ] || fail "cannot resolve the kernel package $kmeta depends on"
  fi
  case $pkg in $kglob) ;; *) fail "$kmeta depends on $pkg, not a $kglob" ;; esac
  kroot=$cache/$pkg
  vm_unpack "$cache" "$2" "$pkg"
  kver=$(ls "$kroot/lib/modules")
  moddir=$kroot/lib/modules/$kver
  vmlinuz=$kroot/boot/vmlinuz-$kver
  # The package ships no modules.dep (its postinst makes it); make it in the cache only.
  [ -s "$moddir/modules.dep" ] || depmod -b "$kroot" "$kver"
  # Older ABIs of this series only: each series keeps its own kernel beside the others'.
  find "$cache" -mindepth 1 -maxdepth 1 -name "$kglob" ! -name "$pkg" -exec rm -rf {} +
  # busybox-static for the initramfs (no libc there). Downloaded rather than installed: it Conflicts with
  # the dynamic busybox that initramfs-tools uses on many hosts.
  vm_unpack "$cache" "$2" busybox-static
  busybox=$cache/busybox-static/bin/busybox
}

# The initramfs (rebuilt each run: ~0.1 s): busybox, INIT as /init with test/vm/init-lib.sh beside it,
# and the MODULEs with their dependencies from modules.dep, in load order (those built in skipped).
vm_initramfs() {  # vm_initramfs OUT INIT MODULE...
  local out=$1 init=$2 ird path name
  shift 2
  ird=$(mktemp -d "${TMPDIR:-/tmp}/strait-initramfs.XXXXXX")
  deps() {  # print module $1 (a modules.dep path) after its dependencies, each once
    local m=$1 d
    for d in $(sed -n "s|^$m: *||p" "$moddir/modules.dep"); do deps "$d"; done
    echo "$m"
  }
  mkdir -p "$ird/bin" "$ird/modules"
  cp "$busybox" "$ird/bin/busybox" && ln -s busybox "$ird/bin/sh"
  cp "$init" "$ird/init" && chmod +x "$ird/init"
  cp "$repo/test/vm/init-lib.sh" "$ird/init-lib.sh"
  for mod in "$@"; do
    # Built in (virtio_pci is from 6.12 on): nothing to load.
    grep -q "/$mod\.ko\$" "$moddir/modules.builtin" && continue
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
  (cd "$ird" && find . | "$busybox" cpio -o -H newc 2>/dev/null) >"$out"
  rm -rf "$ird"
}

# KVM needs the hardware backend (kvm_intel/kvm_amd). A /dev/kvm served only by kvm_pvm (PVM, a
# software hypervisor for nested clouds) runs only PVM-enabled guest kernels; Debian's crawls there
# (no kernel output after minutes), so that counts as no KVM. STRAIT_VM_ACCEL=kvm|tcg overrides, and
# STRAIT_VM_TCG_THREAD=multi|single the kernel's choice of TCG threading (vm_kernel_series), and
# STRAIT_VM_CPUS its number of vCPUs (vm_cpus).
vm_accel() {
  local accel=${STRAIT_VM_ACCEL:-}
  if [ -z "$accel" ]; then
    accel=tcg
    if [ -r /dev/kvm ] && [ -w /dev/kvm ] && { [ -d /sys/module/kvm_intel ] || [ -d /sys/module/kvm_amd ]; }; then accel=kvm; fi
  fi
  if [ "$accel" = kvm ]; then
    # -arch-capabilities: under nested KVM qemu 7.2 can abort setting MSR 0x10a with a plain "-cpu host";
    # without it the guest merely assumes it is vulnerable to the speculation bugs that MSR reports.
    accel_args=(-enable-kvm -cpu host,-arch-capabilities)
    vm_cpus=${STRAIT_VM_CPUS:-2}
  else
    say "WARNING: no usable hardware KVM (/dev/kvm missing or kvm_pvm only): TCG emulation, several times slower"
    local thread=${STRAIT_VM_TCG_THREAD:-${vm_tcg_thread:-multi}}
    case $thread in multi | single) ;; *) fail "STRAIT_VM_TCG_THREAD=$thread: expected multi or single" ;; esac
    vm_cpus=${STRAIT_VM_CPUS:-${vm_tcg_cpus:-2}}
    [ "$thread" = multi ] || say "TCG on one host thread (thread=single) for $vm_cpus vCPU(s): slower, but this kernel's code patching is safe"
    accel_args=(-accel "tcg,thread=$thread" -cpu max)
  fi
}

# The kernel command line: a dead init ends qemu at once (panic=-1 with -no-reboot).
vm_append="console=ttyS0 quiet loglevel=3 panic=-1 mitigations=off"
