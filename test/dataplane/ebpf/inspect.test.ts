import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readdirSync, unlinkSync } from 'node:fs';
import { join } from 'node:path';
import { BpfMap, BpfObject, MapType, u32 } from '../../../src/native';
import { applyDesiredMaps } from '../../../src/dataplane/ebpf/apply-maps';
import { desiredMaps } from '../../../src/dataplane/ebpf/desired-maps';
import { type InspectReport, inspectNode } from '../../../src/dataplane/ebpf/inspect';
import * as layout from '../../../src/dataplane/ebpf/layout';
import type { NodeDataplaneSpec } from '../../../src/nodespec/spec';
import { runCli } from '../../network-ipam/cli-runner';
import { requireRoot, tempPinDir } from '../../support/kernel';
import { frame, frame6, parseIpv4 } from '../../support/packet';
import {
  dualStackHubSpec,
  dualStackHubSpecDocument,
  hubSpec,
  hubSpecWith,
  ipv6Only,
  peerIpv6Only,
  specWith,
} from '../../support/node-specs';

const noTraffic = { txPackets: 0, txBytes: 0, rxPackets: 0, rxBytes: 0 };
/** A peer's counters in the report when all its traffic was IPv4: the total is IPv4's. */
const ipv4Only = (counts: Partial<typeof noTraffic>) => {
  const ipv4 = { ...noTraffic, ...counts };
  return { ...ipv4, ipv4, ipv6: noTraffic };
};

const TC_ACT_SHOT = 2;
const TC_ACT_REDIRECT = 7;
const openFds = () => readdirSync('/proc/self/fd').length;

/** Loads the datapath under a fresh pin root and programs it for `spec`; the object stays open. */
async function programmedNode(spec: NodeDataplaneSpec): Promise<{ obj: BpfObject; pins: ReturnType<typeof tempPinDir> }> {
  const pins = tempPinDir();
  try {
    const obj = await BpfObject.load(layout.datapathObjectPath, { pinRoot: pins.dir });
    applyDesiredMaps(layout.openMaps(obj), desiredMaps(spec, 42, 1450));
    return { obj, pins };
  } catch (err) {
    pins.cleanup();
    throw err;
  }
}

/** The whitespace-separated cells of each line of a table, for comparing rows exactly. */
const rowsOf = (text: string) => text.split('\n').map((line) => line.trim().split(/\s+/));

const noDrops = {
  Malformed: 0,
  NoPeer: 0,
  NotOurs: 0,
  NoNatMapping: 0,
  TransitState: 0,
  NoConfig: 0,
  Csum: 0,
  Tunnel: 0,
  ExtHdrs: 0,
  Transit6: 0,
  TooBig: 0,
};

