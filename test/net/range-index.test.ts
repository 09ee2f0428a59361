import assert from 'node:assert/strict';
import fc from 'fast-check';
import { type Cidr, cidrsOverlap, formatCidr } from '../../src/net/cidr';
import { RangeIndex } from '../../src/net/range-index';

/** IPv4 and IPv6 networks in a small space, so that many overlap. */
const cidrs: fc.Arbitrary<Cidr> = fc.oneof(
  fc.record({ prefix: fc.integer({ min: 20, max: 32 }), offset: fc.integer({ min: 0, max: 4095 }) }).map(({ prefix, offset }) => {
    const size = 1n << BigInt(32 - prefix);
    return { family: 4 as const, base: ((0x0a000000n + BigInt(offset) * 16n) / size) * size, prefix };
  }),
  fc.record({ prefix: fc.integer({ min: 116, max: 128 }), offset: fc.integer({ min: 0, max: 4095 }) }).map(({ prefix, offset }) => {
    const size = 1n << BigInt(128 - prefix);
    return { family: 6 as const, base: ((BigInt(offset) * 16n) / size) * size, prefix };
  }),
);

describe('RangeIndex', () => {
  it('finds exactly the owners a pairwise scan finds, networks of one owner merging (property)', () => {
    fc.assert(
      fc.property(fc.array(fc.record({ cidr: cidrs, owner: fc.integer({ min: 0, max: 3 }) }), { maxLength: 200 }), (inserts) => {
        const index = new RangeIndex<number>();
        const added: { cidr: Cidr; owner: number }[] = [];
        for (const { cidr, owner } of inserts) {
          const expected = new Set(added.filter((a) => cidrsOverlap(a.cidr, cidr)).map((a) => a.owner));
          assert.deepEqual(new Set(index.overlapping(cidr)), expected, formatCidr(cidr));
          if ([...expected].every((o) => o === owner)) {
            index.add(cidr, owner);
            added.push({ cidr, owner });
          }
        }
      }),
    );
  });

  it('keeps the families apart: 10.0.0.0/8 and ::a00:0/104 hold the same numbers', () => {
    const index = new RangeIndex<string>();
    index.add({ family: 4, base: 0x0a000000n, prefix: 8 }, 'v4');
    assert.deepEqual(index.overlapping({ family: 6, base: 0x0a000000n, prefix: 104 }), []);
    index.add({ family: 6, base: 0x0a000000n, prefix: 104 }, 'v6');
    assert.deepEqual(index.overlapping({ family: 4, base: 0x0a010000n, prefix: 16 }), ['v4']);
    assert.deepEqual(index.overlapping({ family: 6, base: 0x0a010000n, prefix: 112 }), ['v6']);
  });
});
