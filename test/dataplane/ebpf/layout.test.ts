import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { StructCodec } from '../../../src/native';
import { native } from '../../../src/native/binding';
import {
  DROP_REASON_COUNT,
  DropReason,
  Flags,
  PREFIX_LEN_NONE,
  PrefixKind,
  TailCall,
  datapathObjectPath,
  maps,
  structs,
} from '../../../src/dataplane/ebpf/layout';
import { assertLayoutMatchesBtf } from '../../binding/layout.test';
import { ProbeState, ProbeType, probe, probeMagic, probeVersion } from '../../../src/liveness/wire';
import { requireRoot, testObject } from '../../support/kernel';
import { Datapath } from './fixture';

/** C's NO_NATMAPPING and TypeScript's NoNatMapping compare as `nonatmapping`. */
const plain = (name: string) => name.replace(/_/g, '').toLowerCase();
const enumEntries = (e: Record<string, string | number>) =>
  Object.fromEntries(
    Object.entries(e)
      .filter(([, v]) => typeof v === 'number')
      .map(([k, v]) => [plain(k), v]),
  );

/** TypeScript fields are the C members in camelCase. */
const snake = (name: string) => name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
const asC = (codec: StructCodec<unknown>): StructCodec<unknown> => ({
  ...codec,
  fields: codec.fields.map((f) => ({ ...f, name: snake(f.name) })),
});

describe('datapath: C/TypeScript layouts (BTF of dist/bpf/strait.o)', () => {
  for (const [name, codec] of Object.entries(structs)) {
    it(`struct ${name}`, () => assertLayoutMatchesBtf(datapathObjectPath, name, asC(codec)));
  }

  it('struct strait_probe (the liveness probe on the wire, src/liveness/wire.ts) and its constants', () => {
    assertLayoutMatchesBtf(testObject('wire_types'), 'strait_probe', asC(probe));
    const header = readFileSync(join(__dirname, '..', '..', '..', '..', 'bpf', 'lib', 'common.h'), 'utf8');
    const define = (name: string) => Number(new RegExp(`#define ${name} (0x[0-9a-f]+|\\d+)`).exec(header)?.[1]);
    assert.equal(define('STRAIT_PROBE_MAGIC'), probeMagic);
    assert.equal(define('STRAIT_PROBE_VERSION'), probeVersion);
    assert.equal(define('STRAIT_PROBE_REQUEST'), ProbeType.Request);
    assert.equal(define('STRAIT_PROBE_REPLY'), ProbeType.Reply);
    assert.match(header, new RegExp(`STRAIT_PROBE_DOWN = ${ProbeState.Down},[\\s\\S]*STRAIT_PROBE_READY = ${ProbeState.Ready},`));
  });

  it('has the drop reasons, prefix kinds and flags of common.h (read from the header: the binding reads only structs from BTF, and macros are not in it)', () => {
    const header = readFileSync(join(__dirname, '..', '..', '..', '..', 'bpf', 'lib', 'common.h'), 'utf8');
    const constants = (prefix: string) =>
      Object.fromEntries([...header.matchAll(new RegExp(`${prefix}_(\\w+) = (\\d+),`, 'g'))].map((m) => [plain(m[1]!), Number(m[2])]));
    const { max, ...reasons } = constants('STRAIT_DROP');
    assert.deepEqual(reasons, enumEntries(DropReason));
    assert.equal(max, DROP_REASON_COUNT);
    assert.deepEqual(constants('STRAIT_PREFIX'), enumEntries(PrefixKind));
    const { max: slots, ...tailCalls } = constants('STRAIT_PROG');
    assert.deepEqual(tailCalls, enumEntries(TailCall));
    assert.equal(slots, Object.keys(tailCalls).length);
    assert.match(header, new RegExp(`#define STRAIT_F_GATEWAY \\(1u << ${Math.log2(Flags.Gateway)}\\)`));
    assert.match(header, new RegExp(`#define STRAIT_F_STANDBY \\(1u << ${Math.log2(Flags.Standby)}\\)`));
    assert.match(header, new RegExp(`#define STRAIT_PREFIX_LEN_NONE ${PREFIX_LEN_NONE}\\n`));
    // Longer than an IPv6 address: no family has a network of that length.
    assert.ok(PREFIX_LEN_NONE > 128);
  });

  describe('maps (real kernel)', function () {
    requireRoot(this);
    it('every map of the object is described, with codecs of the kernel sizes', async () => {
      const dp = await Datapath.load();
      try {
        assert.deepEqual(
          dp.obj
            .maps()
            .filter((m) => m.pinPath !== null) // a program's own scratch (strait_scratch6) is not pinned
            .map((m) => m.name)
            .filter((n) => n.startsWith('strait_'))
            .sort(),
          Object.values(maps)
            .map((m) => m.name)
            .sort(),
        );
        assert.equal(dp.maps.drops.maxEntries, DROP_REASON_COUNT);
      } finally {
        dp.close();
      }
    });
  });

  it('names real C structs (a wrong name fails)', () => {
    assert.throws(
      () => native().btfStruct(datapathObjectPath, 'strait_no_such'),
      (e: Error & { code?: string }) => e.code === 'ENOENT',
    );
  });
});
