/**
 * Reconciling one BPF map. A map's contents are handled as a table of ids (entry id → value id), ids
 * being whatever is cheapest to compare and turns back into the exact bytes: the hex of the encoded
 * key and value for small maps, the address as a number for the NAT maps of 100,000 entries. The
 * mirror of a map remembers what the kernel holds after our last write, so an apply diffs the desired
 * table against memory and writes only the difference, without reading the map; a full read (the first
 * apply, a periodic resync, and any apply after a failed write) diffs against the kernel instead and
 * repairs whatever was changed by hand. Running either twice writes nothing the second time.
 */
import { BpfMap, MapType, bytes } from '../bpf';

/** A map's contents by id: entry id → value id. */
export type Table<I, W> = ReadonlyMap<I, W>;

export interface TableDiff<I, W> {
  /** Entries to write (new or changed). */
  upserts: [I, W][];
  /** Entries to delete. */
  deletes: I[];
}

/** Pure: what turns `current` into `desired`. */
export function diffTables<I, W>(current: Table<I, W>, desired: Table<I, W>): TableDiff<I, W> {
  const upserts: [I, W][] = [];
  const deletes: I[] = [];
  let kept = 0;
  for (const [id, value] of desired) {
    const have = current.get(id);
    if (have === undefined) upserts.push([id, value]);
    else {
      kept++;
      if (have !== value) upserts.push([id, value]);
    }
  }
  // Every current entry is also desired: none to delete, and no need to look.
  if (kept < current.size) for (const id of current.keys()) if (!desired.has(id)) deletes.push(id);
  return { upserts, deletes };
}

/** How a map's key and value bytes become ids, and back. */
export interface TableCodec<I, W> {
  keyId(key: Buffer): I;
  valueId(value: Buffer): W;
  key(id: I): Buffer;
  value(id: W): Buffer;
}

/** Any map: ids are the bytes in hex. */
export const hexIds: TableCodec<string, string> = {
  keyId: (b) => b.toString('hex'),
  valueId: (b) => b.toString('hex'),
  key: (id) => Buffer.from(id, 'hex'),
  value: (id) => Buffer.from(id, 'hex'),
};

const u32be = (n: number) => {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(n, 0);
  return b;
};

/** A map of IPv4 address to IPv4 address (`__be32` both): ids are the addresses as numbers. */
export const ipv4Ids: TableCodec<number, number> = {
  keyId: (b) => b.readUInt32BE(0),
  valueId: (b) => b.readUInt32BE(0),
  key: u32be,
  value: u32be,
};

/** Pure: typed entries as a table, through the map's codecs (the last of equal keys wins, as in the kernel). */
export function tableOf<K, V, I, W>(map: Pick<BpfMap<K, V>, 'key' | 'value'>, ids: TableCodec<I, W>, entries: Iterable<readonly [K, V]>): Map<I, W> {
  const out = new Map<I, W>();
  for (const [k, v] of entries) {
    const key = Buffer.alloc(map.key.size);
    map.key.encode(k, key, 0);
    const value = Buffer.alloc(map.value.size);
    map.value.encode(v, value, 0);
    out.set(ids.keyId(key), ids.valueId(value));
  }
  return out;
}

/** The byte-level operations a mirror needs of a map (a fake one in the pure tests). */
export interface MapBytes {
  read(): Iterable<[Buffer, Buffer]>;
  /** Each returns how many entries it wrote or deleted. */
  update(entries: [Buffer, Buffer][]): number;
  delete(keys: Buffer[]): number;
}

// LPM tries have no batch operations in the kernel.
const batchable = (map: BpfMap<unknown, unknown>) => map.type !== MapType.LpmTrie;

/** A byte view of the same map: the diff works on bytes, so nothing is decoded to be encoded again. */
export function mapBytes<K, V>(map: BpfMap<K, V>): MapBytes {
  const raw = BpfMap.fromFd(map.fd, bytes(map.keySize), bytes(map.value.size), false);
  const batch = batchable(map as BpfMap<unknown, unknown>);
  return {
    read: () => (batch ? raw.lookupBatch() : raw.entries()),
    update(entries) {
      if (batch) return raw.updateBatch(entries);
      for (const [k, v] of entries) raw.update(k, v);
      return entries.length;
    },
    delete(keys) {
      if (batch) return raw.deleteBatch(keys);
      return keys.filter((k) => raw.delete(k)).length;
    },
  };
}

export interface SyncResult {
  written: number;
  deleted: number;
}

/** A planned change of one map, applied in two phases (upserts, then deletes) that callers order across maps. */
export interface MapPlan {
  upsert(): number;
  delete(): number;
}

/** One map as our last writes left it: the kernel's contents, as far as this process knows. */
export class MapMirror<I, W> {
  /** Undefined: unknown (never read, or a write failed, after which what the kernel holds is unsure). */
  private known?: Map<I, W>;

  constructor(
    private readonly map: MapBytes,
    private readonly ids: TableCodec<I, W>,
  ) {}

  /** Whether the next plan reads the map (memory unknown). */
  get unknown(): boolean {
    return this.known === undefined;
  }

  /** What makes the map hold `desired`: diffed against memory, or against the map itself when `read` or when memory is unknown. */
  plan(desired: Table<I, W>, read: boolean): MapPlan {
    if (read || this.known === undefined) this.known = this.readTable();
    const known = this.known;
    const diff = diffTables(known, desired);
    return {
      upsert: () => this.guard(() => {
        if (diff.upserts.length === 0) return 0;
        const written = this.map.update(diff.upserts.map(([k, v]) => [this.ids.key(k), this.ids.value(v)]));
        for (const [k, v] of diff.upserts) known.set(k, v);
        return written;
      }),
      delete: () => this.guard(() => {
        if (diff.deletes.length === 0) return 0;
        const deleted = this.map.delete(diff.deletes.map((k) => this.ids.key(k)));
        for (const k of diff.deletes) known.delete(k);
        return deleted;
      }),
    };
  }

  /** Both phases at once. */
  sync(desired: Table<I, W>, read: boolean): SyncResult {
    const plan = this.plan(desired, read);
    return { written: plan.upsert(), deleted: plan.delete() };
  }

  private readTable(): Map<I, W> {
    const out = new Map<I, W>();
    for (const [k, v] of this.map.read()) out.set(this.ids.keyId(k), this.ids.valueId(v));
    return out;
  }

  private guard(write: () => number): number {
    try {
      return write();
    } catch (err) {
      this.known = undefined;
      throw err;
    }
  }
}

/**
 * Makes `map` hold exactly `desired`, reading it first. With `phase: 'upsert'` only writes, with
 * `phase: 'delete'` only deletes.
 */
export function syncMap<K, V>(map: BpfMap<K, V>, desired: Iterable<readonly [K, V]>, phase: 'upsert' | 'delete' | 'both' = 'both'): SyncResult {
  const plan = new MapMirror(mapBytes(map), hexIds).plan(tableOf(map, hexIds, desired), true);
  return { written: phase === 'delete' ? 0 : plan.upsert(), deleted: phase === 'upsert' ? 0 : plan.delete() };
}
