#!/usr/bin/env bash
# The local lab VMs' root filesystem: Debian bookworm from mmdebstrap with image/runtime-packages and
# vagrant/provision/packages, unpacked as a directory (the VMs boot it over 9p, read-only, under a tmpfs
# overlay), plus this machine's Node.js as /usr/local/bin/node. Prints the directory.
#   bash vagrant/local/image.sh
# Cached in build/multivm/root-<key>, keyed as image/build.sh keys its Debian layer (image/debian.sh:
# packages, options, apt sources); a second run downloads nothing. Needs root and mmdebstrap.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
out=$repo/build/multivm
fail() { echo "vagrant/local/image.sh: $*" >&2; exit 1; }
# shellcheck source=image/debian.sh
source "$repo/image/debian.sh"
[[ $(id -u) == 0 ]] || fail "needs root (mmdebstrap installs packages into a root it owns)"
host_node

debian_args directory "$(debian_packages "$repo/image/runtime-packages" "$repo/vagrant/provision/packages")"
root=$out/root-$debian_key
if [[ ! -e $root/.done ]]; then
  echo "vagrant/local/image.sh: mmdebstrap bookworm into $root" >&2
  mkdir -p "$out"
  find "$out" -mindepth 1 -maxdepth 1 -name 'root-*' -exec rm -rf {} +   # older keys
  log=$(mktemp "${TMPDIR:-/tmp}/strait-mvm-image.XXXXXX")
  trap 'rm -f "$log"' EXIT
  debian_bootstrap "$root" "$log"
  touch "$root/.done"
fi
# Node.js follows the host's (not in the key: a copy costs a second, a new root minutes).
cmp -s "$node" "$root/usr/local/bin/node" || install -D -m 755 "$node" "$root/usr/local/bin/node"
[[ $(env -u NODE_EXTRA_CA_CERTS chroot "$root" /usr/local/bin/node -p 'process.features.require_module === true') == true ]] ||
  fail "node does not run in $root"
echo "$root"
