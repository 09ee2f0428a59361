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
import { requireOtherFamily } from '../../api/secondary-family';
import type { PeerRecord } from '../../network-ipam/state';
import { type IpamPlanes, planesOf } from '../../network-ipam/planes';
import { StateRestorer } from '../../network-ipam/state-document';
import { peerView } from '../../network-ipam/peers';
import { type Ip, type IpFamily, formatIp, parseCidr, parseIp } from '../../net/cidr';

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

/** A peer's record as a PeerNetworks spec's networks. */
function peerNetworks(peer: PeerRecord): Omit<PeerNetworksSpec, 'clusterId' | 'secondary'> {
  const { natMappings: _count, clusterId: _id, localNATPodCIDR, localNATExternalCIDR, ...view } = peerView(peer);
  return { ...view, ...(localNATPodCIDR ? { localNATPodCIDR } : {}), ...(localNATExternalCIDR ? { localNATExternalCIDR } : {}) };
}

/**
 * The objects of a state: a PeerNetworks holds the peering's first family (ours, in our order, that the
 * peer shares: src/netmgr/network-manager.ts) as its own networks and the other under `secondary`, as a
 * TunnelEndpoint does; the NatMappings of both planes among each other (an address names its family).
 */
export function ipamObjects(clusterId: string, planes: IpamPlanes): IpamObjects {
  const { primary, secondary } = planes;
  const peers = new Map<string, PeerNetworksSpec>();
  for (const id of new Set([...primary.peers.values(), ...(secondary?.peers.values() ?? [])].map((r) => r.clusterId))) {
    const [first, second] = [primary.peers.get(id), secondary?.peers.get(id)].filter((r): r is PeerRecord => r !== undefined);
    peers.set(id, { clusterId: id, ...peerNetworks(first!), ...(second ? { secondary: peerNetworks(second) } : {}) });
  }
  const natMappings = new Map<string, NatMappingSpec>();
  for (const [, state] of planesOf(planes)) {
    const reflectedTo = new Map<string, { address: bigint; peers: string[] }>();
    for (const peer of state.peers.values()) {
      for (const [endpoint, address] of peer.natMappings.entries()) {
        const entry = reflectedTo.get(endpoint) ?? { address, peers: [] };
        entry.peers.push(peer.clusterId);
        reflectedTo.set(endpoint, entry);
      }
    }
    const family = state.home.externalCIDR.family;
    for (const [endpoint, { address, peers: to }] of reflectedTo) {
      const external = { family, value: address };
      natMappings.set(natMappingName(external), { externalAddress: formatIp(external), endpointAddress: endpoint, reflectedTo: to.sort() });
    }
  }
  const { reserved, pools, ...home } = homeNetworksSpec(primary.home);
  const cluster: ClusterNetworksSpec = {
    clusterId,
    ...home,
    ...(secondary ? { secondary: familyOnly(homeNetworksSpec(secondary.home)) } : {}),
    reserved,
    pools,
  };
  return { cluster: { name: clusterId, spec: cluster }, peers, natMappings };
}

const familyOnly = ({ reserved: _reserved, pools: _pools, ...networks }: ReturnType<typeof homeNetworksSpec>) => networks;

/**
 * The state the objects hold (undefined before the first save), and the records dropped because they
 * would break an invariant (a write cut short, or an edit by hand): each with why.
 */
export function ipamFromObjects(objects: IpamObjects): { state: IpamPlanes | undefined; dropped: string[] } {
  if (!objects.cluster) return { state: undefined, dropped: [] };
  const { clusterId: _id, secondary: secondaryHome, ...home } = objects.cluster.spec;
  const primary = new StateRestorer(parseHomeNetworks(home));
  const secondary =
    secondaryHome && new StateRestorer(parseHomeNetworks({ ...secondaryHome, reserved: home.reserved, pools: home.pools }, 'secondary.'));
  const restorerOf = (family: IpFamily) => [primary, secondary].find((r) => r?.state.home.podCIDR.family === family);
  const dropped: string[] = [];
  const attempt = (what: string, step: () => void) => {
    try {
      step();
    } catch (err) {
      if (!(err instanceof StateError || err instanceof InputError)) throw err;
      dropped.push(`${what}: ${err.message}`);
    }
  };
  const restored = (p: Omit<PeerNetworksSpec, 'secondary'>) => ({
    ...p,
    localNATPodCIDR: p.localNATPodCIDR ?? null,
    localNATExternalCIDR: p.localNATExternalCIDR ?? null,
  });
  // Each family's networks into the plane of that family, whichever place the object gives them.
  const restoreFamily = (name: string, networks: Omit<PeerNetworksSpec, 'secondary'>, at: string) => {
    const family = parseCidr(`${at}podCIDR`, networks.podCIDR).family;
    const restorer = restorerOf(family);
    if (!restorer) throw new StateError(`${at}podCIDR ${networks.podCIDR} is IPv${family}, a family the cluster has no networks of`);
    restorer.addPeer(restored(networks), `peers.${name}${at === '' ? '' : '.secondary'}`);
    return family;
  };
  for (const [name, p] of [...objects.peers].sort(([a], [b]) => (a < b ? -1 : 1))) {
    const { secondary: second, ...own } = p;
    if (p.clusterId !== name) {
      dropped.push(`PeerNetworks ${name}: named ${name} but for peer ${p.clusterId}`);
      continue;
    }
    attempt(`PeerNetworks ${name}`, () => restoreFamily(name, own, ''));
    // Each family on its own: one that cannot be read back (a family the cluster dropped) keeps the other.
    if (!second) continue;
    attempt(`PeerNetworks ${name} secondary`, () => {
      requireOtherFamily(['podCIDR', own.podCIDR], ['secondary.podCIDR', second.podCIDR]);
      restoreFamily(name, { clusterId: name, ...second }, 'secondary.');
    });
  }
  for (const [name, m] of [...objects.natMappings].sort(([a], [b]) => (a < b ? -1 : 1))) {
    const address = parseIp('externalAddress', m.externalAddress);
    if (natMappingName(address) !== name) {
      dropped.push(`NatMapping ${name}: named ${name} but for address ${m.externalAddress}`);
      continue;
    }
    const restorer = restorerOf(address.family);
    // Each reflection on its own: one to a peer that is gone does not take the others with it.
    for (const peer of m.reflectedTo) {
      attempt(`NatMapping ${name} to ${peer}`, () => {
        if (!restorer) throw new StateError(`an IPv${address.family} address, a family the cluster has no networks of`);
        restorer.addMapping(peer, { endpointIP: m.endpointAddress, externalIP: m.externalAddress }, `natMappings.${name}`);
      });
    }
  }
  return { state: { primary: primary.state, ...(secondary ? { secondary: secondary.state } : {}) }, dropped };
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
