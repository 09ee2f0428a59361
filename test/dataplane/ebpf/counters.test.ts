import assert from 'node:assert/strict';
import { DROP_REASON_COUNT, DropReason } from '../../../src/dataplane/ebpf/layout';
import { requireRoot } from '../../support/kernel';
import { type L4, frame } from '../../support/packet';
import { Datapath, TC_ACT_OK, TC_ACT_REDIRECT, peerP, peerQ } from './fixture';

const udp: L4 = { kind: 'udp', sport: 1000, dport: 2000, payload: Buffer.alloc(100, 1) };

describe('datapath: counters (BPF_PROG_TEST_RUN)', function () {
  requireRoot(this);
  let dp: Datapath;
  beforeEach(async () => {
    dp = (await Datapath.load()).program('gateway');
  });
  afterEach(() => dp?.close());

  it('counts packets and bytes per peer: tx toward it, rx from it', () => {
    const out = frame({ src: '10.0.7.9', dst: '172.16.4.5' }, udp);
    const back = frame({ src: '172.16.4.5', dst: '10.60.7.9' }, { ...udp, payload: Buffer.alloc(10, 2) });
    for (let i = 0; i < 3; i++) assert.equal(dp.run('fromPod', out).retval, TC_ACT_REDIRECT);
    for (let i = 0; i < 2; i++) assert.equal(dp.run('fromOverlay', back).retval, TC_ACT_OK);
    assert.equal(dp.run('fromPod', frame({ src: '10.0.7.9', dst: '10.32.0.1' }, udp)).retval, TC_ACT_REDIRECT);
    assert.deepEqual(dp.peerCounters(peerP.id), {
      txPackets: 3n,
      txBytes: BigInt(3 * out.length),
      rxPackets: 2n,
      rxBytes: BigInt(2 * back.length),
    });
    assert.deepEqual(dp.peerCounters(peerQ.id), { txPackets: 1n, txBytes: BigInt(out.length), rxPackets: 0n, rxBytes: 0n });
  });

  it('counts nothing for traffic it does not translate, or drops', () => {
    dp.run('fromPod', frame({ src: '10.0.7.9', dst: '10.0.8.1' }, udp));
    dp.run('fromOverlay', frame({ src: '172.16.4.5', dst: '10.70.9.99' }, udp)); // no NatMapping: dropped
    // To the transit address with no flow behind it: translated to our view first, then dropped.
    dp.run('fromOverlay', frame({ src: '172.16.4.5', dst: '10.70.9.250' }, udp));
    assert.deepEqual(dp.peerCounters(peerP.id), { txPackets: 0n, txBytes: 0n, rxPackets: 0n, rxBytes: 0n });
    const expected = Array<number>(DROP_REASON_COUNT).fill(0);
    expected[DropReason.NoNatMapping] = 1;
    expected[DropReason.TransitState] = 1;
    assert.deepEqual(dp.drops(), expected);
  });

  it('counts hub transit as rx from one peer and tx to the other', () => {
    const f = frame({ src: '10.32.1.2', dst: '10.201.5.8' }, udp); // Q → a reflected pod of P
    assert.equal(dp.run('fromOverlay', f).retval, TC_ACT_REDIRECT);
    assert.deepEqual(dp.peerCounters(peerQ.id), { txPackets: 0n, txBytes: 0n, rxPackets: 1n, rxBytes: BigInt(f.length) });
    assert.deepEqual(dp.peerCounters(peerP.id), { txPackets: 1n, txBytes: BigInt(f.length), rxPackets: 0n, rxBytes: 0n });
  });
});
