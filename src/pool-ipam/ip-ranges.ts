/**
 * Sets of addresses as sorted, merged lists of inclusive ranges: a /16 pool with tens of thousands of
 * addresses taken is a few thousand ranges, and every operation here is a linear merge or a binary search
 * over them, never a walk over single addresses.
 *
 * "Normalized" below means: sorted by (family, first), no two ranges overlapping or touching. Every list
 * this module returns is normalized, and the functions taking lists expect normalized ones.
 */
import { InputError } from '../errors';
import { type Cidr, type Ip, type IpFamily, cidrLast, formatCidr, formatIp, parseIp } from '../net/cidr';
import type { IpRange } from './model';

function compareRanges(a: IpRange, b: IpRange): number {
  if (a.family !== b.family) return a.family - b.family;
  return a.first < b.first ? -1 : a.first > b.first ? 1 : 0;
}

/** Sorts and merges overlapping or adjacent ranges of the same family. */
export function normalizeRanges(ranges: readonly IpRange[]): IpRange[] {
  const sorted = [...ranges].sort(compareRanges);
  const merged: IpRange[] = [];
  for (const r of sorted) {
    const last = merged[merged.length - 1];
    if (last && last.family === r.family && r.first <= last.last + 1n) {
      if (r.last > last.last) merged[merged.length - 1] = { ...last, last: r.last };
    } else {
      merged.push({ family: r.family, first: r.first, last: r.last });
    }
  }
  return merged;
}

/** Single addresses (in any order, duplicates allowed) as a normalized list. */
export function rangesOfAddresses(addresses: Iterable<Ip>): IpRange[] {
  return normalizeRanges([...addresses].map((ip) => ({ family: ip.family, first: ip.value, last: ip.value })));
}

/**
 * Parses `spec.ips`-like entries ("10.6.0.2", "10.6.0.10-10.6.0.20", "fd00::2-fd00::9") of a pool or
 * StraitSubnet in `subnet`. Errors name the entry (`spec.ips[3]`) and its text.
 */
export function parseIpRanges(field: string, entries: unknown, subnet: Cidr): IpRange[] {
  if (!Array.isArray(entries)) throw new InputError(field, entries, 'expected a list of addresses and ranges like "10.6.0.10-10.6.0.20"');
  const ranges = entries.map((entry: unknown, index) => {
    const entryField = `${field}[${index}]`;
    if (typeof entry !== 'string') throw new InputError(entryField, entry, 'expected an address or a range "first-last"');
    const parts = entry.split('-');
    if (parts.length > 2) throw new InputError(entryField, entry, 'expected an address or a range "first-last" with one "-"');
    const [first, last] = parts.map((part) => {
      try {
        return parseIp(entryField, part);
      } catch (err) {
        if (err instanceof InputError) throw new InputError(entryField, entry, `"${part}": ${err.reason}`);
        throw err;
      }
    }) as [Ip, Ip | undefined];
    const end = last ?? first;
    for (const ip of [first, end]) {
      if (ip.family !== subnet.family) {
        throw new InputError(
          entryField,
          entry,
          `${formatIp(ip)} is IPv${ip.family} but the subnet ${formatCidr(subnet)} is IPv${subnet.family}`,
        );
      }
      if (ip.value < subnet.base || ip.value > cidrLast(subnet)) {
        throw new InputError(entryField, entry, `${formatIp(ip)} is outside the subnet ${formatCidr(subnet)}`);
      }
    }
    if (first.value > end.value)
      throw new InputError(entryField, entry, `the first address ${formatIp(first)} is above the last ${formatIp(end)}`);
    return { family: first.family, first: first.value, last: end.value };
  });
  return normalizeRanges(ranges);
}

/** The text form `parseIpRanges` reads: one entry per range, a single address for a range of one. */
export function formatIpRanges(ranges: readonly IpRange[]): string[] {
  return ranges.map((r) => {
    const first = formatIp({ family: r.family, value: r.first });
    return r.first === r.last ? first : `${first}-${formatIp({ family: r.family, value: r.last })}`;
  });
}

/** The addresses of `from` not in `remove` (whose ranges of another family are ignored). */
export function subtractRanges(from: readonly IpRange[], remove: readonly IpRange[]): IpRange[] {
  const out: IpRange[] = [];
  let j = 0;
  for (const r of from) {
    let first = r.first;
    // Skip the removals wholly before this range (or of a lower family); they cannot touch later ranges.
    while (j < remove.length && compareFamilyEnd(remove[j]!, r.family, first) < 0) j++;
    let k = j;
    while (k < remove.length && remove[k]!.family === r.family && remove[k]!.first <= r.last) {
      const cut = remove[k]!;
      if (cut.first > first) out.push({ family: r.family, first, last: cut.first - 1n });
      if (cut.last >= first) first = cut.last + 1n;
      if (first > r.last) break;
      k++;
    }
    if (first <= r.last) out.push({ family: r.family, first, last: r.last });
  }
  return out;
}

/** Negative when `range` lies entirely before address `value` of `family` in normalized order. */
function compareFamilyEnd(range: IpRange, family: IpFamily, value: bigint): number {
  if (range.family !== family) return range.family - family;
  return range.last < value ? -1 : 0;
}

export function countAddresses(ranges: readonly IpRange[]): bigint {
  return ranges.reduce((sum, r) => sum + (r.last - r.first + 1n), 0n);
}

/** Index of the first range that does not lie wholly before `value` (binary search); `ranges.length` if none. */
function firstRangeNotBefore(ranges: readonly IpRange[], family: IpFamily, value: bigint): number {
  let lo = 0;
  let hi = ranges.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (compareFamilyEnd(ranges[mid]!, family, value) < 0) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

export function rangesContain(ranges: readonly IpRange[], ip: Ip): boolean {
  const r = ranges[firstRangeNotBefore(ranges, ip.family, ip.value)];
  return r !== undefined && r.family === ip.family && r.first <= ip.value;
}

/** The `index`-th address (from 0) of a single-family list, or undefined past its end. */
export function addressAt(ranges: readonly IpRange[], index: bigint): Ip | undefined {
  let rest = index;
  for (const r of ranges) {
    const size = r.last - r.first + 1n;
    if (rest < size) return { family: r.family, value: r.first + rest };
    rest -= size;
  }
  return undefined;
}

/**
 * The first address of the single-family list `ranges` at or after its `start`-th address (taken modulo
 * the list's size) that is in none of the `taken` lists, wrapping around to the list's beginning;
 * undefined when every address is taken. Linear in the number of ranges of all lists.
 */
export function firstFreeAddress(ranges: readonly IpRange[], start: bigint, ...taken: (readonly IpRange[])[]): Ip | undefined {
  const size = countAddresses(ranges);
  if (size === 0n) return undefined;
  const from = addressAt(ranges, ((start % size) + size) % size)!;
  const free = taken.reduce<readonly IpRange[]>((left, remove) => subtractRanges(left, remove), ranges);
  if (free.length === 0) return undefined;
  const at = free[firstRangeNotBefore(free, from.family, from.value)];
  if (at === undefined) return { family: free[0]!.family, value: free[0]!.first };
  return { family: at.family, value: at.first > from.value ? at.first : from.value };
}
