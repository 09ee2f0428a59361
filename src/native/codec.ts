/**
 * Typed codecs over raw bytes, laid out as clang lays out C for the BPF target (natural alignment,
 * little-endian host integers, network-order address fields). Callers work with objects, not offsets;
 * `layoutOf` exposes the offsets so a test can compare them with the BTF of the C side.
 */
import ipaddr from 'ipaddr.js';

export interface Codec<T> {
  readonly size: number;
  readonly align: number;
  encode(value: T, buf: Buffer, offset: number): void;
  decode(buf: Buffer, offset: number): T;
}

export type CodecValue<C> = C extends Codec<infer T> ? T : never;

function integer<T>(size: number, write: (b: Buffer, v: T, o: number) => void, read: (b: Buffer, o: number) => T): Codec<T> {
  return { size, align: size, encode: (v, b, o) => write(b, v, o), decode: (b, o) => read(b, o) };
}

export const u8 = integer<number>(
  1,
  (b, v, o) => b.writeUInt8(v, o),
  (b, o) => b.readUInt8(o),
);
export const u16 = integer<number>(
  2,
  (b, v, o) => b.writeUInt16LE(v, o),
  (b, o) => b.readUInt16LE(o),
);
export const u32 = integer<number>(
  4,
  (b, v, o) => b.writeUInt32LE(v, o),
  (b, o) => b.readUInt32LE(o),
);
export const u64 = integer<bigint>(
  8,
  (b, v, o) => b.writeBigUInt64LE(v, o),
  (b, o) => b.readBigUInt64LE(o),
);
/** `__be16` fields (ports in network order). */
export const be16 = integer<number>(
  2,
  (b, v, o) => b.writeUInt16BE(v, o),
  (b, o) => b.readUInt16BE(o),
);

/** `__be32` integer fields (sequence numbers on the wire). */
export const be32 = integer<number>(
  4,
  (b, v, o) => b.writeUInt32BE(v, o),
  (b, o) => b.readUInt32BE(o),
);

const dottedQuad =
  /^(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)$/;

/** An IPv4 address held as `__be32`, shown as dotted quad (the reconciler encodes 100,000s of them). */
export const ipv4: Codec<string> = {
  size: 4,
  align: 4,
  encode(value, buf, offset) {
    const m = dottedQuad.exec(value);
    if (!m) throw new TypeError(`not an IPv4 address: ${JSON.stringify(value)}`);
    for (let i = 0; i < 4; i++) buf[offset + i] = Number(m[i + 1]);
  },
  decode: (buf, offset) => `${buf[offset]}.${buf[offset + 1]}.${buf[offset + 2]}.${buf[offset + 3]}`,
};

/** An IPv6 address held as 16 bytes (`struct in6_addr`, 4-byte aligned). */
export const ipv6: Codec<string> = {
  size: 16,
  align: 4,
  encode(value, buf, offset) {
    buf.set(parseAddress(value, 'ipv6'), offset);
  },
  decode: (buf, offset) => ipaddr.fromByteArray([...buf.subarray(offset, offset + 16)]).toString(),
};

function parseAddress(value: string, kind: 'ipv4' | 'ipv6'): number[] {
  if (!ipaddr.isValid(value)) throw new TypeError(`not an IP address: ${JSON.stringify(value)}`);
  const addr = ipaddr.parse(value);
  if (addr.kind() !== kind) throw new TypeError(`not an ${kind === 'ipv4' ? 'IPv4' : 'IPv6'} address: ${JSON.stringify(value)}`);
  return addr.toByteArray();
}

/** A MAC address (`__u8[6]`), shown as aa:bb:cc:dd:ee:ff. */
export const mac: Codec<string> = {
  size: 6,
  align: 1,
  encode(value, buf, offset) {
    const parts = value.split(':');
    if (parts.length !== 6 || parts.some((p) => !/^[0-9a-fA-F]{2}$/.test(p)))
      throw new TypeError(`not a MAC address: ${JSON.stringify(value)}`);
    parts.forEach((p, i) => buf.writeUInt8(parseInt(p, 16), offset + i));
  },
  decode: (buf, offset) => [...buf.subarray(offset, offset + 6)].map((x) => x.toString(16).padStart(2, '0')).join(':'),
};

/** A fixed-length C array. */
export function array<T>(element: Codec<T>, length: number): Codec<T[]> {
  return {
    size: element.size * length,
    align: element.align,
    encode(value, buf, offset) {
      if (value.length !== length) throw new TypeError(`expected an array of ${length}, got ${value.length}`);
      value.forEach((v, i) => element.encode(v, buf, offset + i * element.size));
    },
    decode: (buf, offset) => Array.from({ length }, (_, i) => element.decode(buf, offset + i * element.size)),
  };
}

/** `size` raw bytes, as they are (a map copied without knowing its layout). */
export function bytes(size: number): Codec<Buffer> {
  return {
    size,
    align: 1,
    encode(value, buf, offset) {
      if (value.length !== size) throw new TypeError(`expected ${size} bytes, got ${value.length}`);
      value.copy(buf, offset);
    },
    decode: (buf, offset) => Buffer.from(buf.subarray(offset, offset + size)),
  };
}

interface FieldLayout {
  name: string;
  offset: number;
  size: number;
}

export interface StructCodec<T> extends Codec<T> {
  readonly fields: readonly FieldLayout[];
}

// any: codecs of different value types side by side (a Codec is invariant in its value).
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Fields = Record<string, Codec<any>>;
type StructValue<F extends Fields> = { [K in keyof F]: CodecValue<F[K]> };

const alignUp = (n: number, a: number) => Math.ceil(n / a) * a;

/**
 * A C struct: fields in declaration order, each at its natural alignment, the size rounded up to the
 * largest alignment. Names starting with `_pad` are explicit padding: written as zero, not decoded.
 */
export function struct<F extends Fields>(fields: F): StructCodec<StructValue<F>> {
  let offset = 0;
  let align = 1;
  const layout: (FieldLayout & { codec: Codec<unknown> })[] = [];
  for (const [name, codec] of Object.entries(fields)) {
    offset = alignUp(offset, codec.align);
    layout.push({ name, offset, size: codec.size, codec });
    offset += codec.size;
    align = Math.max(align, codec.align);
  }
  const size = alignUp(offset, align);
  const isPad = (name: string) => name.startsWith('_pad');
  return {
    size,
    align,
    fields: layout.map(({ name, offset: o, size: s }) => ({ name, offset: o, size: s })),
    encode(value, buf, base) {
      buf.fill(0, base, base + size);
      for (const f of layout) {
        if (isPad(f.name)) continue;
        const v = (value as Record<string, unknown>)[f.name];
        if (v === undefined) throw new TypeError(`missing field '${f.name}'`);
        f.codec.encode(v, buf, base + f.offset);
      }
    },
    decode(buf, base) {
      const out: Record<string, unknown> = {};
      for (const f of layout) if (!isPad(f.name)) out[f.name] = f.codec.decode(buf, base + f.offset);
      return out as StructValue<F>;
    },
  };
}

/** Encodes a value into a new buffer of exactly the codec's size. */
export function encode<T>(codec: Codec<T>, value: T): Buffer {
  const buf = Buffer.alloc(codec.size);
  codec.encode(value, buf, 0);
  return buf;
}

/** An LPM-trie key: `struct { __u32 prefixlen; <address> }`, prefix length in bits. */
export function lpmKey<T>(data: Codec<T>) {
  return struct({ prefixLen: u32, addr: data });
}
