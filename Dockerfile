# Strait's container image, for machines with a Docker engine: docker build -t strait:0.1.0 .
# image/build.sh builds the same image without one (README, "Image"); both install image/runtime-packages.

# Build: Debian bookworm with Node.js 20 (the official node image; Debian's own nodejs is 18, which
# cannot require() the ES module @kubernetes/client-node), the BPF toolchain and the addon's compilers.
FROM node:20-bookworm AS build
RUN apt-get update \
 && apt-get install -y --no-install-recommends clang llvm libbpf-dev libmnl-dev libnftables-dev libelf-dev zlib1g-dev pkg-config make g++ python3 \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
# node-gyp compiles against the headers this image ships rather than downloading them.
ENV npm_config_nodedir=/usr/local
# npm ci runs the package's install script: node-gyp builds the addon from binding.gyp and native/.
COPY package.json package-lock.json binding.gyp tsconfig.json ./
COPY native native
RUN npm ci --no-audit --no-fund
COPY src src
# The lab (lab/, the workspace strait-lab) is compiled with the product (npm run build:ts) but not in the
# image: dist/lab is not copied below, and its link and bin (prune links the workspace) leave node_modules.
COPY lab lab
COPY bpf bpf
RUN npm run build:ts && make -s -C bpf && npm prune --omit=dev --no-audit --no-fund \
 && rm -f node_modules/strait-lab node_modules/.bin/strait-lab

# Run: the Debian packages Strait runs on, Node.js from the build stage, Strait laid out as the
# repository is (the code finds dist/bpf/strait.o and build/Release/strait.node relative to dist/src).
FROM debian:bookworm-slim
COPY image/runtime-packages /tmp/runtime-packages
RUN apt-get update \
 && apt-get install -y --no-install-recommends $(sed 's/#.*//' /tmp/runtime-packages) \
 && rm -rf /var/lib/apt/lists/* /tmp/runtime-packages
COPY --from=build /usr/local/bin/node /usr/local/bin/node
COPY --from=build /src/package.json /opt/strait/
COPY --from=build /src/node_modules /opt/strait/node_modules
# dist/src whole: the CLI, and the CNI plugin (dist/src/cni/main.js) the chart's install-strait-ipam init
# container copies to the host with this Node.js and what ldd lists for it (strait pool-ipam install-plugin).
COPY --from=build /src/dist/src /opt/strait/dist/src
COPY --from=build /src/dist/bpf/strait.o /opt/strait/dist/bpf/
COPY --from=build /src/build/Release/strait.node /opt/strait/build/Release/
RUN ln -s /opt/strait/dist/src/cli/main.js /usr/local/bin/strait
ARG REVISION=unknown
LABEL org.opencontainers.image.title="strait" \
      org.opencontainers.image.description="eBPF-accelerated node dataplane agent connecting Kubernetes clusters pod-to-pod, also with overlapping PodCIDRs" \
      org.opencontainers.image.version="0.1.0" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.licenses="Apache-2.0"
ENTRYPOINT ["/usr/local/bin/strait"]
