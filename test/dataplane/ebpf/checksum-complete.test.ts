import assert from 'node:assert/strict';
import { requireRoot } from '../../support/kernel';
import { type L4, datagram, frame } from '../../support/packet';
import { Datapath, TC_ACT_OK, TC_ACT_REDIRECT, home, peerP, translate } from './fixture';

/*
 * A CHECKSUM_COMPLETE skb (what a NIC that sums received packets delivers) carries skb->csum over the
 * packet; every rewrite must keep it right or the stack drops the packet later. The kernel checks it
 * after the run (BPF_PROG_TEST_RUN with BPF_F_TEST_SKB_CHECKSUM_COMPLETE) and fails the run with
 * EBADMSG when it is wrong. Each case is one kind of rewrite.
 */
const qPod = '10.32.1.2';
const pPod = '172.16.9.9';
const reflected = '10.201.5.8';
const transitSeenByP = translate(home.transit, peerP.localNatExternal);
const udp = (sport: number, dport: number, zeroChecksum = false): L4 => ({
  kind: 'udp',
  sport,
  dport,
  payload: Buffer.from('payload'),
  zeroChecksum,
});
const tcp = (sport: number, dport: number): L4 => ({ kind: 'tcp', sport, dport, payload: Buffer.from('hi') });

describe('datapath: CHECKSUM_COMPLETE skbs keep a right skb->csum (BPF_PROG_TEST_RUN)', function () {
  requireRoot(this);
  let dp: Datapath;
  beforeEach(async () => {
    dp = (await Datapath.load()).program('gateway');
  });
  afterEach(() => dp?.close());

  /** Runs `input` as CHECKSUM_COMPLETE; the output must be what the same run gives without it. */
  const complete = (input: Buffer, verdict: number) => {
    const plain = dp.run('fromOverlay', input);
    const r = dp.prog('fromOverlay').testRun(input, { checksumComplete: true });
    assert.equal(r.retval, verdict);
    assert.equal(r.data.toString('hex'), plain.data.toString('hex'));
    assert.notEqual(r.data.subarray(14).toString('hex'), input.subarray(14).toString('hex'), 'the packet was rewritten');
    return r.data;
  };
  const portOf = (f: Buffer) => f.readUInt16BE(34);

  it('toPeer: the source alone (TCP)', () => {
    complete(frame({ src: '10.0.3.4', dst: '172.16.4.5' }, tcp(40000, 443)), TC_ACT_REDIRECT);
  });

  it('from a peer: the destination alone (TCP, to a local pod)', () => {
    complete(frame({ src: '172.16.4.5', dst: '10.60.0.9' }, tcp(443, 40000)), TC_ACT_OK);
  });

  for (const zero of [false, true]) {
    it(`hub transit: both addresses and a port, forward and reply (UDP${zero ? ' with a zero checksum' : ''})`, () => {
      const port = portOf(complete(frame({ src: qPod, dst: reflected }, udp(40001, 53, zero)), TC_ACT_REDIRECT));
      const reply = complete(frame({ src: pPod, dst: transitSeenByP }, udp(53, port, zero)), TC_ACT_REDIRECT);
      if (zero) assert.equal(reply.readUInt16BE(40), 0, 'a zero UDP checksum stays zero');
    });
  }

  it('hub transit: an ICMP error about the flow, its quote mirrored', () => {
    const port = portOf(dp.run('fromOverlay', frame({ src: qPod, dst: reflected }, udp(40001, 53))).data);
    const quote = datagram({ src: transitSeenByP, dst: pPod }, udp(port, 53));
    complete(frame({ src: pPod, dst: transitSeenByP }, { kind: 'icmp-error', type: 3, code: 3, quote }), TC_ACT_REDIRECT);
  });
});
