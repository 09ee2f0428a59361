/**
 * Addresses of the home ExternalCIDR given to non-local endpoints. An endpoint gets one address, the
 * lowest free, the first time it is reflected to a peer, keeps it for every further peer, and gives it
 * back when its last reflection is removed. An address still mapped is never handed out again.
 */
import { StateError } from '../errors';
import { AddressSet } from '../net/address-set';
import { type Cidr, cidrSize, formatCidr } from '../net/cidr';
import { PersistentMap } from './persistent-map';

interface ExternalAllocation {
  readonly address: bigint;
  /** How many peers the endpoint is reflected to. */
  readonly reflections: number;
}

export interface ExternalAddresses {
  readonly cidr: Cidr;
  /** Offsets (from cidr.base) that are taken, including the never-usable ones. */
  readonly used: AddressSet;
  /** Canonical endpoint IP → its allocation. */
  readonly byEndpoint: PersistentMap<ExternalAllocation>;
}

const hasNetworkAndBroadcast = (cidr: Cidr) => cidr.family === 4 && cidr.prefix < 31;

/**
 * The hub's source address for transit traffic (the datapath gives it to traffic it forwards from one
 * peer to another): the last usable address, never handed out to an endpoint.
 */
export function transitOffset(cidr: Cidr): bigint {
  return cidrSize(cidr) - (hasNetworkAndBroadcast(cidr) ? 2n : 1n);
}

/**
 * IPv4 networks shorter than /31 lose their network and broadcast addresses (hosts would not accept
 * them as unicast); /31 and /32 (RFC 3021) and IPv6 networks use every address. The transit address is
 * kept back in every network.
 */
export function unusableOffsets(cidr: Cidr): bigint[] {
  const edges = hasNetworkAndBroadcast(cidr) ? [0n, cidrSize(cidr) - 1n] : [];
  return [...edges, transitOffset(cidr)];
}

export function emptyExternalAddresses(cidr: Cidr): ExternalAddresses {
  const used = unusableOffsets(cidr).reduce((set, offset) => set.add(offset), AddressSet.empty(cidrSize(cidr)));
  return { cidr, used, byEndpoint: PersistentMap.empty() };
}

/** One more reflection of the endpoint: its existing address, or the lowest free one. */
export function acquireExternalAddress(ext: ExternalAddresses, endpoint: string): { ext: ExternalAddresses; address: bigint } {
  const existing = ext.byEndpoint.get(endpoint);
  if (existing) {
    const byEndpoint = ext.byEndpoint.set(endpoint, { ...existing, reflections: existing.reflections + 1 });
    return { ext: { ...ext, byEndpoint }, address: existing.address };
  }
  const offset = ext.used.lowestFree();
  if (offset === undefined) {
    throw new StateError(
      `ExternalCIDR ${formatCidr(ext.cidr)} is full (${ext.byEndpoint.size} endpoints mapped); ` +
        'unmap endpoints that are no longer reflected, or re-initialise with a larger --external-cidr',
    );
  }
  const address = ext.cidr.base + offset;
  return {
    ext: { ...ext, used: ext.used.add(offset), byEndpoint: ext.byEndpoint.set(endpoint, { address, reflections: 1 }) },
    address,
  };
}

/** One reflection fewer; the address is freed with the last one. Returns the freed address, if any. */
export function releaseExternalAddress(ext: ExternalAddresses, endpoint: string): { ext: ExternalAddresses; freed?: bigint } {
  const existing = ext.byEndpoint.get(endpoint);
  if (!existing) return { ext };
  if (existing.reflections > 1) {
    return { ext: { ...ext, byEndpoint: ext.byEndpoint.set(endpoint, { ...existing, reflections: existing.reflections - 1 }) } };
  }
  return {
    ext: { ...ext, used: ext.used.delete(existing.address - ext.cidr.base), byEndpoint: ext.byEndpoint.delete(endpoint) },
    freed: existing.address,
  };
}
