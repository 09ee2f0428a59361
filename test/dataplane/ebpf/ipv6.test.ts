import assert from 'node:assert/strict';
import fc from 'fast-check';
import ipaddr from 'ipaddr.js';
import { DropReason, PrefixKind } from '../../../src/dataplane/ebpf/layout';
import { requireRoot } from '../../support/kernel';
import {
  EtherType,
  Icmp6Type,
  type L4,
  NextHeader,
  Proto,
  checksumProblems,
  datagram6,
  ethernet,
  internetChecksum,
  extensionHeader,
  fragmentHeader,
  frame,
  frame6,
  ipv6Header,
  parseIpv4,
} from '../../support/packet';
import { Datapath, PACKET_HOST, TC_ACT_OK, TC_ACT_REDIRECT, home, macsToward, overlayMacs, peerP, peerQ, translate } from './fixture';
import { homeShapes, ipv6OnlyPeerEntry, natMappings6, otherNode6, peerP6, programIpv6, translate6 } from './fixture6';

const tcp: L4 = { kind: 'tcp', sport: 40000, dport: 443, payload: Buffer.from('hello') };
const udp: L4 = { kind: 'udp', sport: 5353, dport: 53, payload: Buffer.from('query') };
const echo: L4 = { kind: 'icmp-echo', type: 128, id: 0x4242, payload: Buffer.from('ping') };
const kinds: [string, L4][] = [
  ['TCP', tcp],
  ['UDP', udp],
  ['ICMPv6 echo', echo],
];

/** A pod on the gateway's node, one on another node, and pods of P and Q. */
const localPod = 'fd00:a:0:8000:7::9';
const remotePod = 'fd00:a:0:ffff::77';
const podOfP = 'fd17:16:0:1::5';
const podOfQ = 'fd10:32:0:1a::5';
const src6 = (pod: string) => translate6(pod, peerP6.localNatPod);
/** The pseudo-header of an ICMPv6 checksum (RFC 8200, 8.1). */
const pseudo6 = (src: string, dst: string, length: number) =>
  Buffer.concat([
    ipv6Bytes(src),
    ipv6Bytes(dst),
    Buffer.from([length >>> 24, (length >>> 16) & 255, (length >>> 8) & 255, length & 255, 0, 0, 0, 58]),
  ]);
const fromP = (l4: L4, dst: string) => frame6({ src: podOfP, dst }, l4, { dst: peerP.srcMac, src: peerP.dstMac });

/** A Neighbor Solicitation (RFC 4861, 4.3) for `target`, to its solicited-node multicast address. */
function neighborSolicitation(src: string, target: string): Buffer {
  const body = Buffer.alloc(20);
  body.writeUInt8(Icmp6Type.NeighborSolicitation, 0);
  // The checksum is left zero: ND must pass whatever it holds.
  const targetBytes = ipv6Bytes(target);
  targetBytes.copy(body, 4);
  const mcast = `ff02::1:ff${targetBytes.subarray(13, 14).toString('hex')}:${targetBytes.subarray(14, 16).toString('hex')}`;
  return frame6({ src, dst: mcast, hopLimit: 255 }, { kind: 'raw', proto: 58, payload: body });
}
const ipv6Bytes = (a: string) => Buffer.from(ipaddr.IPv6.parse(a).toByteArray());

