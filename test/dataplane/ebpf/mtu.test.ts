import assert from 'node:assert/strict';
import { requireRoot } from '../../support/kernel';
import { DropReason } from '../../../src/dataplane/ebpf/layout';
import {
  Proto,
  checksumProblems,
  datagram,
  ethernet,
  fragments,
  frame,
  internetChecksum,
  ipv4Header,
  macsOf,
  parseIpv4,
} from '../../support/packet';
import { Datapath, TC_ACT_OK, TC_ACT_REDIRECT, configFor, home, macsToward, overlayMacs, peerP, translate } from './fixture';

/** TCP flags. */
const SYN = 0x02;
const SYN_ACK = 0x12;

/** TCP option bytes (RFC 9293): MSS (kind 2), NOP (1), window scale (3), timestamps (8), EOL (0). */
const mss = (value: number) => Buffer.from([2, 4, value >> 8, value & 255]);
const NOP = Buffer.from([1]);
const wscale = Buffer.from([3, 3, 7]);
const timestamps = Buffer.from([8, 10, 0, 0, 0, 1, 0, 0, 0, 0]);
const options = (...parts: Buffer[]) => Buffer.concat(parts);

const localPod = '10.0.7.9';
const podOfP = '172.16.4.5';
const workerAddress = '192.168.1.12';

const syn = (opts: Buffer, flags = SYN) => ({ kind: 'tcp' as const, sport: 40000, dport: 80, flags, options: opts });

