/**
 * Address and prefix arithmetic on bigints, one representation for IPv4 and IPv6, so every prefix length
 * (/1 to /32, /1 to /128) goes through the same code: Liqo assumed /16 when translating and broke elsewhere.
 */
import ipaddr from 'ipaddr.js';
import { InputError } from '../errors';

export type IpFamily = 4 | 6;

export interface Ip {
  readonly family: IpFamily;
  readonly value: bigint;
}

/** A network: `base` is the network address (host bits zero), `prefix` its length. */
export interface Cidr {
  readonly family: IpFamily;
  readonly base: bigint;
  readonly prefix: number;
}

export function addressBits(family: IpFamily): number {
  return family === 4 ? 32 : 128;
}

function hostBits(cidr: Cidr): bigint {
  return BigInt(addressBits(cidr.family) - cidr.prefix);
}

/** Number of addresses in the network. */
export function cidrSize(cidr: Cidr): bigint {
  return 1n << hostBits(cidr);
}

/** Highest address of the network (the broadcast address for IPv4). */
export function cidrLast(cidr: Cidr): bigint {
  return cidr.base + cidrSize(cidr) - 1n;
}

export function containsIp(cidr: Cidr, ip: Ip): boolean {
  return cidr.family === ip.family && ip.value >= cidr.base && ip.value <= cidrLast(cidr);
}

export function cidrsOverlap(a: Cidr, b: Cidr): boolean {
  return a.family === b.family && a.base <= cidrLast(b) && b.base <= cidrLast(a);
}

export function cidrsEqual(a: Cidr, b: Cidr): boolean {
  return a.family === b.family && a.base === b.base && a.prefix === b.prefix;
}

export function sameShape(a: Cidr, b: Cidr): boolean {
  return a.family === b.family && a.prefix === b.prefix;
}

/**
 * The same host in another network of the same size: network bits swapped, host bits kept.
 * This is the whole stateless 1:1 NAT of docs/packet-contract.md.
 */
export function translateIp(ip: Ip, from: Cidr, to: Cidr): Ip {
  if (!sameShape(from, to)) {
    throw new Error(`translateIp: ${formatCidr(from)} and ${formatCidr(to)} differ in family or prefix length`);
  }
  if (!containsIp(from, ip)) throw new Error(`translateIp: ${formatIp(ip)} is not in ${formatCidr(from)}`);
  return { family: to.family, value: to.base + (ip.value - from.base) };
}

const ipv4Pattern = /^(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$/;

/** Strict: dotted quad without leading zeros, or IPv6 without zone; nothing else is an address here. */
function ipFromText(text: string): Ip | undefined {
  if (ipv4Pattern.test(text)) {
    return { family: 4, value: text.split('.').reduce((acc, octet) => (acc << 8n) | BigInt(octet), 0n) };
  }
  if (text.includes(':') && !text.includes('%') && ipaddr.IPv6.isValid(text)) {
    return { family: 6, value: ipaddr.IPv6.parse(text).parts.reduce((acc, part) => (acc << 16n) | BigInt(part), 0n) };
  }
  return undefined;
}

export function parseIp(field: string, text: unknown): Ip {
  if (typeof text !== 'string') throw new InputError(field, text, 'expected an IP address string');
  const ip = ipFromText(text);
  if (!ip) throw new InputError(field, text, 'not an IPv4 address (a.b.c.d, no leading zeros) nor an IPv6 address');
  return ip;
}

/** Parse "address/prefix"; a network with host bits set (10.0.0.1/24) is refused rather than guessed at. */
export function parseCidr(field: string, text: unknown): Cidr {
  if (typeof text !== 'string') throw new InputError(field, text, 'expected a CIDR string like 10.0.0.0/16');
  const match = /^([^/]+)\/(\d{1,3})$/.exec(text);
  if (!match) throw new InputError(field, text, 'expected a CIDR like 10.0.0.0/16 or fd00::/64');
  const ip = ipFromText(match[1]!);
  if (!ip) throw new InputError(field, text, 'the address part is not an IPv4 address (a.b.c.d, no leading zeros) nor an IPv6 address');
  const prefix = Number(match[2]);
  const bits = addressBits(ip.family);
  if (prefix < 1 || prefix > bits || String(prefix) !== match[2]) {
    throw new InputError(field, text, `prefix length must be 1 to ${bits} for IPv${ip.family}`);
  }
  const cidr: Cidr = { family: ip.family, base: ip.value, prefix };
  const hostMask = cidrSize(cidr) - 1n;
  if ((ip.value & hostMask) !== 0n) {
    const network = formatCidr({ ...cidr, base: ip.value & ~hostMask });
    throw new InputError(field, text, `host bits are set; did you mean ${network}?`);
  }
  return cidr;
}

export function formatIp(ip: Ip): string {
  if (ip.family === 4) {
    return [24n, 16n, 8n, 0n].map((shift) => String((ip.value >> shift) & 0xffn)).join('.');
  }
  const parts = [];
  for (let shift = 112n; shift >= 0n; shift -= 16n) parts.push(Number((ip.value >> shift) & 0xffffn));
  return new ipaddr.IPv6(parts).toString();
}

export function formatCidr(cidr: Cidr): string {
  return `${formatIp({ family: cidr.family, value: cidr.base })}/${cidr.prefix}`;
}