describe('datapath: IPv6 (BPF_PROG_TEST_RUN)', function () {
  requireRoot(this);

  for (const [shape, load] of homeShapes) {
    describe(`L ${shape}`, () => {
      describe('on the gateway', () => {
        let dp: Datapath;
        before(async () => {
          dp = await load('gateway');
        });
        after(() => dp?.close());

        for (const [name, l4] of kinds) {
          it(`toPeer (${name}): our pod's source gets P's view of it, the packet goes to P's endpoint; Q (no remap) gets it as it is`, async () => {
            for (const from of ['fromPod', 'fromOverlay'] as const) {
              const toP = frame6({ src: localPod, dst: podOfP }, l4);
              const src = translate6(localPod, peerP6.localNatPod);
              dp.expect(from, toP, TC_ACT_REDIRECT, frame6({ src, dst: podOfP }, l4, macsToward(peerP)));
              assert.deepEqual((await dp.tunnelOf(from, toP)).tunnel, { remote: peerP.endpoint, vni: peerP.vni, ttl: 64 });
              const toQ = frame6({ src: remotePod, dst: podOfQ }, l4);
              dp.expect(from, toQ, TC_ACT_REDIRECT, frame6({ src: remotePod, dst: podOfQ }, l4, macsToward(peerQ)));
              assert.deepEqual((await dp.tunnelOf(from, toQ)).tunnel, { remote: peerQ.endpoint, vni: peerQ.vni, ttl: 64 });
            }
          });

          it(`fromPeer (${name}): P's view of our pods becomes ours, delivered here or on the pod's node`, async () => {
            const here = fromP(l4, translate6(localPod, peerP6.localNatPod));
            dp.expect('fromOverlay', here, TC_ACT_OK, frame6({ src: podOfP, dst: localPod }, l4, { dst: peerP.srcMac, src: peerP.dstMac }));
            assert.deepEqual(await dp.pktTypeOf('fromOverlay', here), { retval: TC_ACT_OK, pktType: PACKET_HOST });
            const there = fromP(l4, translate6(remotePod, peerP6.localNatPod));
            dp.expect('fromOverlay', there, TC_ACT_REDIRECT, frame6({ src: podOfP, dst: remotePod }, l4, overlayMacs));
            assert.deepEqual((await dp.tunnelOf('fromOverlay', there)).tunnel, {
              remote: otherNode6.underlay,
              vni: home.overlayVni,
              ttl: 64,
            });
          });
        }

        it("an ExternalCIDR source gets P's view of our ExternalCIDR", () => {
          const src = natMappings6[0]!.external;
          dp.expect(
            'fromPod',
            frame6({ src, dst: podOfP }, tcp),
            TC_ACT_REDIRECT,
            frame6({ src: translate6(src, peerP6.localNatExternal), dst: podOfP }, tcp, macsToward(peerP)),
          );
        });

        it("fromPeer to P's view of our ExternalCIDR: through the NatMapping, to the endpoint's node; no NatMapping: dropped", async () => {
          const { external, real } = natMappings6[0]!;
          const input = fromP(tcp, translate6(external, peerP6.localNatExternal));
          dp.expect('fromOverlay', input, TC_ACT_REDIRECT, frame6({ src: podOfP, dst: real }, tcp, overlayMacs));
          assert.deepEqual((await dp.tunnelOf('fromOverlay', input)).tunnel, {
            remote: otherNode6.underlay,
            vni: home.overlayVni,
            ttl: 64,
          });
          // Q sees our own ExternalCIDR.
          const fromQ = frame6({ src: podOfQ, dst: external }, udp);
          dp.expect('fromOverlay', fromQ, TC_ACT_REDIRECT, frame6({ src: podOfQ, dst: real }, udp, overlayMacs));
          dp.expectDrop('fromOverlay', fromP(tcp, translate6('fd00:e:0:5aa::1', peerP6.localNatExternal)), DropReason.NoNatMapping);
        });

        it("fromPeer to an address outside both of P's views of us: NOT_OURS (our own networks unremapped included)", () => {
          for (const dst of ['fd99::1', localPod, natMappings6[0]!.external])
            dp.expectDrop('fromOverlay', fromP(tcp, dst), DropReason.NotOurs);
        });

        it('neighbour discovery, link-local and multicast traffic pass untouched, whatever the routes', () => {
          const na = Buffer.alloc(20);
          na.writeUInt8(Icmp6Type.NeighborAdvertisement, 0);
          for (const f of [
            neighborSolicitation(localPod, 'fd00:a:0:8000:7::1'),
            neighborSolicitation('::', podOfP),
            // An advertisement between global addresses, one of them in P's prefix.
            frame6({ src: podOfP, dst: translate6(localPod, peerP6.localNatPod), hopLimit: 255 }, { kind: 'raw', proto: 58, payload: na }),
            frame6({ src: localPod, dst: podOfP, hopLimit: 255 }, { kind: 'raw', proto: 58, payload: na }),
            frame6({ src: 'fe80::1', dst: 'fe80::2' }, echo),
            frame6({ src: 'fe80::1', dst: podOfP }, echo),
            frame6({ src: podOfP, dst: 'ff02::1' }, udp),
            frame6({ src: localPod, dst: 'ff0e::1234' }, udp),
          ]) {
            dp.expect('fromPod', f, TC_ACT_OK, f);
            dp.expect('fromOverlay', f, TC_ACT_OK, f);
          }
        });

        it("an ICMPv6 error's quote gets the mirror of the translation, its checksum and the ICMPv6 one kept right, both ways", () => {
          const unreachable = (quote: Buffer): L4 => ({ kind: 'icmp-error', type: 1, code: 4, quote });
          // P's pod answers our pod's UDP (sent from P's view of it) with port unreachable.
          const sent = (src: string) => datagram6({ src, dst: podOfP }, udp);
          dp.expect(
            'fromOverlay',
            fromP(unreachable(sent(src6(localPod))), src6(localPod)),
            TC_ACT_OK,
            frame6({ src: podOfP, dst: localPod }, unreachable(sent(localPod)), { dst: peerP.srcMac, src: peerP.dstMac }),
          );
          // Our pod answers P's pod the same way: the quote's destination (our pod) becomes P's view of it.
          const received = (dst: string) => datagram6({ src: podOfP, dst }, tcp);
          dp.expect(
            'fromPod',
            frame6({ src: localPod, dst: podOfP }, unreachable(received(localPod))),
            TC_ACT_REDIRECT,
            frame6({ src: src6(localPod), dst: podOfP }, unreachable(received(src6(localPod))), macsToward(peerP)),
          );
          // A quote cut short of its L4 checksum: only the addresses are mirrored.
          const cut = (dst: string) => received(dst).subarray(0, 44);
          dp.expect(
            'fromPod',
            frame6({ src: localPod, dst: podOfP }, unreachable(cut(localPod))),
            TC_ACT_REDIRECT,
            frame6({ src: src6(localPod), dst: podOfP }, unreachable(cut(src6(localPod))), macsToward(peerP)),
          );
        });

        it('walks extension headers (hop-by-hop, destination options, a first fragment) and translates past them', () => {
          const ext = [extensionHeader(NextHeader.HopByHop), extensionHeader(NextHeader.DestOptions, 16), fragmentHeader(0, false)];
          const input = frame6({ src: localPod, dst: podOfP, extensions: ext }, tcp);
          const src = translate6(localPod, peerP6.localNatPod);
          dp.expect('fromPod', input, TC_ACT_REDIRECT, frame6({ src, dst: podOfP, extensions: ext }, tcp, macsToward(peerP)));
        });

        it('a later fragment gets its addresses translated and its payload kept', () => {
          const payload = Buffer.from('0123456789abcdef');
          const h = (src: string) => ipv6Header({ src, dst: podOfP, extensions: [fragmentHeader(1480, false)] }, 6, payload.length);
          const src = translate6(localPod, peerP6.localNatPod);
          dp.expect(
            'fromPod',
            ethernet(Buffer.concat([h(localPod), payload]), undefined, EtherType.IPv6),
            TC_ACT_REDIRECT,
            ethernet(Buffer.concat([h(src), payload]), macsToward(peerP), EtherType.IPv6),
          );
        });

        it('a zero UDP checksum (invalid but for tunnels that allow it, RFC 6935) stays zero: the receiver decides', () => {
          const zero: L4 = { ...udp, zeroChecksum: true };
          const r = dp.run('fromPod', frame6({ src: localPod, dst: podOfP }, zero));
          assert.equal(r.retval, TC_ACT_REDIRECT);
          const src = translate6(localPod, peerP6.localNatPod);
          assert.equal(r.data.toString('hex'), frame6({ src, dst: podOfP }, zero, macsToward(peerP)).toString('hex'));
        });

        it('counts what it cannot walk or read, for a prefix it handles', () => {
          const tooMany = Array.from({ length: 5 }, () => extensionHeader(NextHeader.DestOptions));
          dp.expectDrop('fromPod', frame6({ src: localPod, dst: podOfP, extensions: tooMany }, tcp), DropReason.ExtHdrs);
          // A routing header with segments left: the L4 checksum covers its final destination, not this one.
          const routing = extensionHeader(NextHeader.Routing, 24);
          routing.bytes.writeUInt8(1, 3);
          dp.expectDrop('fromPod', frame6({ src: localPod, dst: podOfP, extensions: [routing] }, tcp), DropReason.ExtHdrs);
          const whole = frame6({ src: localPod, dst: podOfP }, tcp);
          // Truncated: the payload length says more than the frame holds; a TCP header cut short.
          dp.expectDrop('fromPod', whole.subarray(0, whole.length - 1), DropReason.Malformed);
          const cut = frame6({ src: localPod, dst: podOfP }, { kind: 'raw', proto: 6, payload: Buffer.alloc(12) });
          dp.expectDrop('fromPod', cut, DropReason.Malformed);
          dp.expectDrop(
            'fromOverlay',
            fromP({ kind: 'raw', proto: 17, payload: Buffer.alloc(4) }, translate6(localPod, peerP6.localNatPod)),
            DropReason.Malformed,
          );
        });

        it('checks its own checksums (a corrupted expected packet fails)', () => {
          const f = frame6({ src: localPod, dst: podOfP }, tcp);
          f[f.length - 1] ^= 1;
          assert.notDeepEqual(checksumProblems(f), []);
        });
      });

      describe('MTU (tunnel MTU 1450)', () => {
        let worker: Datapath;
        let gateway: Datapath;
        before(async () => {
          worker = await load('worker');
          gateway = await load('gateway');
        });
        after(() => {
          worker?.close();
          gateway?.close();
        });
        const mss = (value: number) => Buffer.from([1, 2, 4, value >> 8, value & 255, 1, 1, 0]); // NOP, MSS at an odd offset, NOPs, EOL
        const syn = (value: number, flags = 0x02): L4 => ({ kind: 'tcp', sport: 40000, dport: 80, flags, options: mss(value) });

        it('a SYN with MSS 1440 leaves a worker with MSS 1390 (1450 - 60), a gateway translated too; one that fits is left', () => {
          worker.expect(
            'fromPod',
            frame6({ src: localPod, dst: podOfP }, syn(1440)),
            TC_ACT_REDIRECT,
            frame6({ src: localPod, dst: podOfP }, syn(1390), overlayMacs),
          );
          const src = translate6(localPod, peerP6.localNatPod);
          gateway.expect(
            'fromPod',
            frame6({ src: localPod, dst: podOfP }, syn(1440)),
            TC_ACT_REDIRECT,
            frame6({ src, dst: podOfP }, syn(1390), macsToward(peerP)),
          );
          worker.expect(
            'fromPod',
            frame6({ src: localPod, dst: podOfP }, syn(1300)),
            TC_ACT_REDIRECT,
            frame6({ src: localPod, dst: podOfP }, syn(1300), overlayMacs),
          );
        });

        it("a SYN-ACK from a peer gets our tunnel's MSS", () => {
          gateway.expect(
            'fromOverlay',
            fromP(syn(1440, 0x12), src6(localPod)),
            TC_ACT_OK,
            frame6({ src: podOfP, dst: localPod }, syn(1390, 0x12), { dst: peerP.srcMac, src: peerP.dstMac }),
          );
        });

        it('answers a packet over 1450 bytes with ICMPv6 Packet Too Big, MTU 1450, quoting its headers, back to the pod; 1450 bytes pass', () => {
          const udpOf = (ipLength: number, extra = 0): L4 => ({
            kind: 'udp',
            sport: 4000,
            dport: 53,
            payload: Buffer.alloc(ipLength - 48 - extra, 7),
          });
          /** The Packet Too Big `input` gets: its IPv6 header and `quoted` bytes more. */
          const tooBig = (input: Buffer, quoted: number) => {
            const quote = input.subarray(14, 14 + 40 + quoted);
            // Type 2, code 0, the checksum, the MTU (RFC 4443, 3.2): from the destination the packet could not reach.
            const body = Buffer.concat([Buffer.from([Icmp6Type.PacketTooBig, 0, 0, 0, 0, 0, 0x05, 0xaa]), quote]);
            body.writeUInt16BE(internetChecksum(pseudo6(podOfP, localPod, body.length), body), 2);
            const reply = Buffer.concat([ipv6Header({ src: podOfP, dst: localPod }, Proto.ICMPv6, body.length), body]);
            return ethernet(reply, { dst: '0a:00:00:00:00:01', src: '0a:00:00:00:00:02' }, EtherType.IPv6);
          };
          const input = frame6({ src: localPod, dst: podOfP }, udpOf(1451));
          for (const dp of [worker, gateway]) dp.expect('fromPod', input, TC_ACT_REDIRECT, tooBig(input, 8));
          // The first fragment of a datagram larger than the pod's MTU: the quote reaches past the fragment
          // header to the UDP ports, or the pod's stack could not match the error and would never lower its path MTU.
          const first = frame6({ src: localPod, dst: podOfP, extensions: [fragmentHeader(0, true)] }, udpOf(1500, 8));
          for (const dp of [worker, gateway]) dp.expect('fromPod', first, TC_ACT_REDIRECT, tooBig(first, 16));
          const fits = frame6({ src: localPod, dst: podOfP }, udpOf(1450));
          worker.expect('fromPod', fits, TC_ACT_REDIRECT, frame6({ src: localPod, dst: podOfP }, udpOf(1450), overlayMacs));
        });
      });

      describe('on a worker', () => {
        let dp: Datapath;
        before(async () => {
          dp = await load('worker');
        });
        after(() => dp?.close());

        it('sends IPv6 traffic for a remote prefix to the gateway on the overlay VNI, untranslated; other IPv6 stays', async () => {
          for (const dst of [podOfP, podOfQ, translate6('fd19:2:1:3abc::1', peerP6.remoteExternal)]) {
            const input = frame6({ src: localPod, dst }, tcp);
            dp.expect('fromPod', input, TC_ACT_REDIRECT, frame6({ src: localPod, dst }, tcp, overlayMacs));
            assert.deepEqual((await dp.tunnelOf('fromPod', input)).tunnel, { remote: home.gateway, vni: home.overlayVni, ttl: 64 });
          }
          const local = frame6({ src: localPod, dst: remotePod }, tcp);
          dp.expect('fromPod', local, TC_ACT_OK, local);
        });
      });
    });
  }

  /** `dp`'s verdicts for IPv4 toward P and from P's tunnel: untouched, passed (no remote prefix is P's), nothing counted. */
  const ipv4Passes = (dp: Datapath, toP: Buffer, fromTunnel: Buffer) => {
    const drops = dp.drops();
    const counters = dp.peerCounters(peerP.id);
    for (const from of ['fromPod', 'fromOverlay'] as const) dp.expect(from, toP, TC_ACT_OK, toP);
    dp.expect('fromOverlay', fromTunnel, TC_ACT_OK, fromTunnel);
    assert.deepEqual(dp.drops(), drops);
    assert.deepEqual(dp.peerCounters(peerP.id), counters);
  };
  /** IPv4 from P's pod, through P's tunnel (its MACs), to `dst`. */
  const fromP4 = (dst: string) => frame({ src: '172.16.9.9', dst }, tcp, { dst: peerP.srcMac, src: peerP.dstMac });
  const pod4 = '10.0.0.9';

  describe('L IPv6-only: IPv4 is not carried', () => {
    let dp: Datapath;
    before(async () => {
      dp = await homeShapes.find(([shape]) => shape === 'IPv6-only')![1]('gateway');
    });
    after(() => dp?.close());

    it("IPv4 toward P's or Q's networks of old, and from P's tunnel, passes untouched: no IPv4 remote prefix, nothing dropped or counted", () => {
      ipv4Passes(dp, frame({ src: pod4, dst: '172.16.0.5' }, tcp), fromP4(translate(pod4, peerP.localNatPod)));
      const toQ = frame({ src: pod4, dst: '10.32.0.5' }, udp);
      dp.expect('fromPod', toQ, TC_ACT_OK, toQ);
    });

    it("a peer entry still holding IPv4 views (before a reconcile removes them): P's packet to them is NOT_OURS, never into our absent network", () => {
      dp.addPeer(peerP);
      try {
        dp.expectDrop('fromOverlay', fromP4(translate(pod4, peerP.localNatPod)), DropReason.NotOurs);
        dp.expectDrop('fromOverlay', fromP4(translate('10.201.5.7', peerP.localNatExternal)), DropReason.NotOurs);
      } finally {
        dp.maps.peers.update(peerP.id, ipv6OnlyPeerEntry(peerP));
        for (const prefix of [peerP.remotePod, peerP.remoteExternal]) dp.maps.routes.delete(prefix);
      }
    });
  });

  describe("a dual-stack L's IPv6-only peering: P carries IPv6 only, Q both", () => {
    let dp: Datapath;
    before(async () => {
      dp = programIpv6((await Datapath.load()).program('gateway'));
      // As the agent writes it: P's entry (its tunnel) with no IPv4 views, no IPv4 route to P.
      dp.maps.peers.update(peerP.id, ipv6OnlyPeerEntry(peerP));
      for (const prefix of [peerP.remotePod, peerP.remoteExternal]) dp.maps.routes.delete(prefix);
    });
    after(() => dp?.close());

    it("IPv6 to and from P is translated, through P's tunnel", async () => {
      const toP = frame6({ src: localPod, dst: podOfP }, tcp);
      dp.expect('fromPod', toP, TC_ACT_REDIRECT, frame6({ src: src6(localPod), dst: podOfP }, tcp, macsToward(peerP)));
      assert.deepEqual((await dp.tunnelOf('fromPod', toP)).tunnel, { remote: peerP.endpoint, vni: peerP.vni, ttl: 64 });
      dp.expect(
        'fromOverlay',
        fromP(tcp, src6(localPod)),
        TC_ACT_OK,
        frame6({ src: podOfP, dst: localPod }, tcp, { dst: peerP.srcMac, src: peerP.dstMac }),
      );
    });

    it("IPv4 toward P's networks of old and from P's tunnel passes untouched, nothing counted; Q's IPv4 is still translated", () => {
      ipv4Passes(dp, frame({ src: pod4, dst: '172.16.0.5' }, tcp), fromP4(translate(pod4, peerP.localNatPod)));
      dp.expect(
        'fromPod',
        frame({ src: pod4, dst: '10.32.0.5' }, tcp),
        TC_ACT_REDIRECT,
        frame({ src: translate(pod4, peerQ.localNatPod), dst: '10.32.0.5' }, tcp, macsToward(peerQ)),
      );
    });

    describe("while a reconcile has written P's entry but not yet removed its IPv4 routes", () => {
      before(() => {
        for (const [prefix, kind] of [
          [peerP.remotePod, PrefixKind.Pod],
          [peerP.remoteExternal, PrefixKind.External],
        ] as const)
          dp.maps.routes.update(prefix, { peerId: peerP.id, kind });
      });
      after(() => {
        for (const prefix of [peerP.remotePod, peerP.remoteExternal]) dp.maps.routes.delete(prefix);
      });

      it("our IPv4 toward P is dropped as NO_PEER (never sent with our own address), P's to its view of us as NOT_OURS", () => {
        dp.expectDrop('fromPod', frame({ src: pod4, dst: '172.16.0.5' }, tcp), DropReason.NoPeer);
        dp.expectDrop('fromPod', frame({ src: '10.201.5.7', dst: '172.16.0.5' }, udp), DropReason.NoPeer);
        dp.expectDrop('fromOverlay', fromP4(translate(pod4, peerP.localNatPod)), DropReason.NotOurs);
      });

      it('nothing is in the absent network (property): from P any destination is NOT_OURS; toward P a source of ours is NO_PEER, any other leaves as it was', () => {
        const ipv4 = fc.oneof(fc.ipV4(), fc.constantFrom('0.0.0.0', '255.255.255.255', '10.60.0.1', '10.70.9.1'));
        const ours = (a: string) => [home.pod, home.external].some((c) => translate(a, c) === a);
        fc.assert(
          fc.property(ipv4, ipv4, (dst, src) => {
            dp.expectDrop('fromOverlay', fromP4(dst), DropReason.NotOurs);
            const toP = frame({ src, dst: '172.16.0.5' }, udp);
            if (ours(src)) dp.expectDrop('fromPod', toP, DropReason.NoPeer);
            else {
              const r = dp.run('fromPod', toP);
              assert.equal(r.retval, TC_ACT_REDIRECT);
              const out = parseIpv4(r.data)!;
              assert.deepEqual([out.src, out.dst], [src, '172.16.0.5']);
            }
          }),
          { numRuns: 300 },
        );
      });
    });
  });

  it('a node without an IPv6 family drops nothing IPv6 and translates nothing', async () => {
    const dp = (await Datapath.load()).program('gateway');
    try {
      for (const f of [frame6({ src: localPod, dst: podOfP }, tcp), fromP(tcp, translate6(localPod, peerP6.localNatPod))]) {
        dp.expect('fromPod', f, TC_ACT_OK, f);
        dp.expect('fromOverlay', f, TC_ACT_OK, f);
      }
      assert.deepEqual(
        dp.drops(),
        dp.drops().map(() => 0),
      );
    } finally {
      dp.close();
    }
  });

  it('translates any prefix length, /0 to /128, keeping the host bits', () => {
    // The independent helper agrees with hand-computed cases; the datapath is checked against it above.
    assert.equal(translate6('fd00:a::7:0:0:9', peerP6.localNatPod), 'fd60:6::7:0:0:9');
    assert.equal(translate6('fd10:33::3f', { addr: 'fd10:33::20', prefixLen: 123 }), 'fd10:33::3f');
    assert.equal(translate6('fd10:33::3f', { addr: 'fd10:44::40', prefixLen: 123 }), 'fd10:44::5f');
    assert.equal(translate6('1::1', { addr: '::', prefixLen: 0 }), '1::1');
    assert.equal(translate6('1::1', { addr: '2::2', prefixLen: 128 }), '2::2');
  });
});
