/**
 * Endpoint reflection: the address under which a peer reaches one of our endpoints. A local pod is
 * translated into the peer's view of our PodCIDR; any other endpoint is given an ExternalCIDR address
 * (shared by every peer it is reflected to) and translated into the peer's view of our ExternalCIDR.
 */
import { InputError } from '../errors';
import { type Ip, containsIp, formatCidr, formatIp, parseIp, translateIp } from '../net/cidr';
import { requireUnicast } from '../net/special-blocks';
import { acquireExternalAddress, releaseExternalAddress } from './external-addresses';
import { findPeer } from './peers';
import type { IpamState, Outcome, PeerRecord } from './state';

/** NatMapping entry: traffic to `externalIP` (home ExternalCIDR) goes to `endpointIP`. */
export interface NatMapping {
  externalIP: string;
  endpointIP: string;
}

function requireLocalNAT<K extends 'localNATPodCIDR' | 'localNATExternalCIDR'>(peer: PeerRecord, key: K): NonNullable<PeerRecord[K]> {
  const view = peer[key];
  if (!view) {
    throw new InputError(
      'cluster',
      peer.clusterId,
      `this peer has not told how it sees our networks yet (${key} unknown), so no address valid in it can be given; ` +
        'record its NetworkConfig status first (strait network-ipam peer remote-view)',
    );
  }
  return view as NonNullable<PeerRecord[K]>;
}

/**
 * An endpoint's address, from a command or a stored NatMapping: one a pod can have. An unspecified,
 * loopback, multicast or broadcast address names no pod; a NatMapping to it would take an ExternalCIDR
 * address for nothing and point the peer's traffic at this gateway's own stack or a whole segment.
 */
export function parseEndpointAddress(field: string, text: unknown): Ip {
  const ip = parseIp(field, text);
  requireUnicast(field, text as string, ip);
  return ip;
}

/** A non-local endpoint, checked and keyed by its canonical text. */
function externalEndpoint(state: IpamState, endpoint: Ip, given: unknown): string {
  const { externalCIDR } = state.home;
  if (endpoint.family !== externalCIDR.family) {
    throw new InputError(
      'ip',
      given,
      `a non-local endpoint needs an IPv${externalCIDR.family} address like our ExternalCIDR ${formatCidr(externalCIDR)}`,
    );
  }
  if (containsIp(externalCIDR, endpoint)) {
    throw new InputError('ip', given, `is an address of our ExternalCIDR ${formatCidr(externalCIDR)}; map the real endpoint address`);
  }
  return formatIp(endpoint);
}

/** The address of an endpoint as `clusterId` must see it; a non-local endpoint is recorded as a NatMapping. */
export function mapEndpoint(state: IpamState, clusterId: unknown, ip: unknown): Outcome<{ ip: string }> {
  const peer = findPeer(state, clusterId);
  const endpoint = parseEndpointAddress('ip', ip);
  if (containsIp(state.home.podCIDR, endpoint)) {
    return { state, result: { ip: formatIp(translateIp(endpoint, state.home.podCIDR, requireLocalNAT(peer, 'localNATPodCIDR'))) } };
  }
  const key = externalEndpoint(state, endpoint, ip);
  const peerView = requireLocalNAT(peer, 'localNATExternalCIDR');
  const { externalCIDR } = state.home;
  const inPeerView = (address: bigint): string =>
    formatIp(translateIp({ family: externalCIDR.family, value: address }, externalCIDR, peerView));
  const already = peer.natMappings.get(key);
  if (already !== undefined) return { state, result: { ip: inPeerView(already) } };
  const { ext, address } = acquireExternalAddress(state.external, key);
  const updated: PeerRecord = { ...peer, natMappings: peer.natMappings.set(key, address) };
  return { state: { ...state, external: ext, peers: state.peers.set(peer.clusterId, updated) }, result: { ip: inPeerView(address) } };
}

/**
 * Stops reflecting an endpoint to a peer. Idempotent: unmapping what is not mapped (or a local pod,
 * which has no mapping) changes nothing. The ExternalCIDR address is freed with the last reflection.
 */
export function unmapEndpoint(
  state: IpamState,
  clusterId: unknown,
  ip: unknown,
): Outcome<{ removed: boolean; freedExternalIP: string | null }> {
  const peer = findPeer(state, clusterId);
  const key = formatIp(parseEndpointAddress('ip', ip));
  if (!peer.natMappings.has(key)) return { state, result: { removed: false, freedExternalIP: null } };
  const { ext, freed } = releaseExternalAddress(state.external, key);
  const updated: PeerRecord = { ...peer, natMappings: peer.natMappings.delete(key) };
  return {
    state: { ...state, external: ext, peers: state.peers.set(peer.clusterId, updated) },
    result: {
      removed: true,
      freedExternalIP: freed === undefined ? null : formatIp({ family: state.home.externalCIDR.family, value: freed }),
    },
  };
}

/** The NatMappings toward one peer, in ExternalCIDR address order. */
export function natMappingsOf(peer: PeerRecord, externalFamily: Ip['family']): NatMapping[] {
  return [...peer.natMappings.entries()]
    .sort(([, a], [, b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([endpointIP, address]) => ({ externalIP: formatIp({ family: externalFamily, value: address }), endpointIP }));
}
