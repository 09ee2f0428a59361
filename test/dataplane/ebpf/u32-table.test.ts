import assert from 'node:assert/strict';
import fc from 'fast-check';
import { U32Table } from '../../../src/dataplane/ebpf/u32-table';

describe('U32Table (pure)', () => {
  it('answers as a Map would through any sequence of sets and deletes, growing and reusing deleted slots', () => {
    // Few distinct keys, so keys come back after being deleted; the full 32-bit range at both ends.
    const key = fc.oneof(fc.integer({ min: 0, max: 40 }), fc.constantFrom(0xffffffff, 0x80000000, 0x0a320001));
    const op = fc.record({ del: fc.boolean(), key, value: fc.integer({ min: 0, max: 0xffffffff }) });
    fc.assert(
      fc.property(fc.array(op, { maxLength: 200 }), (ops) => {
        const table = new U32Table(2);
        const model = new Map<number, number>();
        for (const { del, key: k, value } of ops) {
          if (del) assert.equal(table.delete(k), model.delete(k));
          else {
            table.set(k, value);
            model.set(k, value);
          }
          assert.equal(table.size, model.size);
          assert.equal(table.get(k), model.get(k));
        }
        const seen = new Map<number, number>();
        table.forEach((v, k) => seen.set(k, v));
        assert.deepEqual(new Map([...seen].sort(([a], [b]) => a - b)), new Map([...model].sort(([a], [b]) => a - b)));
        for (let k = 0; k <= 40; k++) assert.equal(table.has(k), model.has(k), `key ${k}`);
      }),
    );
  });
});
