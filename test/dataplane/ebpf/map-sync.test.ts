import assert from 'node:assert/strict';
import fc from 'fast-check';
import { BpfMap, MapFlags, MapType, ipv4, lpmKey, u32 } from '../../../src/native';
import { type IdMap, MapMirror, diffTables, syncMap } from '../../../src/dataplane/ebpf/map-sync';
import { requireRoot } from '../../support/kernel';

const hex = (n: number) => Buffer.from([n]).toString('hex');

describe('map diff (pure)', () => {
  it('writes what is new or changed and deletes what is not wanted, nothing else', () => {
    fc.assert(
      fc.property(
        fc.dictionary(fc.integer({ min: 0, max: 30 }).map(String), fc.integer({ min: 0, max: 3 })),
        fc.dictionary(fc.integer({ min: 0, max: 30 }).map(String), fc.integer({ min: 0, max: 3 })),
        (cur, want) => {
          const enc = (d: Record<string, number>) => new Map(Object.entries(d).map(([k, v]) => [hex(Number(k)), hex(v)]));
          const current = enc(cur);
          const desired = enc(want);
          const diff = diffTables(current, desired);
          const result = new Map<string, string>(current);
          for (const k of diff.deletes) result.delete(k);
          for (const [k, v] of diff.upserts) result.set(k, v);
          assert.deepEqual(result, desired);
          for (const [k, v] of diff.upserts) assert.notEqual(current.get(k), v, 'no write of an unchanged entry');
          assert.deepEqual(diffTables(desired, desired), { upserts: [], deletes: [] });
        },
      ),
    );
  });
});

/** A map in memory that counts what the mirror does to it. */
function memoryMap() {
  const data = new Map<string, string>();
  const log = { reads: 0, upserts: [] as [string, string][], deletes: [] as string[], failNextUpdate: false };
  const map: IdMap<string, string> = {
    read: () => (log.reads++, [...data]),
    update(entries) {
      if (log.failNextUpdate) {
        log.failNextUpdate = false;
        data.set(entries[0]![0], entries[0]![1]);
        throw new Error('E2BIG, after one entry');
      }
      for (const [k, v] of entries) {
        data.set(k, v);
        log.upserts.push([k, v]);
      }
      return entries.length;
    },
    delete(keys) {
      for (const k of keys) {
        data.delete(k);
        log.deletes.push(k);
      }
      return keys.length;
    },
  };
  return { data, log, map };
}

const table = fc
  .dictionary(fc.integer({ min: 0, max: 20 }).map(hex), fc.integer({ min: 0, max: 3 }).map(hex))
  .map((d) => new Map(Object.entries(d)));
const sorted = <T>(xs: T[]) => [...xs].map((x) => JSON.stringify(x)).sort();

