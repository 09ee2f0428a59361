# Sourced by the VMs' PID 1 (test/vm/init.sh, vagrant/local/init.sh): POSIX sh, run by busybox in stage 1
# (the initramfs) and by the new root's /bin/sh in stage 2. The host shares over 9p: the root (tag
# hostroot, read-only), the kernel's modules (tag modules, read-only) and a writable harness directory
# (tag strait-vm, mounted at /run/strait-vm).

die() { echo "strait-vm: $*" >&2; echo "STRAIT-VM-EXIT 125"; echo o >/proc/sysrq-trigger; sleep 10; exit 1; }

# Stage 1: loads the virtio/9p/overlay modules, builds the new root (the shared root over 9p, read-only,
# under a tmpfs overlay) and switch_roots into `/bin/sh <this init> stage2`.
vm_stage1() {
  export PATH=/bin
  /bin/busybox mkdir -p /dev /proc /sys && /bin/busybox mount -t devtmpfs dev /dev
  exec </dev/console >/dev/console 2>&1
  /bin/busybox --install -s /bin
  mount -t proc proc /proc && mount -t sysfs sys /sys || die "cannot mount proc/sys"
  # Dependency order, computed on the host from modules.dep; busybox insmod does not resolve it.
  while read -r m; do insmod "/modules/$m" || die "insmod $m failed"; done </modules/order

  mkdir -p /lower /rw /newroot
  # msize: 6.1's default is 8 KiB per 9p request. cache=loose: the root is read-only for the VM and
  # nothing in it that the VM must see changes during a run, so dentries and pages may be cached
  # (10-15% off node startup and the suite under TCG, where the CPU dominates; more with KVM).
  mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000,cache=loose,ro hostroot /lower ||
    die "cannot mount the root over 9p"
  # A tmpfs overlay makes the whole root writable (the host's /lib/modules does not even exist, so a
  # plain tmpfs over it would have no mount point); writes vanish with the VM.
  mount -t tmpfs -o mode=755 rw /rw && mkdir /rw/upper /rw/work &&
    mount -t overlay -o lowerdir=/lower,upperdir=/rw/upper,workdir=/rw/work root /newroot ||
    die "cannot mount the overlay root"

  cd /newroot || die "no /newroot"
  # /dev/fd and friends are udev's on a full system; bash's <(...) needs them.
  mount -t proc proc proc && mount -t sysfs sys sys && mount -t devtmpfs dev dev &&
    mkdir -p dev/pts dev/shm && mount -t devpts devpts dev/pts && mount -t tmpfs shm dev/shm &&
    ln -sfn /proc/self/fd dev/fd && ln -sfn fd/0 dev/stdin && ln -sfn fd/1 dev/stdout && ln -sfn fd/2 dev/stderr &&
    mount -t bpf bpf sys/fs/bpf &&
    mount -t tmpfs -o mode=755 run run || die "cannot mount the API filesystems"
  # A fresh tmpfs on /run: the host's (seen through 9p) holds its netns names, pid files, lab state...
  # /tmp stays the overlay's (writable, nothing reaches the host): a repo cloned under /tmp, as CI may
  # do, must stay visible.
  mkdir -p run/strait-vm run/netns &&
    mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000 strait-vm run/strait-vm ||
    die "cannot mount the harness share"
  # The kernel's request_module runs /sbin/modprobe (kmod in the new root), which reads
  # /lib/modules/<kver>: the unpacked kernel package's, shared by the host.
  kver=$(uname -r)
  mkdir -p "lib/modules/$kver" &&
    mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000,cache=loose,ro modules "lib/modules/$kver" ||
    die "cannot mount the kernel's modules"
  cp /init run/strait-init.sh && cp /init-lib.sh run/strait-init-lib.sh || die "cannot copy the init"
  exec switch_root /newroot /bin/sh /run/strait-init.sh stage2
  die "switch_root failed"
}

# Stage 2 (the new root's userspace, this kernel): vm_stage2 HOSTNAME MODULE... sets a plain
# environment, the hostname, lo up, and loads the MODULEs up front: a VM exists to run what needs them,
# so a missing one ends the run here with its name rather than letting the tests meet a kernel without
# it. The rest (crypto, nft expressions...) autoload through modprobe.
vm_stage2() {
  export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8
  echo "$1" >/proc/sys/kernel/hostname
  shift
  ip link set lo up
  for m in "$@"; do
    modprobe "$m" || die "cannot load module $m"
  done
}
