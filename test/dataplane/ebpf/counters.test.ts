import assert from 'node:assert/strict';
import { DROP_REASON_COUNT, DropReason } from '../../../src/dataplane/ebpf/layout';
import { requireRoot } from '../../support/kernel';
import { type L4, frame, frame6 } from '../../support/packet';
import { Datapath, type PeerCounts, TC_ACT_OK, TC_ACT_REDIRECT, noCounts, peerP, peerQ } from './fixture';
import { home6, natMappings6, peerP6, programIpv6, translate6 } from './fixture6';

const udp: L4 = { kind: 'udp', sport: 1000, dport: 2000, payload: Buffer.alloc(100, 1) };
const reply: L4 = { ...udp, payload: Buffer.alloc(10, 2) };

/**
 * Each family's packets on a dual-stack gateway L (fixture.ts, fixture6.ts): its peer P (remapped) and
 * Q (not remapped) carry both families, so a packet counted in the wrong family's map shows.
 */
interface Family {
  name: 'ipv4' | 'ipv6';
  /** From our pod to P's, and to Q's. */
  toP: Buffer;
  toQ: Buffer;
  /** From P's pod to ours, in P's view of us. */
  fromP: Buffer;
  /** From Q's pod to a pod of P reflected to Q (hub transit). */
  transit: Buffer;
  /** To a pod on this node: not a peer's. */
  local: Buffer;
  /** From P to an ExternalCIDR address no NatMapping holds, and to the transit address with no flow behind it. */
  unmapped: Buffer;
  noFlow: Buffer;
}

const ipv6Pod = 'fd00:a:0:8000:7::9';
const families: Family[] = [
  {
    name: 'ipv4',
    toP: frame({ src: '10.0.7.9', dst: '172.16.4.5' }, udp),
    toQ: frame({ src: '10.0.7.9', dst: '10.32.0.1' }, udp),
    fromP: frame({ src: '172.16.4.5', dst: '10.60.7.9' }, reply),
    transit: frame({ src: '10.32.1.2', dst: '10.201.5.8' }, udp),
    local: frame({ src: '10.0.7.9', dst: '10.0.8.1' }, udp),
    unmapped: frame({ src: '172.16.4.5', dst: '10.70.9.99' }, udp),
    noFlow: frame({ src: '172.16.4.5', dst: '10.70.9.250' }, udp),
  },
  {
    name: 'ipv6',
    toP: frame6({ src: ipv6Pod, dst: 'fd17:16:0:1::5' }, udp),
    toQ: frame6({ src: ipv6Pod, dst: 'fd10:32:0:1a::5' }, udp),
    fromP: frame6({ src: 'fd17:16:0:1::5', dst: translate6(ipv6Pod, peerP6.localNatPod) }, reply),
    transit: frame6({ src: 'fd10:32:0:1a::5', dst: natMappings6[1]!.external }, udp),
    local: frame6({ src: ipv6Pod, dst: 'fd00:a:0:ffff::77' }, udp),
    unmapped: frame6({ src: 'fd17:16:0:1::5', dst: translate6('fd00:e:0:5f9::99', peerP6.localNatExternal) }, udp),
    noFlow: frame6({ src: 'fd17:16:0:1::5', dst: translate6(home6.transit, peerP6.localNatExternal) }, udp),
  },
];

/** `counts` in `family`'s counters, none in the other's. */
const only = (family: Family['name'], counts: Partial<PeerCounts>) => ({
  ipv4: noCounts,
  ipv6: noCounts,
  [family]: { ...noCounts, ...counts },
});

describe('datapath: counters (BPF_PROG_TEST_RUN)', function () {
  requireRoot(this);
  let dp: Datapath;
  beforeEach(async () => {
    dp = programIpv6((await Datapath.load()).program('gateway'));
  });
  afterEach(() => dp?.close());

  for (const f of families) {
    describe(f.name, () => {
      it("counts packets and bytes per peer in its family's counters: tx toward it, rx from it", () => {
        for (let i = 0; i < 3; i++) assert.equal(dp.run('fromPod', f.toP).retval, TC_ACT_REDIRECT);
        for (let i = 0; i < 2; i++) assert.equal(dp.run('fromOverlay', f.fromP).retval, TC_ACT_OK);
        assert.equal(dp.run('fromPod', f.toQ).retval, TC_ACT_REDIRECT);
        assert.deepEqual(
          dp.peerCounters(peerP.id),
          only(f.name, { txPackets: 3n, txBytes: BigInt(3 * f.toP.length), rxPackets: 2n, rxBytes: BigInt(2 * f.fromP.length) }),
        );
        assert.deepEqual(dp.peerCounters(peerQ.id), only(f.name, { txPackets: 1n, txBytes: BigInt(f.toQ.length) }));
      });

      it('counts nothing for traffic it does not translate, or drops', () => {
        assert.equal(dp.run('fromPod', f.local).retval, TC_ACT_OK);
        dp.run('fromOverlay', f.unmapped);
        // Translated to our view first, then dropped.
        dp.run('fromOverlay', f.noFlow);
        for (const peer of [peerP, peerQ]) assert.deepEqual(dp.peerCounters(peer.id), only(f.name, {}));
        const expected = Array<number>(DROP_REASON_COUNT).fill(0);
        expected[DropReason.NoNatMapping] = 1;
        expected[DropReason.TransitState] = 1;
        assert.deepEqual(dp.drops(), expected);
      });

      it('counts hub transit as rx from one peer and tx to the other', () => {
        assert.equal(dp.run('fromOverlay', f.transit).retval, TC_ACT_REDIRECT);
        assert.deepEqual(dp.peerCounters(peerQ.id), only(f.name, { rxPackets: 1n, rxBytes: BigInt(f.transit.length) }));
        assert.deepEqual(dp.peerCounters(peerP.id), only(f.name, { txPackets: 1n, txBytes: BigInt(f.transit.length) }));
      });
    });
  }

  it("counts a dual-stack peering's families apart", () => {
    const [v4, v6] = families;
    for (let i = 0; i < 2; i++) assert.equal(dp.run('fromPod', v4!.toP).retval, TC_ACT_REDIRECT);
    assert.equal(dp.run('fromPod', v6!.toP).retval, TC_ACT_REDIRECT);
    assert.equal(dp.run('fromOverlay', v6!.fromP).retval, TC_ACT_OK);
    assert.deepEqual(dp.peerCounters(peerP.id), {
      ipv4: { ...noCounts, txPackets: 2n, txBytes: BigInt(2 * v4!.toP.length) },
      ipv6: { txPackets: 1n, txBytes: BigInt(v6!.toP.length), rxPackets: 1n, rxBytes: BigInt(v6!.fromP.length) },
    });
  });
});
