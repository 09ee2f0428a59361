/**
 * A BPF map seen through codecs. Sizes are checked once against the kernel's view of the map, so every
 * operation after that is one syscall on well-formed buffers.
 */
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { type Codec, bytes, encode, u32 } from './codec';
import { native, type NativeMapInfo } from './binding';

export const MapType = {
  Hash: 1,
  Array: 2,
  PercpuHash: 5,
  PercpuArray: 6,
  LruHash: 9,
  LruPercpuHash: 10,
  LpmTrie: 11,
  ArrayOfMaps: 12,
  HashOfMaps: 13,
} as const;

const perCpuTypes: ReadonlySet<number> = new Set([MapType.PercpuHash, MapType.PercpuArray, MapType.LruPercpuHash]);
const mapInMapTypes: ReadonlySet<number> = new Set([MapType.ArrayOfMaps, MapType.HashOfMaps]);

/** BPF_ANY / BPF_NOEXIST / BPF_EXIST. */
export type UpdateMode = 'any' | 'noexist' | 'exist';
const updateFlags: Record<UpdateMode, number> = { any: 0, noexist: 1, exist: 2 };

export const MapFlags = { NoPrealloc: 1 } as const;

/** Per-CPU values: one slot per possible CPU, each rounded up to 8 bytes, as the kernel copies them. */
export function perCpu<T>(element: Codec<T>, cpus = native().numPossibleCpus()): Codec<T[]> & { element: Codec<T> } {
  const stride = Math.ceil(element.size / 8) * 8;
  return {
    element,
    size: stride * cpus,
    align: 8,
    encode(values, buf, offset) {
      if (values.length !== cpus) throw new TypeError(`expected one value per possible CPU (${cpus}), got ${values.length}`);
      buf.fill(0, offset, offset + stride * cpus);
      values.forEach((v, i) => element.encode(v, buf, offset + i * stride));
    },
    decode: (buf, offset) => Array.from({ length: cpus }, (_, i) => element.decode(buf, offset + i * stride)),
  };
}

/** Whether the kernel copies a value of a map of `type` once per possible CPU. */
export const isPerCpu = (type: number) => perCpuTypes.has(type);

/** The bytes one value of a map takes in a syscall: per-CPU maps copy every CPU's slot, each rounded up to 8. */
const transferSize = (info: { type: number; valueSize: number }) =>
  isPerCpu(info.type) ? Math.ceil(info.valueSize / 8) * 8 * native().numPossibleCpus() : info.valueSize;

export class BpfMap<K, V> {
  readonly name: string;
  readonly type: number;
  readonly keySize: number;
  readonly valueSize: number;
  readonly maxEntries: number;
  private closed = false;

  private constructor(
    private readonly fdValue: number,
    readonly info: NativeMapInfo,
    readonly key: Codec<K>,
    readonly value: Codec<V>,
    private readonly owned: boolean,
  ) {
    this.name = info.name;
    this.type = info.type;
    this.keySize = info.keySize;
    this.valueSize = info.valueSize;
    this.maxEntries = info.maxEntries;
  }

  /**
   * Wraps a map fd. `owned` maps close their fd on close(); maps of a BpfObject are closed with it.
   * For per-CPU maps the value codec must cover all CPUs: use `perCpu(codec)`.
   */
  static fromFd<K, V>(fd: number, key: Codec<K>, value: Codec<V>, owned: boolean): BpfMap<K, V> {
    const info = native().mapInfo(fd);
    const valueBytes = transferSize(info);
    const fail = (what: string, codecSize: number, mapSize: number) => {
      if (owned) native().closeFd(fd);
      return new TypeError(
        `map '${info.name}': the ${what} codec is ${codecSize} bytes but the map's ${what} is ${mapSize} bytes${perCpuTypes.has(info.type) && what === 'value' ? ' (per-CPU map: wrap the codec with perCpu())' : ''}`,
      );
    };
    if (key.size !== info.keySize) throw fail('key', key.size, info.keySize);
    if (value.size !== valueBytes) throw fail('value', value.size, valueBytes);
    return new BpfMap(fd, info, key, value, owned);
  }

  /** A map fd seen as raw bytes: its keys, and its values as a syscall copies them (every CPU's slot, for per-CPU maps). */
  static rawFromFd(fd: number, owned: boolean): BpfMap<Buffer, Buffer> {
    const info = native().mapInfo(fd);
    return BpfMap.fromFd(fd, bytes(info.keySize), bytes(transferSize(info)), owned);
  }

  /** Opens a pinned map as raw bytes (rawFromFd; its fd is owned by the returned object). */
  static openPinnedRaw(path: string): BpfMap<Buffer, Buffer> {
    return BpfMap.rawFromFd(native().objGet(path), true);
  }

  /** Opens a pinned map (its fd is owned by the returned object). */
  static openPinned<K, V>(path: string, key: Codec<K>, value: Codec<V>): BpfMap<K, V> {
    return BpfMap.fromFd(native().objGet(path), key, value, true);
  }

