import assert from 'node:assert/strict';
import fc from 'fast-check';
import { AddressSet } from '../../src/net/address-set';

function modelLowestFree(used: Set<bigint>, capacity: bigint): bigint | undefined {
  for (let i = 0n; i < capacity; i++) if (!used.has(i)) return i;
  return undefined;
}

describe('AddressSet', () => {
  it('finds the lowest free offset like a linear scan, for random add/delete sequences and capacities', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(1n, 2n, 31n, 32n, 33n, 1024n, 1025n, 3000n),
        fc.array(fc.record({ add: fc.boolean(), at: fc.nat() }), { maxLength: 400 }),
        (capacity, ops) => {
          const model = new Set<bigint>();
          let set = AddressSet.empty(capacity);
          for (const { add, at } of ops) {
            const offset = BigInt(at) % capacity;
            if (add) {
              model.add(offset);
              set = set.add(offset);
            } else {
              model.delete(offset);
              set = set.delete(offset);
            }
            assert.equal(set.size, model.size);
            assert.equal(set.lowestFree(), modelLowestFree(model, capacity));
          }
        },
      ),
    );
  });

  it('fills a whole capacity in order and then reports full', () => {
    let set = AddressSet.empty(1100n);
    for (let i = 0n; i < 1100n; i++) {
      assert.equal(set.lowestFree(), i);
      set = set.add(i);
    }
    assert.equal(set.lowestFree(), undefined);
    set = set.delete(517n);
    assert.equal(set.lowestFree(), 517n);
  });

  it('works on a 2^64 IPv6 range without materialising it', () => {
    let set = AddressSet.empty(1n << 64n);
    set = set
      .add(0n)
      .add(1n)
      .add((1n << 64n) - 1n);
    assert.equal(set.lowestFree(), 2n);
    assert.equal(set.has((1n << 64n) - 1n), true);
    assert.throws(() => set.add(1n << 64n), RangeError);
  });
});
