/**
 * Three clusters with overlapping AND distinct networks of different prefix lengths (PRODUCT.md: a test
 * where every cluster uses the same CIDRs cannot tell remote* from localNAT*). A is peered with B, B with
 * C (B is the hub). Every TunnelEndpoint prefix is checked exactly, then packets are walked through the
 * translations of "How a packet crosses" using only the TunnelEndpoints.
 */
import assert from 'node:assert/strict';
import { InputError, StateError } from '../../src/errors';
import { containsIp, formatIp, parseCidr, parseIp, translateIp } from '../../src/ipam/cidr';
import { mapEndpoint } from '../../src/ipam/endpoints';
import { initializeIpam } from '../../src/ipam/initialize';
import { homePodIp } from '../../src/ipam/peers';
import type { IpamState } from '../../src/ipam/state';
import { type NetworkConfig, notRemapped } from '../../src/netmgr/network-config';
import {
  type NetworkManagerState,
  createNetworkManager,
  receiveNetworkConfig,
  receiveStatus,
  removePeering,
  startPeering,
  tunnelEndpoint,
} from '../../src/netmgr/network-manager';
import type { TunnelEndpoint } from '../../src/netmgr/tunnel-endpoint';

interface Cluster {
  manager: NetworkManagerState;
  ipam: IpamState;
}

function cluster(id: string, podCIDR: string, externalCIDR: string, gateway: string): Cluster {
  return { manager: createNetworkManager(id, { address: gateway, port: 4789 }), ipam: initializeIpam(undefined, { podCIDR, externalCIDR }).state };
}

/** Plays the CRDReplicator: the five steps of the seed's exchange, in both directions. */
function peer(x: Cluster, y: Cluster): { ncfgXY: NetworkConfig; ncfgYX: NetworkConfig } {
  const sx = startPeering(x.manager, x.ipam, y.manager.clusterId);
  const sy = startPeering(y.manager, y.ipam, x.manager.clusterId);
  Object.assign(x, { manager: sx.manager });
  Object.assign(y, { manager: sy.manager });
  const atY = receiveNetworkConfig(y.manager, y.ipam, sx.outgoing);
  Object.assign(y, { manager: atY.manager, ipam: atY.ipam });
  const atX = receiveNetworkConfig(x.manager, x.ipam, sy.outgoing);
  Object.assign(x, { manager: atX.manager, ipam: atX.ipam });
  assert.equal(tunnelEndpoint(x.manager, x.ipam, y.manager.clusterId), undefined, 'no TunnelEndpoint before the status comes back');
  Object.assign(x, receiveStatus(x.manager, x.ipam, y.manager.clusterId, atY.outgoing.status!));
  Object.assign(y, receiveStatus(y.manager, y.ipam, x.manager.clusterId, atX.outgoing.status!));
  return { ncfgXY: atY.outgoing, ncfgYX: atX.outgoing };
}

/** Egress at a gateway of L toward P: source in L's PodCIDR → same host in localNATPodCIDR. */
function egress(from: Cluster, tep: TunnelEndpoint, packet: { src: string; dst: string }): { src: string; dst: string } {
  const pod = from.ipam.home.podCIDR;
  return { src: formatIp(translateIp(parseIp('src', packet.src), pod, parseCidr('l', tep.localNATPodCIDR))), dst: packet.dst };
}

/** Ingress at a gateway of L from P: destination in localNAT* → same host in L's own network. */
function ingress(at: Cluster, tep: TunnelEndpoint, packet: { src: string; dst: string }): { src: string; dst: string; viaExternal: boolean } {
  const dst = parseIp('dst', packet.dst);
  const natPod = parseCidr('l', tep.localNATPodCIDR);
  const natExt = parseCidr('l', tep.localNATExternalCIDR);
  if (containsIp(natPod, dst)) {
    return { src: packet.src, dst: formatIp(translateIp(dst, natPod, at.ipam.home.podCIDR)), viaExternal: false };
  }
  return { src: packet.src, dst: formatIp(translateIp(dst, natExt, at.ipam.home.externalCIDR)), viaExternal: true };
}

