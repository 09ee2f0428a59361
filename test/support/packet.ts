/**
 * An independent packet builder, parser and checksum verifier for Ethernet, IPv4 (RFC 791), IPv6
 * (RFC 8200, with extension headers), TCP (RFC 793), UDP (RFC 768), ICMP (RFC 792) and ICMPv6
 * (RFC 4443), with the Internet checksum of RFC 1071. Written from the
 * RFCs, not from the datapath's C: tests build the packet they expect from scratch and compare bytes.
 */
import ipaddr from 'ipaddr.js';

export const EtherType = { IPv4: 0x0800, ARP: 0x0806, IPv6: 0x86dd } as const;
export const Proto = { ICMP: 1, TCP: 6, UDP: 17, GRE: 47, ICMPv6: 58 } as const;
/** IPv6 extension headers (RFC 8200, 4). */
export const NextHeader = { HopByHop: 0, Routing: 43, Fragment: 44, DestOptions: 60, NoNext: 59 } as const;
export const IcmpType = { EchoReply: 0, DestUnreachable: 3, EchoRequest: 8, TimeExceeded: 11 } as const;
export const Icmp6Type = {
  PacketTooBig: 2,
  EchoRequest: 128,
  EchoReply: 129,
  NeighborSolicitation: 135,
  NeighborAdvertisement: 136,
} as const;

const ETH_LEN = 14;

/** RFC 1071: the 16-bit one's complement of the one's complement sum (odd length padded with zero). */
export function internetChecksum(...parts: Buffer[]): number {
  return ~onesSum(Buffer.concat(parts)) & 0xffff;
}

function onesSum(data: Buffer): number {
  let sum = 0;
  for (let i = 0; i + 1 < data.length; i += 2) sum += data.readUInt16BE(i);
  if (data.length % 2) sum += data[data.length - 1]! << 8;
  while (sum > 0xffff) sum = (sum & 0xffff) + (sum >>> 16);
  return sum;
}

const addr = (a: string) => Buffer.from(ipaddr.IPv4.parse(a).toByteArray());
const addrString = (b: Buffer, off: number) => [...b.subarray(off, off + 4)].join('.');
const addr6 = (a: string) => Buffer.from(ipaddr.IPv6.parse(a).toByteArray());
const addr6String = (b: Buffer, off: number) => ipaddr.fromByteArray([...b.subarray(off, off + 16)]).toString();
const isV6 = (a: string) => a.includes(':');

/** The pseudo-header of the L4 checksum: RFC 793's for IPv4, RFC 8200 8.1's for IPv6 (by the addresses' family). */
function pseudoHeader(src: string, dst: string, proto: number, length: number): Buffer {
  if (isV6(src)) {
    const p = Buffer.alloc(40);
    addr6(src).copy(p, 0);
    addr6(dst).copy(p, 16);
    p.writeUInt32BE(length, 32);
    p.writeUInt8(proto, 39);
    return p;
  }
  const p = Buffer.alloc(12);
  addr(src).copy(p, 0);
  addr(dst).copy(p, 4);
  p.writeUInt8(proto, 9);
  p.writeUInt16BE(length, 10);
  return p;
}

export type L4 =
  | {
      kind: 'tcp';
      sport: number;
      dport: number;
      seq?: number;
      flags?: number;
      payload?: Buffer;
      /** A multiple of 4 bytes. */ options?: Buffer;
    }
  | { kind: 'udp'; sport: number; dport: number; payload?: Buffer; zeroChecksum?: boolean }
  /** IPv6 addresses: ICMPv6 (echo request 128, reply 129), whose checksum covers the pseudo-header. */
  | { kind: 'icmp-echo'; type: 0 | 8 | 128 | 129; id: number; seq?: number; payload?: Buffer }
  | { kind: 'icmp-error'; type: number; code: number; quote: Buffer }
  | { kind: 'raw'; proto: number; payload: Buffer };

export interface Ipv4Fields {
  src: string;
  dst: string;
  ttl?: number;
  id?: number;
  tos?: number;
  /** IP options (a multiple of 4 bytes). */
  options?: Buffer;
}

/** ICMP's checksum; ICMPv6's covers the pseudo-header too (RFC 4443, 2.3). */
function icmpMessage(m: Buffer, src: string, dst: string): { proto: number; bytes: Buffer } {
  const proto = isV6(src) ? Proto.ICMPv6 : Proto.ICMP;
  m.writeUInt16BE(internetChecksum(isV6(src) ? pseudoHeader(src, dst, proto, m.length) : Buffer.alloc(0), m), 2);
  return { proto, bytes: m };
}

