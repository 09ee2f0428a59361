/**
 * The datapath's cost per packet under BPF_PROG_TEST_RUN, as a ratio to the empty TC program measured
 * in the same run just before each figure. BPF_PROG_TEST_RUN repeats the program on the same skb, which keeps each run's
 * rewrite; so each measured configuration is a 2-cycle (run n undoes run n-1), and every one of the
 * repeats does the full translation, not a cheap miss after the first. The bench checks the cycle.
 */
import assert from 'node:assert/strict';
import { BpfObject, type BpfProgram } from '../../src/native';
import { type IpFamily, formatIp, parseIp } from '../../src/net/cidr';
import { type PeerSetup, configFor, Datapath, home, peerP, peerQ, TC_ACT_OK, TC_ACT_REDIRECT } from '../dataplane/ebpf/fixture';
import { type L4, frame, frame6 } from '../support/packet';
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

type Prefix = { addr: string; prefixLen: number };

/** The address `offset` after the first of `prefix`. */
const hostAt = (prefix: Prefix, offset: number): string => {
  const base = parseIp('prefix', prefix.addr);
  return formatIp({ family: base.family, value: base.value + BigInt(offset) });
};

/** A gateway's networks in one family: its PodCIDR, ExternalCIDR and transit address, and P's views of the first two. */
interface FamilyNetworks {
  pod: Prefix;
  external: Prefix;
  transit: string;
  localNatPod: Prefix;
  localNatExternal: Prefix;
}

/**
 * What differs between the families for a figure: the frame, P's pod (a source from P) and how a
 * gateway's networks and NatMappings are installed (IPv6 is the secondary family, beside the IPv4
 * fixture's, its maps its own; the tunnel stays IPv4).
 */
const families: Record<
  IpFamily,
  {
    frame: (ip: { src: string; dst: string }, l4: L4) => Buffer;
    peerPod: string;
    install(dp: Datapath, networks: FamilyNetworks): void;
    /** NatMappings external → real, as many as a figure needs. */
    mapExternals(dp: Datapath, entries: [string, string][]): void;
    natmapEntries(dp: Datapath): number;
  }
> = {
  4: {
    frame,
    peerPod: '172.16.4.5',
    install(dp, { pod, external, transit, localNatPod, localNatExternal }) {
      dp.maps.config.update(0, configFor('gateway', { podCidr: pod, externalCidr: external, transitAddr: transit }));
      dp.addPeer({ ...peerP, localNatPod, localNatExternal });
    },
    mapExternals(dp, entries) {
      for (let i = 0; i < entries.length; i += BATCH) dp.maps.natmap.updateBatch(entries.slice(i, i + BATCH));
    },
    natmapEntries: (dp) => dp.maps.natmap.lookupBatch().length,
  },
  6: {
    frame: frame6,
    peerPod: 'fd17:16:0:1::5',
    install(dp, { pod, external, transit, localNatPod, localNatExternal }) {
      dp.maps.config.update(0, configFor('gateway'));
      dp.addPeer(peerP);
      dp.maps.config6.update(0, { podCidr: pod, externalCidr: external, transitAddr: transit });
      dp.maps.peers6.update(peerP.id, { localNatPod, localNatExternal });
      dp.maps.routes6.update(peerP6.remotePod, { peerId: peerP.id, kind: 0 });
    },
    mapExternals(dp, entries) {
      for (const [external, real] of entries) {
        dp.maps.natmap6.update(external, real);
        dp.maps.natmap6Rev.update(real, external);
      }
    },
    natmapEntries: (dp) => [...dp.maps.natmap6.keys()].length,
  },
};
const udpL4 = (): L4 => ({ kind: 'udp', sport: 1234, dport: 80, payload: Buffer.alloc(22) });

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

/** The gateway's networks for the NatMapping figures, by family (IPv4: room for 100,000 NatMappings). */
const natMappingNetworks: Record<IpFamily, FamilyNetworks> = {
  4: {
    pod: home.pod,
    external: { addr: '10.128.0.0', prefixLen: 14 },
    transit: home.transit,
    localNatPod: peerP.localNatPod,
    localNatExternal: { addr: '100.64.0.0', prefixLen: 14 },
  },
  6: {
    pod: { addr: 'fd00:a::', prefixLen: 48 },
    external: { addr: 'fd00:e::', prefixLen: 64 },
    transit: 'fd00:e::fa',
    localNatPod: peerP6.localNatPod,
    localNatExternal: { addr: 'fd70:9::', prefixLen: 64 },
  },
};

/**
 * strait_from_overlay on a gateway: a UDP packet from P's pod to one of our ExternalCIDR addresses in
 * P's view, translated to our ExternalCIDR, then through a NatMapping among `count`. The measured pair
 * maps A → B' and B → A' (B', A': P's view), so the output is again a packet from P to an address of us.
 */