describe('Network Manager: NetworkConfig exchange and TunnelEndpoints', () => {
  function hubAndSpokes() {
    const a = cluster('cluster-a', '10.0.0.0/16', '10.201.0.0/16', '203.0.113.1');
    const b = cluster('cluster-b', '10.0.0.0/20', '10.200.0.0/24', '203.0.113.2');
    const c = cluster('cluster-c', '192.168.8.0/22', '10.201.0.0/16', '203.0.113.3');
    const ab = peer(a, b);
    const bc = peer(b, c);
    return { a, b, c, ab, bc };
  }

  it('writes each receiver\'s remapping into the status, "None" where a network is kept', () => {
    const { ab, bc } = hubAndSpokes();
    assert.deepEqual(ab.ncfgXY.status, { processed: true, remappedPodCIDR: '10.1.0.0/16', remappedExternalCIDR: 'None' });
    assert.deepEqual(ab.ncfgYX.status, { processed: true, remappedPodCIDR: '10.1.0.0/20', remappedExternalCIDR: 'None' });
    assert.deepEqual(bc.ncfgXY.status, { processed: true, remappedPodCIDR: 'None', remappedExternalCIDR: 'None' });
    assert.deepEqual(bc.ncfgYX.status, { processed: true, remappedPodCIDR: 'None', remappedExternalCIDR: '10.2.0.0/16' });
  });

  it('builds TunnelEndpoints with exactly the right four prefixes on both sides', () => {
    const { a, b, c } = hubAndSpokes();
    assert.deepEqual(tunnelEndpoint(a.manager, a.ipam, 'cluster-b'), {
      clusterId: 'cluster-b',
      remotePodCIDR: '10.1.0.0/20',
      remoteExternalCIDR: '10.200.0.0/24',
      localNATPodCIDR: '10.1.0.0/16',
      localNATExternalCIDR: '10.201.0.0/16',
      endpoint: { address: '203.0.113.2', port: 4789 },
    });
    assert.deepEqual(tunnelEndpoint(b.manager, b.ipam, 'cluster-a'), {
      clusterId: 'cluster-a',
      remotePodCIDR: '10.1.0.0/16',
      remoteExternalCIDR: '10.201.0.0/16',
      localNATPodCIDR: '10.1.0.0/20',
      localNATExternalCIDR: '10.200.0.0/24',
      endpoint: { address: '203.0.113.1', port: 4789 },
    });
    assert.deepEqual(tunnelEndpoint(b.manager, b.ipam, 'cluster-c'), {
      clusterId: 'cluster-c',
      remotePodCIDR: '192.168.8.0/22',
      remoteExternalCIDR: '10.2.0.0/16',
      localNATPodCIDR: '10.0.0.0/20',
      localNATExternalCIDR: '10.200.0.0/24',
      endpoint: { address: '203.0.113.3', port: 4789 },
    });
    assert.deepEqual(tunnelEndpoint(c.manager, c.ipam, 'cluster-b'), {
      clusterId: 'cluster-b',
      remotePodCIDR: '10.0.0.0/20',
      remoteExternalCIDR: '10.200.0.0/24',
      localNATPodCIDR: '192.168.8.0/22',
      localNATExternalCIDR: '10.2.0.0/16',
      endpoint: { address: '203.0.113.2', port: 4789 },
    });
    assert.equal(tunnelEndpoint(a.manager, a.ipam, 'cluster-c'), undefined, 'A and C are not peered');
  });

  it('delivers a pod-to-pod packet A -> B to the right pod and lets B see the sender as A\'s view says', () => {
    const { a, b } = hubAndSpokes();
    const tepAB = tunnelEndpoint(a.manager, a.ipam, 'cluster-b')!;
    const tepBA = tunnelEndpoint(b.manager, b.ipam, 'cluster-a')!;
    const podB = '10.0.5.9';
    const dstSeenInA = homePodIp(a.ipam, 'cluster-b', podB);
    assert.equal(dstSeenInA, '10.1.5.9');
    const onWire = egress(a, tepAB, { src: '10.0.0.7', dst: dstSeenInA });
    assert.deepEqual(onWire, { src: '10.1.0.7', dst: '10.1.5.9' });
    const delivered = ingress(b, tepBA, onWire);
    assert.deepEqual(delivered, { src: '10.1.0.7', dst: podB, viaExternal: false });
    assert.equal(homePodIp(b.ipam, 'cluster-a', '10.0.0.7'), delivered.src, 'B sees the sender at the address its IPAM gives A\'s pod');
    // The reply goes back the same way.
    const reply = ingress(a, tepAB, egress(b, tepBA, { src: podB, dst: delivered.src }));
    assert.deepEqual(reply, { src: dstSeenInA, dst: '10.0.0.7', viaExternal: false });
  });

  it('hub: B reflects C\'s pod into A with an ExternalCIDR address that leads back to C\'s pod', () => {
    const { a, b, c } = hubAndSpokes();
    const podC = '192.168.8.20';
    const inB = homePodIp(b.ipam, 'cluster-c', podC);
    const mapped = mapEndpoint(b.ipam, 'cluster-a', inB);
    b.ipam = mapped.state;
    assert.equal(mapped.result.ip, '10.200.0.1');
    const atB = ingress(b, tunnelEndpoint(b.manager, b.ipam, 'cluster-a')!, egress(a, tunnelEndpoint(a.manager, a.ipam, 'cluster-b')!, { src: '10.0.0.7', dst: mapped.result.ip }));
    assert.deepEqual(atB, { src: '10.1.0.7', dst: '10.200.0.1', viaExternal: true });
    const natTarget = b.ipam.peers.get('cluster-a')!.natMappings.get(inB);
    assert.equal(natTarget, parseIp('x', atB.dst).value, 'the NatMapping of B holds the address that arrived');
    // B forwards to C's pod in its own view of C; C's ingress turns it into C's real pod address.
    const atC = ingress(c, tunnelEndpoint(c.manager, c.ipam, 'cluster-b')!, { src: '10.200.0.1', dst: inB });
    assert.equal(atC.dst, podC);
  });

  it('removing a peering removes both NetworkConfigs, the TunnelEndpoint and the IPAM peer', () => {
    const { a, b } = hubAndSpokes();
    const removed = removePeering(a.manager, a.ipam, 'cluster-b');
    assert.equal(removed.manager.peerings.has('cluster-b'), false);
    assert.equal(tunnelEndpoint(removed.manager, removed.ipam, 'cluster-b'), undefined);
    assert.equal(removed.ipam.peers.has('cluster-b'), false);
    assert.equal(b.manager.peerings.size, 2);
  });

  it('refuses NetworkConfigs not meant for us, from unknown clusters, or with a bad gateway', () => {
    const a = cluster('cluster-a', '10.0.0.0/16', '10.201.0.0/16', '203.0.113.1');
    const b = cluster('cluster-b', '10.0.0.0/20', '10.200.0.0/24', '203.0.113.2');
    const fromB = startPeering(b.manager, b.ipam, 'cluster-a').outgoing;
    assert.throws(() => receiveNetworkConfig(a.manager, a.ipam, fromB), (err: unknown) => err instanceof InputError && /no peering with this cluster/.test(err.message));
    a.manager = startPeering(a.manager, a.ipam, 'cluster-b').manager;
    assert.throws(() => receiveNetworkConfig(a.manager, a.ipam, { ...fromB, spec: { ...fromB.spec, remoteClusterId: 'cluster-x' } }), (err: unknown) => err instanceof InputError && err.field === 'spec.remoteClusterId');
    assert.throws(() => receiveNetworkConfig(a.manager, a.ipam, { ...fromB, spec: { ...fromB.spec, endpoint: { address: '203.0.113.256' } } }), (err: unknown) => err instanceof InputError && err.field === 'spec.endpoint.address');
    assert.throws(() => createNetworkManager('cluster-a', { address: '203.0.113.1', port: 70000 }), (err: unknown) => err instanceof InputError && err.field === 'endpoint.port');
    assert.throws(() => receiveStatus(a.manager, a.ipam, 'cluster-b', { processed: false, remappedPodCIDR: notRemapped, remappedExternalCIDR: notRemapped }), InputError);
  });

  it('refuses a status answering networks we no longer have', () => {
    const a = cluster('cluster-a', '10.0.0.0/16', '10.201.0.0/16', '203.0.113.1');
    const b = cluster('cluster-b', '10.0.0.0/20', '10.200.0.0/24', '203.0.113.2');
    peer(a, b);
    const status = { processed: true, remappedPodCIDR: '10.1.0.0/16', remappedExternalCIDR: notRemapped };
    a.ipam = initializeIpam(a.ipam, { podCIDR: '10.4.0.0/16', externalCIDR: '10.201.0.0/16' }).state;
    assert.throws(() => receiveStatus(a.manager, a.ipam, 'cluster-b', status), (err: unknown) => err instanceof StateError && /networks we no longer have/.test(err.message));
    const restarted = startPeering(a.manager, a.ipam, 'cluster-b');
    assert.equal(restarted.outgoing.spec.podCIDR, '10.4.0.0/16');
    assert.equal(restarted.outgoing.status, undefined);
  });
});
