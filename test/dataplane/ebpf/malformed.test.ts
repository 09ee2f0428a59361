import { DropReason } from '../../../src/dataplane/ebpf/layout';
import { requireRoot } from '../../support/kernel';
import { type L4, ethernet, frame } from '../../support/packet';
import { Datapath, TC_ACT_OK, TC_ACT_REDIRECT, macsToward, peerP } from './fixture';

const tcp: L4 = { kind: 'tcp', sport: 40000, dport: 443, payload: Buffer.from('0123456789') };
const ours = { src: '10.0.7.9', dst: '172.16.4.5' };
const notOurs = { src: '10.0.7.9', dst: '10.0.8.8' };

/** A frame whose IP total length is rewritten (and IP checksum left as it was: nobody may fix it up). */
function withTotalLength(f: Buffer, totalLength: number): Buffer {
  const g = Buffer.from(f);
  g.writeUInt16BE(totalLength, 16);
  return g;
}

describe('datapath: truncated and malformed packets (BPF_PROG_TEST_RUN)', function () {
  requireRoot(this);
  let dp: Datapath;
  before(async () => {
    dp = (await Datapath.load()).program('gateway');
  });
  after(() => dp?.close());

  // BPF_PROG_TEST_RUN refuses IPv4 frames shorter than Ethernet + an IPv4 header, so every case here
  // has readable addresses; the C side passes shorter ones untouched all the same.
  const broken: [string, (f: Buffer) => Buffer][] = [
    ['an L4 header cut by the IP total length', (f) => withTotalLength(f, 20 + 10)],
    ['an IP total length beyond the frame', (f) => withTotalLength(f, f.length)],
    ['an IP total length shorter than the header', (f) => withTotalLength(f, 12)],
    [
      'an IP header length below 5 words',
      (f) => {
        const g = Buffer.from(f);
        g.writeUInt8(0x44, 14);
        return g;
      },
    ],
    [
      'a version other than 4 in an IPv4 frame',
      (f) => {
        const g = Buffer.from(f);
        g.writeUInt8(0x65, 14);
        return g;
      },
    ],
    ['a frame cut in the TCP header', (f) => f.subarray(0, 14 + 20 + 12)],
  ];
  for (const [what, breakIt] of broken) {
    it(`${what}: dropped when ours to rewrite, passed untouched when not`, () => {
      dp.expectDrop('fromPod', breakIt(frame(ours, tcp)), DropReason.Malformed);
      dp.expectDrop('fromOverlay', breakIt(frame({ src: '172.16.4.5', dst: '10.60.7.9' }, tcp)), DropReason.Malformed);
      const other = breakIt(frame(notOurs, tcp));
      dp.expect('fromPod', other, TC_ACT_OK, other);
      dp.expect('fromOverlay', other, TC_ACT_OK, other);
    });
  }

  it('translates a frame with Ethernet padding after the datagram and leaves the padding alone', () => {
    const echo: L4 = { kind: 'icmp-echo', type: 8, id: 1 };
    const pad = Buffer.alloc(60 - 14 - 28, 0xee);
    const input = Buffer.concat([frame(ours, echo), pad]);
    const expected = Buffer.concat([frame({ ...ours, src: '10.60.7.9' }, echo, macsToward(peerP)), pad]);
    dp.expect('fromPod', input, TC_ACT_REDIRECT, expected);
  });

  it('translates a datagram with IP options', () => {
    const options = Buffer.from([0x01, 0x01, 0x01, 0x00]); // NOP NOP NOP EOL
    dp.expect(
      'fromPod',
      frame({ ...ours, options }, tcp),
      TC_ACT_REDIRECT,
      frame({ ...ours, src: '10.60.7.9', options }, tcp, macsToward(peerP)),
    );
  });

  it('passes a non-IPv4 frame even when it is shorter than an IPv4 header', () => {
    const arp = ethernet(Buffer.alloc(4), undefined, 0x0806);
    dp.expect('fromPod', arp, TC_ACT_OK, arp);
  });
});
