/**
 * Reconciling one BPF map. A map's contents are handled as a table of ids (entry id → value id), ids
 * being whatever is cheapest to compare and turns back into the exact bytes: the hex of the encoded
 * key and value for small maps, the address as a number for the NAT maps of 100,000 entries. The
 * mirror of a map remembers what the kernel holds after our last write, so an apply diffs the desired
 * table against memory and writes only the difference, without reading the map; a full read (the first
 * apply, a periodic resync, and any apply after a failed write) diffs against the kernel instead and
 * repairs whatever was changed by hand. Running either twice writes nothing the second time.
 */
import { BpfMap, type Codec, MapType } from '../../native';

/** A map's contents by id: entry id → value id (a Map, or a U32Table for the NAT maps). */
export interface Table<I, W> {
  readonly size: number;
  get(id: I): W | undefined;
  has(id: I): boolean;
  forEach(fn: (value: W, id: I) => void): void;
}

export interface MutableTable<I, W> extends Table<I, W> {
  set(id: I, value: W): unknown;
  delete(id: I): boolean;
}

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
  desired.forEach((value, id) => {
    const have = current.get(id);
    if (have === undefined) upserts.push([id, value]);
    else {
      kept++;
      if (have !== value) upserts.push([id, value]);
    }
  });
  // The current entries not kept are the ones to delete: none, or look until all of them are found.
  const gone = current.size - kept;
  if (gone > 0)
    current.forEach((_, id) => {
      if (deletes.length < gone && !desired.has(id)) deletes.push(id);
    });
  return { upserts, deletes };
}

/** Ids of any map: its key or value bytes in hex. */
export function hexIds(size: number): Codec<string> {
  return {
    size,
    align: 1,
    encode: (id, buf, offset) => void buf.write(id, offset, size, 'hex'),
    decode: (buf, offset) => buf.toString('hex', offset, offset + size),
  };
}

/** Ids of a `__be32` (an IPv4 address): the number. */
export const be32Ids: Codec<number> = {
  size: 4,
  align: 4,
  encode: (id, buf, offset) => void buf.writeUInt32BE(id, offset),
  decode: (buf, offset) => buf.readUInt32BE(offset),
};

/** How one map's keys and values are read and written as ids. */
export interface IdCodecs<I, W> {
  key: Codec<I>;
  value: Codec<W>;
}

/** Pure: typed entries as a table, through the map's codecs (the last of equal keys wins, as in the kernel). */
export function tableOf<K, V, I, W>(
  map: { key: Codec<K>; value: Codec<V> },
  ids: IdCodecs<I, W>,
  entries: Iterable<readonly [K, V]>,
): Map<I, W> {
  const out = new Map<I, W>();
  const key = Buffer.alloc(map.key.size);
  const value = Buffer.alloc(map.value.size);
  for (const [k, v] of entries) {
    key.fill(0);
    value.fill(0);
    map.key.encode(k, key, 0);
    map.value.encode(v, value, 0);
    out.set(ids.key.decode(key, 0), ids.value.decode(value, 0));
  }
  return out;
}

/** What a mirror needs of a map: its entries as ids (a map in memory in the pure tests). */
export interface IdMap<I, W> {
  read(): Iterable<readonly [I, W]>;
  /** Each returns how many entries it wrote or deleted. */
  update(entries: readonly (readonly [I, W])[]): number;
  delete(keys: readonly I[]): number;
}

// LPM tries have no batch operations in the kernel.
const batchable = (map: BpfMap<unknown, unknown>) => map.type !== MapType.LpmTrie;

/** A view of the same map whose keys and values are ids: nothing is decoded to be encoded again. */
export function idMap<I, W>(map: BpfMap<unknown, unknown>, ids: IdCodecs<I, W>): IdMap<I, W> {
  const view = BpfMap.fromFd(map.fd, ids.key, ids.value, false);
  const batch = batchable(map);
  return {
    read: () => (batch ? view.lookupBatch() : view.entries()),
    update(entries) {
      if (batch) return view.updateBatch(entries);
      for (const [k, v] of entries) view.update(k, v);
      return entries.length;
    },
    delete(keys) {
      if (batch) return view.deleteBatch(keys);
      return keys.filter((k) => view.delete(k)).length;
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
  private known?: MutableTable<I, W>;

  /** `empty`: a new table of the kind this map's ids suit. */
  constructor(
    private readonly map: IdMap<I, W>,
    private readonly empty: () => MutableTable<I, W> = () => new Map<I, W>(),
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
      upsert: () =>
        this.guard(() => {
          if (diff.upserts.length === 0) return 0;
          const written = this.map.update(diff.upserts);
          for (const [k, v] of diff.upserts) known.set(k, v);
          return written;
        }),
      delete: () =>
        this.guard(() => {
          if (diff.deletes.length === 0) return 0;
          const deleted = this.map.delete(diff.deletes);
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

  private readTable(): MutableTable<I, W> {
    const out = this.empty();
    for (const [k, v] of this.map.read()) out.set(k, v);
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
export function syncMap<K, V>(
  map: BpfMap<K, V>,
  desired: Iterable<readonly [K, V]>,
  phase: 'upsert' | 'delete' | 'both' = 'both',
): SyncResult {
  const ids = { key: hexIds(map.key.size), value: hexIds(map.value.size) };
  const plan = new MapMirror(idMap(map as BpfMap<unknown, unknown>, ids)).plan(tableOf(map, ids, desired), true);
  return { written: phase === 'delete' ? 0 : plan.upsert(), deleted: phase === 'upsert' ? 0 : plan.delete() };
}
