/**
 * The IPAM state as a versioned JSON document, and back. Loading re-checks every invariant, so a state
 * that was edited by hand or written by a buggy version is refused with a reason instead of being used.
 * The ExternalCIDR allocation table is not stored: it is exactly the union of the peers' NatMappings.
 */
import { InputError, StateError } from '../errors';
import { parseJsonText } from '../json-text';
import type { Codec } from '../store/store';
import { type Cidr, type Ip, cidrsOverlap, containsIp, formatCidr, formatIp, parseCidr, parseIp, sameShape } from '../net/cidr';
import { checkCompiled } from '../api/compiled-validators';
import type { IpamStateDocument } from '../api/ipam-state';
import { ipamStateVersion } from '../api/ipam-state-version';
import { natMappingsOf, parseEndpointAddress } from './endpoints';
import { type ExternalAddresses, unusableOffsets } from './external-addresses';
import { type HomeNetworks, homeNetworksSpec, namedHomeNetworks, parseHomeNetworks } from '../api/home-networks';
import { requireOtherFamily } from '../api/secondary-family';
import { peerView } from './peers';
import { PersistentMap } from './persistent-map';
import { type IpamState, type PeerRecord, emptyIpamState } from './state';
import type { IpamPlanes } from './planes';

const stateVersion = ipamStateVersion;

type PlaneDocument = Omit<IpamStateDocument, 'version' | 'secondary'>;

function planeDocument(state: IpamState): PlaneDocument {
  const peers = [...state.peers.values()].sort((a, b) => (a.clusterId < b.clusterId ? -1 : 1));
  return {
    home: homeNetworksSpec(state.home),
    peers: peers.map((peer) => {
      const { natMappings: _count, ...view } = peerView(peer);
      return { ...view, natMappings: natMappingsOf(peer, state.home.externalCIDR.family) };
    }),
  };
}

export function toDocument(planes: IpamPlanes): IpamStateDocument {
  return {
    version: stateVersion,
    ...planeDocument(planes.primary),
    ...(planes.secondary ? { secondary: planeDocument(planes.secondary) } : {}),
  };
}

/** Rebuilds and checks a state; any inconsistency is a StateError saying what is wrong. */
export function fromDocument(doc: unknown): IpamPlanes {
  try {
    return decodePlanes(doc);
  } catch (err) {
    if (err instanceof InputError || err instanceof StateError) {
      throw new StateError(
        `invalid IPAM state: ${err.message}; restore the state from a backup or re-create it with \`strait network-ipam init --force\``,
      );
    }
    throw err;
  }
}

function decodePlanes(value: unknown): IpamPlanes {
  const version = (value as { version?: unknown } | null)?.version;
  if (version !== stateVersion) {
    throw new StateError(`state version ${JSON.stringify(version)} is not supported (this strait reads version ${stateVersion})`);
  }
  const doc = checkCompiled('ipamState', value, 'state');
  const primary = decodePlane(doc, '');
  if (!doc.secondary) return { primary };
  const secondary = decodePlane(doc.secondary, 'secondary.');
  requireOtherFamily(['home.podCIDR', primary.home.podCIDR], ['secondary.home.podCIDR', secondary.home.podCIDR]);
  return { primary, secondary };
}

function decodePlane(doc: PlaneDocument, at: string): IpamState {
  const restorer = new StateRestorer(parseHomeNetworks(doc.home, `${at}home.`));
  for (const [i, p] of doc.peers.entries()) {
    restorer.addPeer(p, `${at}peers[${i}]`);
    for (const [j, mapping] of p.natMappings.entries()) restorer.addMapping(p.clusterId, mapping, `${at}peers[${i}].natMappings[${j}]`);
  }
  return restorer.state;
}

export type PeerDocument = Omit<IpamStateDocument['peers'][number], 'natMappings'>;
export type MappingDocument = IpamStateDocument['peers'][number]['natMappings'][number];

/**
 * Rebuilds a state piece by piece from stored records, checking each against what is already there:
 * every invariant of a state holds after each step, and a step that would break one throws (a StateError
 * or InputError saying what) and changes nothing, so a caller may drop that record and go on.
 */
export class StateRestorer {
  private current: IpamState;
  private readonly used: { name: string; cidr: Cidr }[];
  /** ExternalCIDR address → the endpoint holding it. */
  private readonly endpointOf = new Map<bigint, string>();

  constructor(home: HomeNetworks) {
    this.current = emptyIpamState(home);
    this.used = namedHomeNetworks(home);
  }

  get state(): IpamState {
    return this.current;
  }

