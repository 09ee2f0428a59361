import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { readNodeDataplaneSpec } from '../../../src/api/node-dataplane';
import { KernelDatapath, kernelApplyChanged } from '../../../src/dataplane/kernel/kernel-datapath';
import { linkLocalAddress } from '../../../src/dataplane/kernel/identities';
import { ip, run } from '../../../src/kernel/command';
import { createNetns, deleteNetns } from '../../../src/kernel/netns';
import { peeringVni, tunnelMac } from '../../../src/nodespec/peer-tunnel';
import { liveState } from '../../../src/dataplane/kernel/nat-apply';
import type { IpFamily } from '../../../src/net/cidr';
import { homeNetworks } from '../../../src/nodespec/families';
import { hubSpecDocument, ipv6Only, peerIpv6Only, specWith, withIpv6 } from '../../support/node-specs';
import { requireRoot, uniqueName } from '../../support/kernel';

const PORT = 7000;

/** UDP and TCP echo on each address given: replies with the address it was reached at and the sender's. */
const server = `
const dgram = require('node:dgram'), net = require('node:net');
const addrs = process.argv.slice(1);
let bound = 0;
const ready = () => { if (++bound === 2 * addrs.length) console.log('ready'); };
for (const local of addrs) {
  const u = dgram.createSocket('udp6');
  u.on('message', (m, r) => u.send(JSON.stringify({ local, from: r.address }), r.port, r.address));
  u.bind(${PORT}, local, ready);
  net.createServer((c) => c.end(JSON.stringify({ local, from: c.remoteAddress }))).listen(${PORT}, local, ready);
}`;

/** Sends one UDP datagram or opens one TCP connection from `source` to `target`; prints the echo and who answered. */
const client = `
const dgram = require('node:dgram'), net = require('node:net');
const [proto, source, target] = process.argv.slice(2);
setTimeout(() => { console.error('no reply from ' + target); process.exit(1); }, 3000);
const done = (m, replyFrom) => { console.log(JSON.stringify({ ...JSON.parse(String(m)), replyFrom })); process.exit(0); };
if (proto === 'udp') {
  const s = dgram.createSocket('udp6');
  s.on('message', (m, r) => done(m, r.address));
  s.bind(0, source, () => s.send('hello', ${PORT}, target));
} else {
  const c = net.connect({ host: target, port: ${PORT}, localAddress: source });
  let m = '';
  c.on('data', (d) => (m += d)).on('end', () => done(m, c.remoteAddress));
}`;

type Doc = ReturnType<typeof hubSpecDocument>;

/**
 * The shapes of hub B the IPv6 traffic crosses: dual-stack (IPv4 primary); IPv6-only (the same IPv6
 * networks in its own fields); dual-stack peered with A in IPv6 only (A's PeerSpec's own fields IPv6, no
 * secondary; C in both families). Each reconciles to `other` and back in one of the tests.
 */
const shapes: { name: string; docOf: (doc: Doc) => Doc; other: string }[] = [
  { name: 'dual-stack', docOf: withIpv6, other: 'IPv6-only' },
  { name: 'IPv6-only', docOf: (doc) => ipv6Only(withIpv6(doc)), other: 'dual-stack' },
  { name: 'dual-stack, peered with A in IPv6 only,', docOf: (doc) => peerIpv6Only(withIpv6(doc), 0), other: 'IPv6-only' },
];

/**
 * What a node holds of one family's programming: the gateway's NAT table, the set of remote prefixes,
 * rules at Strait's priorities, routes of table 18952 and permanent neighbour entries on Strait's devices.
 */
