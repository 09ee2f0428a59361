import { type Cidr, type IpFamily, addressBits, cidrLast, cidrSize } from './cidr';

/**
 * The lowest network of `prefix` length inside the first pool that has one free of `used`, or undefined.
 * Deterministic (pools in order, lowest address first), so the same state always gives the same answer.
 * Cost: one sort and one pass over the used networks, O(n log n) for n networks in use.
 */
export function lowestFreeNetwork(family: IpFamily, prefix: number, pools: readonly Cidr[], used: readonly Cidr[]): Cidr | undefined {
  const sameFamily = used.filter((u) => u.family === family).sort((a, b) => (a.base < b.base ? -1 : a.base > b.base ? 1 : 0));
  const size = 1n << BigInt(addressBits(family) - prefix);
  for (const pool of pools) {
    if (pool.family !== family || pool.prefix > prefix) continue;
    const found = lowestFreeInPool(pool, size, sameFamily);
    if (found !== undefined) return { family, base: found, prefix };
  }
  return undefined;
}

/** Walks the used networks in address order, moving the candidate past each one it collides with. */
function lowestFreeInPool(pool: Cidr, size: bigint, sortedUsed: readonly Cidr[]): bigint | undefined {
  const poolLast = cidrLast(pool);
  let candidate = pool.base;
  for (const u of sortedUsed) {
    if (candidate + size - 1n > poolLast) return undefined;
    const uLast = u.base + cidrSize(u) - 1n;
    if (uLast < candidate) continue;
    if (u.base > candidate + size - 1n) break;
    // Collides: the next aligned candidate after the end of u.
    candidate = ((uLast + 1n + size - 1n) / size) * size;
  }
  return candidate + size - 1n <= poolLast ? candidate : undefined;
}
