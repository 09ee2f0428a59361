/**
 * The datapath's cost per packet under BPF_PROG_TEST_RUN, as a ratio to the empty TC program measured
 * in the same run just before each figure. BPF_PROG_TEST_RUN repeats the program on the same skb, which keeps each run's
 * rewrite; so each measured configuration is a 2-cycle (run n undoes run n-1), and every one of the
 * repeats does the full translation, not a cheap miss after the first. The bench checks the cycle.
 */
import assert from 'node:assert/strict';
import { BpfObject, type BpfProgram } from '../../src/native';
import { configFor, Datapath, peerP, peerQ, TC_ACT_OK, TC_ACT_REDIRECT } from '../dataplane/ebpf/fixture';
import { frame, frame6 } from '../support/packet';
import { peerP6 } from '../dataplane/ebpf/fixture6';
import { emptyProgramPath, nsPerPacket, udpFrame } from './maps.bench';
import { type BenchFigure, type BenchSuite, median } from './result';

const SIZES = [1, 1_000, 100_000];

/** A figure and the empty program's, measured just before it: the floor drifts on a shared VM. */
interface Measured {
  ns: number;
  floor: number;
}
type Measure = (prog: BpfProgram, frame: Buffer) => Measured;
const BATCH = 10_000;

const u32ToAddr = (n: number) => [24, 16, 8, 0].map((s) => (n >>> s) & 255).join('.');
const addrToU32 = (a: string) => a.split('.').reduce((acc, x) => acc * 256 + Number(x), 0);

/**
 * Two runs on the same skb must give back the input datagram (the MACs stay rewritten), with `verdict`
 * and a translated datagram in between.
 */
function assertTwoCycle(dp: Datapath, name: 'fromPod' | 'fromOverlay', input: Buffer, verdict: number): void {
  const once = dp.run(name, input);
  assert.equal(once.retval, verdict, `${name}: verdict`);
  const ip = (f: Buffer) => f.subarray(14).toString('hex');
  assert.notEqual(ip(once.data), ip(input), `${name}: the packet is translated`);
  const twice = dp.prog(name).testRun(input, { repeat: 2 });
  assert.equal(ip(twice.data), ip(input), `${name}: the second run undoes the first`);
}

/**
 * strait_from_overlay on a gateway: a UDP packet from P's pod to one of our ExternalCIDR addresses in
 * P's view, translated to our ExternalCIDR, then through a NatMapping among `count`. The measured pair
 * maps A → B' and B → A' (B', A': P's view), so the output is again a packet from P to an address of us.
 */
async function natMappingFigure(count: number, measure: Measure): Promise<Measured> {
  const dp = await Datapath.load();
  try {
    const external = { addr: '10.128.0.0', prefixLen: 14 }; // room for 100,000 NatMappings
    const seen = { addr: '100.64.0.0', prefixLen: 14 };
    dp.maps.config.update(0, configFor('gateway', { externalCidr: external }));
    dp.addPeer({ ...peerP, localNatExternal: seen });
    const base = addrToU32(external.addr);
    const entries: [string, string][] = [];
    for (let i = 2; i < count; i++) entries.push([u32ToAddr(base + i), `10.0.${(i >> 8) & 255}.${i & 255}`]);
    const inSeen = (a: number) => u32ToAddr(addrToU32(seen.addr) + (a - base));
    entries.push([u32ToAddr(base), inSeen(base + 1)], [u32ToAddr(base + 1), inSeen(base)]);
    for (let i = 0; i < entries.length; i += BATCH) dp.maps.natmap.updateBatch(entries.slice(i, i + BATCH));
    assert.equal(dp.maps.natmap.lookupBatch().length, Math.max(count, 2));
    const input = frame({ src: '172.16.4.5', dst: inSeen(base) }, { kind: 'udp', sport: 1234, dport: 80, payload: Buffer.alloc(22) });
    assertTwoCycle(dp, 'fromOverlay', input, TC_ACT_OK);
    return measure(dp.prog('fromOverlay'), input);
  } finally {
    dp.close();
  }
}

/**
 * strait_from_pod on a gateway: a pod's UDP packet toward P, source translated, tunnel key set, MACs
 * rewritten, redirected. P sees our PodCIDR as our ExternalCIDR and the other way round, so the
 * translated source is again one of ours.
 */
