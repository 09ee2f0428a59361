import assert from 'node:assert/strict';
import fc from 'fast-check';
import { BpfObject } from '../../../src/native';
import { applyDesiredMaps, changedAnything } from '../../../src/dataplane/ebpf/apply-maps';
import { type DesiredMaps, desiredMaps, desiredTables, tablesOf } from '../../../src/dataplane/ebpf/desired-maps';
import type { Table } from '../../../src/dataplane/ebpf/map-sync';
import * as layout from '../../../src/dataplane/ebpf/layout';
import { planKernelRouting } from '../../../src/dataplane/kernel/routing-plan';
import { recordMapWrites } from '../../support/map-writes';
import { frame, frame6, parseIpv4, parseIpv6 } from '../../support/packet';
import { requireRoot, tempPinDir } from '../../support/kernel';
import {
  dualStackHubSpec,
  dualStackHubSpecDocument,
  hubSpec,
  hubSpecDocument,
  hubSpecWith,
  ipv6Only as ipv6OnlyOf,
  ipv6Primary,
  peerIpv6Only,
  specWith,
} from '../../support/node-specs';

/** A table's entries, sorted by id. */
function entriesOf<I>(table: Table<I, I>): [I, I][] {
  const out: [I, I][] = [];
  table.forEach((value, id) => out.push([id, value]));
  return out.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
}