  addPeer(p: PeerDocument, at: string): void {
    const { home } = this.current;
    const { clusterId } = p;
    if (this.current.peers.has(clusterId)) throw new InputError(`${at}.clusterId`, clusterId, 'listed twice');
    const peer: PeerRecord = {
      clusterId,
      podCIDR: parseCidr(`${at}.podCIDR`, p.podCIDR),
      externalCIDR: parseCidr(`${at}.externalCIDR`, p.externalCIDR),
      remotePodCIDR: parseCidr(`${at}.remotePodCIDR`, p.remotePodCIDR),
      remoteExternalCIDR: parseCidr(`${at}.remoteExternalCIDR`, p.remoteExternalCIDR),
      ...(p.localNATPodCIDR !== null ? { localNATPodCIDR: parseCidr(`${at}.localNATPodCIDR`, p.localNATPodCIDR) } : {}),
      ...(p.localNATExternalCIDR !== null ? { localNATExternalCIDR: parseCidr(`${at}.localNATExternalCIDR`, p.localNATExternalCIDR) } : {}),
      natMappings: PersistentMap.empty(),
    };
    checkShape(`${at}.remotePodCIDR`, peer.remotePodCIDR, peer.podCIDR);
    checkShape(`${at}.remoteExternalCIDR`, peer.remoteExternalCIDR, peer.externalCIDR);
    if (peer.localNATPodCIDR) checkShape(`${at}.localNATPodCIDR`, peer.localNATPodCIDR, home.podCIDR);
    if (peer.localNATExternalCIDR) checkShape(`${at}.localNATExternalCIDR`, peer.localNATExternalCIDR, home.externalCIDR);
    if (peer.localNATPodCIDR && peer.localNATExternalCIDR && cidrsOverlap(peer.localNATPodCIDR, peer.localNATExternalCIDR)) {
      throw new StateError(`peer ${clusterId} localNATPodCIDR and localNATExternalCIDR overlap`);
    }
    const claimed = [
      ['podCIDR', peer.remotePodCIDR],
      ['externalCIDR', peer.remoteExternalCIDR],
    ] as const;
    for (const [name, cidr] of claimed) {
      const clash = this.used.find((u) => cidrsOverlap(u.cidr, cidr));
      if (clash)
        throw new StateError(
          `peer ${clusterId} ${name} is seen as ${formatCidr(cidr)}, which overlaps ${clash.name} ${formatCidr(clash.cidr)}`,
        );
    }
    if (cidrsOverlap(peer.remotePodCIDR, peer.remoteExternalCIDR))
      throw new StateError(`peer ${clusterId} podCIDR and externalCIDR overlap as seen here`);
    for (const [name, cidr] of claimed) this.used.push({ name: `peer ${clusterId} ${name}`, cidr });
    this.current = { ...this.current, peers: this.current.peers.set(clusterId, peer) };
  }

  addMapping(clusterId: string, mapping: MappingDocument, at: string): void {
    const state = this.current;
    const peer = state.peers.get(clusterId);
    if (!peer) throw new StateError(`${at}: no peer ${clusterId}`);
    const endpoint = parseEndpointAddress(`${at}.endpointIP`, mapping.endpointIP);
    const address = parseIp(`${at}.externalIP`, mapping.externalIP);
    const key = formatIp(endpoint);
    checkMapping(at, state, endpoint, address);
    const owner = this.endpointOf.get(address.value);
    if (owner !== undefined && owner !== key)
      throw new StateError(`ExternalCIDR address ${formatIp(address)} is given to both ${owner} and ${key}`);
    const known = state.external.byEndpoint.get(key);
    if (known && known.address !== address.value) {
      throw new StateError(
        `endpoint ${key} has two ExternalCIDR addresses, ${formatIp({ ...address, value: known.address })} and ${formatIp(address)}`,
      );
    }
    if (peer.natMappings.has(key)) throw new StateError(`endpoint ${key} is mapped twice for peer ${clusterId}`);
    this.endpointOf.set(address.value, key);
    this.current = {
      ...state,
      external: countReflection(state.external, key, address.value),
      peers: state.peers.set(clusterId, { ...peer, natMappings: peer.natMappings.set(key, address.value) }),
    };
  }
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
export const ipamStateCodec: Codec<IpamPlanes> = {
  encode: (state) => JSON.stringify(toDocument(state)),
  decode: (text) => {
    const parsed = parseJsonText(text);
    if ('problem' in parsed)
      throw new StateError(
        `not valid JSON (${parsed.problem}); restore the state from a backup or re-create it with \`strait network-ipam init --force\``,
      );
    return fromDocument(parsed.value);
  },
};