async function natMappingFigure(family: IpFamily, count: number, measure: Measure): Promise<Measured> {
  const dp = await Datapath.load();
  try {
    const networks = natMappingNetworks[family];
    const { external, localNatExternal: seen } = networks;
    const of = families[family];
    of.install(dp, networks);
    // The pair: external+1 → P's view of external+2, and external+2 → P's view of external+1.
    const entries: [string, string][] = [
      [hostAt(external, 1), hostAt(seen, 2)],
      [hostAt(external, 2), hostAt(seen, 1)],
    ];
    for (let i = 3; i <= count; i++) entries.push([hostAt(external, i), hostAt(networks.pod, i)]);
    of.mapExternals(dp, entries);
    assert.equal(of.natmapEntries(dp), Math.max(count, 2));
    const input = of.frame({ src: of.peerPod, dst: hostAt(seen, 1) }, udpL4());
    assertTwoCycle(dp, 'fromOverlay', input, TC_ACT_OK);
    return measure(dp.prog('fromOverlay'), input);
  } finally {
    dp.close();
  }
}

/** The gateway's networks for the figures toward a peer, by family: P sees our PodCIDR as our ExternalCIDR and the other way round. */
const toPeerNetworks = (family: IpFamily): FamilyNetworks => {
  const [pod, external, transit]: [Prefix, Prefix, string] =
    family === 4
      ? [{ addr: '10.0.0.0', prefixLen: 16 }, { addr: '10.1.0.0', prefixLen: 16 }, home.transit]
      : [{ addr: 'fd00:a::', prefixLen: 48 }, { addr: 'fd00:b::', prefixLen: 48 }, 'fd00:b::fa'];
  return { pod, external, transit, localNatPod: external, localNatExternal: pod };
};

/**
 * strait_from_pod on a gateway: a pod's UDP packet toward P, source translated, tunnel key set, MACs
 * rewritten, redirected. P sees our PodCIDR as our ExternalCIDR and the other way round, so the
 * translated source is again one of ours.
 */
async function toPeerFigure(family: IpFamily, measure: Measure): Promise<Measured> {
  const dp = await Datapath.load();
  try {
    const networks = toPeerNetworks(family);
    families[family].install(dp, networks);
    const src = family === 4 ? '10.0.7.9' : 'fd00:a:0:7::9';
    const input = families[family].frame({ src, dst: families[family].peerPod }, udpL4());
    assertTwoCycle(dp, 'fromPod', input, TC_ACT_REDIRECT);
    return measure(dp.prog('fromPod'), input);
  } finally {
    dp.close();
  }
}

/**
 * The hub of the transit figure, by family: our ExternalCIDR, and P's and Q's views of it, each also that
 * peer's remote PodCIDR (transitFigure says why). IPv6 is the secondary family, beside the IPv4 fixture's.
 */
interface TransitHub {
  external: Prefix;
  pSees: Prefix;
  qSees: Prefix;
  /** Programs our ExternalCIDR and transit address, and each peer with its view of our ExternalCIDR. */
  install(dp: Datapath, external: Prefix, transit: string, peers: readonly (readonly [PeerSetup, Prefix])[]): void;
  /** A NatMapping, both ways, as the agent writes it. */
  mapExternal(dp: Datapath, external: string, real: string): void;
  snat(dp: Datapath): Datapath['maps']['snat'];
}

const transitHubs: Record<IpFamily, TransitHub> = {
  4: {
    external: home.external,
    pSees: { addr: '100.64.1.0', prefixLen: 24 },
    qSees: { addr: '100.65.1.0', prefixLen: 24 },
    install(dp, external, transit, peers) {
      dp.maps.config.update(0, configFor('gateway', { externalCidr: external, transitAddr: transit }));
      for (const [peer, sees] of peers) dp.addPeer({ ...peer, remotePod: sees, localNatExternal: sees });
    },
    mapExternal: (dp, external, real) => dp.mapExternal(external, real),
    snat: (dp) => dp.maps.snat,
  },
  6: {
    external: { addr: 'fd00:e::', prefixLen: 64 },
    pSees: { addr: 'fd64:1::', prefixLen: 64 },
    qSees: { addr: 'fd65:1::', prefixLen: 64 },
    install(dp, external, transit, peers) {
      dp.maps.config.update(0, configFor('gateway'));
      dp.maps.config6.update(0, { podCidr: { addr: 'fd00:a::', prefixLen: 48 }, externalCidr: external, transitAddr: transit });
      for (const [peer, sees] of peers) {
        dp.addPeer(peer);
        dp.maps.peers6.update(peer.id, { localNatPod: { addr: 'fd60:6::', prefixLen: 48 }, localNatExternal: sees });
        dp.maps.routes6.update(sees, { peerId: peer.id, kind: 0 });
      }
    },
    mapExternal(dp, external, real) {
      dp.maps.natmap6.update(external, real);
      dp.maps.natmap6Rev.update(real, external);
    },
    snat: (dp) => dp.maps.snat6,
  },
};

