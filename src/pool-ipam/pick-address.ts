/**
 * Choosing one address of a pool for a pod: the first free address at or after a start position, so
 * nodes starting at different positions (a hash of the node name) rarely reach for the same address at
 * the same time, while a node's own allocations still fill the pool in order.
 */
import type { Ip } from '../net/cidr';
import { countAddresses, firstFreeAddress, subtractRanges } from './ip-ranges';
import type { IpRange, Pool } from './model';
import { usableAddresses } from './usable-addresses';

/** Addresses not to be given: each list normalized (ip-ranges.ts), of any family (others are ignored). */
export interface AddressUse {
  /** Held by an allocation (a StraitEndpoint) of any pool. */
  taken: readonly IpRange[];
  /** Held by a ReservedIP. */
  reserved: readonly IpRange[];
  /** Being given by an allocation not yet recorded, or found in use on the wire (a conflict). */
  pending: readonly IpRange[];
}

/** The pool's usable addresses (usable-addresses.ts) that are neither taken, reserved nor pending. */
export function freeAddresses(pool: Pool, use: AddressUse): IpRange[] {
  return subtractRanges(subtractRanges(subtractRanges(usableAddresses(pool), use.reserved), use.taken), use.pending);
}

/**
 * The first free address at or after the `start`-th usable address of the pool (`start` is reduced modulo
 * their count; the order is the addresses' own), wrapping around; undefined when none is free.
 */
export function pickAddress(pool: Pool, use: AddressUse & { start: bigint }): Ip | undefined {
  return firstFreeAddress(usableAddresses(pool), use.start, use.reserved, use.taken, use.pending);
}

/** Number of usable addresses of the pool: the range of `start`. */
export function poolSize(pool: Pool): bigint {
  return countAddresses(usableAddresses(pool));
}

const fnvOffsetBasis = 0xcbf29ce484222325n;
const fnvPrime = 0x100000001b3n;
const mask64 = (1n << 64n) - 1n;

/** 64-bit FNV-1a of the name's UTF-8 bytes: stable across processes and versions, cheap, well spread. */
export function fnv1a64(text: string): bigint {
  let hash = fnvOffsetBasis;
  for (const byte of Buffer.from(text, 'utf8')) hash = ((hash ^ BigInt(byte)) * fnvPrime) & mask64;
  return hash;
}

/** Where a node starts looking in a pool of `poolSize` usable addresses: FNV-1a-64(nodeName) mod poolSize. */
export function startOffset(nodeName: string, poolSize: bigint): bigint {
  return poolSize > 0n ? fnv1a64(nodeName) % poolSize : 0n;
}
