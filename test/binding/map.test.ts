import assert from 'node:assert/strict';
import { BpfError, BpfMap, BpfObject, MapType, ipv4, lpmKey, perCpu, u32, u64 } from '../../src/native';
import { native } from '../../src/native/binding';
import { requireRoot, testObject } from '../support/kernel';
import { testCounter, testFlowKey, testFlowValue } from './layout';

const flowKey = (i: number) => ({
  saddr: `10.0.${i >> 8}.${i & 255}`,
  daddr: '192.168.0.1',
  sport: 1000 + i,
  dport: 80,
  proto: 6,
  _pad: [0, 0, 0],
});
const flowValue = (i: number) => ({ packets: BigInt(i) * 3n, flags: i, mac: '02:00:00:00:00:0a' });

describe('BpfMap (real kernel)', function () {
  requireRoot(this);
  let obj: BpfObject;
  beforeEach(async () => {
    obj = await BpfObject.load(testObject('binding_test'));
  });
  afterEach(() => obj.close());

  const flows = () => obj.map('test_flows', testFlowKey, testFlowValue);

  it('looks up, updates and deletes single entries', () => {
    const m = flows();
    assert.equal(m.lookup(flowKey(1)), undefined);
    m.update(flowKey(1), flowValue(1));
    assert.deepEqual(m.lookup(flowKey(1)), flowValue(1));
    assert.equal(m.lookup(flowKey(2)), undefined, 'other keys stay absent');
    assert.equal(m.delete(flowKey(1)), true);
    assert.equal(m.delete(flowKey(1)), false);
    assert.equal(m.lookup(flowKey(1)), undefined);
  });

  it('honours noexist and exist', () => {
    const m = flows();
    assert.throws(
      () => m.update(flowKey(1), flowValue(1), 'exist'),
      (e: BpfError) => e instanceof BpfError && e.code === 'ENOENT' && e.operation === 'map update',
    );
    m.update(flowKey(1), flowValue(1), 'noexist');
    assert.throws(
      () => m.update(flowKey(1), flowValue(2), 'noexist'),
      (e: BpfError) => e.code === 'EEXIST',
    );
    m.update(flowKey(1), flowValue(2), 'exist');
    assert.deepEqual(m.lookup(flowKey(1)), flowValue(2));
  });

  it('iterates every key and entry', () => {
    const m = flows();
    for (let i = 0; i < 50; i++) m.update(flowKey(i), flowValue(i));
    const keys = [...m.keys()].map((k) => k.sport - 1000).sort((a, b) => a - b);
    assert.deepEqual(
      keys,
      Array.from({ length: 50 }, (_, i) => i),
    );
    for (const [k, v] of m.entries()) assert.deepEqual(v, flowValue(k.sport - 1000));
  });

  it('batches update, lookup and delete', () => {
    const m = flows();
    const entries = Array.from({ length: 600 }, (_, i) => [flowKey(i), flowValue(i)] as const);
    assert.equal(m.updateBatch(entries), 600);
    const read = m.lookupBatch(64);
    assert.equal(read.length, 600);
    for (const [k, v] of read) assert.deepEqual(v, flowValue(k.sport - 1000));
    assert.equal(m.deleteBatch(entries.slice(0, 300).map(([k]) => k)), 300);
    assert.equal([...m.keys()].length, 300);
    assert.equal(m.lookup(flowKey(0)), undefined);
    assert.deepEqual(m.lookup(flowKey(300)), flowValue(300));
  });

  it('reports the partial count when a batch fails', () => {
    const m = flows();
    m.updateBatch([
      [flowKey(0), flowValue(0)],
      [flowKey(1), flowValue(1)],
    ]);
    // The third key does not exist: two deletions happen, then ENOENT.
    assert.throws(
      () => m.deleteBatch([flowKey(0), flowKey(1), flowKey(99), flowKey(2)]),
      (e: BpfError) => e instanceof BpfError && e.code === 'ENOENT' && e.count === 2 && e.operation === 'map delete batch',
    );
    assert.equal([...m.keys()].length, 0);
    // More entries than max_entries (1024): the first 1024 are written, then E2BIG.
    const tooMany = Array.from({ length: 1100 }, (_, i) => [flowKey(i), flowValue(i)] as const);
    assert.throws(
      () => m.updateBatch(tooMany),
      (e: BpfError) => e.code === 'E2BIG' && e.count === 1024,
    );
    assert.equal([...m.keys()].length, 1024);
  });

  it('reads per-CPU values, one per possible CPU, written by the program', () => {
    const cpus = native().numPossibleCpus();
    const counters = obj.map('test_counters', u32, perCpu(testCounter));
    const prog = obj.program('test_prog');
    prog.testRun(Buffer.alloc(60), { repeat: 3 });
    prog.testRun(Buffer.alloc(100));
    const values = counters.lookup(0)!;
    assert.equal(values.length, cpus);
    const total = values.reduce((a, c) => ({ packets: a.packets + c.packets, bytes: a.bytes + c.bytes }), { packets: 0n, bytes: 0n });
    assert.deepEqual(total, { packets: 4n, bytes: 280n });
    counters.update(
      0,
      Array.from({ length: cpus }, (_, i) => ({ packets: BigInt(i), bytes: 0n })),
    );
    assert.deepEqual(
      counters.lookup(0)!.map((c) => c.packets),
      Array.from({ length: cpus }, (_, i) => BigInt(i)),
    );
  });

  it('checks codec sizes against the map, naming it', () => {
    assert.throws(() => obj.map('test_array', u32, u32), /map 'test_array': the value codec is 4 bytes but the map's value is 8 bytes/);
    assert.throws(() => obj.map('test_counters', u32, testCounter), /per-CPU map: wrap the codec with perCpu/);
    assert.equal(obj.map('test_array', u32, u64).lookup(3), 0n);
  });

  it('finds the longest prefix in an LPM trie', () => {
    const routes = obj.map('test_routes', lpmKey(ipv4), u32);
    routes.update({ prefixLen: 8, addr: '10.0.0.0' }, 1);
    routes.update({ prefixLen: 16, addr: '10.1.0.0' }, 2);
    routes.update({ prefixLen: 32, addr: '10.1.2.3' }, 3);
    assert.equal(routes.lookup({ prefixLen: 32, addr: '10.1.2.3' }), 3);
    assert.equal(routes.lookup({ prefixLen: 32, addr: '10.1.2.4' }), 2);
    assert.equal(routes.lookup({ prefixLen: 32, addr: '10.9.9.9' }), 1);
    assert.equal(routes.lookup({ prefixLen: 32, addr: '11.0.0.1' }), undefined);
    assert.equal(routes.delete({ prefixLen: 16, addr: '10.1.0.0' }), true);
    assert.equal(routes.lookup({ prefixLen: 32, addr: '10.1.2.4' }), 1);
  });

  it('replaces the inner map of an array-of-maps, and the program follows', () => {
    const outer = obj.map('test_outer', u32, u32);
    const prog = obj.program('test_prog');
    const inner = BpfMap.create({ type: MapType.Array, name: 'test_inner_b', key: u32, value: u32, maxEntries: 4 });
    try {
      inner.update(0, 40);
      assert.equal(prog.testRun(Buffer.alloc(64)).retval, 0, 'the initial inner map holds 0');
      outer.setInnerMap(0, inner);
      assert.equal(outer.innerMapId(0), inner.info.id);
      assert.equal(prog.testRun(Buffer.alloc(64)).retval, 40);
      inner.update(0, 41);
      assert.equal(prog.testRun(Buffer.alloc(64)).retval, 41);
      assert.equal(outer.innerMapId(1), undefined);
      assert.throws(() => flows().setInnerMap(flowKey(0), inner), /not a map-in-map/);
    } finally {
      inner.close();
    }
  });
});
