/**
 * Peers: which network each peer's PodCIDR and ExternalCIDR occupy in the home view (kept when free,
 * else remapped to the lowest free network of the same size), and how the peer sees ours.
 */
import { InputError, StateError } from '../errors';
import {
  type Cidr,
  cidrsEqual,
  cidrsOverlap,
  containsIp,
  formatCidr,
  formatIp,
  parseCidr,
  parseIp,
  sameShape,
  translateIp,
} from '../net/cidr';
import { parseClusterId } from './cluster-id';
import { releaseExternalAddress } from './external-addresses';
import { namedHomeNetworks } from '../api/home-networks';
import { lowestFreeNetwork } from '../net/network-allocation';
import { PersistentMap } from './persistent-map';
import type { IpamState, Outcome, PeerRecord } from './state';

/** What the CLI and the Network Manager see of a peer: every network as text. */
export interface PeerView {
  clusterId: string;
  podCIDR: string;
  externalCIDR: string;
  remotePodCIDR: string;
  remoteExternalCIDR: string;
  localNATPodCIDR: string | null;
  localNATExternalCIDR: string | null;
  natMappings: number;
}

export function peerView(peer: PeerRecord): PeerView {
  return {
    clusterId: peer.clusterId,
    podCIDR: formatCidr(peer.podCIDR),
    externalCIDR: formatCidr(peer.externalCIDR),
    remotePodCIDR: formatCidr(peer.remotePodCIDR),
    remoteExternalCIDR: formatCidr(peer.remoteExternalCIDR),
    localNATPodCIDR: peer.localNATPodCIDR ? formatCidr(peer.localNATPodCIDR) : null,
    localNATExternalCIDR: peer.localNATExternalCIDR ? formatCidr(peer.localNATExternalCIDR) : null,
    natMappings: peer.natMappings.size,
  };
}

/** Every network in use in the home view, named for error messages; optionally without one peer's. */
function networksInUse(state: IpamState, exceptPeer?: string): { name: string; cidr: Cidr }[] {
  const used = namedHomeNetworks(state.home);
  for (const peer of state.peers.values()) {
    if (peer.clusterId === exceptPeer) continue;
    used.push({ name: `peer ${peer.clusterId} podCIDR`, cidr: peer.remotePodCIDR });
    used.push({ name: `peer ${peer.clusterId} externalCIDR`, cidr: peer.remoteExternalCIDR });
  }
  return used;
}

export function findPeer(state: IpamState, clusterId: unknown): PeerRecord {
  const id = parseClusterId('cluster', clusterId);
  const peer = state.peers.get(id);
  if (!peer) throw new InputError('cluster', id, 'no such peer; add it first with `strait network-ipam peer add`');
  return peer;
}

/** The peer's own network if it collides with nothing in use, else the lowest free one of its size. */
function homeViewOf(state: IpamState, field: string, own: Cidr, used: readonly Cidr[]): Cidr {
  if (!used.some((u) => cidrsOverlap(u, own))) return own;
  const remapped = lowestFreeNetwork(own.family, own.prefix, state.home.pools, used);
  if (!remapped) {
    throw new StateError(
      `${field} ${formatCidr(own)} overlaps a network in use and no free /${own.prefix} IPv${own.family} network is left in the pools ` +
        `${state.home.pools.map(formatCidr).join(', ')}; add a pool (strait network-ipam init --pools) or remove peers`,
    );
  }
  return remapped;
}

export interface PeerNetworksInput {
  clusterId: unknown;
  podCIDR: unknown;
  externalCIDR: unknown;
}

/**
 * Adds a peer, or updates one whose networks changed. The same input again returns the same answer and
 * the same state. A network that did not change keeps its place, so traffic to it is not disturbed.
 */
