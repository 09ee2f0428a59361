/**
 * The node dataplane spec, typed: what one node must program. Both dataplanes (eBPF and the kernel
 * fallback) take it; the planner derives it from IPAM and Network Manager state. Addresses and networks
 * are parsed values (src/net/cidr.ts), in the home cluster's view unless their name says otherwise; the
 * document form that files and the API server hold, and its checks, are src/api/node-dataplane.ts.
 */
import type { Cidr, Ip } from '../net/cidr';

type NodeRole = 'gateway' | 'worker';

export interface OverlaySettings {
  /**
   * VNI of the intra-cluster overlay. The tunnels between gateways use a VNI per peering derived from the
   * two cluster ids (src/nodespec/peer-tunnel.ts), never this one.
   */
  vni: number;
  /** UDP port of every VXLAN device. */
  port: number;
  /**
   * MAC address of every eBPF overlay device (lower case); intra-cluster inner frames are addressed to it
   * (L3 tunnels, no bridging). Frames between gateways carry per-peering MACs (src/nodespec/peer-tunnel.ts).
   */
  mac: string;
}

export const peerTransports = ['vxlan', 'ipsec'] as const;
type PeerTransport = (typeof peerTransports)[number];

/** The most standby gateways a cluster publishes to its peers (bounded: a peer's documents are untrusted input). */
export const maxStandbyGateways = 8;

/**
 * One IP family's networks of a peering: the peer's as seen here, ours as the peer sees them. Each is of
 * the family of the home networks it pairs with (`FamilyNetworks` of that family).
 */
export interface PeerFamilyNetworks {
  /** The peer's networks as seen here. */
  remotePodCIDR: Cidr;
  remoteExternalCIDR: Cidr;
  /** Our networks as the peer sees them. */
  localNATPodCIDR: Cidr;
  localNATExternalCIDR: Cidr;
}

/**
 * A peering: its primary family's networks (the home cluster's primary family) and, where both clusters
 * are dual-stack, the secondary family's (src/nodespec/families.ts reads them by family).
 */
export interface PeerSpec extends PeerFamilyNetworks {
  clusterId: string;
  /** Stable small number naming the peer in BPF maps and counters. */
  peerId: number;
  secondary?: PeerFamilyNetworks;
  /** The peer's gateway, and its standbys in the order this node fails over to them (docs/liveness.md). */
  endpoint: { address: Ip; port: number; standbyAddresses: Ip[] };
  /**
   * How the gateways carry the peering's traffic: a VXLAN tunnel, or IPsec (tunnel-mode ESP, AES-GCM;
   * the kernel fallback only, keys from a per-peering secret the agent reads, never from the spec).
   */
  transport: PeerTransport;
}

export interface NatMappingSpec {
  /** Address of the home ExternalCIDR that peers dial. */
  externalAddress: Ip;
  /** The endpoint it stands for, in the home view (a local pod, or a pod of another peer). */
  endpointAddress: Ip;
}

export interface ClusterNodeSpec {
  name: string;
  underlayAddress: Ip;
  /** Pod prefixes hosted by the node (a node PodCIDR, or /32 per pod). */
  podCIDRs: Cidr[];
}

/** One IP family's networks of the home cluster. */
export interface FamilyNetworks {
  podCIDR: Cidr;
  externalCIDR: Cidr;
  /** The hub's source for transit traffic: an address of the ExternalCIDR that IPAM never hands out. */
  transitAddress: Ip;
}

/**
 * The spec's own fields are the primary family's networks (IPv4 or IPv6, as Kubernetes' `podCIDR` is the
 * first of `podCIDRs`); `secondary` the other family's, on a dual-stack cluster.
 */
export interface NodeDataplaneSpec extends FamilyNetworks {
  clusterId: string;
  secondary?: FamilyNetworks;
  /**
   * `publicAddress`: where peers reach this node when it is the gateway (its tunnels start there).
   * `gatewayCandidate`: it may be elected the gateway, so its agent reports on a fast heartbeat.
   */
  node: { name: string; role: NodeRole; underlayAddress: Ip; publicAddress?: Ip; gatewayCandidate: boolean };
  activeGateway: { name: string; underlayAddress: Ip };
  /**
   * The other gateway candidates, by name, in the order a node fails over to them when the active one
   * stops answering its probes (src/liveness); each is one of `nodes`.
   */
  standbyGateways: string[];
  overlay: OverlaySettings;
  /** Sorted by clusterId. */
  peers: PeerSpec[];
  /** Sorted by externalAddress. */
  natMappings: NatMappingSpec[];
  /** Every node of the cluster, this one included, sorted by name. */
  nodes: ClusterNodeSpec[];
  /**
   * The cluster's override of the VXLAN tunnels' MTU; absent: each node derives it from its underlay
   * device's MTU (src/nodespec/tunnel-mtu.ts).
   */
  tunnelMTU?: number;
}