/** The L4 message with its checksum, for addresses `src` → `dst` (both IPv4 or both IPv6). */
function l4Message(l4: L4, src: string, dst: string): { proto: number; bytes: Buffer } {
  switch (l4.kind) {
    case 'tcp': {
      const payload = l4.payload ?? Buffer.alloc(0);
      const h = Buffer.concat([Buffer.alloc(20), l4.options ?? Buffer.alloc(0)]);
      h.writeUInt16BE(l4.sport, 0);
      h.writeUInt16BE(l4.dport, 2);
      h.writeUInt32BE(l4.seq ?? 1000, 4);
      h.writeUInt8((h.length / 4) << 4, 12);
      h.writeUInt8(l4.flags ?? 0x18, 13);
      h.writeUInt16BE(65535, 14);
      const seg = Buffer.concat([h, payload]);
      seg.writeUInt16BE(internetChecksum(pseudoHeader(src, dst, Proto.TCP, seg.length), seg), 16);
      return { proto: Proto.TCP, bytes: seg };
    }
    case 'udp': {
      const payload = l4.payload ?? Buffer.alloc(0);
      const h = Buffer.alloc(8);
      h.writeUInt16BE(l4.sport, 0);
      h.writeUInt16BE(l4.dport, 2);
      h.writeUInt16BE(8 + payload.length, 4);
      const dgram = Buffer.concat([h, payload]);
      if (!l4.zeroChecksum) {
        const c = internetChecksum(pseudoHeader(src, dst, Proto.UDP, dgram.length), dgram);
        dgram.writeUInt16BE(c === 0 ? 0xffff : c, 6); // RFC 768: a computed zero is sent as all ones
      }
      return { proto: Proto.UDP, bytes: dgram };
    }
    case 'icmp-echo': {
      const m = Buffer.concat([Buffer.alloc(8), l4.payload ?? Buffer.alloc(0)]);
      m.writeUInt8(l4.type, 0);
      m.writeUInt16BE(l4.id, 4);
      m.writeUInt16BE(l4.seq ?? 1, 6);
      return icmpMessage(m, src, dst);
    }
    case 'icmp-error': {
      const m = Buffer.concat([Buffer.alloc(8), l4.quote]);
      m.writeUInt8(l4.type, 0);
      m.writeUInt8(l4.code, 1);
      return icmpMessage(m, src, dst);
    }
    case 'raw':
      return { proto: l4.proto, bytes: l4.payload };
  }
}

/** An IPv4 header for a payload of `payloadLength` bytes, with its checksum. */
export function ipv4Header(
  ip: Ipv4Fields,
  proto: number,
  payloadLength: number,
  frag: { mf?: boolean; df?: boolean; offset?: number } = {},
): Buffer {
  const options = ip.options ?? Buffer.alloc(0);
  const h = Buffer.concat([Buffer.alloc(20), options]);
  h.writeUInt8(0x40 | (h.length / 4), 0);
  h.writeUInt8(ip.tos ?? 0, 1);
  h.writeUInt16BE(h.length + payloadLength, 2);
  h.writeUInt16BE(ip.id ?? 0x1234, 4);
  h.writeUInt16BE((frag.df ? 0x4000 : 0) | (frag.mf ? 0x2000 : 0) | ((frag.offset ?? 0) >> 3), 6);
  h.writeUInt8(ip.ttl ?? 64, 8);
  h.writeUInt8(proto, 9);
  addr(ip.src).copy(h, 12);
  addr(ip.dst).copy(h, 16);
  h.writeUInt16BE(internetChecksum(h), 10);
  return h;
}

/** A whole IPv4 datagram, DF set unless `df` says otherwise. */
export function datagram(ip: Ipv4Fields, l4: L4, df = true): Buffer {
  const { proto, bytes } = l4Message(l4, ip.src, ip.dst);
  return Buffer.concat([ipv4Header(ip, proto, bytes.length, { df }), bytes]);
}

