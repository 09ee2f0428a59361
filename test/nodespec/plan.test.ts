import assert from 'node:assert/strict';
import fc from 'fast-check';
import { parseCidr } from '../../src/ipam/cidr';
import { mapEndpoint } from '../../src/ipam/endpoints';
import { initializeIpam } from '../../src/ipam/initialize';
import { addPeer, setRemoteView } from '../../src/ipam/peers';
import type { IpamState } from '../../src/ipam/state';
import type { TunnelEndpoint } from '../../src/netmgr/tunnel-endpoint';
import { assignPeerIds } from '../../src/nodespec/peer-id';
import { planNodeSpec, transitAddress } from '../../src/nodespec/plan';

/**
 * Hub B (PodCIDR 10.0.0.0/16, ExternalCIDR 10.50.0.0/24) peered with A (the same PodCIDR: remapped to
 * 10.1.0.0/16) and C (10.1.0.0/20: then taken by A's remap, so remapped to 10.2.0.0/20); each peer
 * remapped B differently, so all four prefixes differ everywhere.
 */
function hubB(): { ipam: IpamState; tunnels: TunnelEndpoint[] } {
  let ipam = initializeIpam(undefined, { podCIDR: '10.0.0.0/16', externalCIDR: '10.50.0.0/24' }).state;
  ipam = addPeer(ipam, { clusterId: 'cluster-a', podCIDR: '10.0.0.0/16', externalCIDR: '10.60.0.0/24' }).state;
  ipam = addPeer(ipam, { clusterId: 'cluster-c', podCIDR: '10.1.0.0/20', externalCIDR: '10.70.0.0/24' }).state;
  ipam = setRemoteView(ipam, { clusterId: 'cluster-a', localNATPodCIDR: '172.16.0.0/16', localNATExternalCIDR: '172.17.0.0/24' }).state;
  ipam = setRemoteView(ipam, { clusterId: 'cluster-c', localNATPodCIDR: '192.168.0.0/16', localNATExternalCIDR: '10.90.0.0/24' }).state;
  // C's pod 10.1.0.5 (10.2.0.5 in B's view) reflected into A: a NatMapping on B.
  ipam = mapEndpoint(ipam, 'cluster-a', '10.2.0.5').state;
  const view = (id: string) => {
    const p = ipam.peers.get(id)!;
    return { remotePodCIDR: fmt(p.remotePodCIDR), remoteExternalCIDR: fmt(p.remoteExternalCIDR), localNATPodCIDR: fmt(p.localNATPodCIDR!), localNATExternalCIDR: fmt(p.localNATExternalCIDR!) };
  };
  return {
    ipam,
    tunnels: [
      { clusterId: 'cluster-c', ...view('cluster-c'), endpoint: { address: '203.0.113.3' } },
      { clusterId: 'cluster-a', ...view('cluster-a'), endpoint: { address: '203.0.113.1', port: 4790 } },
    ],
  };
}

const fmt = (c: { family: 4 | 6; base: bigint; prefix: number }) => `${[24, 16, 8, 0].map((s) => Number((c.base >> BigInt(s)) & 255n)).join('.')}/${c.prefix}`;

const nodes = [
  { name: 'b-worker', underlayAddress: '192.0.2.12', podCIDRs: ['10.0.1.0/24'] },
  { name: 'b-gw', underlayAddress: '192.0.2.11', podCIDRs: ['10.0.0.0/24'] },
];

