/**
 * Builds the lab's networks from network namespaces: a bridge per cluster underlay, a bridge for the
 * public network between nodes, a namespace per node and per pod (attached by a real CNI plugin). Each namespace is configured with one
 * `ip -batch` so a lab of dozens of namespaces comes up in about a second.
 */
import { run } from '../../src/kernel/command';
import { createNetns, deleteNetns } from '../../src/kernel/netns';
import { labPrefix, nodeNetns, podNetns, publicNetns, switchNetns } from './names';
import { type NodePlace, inPlace } from './node-place';
import { attachPod, podLeaseDir, podNetworkConfig } from './pod-network';
import type { LabCluster, LabNode, LabTopology } from './topology';

export function batch(place: NodePlace, lines: string[]): void {
  run(['ip', ...(place === 'this machine' ? [] : ['-n', place.netns]), '-batch', '-'], `${lines.join('\n')}\n`);
}

export function sysctl(place: NodePlace, settings: string[]): void {
  run(inPlace(place, ['sysctl', '-q', '-w', ...settings]));
}

const prefixLength = (cidr: string) => cidr.split('/')[1]!;

function bridge(netns: string, mtu: number): void {
  createNetns(netns);
  batch({ netns }, ['link set lo up', `link add br0 mtu ${mtu} type bridge`, 'link set br0 up']);
}

/** A node routes for its pods in both families. */
export const forwarding = ['net.ipv4.ip_forward=1', 'net.ipv6.conf.all.forwarding=1'];

/**
 * Strict reverse-path filtering on every interface of a node: `all` and `default` are set before any
 * link exists, so the underlay and public veths, the pods' veths and the tunnel devices Strait creates
 * later all start from `default` (a namespace's `default` comes from the host's, which may be loose:
 * the kernel applies max(all, device), so one loose device would stay loose whatever `all` says).
 */
export const strictReversePath = ['net.ipv4.conf.all.rp_filter=1', 'net.ipv4.conf.default.rp_filter=1'];

/**
 * Every node routes each other node's pod prefix via that node's underlay address, as a CNI without
 * encapsulation does (flannel host-gw, Calico without IPIP/VXLAN): pods reach the pods of other nodes of
 * their cluster over the underlay. With these routes, and strict rp_filter, a gateway that handed peer
 * traffic for another node's pod to the kernel would send it over the underlay, and that node would drop
 * it (its route back to the peer's prefix is Strait's, not ul0): docs/lab.md, "Routing inside a cluster".
 */
export function podRoutes(cluster: LabCluster, node: LabNode, verb: 'replace' | 'del' = 'replace'): string[] {
  return cluster.nodes
    .filter((n) => n.name !== node.name)
    .flatMap((n) => nodePodCIDRs(n).map((prefix) => `route ${verb} ${prefix} via ${nextHopTo(n, prefix)} dev ul0`));
}

const isIpv6 = (text: string) => text.includes(':');

/**
 * The next hop to node `n`'s pods in `prefix` over the underlay: its underlay address where the families
 * match; toward IPv4 pods over an IPv6 underlay, that address as an IPv6 next hop (RFC 5549, `via inet6`);
 * toward IPv6 pods over an IPv4 underlay, its link-local address (Linux takes no IPv4 next hop for an
 * IPv6 route).
 */
function nextHopTo(n: LabNode, prefix: string): string {
  if (isIpv6(prefix) === isIpv6(n.underlayAddress)) return n.underlayAddress;
  return isIpv6(prefix) ? underlayLinkLocal(n) : `inet6 ${n.underlayAddress}`;
}

/** A node's pod networks, of each family its cluster has. */
const nodePodCIDRs = (n: LabNode): string[] => [n.podCIDR, ...(n.secondaryPodCIDR ? [n.secondaryPodCIDR] : [])];

/**
 * A node's IPv6 address on its IPv4 underlay, where its cluster has IPv6: link-local, its IPv4 address in the low 32 bits,
 * the next hop of the other nodes' routes to its IPv6 pods (a link-local one is what routing daemons use on such links).
 */
function underlayLinkLocal(node: LabNode): string {
  const [a, b, c, d] = node.underlayAddress.split('.').map(Number) as [number, number, number, number];
  return `fe80::${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
}

/**
 * The `ip` lines giving a node of a cluster with IPv6 pods on an IPv4 underlay its underlay link-local
 * address (at once usable: no DAD on a lab link); none on an IPv6 underlay, whose addresses are next hops.
 */
export const underlayLinkLocalLines = (node: LabNode): string[] =>
  !isIpv6(node.underlayAddress) && nodePodCIDRs(node).some(isIpv6) ? [`addr replace ${underlayLinkLocal(node)}/64 dev ul0 nodad`] : [];

/** An `ip addr add` of a lab link's address: an IPv6 one without duplicate address detection, so it is usable at once. */
const addressLine = (address: string, network: string, device: string) =>
  `addr add ${address}/${prefixLength(network)} dev ${device}${isIpv6(address) ? ' nodad' : ''}`;

/** The node's pods: a namespace each, attached by Debian's CNI plugins (pod-network.ts). */
export function buildPods(place: NodePlace, node: LabNode, mtu: number, runDir: string): void {
  const config = podNetworkConfig(node, mtu, podLeaseDir(runDir, node.name));
  for (const pod of node.pods) {
    createNetns(podNetns(pod.name));
    batch({ netns: podNetns(pod.name) }, ['link set lo up']);
    attachPod(place, node, pod, config);
  }
}

export function buildNetworks(topology: LabTopology, runDir: string): void {
  const { mtu } = topology;
  bridge(publicNetns, mtu);
  for (const cluster of topology.clusters) {
    bridge(switchNetns(cluster.id), mtu);
    for (const node of cluster.nodes) {
      const ns = nodeNetns(node.name);
      createNetns(ns);
      sysctl({ netns: ns }, [...forwarding, ...strictReversePath]);
      batch({ netns: ns }, [
        'link set lo up',
        `link add ul0 mtu ${mtu} type veth peer name ${node.name} mtu ${mtu} netns ${switchNetns(cluster.id)}`,
        `link add pub0 mtu ${mtu} type veth peer name ${node.name} mtu ${mtu} netns ${publicNetns}`,
        addressLine(node.underlayAddress, cluster.underlay, 'ul0'),
        ...underlayLinkLocalLines(node),
        addressLine(node.publicAddress, topology.public, 'pub0'),
        'link set ul0 up',
        'link set pub0 up',
        ...podRoutes(cluster, node),
      ]);
      batch({ netns: switchNetns(cluster.id) }, [`link set ${node.name} master br0`, `link set ${node.name} up`]);
      batch({ netns: publicNetns }, [`link set ${node.name} master br0`, `link set ${node.name} up`]);
      buildPods({ netns: ns }, node, mtu, runDir);
    }
  }
}

/** Every lab namespace on this machine, whichever topology made it (also after a crash). */
export function labNamespaces(): string[] {
  return run(['ip', 'netns', 'list'])
    .split('\n')
    .map((l) => l.split(' ')[0]!)
    .filter((n) => n.startsWith(labPrefix));
}

/** Deletes every lab namespace (their links, qdiscs and filters go with them); returns how many. */
export function removeNetworks(): number {
  const all = labNamespaces();
  for (const ns of all) deleteNetns(ns);
  return all.length;
}
