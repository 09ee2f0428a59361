/**
 * The IPAM state as a versioned JSON document, and back. Loading re-checks every invariant, so a state
 * that was edited by hand or written by a buggy version is refused with a reason instead of being used.
 * The ExternalCIDR allocation table is not stored: it is exactly the union of the peers' NatMappings.
 */
import { InputError, StateError } from '../errors';
import type { Codec } from '../store/store';
import { type Cidr, type Ip, cidrsOverlap, containsIp, formatCidr, formatIp, parseCidr, parseIp, sameShape } from './cidr';
import { parseClusterId } from './cluster-id';
import { type NatMapping, natMappingsOf } from './endpoints';
import { type ExternalAddresses, unusableOffsets } from './external-addresses';
import { type HomeNetworksSpec, homeNetworksSpec, namedHomeNetworks, parseHomeNetworks } from './home-networks';
import { type PeerView, peerView } from './peers';
import { PersistentMap } from './persistent-map';
import { type IpamState, type PeerRecord, emptyIpamState } from './state';

export const stateVersion = 1;

/** A peer as stored: its view, with the NatMappings themselves instead of their count. */
export type PeerDocument = Omit<PeerView, 'natMappings'> & { natMappings: NatMapping[] };

export interface IpamDocument {
  version: typeof stateVersion;
  home: HomeNetworksSpec;
  peers: PeerDocument[];
}

export function toDocument(state: IpamState): IpamDocument {
  const peers = [...state.peers.values()].sort((a, b) => (a.clusterId < b.clusterId ? -1 : 1));
  return {
    version: stateVersion,
    home: homeNetworksSpec(state.home),
    peers: peers.map((peer) => ({ ...peerView(peer), natMappings: natMappingsOf(peer, state.home.externalCIDR.family) })),
  };
}

/** Rebuilds and checks a state; any inconsistency is a StateError saying what is wrong. */
export function fromDocument(doc: unknown): IpamState {
  try {
    return decode(doc);
  } catch (err) {
    if (err instanceof InputError || err instanceof StateError) {
      throw new StateError(`invalid IPAM state: ${err.message}; restore the state from a backup or re-create it with \`strait ipam init --force\``);
    }
    throw err;
  }
}

function objectAt(field: string, value: unknown): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new InputError(field, value, 'expected an object');
  return value as Record<string, unknown>;
}

function arrayAt(field: string, value: unknown): unknown[] {
  if (!Array.isArray(value)) throw new InputError(field, value, 'expected an array');
  return value;
}

function optionalCidr(field: string, value: unknown): Cidr | undefined {
  return value === null || value === undefined ? undefined : parseCidr(field, value);
}

