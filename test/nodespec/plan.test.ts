import assert from 'node:assert/strict';
import fc from 'fast-check';
import { readNodeDataplaneSpec, writeNodeDataplaneSpec } from '../../src/api/node-dataplane';
import { formatCidr, formatIp, parseCidr, parseIp } from '../../src/net/cidr';
import { mapEndpoint } from '../../src/network-ipam/endpoints';
import { initializeIpam } from '../../src/network-ipam/initialize';
import { addPeer, homePodIp, setRemoteView } from '../../src/network-ipam/peers';
import type { IpamPlanes } from '../../src/network-ipam/planes';
import type { PeerRecord } from '../../src/network-ipam/state';
import type { TunnelEndpoint } from '../../src/api/tunnel-endpoint';
import { assignPeerIds } from '../../src/nodespec/peer-id';
import { planNodeSpec, transitAddress } from '../../src/nodespec/plan';
import { desiredMaps } from '../../src/dataplane/ebpf/desired-maps';
import { planKernelRouting } from '../../src/dataplane/kernel/routing-plan';

/** A peering's four networks in a TunnelEndpoint, from the IPAM's record of it (both directions known). */
const tunnelNetworks = (p: PeerRecord) => ({
  remotePodCIDR: p.remotePodCIDR,
  remoteExternalCIDR: p.remoteExternalCIDR,
  localNATPodCIDR: p.localNATPodCIDR!,
  localNATExternalCIDR: p.localNATExternalCIDR!,
});

/** Hub B's tunnels with A's peering carrying `a` (B's record of A in its IPv6 plane) under `secondary`. */
const withSecondaryOfA = (tunnels: TunnelEndpoint[], a: PeerRecord): TunnelEndpoint[] =>
  tunnels.map((t) => (t.clusterId === 'cluster-a' ? { ...t, secondary: tunnelNetworks(a) } : t));

/**
 * Hub B (PodCIDR 10.0.0.0/16, ExternalCIDR 10.50.0.0/24) peered with A (the same PodCIDR: remapped to
 * 10.1.0.0/16) and C (10.1.0.0/20: then taken by A's remap, so remapped to 10.2.0.0/20); each peer
 * remapped B differently, so all four prefixes differ everywhere.
 */
function hubB(): { ipam: IpamPlanes; tunnels: TunnelEndpoint[] } {
  let ipam = initializeIpam(undefined, { podCIDR: '10.0.0.0/16', externalCIDR: '10.50.0.0/24' }).state;
  ipam = addPeer(ipam, { clusterId: 'cluster-a', podCIDR: '10.0.0.0/16', externalCIDR: '10.60.0.0/24' }).state;
  ipam = addPeer(ipam, { clusterId: 'cluster-c', podCIDR: '10.1.0.0/20', externalCIDR: '10.70.0.0/24' }).state;
  ipam = setRemoteView(ipam, { clusterId: 'cluster-a', localNATPodCIDR: '172.16.0.0/16', localNATExternalCIDR: '172.17.0.0/24' }).state;
  ipam = setRemoteView(ipam, { clusterId: 'cluster-c', localNATPodCIDR: '192.168.0.0/16', localNATExternalCIDR: '10.90.0.0/24' }).state;
  // C's pod 10.1.0.5 (10.2.0.5 in B's view) reflected into A: a NatMapping on B.
  ipam = mapEndpoint(ipam, 'cluster-a', '10.2.0.5').state;
  const view = (id: string) => tunnelNetworks(ipam.peers.get(id)!);
  return {
    ipam: { primary: ipam },
    tunnels: [
      { clusterId: 'cluster-c', ...view('cluster-c'), endpoint: { address: ip('203.0.113.3'), standbyAddresses: [] } },
      {
        clusterId: 'cluster-a',
        ...view('cluster-a'),
        endpoint: { address: ip('203.0.113.1'), port: 4790, standbyAddresses: [ip('203.0.113.4')] },
      },
    ],
  };
}