describe('datapath: MTU (BPF_PROG_TEST_RUN, tunnel MTU 1450)', function () {
  requireRoot(this);
  let worker: Datapath;
  let gateway: Datapath;
  before(async () => {
    worker = (await Datapath.load()).program('worker');
    gateway = (await Datapath.load()).program('gateway');
  });
  after(() => {
    worker?.close();
    gateway?.close();
  });

  describe('MSS clamping', () => {
    it('a SYN with MSS 1460 toward a peer leaves with MSS 1410 (1450 - 40) and a valid TCP checksum', () => {
      const input = frame({ src: localPod, dst: podOfP }, syn(mss(1460)));
      worker.expect('fromPod', input, TC_ACT_REDIRECT, frame({ src: localPod, dst: podOfP }, syn(mss(1410)), overlayMacs));
    });

    it('a gateway clamps and translates the same SYN toward the peer', () => {
      const input = frame({ src: localPod, dst: podOfP }, syn(mss(1460)));
      gateway.expect(
        'fromPod',
        input,
        TC_ACT_REDIRECT,
        frame({ src: translate(localPod, peerP.localNatPod), dst: podOfP }, syn(mss(1410)), macsToward(peerP)),
      );
    });

    it('a SYN with MSS 1300 (it fits) is encapsulated unchanged', () => {
      const input = frame({ src: localPod, dst: podOfP }, syn(mss(1300)));
      worker.expect('fromPod', input, TC_ACT_REDIRECT, frame({ src: localPod, dst: podOfP }, syn(mss(1300)), overlayMacs));
    });

    it('finds the MSS after NOPs, timestamps and window scale, at an even and at an odd offset', () => {
      // MSS value at option offset 14 (even) and 3 (odd: the checksum sees its bytes swapped).
      const even = (m: number) => options(NOP, NOP, timestamps, mss(m), wscale, NOP);
      const odd = (m: number) => options(NOP, mss(m), NOP, wscale, timestamps, NOP);
      for (const opts of [even, odd]) {
        assert.equal(opts(1460).length % 4, 0);
        const input = frame({ src: localPod, dst: podOfP }, syn(opts(1460)));
        worker.expect('fromPod', input, TC_ACT_REDIRECT, frame({ src: localPod, dst: podOfP }, syn(opts(1410)), overlayMacs));
      }
    });

    it('leaves a malformed option list untouched (an option running past the header hides the MSS)', () => {
      // Timestamps claiming 40 bytes where 16 remain, then an MSS of 1460 that a parser ignoring lengths would find.
      const opts = options(Buffer.from([8, 40, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]), mss(1460));
      worker.expect(
        'fromPod',
        frame({ src: localPod, dst: podOfP }, syn(opts)),
        TC_ACT_REDIRECT,
        frame({ src: localPod, dst: podOfP }, syn(opts), overlayMacs),
      );
      // An MSS kind in the last byte, with no room for its length.
      const cut = options(NOP, NOP, NOP, Buffer.from([2]));
      worker.expect(
        'fromPod',
        frame({ src: localPod, dst: podOfP }, syn(cut)),
        TC_ACT_REDIRECT,
        frame({ src: localPod, dst: podOfP }, syn(cut), overlayMacs),
      );
      // An MSS option whose value would be the first bytes of the payload (1460 there): the payload stays.
      const past = { ...syn(options(Buffer.alloc(38, 1), Buffer.from([2, 4]))), payload: Buffer.from([0x05, 0xb4, 0, 0]) };
      worker.expect(
        'fromPod',
        frame({ src: localPod, dst: podOfP }, past),
        TC_ACT_REDIRECT,
        frame({ src: localPod, dst: podOfP }, past, overlayMacs),
      );
    });

    it('does not touch the MSS of a segment without SYN (a payload may look like options)', () => {
      const input = frame({ src: localPod, dst: podOfP }, syn(mss(1460), 0x10));
      worker.expect('fromPod', input, TC_ACT_REDIRECT, frame({ src: localPod, dst: podOfP }, syn(mss(1460), 0x10), overlayMacs));
    });

    it('clamps a SYN-ACK from a peer delivered to a local pod, and one forwarded over the overlay to another node', () => {
      const local = frame({ src: podOfP, dst: translate(localPod, peerP.localNatPod) }, syn(options(mss(1460), NOP, wscale), SYN_ACK));
      gateway.expect('fromOverlay', local, TC_ACT_OK, frame({ src: podOfP, dst: localPod }, syn(options(mss(1410), NOP, wscale), SYN_ACK)));
      const onward = frame({ src: podOfP, dst: '10.60.3.4' }, syn(mss(8960), SYN_ACK));
      gateway.expect('fromOverlay', onward, TC_ACT_REDIRECT, frame({ src: podOfP, dst: '10.0.3.4' }, syn(mss(1410), SYN_ACK), overlayMacs));
    });
  });

  describe('path MTU', () => {
    /** A DF UDP datagram of `total` bytes (IP header included) from a local pod to a pod of P. */
    const udpOf = (total: number) => ({ kind: 'udp' as const, sport: 5000, dport: 6000, payload: Buffer.alloc(total - 28, 0xab) });
    const podMacs = { dst: '0a:00:00:00:00:02', src: '0a:00:00:00:00:01' };

    it('answers a 1500-byte DF packet toward a peer with ICMP fragmentation needed, MTU 1450, back to the pod', () => {
      const sent = datagram({ src: localPod, dst: podOfP }, udpOf(1500));
      const r = worker.run('fromPod', ethernet(sent, podMacs));
      assert.equal(r.retval, TC_ACT_REDIRECT);
      // Built field by field (RFC 792, RFC 1191): the quote is the IP header and the first 8 bytes after it.
      const icmp = Buffer.concat([Buffer.from([3, 4, 0, 0, 0, 0, 1450 >> 8, 1450 & 255]), sent.subarray(0, 28)]);
      icmp.writeUInt16BE(internetChecksum(icmp), 2);
      const expected = ethernet(
        Buffer.concat([ipv4Header({ src: workerAddress, dst: localPod, ttl: 64, id: 0 }, Proto.ICMP, icmp.length), icmp]),
        { dst: podMacs.src, src: podMacs.dst },
      );
      assert.equal(r.data.toString('hex'), expected.toString('hex'));
      assert.deepEqual(macsOf(r.data), { dst: '0a:00:00:00:00:01', src: '0a:00:00:00:00:02' });
      assert.equal(r.data.length, 14 + 20 + 8 + 28);
      assert.equal(r.data.readUInt16BE(14 + 20 + 6), 1450, 'next-hop MTU');
      assert.deepEqual(checksumProblems(r.data), []);
    });

    describe('on an IPv6 underlay, whose tunnels cannot fragment their outer packet', () => {
      let onIpv6: Datapath;
      before(async () => {
        onIpv6 = (await Datapath.load()).program('worker', 6);
      });
      after(() => onIpv6?.close());
      const answered = (sent: Buffer) => {
        const r = onIpv6.run('fromPod', ethernet(sent, podMacs));
        assert.equal(r.retval, TC_ACT_REDIRECT);
        assert.deepEqual(checksumProblems(r.data), []);
        return r.data;
      };

      it('answers from the transit address (the node has no IPv4 one; 0.0.0.0 would be a martian source)', () => {
        assert.equal(parseIpv4(answered(datagram({ src: localPod, dst: podOfP }, udpOf(1500))))?.src, home.transit);
      });

      it('answers a packet without DF too, and a first fragment, quoting it; drops a later fragment as TooBig (no ICMP error about one: RFC 1122, 3.2.2)', () => {
        const whole = datagram({ src: localPod, dst: podOfP }, udpOf(1500), false);
        const [first, later] = fragments({ src: localPod, dst: podOfP }, udpOf(2960), 1480);
        for (const sent of [whole, first]) {
          const reply = answered(sent);
          assert.equal(reply.readUInt8(14 + 20), 3, 'destination unreachable');
          assert.equal(reply.readUInt16BE(14 + 20 + 6), 1450, 'next-hop MTU');
          assert.equal(reply.subarray(14 + 28).toString('hex'), sent.subarray(0, 28).toString('hex'), 'the quote');
        }
        onIpv6.expectDrop('fromPod', ethernet(later, podMacs), DropReason.TooBig);
        // What fits is carried, DF or not.
        const fits = datagram({ src: localPod, dst: podOfP }, udpOf(1450), false);
        assert.equal(onIpv6.run('fromPod', ethernet(fits, podMacs)).data.length, 14 + 1450);
      });
    });

    it('quotes a TCP segment with its sequence number, and an ICMP echo, from a gateway (source: its own address)', () => {
      const tcp = datagram(
        { src: localPod, dst: podOfP },
        { kind: 'tcp', sport: 40000, dport: 80, seq: 0xdeadbeef, payload: Buffer.alloc(1460) },
      );
      const echo = datagram({ src: localPod, dst: podOfP }, { kind: 'icmp-echo', type: 8, id: 7, payload: Buffer.alloc(1472) });
      for (const sent of [tcp, echo]) {
        const r = gateway.run('fromPod', ethernet(sent));
        assert.equal(r.retval, TC_ACT_REDIRECT);
        const icmp = Buffer.concat([Buffer.from([3, 4, 0, 0, 0, 0, 0x05, 0xaa]), sent.subarray(0, 28)]);
        icmp.writeUInt16BE(internetChecksum(icmp), 2);
        assert.equal(
          r.data.subarray(14).toString('hex'),
          Buffer.concat([ipv4Header({ src: home.gateway, dst: localPod, ttl: 64, id: 0 }, Proto.ICMP, icmp.length), icmp]).toString('hex'),
        );
      }
      assert.equal(tcp.readUInt32BE(24), 0xdeadbeef, 'the sequence number is within the quoted 8 bytes');
    });

    it('lets a 1450-byte DF packet through, encapsulated', () => {
      const input = frame({ src: localPod, dst: podOfP }, udpOf(1450));
      worker.expect('fromPod', input, TC_ACT_REDIRECT, frame({ src: localPod, dst: podOfP }, udpOf(1450), overlayMacs));
    });

    it('encapsulates a 1500-byte packet without DF as before (the outer packet is fragmented: its sender allowed it)', () => {
      const input = ethernet(datagram({ src: localPod, dst: podOfP }, udpOf(1500), false));
      worker.expect('fromPod', input, TC_ACT_REDIRECT, ethernet(datagram({ src: localPod, dst: podOfP }, udpOf(1500), false), overlayMacs));
    });

    it('measures a GSO packet by its segments: gso_size 1410 fits, 1448 does not', () => {
      // BPF_PROG_TEST_RUN takes a page at most: two segments' worth.
      const big = frame({ src: localPod, dst: podOfP }, { kind: 'tcp', sport: 40000, dport: 80, payload: Buffer.alloc(2800) });
      /** struct __sk_buff (192 bytes) with gso_segs (offset 164) and gso_size (offset 176). */
      const gso = (size: number) => {
        const ctx = Buffer.alloc(192);
        ctx.writeUInt32LE(Math.ceil(2800 / size), 164);
        ctx.writeUInt32LE(size, 176);
        return ctx;
      };
      const fits = worker.prog('fromPod').testRun(big, { ctx: gso(1410) });
      assert.equal(fits.retval, TC_ACT_REDIRECT);
      assert.equal(fits.data.length, big.length, 'encapsulated whole');
      const tooBig = worker.prog('fromPod').testRun(big, { ctx: gso(1448) });
      assert.equal(tooBig.retval, TC_ACT_REDIRECT);
      assert.equal(tooBig.data.length, 14 + 20 + 8 + 28, 'answered with ICMP');
      assert.equal(tooBig.data.readUInt8(14 + 20), 3);
    });

    it('does nothing while the tunnel MTU is unknown (0: a config written before it existed)', async () => {
      const dp = (await Datapath.load()).program('worker');
      try {
        dp.maps.config.update(0, configFor('worker', { tunnelMtu: 0 }));
        const input = frame({ src: localPod, dst: podOfP }, udpOf(1500));
        dp.expect('fromPod', input, TC_ACT_REDIRECT, frame({ src: localPod, dst: podOfP }, udpOf(1500), overlayMacs));
      } finally {
        dp.close();
      }
    });
  });
});