describe('desired maps (pure)', () => {
  it('derives every map element from the spec, with the four prefixes in their places', () => {
    const d = desiredMaps(hubSpec(), 42, 1450);
    assert.deepEqual(d.config, [
      [
        0,
        {
          podCidr: { addr: '10.0.0.0', prefixLen: 16 },
          externalCidr: { addr: '10.50.0.0', prefixLen: 24 },
          nodeAddr: '192.0.2.11',
          gatewayAddr: '192.0.2.11',
          transitAddr: '10.50.0.254',
          overlayIfindex: 42,
          overlayVni: 18952,
          flags: layout.Flags.Gateway,
          overlayMac: '02:53:54:00:00:01',
          tunnelMtu: 1450,
          nodeAddr6: '::',
          gatewayAddr6: '::',
        },
      ],
    ]);
    // VNIs and MACs of the peering wire format, as pinned in test/nodespec/peer-tunnel.test.ts.
    assert.deepEqual(d.peers, [
      [
        7,
        {
          localNatPod: { addr: '172.16.0.0', prefixLen: 16 },
          localNatExternal: { addr: '172.17.0.0', prefixLen: 24 },
          endpoint: '203.0.113.1',
          endpoint6: '::',
          vni: 1829182,
          dstMac: '02:c3:8b:16:94:d6',
          srcMac: '02:93:55:a1:01:47',
        },
      ],
      [
        9,
        {
          localNatPod: { addr: '192.168.0.0', prefixLen: 16 },
          localNatExternal: { addr: '10.90.0.0', prefixLen: 24 },
          endpoint: '203.0.113.3',
          endpoint6: '::',
          vni: 8387962,
          dstMac: '02:a0:0a:81:2a:63',
          srcMac: '02:d1:97:a8:06:b1',
        },
      ],
    ]);
    assert.deepEqual(d.routes, [
      [
        { prefixLen: 16, addr: '10.1.0.0' },
        { peerId: 7, kind: layout.PrefixKind.Pod },
      ],
      [
        { prefixLen: 24, addr: '10.60.0.0' },
        { peerId: 7, kind: layout.PrefixKind.External },
      ],
      [
        { prefixLen: 20, addr: '10.2.0.0' },
        { peerId: 9, kind: layout.PrefixKind.Pod },
      ],
      [
        { prefixLen: 24, addr: '10.70.0.0' },
        { peerId: 9, kind: layout.PrefixKind.External },
      ],
    ]);
    assert.deepEqual(d.natmap, [['10.50.0.1', '10.2.0.5']]);
    assert.deepEqual(d.natmapRev, [['10.2.0.5', '10.50.0.1']]);
    assert.deepEqual(d.nodes, [
      [
        { prefixLen: 24, addr: '10.0.0.0' },
        { underlay: '192.0.2.11', underlay6: '::' },
      ],
      [
        { prefixLen: 24, addr: '10.0.1.0' },
        { underlay: '192.0.2.12', underlay6: '::' },
      ],
    ]);
    assert.equal(desiredMaps({ ...hubSpec(), node: { ...hubSpec().node, role: 'worker' } }, 42, 1450).config[0]![1].flags, 0);
  });

  it("puts each tunnel end of an IPv6 underlay in its IPv6 field, the IPv4 one 0.0.0.0, the probe responder's addresses too", () => {
    const d = desiredMaps(
      specWith(hubSpecDocument(), (doc) => {
        doc.node.underlayAddress = 'fd00:1::11';
        doc.activeGateway.underlayAddress = 'fd00:1::11';
        doc.peers[0]!.endpoint.address = 'fd00:ff::1';
        doc.nodes = doc.nodes.map((n, i) => ({ ...n, underlayAddress: `fd00:1::1${i + 1}` }));
      }),
      42,
      1450,
    );
    const { nodeAddr, nodeAddr6, gatewayAddr, gatewayAddr6 } = d.config[0]![1];
    assert.deepEqual(
      { nodeAddr, nodeAddr6, gatewayAddr, gatewayAddr6 },
      {
        nodeAddr: '0.0.0.0',
        nodeAddr6: 'fd00:1::11',
        gatewayAddr: '0.0.0.0',
        gatewayAddr6: 'fd00:1::11',
      },
    );
    // A peering's family is its endpoint's: P over IPv6, Q (still 203.0.113.3) over IPv4.
    assert.deepEqual(
      d.peers.map(([id, p]) => [id, p.endpoint, p.endpoint6]),
      [
        [7, '0.0.0.0', 'fd00:ff::1'],
        [9, '203.0.113.3', '::'],
      ],
    );
    assert.deepEqual(
      d.nodes.map(([, n]) => n),
      [
        { underlay: '0.0.0.0', underlay6: 'fd00:1::11' },
        { underlay: '0.0.0.0', underlay6: 'fd00:1::12' },
      ],
    );
    // The probe responder answers on the IPv6 underlay address (no public address here).
    assert.deepEqual(
      [d.liveness[0]![1].addrs, d.liveness[0]![1].addrs6],
      [
        ['0.0.0.0', '0.0.0.0'],
        ['fd00:1::11', '::'],
      ],
    );
  });

  it('builds the tables straight from the spec as the typed entries encode, without formatting an address', () => {
    const tables = desiredTables(hubSpec(), 42, 1450);
    assert.deepEqual(entriesOf(tables.natmap), [[0x0a320001, 0x0a020005]], '10.50.0.1 -> 10.2.0.5 as __be32 numbers');
    assert.deepEqual(entriesOf(tables.natmapRev), [[0x0a020005, 0x0a320001]]);
    // The reader refuses a repeated address on either side.
    const pairs = fc
      .uniqueArray(fc.tuple(fc.integer({ min: 1, max: 253 }), fc.integer({ min: 1, max: 254 })), {
        selector: ([ext]) => ext,
        maxLength: 12,
      })
      .map((ps) => ps.filter(([, real], i) => ps.findIndex(([, r]) => r === real) === i));
    fc.assert(
      fc.property(pairs, (ps) => {
        const natMappings = ps.map(([ext, real]) => ({ externalAddress: `10.50.0.${ext}`, endpointAddress: `10.2.${real}.5` }));
        const spec = hubSpecWith((s) => {
          s.natMappings = natMappings;
        });
        const fast = desiredTables(spec, 42, 1450);
        const typed = tablesOf(desiredMaps(spec, 42, 1450));
        for (const name of ['config', 'peers', 'routes', 'natmap', 'natmapRev', 'nodes'] as const)
          assert.deepEqual(entriesOf<string | number>(fast[name]), entriesOf<string | number>(typed[name]), name);
      }),
    );
  });

  it("derives the IPv6 maps from the secondary family: ours, each peer's that has one, IPv6 NatMappings and node prefixes", () => {
    const d = desiredMaps(dualStackHubSpec(), 42, 1450);
    assert.deepEqual(d.config6, [
      [
        0,
        {
          podCidr: { addr: 'fd00:b::', prefixLen: 48 },
          externalCidr: { addr: 'fd00:b:e::', prefixLen: 112 },
          transitAddr: 'fd00:b:e::fe',
        },
      ],
    ]);
    assert.deepEqual(d.peers6, [
      [7, { localNatPod: { addr: 'fd60:b::', prefixLen: 48 }, localNatExternal: { addr: 'fd70:b:e::', prefixLen: 112 } }],
      [9, { localNatPod: { addr: 'fd00:b::', prefixLen: 48 }, localNatExternal: { addr: 'fd00:b:e::', prefixLen: 112 } }],
    ]);
    assert.deepEqual(d.routes6, [
      [
        { addr: 'fd00:a::', prefixLen: 56 },
        { peerId: 7, kind: layout.PrefixKind.Pod },
      ],
      [
        { addr: 'fd00:a:e::', prefixLen: 120 },
        { peerId: 7, kind: layout.PrefixKind.External },
      ],
      [
        { addr: 'fd00:c::', prefixLen: 64 },
        { peerId: 9, kind: layout.PrefixKind.Pod },
      ],
      [
        { addr: 'fd00:c:e::', prefixLen: 116 },
        { peerId: 9, kind: layout.PrefixKind.External },
      ],
    ]);
    assert.deepEqual(d.natmap6, [['fd00:b:e::1', 'fd00:c::5']]);
    assert.deepEqual(d.natmap6Rev, [['fd00:c::5', 'fd00:b:e::1']]);
    assert.deepEqual(d.nodes6, [
      [
        { addr: 'fd00:b::', prefixLen: 64 },
        { underlay: '192.0.2.11', underlay6: '::' },
      ],
      [
        { addr: 'fd00:b:0:1::', prefixLen: 64 },
        { underlay: '192.0.2.12', underlay6: '::' },
      ],
    ]);
    // The IPv4 maps hold the IPv4 family only.
    assert.deepEqual(d.natmap, [['10.50.0.1', '10.2.0.5']]);
    assert.deepEqual(d.nodes, desiredMaps(hubSpec(), 42, 1450).nodes);
    const fast = desiredTables(dualStackHubSpec(), 42, 1450);
    const typed = tablesOf(d);
    for (const name of Object.keys(typed) as (keyof typeof typed)[])
      assert.deepEqual(entriesOf<string | number>(fast[name]), entriesOf<string | number>(typed[name]), name);
  });

  const none = (addr: string) => ({ addr, prefixLen: layout.PREFIX_LEN_NONE });

  it('an IPv4-only spec leaves the IPv6 maps empty, and its config6 with no networks (what the datapath reads as no IPv6)', () => {
    const d = desiredMaps(hubSpec(), 42, 1450);
    assert.deepEqual(d.config6, [[0, { podCidr: none('::'), externalCidr: none('::'), transitAddr: '::' }]]);
    assert.deepEqual([d.peers6, d.routes6, d.natmap6, d.natmap6Rev, d.nodes6], [[], [], [], [], []]);
  });

  const ipv4Maps = ['config', 'peers', 'routes', 'natmap', 'natmapRev', 'nodes'] as const;
  const ipv6MapNames = ['config6', 'peers6', 'routes6', 'natmap6', 'natmap6Rev', 'nodes6'] as const;
  const pick = (d: ReturnType<typeof desiredMaps>, names: readonly (keyof typeof d)[]) => names.map((n) => d[n]);
  const fastEqualsTyped = (spec: ReturnType<typeof hubSpec>) => {
    const fast = desiredTables(spec, 42, 1450);
    const typed = tablesOf(desiredMaps(spec, 42, 1450));
    for (const name of Object.keys(typed) as (keyof typeof typed)[])
      assert.deepEqual(entriesOf<string | number>(fast[name]), entriesOf<string | number>(typed[name]), name);
  };

  it("each family's maps hold that family whichever place it has: IPv6 primary gives the maps of IPv6 secondary", () => {
    const v6Primary = specWith(ipv6Primary(dualStackHubSpecDocument()), () => {});
    assert.equal(v6Primary.podCIDR.family, 6);
    assert.deepEqual(desiredMaps(v6Primary, 42, 1450), desiredMaps(dualStackHubSpec(), 42, 1450));
    fastEqualsTyped(v6Primary);
  });

  it('an IPv6-only home: its IPv6 maps as a dual-stack one has them, an IPv4 config and peer entries whose networks are none, no IPv4 routes', () => {
    const spec = specWith(ipv6OnlyOf(dualStackHubSpecDocument()), () => {});
    const d = desiredMaps(spec, 42, 1450);
    const dual = desiredMaps(dualStackHubSpec(), 42, 1450);
    assert.deepEqual(pick(d, ipv6MapNames), pick(dual, ipv6MapNames));
    const [, config] = d.config[0]!;
    assert.deepEqual(
      { podCidr: config.podCidr, externalCidr: config.externalCidr, transitAddr: config.transitAddr },
      { podCidr: none('0.0.0.0'), externalCidr: none('0.0.0.0'), transitAddr: '0.0.0.0' },
    );
    // Everything else in the config is the node's, the same as in a dual-stack spec.
    assert.deepEqual(
      { ...config, podCidr: 0, externalCidr: 0, transitAddr: 0 },
      { ...dual.config[0]![1], podCidr: 0, externalCidr: 0, transitAddr: 0 },
    );
    // Each peering keeps its entry (the tunnel both families take), with no IPv4 views.
    assert.deepEqual(
      d.peers,
      dual.peers.map(([id, p]) => [id, { ...p, localNatPod: none('0.0.0.0'), localNatExternal: none('0.0.0.0') }]),
    );
    assert.deepEqual([d.routes, d.natmap, d.natmapRev, d.nodes], [[], [], [], []]);
    fastEqualsTyped(spec);
  });

  it("a dual-stack home's IPv6-only peering: its entry's IPv4 views none, IPv4 routes for the other peer only, its IPv6 maps as before", () => {
    const spec = specWith(peerIpv6Only(dualStackHubSpecDocument(), 0), () => {});
    assert.equal(spec.peers[0]!.remotePodCIDR.family, 6);
    const d = desiredMaps(spec, 42, 1450);
    const dual = desiredMaps(dualStackHubSpec(), 42, 1450);
    assert.deepEqual(pick(d, ipv6MapNames), pick(dual, ipv6MapNames));
    assert.deepEqual(d.config, dual.config);
    assert.deepEqual(d.peers, [
      [7, { ...dual.peers[0]![1], localNatPod: none('0.0.0.0'), localNatExternal: none('0.0.0.0') }],
      dual.peers[1],
    ]);
    assert.deepEqual(
      d.routes,
      dual.routes.filter(([, r]) => r.peerId !== 7),
    );
    assert.deepEqual(pick(d, ['natmap', 'natmapRev', 'nodes']), pick(dual, ['natmap', 'natmapRev', 'nodes']));
    fastEqualsTyped(spec);
  });

  it('the IPv4 maps of an IPv6-primary dual-stack spec are those of the IPv4-only one', () => {
    const d = desiredMaps(
      specWith(ipv6Primary(dualStackHubSpecDocument()), () => {}),
      42,
      1450,
    );
    assert.deepEqual(pick(d, ipv4Maps), pick(desiredMaps(hubSpec(), 42, 1450), ipv4Maps));
  });

  it("speaks the kernel fallback's wire format: each peer's VNI and inner MACs are those of the fallback's tunnel toward it", () => {
    const spec = hubSpec();
    const plan = planKernelRouting(spec);
    const peers = new Map(desiredMaps(spec, 42, 1450).peers);
    for (const p of spec.peers) {
      const entry = peers.get(p.peerId)!;
      const device = plan.devices.find((d) => d.name === `stp${p.peerId.toString(16).padStart(8, '0')}`)!;
      const neighbour = plan.neighbours.find((n) => n.device === device.name)!;
      assert.ok('vni' in device);
      // Sent from the fallback's tunnel device (its VNI and MAC) to the neighbour MAC of the peer's endpoint.
      assert.deepEqual(
        { vni: entry.vni, srcMac: entry.srcMac, dstMac: entry.dstMac },
        { vni: device.vni, srcMac: device.mac, dstMac: neighbour.mac },
        p.clusterId,
      );
      assert.notEqual(entry.vni, spec.overlay.vni);
    }
  });

  it('both ends of a peering agree: the same VNI, and each addresses the MAC the other sends from', () => {
    const b = hubSpec();
    // A's gateway, peered with B: the hub spec seen from the other end (only the ids matter here).
    const a = { ...b, clusterId: 'cluster-a', peers: [{ ...b.peers[0]!, clusterId: 'cluster-b', peerId: 3 }] };
    const aToB = new Map(desiredMaps(a, 42, 1450).peers).get(3)!;
    const bToA = new Map(desiredMaps(b, 42, 1450).peers).get(7)!;
    assert.equal(aToB.vni, bToA.vni);
    assert.deepEqual([aToB.srcMac, aToB.dstMac], [bToA.dstMac, bToA.srcMac]);
    assert.notEqual(aToB.srcMac, aToB.dstMac);
  });
});

