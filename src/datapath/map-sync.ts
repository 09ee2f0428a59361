/**
 * Reconciling one BPF map: read what the kernel has, diff it with what is wanted, write the difference
 * in batches. Comparison is on encoded bytes, so "equal" means equal to the kernel, and running it twice
 * writes nothing the second time.
 */
import { BpfMap, MapType, bytes } from '../bpf';

export interface MapDiff {
  /** Encoded keys and values to write (new or changed). */
  upserts: [Buffer, Buffer][];
  /** Encoded keys to delete. */
  deletes: Buffer[];
}

/** Pure: what turns `current` into `desired` (both as encoded key → encoded value). */
export function diffEncoded(current: ReadonlyMap<string, Buffer>, desired: ReadonlyMap<string, Buffer>): MapDiff {
  const upserts: [Buffer, Buffer][] = [];
  const deletes: Buffer[] = [];
  for (const [key, value] of desired) {
    const have = current.get(key);
    if (!have || !have.equals(value)) upserts.push([Buffer.from(key, 'hex'), value]);
  }
  for (const key of current.keys()) if (!desired.has(key)) deletes.push(Buffer.from(key, 'hex'));
  return { upserts, deletes };
}

function encodeEntries<K, V>(map: BpfMap<K, V>, entries: Iterable<readonly [K, V]>): Map<string, Buffer> {
  const out = new Map<string, Buffer>();
  for (const [k, v] of entries) {
    const key = Buffer.alloc(map.key.size);
    map.key.encode(k, key, 0);
    const value = Buffer.alloc(map.value.size);
    map.value.encode(v, value, 0);
    out.set(key.toString('hex'), value);
  }
  return out;
}

// LPM tries have no batch operations in the kernel.
const batchable = (map: BpfMap<unknown, unknown>) => map.type !== MapType.LpmTrie;

export interface SyncResult {
  written: number;
  deleted: number;
}

/** A byte view of the same map: the diff works on bytes, so nothing is decoded to be encoded again. */
const byteView = <K, V>(map: BpfMap<K, V>) => BpfMap.fromFd(map.fd, bytes(map.keySize), bytes(map.value.size), false);

/** What the map holds now, encoded. */
function readEncoded(raw: BpfMap<Buffer, Buffer>): Map<string, Buffer> {
  const out = new Map<string, Buffer>();
  for (const [k, v] of batchable(raw as BpfMap<unknown, unknown>) ? raw.lookupBatch() : raw.entries()) out.set(k.toString('hex'), v);
  return out;
}

/**
 * Makes `map` hold exactly `desired`. With `phase: 'upsert'` only writes, with `phase: 'delete'` only
 * deletes: callers order the phases across maps so no intermediate state misroutes.
 */
export function syncMap<K, V>(map: BpfMap<K, V>, desired: Iterable<readonly [K, V]>, phase: 'upsert' | 'delete' | 'both' = 'both'): SyncResult {
  const raw = byteView(map);
  const diff = diffEncoded(readEncoded(raw), encodeEntries(map, desired));
  const batch = batchable(map as BpfMap<unknown, unknown>);
  let written = 0;
  let deleted = 0;
  if (phase !== 'delete' && diff.upserts.length) {
    if (batch) written = raw.updateBatch(diff.upserts);
    else for (const [k, v] of diff.upserts) (raw.update(k, v), written++);
  }
  if (phase !== 'upsert' && diff.deletes.length) {
    if (batch) deleted = raw.deleteBatch(diff.deletes);
    else for (const k of diff.deletes) if (raw.delete(k)) deleted++;
  }
  return { written, deleted };
}
