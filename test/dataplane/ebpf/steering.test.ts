import assert from 'node:assert/strict';
import { CONFIG_KEY, DropReason } from '../../../src/dataplane/ebpf/layout';
import { requireRoot } from '../../support/kernel';
import { EtherType, type L4, ethernet, frame, frame6, macsOf } from '../../support/packet';
import {
  Datapath,
  PACKET_HOST,
  PACKET_OTHERHOST,
  TC_ACT_OK,
  TC_ACT_REDIRECT,
  home,
  macsToward,
  otherNode,
  overlayMacs,
  peerP,
  peerQ,
  type Role,
  underlay6,
} from './fixture';
import { peerP6, programIpv6, translate6 } from './fixture6';

const tcp: L4 = { kind: 'tcp', sport: 40000, dport: 443, payload: Buffer.from('hello') };
const localPod = '10.0.7.9';

describe('datapath: steering, tunnels and pass-through (BPF_PROG_TEST_RUN)', function () {
  requireRoot(this);

  describe('on a worker', () => {
    let dp: Datapath;
    before(async () => {
      dp = (await Datapath.load()).program('worker');
    });
    after(() => dp?.close());

    it('sends traffic for any remote prefix to the active gateway on the overlay VNI, untranslated', async () => {
      for (const dst of ['172.16.4.5', '192.168.40.1', '10.32.1.2', '10.33.0.33']) {
        dp.expect('fromPod', frame({ src: localPod, dst }, tcp), TC_ACT_REDIRECT, frame({ src: localPod, dst }, tcp, overlayMacs));
        assert.deepEqual(await dp.tunnelOf('fromPod', frame({ src: localPod, dst }, tcp)), {
          retval: TC_ACT_REDIRECT,
          tunnel: { remote: home.gateway, vni: home.overlayVni, ttl: 64 },
        });
      }
    });

    it('leaves other traffic alone, and lets the kernel deliver what arrives on the overlay', async () => {
      const local = frame({ src: localPod, dst: '10.0.8.1' }, tcp);
      dp.expect('fromPod', local, TC_ACT_OK, local);
      assert.deepEqual(await dp.tunnelOf('fromPod', local), { retval: TC_ACT_OK });
      const fromGateway = frame({ src: '172.16.4.5', dst: localPod }, tcp);
      dp.expect('fromOverlay', fromGateway, TC_ACT_OK, fromGateway);
    });
  });

  describe('on a standby gateway', () => {
    let dp: Datapath;
    before(async () => {
      dp = (await Datapath.load()).program('standby');
    });
    after(() => dp?.close());

    it('translates what a peer or a node whose probes chose it sends, as the gateway does; its own pods go through the gateway', async () => {
      const fromP = frame({ src: '172.16.4.5', dst: '10.60.3.77' }, tcp);
      dp.expect('fromOverlay', fromP, TC_ACT_REDIRECT, frame({ src: '172.16.4.5', dst: '10.0.3.77' }, tcp, overlayMacs));
      const fromWorker = frame({ src: localPod, dst: '10.32.0.9' }, tcp);
      assert.deepEqual((await dp.tunnelOf('fromOverlay', fromWorker)).tunnel, { remote: peerQ.endpoint, vni: peerQ.vni, ttl: 64 });
      assert.deepEqual(await dp.tunnelOf('fromPod', frame({ src: localPod, dst: '172.16.4.5' }, tcp)), {
        retval: TC_ACT_REDIRECT,
        tunnel: { remote: home.gateway, vni: home.overlayVni, ttl: 64 },
      });
    });

    it('what a gateway of ours delivers on the overlay VNI (already in the home view) goes to the kernel untouched; a peering VNI is translated', async () => {
      const delivered = frame({ src: '172.16.4.5', dst: '10.0.3.77' }, tcp);
      assert.deepEqual(await dp.fromOverlayOnVni(delivered, home.overlayVni), { retval: TC_ACT_OK, data: delivered });
      const fromP = frame({ src: '172.16.4.5', dst: '10.60.3.77' }, tcp);
      const translated = await dp.fromOverlayOnVni(fromP, peerP.vni);
      assert.equal(translated.retval, TC_ACT_REDIRECT);
      assert.deepEqual(translated.data, frame({ src: '172.16.4.5', dst: '10.0.3.77' }, tcp, overlayMacs));
    });
  });

  describe('on the gateway', () => {
    let dp: Datapath;
    before(async () => {
      dp = (await Datapath.load()).program('gateway');
    });
    after(() => dp?.close());

    it("toPeer uses the peer's gateway endpoint, VNI and inner MACs (the peering's wire format), from pods and from workers", async () => {
      for (const [from, dst, peer] of [
        ['fromPod', '172.16.4.5', peerP],
        ['fromPod', '10.33.0.40', peerQ],
        ['fromOverlay', '10.32.0.9', peerQ],
      ] as const) {
        const input = frame({ src: localPod, dst }, tcp);
        assert.deepEqual((await dp.tunnelOf(from, input)).tunnel, { remote: peer.endpoint, vni: peer.vni, ttl: 64 });
        assert.deepEqual(macsOf(dp.run(from, input).data), macsToward(peer), `${from} ${dst}`);
      }
    });

    it("a frame from a peer is addressed to our tunnel MAC, not the overlay device's: delivered to the kernel, it is marked the device's own", async () => {
      // BPF_PROG_TEST_RUN sets the packet type from the frame's destination MAC like the VXLAN device
      // does: another host's. The IP layer would drop it as such.
      const fromP = frame({ src: '172.16.4.5', dst: '10.60.0.5' }, tcp, { dst: peerP.srcMac, src: peerP.dstMac });
      assert.deepEqual(await dp.pktTypeOf('fromOverlay', fromP), { retval: TC_ACT_OK, pktType: PACKET_HOST });
      // Anything else the gateway passes keeps its type (the kernel's to judge).
      const notForPeers = frame({ src: '192.0.2.7', dst: '10.0.0.5' }, tcp);
      assert.deepEqual(await dp.pktTypeOf('fromOverlay', notForPeers), { retval: TC_ACT_OK, pktType: PACKET_OTHERHOST });
    });

    it('symmetric routing: traffic from a peer for a pod on another node is sent to that node', async () => {
      const input = frame({ src: '172.16.4.5', dst: '10.60.3.77' }, tcp);
      dp.expect('fromOverlay', input, TC_ACT_REDIRECT, frame({ src: '172.16.4.5', dst: '10.0.3.77' }, tcp, overlayMacs));
      assert.deepEqual(await dp.tunnelOf('fromOverlay', input), {
        retval: TC_ACT_REDIRECT,
        tunnel: { remote: otherNode.underlay, vni: home.overlayVni, ttl: 64 },
      });
    });

    it("traffic from a peer for a pod on the gateway's own node, or on no known node, goes to the kernel", async () => {
      for (const [dst, delivered] of [
        ['10.60.0.5', '10.0.0.5'],
        ['10.60.200.1', '10.0.200.1'],
      ] as const) {
        const input = frame({ src: '172.16.4.5', dst }, tcp);
        dp.expect('fromOverlay', input, TC_ACT_OK, frame({ src: '172.16.4.5', dst: delivered }, tcp));
        assert.deepEqual(await dp.tunnelOf('fromOverlay', input), { retval: TC_ACT_OK });
      }
    });

    it('passes ARP, and IPv6 while no IPv6 route is programmed, untouched', () => {
      const arp = ethernet(Buffer.concat([Buffer.from('0001080006040001', 'hex'), Buffer.alloc(20, 0x0a)]), undefined, EtherType.ARP);
      // An IPv6 header whose bytes 12..20 would read, as IPv4, as addresses in a peer's prefix.
      const v6 = Buffer.alloc(60);
      v6.writeUInt8(0x60, 0);
      v6.set([172, 16, 4, 5, 10, 60, 7, 9], 12);
      const ipv6 = ethernet(v6, undefined, EtherType.IPv6);
      for (const f of [arp, ipv6]) {
        dp.expect('fromPod', f, TC_ACT_OK, f);
        dp.expect('fromOverlay', f, TC_ACT_OK, f);
      }
    });
  });

  it('an unprogrammed node drops traffic for a remote prefix from pods, and passes the overlay', async () => {
    const dp = (await Datapath.load()).program('gateway');
    try {
      // What strait_config holds before the agent writes it: an array's element, zeroed.
      const zero = { addr: '0.0.0.0', prefixLen: 0 };
      dp.maps.config.update(CONFIG_KEY, {
        podCidr: zero,
        externalCidr: zero,
        nodeAddr: '0.0.0.0',
        gatewayAddr: '0.0.0.0',
        transitAddr: '0.0.0.0',
        overlayIfindex: 0,
        overlayVni: 0,
        flags: 0,
        overlayMac: '00:00:00:00:00:00',
        tunnelMtu: 0,
        nodeAddr6: '::',
        gatewayAddr6: '::',
      });
      dp.expectDrop('fromPod', frame({ src: localPod, dst: '172.16.4.5' }, tcp), DropReason.NoConfig);
      const f = frame({ src: '172.16.4.5', dst: '10.60.7.9' }, tcp);
      dp.expect('fromOverlay', f, TC_ACT_OK, f);
    } finally {
      dp.close();
    }
  });

  describe('on an IPv6 underlay (every tunnel end in IPv6: the IPv4 fields 0)', () => {
    const pod6 = 'fd00:a:0:8000:7::9';
    const otherNodePod6 = 'fd00:a:0:ffff::77';
    const podOfP6 = 'fd17:16:0:1::5';
    const load = async (role: Role) => programIpv6((await Datapath.load()).program(role, 6), 6);

    it("a worker sends peer traffic of both families to the gateway's IPv6 underlay address, on the overlay VNI", async () => {
      const dp = await load('worker');
      try {
        for (const input of [frame({ src: localPod, dst: '172.16.4.5' }, tcp), frame6({ src: pod6, dst: podOfP6 }, tcp)])
          assert.deepEqual(await dp.tunnelOf('fromPod', input), {
            retval: TC_ACT_REDIRECT,
            tunnel: { remote: underlay6.gateway, vni: home.overlayVni, ttl: 64 },
          });
      } finally {
        dp.close();
      }
    });

    it("the gateway sends to a peer's IPv6 endpoint with its VNI and MACs, packets of both families, from pods and from workers", async () => {
      const dp = await load('gateway');
      try {
        for (const [from, input, peer] of [
          ['fromPod', frame({ src: localPod, dst: '172.16.4.5' }, tcp), peerP],
          ['fromOverlay', frame({ src: localPod, dst: '10.32.0.9' }, tcp), peerQ],
          ['fromPod', frame6({ src: pod6, dst: podOfP6 }, tcp), peerP],
        ] as const) {
          assert.deepEqual(await dp.tunnelOf(from, input), {
            retval: TC_ACT_REDIRECT,
            tunnel: { remote: peer.endpoint6, vni: peer.vni, ttl: 64 },
          });
          assert.deepEqual(macsOf(dp.run(from, input).data), macsToward(peer));
        }
      } finally {
        dp.close();
      }
    });

    it("symmetric routing by IPv6 underlay address: a pod on another node is tunnelled to it, one on the gateway's own goes to the kernel", async () => {
      const dp = await load('gateway');
      try {
        for (const input of [
          frame({ src: '172.16.4.5', dst: '10.60.3.77' }, tcp, { dst: peerP.srcMac, src: peerP.dstMac }),
          frame6({ src: podOfP6, dst: translate6(otherNodePod6, peerP6.localNatPod) }, tcp, { dst: peerP.srcMac, src: peerP.dstMac }),
        ])
          assert.deepEqual(await dp.tunnelOf('fromOverlay', input), {
            retval: TC_ACT_REDIRECT,
            tunnel: { remote: underlay6.otherNode, vni: home.overlayVni, ttl: 64 },
          });
        for (const input of [
          frame({ src: '172.16.4.5', dst: '10.60.0.5' }, tcp, { dst: peerP.srcMac, src: peerP.dstMac }),
          frame6({ src: podOfP6, dst: translate6(pod6, peerP6.localNatPod) }, tcp, { dst: peerP.srcMac, src: peerP.dstMac }),
        ])
          assert.deepEqual(await dp.tunnelOf('fromOverlay', input), { retval: TC_ACT_OK });
      } finally {
        dp.close();
      }
    });

    it('a standby tells the overlay VNI from a peering VNI on a tunnel over IPv6 as over IPv4', async () => {
      const dp = await load('standby');
      try {
        // The same frame: in P's view of us on P's VNI, in the home view (where 10.60/16 is no pod of ours) on the overlay's.
        const input = frame({ src: '172.16.4.5', dst: '10.60.3.77' }, tcp);
        assert.deepEqual(await dp.fromOverlayOnVni(input, home.overlayVni, 6), { retval: TC_ACT_OK, data: input });
        const translated = await dp.fromOverlayOnVni(input, peerP.vni, 6);
        assert.equal(translated.retval, TC_ACT_REDIRECT);
        assert.deepEqual(translated.data, frame({ src: '172.16.4.5', dst: '10.0.3.77' }, tcp, overlayMacs));
      } finally {
        dp.close();
      }
    });
  });
});
