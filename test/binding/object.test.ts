import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { BpfError, BpfObject, u32, u8 } from '../../src/native';
import { requireRoot, tempPinDir, testObject } from '../support/kernel';
import { testFlowKey, testFlowValue } from './layout';

const TC_ACT_OK = 0;
const TC_ACT_SHOT = 2;

describe('BpfObject (real kernel)', function () {
  requireRoot(this);
  let pins: ReturnType<typeof tempPinDir>;
  beforeEach(() => {
    pins = tempPinDir();
  });
  afterEach(() => pins.cleanup());

  const load = (configure?: (o: BpfObject) => void) => BpfObject.load(testObject('binding_test'), { pinRoot: pins.dir }, configure);

  it('lists maps, programs and globals before load', () => {
    const obj = BpfObject.open(testObject('binding_test'), { pinRoot: pins.dir });
    try {
      const maps = Object.fromEntries(obj.maps().map((m) => [m.name, m]));
      assert.deepEqual(
        {
          type: maps.test_flows!.type,
          keySize: maps.test_flows!.keySize,
          valueSize: maps.test_flows!.valueSize,
          maxEntries: maps.test_flows!.maxEntries,
          pinPath: maps.test_flows!.pinPath,
          fd: maps.test_flows!.fd,
        },
        { type: 1, keySize: 16, valueSize: 24, maxEntries: 1024, pinPath: join(pins.dir, 'test_flows'), fd: -1 },
      );
      assert.equal(maps.test_routes!.type, 11);
      assert.equal(maps.test_outer!.type, 12);
      assert.deepEqual(
        obj.programs().map((p) => [p.name, p.section, p.type]),
        [['test_prog', 'tc', 3]],
      );
      const globals = obj
        .globals()
        .map((g) => [g.name, g.size, g.readOnly])
        .sort();
      assert.deepEqual(globals, [
        ['test_marker', 1, true],
        ['test_retval', 4, true],
      ]);
    } finally {
      obj.close();
    }
  });

  it('sets const volatile globals before load, and the program sees them', async () => {
    const obj = await load((o) => {
      o.setGlobal('test_retval', u32, TC_ACT_SHOT);
      o.setGlobal('test_marker', u8, 0xab);
    });
    try {
      const r = obj.program('test_prog').testRun(Buffer.alloc(64));
      assert.equal(r.retval, TC_ACT_SHOT);
      assert.equal(r.data[0], 0xab);
      assert.equal(r.data.length, 64);
    } finally {
      obj.close();
    }
    const plain = await load();
    try {
      const r = plain.program('test_prog').testRun(Buffer.alloc(64));
      assert.equal(r.retval, TC_ACT_OK);
      assert.equal(r.data[0], 0);
    } finally {
      plain.close();
    }
  });

  it('refuses a global of the wrong size or name, naming it', () => {
    const obj = BpfObject.open(testObject('binding_test'));
    try {
      assert.throws(
        () => obj.setGlobal('test_retval', u8, 1),
        (e: BpfError) => e instanceof BpfError && e.code === 'EINVAL' && /test_retval' is 4 bytes, value is 1/.test(e.message),
      );
      assert.throws(
        () => obj.setGlobal('nope', u32, 1),
        (e: BpfError) => e.code === 'ENOENT' && /no global variable named 'nope'/.test(e.message) && e.operation === 'set global',
      );
    } finally {
      obj.close();
    }
  });

  it('sets max_entries before load and refuses changes after', async () => {
    const obj = await load((o) => o.setMaxEntries('test_flows', 77));
    try {
      assert.equal(obj.map('test_flows', testFlowKey, testFlowValue).maxEntries, 77);
      assert.throws(
        () => obj.setMaxEntries('test_flows', 5),
        (e: BpfError) => e.code === 'EALREADY',
      );
      assert.throws(
        () => obj.setGlobal('test_retval', u32, 1),
        (e: BpfError) => e.code === 'EALREADY',
      );
    } finally {
      obj.close();
    }
  });

  it('pins maps by name and reuses the pinned map at the next load', async () => {
    const key = { saddr: '10.0.0.1', daddr: '10.0.0.2', sport: 1, dport: 2, proto: 6, _pad: [0, 0, 0] };
    const first = await load();
    first.map('test_flows', testFlowKey, testFlowValue).update(key, { packets: 5n, flags: 1, mac: '02:00:00:00:00:01' });
    const firstId = first.map('test_flows', testFlowKey, testFlowValue).info.id;
    first.close();
    assert.ok(existsSync(join(pins.dir, 'test_flows')), 'map stays pinned after close');
    const second = await load();
    try {
      const flows = second.map('test_flows', testFlowKey, testFlowValue);
      assert.equal(flows.info.id, firstId, 'the same kernel map');
      assert.deepEqual(flows.lookup(key), { packets: 5n, flags: 1, mac: '02:00:00:00:00:01' });
    } finally {
      second.close();
    }
  });

  it('refuses an incompatible pinned map with an error naming the field', async () => {
    (await load()).close();
    await assert.rejects(
      load((o) => o.setMaxEntries('test_flows', 10)),
      (e: BpfError) =>
        e instanceof BpfError &&
        e.code === 'EINVAL' &&
        e.operation === 'load object' &&
        /map 'test_flows' pinned at .*test_flows has max_entries 1024 but the object declares 10/.test(e.message),
    );
  });

  it('moves a pin with setPinPath and reuses a map given by fd', async () => {
    const donor = await load((o) => o.setPinPath('test_flows', join(pins.dir, 'elsewhere')));
    try {
      assert.ok(existsSync(join(pins.dir, 'elsewhere')));
      assert.ok(!existsSync(join(pins.dir, 'test_flows')));
      const flows = donor.map('test_flows', testFlowKey, testFlowValue);
      const reuser = await load((o) => {
        o.setPinPath('test_flows', null);
        o.reuseMap('test_flows', flows);
      });
      try {
        assert.equal(reuser.map('test_flows', testFlowKey, testFlowValue).info.id, flows.info.id);
      } finally {
        reuser.close();
      }
    } finally {
      donor.close();
    }
  });

  it('rejects a program the verifier refuses, with the verifier log', async () => {
    await assert.rejects(
      BpfObject.load(testObject('rejected')),
      (e: BpfError) =>
        e instanceof BpfError &&
        e.code === 'EACCES' &&
        e.operation === 'load object' &&
        typeof e.verifierLog === 'string' &&
        /invalid access to packet/.test(e.verifierLog) &&
        /verifier: R1 offset is outside of the packet/.test(e.message),
    );
  });

  it('loads without blocking the event loop', async () => {
    // Event-loop turns while the load is pending: a load done on the calling thread (even one that
    // returns a promise) resolves before the loop turns once; one done on a worker thread takes
    // milliseconds of verifier and map work while the loop keeps turning.
    let turns = 0;
    let loading = true;
    const turn = () => {
      if (loading) {
        turns++;
        setImmediate(turn);
      }
    };
    setImmediate(turn);
    const obj = await load();
    loading = false;
    obj.close();
    assert.ok(turns > 0, `the event loop turned ${turns} times while the object loaded`);
  });

  it('raises BpfError for a missing file and for use after close', () => {
    assert.throws(
      () => BpfObject.open('/nonexistent/x.o'),
      (e: BpfError) => e instanceof BpfError && e.code === 'ENOENT' && e.errno === 2 && e.operation === 'open object',
    );
    const obj = BpfObject.open(testObject('binding_test'));
    obj.close();
    assert.throws(() => obj.maps(), /is closed/);
    obj.close();
  });
});