describe('node dataplane planner', () => {
  it('plans the hub gateway: the four prefixes per peer, the NatMapping, the nodes', () => {
    const { ipam, tunnels } = hubB();
    const spec = planNodeSpec({ clusterId: 'cluster-b', ipam, tunnels, nodes, nodeName: 'b-gw', gatewayName: 'b-gw' });
    assert.deepEqual(spec, {
      clusterId: 'cluster-b',
      podCIDR: '10.0.0.0/16',
      externalCIDR: '10.50.0.0/24',
      transitAddress: '10.50.0.254',
      node: { name: 'b-gw', role: 'gateway', underlayAddress: '192.0.2.11' },
      activeGateway: { name: 'b-gw', underlayAddress: '192.0.2.11' },
      overlay: { vni: 18952, port: 4789, mac: '02:53:54:00:00:01' }, // the default (README: `strait inspect`)
      peers: [
        { clusterId: 'cluster-a', peerId: 0xb20a3a53, remotePodCIDR: '10.1.0.0/16', remoteExternalCIDR: '10.60.0.0/24', localNATPodCIDR: '172.16.0.0/16', localNATExternalCIDR: '172.17.0.0/24', endpoint: { address: '203.0.113.1', port: 4790 }, transport: 'vxlan' },
        { clusterId: 'cluster-c', peerId: 0xb40a3d79, remotePodCIDR: '10.2.0.0/20', remoteExternalCIDR: '10.70.0.0/24', localNATPodCIDR: '192.168.0.0/16', localNATExternalCIDR: '10.90.0.0/24', endpoint: { address: '203.0.113.3', port: 4789 }, transport: 'vxlan' },
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
    assert.deepEqual(worker.node, { name: 'b-worker', role: 'worker', underlayAddress: '192.0.2.12' });
    assert.deepEqual(worker.activeGateway, { name: 'b-gw', underlayAddress: '192.0.2.11' });
    const failover = planNodeSpec({ clusterId: 'cluster-b', ipam, tunnels, nodes, nodeName: 'b-worker', gatewayName: 'b-worker' });
    assert.deepEqual({ ...failover, node: worker.node, activeGateway: worker.activeGateway }, worker);
    assert.equal(failover.node.role, 'gateway');
  });

  it('marks the encrypted peerings ipsec and carries the node\'s public address', () => {
    const { ipam, tunnels } = hubB();
    const withPublic = nodes.map((n) => (n.name === 'b-gw' ? { ...n, publicAddress: '203.0.113.2' } : n));
    const spec = planNodeSpec({ clusterId: 'cluster-b', ipam, tunnels, nodes: withPublic, nodeName: 'b-gw', gatewayName: 'b-gw', encryptedPeers: new Set(['cluster-c']) });
    assert.deepEqual(spec.peers.map((p) => `${p.clusterId}:${p.transport}`), ['cluster-a:vxlan', 'cluster-c:ipsec']);
    assert.deepEqual(spec.node, { name: 'b-gw', role: 'gateway', underlayAddress: '192.0.2.11', publicAddress: '203.0.113.2' });
    assert.deepEqual(spec.nodes.map((n) => Object.keys(n)), [['name', 'underlayAddress', 'podCIDRs'], ['name', 'underlayAddress', 'podCIDRs']], 'public addresses stay out of the node list');
    assert.throws(() => planNodeSpec({ clusterId: 'cluster-b', ipam, tunnels, nodes: [{ ...nodes[1]!, publicAddress: 'gw' }, nodes[0]!], nodeName: 'b-gw', gatewayName: 'b-gw' }), /publicAddress/);
  });

  it('refuses unknown or duplicate nodes and bad addresses, naming the field', () => {
    const { ipam, tunnels } = hubB();
    const plan = (over: object) => planNodeSpec({ clusterId: 'cluster-b', ipam, tunnels, nodes, nodeName: 'b-gw', gatewayName: 'b-gw', ...over });
    assert.throws(() => plan({ nodeName: 'nope' }), /nodeName: is not a node of the cluster/);
    assert.throws(() => plan({ gatewayName: 'gone' }), /gatewayName: is not a node/);
    assert.throws(() => plan({ nodes: [...nodes, nodes[0]] }), /nodes\[2\]\.name: appears twice/);
    assert.throws(() => plan({ nodes: [{ name: 'x', underlayAddress: '300.1.1.1', podCIDRs: [] }], nodeName: 'x', gatewayName: 'x' }), /nodes\[0\]\.underlayAddress/);
  });

  it('keeps the transit address out of reach of the lowest-first allocation for every IPv4 size', () => {
    assert.equal(transitAddress(parseCidr('c', '10.50.0.0/24')), '10.50.0.254');
    assert.equal(transitAddress(parseCidr('c', '10.48.0.0/12')), '10.63.255.254');
    assert.equal(transitAddress(parseCidr('c', '10.0.0.4/30')), '10.0.0.6');
    assert.equal(transitAddress(parseCidr('c', '10.0.0.4/31')), '10.0.0.5');
    assert.equal(transitAddress(parseCidr('c', 'fd00::/64')), 'fd00::ffff:ffff:ffff:ffff');
  });

  it('gives every peer the FNV-1a hash of its id, and the later in name order of two that collide the next id', () => {
    // FNV-1a 32 of the cluster id, computed outside the code; 'costarring' and 'liquid' collide.
    assert.deepEqual([...assignPeerIds(['cluster-c', 'cluster-a'])], [['cluster-a', 0xb20a3a53], ['cluster-c', 0xb40a3d79]]);
    assert.deepEqual([...assignPeerIds(['liquid', 'costarring'])], [['costarring', 0x5e4daa9d], ['liquid', 0x5e4daa9e]]);
  });

  it('gives every peer a stable non-zero id, whatever other peers exist', () => {
    fc.assert(fc.property(fc.uniqueArray(fc.string({ minLength: 1, maxLength: 12 }), { minLength: 1, maxLength: 40 }), (ids) => {
      const all = assignPeerIds(ids);
      assert.equal(new Set(all.values()).size, ids.length, 'ids are distinct');
      for (const v of all.values()) assert.ok(v > 0 && v <= 0xffffffff);
    }));
    assert.equal(assignPeerIds(['cluster-a']).get('cluster-a'), assignPeerIds(['cluster-z', 'cluster-a']).get('cluster-a'));
  });
});
