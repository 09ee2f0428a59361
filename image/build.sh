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

fail() { echo "image/build.sh: $*" >&2; exit 1; }
# shellcheck source=image/debian.sh
source "$repo/image/debian.sh"
[[ $(id -u) == 0 ]] || fail "needs root (mmdebstrap installs packages into a root it owns)"
for tool in umoci npm git; do
  command -v "$tool" >/dev/null || fail "$tool is missing (sudo bash .ci/setup installs what this needs)"
done
for built in dist/src/cli/main.js dist/bpf/strait.o build/Release/strait.node node_modules/.package-lock.json; do
  [[ -e $repo/$built ]] || fail "$built is missing: run npm ci && npm run build first"
done

host_node

version=$(cd "$repo" && node -p 'require("./package.json").version')
description=$(cd "$repo" && node -p 'require("./package.json").description')
license=$(cd "$repo" && node -p 'require("./package.json").license')
revision=$(git -C "$repo" rev-parse HEAD)
[[ -z $(git -C "$repo" status --porcelain) ]] || revision+=-dirty
created=$(date -u -d "@$(git -C "$repo" log -1 --format=%ct)" +%Y-%m-%dT%H:%M:%SZ)
arch=$(dpkg --print-architecture)
packages=$(debian_packages "$repo/image/runtime-packages")

work=$(mktemp -d "${TMPDIR:-/tmp}/strait-image.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$out/cache"

# The Debian layer (image/debian.sh).
debian_args tar "$packages"
base=$out/cache/debian-bookworm-$debian_key.tar
if [[ ! -f $base ]]; then
  rm -f "$out"/cache/debian-bookworm-*.tar
  echo "--- Debian layer: mmdebstrap bookworm with $packages"
  debian_bootstrap "$work/base.tar" "$work/mmdebstrap.log"
  mv "$work/base.tar" "$base"
fi

# Strait's layer: /opt/strait laid out as the repository is (the code finds its BPF object and addon
# relative to dist/src), with production dependencies only; node and strait in /usr/local/bin.
app=$work/app
mkdir -p "$app/opt/strait/dist/bpf" "$app/opt/strait/build/Release" "$app/usr/local/bin"
cp -a "$repo/package.json" "$repo/package-lock.json" "$repo/node_modules" "$app/opt/strait/"
(cd "$app/opt/strait" && npm prune --omit=dev --ignore-scripts --offline --no-audit --no-fund --loglevel=error >/dev/null)
# The lab (lab/, the workspace strait-lab) is not in the image: prune drops the workspace's link (lab/ is
# not here) but leaves its bin, dangling.
rm -f "$app/opt/strait/node_modules/strait-lab" "$app/opt/strait/node_modules/.bin/strait-lab"
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