/** Splits a datagram's payload at byte `at` (a multiple of 8) into a first and a later fragment. */
export function fragments(ip: Ipv4Fields, l4: L4, at: number): [Buffer, Buffer] {
  if (at % 8) throw new Error('fragment offsets are multiples of 8 bytes');
  const { proto, bytes } = l4Message(l4, ip.src, ip.dst);
  const first = Buffer.concat([ipv4Header(ip, proto, at, { mf: true }), bytes.subarray(0, at)]);
  const later = Buffer.concat([ipv4Header(ip, proto, bytes.length - at, { offset: at }), bytes.subarray(at)]);
  return [first, later];
}

export interface Ipv6Fields {
  src: string;
  dst: string;
  hopLimit?: number;
  /**
   * Extension headers in order, each whole (a multiple of 8 bytes): its first byte, the next header, is
   * filled in.
   */
  extensions?: { type: number; bytes: Buffer }[];
}

/** An IPv6 header and its extension headers, in front of `payloadLength` bytes of protocol `proto`. */
export function ipv6Header(ip: Ipv6Fields, proto: number, payloadLength: number): Buffer {
  const ext = ip.extensions ?? [];
  const chain = ext.map((e, i) => {
    const b = Buffer.from(e.bytes);
    b.writeUInt8(i + 1 < ext.length ? ext[i + 1]!.type : proto, 0);
    return b;
  });
  const h = Buffer.alloc(40);
  h.writeUInt32BE(0x60000000, 0);
  h.writeUInt16BE(chain.reduce((n, b) => n + b.length, 0) + payloadLength, 4);
  h.writeUInt8(ext[0]?.type ?? proto, 6);
  h.writeUInt8(ip.hopLimit ?? 64, 7);
  addr6(ip.src).copy(h, 8);
  addr6(ip.dst).copy(h, 24);
  return Buffer.concat([h, ...chain]);
}

/** An extension header of `type` with `length` bytes (a multiple of 8, at least 8) of zero options. */
export function extensionHeader(type: number, length = 8): { type: number; bytes: Buffer } {
  const bytes = Buffer.alloc(length);
  if (type !== NextHeader.Fragment) bytes.writeUInt8(length / 8 - 1, 1);
  return { type, bytes };
}

/** A fragment header (RFC 8200, 4.5): `offset` in bytes (a multiple of 8). */
export function fragmentHeader(offset: number, more: boolean, id = 0x1234): { type: number; bytes: Buffer } {
  const bytes = Buffer.alloc(8);
  bytes.writeUInt16BE(offset | (more ? 1 : 0), 2);
  bytes.writeUInt32BE(id, 4);
  return { type: NextHeader.Fragment, bytes };
}

/** A whole IPv6 packet. */
export function datagram6(ip: Ipv6Fields, l4: L4): Buffer {
  const { proto, bytes } = l4Message(l4, ip.src, ip.dst);
  return Buffer.concat([ipv6Header(ip, proto, bytes.length), bytes]);
}

export interface Macs {
  dst: string;
  src: string;
}
const defaultMacs: Macs = { dst: '0a:00:00:00:00:02', src: '0a:00:00:00:00:01' };

const macBytes = (m: string) => Buffer.from(m.split(':').map((x) => parseInt(x, 16)));

/** An Ethernet frame around `payload`. */
export function ethernet(payload: Buffer, macs: Macs = defaultMacs, type: number = EtherType.IPv4): Buffer {
  const h = Buffer.alloc(ETH_LEN);
  macBytes(macs.dst).copy(h, 0);
  macBytes(macs.src).copy(h, 6);
  h.writeUInt16BE(type, 12);
  return Buffer.concat([h, payload]);
}

/** Ethernet + IPv4 + L4 in one call. */
export function frame(ip: Ipv4Fields, l4: L4, macs: Macs = defaultMacs): Buffer {
  return ethernet(datagram(ip, l4), macs);
}

/** Ethernet + IPv6 + L4 in one call. */
export function frame6(ip: Ipv6Fields, l4: L4, macs: Macs = defaultMacs): Buffer {
  return ethernet(datagram6(ip, l4), macs, EtherType.IPv6);
}

export interface ParsedIpv6 {
  src: string;
  dst: string;
  /** The L4 protocol: the last next header. */
  proto: number;
  /** Where the L4 message starts, from the IPv6 header's start. */
  l4Offset: number;
  /** The IPv6 header's 40 bytes and the payload length. */
  totalLength: number;
  fragmented: boolean;
}

