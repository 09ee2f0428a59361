/**
 * Three clusters with overlapping AND distinct networks of different prefix lengths (docs/packet-contract.md: a test
 * where every cluster uses the same CIDRs cannot tell remote* from localNAT*). A is peered with B, B with
 * C (B is the hub). Every TunnelEndpoint prefix is checked exactly, then packets are walked through the
 * translations of "How a packet crosses" using only the TunnelEndpoints.
 */
import assert from 'node:assert/strict';
import type { NetworkConfigSpec, NetworkConfigStatus } from '../../src/api/network-config';
import { writeTunnelEndpoint } from '../../src/api/tunnel-endpoint';
import { mapEndpoint } from '../../src/network-ipam/endpoints';
import { initializeIpam } from '../../src/network-ipam/initialize';
import { homePodIp, removePeer } from '../../src/network-ipam/peers';
import type { IpamState } from '../../src/network-ipam/state';
import { containsIp, formatIp, parseIp, translateIp } from '../../src/net/cidr';
import { type Peering, reconcilePeering } from '../../src/netmgr/network-manager';
import type { TunnelEndpoint } from '../../src/api/tunnel-endpoint';

interface Cluster {
  id: string;
  ipam: IpamState;
  endpoint: { address: string; port: number };
}

function cluster(id: string, podCIDR: string, externalCIDR: string, gateway: string): Cluster {
  return { id, ipam: initializeIpam(undefined, { podCIDR, externalCIDR }).state, endpoint: { address: gateway, port: 4789 } };
}

/** One round of x's peering with y, given what replication brought from y. */
function step(x: Cluster, y: Cluster, theirs?: NetworkConfigSpec, theirAnswer?: NetworkConfigStatus): Peering {
  const out = reconcilePeering({
    planes: { primary: x.ipam },
    clusterId: x.id,
    peer: y.id,
    endpoint: x.endpoint,
    ...(theirs ? { theirs } : {}),
    ...(theirAnswer ? { theirAnswer } : {}),
  });
  assert.deepEqual(out.problems, []);
  x.ipam = out.planes.primary;
  return out.peering;
}

const answerOf = (p: Peering) => ('answer' in p ? p.answer : undefined);

/** Plays the replication between x and y until both peerings are ready (three rounds: specs, answers, views). */
function peer(x: Cluster, y: Cluster): { xy: Peering; yx: Peering } {
  let xy = step(x, y);
  let yx = step(y, x);
  assert.equal(xy.state, 'waiting-for-peer');
  for (let round = 0; round < 2; round++) {
    [xy, yx] = [step(x, y, yx.ours, answerOf(yx)), step(y, x, xy.ours, answerOf(xy))];
    if (round === 0) assert.equal(xy.state, 'remapped', 'no TunnelEndpoint before the answer comes back');
  }
  assert.equal(xy.state, 'ready');
  assert.equal(yx.state, 'ready');
  return { xy, yx };
}

const tunnel = (p: Peering): TunnelEndpoint => {
  assert.equal(p.state, 'ready');
  return (p as Extract<Peering, { state: 'ready' }>).tunnel;
};

/** Egress at a gateway of L toward P: source in L's PodCIDR → same host in localNATPodCIDR. */
function egress(from: Cluster, tep: TunnelEndpoint, packet: { src: string; dst: string }): { src: string; dst: string } {
  return { src: formatIp(translateIp(parseIp('src', packet.src), from.ipam.home.podCIDR, tep.localNATPodCIDR)), dst: packet.dst };
}

/** Ingress at a gateway of L from P: destination in localNAT* → same host in L's own network. */
function ingress(
  at: Cluster,
  tep: TunnelEndpoint,
  packet: { src: string; dst: string },
): { src: string; dst: string; viaExternal: boolean } {
  const dst = parseIp('dst', packet.dst);
  if (containsIp(tep.localNATPodCIDR, dst)) {
    return { src: packet.src, dst: formatIp(translateIp(dst, tep.localNATPodCIDR, at.ipam.home.podCIDR)), viaExternal: false };
  }
  return { src: packet.src, dst: formatIp(translateIp(dst, tep.localNATExternalCIDR, at.ipam.home.externalCIDR)), viaExternal: true };
}

