#!/usr/bin/env bash
# Builds Strait's container image from Debian packages alone, without a container engine or a registry:
# mmdebstrap makes a Debian bookworm root with image/runtime-packages from this machine's apt sources,
# the artefacts already built here go on top (npm ci && npm run build first), and umoci packs both layers
# into an OCI image archive, build/image/strait-oci.tar, tagged with package.json's version.
# Needs root, mmdebstrap and umoci (.ci/setup installs them). The Dockerfile builds the same image where
# a Docker engine runs.
#
# The Debian layer is cached in build/image/cache/, keyed by everything that goes into it (packages, apt
# sources, mmdebstrap's options): a second build downloads nothing. Remove that directory to pick up
# Debian's updates.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
out=$repo/build/image
archive=$out/strait-oci.tar
sources=/etc/apt/sources.list.d/debian.sources

fail() { echo "image/build.sh: $*" >&2; exit 1; }
[[ $(id -u) == 0 ]] || fail "needs root (mmdebstrap installs packages into a root it owns)"
for tool in mmdebstrap umoci node npm git; do
  command -v "$tool" >/dev/null || fail "$tool is missing (sudo bash .ci/setup installs what this needs)"
done
[[ -f $sources ]] || fail "$sources is missing: the image's packages come from this machine's apt sources"
for built in dist/src/cli/main.js dist/bpf/strait.o build/Release/strait.node node_modules/.package-lock.json; do
  [[ -e $repo/$built ]] || fail "$built is missing: run npm ci && npm run build first"
done

# Node.js is this machine's own binary: Debian bookworm's nodejs (18) cannot require() the ES module
# @kubernetes/client-node 1.x, which `strait agent --kubernetes` loads (README, "Image").
node=$(readlink -f "$(command -v node)")
[[ $("$node" -p 'process.features.require_module === true') == true ]] ||
  fail "$node ($("$node" --version)) cannot require() ES modules: Strait needs Node.js 20.19 or later"

version=$(cd "$repo" && node -p 'require("./package.json").version')
description=$(cd "$repo" && node -p 'require("./package.json").description')
license=$(cd "$repo" && node -p 'require("./package.json").license')
revision=$(git -C "$repo" rev-parse HEAD)
[[ -z $(git -C "$repo" status --porcelain) ]] || revision+=-dirty
created=$(date -u -d "@$(git -C "$repo" log -1 --format=%ct)" +%Y-%m-%dT%H:%M:%SZ)
arch=$(dpkg --print-architecture)
packages=$(sed 's/#.*//' "$repo/image/runtime-packages" | xargs | tr ' ' ',')

work=$(mktemp -d "${TMPDIR:-/tmp}/strait-image.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$out/cache"

# The Debian layer: Essential packages (no apt: the image installs nothing at run time) and ours, without
# manuals, docs (copyright files kept) and translations. /usr is merged as debootstrap does it (with
# usr-is-merged; apt would otherwise pick usrmerge, which pulls in all of perl). The runtime mounts its
# own resolv.conf and hostname over empty files; mmdebstrap would leave this machine's.
base_args=(--mode=root --variant=essential --architectures="$arch" --format=tar --include="$packages"
  --hook-dir=/usr/share/mmdebstrap/hooks/merged-usr
  --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/doc/*'
  --dpkgopt='path-include=/usr/share/doc/*/copyright' --dpkgopt='path-exclude=/usr/share/locale/*'
  --dpkgopt='path-exclude=/usr/share/info/*'
  --customize-hook='for f in resolv.conf hostname; do install -m 644 /dev/null "$1/etc/$f"; done')
base_key=$({ printf '%s\n' "${base_args[@]}"; cat "$sources"; } | sha256sum | cut -c1-16)
base=$out/cache/debian-bookworm-$base_key.tar
if [[ ! -f $base ]]; then
  rm -f "$out"/cache/debian-bookworm-*.tar
  echo "--- Debian layer: mmdebstrap bookworm with $packages"
  # Its hooks talk on stdout and stderr: shown only when it fails.
  mmdebstrap --quiet "${base_args[@]}" bookworm "$work/base.tar" "$sources" >"$work/mmdebstrap.log" 2>&1 ||
    { cat "$work/mmdebstrap.log" >&2; fail "mmdebstrap failed"; }
  mv "$work/base.tar" "$base"
fi

# Strait's layer: /opt/strait laid out as the repository is (the code finds its BPF object and addon
# relative to dist/src), with production dependencies only; node and strait in /usr/local/bin.
app=$work/app
mkdir -p "$app/opt/strait/dist/bpf" "$app/opt/strait/build/Release" "$app/usr/local/bin"
cp -a "$repo/package.json" "$repo/package-lock.json" "$repo/node_modules" "$app/opt/strait/"
(cd "$app/opt/strait" && npm prune --omit=dev --ignore-scripts --offline --no-audit --no-fund --loglevel=error >/dev/null)
rm "$app/opt/strait/package-lock.json"
# dist/src whole: the CLI, and the CNI plugin (dist/src/cni/main.js) the chart's install-strait-ipam init
# container copies to the host with this Node.js and what ldd lists for it (strait pool-ipam install-plugin).
cp -a "$repo/dist/src" "$app/opt/strait/dist/"
cp -a "$repo/dist/bpf/strait.o" "$app/opt/strait/dist/bpf/"
cp -a "$repo/build/Release/strait.node" "$app/opt/strait/build/Release/"
cp "$node" "$app/usr/local/bin/node"
ln -s /opt/strait/dist/src/cli/main.js "$app/usr/local/bin/strait"
tar -C "$app" --sort=name --owner=0 --group=0 --numeric-owner --mtime="$created" -cf "$work/app.tar" opt usr

echo "--- OCI image: strait:$version"
layout=$work/oci
umoci init --layout "$layout"
umoci new --image "$layout:$version"
umoci raw add-layer --image "$layout:$version" --history.created="$created" \
  --history.created_by="mmdebstrap bookworm ($packages)" "$base"
umoci raw add-layer --image "$layout:$version" --history.created="$created" \
  --history.created_by="image/build.sh: Strait $version ($revision), Node.js $("$node" --version)" "$work/app.tar"
umoci config --image "$layout:$version" --created="$created" --architecture="$arch" --os=linux \
  --history.created="$created" --history.created_by="image/build.sh: entrypoint and labels" \
  --config.entrypoint=/usr/local/bin/strait \
  --config.env=PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  --config.label=org.opencontainers.image.title=strait \
  --config.label=org.opencontainers.image.description="$description" \
  --config.label=org.opencontainers.image.version="$version" \
  --config.label=org.opencontainers.image.revision="$revision" \
  --config.label=org.opencontainers.image.licenses="$license"
umoci gc --layout "$layout"
tar -C "$layout" -cf "$work/strait-oci.tar" .
mv "$work/strait-oci.tar" "$archive"
echo "--- $archive ($(du -m "$archive" | cut -f1) MiB): strait:$version"