/** The IPv6 header at `off` with its extension headers walked, or undefined when it is not a complete one. */
export function parseIpv6(buf: Buffer, off = ETH_LEN): ParsedIpv6 | undefined {
  if (buf.length < off + 40 || buf.readUInt8(off) >> 4 !== 6) return undefined;
  const totalLength = 40 + buf.readUInt16BE(off + 4);
  let next = buf.readUInt8(off + 6);
  let at = 40;
  let fragmented = false;
  while ([NextHeader.HopByHop, NextHeader.Routing, NextHeader.Fragment, NextHeader.DestOptions].includes(next as 0)) {
    if (off + at + 8 > buf.length) return undefined;
    fragmented ||= next === NextHeader.Fragment;
    const length = next === NextHeader.Fragment ? 8 : (buf.readUInt8(off + at + 1) + 1) * 8;
    next = buf.readUInt8(off + at);
    at += length;
  }
  return { src: addr6String(buf, off + 8), dst: addr6String(buf, off + 24), proto: next, l4Offset: at, totalLength, fragmented };
}

export interface ParsedIpv4 {
  src: string;
  dst: string;
  proto: number;
  headerLength: number;
  totalLength: number;
  moreFragments: boolean;
  fragOffset: number;
}

/** The IPv4 header at `off`, or undefined when it is not a complete, well-formed one. */
export function parseIpv4(buf: Buffer, off = ETH_LEN): ParsedIpv4 | undefined {
  if (buf.length < off + 20) return undefined;
  const vihl = buf.readUInt8(off);
  const headerLength = (vihl & 15) * 4;
  if (vihl >> 4 !== 4 || headerLength < 20 || buf.length < off + headerLength) return undefined;
  const frag = buf.readUInt16BE(off + 6);
  return {
    src: addrString(buf, off + 12),
    dst: addrString(buf, off + 16),
    proto: buf.readUInt8(off + 9),
    headerLength,
    totalLength: buf.readUInt16BE(off + 2),
    moreFragments: (frag & 0x2000) !== 0,
    fragOffset: (frag & 0x1fff) * 8,
  };
}

export const macsOf = (f: Buffer): Macs => ({ dst: macString(f, 0), src: macString(f, 6) });
const macString = (b: Buffer, off: number) => [...b.subarray(off, off + 6)].map((x) => x.toString(16).padStart(2, '0')).join(':');

/** Whether the L4 message of a whole datagram checks out (UDP: a zero checksum means none). */
function l4Valid(src: string, dst: string, proto: number, msg: Buffer): boolean {
  if (proto === Proto.TCP) return msg.length >= 20 && onesSum(Buffer.concat([pseudoHeader(src, dst, proto, msg.length), msg])) === 0xffff;
  if (proto === Proto.UDP)
    return (
      msg.length >= 8 && (msg.readUInt16BE(6) === 0 || onesSum(Buffer.concat([pseudoHeader(src, dst, proto, msg.length), msg])) === 0xffff)
    );
  if (proto === Proto.ICMP) return msg.length >= 4 && onesSum(msg) === 0xffff;
  return true;
}

/**
 * Every checksum of an Ethernet frame that can be verified from the frame alone: the IPv4 header; for
 * an unfragmented datagram its TCP/UDP/ICMP checksum; for an ICMP error the quoted IP header and, when
 * the whole quoted datagram is there, its L4 checksum. Returns what is wrong (empty: all valid).
 * Frames that are not IPv4, or too broken to carry checksums, give no problems.
 */
export function checksumProblems(f: Buffer): string[] {
  if (f.length >= ETH_LEN && f.readUInt16BE(12) === EtherType.IPv6) return checksumProblems6(f);
  if (f.length < ETH_LEN || f.readUInt16BE(12) !== EtherType.IPv4) return [];
  const ip = parseIpv4(f);
  if (!ip || ip.totalLength < ip.headerLength || ETH_LEN + ip.totalLength > f.length) return [];
  const problems: string[] = [];
  if (onesSum(f.subarray(ETH_LEN, ETH_LEN + ip.headerLength)) !== 0xffff) problems.push('IPv4 header checksum');
  if (ip.moreFragments || ip.fragOffset) return problems;
  const msg = f.subarray(ETH_LEN + ip.headerLength, ETH_LEN + ip.totalLength);
  if (!l4Valid(ip.src, ip.dst, ip.proto, msg)) problems.push(`L4 (protocol ${ip.proto}) checksum`);
  if (ip.proto === Proto.ICMP && msg.length >= 8 && [3, 4, 5, 11, 12].includes(msg.readUInt8(0))) {
    const inner = parseIpv4(msg, 8);
    if (inner) {
      if (onesSum(msg.subarray(8, 8 + inner.headerLength)) !== 0xffff) problems.push('quoted IPv4 header checksum');
      const whole =
        8 + inner.totalLength <= msg.length && inner.totalLength >= inner.headerLength && !inner.moreFragments && !inner.fragOffset;
      if (whole && !l4Valid(inner.src, inner.dst, inner.proto, msg.subarray(8 + inner.headerLength, 8 + inner.totalLength)))
        problems.push('quoted L4 checksum');
    }
  }
  return problems;
}