describe('Network Manager: NetworkConfig exchange and TunnelEndpoints', () => {
  function hubAndSpokes() {
    const a = cluster('cluster-a', '10.0.0.0/16', '10.201.0.0/16', '203.0.113.1');
    const b = cluster('cluster-b', '10.0.0.0/20', '10.200.0.0/24', '203.0.113.2');
    const c = cluster('cluster-c', '192.168.8.0/22', '10.201.0.0/16', '203.0.113.3');
    const ab = peer(a, b);
    const bc = peer(b, c);
    /** The TunnelEndpoint of `from` toward `to`. */
    const tep = (from: string, to: string): TunnelEndpoint => {
      const p = new Map([
        ['cluster-a cluster-b', ab.xy],
        ['cluster-b cluster-a', ab.yx],
        ['cluster-b cluster-c', bc.xy],
        ['cluster-c cluster-b', bc.yx],
      ]).get(`${from} ${to}`);
      assert.ok(p, `${from} and ${to} are not peered`);
      return tunnel(p);
    };
    return { a, b, c, ab, bc, tep };
  }

  it('writes each receiver\'s remapping into the status, "None" where a network is kept, with the networks it answers', () => {
    const { ab, bc } = hubAndSpokes();
    const answer = (remappedPodCIDR: string, remappedExternalCIDR: string, podCIDR: string, externalCIDR: string) => ({
      processed: true,
      remappedPodCIDR,
      remappedExternalCIDR,
      observed: { podCIDR, externalCIDR },
    });
    assert.deepEqual(answerOf(ab.yx), answer('10.1.0.0/16', 'None', '10.0.0.0/16', '10.201.0.0/16'), "B's answer to A");
    assert.deepEqual(answerOf(ab.xy), answer('10.1.0.0/20', 'None', '10.0.0.0/20', '10.200.0.0/24'), "A's answer to B");
    assert.deepEqual(answerOf(bc.yx), answer('None', 'None', '10.0.0.0/20', '10.200.0.0/24'), "C's answer to B");
    assert.deepEqual(answerOf(bc.xy), answer('None', '10.2.0.0/16', '192.168.8.0/22', '10.201.0.0/16'), "B's answer to C");
  });

  it('builds TunnelEndpoints with exactly the right four prefixes on both sides', () => {
    const { tep } = hubAndSpokes();
    assert.deepEqual(writeTunnelEndpoint(tep('cluster-a', 'cluster-b')), {
      clusterId: 'cluster-b',
      remotePodCIDR: '10.1.0.0/20',
      remoteExternalCIDR: '10.200.0.0/24',
      localNATPodCIDR: '10.1.0.0/16',
      localNATExternalCIDR: '10.201.0.0/16',
      endpoint: { address: '203.0.113.2', port: 4789 },
    });
    assert.deepEqual(writeTunnelEndpoint(tep('cluster-b', 'cluster-a')), {
      clusterId: 'cluster-a',
      remotePodCIDR: '10.1.0.0/16',
      remoteExternalCIDR: '10.201.0.0/16',
      localNATPodCIDR: '10.1.0.0/20',
      localNATExternalCIDR: '10.200.0.0/24',
      endpoint: { address: '203.0.113.1', port: 4789 },
    });
    assert.deepEqual(writeTunnelEndpoint(tep('cluster-b', 'cluster-c')), {
      clusterId: 'cluster-c',
      remotePodCIDR: '192.168.8.0/22',
      remoteExternalCIDR: '10.2.0.0/16',
      localNATPodCIDR: '10.0.0.0/20',
      localNATExternalCIDR: '10.200.0.0/24',
      endpoint: { address: '203.0.113.3', port: 4789 },
    });
    assert.deepEqual(writeTunnelEndpoint(tep('cluster-c', 'cluster-b')), {
      clusterId: 'cluster-b',
      remotePodCIDR: '10.0.0.0/20',
      remoteExternalCIDR: '10.200.0.0/24',
      localNATPodCIDR: '192.168.8.0/22',
      localNATExternalCIDR: '10.2.0.0/16',
      endpoint: { address: '203.0.113.2', port: 4789 },
    });
    assert.throws(() => tep('cluster-a', 'cluster-c'), /not peered/);
  });

  it("delivers a pod-to-pod packet A -> B to the right pod and lets B see the sender as A's view says", () => {
    const { a, b, tep } = hubAndSpokes();
    const tepAB = tep('cluster-a', 'cluster-b');
    const tepBA = tep('cluster-b', 'cluster-a');
    const podB = '10.0.5.9';
    const dstSeenInA = homePodIp(a.ipam, 'cluster-b', podB);
    assert.equal(dstSeenInA, '10.1.5.9');
    const onWire = egress(a, tepAB, { src: '10.0.0.7', dst: dstSeenInA });
    assert.deepEqual(onWire, { src: '10.1.0.7', dst: '10.1.5.9' });
    const delivered = ingress(b, tepBA, onWire);
    assert.deepEqual(delivered, { src: '10.1.0.7', dst: podB, viaExternal: false });
    assert.equal(homePodIp(b.ipam, 'cluster-a', '10.0.0.7'), delivered.src, "B sees the sender at the address its IPAM gives A's pod");
    // The reply goes back the same way.
    const reply = ingress(a, tepAB, egress(b, tepBA, { src: podB, dst: delivered.src }));
    assert.deepEqual(reply, { src: dstSeenInA, dst: '10.0.0.7', viaExternal: false });
  });

  it("hub: B reflects C's pod into A with an ExternalCIDR address that leads back to C's pod", () => {
    const { a, b, c, tep } = hubAndSpokes();
    const podC = '192.168.8.20';
    const inB = homePodIp(b.ipam, 'cluster-c', podC);
    const mapped = mapEndpoint(b.ipam, 'cluster-a', inB);
    b.ipam = mapped.state;
    assert.equal(mapped.result.ip, '10.200.0.1');
    const atB = ingress(
      b,
      tep('cluster-b', 'cluster-a'),
      egress(a, tep('cluster-a', 'cluster-b'), { src: '10.0.0.7', dst: mapped.result.ip }),
    );
    assert.deepEqual(atB, { src: '10.1.0.7', dst: '10.200.0.1', viaExternal: true });
    const natTarget = b.ipam.peers.get('cluster-a')!.natMappings.get(inB);
    assert.equal(natTarget, parseIp('x', atB.dst).value, 'the NatMapping of B holds the address that arrived');
    // B forwards to C's pod in its own view of C; C's ingress turns it into C's real pod address.
    const atC = ingress(c, tep('cluster-c', 'cluster-b'), { src: '10.200.0.1', dst: inB });
    assert.equal(atC.dst, podC);
  });

  it('a peer removed from the IPAM starts over, and is ready again once its NetworkConfig and answer are back', () => {
    const { a, b, ab } = hubAndSpokes();
    a.ipam = removePeer(a.ipam, 'cluster-b').state;
    assert.equal(a.ipam.peers.has('cluster-b'), false);
    assert.equal(step(a, b).state, 'waiting-for-peer', 'no NetworkConfig of B this round: no TunnelEndpoint');
    // B's answer is about our current networks: the same TunnelEndpoint as before.
    assert.deepEqual(tunnel(step(a, b, ab.yx.ours, answerOf(ab.yx))), tunnel(ab.xy));
  });

  it('refuses NetworkConfigs not meant for us or from ourselves, saying so', () => {
    const a = cluster('cluster-a', '10.0.0.0/16', '10.201.0.0/16', '203.0.113.1');
    const b = cluster('cluster-b', '10.0.0.0/20', '10.200.0.0/24', '203.0.113.2');
    const fromB = step(b, a).ours;
    for (const [theirs, problem] of [
      [{ ...fromB, remoteClusterId: 'cluster-x' }, /spec\.remoteClusterId: this NetworkConfig is not for us \(cluster-a\)/],
      [{ ...fromB, clusterId: 'cluster-a' }, /spec\.clusterId: a cluster does not peer with itself/],
    ] as const) {
      const out = reconcilePeering({
        planes: { primary: a.ipam },
        clusterId: 'cluster-a',
        peer: 'cluster-b',
        endpoint: a.endpoint,
        theirs,
      });
      assert.equal(out.peering.state, 'refused');
      assert.equal((out.peering as { reason: string }).reason, out.problems[0]);
      assert.equal(out.planes.primary, a.ipam, 'nothing placed');
      assert.equal(out.problems.length, 1);
      assert.match(out.problems[0]!, problem);
    }
  });

  it('takes an answer only when processed and about the networks we have now', () => {
    const a = cluster('cluster-a', '10.0.0.0/16', '10.201.0.0/16', '203.0.113.1');
    const b = cluster('cluster-b', '10.0.0.0/20', '10.200.0.0/24', '203.0.113.2');
    const { yx } = peer(a, b);
    const bAnswer = answerOf(yx)!;
    assert.equal(step(a, b, yx.ours, bAnswer).state, 'ready');
    assert.equal(step(a, b, yx.ours, { ...bAnswer, processed: false }).state, 'remapped');
    // An answer about an ExternalCIDR we no longer have (the PodCIDR it names is still ours).
    assert.equal(step(a, b, yx.ours, { ...bAnswer, observed: { ...bAnswer.observed!, externalCIDR: '10.202.0.0/16' } }).state, 'remapped');
    // Our PodCIDR changes: B's answer is about the old one, and our NetworkConfig says the new one.
    a.ipam = initializeIpam(a.ipam, { podCIDR: '10.4.0.0/16', externalCIDR: '10.201.0.0/16' }).state;
    const changed = step(a, b, yx.ours, bAnswer);
    assert.equal(changed.state, 'remapped');
    assert.equal(changed.ours.podCIDR, '10.4.0.0/16');
  });
});
