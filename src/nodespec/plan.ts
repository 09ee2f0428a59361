/**
 * The planner: IPAM and Network Manager state in, one node's dataplane spec out. Pure: the controller
 * calls it for every node whenever its inputs change, and an agent programs the result.
 */
import type { NodeConfig } from '../api/controller-config';
import { InputError } from '../errors';
import { transitOffset } from '../network-ipam/external-addresses';
import type { IpamState } from '../network-ipam/state';
import { type IpamPlanes, planesOf } from '../network-ipam/planes';
import { type Cidr, type Ip, parseIp } from '../net/cidr';
import type { TunnelEndpoint } from '../api/tunnel-endpoint';
import { assignPeerIds } from './peer-id';
import type { ClusterNodeSpec, FamilyNetworks, NatMappingSpec, NodeDataplaneSpec, OverlaySettings, PeerSpec } from './spec';

/** A node as configured: `publicAddress` is where peers reach it when it is the gateway. */
export type PlannedNode = NodeConfig;

const defaultOverlay: OverlaySettings = { vni: 18952, port: 4789, mac: '02:53:54:00:00:01' };
export const defaultTunnelPort = 4789;

export interface NodePlanInput {
  clusterId: string;
  /** The IPAM, a plane per family. */
  ipam: IpamPlanes;
  /** The peerings whose two directions are known (Network Manager). */
  tunnels: readonly TunnelEndpoint[];
  /** Every node of the cluster. */
  nodes: readonly PlannedNode[];
  /** `clusterNodeSpecs(nodes)` when the caller plans every node: made once, not once per node (a thousand nodes). */
  nodeList?: ClusterNodeSpec[];
  /** Peers whose traffic is encrypted (transport ipsec); the others use VXLAN. */
  encryptedPeers?: ReadonlySet<string>;
  /** The node to plan for. */
  nodeName: string;
  /** The elected gateway. */
  gatewayName: string;
  /** The other candidates in failover order (`failoverOrder`); default none. */
  standbyGateways?: readonly string[];
  overlay?: OverlaySettings;
  /** The cluster's override of the tunnel MTU (controller config `tunnelMTU`). */
  tunnelMTU?: number;
}

/** The transit source of a hub: the ExternalCIDR address that IPAM keeps back for it. */
export function transitAddress(externalCIDR: Cidr): Ip {
  return { family: externalCIDR.family, value: externalCIDR.base + transitOffset(externalCIDR) };
}

function findNode(nodes: readonly PlannedNode[], field: string, name: string): PlannedNode {
  const node = nodes.find((n) => n.name === name);
  if (!node) throw new InputError(field, name, `is not a node of the cluster (nodes: ${nodes.map((n) => n.name).join(', ') || 'none'})`);
  return node;
}

/**
 * The node list of every node's spec: the cluster's nodes sorted by name (a configuration is checked
 * when read: names are unique). On Kubernetes each agent makes it from the Node objects (k8s/node-list.ts).
 */
export const clusterNodeSpecs = (nodes: readonly PlannedNode[]): ClusterNodeSpec[] =>
  [...nodes]
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    .map((n) => ({ name: n.name, underlayAddress: n.underlayAddress, podCIDRs: n.podCIDRs }));

const familyNetworks = (plane: IpamState): FamilyNetworks => ({
  podCIDR: plane.home.podCIDR,
  externalCIDR: plane.home.externalCIDR,
  transitAddress: transitAddress(plane.home.externalCIDR),
});

/**
 * One plane's NatMappings toward the peerings that carry traffic, sorted by address (the primary
 * family's, then the secondary's: the spec's order). An endpoint reflected to several peers has one
 * ExternalCIDR address: one NatMapping for all of them.
 */
function natMappingsOf(plane: IpamState, tunnels: readonly TunnelEndpoint[]): NatMappingSpec[] {
  const family = plane.home.externalCIDR.family;
  const natMappings = new Map<bigint, NatMappingSpec>();
  for (const t of tunnels) {
    for (const [endpoint, address] of plane.peers.get(t.clusterId)?.natMappings.entries() ?? []) {
      natMappings.set(address, { externalAddress: { family, value: address }, endpointAddress: parseIp('natMappings', endpoint) });
    }
  }
  return [...natMappings.values()].sort((a, b) => (a.externalAddress.value < b.externalAddress.value ? -1 : 1));
}

export function planNodeSpec(input: NodePlanInput): NodeDataplaneSpec {
  const overlay = input.overlay ?? defaultOverlay;
  const self = findNode(input.nodes, 'nodeName', input.nodeName);
  const gateway = findNode(input.nodes, 'gatewayName', input.gatewayName);
  const ids = assignPeerIds(input.tunnels.map((t) => t.clusterId));
  const peers: PeerSpec[] = [...input.tunnels]
    .sort((a, b) => (a.clusterId < b.clusterId ? -1 : 1))
    .map((t) => ({
      clusterId: t.clusterId,
      peerId: ids.get(t.clusterId)!,
      remotePodCIDR: t.remotePodCIDR,
      remoteExternalCIDR: t.remoteExternalCIDR,
      localNATPodCIDR: t.localNATPodCIDR,
      localNATExternalCIDR: t.localNATExternalCIDR,
      ...(t.secondary ? { secondary: t.secondary } : {}),
      endpoint: { address: t.endpoint.address, port: t.endpoint.port ?? defaultTunnelPort, standbyAddresses: t.endpoint.standbyAddresses },
      transport: input.encryptedPeers?.has(t.clusterId) ? 'ipsec' : 'vxlan',
    }));
  const { primary, secondary } = input.ipam;
  return {
    clusterId: input.clusterId,
    ...familyNetworks(primary),
    ...(secondary ? { secondary: familyNetworks(secondary) } : {}),
    node: {
      name: self.name,
      role: self.name === gateway.name ? 'gateway' : 'worker',
      underlayAddress: self.underlayAddress,
      ...(self.publicAddress !== undefined ? { publicAddress: self.publicAddress } : {}),
      gatewayCandidate: self.gatewayCandidate,
    },
    activeGateway: { name: gateway.name, underlayAddress: gateway.underlayAddress },
    standbyGateways: [...(input.standbyGateways ?? [])],
    overlay,
    peers,
    natMappings: planesOf(input.ipam).flatMap(([, plane]) => natMappingsOf(plane, input.tunnels)),
    nodes: input.nodeList ?? clusterNodeSpecs(input.nodes),
    ...(input.tunnelMTU !== undefined ? { tunnelMTU: input.tunnelMTU } : {}),
  };
}
