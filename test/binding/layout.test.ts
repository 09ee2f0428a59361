import assert from 'node:assert/strict';
import type { StructCodec } from '../../src/native';
import { native } from '../../src/native/binding';
import { testObject } from '../support/kernel';
import { testCounter, testFlowKey, testFlowValue } from './layout';

/** Checks that a TypeScript struct codec has the C struct's size and member offsets, read from BTF. */
export function assertLayoutMatchesBtf(objectPath: string, cName: string, codec: StructCodec<unknown>): void {
  const btf = native().btfStruct(objectPath, cName);
  assert.deepEqual(
    { size: codec.size, members: codec.fields.map((f) => ({ name: f.name.replace(/^_pad\d*$/, '_pad'), offset: f.offset, size: f.size })) },
    { size: btf.size, members: btf.members.map((m) => ({ name: m.name.replace(/^_pad\d*$/, '_pad'), offset: m.offset, size: m.size })) },
    `struct ${cName}: TypeScript layout differs from the C layout in ${objectPath}`,
  );
}

describe('C/TypeScript struct layouts (BTF)', () => {
  it('match for the binding test structs', () => {
    assertLayoutMatchesBtf(testObject('binding_test'), 'test_flow_key', testFlowKey);
    assertLayoutMatchesBtf(testObject('binding_test'), 'test_flow_value', testFlowValue);
    assertLayoutMatchesBtf(testObject('binding_test'), 'test_counter', testCounter);
  });

  it('catch a mismatch', async () => {
    const { struct, u32, u8 } = await import('../../src/native');
    assert.throws(
      () => assertLayoutMatchesBtf(testObject('binding_test'), 'test_counter', struct({ packets: u32, bytes: u8 })),
      /TypeScript layout differs/,
    );
    assert.throws(
      () => native().btfStruct(testObject('binding_test'), 'no_such_struct'),
      (e: Error & { code?: string }) => e.code === 'ENOENT',
    );
  });
});