const ip = (text: string) => parseIp('test', text);
const node = (name: string, underlay: string, podCIDR: string, publicAddress?: string) => ({
  name,
  underlayAddress: ip(underlay),
  podCIDRs: [parseCidr('test', podCIDR)],
  ...(publicAddress ? { publicAddress: ip(publicAddress) } : {}),
  gatewayCandidate: true,
});
const nodes = [node('b-worker', '192.0.2.12', '10.0.1.0/24'), node('b-gw', '192.0.2.11', '10.0.0.0/24')];

describe('node dataplane planner', () => {
  it('plans the hub gateway: the four prefixes per peer, the NatMapping, the nodes', () => {
    const { ipam, tunnels } = hubB();
    const spec = planNodeSpec({
      clusterId: 'cluster-b',
      ipam,
      tunnels,
      nodes,
      nodeName: 'b-gw',
      gatewayName: 'b-gw',
      standbyGateways: ['b-worker'],
    });
    assert.deepEqual(writeNodeDataplaneSpec(spec), {
      clusterId: 'cluster-b',
      podCIDR: '10.0.0.0/16',
      externalCIDR: '10.50.0.0/24',
      transitAddress: '10.50.0.254',
      node: { name: 'b-gw', role: 'gateway', underlayAddress: '192.0.2.11', gatewayCandidate: true },
      activeGateway: { name: 'b-gw', underlayAddress: '192.0.2.11' },
      standbyGateways: ['b-worker'],
      overlay: { vni: 18952, port: 4789, mac: '02:53:54:00:00:01' }, // the default (docs/cli.md: `strait inspect`)
      peers: [
        {
          clusterId: 'cluster-a',
          peerId: 0xb20a3a53,
          remotePodCIDR: '10.1.0.0/16',
          remoteExternalCIDR: '10.60.0.0/24',
          localNATPodCIDR: '172.16.0.0/16',
          localNATExternalCIDR: '172.17.0.0/24',
          endpoint: { address: '203.0.113.1', port: 4790, standbyAddresses: ['203.0.113.4'] },
          transport: 'vxlan',
        },
        {
          clusterId: 'cluster-c',
          peerId: 0xb40a3d79,
          remotePodCIDR: '10.2.0.0/20',
          remoteExternalCIDR: '10.70.0.0/24',
          localNATPodCIDR: '192.168.0.0/16',
          localNATExternalCIDR: '10.90.0.0/24',
          endpoint: { address: '203.0.113.3', port: 4789 },
          transport: 'vxlan',
        },
      ],
      natMappings: [{ externalAddress: '10.50.0.1', endpointAddress: '10.2.0.5' }],
      nodes: [
        { name: 'b-gw', underlayAddress: '192.0.2.11', podCIDRs: ['10.0.0.0/24'] },
        { name: 'b-worker', underlayAddress: '192.0.2.12', podCIDRs: ['10.0.1.0/24'] },
      ],
    });
  });

  it('plans a worker with the active gateway, and a new gateway changes only that', () => {
    const { ipam, tunnels } = hubB();
    const worker = planNodeSpec({ clusterId: 'cluster-b', ipam, tunnels, nodes, nodeName: 'b-worker', gatewayName: 'b-gw' });
    assert.deepEqual(worker.node, { name: 'b-worker', role: 'worker', underlayAddress: ip('192.0.2.12'), gatewayCandidate: true });
    assert.deepEqual(worker.activeGateway, { name: 'b-gw', underlayAddress: ip('192.0.2.11') });
    const failover = planNodeSpec({ clusterId: 'cluster-b', ipam, tunnels, nodes, nodeName: 'b-worker', gatewayName: 'b-worker' });
    assert.deepEqual({ ...failover, node: worker.node, activeGateway: worker.activeGateway }, worker);
    assert.equal(failover.node.role, 'gateway');
  });

  it("marks the encrypted peerings ipsec and carries the node's public address", () => {
    const { ipam, tunnels } = hubB();
    const withPublic = nodes.map((n) => (n.name === 'b-gw' ? { ...n, publicAddress: ip('203.0.113.2') } : n));
    const spec = planNodeSpec({
      clusterId: 'cluster-b',
      ipam,
      tunnels,
      nodes: withPublic,
      nodeName: 'b-gw',
      gatewayName: 'b-gw',
      encryptedPeers: new Set(['cluster-c']),
    });
    assert.deepEqual(
      spec.peers.map((p) => `${p.clusterId}:${p.transport}`),
      ['cluster-a:vxlan', 'cluster-c:ipsec'],
    );
    assert.deepEqual(spec.node, {
      name: 'b-gw',
      role: 'gateway',
      underlayAddress: ip('192.0.2.11'),
      publicAddress: ip('203.0.113.2'),
      gatewayCandidate: true,
    });
    assert.deepEqual(
      spec.nodes.map((n) => Object.keys(n)),
      [
        ['name', 'underlayAddress', 'podCIDRs'],
        ['name', 'underlayAddress', 'podCIDRs'],
      ],
      'public addresses stay out of the node list',
    );
  });

  it("hands the cluster's tunnel MTU override to every node, and nothing without one", () => {
    const { ipam, tunnels } = hubB();
    for (const nodeName of ['b-gw', 'b-worker']) {
      assert.equal(
        planNodeSpec({ clusterId: 'cluster-b', ipam, tunnels, nodes, nodeName, gatewayName: 'b-gw', tunnelMTU: 1400 }).tunnelMTU,
        1400,
      );
      assert.equal('tunnelMTU' in planNodeSpec({ clusterId: 'cluster-b', ipam, tunnels, nodes, nodeName, gatewayName: 'b-gw' }), false);
    }
  });

  it('refuses a node or gateway that is not a node of the cluster, naming the field', () => {
    const { ipam, tunnels } = hubB();
    const plan = (over: object) =>
      planNodeSpec({ clusterId: 'cluster-b', ipam, tunnels, nodes, nodeName: 'b-gw', gatewayName: 'b-gw', ...over });
    assert.throws(() => plan({ nodeName: 'nope' }), /nodeName: is not a node of the cluster/);
    assert.throws(() => plan({ gatewayName: 'gone' }), /gatewayName: is not a node/);
  });

  it('plans a spec its own reader accepts, for every node and gateway', () => {
    const { ipam, tunnels } = hubB();
    for (const nodeName of ['b-gw', 'b-worker'])
      for (const gatewayName of ['b-gw', 'b-worker']) {
        const spec = planNodeSpec({ clusterId: 'cluster-b', ipam, tunnels, nodes, nodeName, gatewayName });
        assert.deepEqual(readNodeDataplaneSpec(writeNodeDataplaneSpec(spec)), spec);
      }
  });

  it('plans a dual-stack node: the secondary family of home, of each peering that has it, and its NatMappings', () => {
    const { ipam, tunnels } = hubB();
    // B's IPv6 plane: A numbers its IPv6 pods as B does (fd00:10::/56), so B places A's at the lowest free /56
    // of fd00::/8; C has no IPv6. An IPv6 endpoint outside B reflected to A: a NatMapping of the IPv6 ExternalCIDR.
    let six = initializeIpam(undefined, { podCIDR: 'fd00:10::/56', externalCIDR: 'fd00:50::/120' }, false, 'secondary.').state;
    six = addPeer(six, { clusterId: 'cluster-a', podCIDR: 'fd00:10::/56', externalCIDR: 'fd00:60::/120' }).state;
    six = setRemoteView(six, { clusterId: 'cluster-a', localNATPodCIDR: 'fd00:20::/56', localNATExternalCIDR: 'fd00:70::/120' }).state;
    six = mapEndpoint(six, 'cluster-a', 'fd00:99::5').state;
    const a = six.peers.get('cluster-a')!;
    const dual = withSecondaryOfA(tunnels, a);
    const spec = planNodeSpec({
      clusterId: 'cluster-b',
      ipam: { ...ipam, secondary: six },
      tunnels: dual,
      nodes,
      nodeName: 'b-gw',
      gatewayName: 'b-gw',
    });
    const doc = writeNodeDataplaneSpec(spec);
    assert.deepEqual(doc.secondary, { podCIDR: 'fd00:10::/56', externalCIDR: 'fd00:50::/120', transitAddress: 'fd00:50::ff' });
    assert.deepEqual(doc.peers.find((p) => p.clusterId === 'cluster-a')!.secondary, {
      remotePodCIDR: 'fd00::/56',
      remoteExternalCIDR: 'fd00:60::/120',
      localNATPodCIDR: 'fd00:20::/56',
      localNATExternalCIDR: 'fd00:70::/120',
    });
    assert.equal(doc.peers.find((p) => p.clusterId === 'cluster-c')!.secondary, undefined, 'C is single-stack');
    assert.deepEqual(doc.natMappings, [
      { externalAddress: '10.50.0.1', endpointAddress: '10.2.0.5' },
      { externalAddress: 'fd00:50::', endpointAddress: 'fd00:99::5' },
    ]);
    assert.deepEqual(readNodeDataplaneSpec(doc), spec, 'the reader takes what the planner plans');
  });

  it('plans IPv6 PodCIDRs longer than /64 (docs/dual-stack.md): a /120 cluster remapped to a /120, /124 and /128 node prefixes, through both dataplanes', () => {
    const { ipam, tunnels } = hubB();
    // Cilium's default per-node IPv6 block is a /120, Calico's a /122: B's IPv6 pods in one /120, A's too,
    // numbered as B's (remapped), a node of one address (/128) beside one of sixteen (/124).
    let six = initializeIpam(undefined, { podCIDR: 'fd00:10::/120', externalCIDR: 'fd00:50::/122' }, false, 'secondary.').state;
    six = addPeer(six, { clusterId: 'cluster-a', podCIDR: 'fd00:10::/120', externalCIDR: 'fd00:60::/128' }).state;
    six = setRemoteView(six, { clusterId: 'cluster-a', localNATPodCIDR: 'fd00:20::/120', localNATExternalCIDR: 'fd00:70::/122' }).state;
    const a = six.peers.get('cluster-a')!;
    assert.deepEqual([formatCidr(a.remotePodCIDR), formatCidr(a.remoteExternalCIDR)], ['fd00::/120', 'fd00:60::/128']);
    assert.equal(homePodIp(six, 'cluster-a', 'fd00:10::fe'), 'fd00::fe', "A's pod in B's view: the host bits kept");
    six = mapEndpoint(six, 'cluster-a', 'fd00::7').state;
    const dual = withSecondaryOfA(tunnels, a);
    const dualNodes = [
      { ...nodes[0]!, podCIDRs: [...nodes[0]!.podCIDRs, parseCidr('test', 'fd00:10::80/128')] },
      { ...nodes[1]!, podCIDRs: [...nodes[1]!.podCIDRs, parseCidr('test', 'fd00:10::/124')] },
    ];
    const plan = (nodeName: string) =>
      planNodeSpec({
        clusterId: 'cluster-b',
        ipam: { ...ipam, secondary: six },
        tunnels: dual,
        nodes: dualNodes,
        nodeName,
        gatewayName: 'b-gw',
      });
    const gateway = plan('b-gw');
    const doc = writeNodeDataplaneSpec(gateway);
    assert.deepEqual(doc.secondary, { podCIDR: 'fd00:10::/120', externalCIDR: 'fd00:50::/122', transitAddress: 'fd00:50::3f' });
    assert.deepEqual(doc.peers.find((p) => p.clusterId === 'cluster-a')!.secondary, {
      remotePodCIDR: 'fd00::/120',
      remoteExternalCIDR: 'fd00:60::/128',
      localNATPodCIDR: 'fd00:20::/120',
      localNATExternalCIDR: 'fd00:70::/122',
    });
    assert.deepEqual(
      doc.nodes.map((n) => n.podCIDRs),
      [
        ['10.0.0.0/24', 'fd00:10::/124'],
        ['10.0.1.0/24', 'fd00:10::80/128'],
      ],
    );
    assert.deepEqual(doc.natMappings[1], { externalAddress: 'fd00:50::', endpointAddress: 'fd00::7' });
    assert.deepEqual(readNodeDataplaneSpec(doc), gateway, 'the reader takes what the planner plans');
    // eBPF: the node prefixes as LPM keys of their own length, the peer's /120 and /128 as its routes.
    const maps = desiredMaps(gateway, 42);
    assert.deepEqual(
      maps.nodes6.map(([key, value]) => [`${key.addr}/${key.prefixLen}`, value.underlay]),
      [
        ['fd00:10::/124', '192.0.2.11'],
        ['fd00:10::80/128', '192.0.2.12'],
      ],
    );
    assert.deepEqual(
      maps.routes6.map(([key]) => `${key.addr}/${key.prefixLen}`),
      ['fd00::/120', 'fd00:60::/128'],
    );
    // The kernel fallback: the gateway routes A's /120 and /128 to A, the worker's /128 through the overlay
    // (symmetric routing); the worker routes A's prefixes toward the gateway.
    const routes6 = (nodeName: string) =>
      planKernelRouting(plan(nodeName))
        .routes.filter((r) => r.prefix.includes(':'))
        .map((r) => `${r.prefix} ${r.unreachable ? 'unreachable (backstop)' : r.device}`);
    assert.deepEqual(routes6('b-gw').sort(), [
      'fd00:10::80/128 strait.vxlan',
      'fd00:60::/128 stpb20a3a53',
      'fd00:60::/128 unreachable (backstop)',
      'fd00::/120 stpb20a3a53',
      'fd00::/120 unreachable (backstop)',
    ]);
    assert.deepEqual(routes6('b-worker').sort(), [
      'fd00:60::/128 strait.vxlan',
      'fd00:60::/128 unreachable (backstop)',
      'fd00::/120 strait.vxlan',
      'fd00::/120 unreachable (backstop)',
    ]);
  });

  it('keeps the transit address out of reach of the lowest-first allocation for every IPv4 size', () => {
    const transit = (cidr: string) => formatIp(transitAddress(parseCidr('c', cidr)));
    assert.equal(transit('10.50.0.0/24'), '10.50.0.254');
    assert.equal(transit('10.48.0.0/12'), '10.63.255.254');
    assert.equal(transit('10.0.0.4/30'), '10.0.0.6');
    assert.equal(transit('10.0.0.4/31'), '10.0.0.5');
    assert.equal(transit('fd00::/64'), 'fd00::ffff:ffff:ffff:ffff');
  });

  it('gives every peer the FNV-1a hash of its id, and the later in name order of two that collide the next id', () => {
    // FNV-1a 32 of the cluster id, computed outside the code; 'costarring' and 'liquid' collide.
    assert.deepEqual(
      [...assignPeerIds(['cluster-c', 'cluster-a'])],
      [
        ['cluster-a', 0xb20a3a53],
        ['cluster-c', 0xb40a3d79],
      ],
    );
    assert.deepEqual(
      [...assignPeerIds(['liquid', 'costarring'])],
      [
        ['costarring', 0x5e4daa9d],
        ['liquid', 0x5e4daa9e],
      ],
    );
  });

  it('gives every peer a stable non-zero id, whatever other peers exist', () => {
    fc.assert(
      fc.property(fc.uniqueArray(fc.string({ minLength: 1, maxLength: 12 }), { minLength: 1, maxLength: 40 }), (ids) => {
        const all = assignPeerIds(ids);
        assert.equal(new Set(all.values()).size, ids.length, 'ids are distinct');
        for (const v of all.values()) assert.ok(v > 0 && v <= 0xffffffff);
      }),
    );
    assert.equal(assignPeerIds(['cluster-a']).get('cluster-a'), assignPeerIds(['cluster-z', 'cluster-a']).get('cluster-a'));
  });

  it('never gives 0: a hash of 0 is 1, and probing past 2^32 - 1 wraps to 1', () => {
    assert.deepEqual(
      [...assignPeerIds(['a', 'b'], () => 0)],
      [
        ['a', 1],
        ['b', 2],
      ],
    );
    assert.deepEqual(
      [...assignPeerIds(['a', 'b', 'c'], () => 0xffffffff)],
      [
        ['a', 0xffffffff],
        ['b', 1],
        ['c', 2],
      ],
    );
  });
});
