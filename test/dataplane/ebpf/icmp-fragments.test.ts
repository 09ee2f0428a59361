import assert from 'node:assert/strict';
import { DropReason } from '../../../src/dataplane/ebpf/layout';
import { requireRoot } from '../../support/kernel';
import { IcmpType, type Ipv4Fields, type L4, checksumProblems, datagram, ethernet, fragments, frame } from '../../support/packet';
import { Datapath, TC_ACT_OK, TC_ACT_REDIRECT, macsToward, overlayMacs, peerP } from './fixture';

const udp: L4 = { kind: 'udp', sport: 5353, dport: 53, payload: Buffer.from('a question') };
const udpZero: L4 = { kind: 'udp', sport: 5353, dport: 53, payload: Buffer.from('a question'), zeroChecksum: true };
const tcp: L4 = { kind: 'tcp', sport: 40000, dport: 443, payload: Buffer.from('some TLS bytes') };
const echo: L4 = { kind: 'icmp-echo', type: 8, id: 7, payload: Buffer.from('ping') };

/** An ICMP error quoting the first `quoteLength` bytes of `original`. */
function icmpError(original: Buffer, quoteLength = original.length, type: number = IcmpType.DestUnreachable): L4 {
  return { kind: 'icmp-error', type, code: type === IcmpType.DestUnreachable ? 3 : 0, quote: original.subarray(0, quoteLength) };
}

describe('datapath: ICMP errors and fragments (BPF_PROG_TEST_RUN)', function () {
  requireRoot(this);
  let dp: Datapath;
  before(async () => {
    dp = (await Datapath.load()).program('gateway');
  });
  after(() => dp?.close());

  const router = '172.16.0.1';
  const podOfP = '172.16.4.5';

  describe('ICMP errors get their quote translated with the mirror rule', () => {
    // Our pod (10.0.7.9, seen by P as 10.60.7.9) sent `original`; P's router answers with an error.
    const cases: [string, L4, number | undefined][] = [
      ['a whole UDP datagram (inner UDP checksum fixed)', udp, undefined],
      ['a UDP datagram with a zero checksum (stays zero)', udpZero, undefined],
      ['a TCP segment truncated after its checksum', tcp, 20 + 20],
      ['a TCP segment truncated to 8 bytes (no inner checksum)', tcp, 20 + 8],
      ['an ICMP echo (time exceeded)', echo, undefined],
    ];
    for (const [what, l4, quoteLength] of cases) {
      it(`from P, quoting ${what}`, () => {
        const type = l4.kind === 'icmp-echo' ? IcmpType.TimeExceeded : IcmpType.DestUnreachable;
        const input = frame(
          { src: router, dst: '10.60.7.9' },
          icmpError(datagram({ src: '10.60.7.9', dst: podOfP }, l4), quoteLength, type),
        );
        const expected = frame(
          { src: router, dst: '10.0.7.9' },
          icmpError(datagram({ src: '10.0.7.9', dst: podOfP }, l4), quoteLength, type),
        );
        dp.expect('fromOverlay', input, TC_ACT_OK, expected);
      });
    }

    it('toward P: our pod reports an error about a packet from P', () => {
      const input = frame({ src: '10.0.7.9', dst: podOfP }, icmpError(datagram({ src: podOfP, dst: '10.0.7.9' }, udp)));
      const expected = frame(
        { src: '10.60.7.9', dst: podOfP },
        icmpError(datagram({ src: podOfP, dst: '10.60.7.9' }, udp)),
        macsToward(peerP),
      );
      dp.expect('fromPod', input, TC_ACT_REDIRECT, expected);
    });

    it('through a NatMapping: the quoted source follows the outer destination to the real endpoint', () => {
      const input = frame({ src: router, dst: '10.70.9.7' }, icmpError(datagram({ src: '10.70.9.7', dst: podOfP }, tcp)));
      const expected = frame({ src: router, dst: '10.0.3.4' }, icmpError(datagram({ src: '10.0.3.4', dst: podOfP }, tcp)), overlayMacs);
      dp.expect('fromOverlay', input, TC_ACT_REDIRECT, expected);
    });

    it('drops an error whose quoted IP header is cut short (it would have to be rewritten)', () => {
      const original = datagram({ src: '10.60.7.9', dst: podOfP }, udp);
      dp.expectDrop('fromOverlay', frame({ src: router, dst: '10.60.7.9' }, icmpError(original, 12)), DropReason.Malformed);
    });
  });

  describe('fragments', () => {
    const big = (l4: L4): L4 => ({ ...l4, payload: Buffer.alloc(300, 0x5c) }) as L4;
    for (const [what, l4] of [
      ['UDP', big(udp)],
      ['TCP', big(tcp)],
      ['UDP with a zero checksum', big(udpZero)],
    ] as const) {
      it(`${what}: the first gets the L4 adjustment, a later one only addresses and IP checksum`, () => {
        const [first, later] = fragments({ src: podOfP, dst: '10.60.7.9' }, l4, 152).map((d) => ethernet(d));
        const [expFirst, expLater] = fragments({ src: podOfP, dst: '10.0.7.9' }, l4, 152).map((d) => ethernet(d));
        dp.expect('fromOverlay', first!, TC_ACT_OK, expFirst!);
        dp.expect('fromOverlay', later!, TC_ACT_OK, expLater!);
        // Reassembled, the translated datagram checks out end to end.
        assert.deepEqual(checksumProblems(ethernet(datagram({ src: podOfP, dst: '10.0.7.9' }, l4))), []);

        const [outFirst, outLater] = fragments({ src: '10.0.7.9', dst: podOfP }, l4, 152).map((d) => ethernet(d));
        const [seenFirst, seenLater] = fragments({ src: '10.60.7.9', dst: podOfP }, l4, 152).map((d) => ethernet(d, macsToward(peerP)));
        dp.expect('fromPod', outFirst!, TC_ACT_REDIRECT, seenFirst!);
        dp.expect('fromPod', outLater!, TC_ACT_REDIRECT, seenLater!);
      });
    }

    it('a later fragment whose payload looks like any L4 header is left alone beyond the IP header', () => {
      const ip: Ipv4Fields = { src: podOfP, dst: '10.60.7.9' };
      const [, later] = fragments(ip, { kind: 'raw', proto: 17, payload: Buffer.alloc(64, 0xff) }, 32);
      const [, expected] = fragments({ ...ip, dst: '10.0.7.9' }, { kind: 'raw', proto: 17, payload: Buffer.alloc(64, 0xff) }, 32);
      dp.expect('fromOverlay', ethernet(later!), TC_ACT_OK, ethernet(expected!));
    });
  });

  it('other protocols (GRE) get addresses and IP checksum only', () => {
    const gre: L4 = { kind: 'raw', proto: 47, payload: Buffer.from('0000080045000014', 'hex') };
    dp.expect('fromOverlay', frame({ src: podOfP, dst: '10.60.7.9' }, gre), TC_ACT_OK, frame({ src: podOfP, dst: '10.0.7.9' }, gre));
  });
});
