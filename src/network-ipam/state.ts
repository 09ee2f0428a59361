/**
 * The IPAM state: an immutable value. Every operation takes a state and returns a new one with its
 * result, so a failed operation changes nothing and the shell decides when a state is saved.
 */
import type { Cidr } from '../net/cidr';
import { type ExternalAddresses, emptyExternalAddresses } from './external-addresses';
import type { HomeNetworks } from '../api/home-networks';
import { PersistentMap } from './persistent-map';

export interface PeerRecord {
  readonly clusterId: string;
  /** The peer's networks as the peer itself numbers them (from its NetworkConfig spec). */
  readonly podCIDR: Cidr;
  readonly externalCIDR: Cidr;
  /** The peer's networks as seen here: the peer's own when free, else our remap of them. */
  readonly remotePodCIDR: Cidr;
  readonly remoteExternalCIDR: Cidr;
  /** Our networks as the peer sees them, known once the peer has processed our NetworkConfig. */
  readonly localNATPodCIDR?: Cidr;
  readonly localNATExternalCIDR?: Cidr;
  /** NatMappings toward this peer: canonical endpoint IP → the home ExternalCIDR address it was given. */
  readonly natMappings: PersistentMap<bigint>;
}

export interface IpamState {
  readonly home: HomeNetworks;
  readonly peers: PersistentMap<PeerRecord>;
  /** Every non-local endpoint reflected to at least one peer, with its ExternalCIDR address. */
  readonly external: ExternalAddresses;
}

/** Result of an operation: the state after it and what the caller asked for. */
export interface Outcome<R, S = IpamState> {
  readonly state: S;
  readonly result: R;
}

export function emptyIpamState(home: HomeNetworks): IpamState {
  return { home, peers: PersistentMap.empty(), external: emptyExternalAddresses(home.externalCIDR) };
}
