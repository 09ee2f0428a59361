import assert from 'node:assert/strict';
import { DropReason, Flags, PrefixKind } from '../../../src/dataplane/ebpf/layout';
import { requireRoot } from '../../support/kernel';
import { type L4, frame } from '../../support/packet';
import { Datapath, TC_ACT_OK, TC_ACT_REDIRECT, configFor, home, macsToward, overlayMacs, peerP, peerQ, translate } from './fixture';

/** One of each L4 kind the translation must keep valid. */
const l4s: [string, L4][] = [
  ['TCP', { kind: 'tcp', sport: 40000, dport: 80, payload: Buffer.from('GET / HTTP/1.1\r\n') }],
  ['UDP', { kind: 'udp', sport: 5353, dport: 53, payload: Buffer.from('query!') }],
  ['UDP with a zero checksum', { kind: 'udp', sport: 5353, dport: 53, payload: Buffer.from('no checksum'), zeroChecksum: true }],
  ['ICMP echo', { kind: 'icmp-echo', type: 8, id: 0x4242, payload: Buffer.from('ping') }],
];

describe('datapath: gateway translation (BPF_PROG_TEST_RUN)', function () {
  requireRoot(this);
  let dp: Datapath;
  before(async () => {
    dp = (await Datapath.load()).program('gateway');
  });
  after(() => dp?.close());

  const localPod = '10.0.7.9';
  const podOfP = '172.16.4.5';
  const podOfQ = '10.32.1.2';

  for (const [what, l4] of l4s) {
    describe(what, () => {
      it('toPeer P (remapped): the source becomes the same host in P.localNatPod, then the tunnel to P', () => {
        dp.expect(
          'fromPod',
          frame({ src: localPod, dst: podOfP }, l4),
          TC_ACT_REDIRECT,
          frame({ src: translate(localPod, peerP.localNatPod), dst: podOfP }, l4, macsToward(peerP)),
        );
        assert.equal(translate(localPod, peerP.localNatPod), '10.60.7.9');
      });

      it('toPeer Q (not remapped): only the inner MACs change, to those of the peering with Q', () => {
        dp.expect(
          'fromPod',
          frame({ src: localPod, dst: podOfQ }, l4),
          TC_ACT_REDIRECT,
          frame({ src: localPod, dst: podOfQ }, l4, macsToward(peerQ)),
        );
      });

      it('from P: a destination in P.localNatPod becomes the same host in our PodCIDR', () => {
        const input = frame({ src: podOfP, dst: '10.60.7.9' }, l4);
        dp.expect('fromOverlay', input, TC_ACT_OK, frame({ src: podOfP, dst: localPod }, l4));
      });

      it('from P: a destination in P.localNatExternal goes through the NatMapping', () => {
        // 10.70.9.7 → 10.201.5.7 (ExternalCIDR) → 10.0.3.4, a pod on another node: encapsulated there.
        const input = frame({ src: podOfP, dst: '10.70.9.7' }, l4);
        dp.expect('fromOverlay', input, TC_ACT_REDIRECT, frame({ src: podOfP, dst: '10.0.3.4' }, l4, overlayMacs));
      });

      it('from Q: our own view, a pod address stays, an ExternalCIDR address is mapped', () => {
        dp.expect('fromOverlay', frame({ src: podOfQ, dst: localPod }, l4), TC_ACT_OK, frame({ src: podOfQ, dst: localPod }, l4));
        dp.expect(
          'fromOverlay',
          frame({ src: podOfQ, dst: '10.201.5.7' }, l4),
          TC_ACT_REDIRECT,
          frame({ src: podOfQ, dst: '10.0.3.4' }, l4, overlayMacs),
        );
      });
    });
  }

  it('toPeer: a source in our ExternalCIDR becomes the same host in P.localNatExternal', () => {
    const l4 = l4s[0]![1];
    dp.expect(
      'fromPod',
      frame({ src: '10.201.5.7', dst: podOfP }, l4),
      TC_ACT_REDIRECT,
      frame({ src: '10.70.9.7', dst: podOfP }, l4, macsToward(peerP)),
    );
  });

  it("toPeer: a destination in P's remote ExternalCIDR (/20) is routed to P", () => {
    const l4 = l4s[1]![1];
    dp.expect(
      'fromPod',
      frame({ src: localPod, dst: '192.168.47.254' }, l4),
      TC_ACT_REDIRECT,
      frame({ src: '10.60.7.9', dst: '192.168.47.254' }, l4, macsToward(peerP)),
    );
    // Just outside the /20: not ours.
    const outside = frame({ src: localPod, dst: '192.168.48.1' }, l4);
    dp.expect('fromPod', outside, TC_ACT_OK, outside);
  });

  it('from a worker: traffic to a peer arriving on the overlay gets toPeer', () => {
    const l4 = l4s[0]![1];
    dp.expect(
      'fromOverlay',
      frame({ src: localPod, dst: podOfP }, l4),
      TC_ACT_REDIRECT,
      frame({ src: '10.60.7.9', dst: podOfP }, l4, macsToward(peerP)),
    );
  });

  it('passes traffic that is not for a peer untouched', () => {
    const l4 = l4s[0]![1];
    for (const f of [frame({ src: localPod, dst: '10.0.9.9' }, l4), frame({ src: '8.8.8.8', dst: localPod }, l4)]) {
      dp.expect('fromPod', f, TC_ACT_OK, f);
      dp.expect('fromOverlay', f, TC_ACT_OK, f);
    }
  });

  it('drops from P what is addressed outside both of our views in P (e.g. our own PodCIDR)', () => {
    // 10.0.7.9 is our real address; P must use 10.60.7.9: a rule using the home prefix would accept it.
    dp.expectDrop('fromOverlay', frame({ src: podOfP, dst: localPod }, l4s[0]![1]), DropReason.NotOurs);
    dp.expectDrop('fromOverlay', frame({ src: podOfP, dst: '10.201.5.7' }, l4s[0]![1]), DropReason.NotOurs);
  });

  it('drops an ExternalCIDR address without a NatMapping', () => {
    dp.expectDrop('fromOverlay', frame({ src: podOfP, dst: '10.70.9.99' }, l4s[1]![1]), DropReason.NoNatMapping);
  });

  it('drops traffic routed to a peer that is not programmed', () => {
    dp.maps.routes.update({ addr: '198.51.100.0', prefixLen: 24 }, { peerId: 9, kind: PrefixKind.Pod });
    try {
      dp.expectDrop('fromPod', frame({ src: localPod, dst: '198.51.100.7' }, l4s[0]![1]), DropReason.NoPeer);
      dp.expectDrop('fromOverlay', frame({ src: '198.51.100.7', dst: '10.60.7.9' }, l4s[0]![1]), DropReason.NoPeer);
    } finally {
      dp.maps.routes.delete({ addr: '198.51.100.0', prefixLen: 24 });
    }
  });

  describe('keeps the host bits for every prefix length', () => {
    afterEach(() => dp.program('gateway'));
    const host = '77.123.45.201';
    for (const len of [0, 1, 7, 8, 12, 16, 20, 24, 27, 30, 31, 32]) {
      it(`/${len}`, () => {
        // 10/x and 172.64/x differ in their first bit, so in every prefix length 1..32.
        const ourPod = { addr: '10.0.0.0', prefixLen: len };
        const natPod = { addr: '172.64.0.0', prefixLen: len };
        dp.maps.config.update(0, configFor('gateway', { podCidr: ourPod, externalCidr: { addr: '203.0.113.0', prefixLen: 32 } }));
        dp.maps.peers.update(peerP.id, { ...peerP, localNatPod: natPod, localNatExternal: { addr: '198.18.0.1', prefixLen: 32 } });
        const src = translate(host, ourPod);
        const l4 = l4s[0]![1];
        const seen = translate(src, natPod);
        if (len > 0) assert.notEqual(seen, src);
        dp.expect('fromPod', frame({ src, dst: podOfP }, l4), TC_ACT_REDIRECT, frame({ src: seen, dst: podOfP }, l4, macsToward(peerP)));
        dp.expect('fromOverlay', frame({ src: podOfP, dst: seen }, l4), TC_ACT_OK, frame({ src: podOfP, dst: src }, l4));
      });
    }
  });

  it('workers do not translate on the overlay', async () => {
    const worker = (await Datapath.load()).program('worker');
    try {
      const f = frame({ src: podOfP, dst: '10.60.7.9' }, l4s[0]![1]);
      worker.expect('fromOverlay', f, TC_ACT_OK, f);
      assert.equal(configFor('worker').flags & Flags.Gateway, 0);
    } finally {
      worker.close();
    }
  });

  it('keeps home and peer views distinct in the fixture (the four prefixes of P differ)', () => {
    const four = [peerP.remotePod, peerP.remoteExternal, peerP.localNatPod, peerP.localNatExternal].map((c) => `${c.addr}/${c.prefixLen}`);
    assert.equal(new Set([...four, `${home.pod.addr}/16`, `${home.external.addr}/24`]).size, 6);
    assert.deepEqual(peerQ.localNatPod, home.pod);
  });
});
