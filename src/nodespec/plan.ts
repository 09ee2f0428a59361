/**
 * The planner: IPAM and Network Manager state in, one node's dataplane spec out. Pure: the controller
 * calls it for every node whenever its inputs change, and an agent programs the result.
 */
import { InputError } from '../errors';
import { type Cidr, formatCidr, formatIp, parseCidr, parseIp } from '../ipam/cidr';
import { transitOffset } from '../ipam/external-addresses';
import { natMappingsOf } from '../ipam/endpoints';
import type { IpamState } from '../ipam/state';
import type { TunnelEndpoint } from '../netmgr/tunnel-endpoint';
import { assignPeerIds } from './peer-id';
import type { ClusterNodeSpec, NatMappingSpec, NodeDataplaneSpec, OverlaySettings, PeerSpec } from './spec';

/** A node as configured: `publicAddress` is where peers reach it when it is the gateway. */
export type PlannedNode = ClusterNodeSpec & { publicAddress?: string };

export const defaultOverlay: OverlaySettings = { vni: 18952, port: 4789, mac: '02:53:54:00:00:01' };
export const defaultTunnelPort = 4789;

export interface NodePlanInput {
  clusterId: string;
  ipam: IpamState;
  /** The peerings whose two directions are known (Network Manager). */
  tunnels: readonly TunnelEndpoint[];
  /** Every node of the cluster. */
  nodes: readonly PlannedNode[];
  /** Peers whose traffic is encrypted (transport ipsec); the others use VXLAN. */
  encryptedPeers?: ReadonlySet<string>;
  /** The node to plan for. */
  nodeName: string;
  /** The elected gateway. */
  gatewayName: string;
  overlay?: OverlaySettings;
}

/** The transit source of a hub: the ExternalCIDR address that IPAM keeps back for it. */
export function transitAddress(externalCIDR: Cidr): string {
  return formatIp({ family: externalCIDR.family, value: externalCIDR.base + transitOffset(externalCIDR) });
}

function findNode(nodes: readonly ClusterNodeSpec[], field: string, name: string): ClusterNodeSpec {
  const node = nodes.find((n) => n.name === name);
  if (!node) throw new InputError(field, name, `is not a node of the cluster (nodes: ${nodes.map((n) => n.name).join(', ') || 'none'})`);
  return node;
}

function checkNodes(nodes: readonly ClusterNodeSpec[]): ClusterNodeSpec[] {
  const seen = new Set<string>();
  return [...nodes]
    .map((n, i) => {
      if (seen.has(n.name)) throw new InputError(`nodes[${i}].name`, n.name, 'appears twice');
      seen.add(n.name);
      parseIp(`nodes[${i}].underlayAddress`, n.underlayAddress);
      return { name: n.name, underlayAddress: n.underlayAddress, podCIDRs: n.podCIDRs.map((c, j) => formatCidr(parseCidr(`nodes[${i}].podCIDRs[${j}]`, c))) };
    })
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

export function planNodeSpec(input: NodePlanInput): NodeDataplaneSpec {
  const overlay = input.overlay ?? defaultOverlay;
  const nodes = checkNodes(input.nodes);
  const self = findNode(nodes, 'nodeName', input.nodeName);
  const gateway = findNode(nodes, 'gatewayName', input.gatewayName);
  const ids = assignPeerIds(input.tunnels.map((t) => t.clusterId));
  const publicAddress = input.nodes.find((n) => n.name === self.name)?.publicAddress;
  if (publicAddress !== undefined) parseIp('publicAddress', publicAddress);
  const peers: PeerSpec[] = [...input.tunnels]
    .sort((a, b) => (a.clusterId < b.clusterId ? -1 : 1))
    .map((t) => ({
      clusterId: t.clusterId,
      peerId: ids.get(t.clusterId)!,
      remotePodCIDR: t.remotePodCIDR,
      remoteExternalCIDR: t.remoteExternalCIDR,
      localNATPodCIDR: t.localNATPodCIDR,
      localNATExternalCIDR: t.localNATExternalCIDR,
      endpoint: { address: t.endpoint.address, port: t.endpoint.port ?? defaultTunnelPort },
      transport: input.encryptedPeers?.has(t.clusterId) ? 'ipsec' : 'vxlan',
    }));
  // An endpoint reflected to several peers has one ExternalCIDR address: one NatMapping for all of them.
  const natMappings = new Map<string, NatMappingSpec>();
  for (const t of input.tunnels) {
    const record = input.ipam.peers.get(t.clusterId);
    if (!record) continue;
    for (const m of natMappingsOf(record, input.ipam.home.externalCIDR.family)) {
      natMappings.set(m.externalIP, { externalAddress: m.externalIP, endpointAddress: m.endpointIP });
    }
  }
  const home = input.ipam.home;
  return {
    clusterId: input.clusterId,
    podCIDR: formatCidr(home.podCIDR),
    externalCIDR: formatCidr(home.externalCIDR),
    transitAddress: transitAddress(home.externalCIDR),
    node: {
      name: self.name,
      role: self.name === gateway.name ? 'gateway' : 'worker',
      underlayAddress: self.underlayAddress,
      ...(publicAddress !== undefined ? { publicAddress } : {}),
    },
    activeGateway: { name: gateway.name, underlayAddress: gateway.underlayAddress },
    overlay,
    peers,
    natMappings: [...natMappings.values()].sort((a, b) => compareAddresses(a.externalAddress, b.externalAddress)),
    nodes,
  };
}

function compareAddresses(a: string, b: string): number {
  const x = parseIp('address', a).value;
  const y = parseIp('address', b).value;
  return x < y ? -1 : x > y ? 1 : 0;
}