/** IPv6: no header checksum; TCP, UDP (a zero one is invalid, RFC 8200 8.1) and ICMPv6 all cover the pseudo-header. */
function checksumProblems6(f: Buffer): string[] {
  const ip = parseIpv6(f);
  if (!ip || ip.fragmented || ETH_LEN + ip.totalLength > f.length || ip.l4Offset > ip.totalLength) return [];
  const msg = f.subarray(ETH_LEN + ip.l4Offset, ETH_LEN + ip.totalLength);
  if (![Proto.TCP, Proto.UDP, Proto.ICMPv6].includes(ip.proto as 6)) return [];
  const at = { [Proto.TCP]: 16, [Proto.UDP]: 6, [Proto.ICMPv6]: 2 }[ip.proto as 6]!;
  const valid =
    msg.length >= at + 2 &&
    (ip.proto !== Proto.UDP || msg.readUInt16BE(at) !== 0) &&
    onesSum(Buffer.concat([pseudoHeader(ip.src, ip.dst, ip.proto, msg.length), msg])) === 0xffff;
  return valid ? [] : [`L4 (protocol ${ip.proto}) checksum`];
}

function rewriteChecksum(buf: Buffer, at: number, value: number): void {
  buf.writeUInt16BE(value, at);
}

/**
 * Recomputes, in place, every checksum `checksumProblems` verifies (quoted headers first, then the L4
 * message, then the IP header), so a fuzzer can produce odd but valid packets. Returns `f`.
 */
export function repairChecksums(f: Buffer): Buffer {
  if (f.length < ETH_LEN || f.readUInt16BE(12) !== EtherType.IPv4) return f;
  const ip = parseIpv4(f);
  if (!ip) return f;
  const end = ETH_LEN + ip.totalLength;
  const l4 = ETH_LEN + ip.headerLength;
  if (ip.totalLength >= ip.headerLength && end <= f.length && !ip.moreFragments && !ip.fragOffset) {
    const msg = f.subarray(l4, end);
    if (ip.proto === Proto.ICMP && msg.length >= 8 && [3, 4, 5, 11, 12].includes(msg.readUInt8(0))) {
      const inner = parseIpv4(msg, 8);
      if (inner) {
        rewriteChecksum(msg, 8 + 10, 0);
        rewriteChecksum(msg, 8 + 10, internetChecksum(msg.subarray(8, 8 + inner.headerLength)));
      }
    }
    const at = ip.proto === Proto.TCP ? 16 : ip.proto === Proto.UDP ? 6 : ip.proto === Proto.ICMP ? 2 : -1;
    const zeroUdp = ip.proto === Proto.UDP && msg.length >= 8 && msg.readUInt16BE(6) === 0;
    if (
      at >= 0 &&
      msg.length >= at + 2 &&
      !zeroUdp &&
      (ip.proto !== Proto.TCP || msg.length >= 20) &&
      (ip.proto !== Proto.UDP || msg.length >= 8)
    ) {
      rewriteChecksum(msg, at, 0);
      const c = ip.proto === Proto.ICMP ? internetChecksum(msg) : internetChecksum(pseudoHeader(ip.src, ip.dst, ip.proto, msg.length), msg);
      rewriteChecksum(msg, at, ip.proto === Proto.UDP && c === 0 ? 0xffff : c);
    }
  }
  rewriteChecksum(f, ETH_LEN + 10, 0);
  rewriteChecksum(f, ETH_LEN + 10, internetChecksum(f.subarray(ETH_LEN, ETH_LEN + ip.headerLength)));
  return f;
}