describe('applying desired maps (real kernel)', function () {
  requireRoot(this);
  let pins: ReturnType<typeof tempPinDir>;
  let obj: BpfObject;
  beforeEach(async () => {
    pins = tempPinDir();
    obj = await BpfObject.load(layout.datapathObjectPath, { pinRoot: pins.dir });
  });
  afterEach(() => {
    obj.close();
    pins.cleanup();
  });

  it('programs a node so that the program translates real packets, and a second apply writes nothing', () => {
    const maps = layout.openMaps(obj);
    const first = applyDesiredMaps(maps, desiredMaps(hubSpec(), 42, 1450));
    assert.deepEqual(first.routes, { written: 4, deleted: 0 });
    assert.equal(changedAnything(applyDesiredMaps(maps, desiredMaps(hubSpec(), 42, 1450))), false);

    // A's pod 10.1.3.4 (as B sees it) sends to B's pod 10.0.1.9 as A sees it (172.16.1.9): B's gateway
    // translates the destination back into B's PodCIDR and, the pod being on b-worker, sends it there.
    const out = obj
      .program(layout.Program.FromOverlay)
      .testRun(frame({ src: '10.1.3.4', dst: '172.16.1.9' }, { kind: 'udp', sport: 1000, dport: 53 }));
    assert.equal(out.retval, 7, 'redirected into the overlay toward b-worker');
    const ip = parseIpv4(out.data)!;
    assert.equal(ip.dst, '10.0.1.9');
    assert.equal(ip.src, '10.1.3.4');
  });

  it('programs a dual-stack node so that IPv6 packets are translated; a second apply writes nothing; single-stack again removes it all', () => {
    const maps = layout.openMaps(obj);
    const first = applyDesiredMaps(maps, desiredMaps(dualStackHubSpec(), 42, 1450));
    assert.deepEqual(
      [first.config6, first.peers6, first.routes6, first.natmap6, first.natmap6Rev, first.nodes6].map((r) => r.written),
      [1, 2, 4, 1, 1, 2],
    );
    assert.equal(changedAnything(applyDesiredMaps(maps, desiredMaps(dualStackHubSpec(), 42, 1450))), false);

    // A's pod fd00:a::34 sends to B's pod fd00:b:0:1::9 as A sees it (fd60:b:0:1::9): b-worker's.
    const udp = { kind: 'udp', sport: 1000, dport: 53 } as const;
    const out = obj.program(layout.Program.FromOverlay).testRun(frame6({ src: 'fd00:a::34', dst: 'fd60:b:0:1::9' }, udp));
    assert.equal(out.retval, 7, 'redirected into the overlay toward b-worker');
    assert.deepEqual((({ src, dst }) => ({ src, dst }))(parseIpv6(out.data)!), { src: 'fd00:a::34', dst: 'fd00:b:0:1::9' });

    const back = applyDesiredMaps(maps, desiredMaps(hubSpec(), 42, 1450));
    assert.deepEqual(
      [back.peers6, back.routes6, back.natmap6, back.natmap6Rev, back.nodes6].map((r) => r.deleted),
      [2, 4, 1, 1, 2],
    );
    assert.equal(back.config6.written, 1);
    const passed = frame6({ src: 'fd00:a::34', dst: 'fd60:b:0:1::9' }, udp);
    const { retval, data } = obj.program(layout.Program.FromOverlay).testRun(passed);
    assert.deepEqual({ retval, data }, { retval: 0, data: passed }, 'no IPv6 route: untouched');
  });

  it('reconciles dual-stack -> IPv6-only -> dual-stack: each time the maps hold exactly what the spec wants, IPv6 translated throughout', () => {
    const maps = layout.openMaps(obj);
    // Keys in one order whatever the order of their fields: an LPM key by its prefix.
    const key = ([k]: readonly [unknown, unknown]) =>
      typeof k === 'object' && k !== null && 'addr' in k && 'prefixLen' in k ? `${String(k.addr)}/${String(k.prefixLen)}` : String(k);
    const sorted = (entries: Iterable<readonly [unknown, unknown]>) => [...entries].sort((a, b) => (key(a) < key(b) ? -1 : 1));
    const udp = { kind: 'udp', sport: 1000, dport: 53 } as const;
    const ipv6Only = specWith(ipv6OnlyOf(dualStackHubSpecDocument()), () => {});
    for (const spec of [dualStackHubSpec(), ipv6Only, dualStackHubSpec()]) {
      applyDesiredMaps(maps, desiredMaps(spec, 42, 1450));
      const desired = desiredMaps(spec, 42, 1450);
      // Every map a spec fills, as the product lists them: none can be left out here.
      for (const name of Object.keys(desired) as (keyof DesiredMaps)[])
        assert.deepEqual(sorted(maps[name].entries()), sorted(desired[name]), name);
      const out = obj.program(layout.Program.FromOverlay).testRun(frame6({ src: 'fd00:a::34', dst: 'fd60:b:0:1::9' }, udp));
      assert.equal(out.retval, 7);
      assert.equal(parseIpv6(out.data)!.dst, 'fd00:b:0:1::9');
      const v4 = frame({ src: '10.1.3.4', dst: '172.16.1.9' }, udp);
      const r = obj.program(layout.Program.FromOverlay).testRun(v4);
      // IPv6-only: no IPv4 route, the packet passes untouched.
      assert.deepEqual(spec === ipv6Only ? { retval: r.retval, data: r.data } : r.retval, spec === ipv6Only ? { retval: 0, data: v4 } : 7);
    }
  });

  it("removes everything of a peer that is gone, both families' counters included, and keeps the rest", () => {
    const maps = layout.openMaps(obj);
    applyDesiredMaps(maps, desiredMaps(hubSpec(), 42, 1450));
    const cpus = maps.peerCounters.value.size / layout.peerCounters.size;
    const counted = Array.from({ length: cpus }, () => ({ txPackets: 1n, txBytes: 60n, rxPackets: 0n, rxBytes: 0n }));
    for (const counters of [maps.peerCounters, maps.peerCounters6]) for (const peerId of [7, 9]) counters.update(peerId, counted);
    const withoutC = { ...hubSpec(), peers: hubSpec().peers.slice(0, 1), natMappings: [] };
    const result = applyDesiredMaps(maps, desiredMaps(withoutC, 42, 1450));
    assert.deepEqual(result.routes, { written: 0, deleted: 2 });
    assert.deepEqual(result.peers, { written: 0, deleted: 1 });
    assert.deepEqual(result.natmap, { written: 0, deleted: 1 });
    assert.deepEqual(result.peerCounters, { written: 0, deleted: 1 });
    assert.deepEqual(result.peerCounters6, { written: 0, deleted: 1 });
    // A's go on counting in both families, C's are gone from both (its IPv6 ones although the spec has no IPv6).
    for (const counters of [maps.peerCounters, maps.peerCounters6]) assert.deepEqual([...counters.entries()], [[7, counted]]);
    assert.equal(maps.peers.lookup(9), undefined);
    assert.equal(maps.routes.lookup({ prefixLen: 32, addr: '10.2.0.5' }), undefined);
    assert.equal(maps.natmap.lookup('10.50.0.1'), undefined);
    assert.deepEqual(maps.routes.lookup({ prefixLen: 32, addr: '10.1.0.5' }), { peerId: 7, kind: layout.PrefixKind.Pod });
  });

  it('orders its writes so no state in between misroutes: a peer before its routes and after them when it goes, a new prefix before the old one goes', () => {
    const maps = layout.openMaps(obj);
    applyDesiredMaps(maps, desiredMaps(hubSpec(), 42, 1450));
    // A's PodCIDR shrinks to a /17, C leaves, D joins.
    const next = hubSpecWith((s) => {
      const [a, c] = s.peers;
      s.peers = [
        { ...a!, remotePodCIDR: '10.1.0.0/17' },
        {
          ...c!,
          clusterId: 'cluster-d',
          peerId: 11,
          remotePodCIDR: '10.3.0.0/16',
          remoteExternalCIDR: '10.80.0.0/24',
          localNATPodCIDR: '172.20.0.0/16',
          localNATExternalCIDR: '172.21.0.0/24',
          endpoint: { address: '203.0.113.4', port: 4789 },
        },
      ];
      s.natMappings = [];
    });
    const writes = recordMapWrites(() => applyDesiredMaps(maps, desiredMaps(next, 42, 1450)));
    const steps = writes.flatMap(({ map, op, key }) => {
      if (map === layout.maps.peers.name) return [`${op} peer ${layout.maps.peers.key.decode(key, 0)}`];
      if (map !== layout.maps.routes.name) return [];
      const { addr, prefixLen } = layout.lpmV4Key.decode(key, 0);
      return [`${op} route ${addr}/${prefixLen}`];
    });
    assert.deepEqual(
      steps.slice(0, 4),
      ['update peer 11', 'update route 10.1.0.0/17', 'update route 10.3.0.0/16', 'update route 10.80.0.0/24'],
      "D before its routes; A's new /17 before its old /16 goes",
    );
    // The kernel's iteration order decides the order among the deletes.
    assert.deepEqual(steps.slice(4, 7).sort(), ['delete route 10.1.0.0/16', 'delete route 10.2.0.0/20', 'delete route 10.70.0.0/24']);
    assert.deepEqual(steps.slice(7), ['delete peer 9'], 'C after its routes');
  });
});