describe('strait inspect (real kernel)', function () {
  requireRoot(this);
  let pins: ReturnType<typeof tempPinDir>;
  let expected: InspectReport;

  // Hub B after traffic: 3 datagrams from A's pod to B's pod on b-worker, one transit flow A → C through
  // the NatMapping, and two drops. The object is closed before inspecting: only the pins remain.
  before(async () => {
    const node = await programmedNode(hubSpec());
    pins = node.pins;
    const fromOverlay = node.obj.program(layout.Program.FromOverlay);
    const toPod = frame({ src: '10.1.3.4', dst: '172.16.1.9' }, { kind: 'udp', sport: 1000, dport: 53, payload: Buffer.alloc(10) });
    const transit = frame({ src: '10.1.3.4', dst: '172.17.0.1' }, { kind: 'udp', sport: 2000, dport: 53, payload: Buffer.alloc(30) });
    let transitOut: Buffer;
    try {
      for (let i = 0; i < 3; i++) assert.equal(fromOverlay.testRun(toPod).retval, TC_ACT_REDIRECT);
      const t = fromOverlay.testRun(transit);
      assert.equal(t.retval, TC_ACT_REDIRECT);
      transitOut = t.data;
      assert.equal(
        fromOverlay.testRun(frame({ src: '10.1.3.4', dst: '8.8.8.8' }, { kind: 'udp', sport: 1000, dport: 53 })).retval,
        TC_ACT_SHOT,
      );
      assert.equal(
        fromOverlay.testRun(frame({ src: '10.1.3.4', dst: '172.17.0.77' }, { kind: 'udp', sport: 1000, dport: 53 })).retval,
        TC_ACT_SHOT,
      );
    } finally {
      node.obj.close();
    }
    // C sees the transit source as B's transit address in its view of B's ExternalCIDR.
    assert.equal(parseIpv4(transitOut)!.src, '10.90.0.254');
    const port = transitOut.readUInt16BE(14 + 20);
    expected = {
      pinRoot: pins.dir,
      config: {
        role: 'gateway',
        podCIDR: '10.0.0.0/16',
        externalCIDR: '10.50.0.0/24',
        nodeAddress: '192.0.2.11',
        activeGatewayAddress: '192.0.2.11',
        transitAddress: '10.50.0.254',
        overlayIfindex: 42,
        overlayVni: 18952,
        overlayMac: '02:53:54:00:00:01',
        tunnelMtu: 1450,
      },
      peers: [
        {
          peerId: 7,
          remotePodCIDRs: ['10.1.0.0/16'],
          remoteExternalCIDRs: ['10.60.0.0/24'],
          localNATPodCIDR: '172.16.0.0/16',
          localNATExternalCIDR: '172.17.0.0/24',
          endpoint: '203.0.113.1',
          // The peering wire format, as pinned in test/nodespec/peer-tunnel.test.ts.
          vni: 1829182,
          srcMac: '02:93:55:a1:01:47',
          dstMac: '02:c3:8b:16:94:d6',
          counters: ipv4Only({ rxPackets: 4, rxBytes: 3 * toPod.length + transit.length }),
        },
        {
          peerId: 9,
          remotePodCIDRs: ['10.2.0.0/20'],
          remoteExternalCIDRs: ['10.70.0.0/24'],
          localNATPodCIDR: '192.168.0.0/16',
          localNATExternalCIDR: '10.90.0.0/24',
          endpoint: '203.0.113.3',
          vni: 8387962,
          srcMac: '02:d1:97:a8:06:b1',
          dstMac: '02:a0:0a:81:2a:63',
          counters: ipv4Only({ txPackets: 1, txBytes: transitOut.length }),
        },
      ],
      strayRoutes: [],
      natMappings: [{ externalAddress: '10.50.0.1', endpointAddress: '10.2.0.5' }],
      strayReverseMappings: [],
      nodes: [
        { prefix: '10.0.0.0/24', underlay: '192.0.2.11' },
        { prefix: '10.0.1.0/24', underlay: '192.0.2.12' },
      ],
      snat: {
        total: 2,
        limit: 100,
        flows: [
          {
            direction: 'forward',
            proto: 'udp',
            src: '10.1.3.4',
            sport: 2000,
            dst: '10.2.0.5',
            dport: 53,
            to: { addr: '10.50.0.254', port },
          },
          {
            direction: 'reply',
            proto: 'udp',
            src: '10.2.0.5',
            sport: 53,
            dst: '10.50.0.254',
            dport: port,
            to: { addr: '10.1.3.4', port: 2000 },
          },
        ],
      },
      drops: { ...noDrops, NotOurs: 1, NoNatMapping: 1 },
    };
  });
  after(() => pins?.cleanup());

  it('decodes every map of the node: config, the four prefixes of each peer, counters, NatMappings, nodes, transit flows, drops', () => {
    assert.deepEqual(inspectNode(pins.dir), expected);
  });

  it('lists at most --limit transit entries and still reports the total', () => {
    const { snat } = inspectNode(pins.dir, 1);
    assert.deepEqual(snat, { total: 2, limit: 1, flows: expected.snat.flows.slice(0, 1) });
  });

  it('closes every fd it opens', () => {
    inspectNode(pins.dir); // the addon opens some fds lazily on first use
    const before = openFds();
    for (let i = 0; i < 20; i++) inspectNode(pins.dir);
    assert.equal(openFds(), before);
  });

  it('`strait inspect --json` prints the same report, and --section keeps only those parts', () => {
    const run = runCli(['inspect', '--pin-root', pins.dir, '--json']);
    assert.equal(run.code, 0, run.stderr);
    assert.deepEqual(JSON.parse(run.stdout), expected);

    const nat = runCli(['inspect', '--pin-root', pins.dir, '--json', '--section', 'nat', 'drops']);
    assert.deepEqual(JSON.parse(nat.stdout), {
      pinRoot: pins.dir,
      natMappings: expected.natMappings,
      strayReverseMappings: [],
      drops: expected.drops,
    });
  });

  it('`strait inspect` prints one aligned table per section with the expected rows', () => {
    const run = runCli(['inspect', '--pin-root', pins.dir]);
    assert.equal(run.code, 0, run.stderr);
    const rows = rowsOf(run.stdout);
    const [a, c] = expected.peers.map((p) => p.counters);
    const [pa, pc] = expected.peers;
    const port = expected.snat.flows[0]!.to.port;
    for (const row of [
      ['role', 'gateway'],
      ['active', 'gateway', '192.0.2.11'],
      ['overlay', 'ifindex', '42,', 'vni', '18952,', 'mac', '02:53:54:00:00:01'],
      ['tunnel', 'MTU', '1450'],
      ['peers', '(2)'],
      ['7', '10.1.0.0/16', '10.60.0.0/24', '172.16.0.0/16', '172.17.0.0/24', '203.0.113.1', String(pa!.vni), pa!.srcMac, pa!.dstMac],
      ['9', '10.2.0.0/20', '10.70.0.0/24', '192.168.0.0/16', '10.90.0.0/24', '203.0.113.3', String(pc!.vni), pc!.srcMac, pc!.dstMac],
      ['peer', 'counters'],
      ['PEER', 'FAMILY', 'TX', 'PKTS', 'TX', 'BYTES', 'RX', 'PKTS', 'RX', 'BYTES'],
      ['7', 'ipv4', '0', '0', '4', String(a!.rxBytes)],
      ['7', 'ipv6', '0', '0', '0', '0'],
      ['9', 'ipv4', '1', String(c!.txBytes), '0', '0'],
      ['9', 'ipv6', '0', '0', '0', '0'],
      ['10.50.0.1', '10.2.0.5', 'ok'],
      ['10.0.1.0/24', '192.0.2.12'],
      ['forward', 'udp', '10.1.3.4:2000', '10.2.0.5:53', 'src', '->', `10.50.0.254:${port}`],
      ['reply', 'udp', '10.2.0.5:53', `10.50.0.254:${port}`, 'dst', '->', '10.1.3.4:2000'],
      ['NotOurs', '1'],
      ['NoNatMapping', '1'],
      ['Tunnel', '0'],
    ]) {
      assert.ok(
        rows.some((r) => r.join(' ') === row.join(' ')),
        `a row "${row.join(' ')}" in:\n${run.stdout}`,
      );
    }
    const limited = runCli(['inspect', '--pin-root', pins.dir, '--section', 'snat', '--limit', '1']).stdout;
    assert.match(limited, /^transit snat \(2, first 1 shown: raise --limit for more\)$/m);
    assert.doesNotMatch(limited, /^drops$/m);
  });

  it('bpftool map dump prints the named fields of the pinned maps (BTF)', () => {
    const dump = spawnSync('bpftool', ['map', 'dump', 'pinned', join(pins.dir, 'strait_peers')], { encoding: 'utf8' });
    assert.equal(dump.status, 0, dump.stderr);
    for (const field of ['local_nat_pod', 'local_nat_external', 'prefix_len', 'endpoint', 'vni', 'dst_mac', 'src_mac'])
      assert.ok(dump.stdout.includes(`"${field}"`), `${field} in:\n${dump.stdout}`);
  });
});