describe('map mirror (pure)', () => {
  it('writes, from memory alone, exactly what a full read and diff would, and reads the map only when told to', () => {
    fc.assert(
      fc.property(fc.array(fc.record({ desired: table, read: fc.boolean() }), { minLength: 1, maxLength: 8 }), (steps) => {
        const { data, log, map } = memoryMap();
        const mirror = new MapMirror(map);
        let reads = 0;
        steps.forEach(({ desired, read }, i) => {
          const full = diffTables(new Map(data), desired);
          log.upserts = [];
          log.deletes = [];
          mirror.sync(desired, read);
          if (i === 0 || read) reads++;
          assert.deepEqual(sorted(log.upserts), sorted(full.upserts), 'the same writes as a full diff');
          assert.deepEqual(sorted(log.deletes), sorted(full.deletes), 'the same deletes as a full diff');
          assert.deepEqual(data, desired);
          assert.equal(log.reads, reads, 'a read only at the first sync and when told');
        });
      }),
    );
  });

  it('leaves a change by hand alone until a read, which repairs it; entries not changed by hand are always right', () => {
    const edit = fc.record({ key: fc.integer({ min: 0, max: 20 }).map(hex), value: fc.option(fc.integer({ min: 0, max: 3 }).map(hex)) });
    fc.assert(
      fc.property(
        fc.array(fc.record({ edits: fc.array(edit, { maxLength: 3 }), desired: table, read: fc.boolean() }), {
          minLength: 1,
          maxLength: 8,
        }),
        (steps) => {
          const { data, map } = memoryMap();
          const mirror = new MapMirror(map);
          mirror.sync(new Map(), true);
          let edited = new Set<string>();
          for (const { edits, desired, read } of steps) {
            for (const { key, value } of edits) {
              if (value === null) data.delete(key);
              else data.set(key, value);
              edited.add(key);
            }
            mirror.sync(desired, read);
            if (read) edited = new Set();
            for (const key of new Set([...desired.keys(), ...data.keys()]))
              if (!edited.has(key)) assert.equal(data.get(key), desired.get(key), `entry ${key}`);
            if (read) assert.deepEqual(data, desired);
          }
        },
      ),
    );
  });

  it('reads the map again after a failed write: what the kernel holds then is unsure', () => {
    const { data, log, map } = memoryMap();
    const mirror = new MapMirror(map);
    mirror.sync(new Map([['01', '01']]), true);
    log.failNextUpdate = true;
    assert.throws(
      () =>
        mirror.sync(
          new Map([
            ['01', '01'],
            ['02', '02'],
            ['03', '03'],
          ]),
          false,
        ),
      /E2BIG/,
    );
    assert.equal(log.reads, 1);
    // The spec goes back to what memory still says: only a read sees the entry the failed batch left.
    mirror.sync(new Map([['01', '01']]), false);
    assert.equal(log.reads, 2, 'read again');
    assert.deepEqual(data, new Map([['01', '01']]));
  });
});

describe('syncMap (real kernel)', function () {
  requireRoot(this);

  it('makes a hash map hold exactly the desired entries, in batches, and a second run writes nothing', () => {
    const map = BpfMap.create({ type: MapType.Hash, name: 'sync_hash', key: u32, value: u32, maxEntries: 20_000 });
    try {
      map.updateBatch([
        [1, 10],
        [2, 20],
        [3, 30],
      ]);
      const desired = Array.from({ length: 10_000 }, (_, i) => [i + 2, i === 0 ? 20 : i] as const);
      assert.deepEqual(syncMap(map, desired), { written: 9_999, deleted: 1 });
      assert.equal(map.lookup(1), undefined);
      assert.equal(map.lookup(2), 20);
      assert.equal(map.lookup(10_001), 9_999);
      assert.deepEqual(syncMap(map, desired), { written: 0, deleted: 0 });
    } finally {
      map.close();
    }
  });

  it('works on LPM tries (no kernel batches) and honours the phases', () => {
    const map = BpfMap.create({
      type: MapType.LpmTrie,
      name: 'sync_lpm',
      key: lpmKey(ipv4),
      value: u32,
      maxEntries: 16,
      flags: MapFlags.NoPrealloc,
    });
    try {
      map.update({ prefixLen: 16, addr: '10.9.0.0' }, 9);
      const desired = [
        [{ prefixLen: 8, addr: '10.0.0.0' }, 1],
        [{ prefixLen: 24, addr: '10.1.2.0' }, 2],
      ] as const;
      assert.deepEqual(syncMap(map, desired, 'upsert'), { written: 2, deleted: 0 });
      assert.equal(map.lookup({ prefixLen: 32, addr: '10.9.1.1' }), 9, 'upsert phase deletes nothing');
      assert.deepEqual(syncMap(map, desired, 'delete'), { written: 0, deleted: 1 });
      assert.equal(map.lookup({ prefixLen: 32, addr: '10.9.1.1' }), 1);
      assert.equal(map.lookup({ prefixLen: 32, addr: '10.1.2.3' }), 2);
      assert.deepEqual(syncMap(map, desired), { written: 0, deleted: 0 });
    } finally {
      map.close();
    }
  });
});