export function addPeer(state: IpamState, input: PeerNetworksInput): Outcome<PeerView> {
  const clusterId = parseClusterId('cluster', input.clusterId);
  const podCIDR = parseCidr('podCIDR', input.podCIDR);
  const externalCIDR = parseCidr('externalCIDR', input.externalCIDR);
  // One IPAM state holds one family's networks (a dual-stack cluster has one per family: planes.ts).
  const family = state.home.podCIDR.family;
  for (const [name, cidr] of [
    ['podCIDR', podCIDR],
    ['externalCIDR', externalCIDR],
  ] as const) {
    if (cidr.family !== family)
      throw new InputError(name, formatCidr(cidr), `is IPv${cidr.family}; this IPAM places IPv${family} networks (each family on its own)`);
  }
  if (cidrsOverlap(podCIDR, externalCIDR)) {
    throw new InputError('externalCIDR', formatCidr(externalCIDR), `overlaps the peer's podCIDR ${formatCidr(podCIDR)}`);
  }
  const existing = state.peers.get(clusterId);
  const keptPod = existing && cidrsEqual(existing.podCIDR, podCIDR) ? existing.remotePodCIDR : undefined;
  const keptExternal = existing && cidrsEqual(existing.externalCIDR, externalCIDR) ? existing.remoteExternalCIDR : undefined;
  if (existing && keptPod && keptExternal) return { state, result: peerView(existing) };

  const used = networksInUse(state, clusterId).map((n) => n.cidr);
  used.push(...[keptPod, keptExternal].filter((c): c is Cidr => c !== undefined));
  const remotePodCIDR = keptPod ?? homeViewOf(state, 'podCIDR', podCIDR, used);
  if (!keptPod) used.push(remotePodCIDR);
  const remoteExternalCIDR = keptExternal ?? homeViewOf(state, 'externalCIDR', externalCIDR, used);

  const peer: PeerRecord = {
    // An update keeps how the peer sees us and what is reflected to it; only our view of it moves.
    ...(existing ?? { natMappings: PersistentMap.empty<bigint>() }),
    clusterId,
    podCIDR,
    externalCIDR,
    remotePodCIDR,
    remoteExternalCIDR,
  };
  return { state: { ...state, peers: state.peers.set(clusterId, peer) }, result: peerView(peer) };
}

/** Records how the peer numbers our networks (the status it wrote on our NetworkConfig). */
export function setRemoteView(
  state: IpamState,
  input: { clusterId: unknown; localNATPodCIDR: unknown; localNATExternalCIDR: unknown },
): Outcome<PeerView> {
  const peer = findPeer(state, input.clusterId);
  const localNATPodCIDR = parseCidr('localNATPodCIDR', input.localNATPodCIDR);
  const localNATExternalCIDR = parseCidr('localNATExternalCIDR', input.localNATExternalCIDR);
  requireSameShape('localNATPodCIDR', localNATPodCIDR, 'podCIDR', state.home.podCIDR);
  requireSameShape('localNATExternalCIDR', localNATExternalCIDR, 'externalCIDR', state.home.externalCIDR);
  if (cidrsOverlap(localNATPodCIDR, localNATExternalCIDR)) {
    // Both are networks in use in the peer, so a peer that follows the rules never reports this.
    throw new InputError(
      'localNATExternalCIDR',
      formatCidr(localNATExternalCIDR),
      `overlaps localNATPodCIDR ${formatCidr(localNATPodCIDR)}`,
    );
  }
  const updated: PeerRecord = { ...peer, localNATPodCIDR, localNATExternalCIDR };
  return { state: { ...state, peers: state.peers.set(peer.clusterId, updated) }, result: peerView(updated) };
}

/** A remap is 1:1, so the peer's view of one of our networks must be exactly as large as ours. */
function requireSameShape(field: string, view: Cidr, ownName: string, own: Cidr): void {
  if (!sameShape(view, own)) {
    throw new InputError(
      field,
      formatCidr(view),
      `must be an IPv${own.family} /${own.prefix} network, the size of our ${ownName} ${formatCidr(own)}`,
    );
  }
}

/** Removes a peer, releasing its networks and the ExternalCIDR addresses reflected only to it. */
export function removePeer(state: IpamState, clusterId: unknown): Outcome<{ removed: boolean }> {
  const id = parseClusterId('cluster', clusterId);
  const peer = state.peers.get(id);
  if (!peer) return { state, result: { removed: false } };
  let external = state.external;
  for (const endpoint of peer.natMappings.entries()) external = releaseExternalAddress(external, endpoint[0]).ext;
  return { state: { ...state, peers: state.peers.delete(id), external }, result: { removed: true } };
}

/** A pod IP assigned by the peer's CNI (in its own PodCIDR), as seen from the home cluster. */
export function homePodIp(state: IpamState, clusterId: unknown, ip: unknown): string {
  const peer = findPeer(state, clusterId);
  const podIp = parseIp('ip', ip);
  if (!containsIp(peer.podCIDR, podIp)) {
    throw new InputError('ip', ip, `not in the PodCIDR ${formatCidr(peer.podCIDR)} of peer ${peer.clusterId}`);
  }
  return formatIp(translateIp(podIp, peer.podCIDR, peer.remotePodCIDR));
}