describe('strait inspect: faults and other roles (real kernel)', function () {
  requireRoot(this);
  let node: { obj: BpfObject; pins: ReturnType<typeof tempPinDir> } | undefined;
  afterEach(() => {
    node?.obj.close();
    node?.pins.cleanup();
    node = undefined;
  });

  it('a worker: its own address, the active gateway elsewhere', async () => {
    node = await programmedNode(
      hubSpecWith((s) => {
        s.node = { name: 'b-worker', role: 'worker', underlayAddress: '192.0.2.12' };
      }),
    );
    const { config } = inspectNode(node.pins.dir);
    assert.equal(config?.role, 'worker');
    assert.equal(config?.nodeAddress, '192.0.2.12');
    assert.equal(config?.activeGatewayAddress, '192.0.2.11');
  });

  it('a dual-stack node: the IPv6 networks in config and peers, IPv6 routes, NatMappings, nodes and transit flows after the IPv4 ones; an IPv6 route without its peer6 is stray', async () => {
    node = await programmedNode(dualStackHubSpec());
    layout.openMaps(node.obj).routes6.update({ prefixLen: 64, addr: 'fd00:99::' }, { peerId: 5, kind: layout.PrefixKind.Pod });
    const report = inspectNode(node.pins.dir);
    assert.deepEqual(report.config?.ipv6, { podCIDR: 'fd00:b::/48', externalCIDR: 'fd00:b:e::/112', transitAddress: 'fd00:b:e::fe' });
    assert.deepEqual(
      report.peers.map((p) => [p.peerId, p.remotePodCIDRs, p.remoteExternalCIDRs, p.ipv6]),
      [
        [
          7,
          ['10.1.0.0/16', 'fd00:a::/56'],
          ['10.60.0.0/24', 'fd00:a:e::/120'],
          { localNATPodCIDR: 'fd60:b::/48', localNATExternalCIDR: 'fd70:b:e::/112' },
        ],
        [
          9,
          ['10.2.0.0/20', 'fd00:c::/64'],
          ['10.70.0.0/24', 'fd00:c:e::/116'],
          { localNATPodCIDR: 'fd00:b::/48', localNATExternalCIDR: 'fd00:b:e::/112' },
        ],
      ],
    );
    assert.deepEqual(report.strayRoutes, [{ prefix: 'fd00:99::/64', peerId: 5, kind: 0, problem: 'peer 5 is not in strait_peers' }]);
    assert.deepEqual(report.natMappings, [
      { externalAddress: '10.50.0.1', endpointAddress: '10.2.0.5' },
      { externalAddress: 'fd00:b:e::1', endpointAddress: 'fd00:c::5' },
    ]);
    assert.deepEqual(
      report.nodes.map((n) => n.prefix),
      ['10.0.0.0/24', '10.0.1.0/24', 'fd00:b::/64', 'fd00:b:0:1::/64'],
    );
    // An IPv6 transit flow's two halves (strait_snat6), listed beside IPv4's, the reply's by its family's transit address.
    const snat6 = layout.openMaps(node.obj).snat6;
    const udp = 17;
    snat6.update(
      { saddr: 'fd00:a::9', daddr: 'fd00:c::5', sport: 4000, dport: 53, proto: udp },
      { addr: 'fd00:b:e::fe', port: 40001, flags: 0, closedNs: 0n },
    );
    snat6.update(
      { saddr: 'fd00:c::5', daddr: 'fd00:b:e::fe', sport: 53, dport: 40001, proto: udp },
      { addr: 'fd00:a::9', port: 4000, flags: 0, closedNs: 0n },
    );
    assert.deepEqual(inspectNode(node.pins.dir).snat.flows, [
      {
        direction: 'forward',
        proto: 'udp',
        src: 'fd00:a::9',
        sport: 4000,
        dst: 'fd00:c::5',
        dport: 53,
        to: { addr: 'fd00:b:e::fe', port: 40001 },
      },
      {
        direction: 'reply',
        proto: 'udp',
        src: 'fd00:c::5',
        sport: 53,
        dst: 'fd00:b:e::fe',
        dport: 40001,
        to: { addr: 'fd00:a::9', port: 4000 },
      },
    ]);
    const text = runCli(['inspect', '--pin-root', node.pins.dir, '--section', 'config', 'peers']).stdout;
    assert.match(text, /^ {2}IPv6 pod CIDR +fd00:b::\/48$/m);
    assert.match(text, / 172\.16\.0\.0\/16,fd60:b::\/48 +172\.17\.0\.0\/24,fd70:b:e::\/112 /);
  });

  it("a dual-stack node: each peer's counters per family and their sum, in JSON and in the table", async () => {
    node = await programmedNode(dualStackHubSpec());
    const udp = { kind: 'udp', sport: 1000, dport: 53, payload: Buffer.alloc(20) } as const;
    // From A's pods to pods of ours on b-worker, one in IPv4 and two in IPv6; from our pod to C's in IPv6.
    const fromA4 = frame({ src: '10.1.3.4', dst: '172.16.1.9' }, udp);
    const fromA6 = frame6({ src: 'fd00:a::34', dst: 'fd60:b:0:1::9' }, udp);
    const toC6 = frame6({ src: 'fd00:b::9', dst: 'fd00:c::5' }, udp);
    const run = (program: string, f: Buffer) => assert.equal(node!.obj.program(program).testRun(f).retval, TC_ACT_REDIRECT);
    run(layout.Program.FromOverlay, fromA4);
    for (let i = 0; i < 2; i++) run(layout.Program.FromOverlay, fromA6);
    run(layout.Program.FromPod, toC6);
    const a4 = { ...noTraffic, rxPackets: 1, rxBytes: fromA4.length };
    const a6 = { ...noTraffic, rxPackets: 2, rxBytes: 2 * fromA6.length };
    const c6 = { ...noTraffic, txPackets: 1, txBytes: toC6.length };
    assert.deepEqual(
      inspectNode(node.pins.dir).peers.map((p) => [p.peerId, p.counters]),
      [
        [7, { ...noTraffic, rxPackets: 3, rxBytes: a4.rxBytes + a6.rxBytes, ipv4: a4, ipv6: a6 }],
        [9, { ...c6, ipv4: noTraffic, ipv6: c6 }],
      ],
    );
    const rows = rowsOf(runCli(['inspect', '--pin-root', node.pins.dir, '--section', 'peers']).stdout);
    const at = rows.findIndex((r) => r.join(' ') === 'peer counters');
    assert.deepEqual(rows.slice(at + 2, at + 6), [
      ['7', 'ipv4', '0', '0', '1', String(fromA4.length)],
      ['7', 'ipv6', '0', '0', '2', String(2 * fromA6.length)],
      ['9', 'ipv4', '0', '0', '0', '0'],
      ['9', 'ipv6', '1', String(toC6.length), '0', '0'],
    ]);
  });

  it("an IPv6-only node, and a dual-stack node's IPv6-only peering: the family a node or a peering lacks is absent, not 0.0.0.0/255; an IPv4 route to such a peering is stray", async () => {
    node = await programmedNode(specWith(ipv6Only(dualStackHubSpecDocument()), () => {}));
    const report = inspectNode(node.pins.dir);
    assert.deepEqual(
      [report.config?.podCIDR, report.config?.externalCIDR, report.config?.transitAddress, report.config?.ipv6?.podCIDR],
      [undefined, undefined, undefined, 'fd00:b::/48'],
    );
    assert.deepEqual(
      report.peers.map((p) => [p.peerId, p.localNATPodCIDR, p.localNATExternalCIDR, p.remotePodCIDRs, p.ipv6?.localNATPodCIDR]),
      [
        [7, undefined, undefined, ['fd00:a::/56'], 'fd60:b::/48'],
        [9, undefined, undefined, ['fd00:c::/64'], 'fd00:b::/48'],
      ],
    );
    const text = runCli(['inspect', '--pin-root', node.pins.dir, '--section', 'config', 'peers']).stdout;
    assert.match(text, /^ {2}pod CIDR +-$/m);
    assert.match(text, /^ {2}transit address +-$/m);
    assert.doesNotMatch(text, /0\.0\.0\.0|\/255/);
    node.obj.close();
    node.pins.cleanup();
    node = undefined;

    node = await programmedNode(specWith(peerIpv6Only(dualStackHubSpecDocument(), 0), () => {}));
    layout.openMaps(node.obj).routes.update({ prefixLen: 16, addr: '10.1.0.0' }, { peerId: 7, kind: layout.PrefixKind.Pod });
    const mixed = inspectNode(node.pins.dir);
    assert.deepEqual(mixed.config?.podCIDR, '10.0.0.0/16');
    assert.deepEqual(
      mixed.peers.map((p) => [p.peerId, p.localNATPodCIDR, p.remotePodCIDRs]),
      [
        [7, undefined, ['fd00:a::/56']],
        [9, '192.168.0.0/16', ['10.2.0.0/20', 'fd00:c::/64']],
      ],
    );
    assert.deepEqual(mixed.strayRoutes, [
      { prefix: '10.1.0.0/16', peerId: 7, kind: 0, problem: 'peer 7 carries no IPv4 (its strait_peers entry has no IPv4 network)' },
    ]);
  });

  it('a node the agent has not programmed: strait_config holds its zeroed element, reported as no config', async () => {
    const pins = tempPinDir();
    node = { obj: await BpfObject.load(layout.datapathObjectPath, { pinRoot: pins.dir }), pins };
    const report = inspectNode(pins.dir);
    assert.equal(report.config, null);
    assert.match(
      runCli(['inspect', '--pin-root', pins.dir, '--section', 'config']).stdout,
      /^ {2}\(empty: the agent has not programmed this node yet\)$/m,
    );
  });

  it('flags routes naming no peer or no known kind, and NatMappings whose reverse is missing or different', async () => {
    node = await programmedNode(hubSpecWith((s) => s.natMappings.push({ externalAddress: '10.50.0.3', endpointAddress: '10.0.1.9' })));
    const maps = layout.openMaps(node.obj);
    maps.routes.update({ prefixLen: 16, addr: '10.99.0.0' }, { peerId: 99, kind: layout.PrefixKind.Pod });
    maps.routes.update({ prefixLen: 24, addr: '10.98.0.0' }, { peerId: 7, kind: 5 });
    maps.natmapRev.update('10.2.0.5', '10.50.0.2');
    maps.natmapRev.delete('10.0.1.9');
    const report = inspectNode(node.pins.dir);
    assert.deepEqual(report.strayRoutes, [
      { prefix: '10.98.0.0/24', peerId: 7, kind: 5, problem: 'unknown prefix kind 5' },
      { prefix: '10.99.0.0/16', peerId: 99, kind: 0, problem: 'peer 99 is not in strait_peers' },
    ]);
    assert.deepEqual(
      report.peers.map((p) => [p.peerId, p.remotePodCIDRs, p.remoteExternalCIDRs]),
      [
        [7, ['10.1.0.0/16'], ['10.60.0.0/24']],
        [9, ['10.2.0.0/20'], ['10.70.0.0/24']],
      ],
    );
    assert.deepEqual(report.natMappings, [
      { externalAddress: '10.50.0.1', endpointAddress: '10.2.0.5', problem: 'strait_natmap_rev maps 10.2.0.5 to 10.50.0.2' },
      { externalAddress: '10.50.0.3', endpointAddress: '10.0.1.9', problem: 'strait_natmap_rev has no entry for 10.0.1.9' },
    ]);
    assert.deepEqual(report.strayReverseMappings, [
      { endpointAddress: '10.2.0.5', externalAddress: '10.50.0.2', problem: 'strait_natmap has no entry for 10.50.0.2' },
    ]);
    const text = runCli(['inspect', '--pin-root', node.pins.dir, '--section', 'peers', 'nat']).stdout;
    assert.match(text, /^stray routes \(2\)$/m);
    assert.match(text, /^ {2}10\.50\.0\.3 +10\.0\.1\.9 +strait_natmap_rev has no entry for 10\.0\.1\.9$/m);
  });

  it('a missing pin root, or one without Strait maps: exit 1 with a JSON error naming the path', () => {
    const pins = tempPinDir();
    try {
      const missing = join(pins.dir, 'nowhere');
      const run = runCli(['inspect', '--pin-root', missing, '--json']);
      assert.equal(run.code, 1);
      assert.equal(run.stdout, '');
      assert.deepEqual(JSON.parse(run.stderr), {
        error: `pin root ${missing} does not exist; pass --pin-root the directory the node's agent pins the datapath maps in (is the agent running on this node?)`,
      });
      const empty = runCli(['inspect', '--pin-root', pins.dir]);
      assert.equal(empty.code, 1);
      assert.match(JSON.parse(empty.stderr).error, new RegExp(`^pin root ${pins.dir} holds no Strait maps \\(expected strait_config, `));
    } finally {
      pins.cleanup();
    }
  });

  it('a pin root with some maps missing: exit 1 with a JSON error naming the path and the missing maps, and no partial report', async () => {
    node = await programmedNode(hubSpec());
    for (const name of ['strait_snat', 'strait_drops']) unlinkSync(join(node.pins.dir, name));
    const error = `pin root ${node.pins.dir} lacks strait_snat, strait_drops; the pins are incomplete or from another Strait version: restart the node's agent to load the datapath again`;
    for (const format of [['--json'], []]) {
      const run = runCli(['inspect', '--pin-root', node.pins.dir, ...format]);
      assert.equal(run.code, 1, run.stdout);
      assert.equal(run.stdout, '', 'no partial report');
      assert.deepEqual(JSON.parse(run.stderr), { error });
    }
  });

  it('refuses a pin with another layout and closes the maps it had opened', async () => {
    node = await programmedNode(hubSpec());
    inspectNode(node.pins.dir);
    const alien = BpfMap.create({ type: MapType.Hash, name: 'strait_snat', key: u32, value: u32, maxEntries: 4 });
    try {
      unlinkSync(join(node.pins.dir, 'strait_snat'));
      alien.pin(join(node.pins.dir, 'strait_snat'));
    } finally {
      alien.close();
    }
    const before = openFds();
    assert.throws(
      () => inspectNode(node!.pins.dir),
      (err: Error) =>
        err.name === 'StateError' &&
        err.message.startsWith(
          `${join(node!.pins.dir, 'strait_snat')}: map 'strait_snat': the key codec is 16 bytes but the map's key is 4 bytes`,
        ),
    );
    assert.equal(openFds(), before);
  });

  it('refuses bad options with a JSON error', () => {
    for (const [args, field] of [
      [['--limit', '-3'], '--limit'],
      [['--section', 'routes'], '--section'],
    ] as const) {
      const run = runCli(['inspect', '--pin-root', '/sys/fs/bpf', ...args]);
      assert.equal(run.code, 1);
      assert.equal(JSON.parse(run.stderr).field, field);
    }
  });
});
