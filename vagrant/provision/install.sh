#!/usr/bin/env bash
# Makes a Debian 12 machine ready to be a node of the multi-VM lab (root): the packages Strait runs on,
# Node.js, Strait built from the repository at $1 (default: the directory above vagrant/), bpffs mounted.
# Shared by the Vagrantfile and the local qemu VMs of `npm run test:multivm`, so what is tested here is what
# a Vagrant user runs. Each step runs only when its result is missing: the local VMs' image has everything
# (and no network) and runs this under emulation, where it must only check and say so. Safe to run again.
set -euo pipefail
repo=$(cd "${1:-$(dirname "$0")/../..}" && pwd)

# Node.js for a machine that has none (a Vagrant box): the official build, checked against the SHA-256 of
# https://nodejs.org/dist/v20.19.5/SHASUMS256.txt pinned here, so a changed download is refused.
node_version=20.19.5
node_sha256=315046739a513a70e03a4a55a8afda8cf979f30852e576075c340084e3f8ac0f
node_minimum=(20 19)

done_steps=()
say() { echo "install.sh: $*"; }

# The names of the Debian packages in a list file: one a line, '#' starts a comment.
package_list() { sed -e 's/#.*//' "$@" | tr -s ' \t' '\n' | sed -e '/^$/d'; }

# Of the given packages, those not installed (one dpkg-query, which reads the local status file only).
missing_packages() {
  local -A installed=()
  local status p
  while read -r status p; do [[ $status == ii ]] && installed[$p]=1; done < <(dpkg-query -W -f='${db:Status-Abbrev} ${Package}\n' "$@" 2>/dev/null || true)
  for p in "$@"; do [[ -n ${installed[$p]:-} ]] || echo "$p"; done
}

apt_install() {
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

mapfile -t wanted < <(package_list "$repo/image/runtime-packages" "$repo/vagrant/provision/packages")
mapfile -t missing < <(missing_packages "${wanted[@]}")
if ((${#missing[@]})); then
  apt_install "${missing[@]}"
  done_steps+=("installed ${missing[*]}")
fi

# Whether `node` is on PATH and at least the minimum version (the CLI's `node:` APIs need 20.19).
node_fits() {
  local version major minor
  version=$(node --version 2>/dev/null) || return 1
  IFS=. read -r major minor _ <<<"${version#v}"
  ((major > node_minimum[0] || (major == node_minimum[0] && minor >= node_minimum[1])))
}

install_node() {
  local arch name tmp
  arch=$(uname -m)
  if [[ $arch != x86_64 ]]; then
    say "Node.js >= ${node_minimum[0]}.${node_minimum[1]} is missing and only the x86_64 build is pinned here (this machine: $arch); install it and run again" >&2
    exit 1
  fi
  mapfile -t missing < <(missing_packages curl ca-certificates xz-utils)
  if ((${#missing[@]})); then apt_install "${missing[@]}"; fi
  name=node-v$node_version-linux-x64
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  curl -fsSL -o "$tmp/$name.tar.xz" "https://nodejs.org/dist/v$node_version/$name.tar.xz"
  if ! echo "$node_sha256  $tmp/$name.tar.xz" | sha256sum --check --quiet --status -; then
    say "$name.tar.xz: SHA-256 is $(sha256sum "$tmp/$name.tar.xz" | cut -d' ' -f1), expected $node_sha256; refused" >&2
    exit 1
  fi
  mkdir -p /usr/local/lib/nodejs
  tar -xJf "$tmp/$name.tar.xz" -C /usr/local/lib/nodejs
  ln -sfn "/usr/local/lib/nodejs/$name/bin/node" "/usr/local/lib/nodejs/$name/bin/npm" "/usr/local/lib/nodejs/$name/bin/npx" /usr/local/bin/
  hash -r
}

if ! node_fits; then
  install_node
  node_fits || { say "node --version after installing: $(node --version 2>&1)" >&2; exit 1; }
  done_steps+=("installed Node.js $node_version")
fi

# Strait built as the README builds it; only when an artefact is missing (a synced repository without
# node_modules/, dist/ or build/).
artefacts=(dist/src/cli/main.js dist/lab/src/main.js dist/bpf/strait.o build/Release/strait.node)
built=true
for a in "${artefacts[@]}"; do [[ -e $repo/$a ]] || built=false; done
if ! $built; then
  (cd "$repo" && bash .ci/setup && npm ci --no-audit --no-fund && npm run build)
  done_steps+=("built Strait in $repo")
fi

# Where the agent pins its maps and links (.ci/setup mounts it too, but only when it builds).
if ! mountpoint -q /sys/fs/bpf; then
  mount -t bpf bpf /sys/fs/bpf
  done_steps+=("mounted bpffs")
fi

if ((${#done_steps[@]})); then
  for s in "${done_steps[@]}"; do say "$s"; done
else
  say "nothing to do: ${#wanted[@]} packages installed, node $(node --version), Strait built in $repo, bpffs mounted"
fi