/**
 * strait_from_overlay on the hub: an established transit flow (NatMapping DNAT, SNAT to the transit
 * address through strait_snat, toPeer; IPv6: a tail call to strait_transit6, which parses again, on
 * strait_snat6). For the 2-cycle each peer sees our ExternalCIDR inside its own remote PodCIDR, so the
 * translated packet is again a transit packet, from the other peer. In IPv4: flow 1 goes from Q's
 * 100.65.1.250:40001 to P's 100.64.1.9:53 and leaves as P's view of the transit address,
 * 100.64.1.250:50000; that is flow 2, toward Q's 100.65.1.8:53, which leaves from 100.65.1.250:40001
 * again. Both flows are in the SNAT map (both halves) with those ports, as after their first packets.
 */
async function transitFigure(family: IpFamily, measure: Measure): Promise<Measured> {
  const dp = await Datapath.load();
  try {
    const hub = transitHubs[family];
    const { external, pSees, qSees } = hub;
    const transit = hostAt(external, 250);
    hub.install(dp, external, transit, [
      [peerP, pSees],
      [peerQ, qSees],
    ]);
    const [pPod, qPod, pTransit, qTransit] = [hostAt(pSees, 9), hostAt(qSees, 8), hostAt(pSees, 250), hostAt(qSees, 250)];
    hub.mapExternal(dp, hostAt(external, 8), pPod); // Q sends to its view of it, qPod's address
    hub.mapExternal(dp, hostAt(external, 9), qPod); // P sends to its view of it, pPod's address
    const snat = hub.snat(dp);
    const udp = 17;
    const flow = (saddr: string, daddr: string, sport: number, port: number) => {
      snat.update({ saddr, daddr, sport, dport: 53, proto: udp }, { addr: transit, port, flags: 0, closedNs: 0n });
      snat.update(
        { saddr: daddr, daddr: transit, sport: 53, dport: port, proto: udp },
        { addr: saddr, port: sport, flags: 0, closedNs: 0n },
      );
    };
    flow(qTransit, pPod, 40001, 50000);
    flow(pTransit, qPod, 50000, 40001);
    const input = families[family].frame({ src: qTransit, dst: qPod }, { kind: 'udp', sport: 40001, dport: 53, payload: Buffer.alloc(22) });
    assertTwoCycle(dp, 'fromOverlay', input, TC_ACT_REDIRECT);
    assert.equal([...snat.keys()].length, 4, 'no new flow');
    return measure(dp.prog('fromOverlay'), input);
  } finally {
    dp.close();
  }
}

/** The figures' names: the IPv6 one of each pair says so. */
const ipv6Word = (family: IpFamily) => (family === 6 ? 'IPv6 ' : '');
const natMappingName = (family: IpFamily, count: number) =>
  `strait_from_overlay, gateway, ${ipv6Word(family)}UDP from a peer to an ExternalCIDR address, ${count.toLocaleString('en')} NatMapping${count === 1 ? '' : 's'}`;
const toPeerName = (family: IpFamily) =>
  `strait_from_pod, gateway, ${ipv6Word(family)}UDP toward a peer (source translated, tunnel key, redirect)`;
const transitName = (family: IpFamily) =>
  `strait_from_overlay, hub, ${ipv6Word(family)}UDP of an established transit flow (${family === 6 ? 'tail call to strait_transit6, ' : ''}NatMapping, SNAT, toward the other peer)`;

export const run: BenchSuite = async () => {
  const empty = await BpfObject.load(emptyProgramPath);
  try {
    const measure: Measure = (prog, f) => ({ floor: nsPerPacket(empty.program('empty'), udpFrame()), ns: nsPerPacket(prog, f) });
    const measured: [string, Measured][] = [];
    for (const count of SIZES) measured.push([natMappingName(4, count), await natMappingFigure(4, count, measure)]);
    measured.push([transitName(4), await transitFigure(4, measure)]);
    measured.push([toPeerName(4), await toPeerFigure(4, measure)]);
    // The IPv6 paths beside their IPv4 twins (issue 29's goal: at most 1.2x the IPv4 cost): [IPv6, IPv4].
    const ipv6: [string, string, Measured][] = [
      [toPeerName(6), toPeerName(4), await toPeerFigure(6, measure)],
      [natMappingName(6, 1), natMappingName(4, 1), await natMappingFigure(6, 1, measure)],
      [transitName(6), transitName(4), await transitFigure(6, measure)],
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
