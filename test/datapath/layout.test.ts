import assert from 'node:assert/strict';
import type { StructCodec } from '../../src/bpf';
import { native } from '../../src/bpf/native';
import { DROP_REASON_COUNT, DropReason, datapathObjectPath, maps, structs } from '../../src/datapath/layout';
import { assertLayoutMatchesBtf } from '../binding/layout.test';
import { requireRoot } from '../support/kernel';
import { Datapath } from './fixture';

/** TypeScript fields are the C members in camelCase. */
const snake = (name: string) => name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
const asC = (codec: StructCodec<unknown>): StructCodec<unknown> => ({ ...codec, fields: codec.fields.map((f) => ({ ...f, name: snake(f.name) })) });

describe('datapath: C/TypeScript layouts (BTF of dist/bpf/strait.o)', () => {
  for (const [name, codec] of Object.entries(structs)) {
    it(`struct ${name}`, () => assertLayoutMatchesBtf(datapathObjectPath, name, asC(codec)));
  }

  it('has one name per drop reason, up to STRAIT_DROP_MAX', () => {
    const names = Object.keys(DropReason).filter((k) => Number.isNaN(Number(k)));
    assert.equal(names.length, DROP_REASON_COUNT);
    assert.deepEqual(names.map((n) => DropReason[n as keyof typeof DropReason]), [...Array(DROP_REASON_COUNT).keys()]);
  });

  describe('maps (real kernel)', function () {
    requireRoot(this);
    it('every map of the object is described, with codecs of the kernel sizes', async () => {
      const dp = await Datapath.load();
      try {
        assert.deepEqual(dp.obj.maps().map((m) => m.name).filter((n) => n.startsWith('strait_')).sort(), Object.values(maps).map((m) => m.name).sort());
        assert.equal(dp.maps.drops.maxEntries, DROP_REASON_COUNT);
      } finally {
        dp.close();
      }
    });
  });

  it('names real C structs (a wrong name fails)', () => {
    assert.throws(() => native().btfStruct(datapathObjectPath, 'strait_no_such'), (e: Error & { code?: string }) => e.code === 'ENOENT');
  });
});
