# Sourced by image/build.sh (the container image's Debian layer) and vagrant/local/image.sh (the local
# VMs' root): the one way this repository makes a Debian bookworm root with mmdebstrap, and finds a
# Node.js binary to put into it. Needs $repo (the repository) and fail() from the caller.

# The packages of a list file ('#' starts a comment), comma-separated, of every FILE given.
debian_packages() { sed 's/#.*//' "$@" | xargs | tr ' ' ','; }

# debian_args FORMAT PACKAGES: sets the array debian_args (mmdebstrap's options) and debian_key (a
# cache key of everything that goes into the root: those options and this machine's apt sources).
# Essential packages only (no apt: nothing is installed at run time) and ours, without manuals, docs
# (copyright files kept) and translations. /usr is merged as debootstrap does it (with usr-is-merged;
# apt would otherwise pick usrmerge, which pulls in all of perl). resolv.conf and hostname are left
# empty: the container runtime mounts its own, a VM sets its own; mmdebstrap would leave this machine's.
debian_sources=/etc/apt/sources.list.d/debian.sources
debian_args() {
  [[ -f $debian_sources ]] || fail "$debian_sources is missing: the root's packages come from this machine's apt sources"
  debian_args=(--mode=root --variant=essential --architectures="$(dpkg --print-architecture)"
    --format="$1" --include="$2"
    --hook-dir=/usr/share/mmdebstrap/hooks/merged-usr
    --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/doc/*'
    --dpkgopt='path-include=/usr/share/doc/*/copyright' --dpkgopt='path-exclude=/usr/share/locale/*'
    --dpkgopt='path-exclude=/usr/share/info/*'
    --customize-hook='for f in resolv.conf hostname; do install -m 644 /dev/null "$1/etc/$f"; done')
  debian_key=$({ printf '%s\n' "${debian_args[@]}"; cat "$debian_sources"; } | sha256sum | cut -c1-16)
}

# debian_bootstrap TARGET LOG: mmdebstrap bookworm with debian_args into TARGET. Its hooks talk on
# stdout and stderr: shown only when it fails.
debian_bootstrap() {
  command -v mmdebstrap >/dev/null || fail "mmdebstrap is missing (sudo bash .ci/setup installs it)"
  mmdebstrap --quiet "${debian_args[@]}" bookworm "$1" "$debian_sources" >"$2" 2>&1 ||
    { cat "$2" >&2; fail "mmdebstrap failed"; }
}

# Sets node to this machine's Node.js binary (resolved), which goes into the root: Debian bookworm's
# nodejs (18) cannot require() the ES module @kubernetes/client-node 1.x, which `strait agent
# --kubernetes` loads (README, "Image").
host_node() {
  command -v node >/dev/null || fail "node is missing"
  node=$(readlink -f "$(command -v node)")
  [[ $("$node" -p 'process.features.require_module === true') == true ]] ||
    fail "$node ($("$node" --version)) cannot require() ES modules: Strait needs Node.js 20.19 or later"
}
