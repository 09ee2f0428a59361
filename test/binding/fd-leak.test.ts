import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { BpfMap, BpfObject, MapType, u32 } from '../../src/native';
import { requireRoot, testObject } from '../support/kernel';
import { testFlowKey, testFlowValue } from './layout';

const openFds = () => readdirSync('/proc/self/fd').length;

describe('file descriptors (real kernel)', function () {
  requireRoot(this);
  this.timeout(120_000);

  it('do not grow over 1,000 load/close cycles and map operations', async () => {
    // One warm-up cycle so lazily opened fds (libbpf's vmlinux BTF, the addon) are counted in the baseline.
    (await BpfObject.load(testObject('binding_test'))).close();
    const before = openFds();
    for (let i = 0; i < 1000; i++) {
      const obj = await BpfObject.load(testObject('binding_test'));
      const flows = obj.map('test_flows', testFlowKey, testFlowValue);
      const key = { saddr: '10.0.0.1', daddr: '10.0.0.2', sport: i, dport: 80, proto: 17, _pad: [0, 0, 0] };
      flows.update(key, { packets: 1n, flags: 0, mac: '02:00:00:00:00:01' });
      flows.lookup(key);
      flows.updateBatch([[key, { packets: 2n, flags: 0, mac: '02:00:00:00:00:01' }]]);
      flows.lookupBatch();
      for (const entry of flows.entries()) assert.ok(entry);
      flows.delete(key);
      obj.program('test_prog').testRun(Buffer.alloc(64));
      const inner = BpfMap.create({ type: MapType.Array, name: 'leak_inner', key: u32, value: u32, maxEntries: 4 });
      obj.map('test_outer', u32, u32).setInnerMap(1, inner);
      inner.close();
      obj.close();
    }
    assert.equal(openFds(), before);
  });
});