function familyState(ns: string, family: IpFamily, gateway: boolean): Record<string, boolean> {
  const flag = family === 4 ? '-4' : '-6';
  const list = (args: string[]) => JSON.parse(ip(['-j', flag, ...args], ns) || '[]') as Record<string, unknown>[];
  // A table the family never had a route in does not exist: as good as empty.
  const routesOfTable = () => {
    try {
      return list(['route', 'show', 'table', '18952']).length > 0;
    } catch (err) {
      if (/FIB table does not exist/.test(String(err))) return false;
      throw err;
    }
  };
  const nat = liveState(ns);
  const set = family === 4 ? '"remote_prefixes"' : '"remote_prefixes6"';
  return {
    ...(gateway ? { natTable: nat.has(family === 4 ? 'ip strait' : 'ip6 strait') } : {}),
    remotePrefixes: (nat.get('inet strait_filter') ?? '').includes(`"name":${set}`),
    rules: list(['rule', 'show']).some((r) => Number(r.priority) >= 18952 && Number(r.priority) <= 18959),
    routes: routesOfTable(),
    neighbours: list(['neigh', 'show', 'nud', 'permanent']).some((n) => /^(strait\.|stp)/.test(String(n.dev))),
  };
}

/*
 * Hub B's gateway, dual-stack or IPv6-only, programmed whole by KernelDatapath (devices, routes and rules, NAT), with
 * peer A's gateway at the far end of its VXLAN tunnel and a pod behind it:
 *
 *   peerA (A's gateway: 203.0.113.1, its tunnel made by hand as A's agent would; A's pod fd00:11::7)
 *     ── underlay veth ── gateway (b-gw: 192.0.2.11) ── pod0 ── pod (fd00:10::5, fd00:10::6)
 *                                                    ── underlay veth ── worker (b-worker: 192.0.2.12,
 *                                                       programmed by its own KernelDatapath; a pod
 *                                                       address fd00:10:0:1::5 of its own)
 *
 * The IPv6 packets cross the IPv4 underlay inside the peering's VXLAN, routed by table 18952 to the
 * far device's link-local next hop and translated by `ip6 strait`.
 */