  /** Creates a map outside any object, e.g. an inner map for a map-in-map. */
  static create<K, V>(spec: {
    type: number;
    name: string;
    key: Codec<K>;
    value: Codec<V>;
    maxEntries: number;
    flags?: number;
    innerMap?: BpfMap<unknown, unknown>;
  }): BpfMap<K, V> {
    // A per-CPU map's value is one CPU's (its codec, perCpu(), covers them all).
    const valueSize = isPerCpu(spec.type) && 'element' in spec.value ? (spec.value.element as Codec<unknown>).size : spec.value.size;
    const fd = native().mapCreate(
      spec.type,
      spec.name,
      spec.key.size,
      valueSize,
      spec.maxEntries,
      spec.flags ?? 0,
      spec.innerMap?.fd ?? null,
    );
    return BpfMap.fromFd(fd, spec.key, spec.value, true);
  }

  get fd(): number {
    if (this.closed) throw new Error(`map '${this.name}' is closed`);
    return this.fdValue;
  }

  private encodeKey(key: K): Buffer {
    return encode(this.key, key);
  }

  private encodeValue(value: V): Buffer {
    return encode(this.value, value);
  }

  /** The value for `key`, or undefined when absent. */
  lookup(key: K): V | undefined {
    const out = native().mapLookup(this.fd, this.encodeKey(key), this.value.size);
    return out === undefined ? undefined : this.value.decode(out, 0);
  }

  update(key: K, value: V, mode: UpdateMode = 'any'): void {
    native().mapUpdate(this.fd, this.encodeKey(key), this.encodeValue(value), updateFlags[mode]);
  }

  /** Deletes `key`; returns whether it existed. */
  delete(key: K): boolean {
    return native().mapDelete(this.fd, this.encodeKey(key));
  }

  /** Keys in the kernel's order. Entries deleted meanwhile may end the walk early, as in the kernel. */
  *keys(): Generator<K> {
    let cursor: Buffer | undefined = native().mapGetNextKey(this.fd, null, this.keySize);
    while (cursor !== undefined) {
      yield this.key.decode(cursor, 0);
      cursor = native().mapGetNextKey(this.fd, cursor, this.keySize);
    }
  }

  /** Entries by iteration (works for every map type, one lookup per key). */
  *entries(): Generator<[K, V]> {
    let cursor: Buffer | undefined = native().mapGetNextKey(this.fd, null, this.keySize);
    while (cursor !== undefined) {
      const raw = native().mapLookup(this.fd, cursor, this.value.size);
      if (raw !== undefined) yield [this.key.decode(cursor, 0), this.value.decode(raw, 0)];
      cursor = native().mapGetNextKey(this.fd, cursor, this.keySize);
    }
  }

  /**
   * Writes many entries in one syscall (the kernel takes no exist/noexist flags for batches). On failure
   * the BpfError's `count` says how many were written.
   */
  updateBatch(entries: readonly (readonly [K, V])[]): number {
    if (entries.length === 0) return 0;
    const keys = Buffer.alloc(this.keySize * entries.length);
    const values = Buffer.alloc(this.value.size * entries.length);
    entries.forEach(([k, v], i) => {
      this.key.encode(k, keys, i * this.keySize);
      this.value.encode(v, values, i * this.value.size);
    });
    return native().mapUpdateBatch(this.fd, keys, values, entries.length, 0);
  }

  /** Deletes many keys in one syscall; fails with ENOENT (and `count`) at the first absent key. */
  deleteBatch(keys: readonly K[]): number {
    if (keys.length === 0) return 0;
    const buf = Buffer.alloc(this.keySize * keys.length);
    keys.forEach((k, i) => this.key.encode(k, buf, i * this.keySize));
    return native().mapDeleteBatch(this.fd, buf, keys.length);
  }

  /** Reads the whole map with batched lookups, `chunk` entries per syscall. */
  lookupBatch(chunk = 4096): [K, V][] {
    const out: [K, V][] = [];
    let cursor: Buffer | undefined;
    for (;;) {
      const step = native().mapLookupBatch(this.fd, cursor ?? null, this.keySize, this.value.size, chunk);
      for (let i = 0; i < step.count; i++)
        out.push([this.key.decode(step.keys, i * this.keySize), this.value.decode(step.values, i * this.value.size)]);
      if (step.next === undefined) return out;
      cursor = step.next;
    }
  }

  /** Map-in-map: puts `inner` at `key` (atomically replacing what was there). */
  setInnerMap(key: K, inner: BpfMap<unknown, unknown>): void {
    if (!mapInMapTypes.has(this.type)) throw new TypeError(`map '${this.name}' is not a map-in-map`);
    native().mapUpdate(this.fd, this.encodeKey(key), encode(u32, inner.fd), 0);
  }

  /** Map-in-map: the id of the inner map at `key`, or undefined. */
  innerMapId(key: K): number | undefined {
    if (!mapInMapTypes.has(this.type)) throw new TypeError(`map '${this.name}' is not a map-in-map`);
    const out = native().mapLookup(this.fd, this.encodeKey(key), 4);
    return out?.readUInt32LE(0);
  }

  /** Pins the map at `path` (parent directories are created). */
  pin(path: string): void {
    mkdirSync(dirname(path), { recursive: true });
    native().objPin(this.fd, path);
  }

  /** Closes the fd if this object owns it. Pinned maps stay in the kernel. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    if (this.owned) native().closeFd(this.fdValue);
  }
}
