import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { type WholeNodeDataplaneSpecDocument, readNodeDataplaneSpec } from '../../../src/api/node-dataplane';
import { ensureBpffs } from '../../../src/native';
import { NodeDatapath, cleanupNode } from '../../../src/dataplane/ebpf/node-datapath';
import { ip } from '../../../src/kernel/command';
import { createNetns, deleteNetns, netnsPath } from '../../../src/kernel/netns';
import { ipv6Only, ipv6Primary, peerIpv6Only } from '../../support/node-specs';
import { inspectNode } from '../../../src/dataplane/ebpf/inspect';
import { homeNetworks, peerNetworks } from '../../../src/nodespec/families';
import type { NodeDataplaneSpec } from '../../../src/nodespec/spec';
import { requireRoot, uniqueName } from '../../support/kernel';

/**
 * Two clusters with the same networks, IPv4 and IPv6 (10.0.0.0/16, fd00:1::/48): each sees the other's
 * through its own remapping (A sees B's pods as fd60:b::/48, B sees A's as fd60:a::/48), their gateways
 * peered over an IPv4 underlay. Dual-stack, IPv4 primary: each shape below makes its own of it.
 */
const gatewaySpec = (self: 'a' | 'b', underlay: string, other: string): WholeNodeDataplaneSpecDocument => {
  const peer = self === 'a' ? 'b' : 'a';
  const seen = { a: { v4: '10.60', v6: 'fd60:a' }, b: { v4: '10.61', v6: 'fd60:b' } };
  const ext = { a: { v4: '10.70', v6: 'fd70:a' }, b: { v4: '10.71', v6: 'fd70:b' } };
  return {
    clusterId: self,
    podCIDR: '10.0.0.0/16',
    externalCIDR: '10.50.0.0/24',
    transitAddress: '10.50.0.254',
    secondary: { podCIDR: 'fd00:1::/48', externalCIDR: 'fd00:1:e::/112', transitAddress: 'fd00:1:e::fe' },
    node: { name: `${self}-gw`, role: 'gateway', underlayAddress: underlay },
    activeGateway: { name: `${self}-gw`, underlayAddress: underlay },
    overlay: { vni: 18952, port: 4789, mac: '02:53:54:00:00:01' },
    peers: [
      {
        clusterId: peer,
        peerId: 1,
        remotePodCIDR: `${seen[peer].v4}.0.0/16`,
        remoteExternalCIDR: `${ext[peer].v4}.0.0/24`,
        localNATPodCIDR: `${seen[self].v4}.0.0/16`,
        localNATExternalCIDR: `${ext[self].v4}.0.0/24`,
        secondary: {
          remotePodCIDR: `${seen[peer].v6}::/48`,
          remoteExternalCIDR: `${ext[peer].v6}::/112`,
          localNATPodCIDR: `${seen[self].v6}::/48`,
          localNATExternalCIDR: `${ext[self].v6}::/112`,
        },
        endpoint: { address: other, port: 4789 },
        transport: 'vxlan',
      },
    ],
    natMappings: [],
    nodes: [{ name: `${self}-gw`, underlayAddress: underlay, podCIDRs: ['10.0.0.0/24', 'fd00:1::/64'] }],
  };
};

type Doc = WholeNodeDataplaneSpecDocument;
const same = (doc: Doc) => doc;

/**
 * The shapes of the two clusters the IPv6 connection is made between (each cluster's spec from the
 * dual-stack one), and the family of the underlay their gateways tunnel over.
 */
const shapes: { name: string; a: (doc: Doc) => Doc; b: (doc: Doc) => Doc; underlay: 4 | 6 }[] = [
  { name: 'both dual-stack, IPv4 primary', a: same, b: same, underlay: 4 },
  { name: 'both dual-stack, IPv6 primary', a: ipv6Primary, b: ipv6Primary, underlay: 4 },
  { name: 'both IPv6-only', a: ipv6Only, b: ipv6Only, underlay: 4 },
  // A's peering carries only its secondary family: its PeerSpec's own fields are IPv6, with no secondary.
  { name: 'A dual-stack (IPv4 primary), peered in IPv6 only with an IPv6-only B', a: (d) => peerIpv6Only(d, 0), b: ipv6Only, underlay: 4 },
  // What an IPv6-only cluster's nodes have: no IPv4 address at all (the lab's ipv6-underlay.yaml runs the
  // agents over one end to end).
  { name: 'both IPv6-only, their gateways tunnelling over an IPv6 underlay', a: ipv6Only, b: ipv6Only, underlay: 6 },
];

/** Each gateway's underlay address, in the shape's underlay family. */
const underlays = { 4: ['192.0.2.1', '192.0.2.2', 24], 6: ['fd00:ff::1', 'fd00:ff::2', 64] } as const;

/** Answers one TCP connection on [::]:8080 with the address it came from. */
const server = `
import socket
s = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("::", 8080)); s.listen(1)
print("listening", flush=True)
c, peer = s.accept()
data = c.recv(100)
c.sendall(data + b" from " + peer[0].encode())
c.close()
`;
const client = (dst: string) => `
import socket
c = socket.create_connection(("${dst}", 8080), timeout=5)
c.sendall(b"hello")
print(c.recv(200).decode())
`;

