import assert from 'node:assert/strict';
import fc from 'fast-check';
import { BpfMap, MapFlags, MapType, ipv4, lpmKey, u32 } from '../../src/bpf';
import { diffTables, syncMap } from '../../src/datapath/map-sync';
import { requireRoot } from '../support/kernel';

const hex = (n: number) => Buffer.from([n]).toString('hex');

describe('map diff (pure)', () => {
  it('writes what is new or changed and deletes what is not wanted, nothing else', () => {
    fc.assert(fc.property(fc.dictionary(fc.integer({ min: 0, max: 30 }).map(String), fc.integer({ min: 0, max: 3 })), fc.dictionary(fc.integer({ min: 0, max: 30 }).map(String), fc.integer({ min: 0, max: 3 })), (cur, want) => {
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
    }));
  });
});

describe('syncMap (real kernel)', function () {
  requireRoot(this);

  it('makes a hash map hold exactly the desired entries, in batches, and a second run writes nothing', () => {
    const map = BpfMap.create({ type: MapType.Hash, name: 'sync_hash', key: u32, value: u32, maxEntries: 20_000 });
    try {
      map.updateBatch([[1, 10], [2, 20], [3, 30]]);
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
    const map = BpfMap.create({ type: MapType.LpmTrie, name: 'sync_lpm', key: lpmKey(ipv4), value: u32, maxEntries: 16, flags: MapFlags.NoPrealloc });
    try {
      map.update({ prefixLen: 16, addr: '10.9.0.0' }, 9);
      const desired = [[{ prefixLen: 8, addr: '10.0.0.0' }, 1], [{ prefixLen: 24, addr: '10.1.2.0' }, 2]] as const;
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
