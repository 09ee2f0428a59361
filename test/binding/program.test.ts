import assert from 'node:assert/strict';
import { BpfObject, BpfProgram, ProgType } from '../../src/native';
import { requireRoot, testObject } from '../support/kernel';

describe('BpfProgram (real kernel)', function () {
  requireRoot(this);

  it('test-runs a program: data in and out, repeat and duration', async () => {
    const obj = await BpfObject.load(testObject('binding_test'), {}, (o) =>
      o.setGlobal(
        'test_marker',
        { size: 1, align: 1, encode: (v: number, b, off) => b.writeUInt8(v, off), decode: (b, off) => b.readUInt8(off) },
        0x5a,
      ),
    );
    try {
      const input = Buffer.from(Array.from({ length: 80 }, (_, i) => i));
      const r = obj.program('test_prog').testRun(input, { repeat: 1000 });
      assert.equal(r.retval, 0);
      assert.equal(r.data.length, 80);
      assert.equal(r.data[0], 0x5a, 'the program wrote its marker');
      assert.deepEqual(r.data.subarray(1), input.subarray(1), 'nothing else changed');
      assert.ok(r.durationNs > 0 && Number.isInteger(r.durationNs));
    } finally {
      obj.close();
    }
  });

  it('loads raw instructions and reports its identity', () => {
    const prog = BpfProgram.fromInstructions(ProgType.SchedCls, Buffer.from('b7000000030000009500000000000000', 'hex')); // r0 = 3; exit
    try {
      assert.equal(prog.testRun(Buffer.alloc(14)).retval, 3);
      const info = prog.info();
      assert.equal(info.type, 3); // BPF_PROG_TYPE_SCHED_CLS in the kernel's uapi
      assert.match(info.tag, /^[0-9a-f]{16}$/);
      assert.ok(info.id > 0);
    } finally {
      prog.close();
    }
    assert.throws(() => prog.fd, /closed/);
    assert.throws(() => BpfProgram.fromInstructions(ProgType.SchedCls, Buffer.from('95000000000000', 'hex')), /multiple of 8 bytes/);
    assert.throws(
      () => BpfProgram.fromInstructions(ProgType.SchedCls, Buffer.from('9500000000000000', 'hex')),
      (e: Error & { code?: string }) => e.code === 'EACCES',
    );
  });
});
