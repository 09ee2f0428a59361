/**
 * The node dataplane spec: plain data saying what one node must program. Both dataplanes (eBPF and the
 * kernel fallback) consume it; the planner derives it from IPAM and Network Manager state, and the
 * standalone agent can read it from a file. Every address and prefix is text, in the home cluster's view
 * unless its name says otherwise.
 */

export type NodeRole = 'gateway' | 'worker';

export interface OverlaySettings {
  /**
   * VNI of the intra-cluster overlay. The tunnels between gateways use a VNI per peering derived from the
   * two cluster ids (src/nodespec/peer-tunnel.ts), never this one.
   */
  vni: number;
  /** UDP port of every VXLAN device. */
  port: number;
  /**
   * MAC address of every eBPF overlay device; intra-cluster inner frames are addressed to it (L3 tunnels,
   * no bridging). Frames between gateways carry per-peering MACs instead (src/nodespec/peer-tunnel.ts).
   */
  mac: string;
}

export interface PeerSpec {
  clusterId: string;
  /** Stable small number naming the peer in BPF maps and counters. */
  peerId: number;
  /** The peer's networks as seen here. */
  remotePodCIDR: string;
  remoteExternalCIDR: string;
  /** Our networks as the peer sees them. */
  localNATPodCIDR: string;
  localNATExternalCIDR: string;
  /** The peer gateway's tunnel address and port. */
  endpoint: { address: string; port: number };
  /**
   * How the gateways carry the peering's traffic: a VXLAN tunnel, or IPsec (tunnel-mode ESP, AES-GCM;
   * the kernel fallback only, keys from a per-peering secret the agent reads, never from the spec).
   */
  transport: PeerTransport;
}

export const peerTransports = ['vxlan', 'ipsec'] as const;
export type PeerTransport = (typeof peerTransports)[number];

export interface NatMappingSpec {
  /** Address of the home ExternalCIDR that peers dial. */
  externalAddress: string;
  /** The endpoint it stands for, in the home view (a local pod, or a pod of another peer). */
  endpointAddress: string;
}

export interface ClusterNodeSpec {
  name: string;
  underlayAddress: string;
  /** Pod prefixes hosted by the node (a node PodCIDR, or /32 per pod). */
  podCIDRs: string[];
}

export interface NodeDataplaneSpec {
  clusterId: string;
  podCIDR: string;
  externalCIDR: string;
  /** The hub's source for transit traffic: an address of the ExternalCIDR that IPAM never hands out. */
  transitAddress: string;
  /** `publicAddress`: where peers reach this node when it is the gateway (its tunnels start there). */
  node: { name: string; role: NodeRole; underlayAddress: string; publicAddress?: string };
  activeGateway: { name: string; underlayAddress: string };
  overlay: OverlaySettings;
  /** Sorted by clusterId. */
  peers: PeerSpec[];
  /** Sorted by externalAddress. */
  natMappings: NatMappingSpec[];
  /** Every node of the cluster, this one included, sorted by name. */
  nodes: ClusterNodeSpec[];
}
