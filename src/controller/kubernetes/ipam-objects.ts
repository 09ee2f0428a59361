/**
 * The IPAM state as small objects (src/api/ipam-objects.ts) and back, and the ordered writes that turn
 * the objects of one state into those of the next. Pure: a Kubernetes store (or a test's map) runs the
 * writes one by one; a crash between two of them leaves objects that read back as a valid state, the old
 * one plus a part of the change, with no address given twice, nothing kept for a peer that is gone, and
 * everything both states have for every peer whose networks stay where they are. (Peers renumbered in one
 * change may swap places; cut short, they overlap, and the one read later waits for the next save.)
 *
 * Why the order holds that: a peer's object is written before any NatMapping names it and deleted after
 * the last one stops naming it; NatMappings that go are deleted before new ones are written (a freed
 * address may be given to another endpoint in the same change). A NatMapping is named after its address,
 * so two endpoints can never hold one address: a second create conflicts. Reading back checks every
 * invariant record by record (StateRestorer) and drops what would break one, naming it; the next save
 * writes over or deletes it.
 */
import type { ClusterNetworksSpec, NatMappingSpec, PeerNetworksSpec } from '../../api/ipam-objects';
import { InputError, StateError } from '../../errors';
import { homeNetworksSpec, parseHomeNetworks } from '../../api/home-networks';
import type { IpamState } from '../../network-ipam/state';
import { StateRestorer } from '../../network-ipam/state-document';
import { peerView } from '../../network-ipam/peers';
import { type Ip, formatIp, parseIp } from '../../net/cidr';

export interface IpamObjects {
  /** Named after the cluster id; absent before the first save. */
  cluster?: { name: string; spec: ClusterNetworksSpec };
  /** By name: the peer's cluster id. */
  peers: Map<string, PeerNetworksSpec>;
  /** By name: natMappingName(address). */
  natMappings: Map<string, NatMappingSpec>;
}

export type IpamObjectKind = 'ClusterNetworks' | 'PeerNetworks' | 'NatMapping';

export type IpamWrite =
  | { op: 'put'; kind: 'ClusterNetworks'; name: string; spec: ClusterNetworksSpec }
  | { op: 'put'; kind: 'PeerNetworks'; name: string; spec: PeerNetworksSpec }
  | { op: 'put'; kind: 'NatMapping'; name: string; spec: NatMappingSpec }
  | { op: 'delete'; kind: IpamObjectKind; name: string };

/** An address as an object name (a DNS-1123 subdomain): IPv4 as it is, IPv6 in full with '-' for ':'. */
export function natMappingName(address: Ip): string {
  if (address.family === 4) return formatIp(address);
  return Array.from({ length: 8 }, (_, i) => ((address.value >> BigInt(112 - 16 * i)) & 0xffffn).toString(16).padStart(4, '0')).join('-');
}

/** The objects of a state. */
export function ipamObjects(clusterId: string, state: IpamState): IpamObjects {
  const reflectedTo = new Map<string, { address: bigint; peers: string[] }>();
  const peers = new Map<string, PeerNetworksSpec>();
  for (const peer of state.peers.values()) {
    const { natMappings: _count, localNATPodCIDR, localNATExternalCIDR, ...view } = peerView(peer);
    peers.set(peer.clusterId, {
      ...view,
      ...(localNATPodCIDR ? { localNATPodCIDR } : {}),
      ...(localNATExternalCIDR ? { localNATExternalCIDR } : {}),
    });
    for (const [endpoint, address] of peer.natMappings.entries()) {
      const entry = reflectedTo.get(endpoint) ?? { address, peers: [] };
      entry.peers.push(peer.clusterId);
      reflectedTo.set(endpoint, entry);
    }
  }
  const family = state.home.externalCIDR.family;
  const natMappings = new Map<string, NatMappingSpec>();
  for (const [endpoint, { address, peers: to }] of reflectedTo) {
    const external = { family, value: address };
    natMappings.set(natMappingName(external), { externalAddress: formatIp(external), endpointAddress: endpoint, reflectedTo: to.sort() });
  }
  return { cluster: { name: clusterId, spec: { clusterId, ...homeNetworksSpec(state.home) } }, peers, natMappings };
}

/**
 * The state the objects hold (undefined before the first save), and the records dropped because they
 * would break an invariant (a write cut short, or an edit by hand): each with why.
 */
export function ipamFromObjects(objects: IpamObjects): { state: IpamState | undefined; dropped: string[] } {
  if (!objects.cluster) return { state: undefined, dropped: [] };
  const { clusterId: _id, ...home } = objects.cluster.spec;
  const restorer = new StateRestorer(parseHomeNetworks(home));
  const dropped: string[] = [];
  const attempt = (what: string, step: () => void) => {
    try {
      step();
    } catch (err) {
      if (!(err instanceof StateError || err instanceof InputError)) throw err;
      dropped.push(`${what}: ${err.message}`);
    }
  };
  for (const [name, p] of [...objects.peers].sort(([a], [b]) => (a < b ? -1 : 1))) {
    attempt(`PeerNetworks ${name}`, () => {
      if (p.clusterId !== name) throw new StateError(`named ${name} but for peer ${p.clusterId}`);
      restorer.addPeer(
        { ...p, localNATPodCIDR: p.localNATPodCIDR ?? null, localNATExternalCIDR: p.localNATExternalCIDR ?? null },
        `peers.${name}`,
      );
    });
  }
  for (const [name, m] of [...objects.natMappings].sort(([a], [b]) => (a < b ? -1 : 1))) {
    if (natMappingName(parseIp('externalAddress', m.externalAddress)) !== name) {
      dropped.push(`NatMapping ${name}: named ${name} but for address ${m.externalAddress}`);
      continue;
    }
    // Each reflection on its own: one to a peer that is gone does not take the others with it.
    for (const peer of m.reflectedTo) {
      attempt(`NatMapping ${name} to ${peer}`, () =>
        restorer.addMapping(peer, { endpointIP: m.endpointAddress, externalIP: m.externalAddress }, `natMappings.${name}`),
      );
    }
  }
  return { state: restorer.state, dropped };
}

const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

/** The writes, in a safe order, that turn `current` into `desired` (nothing when they hold the same). */
export function ipamWrites(current: IpamObjects, desired: IpamObjects): IpamWrite[] {
  const writes: IpamWrite[] = [];
  if (desired.cluster && !same(current.cluster, desired.cluster)) writes.push({ op: 'put', kind: 'ClusterNetworks', ...desired.cluster });
  for (const [name, spec] of desired.peers)
    if (!same(current.peers.get(name), spec)) writes.push({ op: 'put', kind: 'PeerNetworks', name, spec });
  for (const name of current.natMappings.keys())
    if (!desired.natMappings.has(name)) writes.push({ op: 'delete', kind: 'NatMapping', name });
  for (const [name, spec] of desired.natMappings)
    if (!same(current.natMappings.get(name), spec)) writes.push({ op: 'put', kind: 'NatMapping', name, spec });
  for (const name of current.peers.keys()) if (!desired.peers.has(name)) writes.push({ op: 'delete', kind: 'PeerNetworks', name });
  return writes;
}
