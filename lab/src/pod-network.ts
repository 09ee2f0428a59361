/**
 * The lab's pods are attached as a container runtime attaches them: by Debian's CNI plugins, `ptp` (a
 * veth per pod, the pod's address on `eth0`, the gateway's on the node's end, a /32 route to the pod) with
 * `host-local` handing out the address from the node's PodCIDR, so Strait is proven beside a real CNI
 * (its own routes between nodes are flannel host-gw's: network.ts `podRoutes`). The node's end of each
 * veth is named by the plugin (`veth` and 8 hex digits), as on a real node.
 */
import { join } from 'node:path';
import { run } from '../../src/kernel/command';
import { netnsPath } from '../../src/kernel/netns';
import { podNetns } from './names';
import { type NodePlace, inPlace } from './node-place';
import type { LabNode, LabPod } from './topology';

const cniPath = '/usr/lib/cni';
/** How Strait's agents in the lab find the pods' interfaces: the names `ptp` gives the node's veth ends. */
export const podInterfacePattern = '^veth';

/**
 * The node's network configuration (CNI 1.0.0, the newest Debian's plugins speak): the gateway is the
 * PodCIDR's first address (host-local's default), the pod's default route goes through it, and
 * host-local keeps its leases in `dataDir`, under the lab's run directory (never the host's /var/lib/cni).
 * A dual-stack node hands out an address of each family (a range set each, as a dual-stack CNI does).
 */
export function podNetworkConfig(node: LabNode, mtu: number, dataDir: string): Record<string, unknown> {
  const subnets = nodePodCIDRs(node);
  return {
    cniVersion: '1.0.0',
    name: `strait-lab-${node.name}`,
    type: 'ptp',
    mtu,
    ipam: {
      type: 'host-local',
      ranges: subnets.map((subnet) => [{ subnet }]),
      routes: subnets.map((subnet) => ({ dst: subnet.includes(':') ? '::/0' : '0.0.0.0/0' })),
      dataDir,
    },
  };
}

/** A node's pod networks, the primary family's first. */
const nodePodCIDRs = (node: LabNode) => [node.podCIDR, ...(node.secondaryPodCIDR ? [node.secondaryPodCIDR] : [])];

/** The pod's addresses, the primary family's first. */
const podAddresses = (pod: LabPod) => [pod.ip, ...(pod.secondaryIp ? [pod.secondaryIp] : [])];

/** The prefix length of the node network `address` is in (the one of its family): each address as `ips` takes it. */
const withPrefix = (node: LabNode, address: string) =>
  `${address}/${
    nodePodCIDRs(node)
      .find((c) => c.includes(':') === address.includes(':'))!
      .split('/')[1]
  }`;

/** Where host-local keeps a node's leases. */
export const podLeaseDir = (runDir: string, node: string) => join(runDir, 'cni', node);

/**
 * Runs `ptp` for one pod: ADD asks host-local for the topology's addresses of the pod, one per family, as
 * a container runtime passes static addresses (the `ips` capability's runtimeConfig).
 */
function ptp(place: NodePlace, command: 'ADD' | 'DEL', node: LabNode, pod: LabPod, config: Record<string, unknown>): string {
  const env = [
    `CNI_COMMAND=${command}`,
    `CNI_CONTAINERID=${pod.name}`,
    `CNI_NETNS=${netnsPath(podNetns(pod.name))}`,
    'CNI_IFNAME=eth0',
    `CNI_PATH=${cniPath}`,
  ];
  const ips = podAddresses(pod).map((a) => withPrefix(node, a));
  const input = command === 'ADD' ? { ...config, runtimeConfig: { ips } } : config;
  return run(inPlace(place, ['env', ...env, join(cniPath, 'ptp')]), JSON.stringify(input));
}

export function attachPod(place: NodePlace, node: LabNode, pod: LabPod, config: Record<string, unknown>): void {
  const result = JSON.parse(ptp(place, 'ADD', node, pod, config)) as { ips?: { address: string }[] };
  const given = (result.ips ?? []).map((ip) => ip.address.split('/')[0]).join(', ');
  const wanted = podAddresses(pod).join(', ');
  if (given !== wanted) throw new Error(`ptp gave pod ${pod.name} the addresses ${given || 'none'}, not the topology's ${wanted}`);
}

/** CNI DEL: the plugin removes the pod's veth (at once, unlike a namespace's teardown) and its lease. */
export function detachPod(place: NodePlace, node: LabNode, pod: LabPod, config: Record<string, unknown>): void {
  ptp(place, 'DEL', node, pod, config);
}
