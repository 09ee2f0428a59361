#!/bin/sh
# PID 1 of the test VM (see README.md). POSIX sh, in two stages:
#   stage 1 (no argument): /init of the initramfs, under busybox. Loads the virtio/9p/overlay modules,
#     builds the new root (the host's root over 9p, read-only, under a tmpfs overlay) and switch_roots.
#   stage 2: run by the host's /bin/sh inside the new root. Loads the test modules, runs the command
#     from /run/strait-vm/cmd.sh, prints "STRAIT-VM-EXIT <code>" on the console and powers off.
# The harness's writable 9p share (tag "strait-vm") carries: cmd.sh, kver (the kernel version) and
# moddir (where the unpacked lib/modules/<kver> is, as a path of the host root); exit comes back.

die() { echo "strait-vm: $*" >&2; echo "STRAIT-VM-EXIT 125"; echo o >/proc/sysrq-trigger; sleep 10; exit 1; }

if [ "${1:-}" != stage2 ]; then
  export PATH=/bin
  /bin/busybox mkdir -p /dev /proc /sys && /bin/busybox mount -t devtmpfs dev /dev
  exec </dev/console >/dev/console 2>&1
  /bin/busybox --install -s /bin
  mount -t proc proc /proc && mount -t sysfs sys /sys || die "cannot mount proc/sys"
  # Dependency order, computed on the host from modules.dep; busybox insmod does not resolve it.
  while read -r m; do insmod "/modules/$m" || die "insmod $m failed"; done </modules/order

  mkdir -p /lower /rw /newroot
  # msize: 6.1's default is 8 KiB per 9p request. cache=loose: the host root is read-only for the VM and
  # nothing in it that the VM must see changes during a run, so dentries and pages may be cached
  # (10-15% off node startup and the suite under TCG, where the CPU dominates; more with KVM).
  mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000,cache=loose,ro hostroot /lower ||
    die "cannot mount the host root over 9p"
  # A tmpfs overlay makes the whole root writable (the host's /lib/modules does not even exist, so a
  # plain tmpfs over it would have no mount point); writes vanish with the VM.
  mount -t tmpfs -o mode=755 rw /rw && mkdir /rw/upper /rw/work &&
    mount -t overlay -o lowerdir=/lower,upperdir=/rw/upper,workdir=/rw/work root /newroot ||
    die "cannot mount the overlay root"

  cd /newroot || die "no /newroot"
  mount -t proc proc proc && mount -t sysfs sys sys && mount -t devtmpfs dev dev &&
    mkdir -p dev/pts dev/shm && mount -t devpts devpts dev/pts && mount -t tmpfs shm dev/shm &&
    mount -t bpf bpf sys/fs/bpf &&
    mount -t tmpfs -o mode=755 run run || die "cannot mount the API filesystems"
  # A fresh tmpfs on /run: the host's (seen through 9p) holds its netns names, pid files, lab state...
  # /tmp stays the overlay's (writable, nothing reaches the host): a repo cloned under /tmp, as CI may
  # do, must stay visible.
  mkdir -p run/strait-vm run/netns &&
    mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000 strait-vm run/strait-vm ||
    die "cannot mount the harness share"
  kver=$(cat run/strait-vm/kver) && moddir=$(cat run/strait-vm/moddir) || die "share is incomplete"
  # The kernel's request_module runs /sbin/modprobe, i.e. the host's kmod, which reads /lib/modules/<kver>.
  mkdir -p "lib/modules/$kver" && mount --bind ".$moddir" "lib/modules/$kver" || die "cannot bind $moddir"
  cp /init run/strait-init.sh
  exec switch_root /newroot /bin/sh /run/strait-init.sh stage2
  die "switch_root failed"
fi

# Stage 2: the host's userspace, this kernel.
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8
hostname strait-vm 2>/dev/null
ip link set lo up
# Loaded up front: this VM exists to run what needs them (ESP above all), so a missing one ends the run
# here with its name rather than letting the tests meet a kernel without it. The rest (crypto, nft
# expressions...) autoload through modprobe.
for m in esp4 xfrm_user xfrm_interface vxlan veth nf_tables nft_nat nft_chain_nat macvlan ipvlan; do
  modprobe "$m" || die "cannot load module $m"
done
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