function decode(doc: unknown): IpamState {
  const root = objectAt('state', doc);
  if (root.version !== stateVersion) {
    throw new StateError(`state version ${JSON.stringify(root.version)} is not supported (this strait reads version ${stateVersion})`);
  }
  const homeDoc = objectAt('home', root.home);
  const home = parseHomeNetworks({
    podCIDR: homeDoc.podCIDR as string,
    externalCIDR: homeDoc.externalCIDR as string,
    ...(homeDoc.serviceCIDR !== undefined ? { serviceCIDR: homeDoc.serviceCIDR as string } : {}),
    reserved: arrayAt('home.reserved', homeDoc.reserved) as string[],
    pools: arrayAt('home.pools', homeDoc.pools) as string[],
  });
  const state = emptyIpamState(home);
  const used = namedHomeNetworks(home);
  let peers = state.peers;
  const endpointOf = new Map<bigint, string>();
  let external = state.external;
  for (const [i, item] of arrayAt('peers', root.peers).entries()) {
    const at = `peers[${i}]`;
    const p = objectAt(at, item);
    const clusterId = parseClusterId(`${at}.clusterId`, p.clusterId);
    if (peers.has(clusterId)) throw new InputError(`${at}.clusterId`, clusterId, 'listed twice');
    const peer: PeerRecord = {
      clusterId,
      podCIDR: parseCidr(`${at}.podCIDR`, p.podCIDR),
      externalCIDR: parseCidr(`${at}.externalCIDR`, p.externalCIDR),
      remotePodCIDR: parseCidr(`${at}.remotePodCIDR`, p.remotePodCIDR),
      remoteExternalCIDR: parseCidr(`${at}.remoteExternalCIDR`, p.remoteExternalCIDR),
      ...withDefined('localNATPodCIDR', optionalCidr(`${at}.localNATPodCIDR`, p.localNATPodCIDR)),
      ...withDefined('localNATExternalCIDR', optionalCidr(`${at}.localNATExternalCIDR`, p.localNATExternalCIDR)),
      natMappings: PersistentMap.empty(),
    };
    checkShape(`${at}.remotePodCIDR`, peer.remotePodCIDR, peer.podCIDR);
    checkShape(`${at}.remoteExternalCIDR`, peer.remoteExternalCIDR, peer.externalCIDR);
    if (peer.localNATPodCIDR) checkShape(`${at}.localNATPodCIDR`, peer.localNATPodCIDR, home.podCIDR);
    if (peer.localNATExternalCIDR) checkShape(`${at}.localNATExternalCIDR`, peer.localNATExternalCIDR, home.externalCIDR);
    if (peer.localNATPodCIDR && peer.localNATExternalCIDR && cidrsOverlap(peer.localNATPodCIDR, peer.localNATExternalCIDR)) {
      throw new StateError(`peer ${clusterId} localNATPodCIDR and localNATExternalCIDR overlap`);
    }
    for (const [name, cidr] of [['podCIDR', peer.remotePodCIDR], ['externalCIDR', peer.remoteExternalCIDR]] as const) {
      const clash = used.find((u) => cidrsOverlap(u.cidr, cidr));
      if (clash) throw new StateError(`peer ${clusterId} ${name} is seen as ${formatCidr(cidr)}, which overlaps ${clash.name} ${formatCidr(clash.cidr)}`);
      used.push({ name: `peer ${clusterId} ${name}`, cidr });
    }
    let natMappings = peer.natMappings;
    for (const [j, m] of arrayAt(`${at}.natMappings`, p.natMappings).entries()) {
      const mapping = objectAt(`${at}.natMappings[${j}]`, m);
      const endpoint = parseIp(`${at}.natMappings[${j}].endpointIP`, mapping.endpointIP);
      const address = parseIp(`${at}.natMappings[${j}].externalIP`, mapping.externalIP);
      const key = formatIp(endpoint);
      checkMapping(`${at}.natMappings[${j}]`, state, endpoint, address);
      const owner = endpointOf.get(address.value);
      if (owner !== undefined && owner !== key) throw new StateError(`ExternalCIDR address ${formatIp(address)} is given to both ${owner} and ${key}`);
      const known = external.byEndpoint.get(key);
      if (known && known.address !== address.value) {
        throw new StateError(`endpoint ${key} has two ExternalCIDR addresses, ${formatIp({ ...address, value: known.address })} and ${formatIp(address)}`);
      }
      if (natMappings.has(key)) throw new StateError(`endpoint ${key} is mapped twice for peer ${clusterId}`);
      endpointOf.set(address.value, key);
      external = countReflection(external, key, address.value);
      natMappings = natMappings.set(key, address.value);
    }
    peers = peers.set(clusterId, { ...peer, natMappings });
  }
  return { home, peers, external };
}

function withDefined<K extends string>(key: K, value: Cidr | undefined): { [P in K]?: Cidr } {
  return (value ? { [key]: value } : {}) as { [P in K]?: Cidr };
}

function checkShape(field: string, cidr: Cidr, like: Cidr): void {
  if (!sameShape(cidr, like)) throw new StateError(`${field} ${formatCidr(cidr)} is not the size of ${formatCidr(like)}`);
}

function checkMapping(field: string, state: IpamState, endpoint: Ip, address: Ip): void {
  const { podCIDR, externalCIDR } = state.home;
  if (containsIp(podCIDR, endpoint)) throw new StateError(`${field}: endpoint ${formatIp(endpoint)} is a local pod and needs no mapping`);
  if (containsIp(externalCIDR, endpoint)) throw new StateError(`${field}: endpoint ${formatIp(endpoint)} is in our ExternalCIDR`);
  if (!containsIp(externalCIDR, address) || unusableOffsets(externalCIDR).includes(address.value - externalCIDR.base)) {
    throw new StateError(`${field}: ${formatIp(address)} is not a usable address of the ExternalCIDR ${formatCidr(externalCIDR)}`);
  }
}

function countReflection(ext: ExternalAddresses, endpoint: string, address: bigint): ExternalAddresses {
  const known = ext.byEndpoint.get(endpoint);
  return {
    ...ext,
    used: ext.used.add(address - ext.cidr.base),
    byEndpoint: ext.byEndpoint.set(endpoint, { address, reflections: (known?.reflections ?? 0) + 1 }),
  };
}

/** The IPAM state as stored by a Store: compact JSON of the versioned document. */
export const ipamStateCodec: Codec<IpamState> = {
  encode: (state) => JSON.stringify(toDocument(state)),
  decode: (text) => {
    let doc: unknown;
    try {
      doc = JSON.parse(text);
    } catch (err) {
      throw new StateError(`not valid JSON (${(err as Error).message}); restore the state from a backup or re-create it with \`strait ipam init --force\``);
    }
    return fromDocument(doc);
  },
};
