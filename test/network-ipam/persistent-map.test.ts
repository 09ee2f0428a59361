import assert from 'node:assert/strict';
import fc from 'fast-check';
import { PersistentMap } from '../../src/network-ipam/persistent-map';

describe('PersistentMap', () => {
  it('behaves like a Map for random operation sequences, and old versions never change', () => {
    const op = fc.oneof(
      fc.record({ kind: fc.constant('set' as const), key: fc.string({ maxLength: 3 }), value: fc.integer() }),
      fc.record({ kind: fc.constant('delete' as const), key: fc.string({ maxLength: 3 }) }),
    );
    fc.assert(
      fc.property(fc.array(op, { maxLength: 300 }), (ops) => {
        const model = new Map<string, number>();
        let map = PersistentMap.empty<number>();
        for (const o of ops) {
          const before = map;
          const snapshot = new Map(before.entries());
          if (o.kind === 'set') {
            model.set(o.key, o.value);
            map = map.set(o.key, o.value);
          } else {
            model.delete(o.key);
            map = map.delete(o.key);
          }
          assert.deepEqual(new Map(before.entries()), snapshot);
          assert.equal(map.size, model.size);
        }
        assert.deepEqual(new Map(map.entries()), model);
        for (const [k, v] of model) assert.equal(map.get(k), v);
      }),
    );
  });

  it('keeps both keys when their 32-bit hashes collide', () => {
    // FNV-1a("10.0.107.237") === FNV-1a("10.2.219.40")
    let map = PersistentMap.from<number>([
      ['10.0.107.237', 1],
      ['10.2.219.40', 2],
      ['10.0.0.1', 3],
    ]);
    assert.equal(map.get('10.0.107.237'), 1);
    assert.equal(map.get('10.2.219.40'), 2);
    map = map.delete('10.0.107.237');
    assert.equal(map.get('10.0.107.237'), undefined);
    assert.equal(map.get('10.2.219.40'), 2);
    assert.equal(map.size, 2);
  });
});
