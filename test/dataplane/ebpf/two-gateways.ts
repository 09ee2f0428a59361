/**
 * Two clusters with the same networks, IPv4 and IPv6 (10.0.0.0/16, fd00:1::/48), one gateway node each
 * with one pod (10.0.0.5, fd00:1::5): each sees the other's through its own remapping (A sees B's pods as
 * 10.61.0.0/16 and fd60:b::/48, B sees A's as 10.60.0.0/16 and fd60:a::/48), their gateways peered
 * through the eBPF datapath over an IPv4 or IPv6 underlay. Real namespaces, programs and packets.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { type WholeNodeDataplaneSpecDocument, readNodeDataplaneSpec } from '../../../src/api/node-dataplane';
import { ensureBpffs } from '../../../src/native';
import { NodeDatapath, cleanupNode } from '../../../src/dataplane/ebpf/node-datapath';
import { ip } from '../../../src/kernel/command';
import { createNetns, deleteNetns } from '../../../src/kernel/netns';
import type { NodeDataplaneSpec } from '../../../src/nodespec/spec';
import { netnsPath } from '../../../src/kernel/netns';
import { uniqueName } from '../../support/kernel';

export type Doc = WholeNodeDataplaneSpecDocument;

/** The dual-stack spec of `self`'s gateway (IPv4 primary), `underlay` its address, `other` the peer gateway's. */
const gatewaySpec = (self: 'a' | 'b', underlay: string, other: string): Doc => {
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

/** Each gateway's underlay address, in the underlay's family. */
const underlays = { 4: ['192.0.2.1', '192.0.2.2', 24], 6: ['fd00:ff::1', 'fd00:ff::2', 64] } as const;

export interface TwoGatewaysOptions {
  /** Each cluster's spec made from the dual-stack one. */
  a: (doc: Doc) => Doc;
  b: (doc: Doc) => Doc;
  underlay: 4 | 6;
}

export interface TwoGateways {
  /** Namespace names: the gateways and their pods. */
  names: { gwA: string; gwB: string; podA: string; podB: string };
  pins: Record<string, string>;
  specs: Record<string, NodeDataplaneSpec>;
  underlay: { a: string; b: string };
}

/** Builds the two clusters in the suite's `before` and takes them down in its `after`, also when a test failed. */
export function twoGateways(options: TwoGatewaysOptions): TwoGateways {
  const [addressA, addressB, prefix] = underlays[options.underlay];
  const lab: TwoGateways = { names: { gwA: '', gwB: '', podA: '', podB: '' }, pins: {}, specs: {}, underlay: { a: addressA, b: addressB } };
  const { names, pins, specs } = lab;
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
      ip(['addr', 'add', `${underlay}/${prefix}`, 'dev', 'uplink', ...(options.underlay === 6 ? ['nodad'] : [])], gw);
      ip(['link', 'add', 'pod-a', 'type', 'veth', 'peer', 'name', 'eth0', 'netns', pod], gw);
      for (const dev of ['uplink', 'pod-a', 'lo']) ip(['link', 'set', dev, 'up'], gw);
      for (const sysctl of ['net.ipv4.ip_forward=1', 'net.ipv6.conf.all.forwarding=1'])
        spawnSync('ip', ['netns', 'exec', gw, 'sysctl', '-qw', sysctl]);
      const gwMac = (JSON.parse(ip(['-j', 'link', 'show', 'pod-a'], gw)) as { address: string }[])[0]!.address;
      const podMac = (JSON.parse(ip(['-j', 'link', 'show', 'eth0'], pod)) as { address: string }[])[0]!.address;
      ip(['addr', 'add', '10.0.0.5/24', 'dev', 'eth0'], pod);
      ip(['-6', 'addr', 'add', 'fd00:1::5/64', 'dev', 'eth0', 'nodad'], pod);
      for (const dev of ['eth0', 'lo']) ip(['link', 'set', dev, 'up'], pod);
      // What the CNI does: a default route through the node, the pod's address routed to its interface.
      ip(['route', 'add', 'default', 'via', '10.0.0.1', 'dev', 'eth0', 'onlink'], pod);
      ip(['neigh', 'add', '10.0.0.1', 'lladdr', gwMac, 'dev', 'eth0', 'nud', 'permanent'], pod);
      ip(['-6', 'route', 'add', 'default', 'via', 'fd00:1::1', 'dev', 'eth0', 'onlink'], pod);
      ip(['-6', 'neigh', 'add', 'fd00:1::1', 'lladdr', gwMac, 'dev', 'eth0', 'nud', 'permanent'], pod);
      ip(['route', 'add', '10.0.0.5/32', 'dev', 'pod-a'], gw);
      ip(['neigh', 'add', '10.0.0.5', 'lladdr', podMac, 'dev', 'pod-a', 'nud', 'permanent'], gw);
      ip(['-6', 'route', 'add', 'fd00:1::5/128', 'dev', 'pod-a'], gw);
      ip(['-6', 'neigh', 'add', 'fd00:1::5', 'lladdr', podMac, 'dev', 'pod-a', 'nud', 'permanent'], gw);
      pins[gw] = join('/sys/fs/bpf', uniqueName('strait-test'));
      const datapath = await NodeDatapath.load({ pinRoot: pins[gw]!, netns: netnsPath(gw), podInterfaces: /^pod-/ });
      datapaths.push(datapath);
      const self = gw === names.gwA ? 'a' : 'b';
      specs[gw] = readNodeDataplaneSpec(options[self](gatewaySpec(self, underlay, other)));
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
  return lab;
}

/** Answers one TCP connection on port 8080, both families, with the address it came from (IPv4 as IPv4). */
const server = `
import socket
s = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
s.bind(("::", 8080)); s.listen(1)
print("listening", flush=True)
c, peer = s.accept()
data = c.recv(100)
c.sendall(data + b" from " + peer[0].removeprefix("::ffff:").encode())
c.close()
`;
const client = (dst: string, port: number) => `
import socket
c = socket.create_connection(("${dst}", ${port}), timeout=5)
c.sendall(b"hello")
print(c.recv(200).decode())
`;

/**
 * One TCP connection from `from` to `dst`:`port`, answered by the server in `to` (port 8080); what the
 * client read ("hello from <address the server saw>").
 */
export async function connectOnce(from: string, to: string, dst: string, port = 8080): Promise<string> {
  const listening = spawn('ip', ['netns', 'exec', to, 'python3', '-c', server]);
  let output = '';
  listening.stdout.on('data', (b: Buffer) => (output += b.toString()));
  listening.stderr.on('data', (b: Buffer) => (output += b.toString()));
  const exited = new Promise<void>((resolve) => listening.on('exit', () => resolve()));
  try {
    for (let i = 0; i < 50 && !output.includes('listening'); i++) await new Promise((r) => setTimeout(r, 100));
    assert.match(output, /listening/, 'the server listens');
    const r = spawnSync('ip', ['netns', 'exec', from, 'python3', '-c', client(dst, port)], { encoding: 'utf8', timeout: 15000 });
    return r.stdout.trim() || `(nothing: ${r.stderr.trim()} ${output})`;
  } finally {
    listening.kill();
    await exited;
  }
}