async function toPeerFigure(measure: Measure): Promise<Measured> {
  const dp = await Datapath.load();
  try {
    const pod = { addr: '10.0.0.0', prefixLen: 16 };
    const external = { addr: '10.1.0.0', prefixLen: 16 };
    dp.maps.config.update(0, configFor('gateway', { podCidr: pod, externalCidr: external }));
    dp.addPeer({ ...peerP, localNatPod: external, localNatExternal: pod });
    const input = frame({ src: '10.0.7.9', dst: '172.16.4.5' }, { kind: 'udp', sport: 1234, dport: 80, payload: Buffer.alloc(22) });
    assertTwoCycle(dp, 'fromPod', input, TC_ACT_REDIRECT);
    return measure(dp.prog('fromPod'), input);
  } finally {
    dp.close();
  }
}

/**
 * strait_from_overlay on the hub: an established transit flow (NatMapping DNAT, SNAT to the transit
 * address through strait_snat, toPeer). For the 2-cycle each peer sees our ExternalCIDR inside its own
 * remote PodCIDR, so the translated packet is again a transit packet, from the other peer: flow 1 goes
 * from Q's 100.65.1.250:40001 to P's 100.64.1.9:53 and leaves as P's view of the transit address,
 * 100.64.1.250:50000; that is flow 2, toward Q's 100.65.1.8:53, which leaves from 100.65.1.250:40001
 * again. Both flows are in strait_snat (both halves) with those ports, as after their first packets.
 */
async function transitFigure(measure: Measure): Promise<Measured> {
  const dp = await Datapath.load();
  try {
    const external = { addr: '10.201.5.0', prefixLen: 24 };
    const transit = '10.201.5.250';
    dp.maps.config.update(0, configFor('gateway', { externalCidr: external, transitAddr: transit }));
    const pSees = { addr: '100.64.1.0', prefixLen: 24 };
    const qSees = { addr: '100.65.1.0', prefixLen: 24 };
    dp.addPeer({ ...peerP, remotePod: pSees, localNatExternal: pSees });
    dp.addPeer({ ...peerQ, remotePod: qSees, localNatExternal: qSees });
    const [pPod, qPod, pTransit, qTransit] = ['100.64.1.9', '100.65.1.8', '100.64.1.250', '100.65.1.250'];
    dp.mapExternal('10.201.5.8', pPod); // Q sends to 100.65.1.8
    dp.mapExternal('10.201.5.9', qPod); // P sends to 100.64.1.9
    const udp = 17;
    const flow = (saddr: string, daddr: string, sport: number, port: number) => {
      dp.maps.snat.update({ saddr, daddr, sport, dport: 53, proto: udp }, { addr: transit, port, flags: 0, closedNs: 0n });
      dp.maps.snat.update(
        { saddr: daddr, daddr: transit, sport: 53, dport: port, proto: udp },
        { addr: saddr, port: sport, flags: 0, closedNs: 0n },
      );
    };
    flow(qTransit, pPod, 40001, 50000);
    flow(pTransit, qPod, 50000, 40001);
    const input = frame({ src: qTransit, dst: '100.65.1.8' }, { kind: 'udp', sport: 40001, dport: 53, payload: Buffer.alloc(22) });
    assertTwoCycle(dp, 'fromOverlay', input, TC_ACT_REDIRECT);
    assert.equal([...dp.maps.snat.keys()].length, 4, 'no new flow');
    return measure(dp.prog('fromOverlay'), input);
  } finally {
    dp.close();
  }
}

/** `toPeerFigure` in IPv6: the same swap of P's views, on L's IPv6 family (the tunnel stays IPv4). */
async function toPeer6Figure(measure: Measure): Promise<Measured> {
  const dp = await Datapath.load();
  try {
    const pod = { addr: 'fd00:a::', prefixLen: 48 };
    const external = { addr: 'fd00:b::', prefixLen: 48 };
    dp.maps.config.update(0, configFor('gateway'));
    dp.addPeer(peerP);
    dp.maps.config6.update(0, { podCidr: pod, externalCidr: external, transitAddr: 'fd00:b::fa' });
    dp.maps.peers6.update(peerP.id, { localNatPod: external, localNatExternal: pod });
    dp.maps.routes6.update(peerP6.remotePod, { peerId: peerP.id, kind: 0 });
    const input = frame6(
      { src: 'fd00:a:0:7::9', dst: 'fd17:16:0:1::5' },
      { kind: 'udp', sport: 1234, dport: 80, payload: Buffer.alloc(22) },
    );
    assertTwoCycle(dp, 'fromPod', input, TC_ACT_REDIRECT);
    return measure(dp.prog('fromPod'), input);
  } finally {
    dp.close();
  }
}

/**
 * `natMappingFigure` with one NatMapping, in IPv6: P's pod to our ExternalCIDR in P's view, through the
 * NatMapping to another address of P's view of us (the 2-cycle, as in IPv4).
 */