for (const { name: shape, docOf, other: otherShape } of shapes)
  describe(`fallback: IPv6 through a ${shape} gateway, tunnels and NAT (real kernel)`, function () {
    requireRoot(this);
    const gateway = uniqueName('strait-ds-gw');
    const peerA = uniqueName('strait-ds-a');
    const pod = uniqueName('strait-ds-pod');
    const worker = uniqueName('strait-ds-w');
    const spec = () => readNodeDataplaneSpec(docOf(hubSpecDocument()));
    const workerSpec = () =>
      specWith(docOf(hubSpecDocument()), (s) => {
        s.node = { name: 'b-worker', role: 'worker', underlayAddress: '192.0.2.12' };
      });
    const echoes: ChildProcess[] = [];

    before(async function () {
      try {
        for (const ns of [gateway, peerA, pod, worker]) {
          createNetns(ns);
          // Links usable at once: IPv6 forwarding waits for duplicate address detection of the link-local addresses.
          run(['ip', 'netns', 'exec', ns, 'sysctl', '-qw', 'net.ipv6.conf.default.accept_dad=0', 'net.ipv6.conf.all.accept_dad=0']);
          ip(['link', 'set', 'lo', 'up'], ns);
        }
        run(['ip', 'netns', 'exec', gateway, 'sysctl', '-qw', 'net.ipv4.ip_forward=1', 'net.ipv6.conf.all.forwarding=1']);
        ip(['link', 'add', 'underlay', 'type', 'veth', 'peer', 'name', 'underlay', 'netns', peerA], gateway);
        ip(['addr', 'add', '192.0.2.11/32', 'dev', 'underlay'], gateway);
        ip(['addr', 'add', '203.0.113.1/32', 'dev', 'underlay'], peerA);
        ip(['link', 'add', 'pod0', 'type', 'veth', 'peer', 'name', 'eth0', 'netns', pod], gateway);
        for (const [ns, dev] of [
          [gateway, 'underlay'],
          [peerA, 'underlay'],
          [gateway, 'pod0'],
          [pod, 'eth0'],
        ] as const)
          ip(['link', 'set', dev, 'up'], ns);
        ip(['link', 'add', 'intra', 'type', 'veth', 'peer', 'name', 'intra', 'netns', worker], gateway);
        ip(['addr', 'add', '192.0.2.12/32', 'dev', 'intra'], worker);
        for (const ns of [gateway, worker]) ip(['link', 'set', 'intra', 'up'], ns);
        ip(['route', 'add', '192.0.2.12/32', 'dev', 'intra'], gateway);
        ip(['route', 'add', '192.0.2.11/32', 'dev', 'intra'], worker);
        ip(['addr', 'add', 'fd00:10:0:1::5/128', 'dev', 'lo'], worker);
        ip(['route', 'add', '203.0.113.0/24', 'dev', 'underlay'], gateway);
        ip(['route', 'add', '192.0.2.0/24', 'dev', 'underlay'], peerA);
        for (const a of ['fd00:10::5/64', 'fd00:10::6/64']) ip(['addr', 'add', a, 'dev', 'eth0'], pod);
        ip(['addr', 'add', 'fd00:10::1/64', 'dev', 'pod0'], gateway);
        ip(['-6', 'route', 'add', 'default', 'via', 'fd00:10::1'], pod);

        // A's end of the peering, as A's agent makes it (the wire format both ends derive from the cluster ids).
        const mac = tunnelMac('cluster-a', 'cluster-b');
        const vni = peeringVni('cluster-b', 'cluster-a', 18952);
        ip(['link', 'add', 'stpb', 'address', mac, 'type', 'vxlan', 'id', String(vni), 'remote', '192.0.2.11', 'dstport', '4789'], peerA);
        ip(['link', 'set', 'stpb', 'up'], peerA);
        const bSide = linkLocalAddress(tunnelMac('cluster-b', 'cluster-a'));
        ip(['-6', 'neigh', 'replace', bSide, 'lladdr', tunnelMac('cluster-b', 'cluster-a'), 'dev', 'stpb', 'nud', 'permanent'], peerA);
        ip(['addr', 'add', 'fd00:11::7/128', 'dev', 'lo'], peerA);
        for (const dst of ['fd01:16::/56', 'fd01:17::/120']) ip(['-6', 'route', 'add', dst, 'via', bSide, 'dev', 'stpb'], peerA);

        assert.deepEqual(new KernelDatapath(gateway).apply(spec()).failed, []);
        assert.deepEqual(new KernelDatapath(worker).apply(workerSpec()).failed, []);

        for (const [ns, addresses] of [
          [pod, ['fd00:10::5', 'fd00:10::6']],
          [worker, ['fd00:10:0:1::5']],
        ] as const) {
          const echo = spawn('ip', ['netns', 'exec', ns, 'node', '-e', server, ...addresses], { stdio: ['ignore', 'pipe', 'inherit'] });
          echoes.push(echo);
          await new Promise<void>((resolve, reject) => {
            echo.once('exit', (code) => reject(new Error(`echo server in ${ns} exited (${code})`)));
            echo.stdout!.once('data', () => resolve());
          });
        }
      } catch (err) {
        cleanup();
        throw err;
      }
    });
    const cleanup = () => {
      for (const echo of echoes) echo.kill();
      for (const ns of [gateway, peerA, pod, worker]) deleteNetns(ns);
    };
    after(cleanup);

    const send = (proto: 'udp' | 'tcp', target: string) =>
      JSON.parse(run(['ip', 'netns', 'exec', peerA, 'node', '-', proto, 'fd00:11::7', target], client)) as unknown;

    for (const proto of ['udp', 'tcp'] as const) {
      it(`${proto.toUpperCase()} from A's pod to our pod in A's view: the same host in our PodCIDR, the reply from the address A dialled`, () => {
        assert.deepEqual(send(proto, 'fd01:16::5'), { local: 'fd00:10::5', from: 'fd00:11::7', replyFrom: 'fd01:16::5' });
      });
    }

    for (const proto of ['udp', 'tcp'] as const) {
      it(`${proto.toUpperCase()} from A's pod to a pod on a worker: through the gateway and the overlay, replies the same way back`, () => {
        assert.deepEqual(send(proto, 'fd01:16:0:1::5'), { local: 'fd00:10:0:1::5', from: 'fd00:11::7', replyFrom: 'fd01:16:0:1::5' });
      });
    }

    it('UDP from A to a NatMapping address: its endpoint, the reply from the address A dialled', () => {
      assert.deepEqual(send('udp', 'fd01:17::1'), { local: 'fd00:10::6', from: 'fd00:11::7', replyFrom: 'fd01:17::1' });
    });

    it("ping from A's pod to our pod in A's view", () => {
      run(['ip', 'netns', 'exec', peerA, 'ping', '-6', '-c', '1', '-W', '2', '-I', 'fd00:11::7', 'fd01:16::5']);
    });

    it('each node holds the programming of the families its spec has, and nothing of one it lacks', () => {
      for (const [ns, gw] of [
        [gateway, true],
        [worker, false],
      ] as const)
        for (const family of [4, 6] as const) {
          const has = homeNetworks(spec(), family) !== undefined;
          const state = familyState(ns, family, gw);
          assert.deepEqual(state, Object.fromEntries(Object.keys(state).map((k) => [k, has])), `${ns} IPv${family}`);
        }
    });

    it(`reconciles to ${otherShape} and back: nothing stale of IPv4 stays, IPv6 carries on`, () => {
      const other = shapes.find(({ name }) => name === otherShape)!.docOf;
      const otherSpec = (role: 'gateway' | 'worker') =>
        specWith(other(hubSpecDocument()), (s) => {
          if (role === 'worker') s.node = { name: 'b-worker', role: 'worker', underlayAddress: '192.0.2.12' };
        });
      const expectIpv4 = (has: boolean) => {
        for (const [ns, gw] of [
          [gateway, true],
          [worker, false],
        ] as const) {
          const state = familyState(ns, 4, gw);
          assert.deepEqual(state, Object.fromEntries(Object.keys(state).map((k) => [k, has])), `${ns} IPv4`);
          assert.ok(Object.values(familyState(ns, 6, gw)).every(Boolean), `${ns} IPv6`);
        }
      };
      try {
        assert.deepEqual(new KernelDatapath(gateway).apply(otherSpec('gateway')).failed, []);
        assert.deepEqual(new KernelDatapath(worker).apply(otherSpec('worker')).failed, []);
        expectIpv4(homeNetworks(otherSpec('gateway'), 4) !== undefined);
        assert.deepEqual(send('udp', 'fd01:16:0:1::5'), { local: 'fd00:10:0:1::5', from: 'fd00:11::7', replyFrom: 'fd01:16:0:1::5' });
      } finally {
        assert.deepEqual(new KernelDatapath(gateway).apply(spec()).failed, []);
        assert.deepEqual(new KernelDatapath(worker).apply(workerSpec()).failed, []);
      }
      expectIpv4(homeNetworks(spec(), 4) !== undefined);
      assert.deepEqual(send('tcp', 'fd01:16::5'), { local: 'fd00:10::5', from: 'fd00:11::7', replyFrom: 'fd01:16::5' });
    });

    it('a second apply after the traffic changes nothing, on the gateway and on the worker', () => {
      for (const [ns, nodeSpec] of [
        [gateway, spec],
        [worker, workerSpec],
      ] as const) {
        const dp = new KernelDatapath(ns);
        // The first reinstalls the NAT: nat-apply remembers what this process installed last, the other node's (one agent per node).
        assert.equal(dp.apply(nodeSpec()).routes, 0);
        assert.equal(kernelApplyChanged(dp.apply(nodeSpec())), false, ns);
      }
    });
  });