for (const shape of shapes)
  describe(`IPv6 TCP between two clusters with the same networks, through their eBPF gateways (real kernel): ${shape.name}`, function () {
    requireRoot(this);
    const names = { gwA: '', gwB: '', podA: '', podB: '' };
    const pins: Record<string, string> = {};
    const specs: Record<string, NodeDataplaneSpec> = {};
    const datapaths: NodeDatapath[] = [];
    before(async () => {
      ensureBpffs();
      for (const k of Object.keys(names) as (keyof typeof names)[]) {
        names[k] = uniqueName(`strait-test-${k.toLowerCase()}`);
        createNetns(names[k]);
      }
      ip(['link', 'add', 'uplink', 'type', 'veth', 'peer', 'name', 'uplink', 'netns', names.gwB], names.gwA);
      for (const [gw, pod, underlay, other] of [
        [names.gwA, names.podA, addressA, addressB],
        [names.gwB, names.podB, addressB, addressA],
      ] as const) {
        ip(['addr', 'add', `${underlay}/${prefix}`, 'dev', 'uplink', ...(shape.underlay === 6 ? ['nodad'] : [])], gw);
        ip(['link', 'add', 'pod-a', 'type', 'veth', 'peer', 'name', 'eth0', 'netns', pod], gw);
        for (const dev of ['uplink', 'pod-a', 'lo']) ip(['link', 'set', dev, 'up'], gw);
        spawnSync('ip', ['netns', 'exec', gw, 'sysctl', '-qw', 'net.ipv6.conf.all.forwarding=1']);
        const gwMac = (JSON.parse(ip(['-j', 'link', 'show', 'pod-a'], gw)) as { address: string }[])[0]!.address;
        const podMac = (JSON.parse(ip(['-j', 'link', 'show', 'eth0'], pod)) as { address: string }[])[0]!.address;
        ip(['-6', 'addr', 'add', 'fd00:1::5/64', 'dev', 'eth0', 'nodad'], pod);
        for (const dev of ['eth0', 'lo']) ip(['link', 'set', dev, 'up'], pod);
        ip(['-6', 'route', 'add', 'default', 'via', 'fd00:1::1', 'dev', 'eth0', 'onlink'], pod);
        ip(['-6', 'neigh', 'add', 'fd00:1::1', 'lladdr', gwMac, 'dev', 'eth0', 'nud', 'permanent'], pod);
        // What the CNI does: the pod's address routed to its interface.
        ip(['-6', 'route', 'add', 'fd00:1::5/128', 'dev', 'pod-a'], gw);
        ip(['-6', 'neigh', 'add', 'fd00:1::5', 'lladdr', podMac, 'dev', 'pod-a', 'nud', 'permanent'], gw);
        pins[gw] = join('/sys/fs/bpf', uniqueName('strait-test'));
        const datapath = await NodeDatapath.load({ pinRoot: pins[gw]!, netns: netnsPath(gw), podInterfaces: /^pod-/ });
        datapaths.push(datapath);
        const self = gw === names.gwA ? 'a' : 'b';
        specs[gw] = readNodeDataplaneSpec(shape[self](gatewaySpec(self, underlay, other)));
        datapath.apply(specs[gw]!);
      }
    });
    after(() => {
      try {
        for (const d of datapaths) d.close();
        for (const [gw, pinRoot] of Object.entries(pins)) cleanupNode({ pinRoot, netns: netnsPath(gw) });
      } finally {
        for (const n of Object.values(names)) if (n) deleteNetns(n);
      }
    });

    const [addressA, addressB, prefix] = underlays[shape.underlay];
    it("A's pod reaches B's pod (the same address as its own) at B's address in A's view; B sees it at A's address in B's view", async () => {
      const listening = spawn('ip', ['netns', 'exec', names.podB, 'python3', '-c', server]);
      let output = '';
      listening.stdout.on('data', (b: Buffer) => (output += b.toString()));
      listening.stderr.on('data', (b: Buffer) => (output += b.toString()));
      const exited = new Promise<void>((resolve) => listening.on('exit', () => resolve()));
      try {
        for (let i = 0; i < 50 && !output.includes('listening'); i++) await new Promise((r) => setTimeout(r, 100));
        const r = spawnSync('ip', ['netns', 'exec', names.podA, 'python3', '-c', client('fd60:b::5')], {
          encoding: 'utf8',
          timeout: 15000,
        });
        assert.equal(r.stdout.trim(), 'hello from fd60:a::5', r.stderr + output);
        // Both gateways counted what they translated, on the peering's entry (its tunnel), whatever its
        // families: in IPv6's counters, none in IPv4's (the pods have no IPv4 address).
        for (const gw of [names.gwA, names.gwB]) {
          const report = inspectNode(pins[gw]!);
          const [peer] = report.peers;
          const { ipv4, ipv6 } = peer!.counters;
          assert.ok(ipv6.txPackets > 0 && ipv6.rxPackets > 0, `${gw}: ${JSON.stringify(peer)}`);
          assert.deepEqual(ipv4, { txPackets: 0, txBytes: 0, rxPackets: 0, rxBytes: 0 }, gw);
          // A family the node or the peering lacks is shown absent, not as 0.0.0.0/255.
          const spec = specs[gw]!;
          assert.equal(report.config!.podCIDR !== undefined, homeNetworks(spec, 4) !== undefined, gw);
          assert.equal(peer!.localNATPodCIDR !== undefined, peerNetworks(spec.peers[0]!, 4) !== undefined, gw);
          assert.ok(report.config!.ipv6 && peer!.ipv6, gw);
          // The tunnel ends as inspect shows them, in the underlay's family (the other gateway's is the endpoint).
          const [self, other] = gw === names.gwA ? [addressA, addressB] : [addressB, addressA];
          assert.deepEqual([report.config!.nodeAddress, report.config!.activeGatewayAddress, peer!.endpoint], [self, self, other], gw);
        }
      } finally {
        listening.kill();
        await exited;
      }
    });
  });