async function natMapping6Figure(measure: Measure): Promise<Measured> {
  const dp = await Datapath.load();
  try {
    const external = { addr: 'fd00:e::', prefixLen: 64 };
    const seen = { addr: 'fd70:9::', prefixLen: 64 };
    dp.maps.config.update(0, configFor('gateway'));
    dp.addPeer(peerP);
    dp.maps.config6.update(0, { podCidr: { addr: 'fd00:a::', prefixLen: 48 }, externalCidr: external, transitAddr: 'fd00:e::fa' });
    dp.maps.peers6.update(peerP.id, { localNatPod: { addr: 'fd60:6::', prefixLen: 48 }, localNatExternal: seen });
    dp.maps.routes6.update(peerP6.remotePod, { peerId: peerP.id, kind: 0 });
    // fd00:e::1 → fd70:9::2 (P's view of fd00:e::2) and back: the output is again a packet to an address of ours.
    for (const [ext, real] of [
      ['fd00:e::1', 'fd70:9::2'],
      ['fd00:e::2', 'fd70:9::1'],
    ]) {
      dp.maps.natmap6.update(ext, real);
      dp.maps.natmap6Rev.update(real, ext);
    }
    const input = frame6({ src: 'fd17:16:0:1::5', dst: 'fd70:9::1' }, { kind: 'udp', sport: 1234, dport: 80, payload: Buffer.alloc(22) });
    assertTwoCycle(dp, 'fromOverlay', input, TC_ACT_OK);
    return measure(dp.prog('fromOverlay'), input);
  } finally {
    dp.close();
  }
}

export const run: BenchSuite = async () => {
  const empty = await BpfObject.load(emptyProgramPath);
  try {
    const measure: Measure = (prog, f) => ({ floor: nsPerPacket(empty.program('empty'), udpFrame()), ns: nsPerPacket(prog, f) });
    const measured: [string, Measured][] = [];
    for (const count of SIZES) {
      measured.push([
        `strait_from_overlay, gateway, UDP from a peer to an ExternalCIDR address, ${count.toLocaleString('en')} NatMapping${count === 1 ? '' : 's'}`,
        await natMappingFigure(count, measure),
      ]);
    }
    measured.push([
      'strait_from_overlay, hub, UDP of an established transit flow (NatMapping, SNAT, toward the other peer)',
      await transitFigure(measure),
    ]);
    measured.push(['strait_from_pod, gateway, UDP toward a peer (source translated, tunnel key, redirect)', await toPeerFigure(measure)]);
    // The IPv6 paths beside their IPv4 twins (issue 29's goal: at most 1.2x the IPv4 cost).
    const ipv6: [string, string, Measured][] = [
      [
        'strait_from_pod, gateway, IPv6 UDP toward a peer (source translated, tunnel key, redirect)',
        measured.find(([name]) => name.startsWith('strait_from_pod, gateway, UDP toward a peer'))![0],
        await toPeer6Figure(measure),
      ],
      [
        'strait_from_overlay, gateway, IPv6 UDP from a peer to an ExternalCIDR address, 1 NatMapping',
        measured.find(([name]) => name.endsWith(', 1 NatMapping'))![0],
        await natMapping6Figure(measure),
      ],
    ];
    measured.push(...ipv6.map(([name, , m]): [string, Measured] => [name, m]));
    const note = '64-byte frame (IPv6: 84 bytes, the same payload), median of 5 x 1M';
    const ns = (name: string) => measured.find(([n]) => n === name)![1].ns;
    return [
      {
        suite: 'datapath',
        name: 'empty TC program (floor, median of the floors measured before each figure)',
        value: median(measured.map(([, m]) => m.floor)),
        unit: 'ns/packet',
        note,
      },
      ...measured.flatMap(([name, m]): BenchFigure[] => [
        { suite: 'datapath', name, value: m.ns, unit: 'ns/packet', note },
        {
          suite: 'datapath',
          name: `${name} / floor`,
          value: Number((m.ns / m.floor).toFixed(2)),
          unit: 'x',
          note: `floor ${m.floor} ns, measured just before`,
        },
      ]),
      ...ipv6.map(([name, twin]): BenchFigure => ({
        suite: 'datapath',
        name: `${name} / its IPv4 twin`,
        value: Number((ns(name) / ns(twin)).toFixed(2)),
        unit: 'x',
        note: `IPv4: ${ns(twin)} ns`,
      })),
    ];
  } finally {
    empty.close();
  }
};
