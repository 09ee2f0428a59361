/**
 * The Network Manager on dual-stack clusters: each family placed in its own plane, the two merged into one
 * NetworkConfig, one answer and one TunnelEndpoint; families matched by value (a single-stack peer peered in
 * its family only, an IPv6-only one in IPv6); a peer sharing no family refused.
 */
import assert from 'node:assert/strict';
import type { NetworkConfigSpec, NetworkConfigStatus } from '../../src/api/network-config';
import { formatCidr, formatIp } from '../../src/net/cidr';
import { type Peering, reconcilePeering } from '../../src/netmgr/network-manager';
import { type IpamPlanes, initializePlanes } from '../../src/network-ipam/planes';
import type { HomeNetworksSpec } from '../../src/api/home-networks';

interface Cluster {
  id: string;
  planes: IpamPlanes;
  endpoint: { address: string; port: number };
}

const cluster = (id: string, home: HomeNetworksSpec, gateway: string): Cluster => ({
  id,
  planes: initializePlanes(undefined, home).planes,
  endpoint: { address: gateway, port: 4789 },
});

/** One round of x's peering with y, given what replication brought from y. */
function step(
  x: Cluster,
  y: Cluster,
  theirs?: NetworkConfigSpec,
  theirAnswer?: NetworkConfigStatus,
): { peering: Peering; problems: string[] } {
  const out = reconcilePeering({
    planes: x.planes,
    clusterId: x.id,
    peer: y.id,
    endpoint: x.endpoint,
    ...(theirs ? { theirs } : {}),
    ...(theirAnswer ? { theirAnswer } : {}),
  });
  x.planes = out.planes;
  return out;
}

const answerOf = (p: Peering) => ('answer' in p ? p.answer : undefined);

/** Three rounds of replication both ways: specs, answers, views. */
function peer(x: Cluster, y: Cluster) {
  let xy = step(x, y).peering;
  let yx = step(y, x).peering;
  for (let round = 0; round < 3; round++) {
    xy = step(x, y, yx.ours, answerOf(yx)).peering;
    yx = step(y, x, xy.ours, answerOf(xy)).peering;
  }
  return { xy, yx };
}

const tunnelOf = (p: Peering) => {
  assert.equal(p.state, 'ready', `the peering is ${p.state}: ${'reason' in p ? p.reason : ''}`);
  return (p as Extract<Peering, { state: 'ready' }>).tunnel;
};

const networks = (t: ReturnType<typeof tunnelOf>['secondary']) =>
  t && {
    remotePodCIDR: formatCidr(t.remotePodCIDR),
    remoteExternalCIDR: formatCidr(t.remoteExternalCIDR),
    localNATPodCIDR: formatCidr(t.localNATPodCIDR),
    localNATExternalCIDR: formatCidr(t.localNATExternalCIDR),
  };

/** The dual-stack cluster most cases peer from: IPv4 first, its IPv6 PodCIDR a /48. */
const dualStackA = () =>
  cluster(
    'cluster-a',
    { podCIDR: '10.0.0.0/16', externalCIDR: '10.201.0.0/24', secondary: { podCIDR: 'fd00:a::/48', externalCIDR: 'fd00:ff::/120' } },
    '203.0.113.1',
  );

describe('Network Manager: dual-stack peerings', () => {
  it('places each family of two dual-stack clusters in its own plane: overlapping IPv6 PodCIDRs remapped, the IPv4 ones too', () => {
    const a = dualStackA();
    const b = cluster(
      'cluster-b',
      { podCIDR: '10.0.0.0/16', externalCIDR: '10.202.0.0/24', secondary: { podCIDR: 'fd00:a::/56', externalCIDR: 'fd00:fe::/120' } },
      '203.0.113.2',
    );
    const { xy, yx } = peer(a, b);
    const ab = tunnelOf(xy);
    const ba = tunnelOf(yx);
    // IPv4 as before: each remaps the other's 10.0.0.0/16 to the lowest free /16 of 10/8.
    assert.equal(formatCidr(ab.remotePodCIDR), '10.1.0.0/16');
    assert.equal(formatCidr(ba.remotePodCIDR), '10.1.0.0/16');
    // IPv6: B's /56 overlaps A's /48, and A's /48 overlaps B's /56: each placed at the lowest free prefix of
    // its own length in fd00::/8, independently of the IPv4 plane.
    assert.deepEqual(networks(ab.secondary), {
      remotePodCIDR: 'fd00::/56',
      remoteExternalCIDR: 'fd00:fe::/120',
      localNATPodCIDR: 'fd00::/48',
      localNATExternalCIDR: 'fd00:ff::/120',
    });
    assert.deepEqual(networks(ba.secondary), {
      remotePodCIDR: 'fd00::/48',
      remoteExternalCIDR: 'fd00:ff::/120',
      localNATPodCIDR: 'fd00::/56',
      localNATExternalCIDR: 'fd00:fe::/120',
    });
    // The NetworkConfigs carry both families, the answers both placements.
    assert.deepEqual(xy.ours.secondary, { podCIDR: 'fd00:a::/48', externalCIDR: 'fd00:ff::/120' });
    assert.deepEqual(answerOf(yx)?.secondary, {
      remappedPodCIDR: 'fd00::/48',
      remappedExternalCIDR: 'None',
      observed: { podCIDR: 'fd00:a::/48', externalCIDR: 'fd00:ff::/120' },
    });
    // Running the rounds again changes nothing: the same plane objects.
    const before = a.planes;
    step(a, b, yx.ours, answerOf(yx));
    assert.equal(a.planes, before);
  });

  it('peers a dual-stack cluster with a single-stack one in IPv4 only, and keeps nothing of the peer in the IPv6 plane', () => {
    const a = dualStackA();
    const c = cluster('cluster-c', { podCIDR: '10.9.0.0/16', externalCIDR: '10.203.0.0/24' }, '203.0.113.3');
    const { xy, yx } = peer(a, c);
    assert.equal(tunnelOf(xy).secondary, undefined);
    assert.equal(tunnelOf(yx).secondary, undefined);
    assert.equal(a.planes.secondary!.peers.size, 0);
    assert.equal(answerOf(xy)?.secondary, undefined, 'no IPv6 networks of C to answer');
    // C reads A's NetworkConfig with its secondary family and leaves it: C has no IPv6 plane.
    assert.deepEqual(xy.ours.secondary, { podCIDR: 'fd00:a::/48', externalCIDR: 'fd00:ff::/120' });
  });

  it('refuses a peer that shares no IP family, naming the field and value, and keeps nothing of it', () => {
    const a = cluster('cluster-a', { podCIDR: '10.0.0.0/16', externalCIDR: '10.201.0.0/24' }, '203.0.113.1');
    const b = cluster('cluster-b', { podCIDR: 'fd00:b::/48', externalCIDR: 'fd00:bb::/120' }, '203.0.113.2');
    const { xy, yx } = peer(a, b);
    assert.equal(xy.state, 'refused');
    assert.match(
      (xy as { reason: string }).reason,
      /^NetworkConfig from cluster-b: spec\.podCIDR: shares no IP family with this cluster, which has IPv4: .* \(got "fd00:b::\/48"\)$/,
    );
    assert.match(
      (yx as { reason: string }).reason,
      /spec\.podCIDR: shares no IP family with this cluster, which has IPv6: .*"10\.0\.0\.0\/16"/,
    );
    assert.equal(a.planes.primary.peers.size, 0, 'nothing placed');
    assert.equal(b.planes.primary.peers.size, 0, 'nothing placed');
  });

  it('peers a dual-stack cluster (IPv4 first) with an IPv6-only one in IPv6: the peering is IPv6 first, each answer in the place it answers', () => {
    const a = dualStackA();
    const c = cluster('cluster-c', { podCIDR: 'fd00:a::/56', externalCIDR: 'fd00:fe::/120' }, '203.0.113.3');
    const { xy, yx } = peer(a, c);
    // The tunnels' own networks are the peering's first family: IPv6 on both sides, nothing under secondary.
    assert.deepEqual(networks(tunnelOf(xy)), {
      remotePodCIDR: 'fd00::/56',
      remoteExternalCIDR: 'fd00:fe::/120',
      localNATPodCIDR: 'fd00::/48',
      localNATExternalCIDR: 'fd00:ff::/120',
    });
    assert.equal(tunnelOf(xy).secondary, undefined);
    assert.deepEqual(networks(tunnelOf(yx)), {
      remotePodCIDR: 'fd00::/48',
      remoteExternalCIDR: 'fd00:ff::/120',
      localNATPodCIDR: 'fd00::/56',
      localNATExternalCIDR: 'fd00:fe::/120',
    });
    assert.equal(a.planes.primary.peers.size, 0, 'nothing of C in the IPv4 plane');
    assert.ok(a.planes.secondary!.peers.has('cluster-c'));
    // A answers C's own (IPv6) networks in the status's own fields; C answers A's secondary (IPv6) ones under
    // secondary and has nothing to say about A's IPv4 networks.
    assert.deepEqual(answerOf(xy), {
      processed: true,
      remappedPodCIDR: 'fd00::/56',
      remappedExternalCIDR: 'None',
      observed: { podCIDR: 'fd00:a::/56', externalCIDR: 'fd00:fe::/120' },
    });
    assert.deepEqual(answerOf(yx), {
      processed: true,
      secondary: {
        remappedPodCIDR: 'fd00::/48',
        remappedExternalCIDR: 'None',
        observed: { podCIDR: 'fd00:a::/48', externalCIDR: 'fd00:ff::/120' },
      },
    });
    // A half answer about a family is refused by field, and leaves that family unanswered.
    const c2 = cluster('cluster-c', { podCIDR: 'fd00:c::/48', externalCIDR: 'fd00:fe::/120' }, '203.0.113.3');
    const a2 = cluster('cluster-a', { podCIDR: 'fd00:a::/48', externalCIDR: 'fd00:ff::/120' }, '203.0.113.1');
    step(a2, c2);
    const refusedHalf = step(a2, c2, step(c2, a2).peering.ours, { processed: true, remappedPodCIDR: 'None' });
    assert.equal(refusedHalf.peering.state, 'remapped');
    assert.match((refusedHalf.peering as { reason?: string }).reason ?? '', /status\.remappedExternalCIDR: is required beside the rest/);
  });

  it('peers in the family both can place when one side cannot place the other family: the same family on both sides', () => {
    // A's only IPv4 pool is its own PodCIDR: C's colliding IPv4 /16 has nowhere to go in A. C is IPv6-first.
    const a = cluster(
      'cluster-a',
      {
        podCIDR: '10.0.0.0/16',
        externalCIDR: '10.201.0.0/24',
        secondary: { podCIDR: 'fd00:a::/48', externalCIDR: 'fd00:ff::/120' },
        pools: ['10.0.0.0/16', 'fd00::/8'],
      },
      '203.0.113.1',
    );
    const c = cluster(
      'cluster-c',
      { podCIDR: 'fd00:c::/48', externalCIDR: 'fd00:fc::/120', secondary: { podCIDR: '10.0.0.0/16', externalCIDR: '10.204.0.0/24' } },
      '203.0.113.3',
    );
    const { xy, yx } = peer(a, c);
    assert.deepEqual(
      [networks(tunnelOf(xy))?.remotePodCIDR, tunnelOf(xy).secondary],
      ['fd00:c::/48', undefined],
      "A: ready in IPv6, its first placed family, though IPv4 comes first in A's order",
    );
    assert.match(
      (xy as { reason?: string }).reason ?? '',
      /NetworkConfig from cluster-c: podCIDR 10\.0\.0\.0\/16 overlaps a network in use and no free/,
    );
    assert.deepEqual([networks(tunnelOf(yx))?.remotePodCIDR, tunnelOf(yx).secondary], ['fd00:a::/48', undefined], 'C: ready in IPv6 too');
    assert.equal(a.planes.primary.peers.size, 0, 'nothing of C placed in IPv4');
  });

  it('matches families by value between an IPv6-first and an IPv4-first dual-stack cluster', () => {
    const a = dualStackA();
    const d = cluster(
      'cluster-d',
      { podCIDR: 'fd00:a::/48', externalCIDR: 'fd00:fd::/120', secondary: { podCIDR: '10.0.0.0/16', externalCIDR: '10.204.0.0/24' } },
      '203.0.113.4',
    );
    const { xy, yx } = peer(a, d);
    // Each tunnel's own networks are its cluster's first family, the other under secondary.
    assert.equal(formatCidr(tunnelOf(xy).remotePodCIDR), '10.1.0.0/16');
    assert.equal(networks(tunnelOf(xy).secondary)?.remotePodCIDR, 'fd00::/48');
    assert.equal(formatCidr(tunnelOf(yx).remotePodCIDR), 'fd00::/48');
    assert.equal(networks(tunnelOf(yx).secondary)?.remotePodCIDR, '10.1.0.0/16');
    // Each answer in the places of the NetworkConfig it answers: D's IPv6 (its own fields) answered in A's
    // status's own fields, A's IPv6 (its secondary) under D's status's secondary.
    assert.equal(answerOf(xy)?.observed?.podCIDR, 'fd00:a::/48');
    assert.equal(answerOf(xy)?.secondary?.observed.podCIDR, '10.0.0.0/16');
    assert.equal(answerOf(yx)?.observed?.podCIDR, '10.0.0.0/16');
    assert.equal(answerOf(yx)?.secondary?.observed.podCIDR, 'fd00:a::/48');
  });

  it('refuses a peer whose secondary family is its primary one', () => {
    const a = cluster('cluster-a', { podCIDR: '10.0.0.0/16', externalCIDR: '10.201.0.0/24' }, '203.0.113.1');
    const b = cluster('cluster-b', { podCIDR: '10.5.0.0/16', externalCIDR: '10.202.0.0/24' }, '203.0.113.2');
    const theirs = { ...step(b, a).peering.ours, secondary: { podCIDR: '10.6.0.0/16', externalCIDR: '10.203.0.0/24' } };
    const out = step(a, b, theirs);
    assert.equal(out.peering.state, 'refused');
    assert.match(
      (out.peering as { reason: string }).reason,
      /spec\.secondary\.podCIDR: is IPv4, as spec\.podCIDR 10\.5\.0\.0\/16 is: a secondary holds the other IP family's networks/,
    );
  });

  it("changes nothing on a NetworkConfig refused whole, nor while the peer's is missing: an IPv6-only peering stays placed", () => {
    const a = dualStackA();
    const c = cluster('cluster-c', { podCIDR: 'fd00:a::/56', externalCIDR: 'fd00:fe::/120' }, '203.0.113.3');
    const { yx } = peer(a, c);
    const placed = a.planes;
    assert.ok(placed.secondary!.peers.has('cluster-c'));
    for (const [theirs, state] of [
      [undefined, 'waiting-for-peer'],
      [{ ...yx.ours, secondary: { podCIDR: 'fd00:c::/48', externalCIDR: 'fd00:cc::/120' } }, 'refused'],
      [{ ...yx.ours, externalCIDR: '10.209.0.0/24' }, 'refused'],
      // Bad for every family: the one placed family keeps its networks, the others theirs.
      [{ ...yx.ours, endpoint: { address: '2001:db8::1', port: 4789 } }, 'refused'],
    ] as const) {
      const out = step(a, c, theirs);
      assert.equal(out.peering.state, state);
      assert.equal(a.planes, placed, `the planes are the same objects (${state})`);
    }
  });

  it('peers two clusters whose gateways have IPv6 addresses, and refuses a peer whose gateway is of another family than ours (issue 29)', () => {
    const six = (id: string, pods: string, gateway: string) => cluster(id, { podCIDR: pods, externalCIDR: 'fd00:fe::/120' }, gateway);
    const a = six('cluster-a', 'fd00:a::/48', '2001:db8::1');
    const b = six('cluster-b', 'fd00:b::/48', '2001:db8::2');
    const { xy } = peer(a, b);
    assert.equal(xy.state, 'ready');
    assert.equal(formatIp(tunnelOf(xy).endpoint.address), '2001:db8::2');
    const c = six('cluster-c', 'fd00:c::/48', '203.0.113.3');
    const out = step(a, c, step(c, a).peering.ours);
    assert.equal(out.peering.state, 'refused');
    assert.equal(
      (out.peering as { reason: string }).reason,
      `NetworkConfig from cluster-c: spec.endpoint.address: is IPv4, not the family of our gateway's address 2001:db8::1 (IPv6): a tunnel's two ends are of one family (got "203.0.113.3")`,
    );
    const standby = {
      ...step(b, a).peering.ours,
      endpoint: { address: '2001:db8::2', port: 4789, standbyAddresses: ['2001:db8::12', '203.0.113.12'] },
    };
    assert.match(
      (step(a, b, standby).peering as { reason: string }).reason,
      /spec\.endpoint\.standbyAddresses\[1\]: is IPv4, not the family of our gateway's/,
    );
  });

  it("leaves the peering ready in IPv4 when the peer's IPv6 networks cannot be placed, saying why", () => {
    const a = cluster(
      'cluster-a',
      // One IPv6 pool, a /48 already taken by our own PodCIDR: a colliding /48 of B has nowhere to go.
      {
        podCIDR: '10.0.0.0/16',
        externalCIDR: '10.201.0.0/24',
        secondary: { podCIDR: 'fd00:a::/48', externalCIDR: 'fd00:ee::/120' },
        pools: ['10.0.0.0/8', 'fd00:a::/48'],
      },
      '203.0.113.1',
    );
    const b = cluster(
      'cluster-b',
      { podCIDR: '10.5.0.0/16', externalCIDR: '10.202.0.0/24', secondary: { podCIDR: 'fd00:a::/48', externalCIDR: 'fd00:fe::/120' } },
      '203.0.113.2',
    );
    const { xy } = peer(a, b);
    assert.equal(tunnelOf(xy).secondary, undefined, 'ready in IPv4 only');
    assert.match(
      (xy as { reason?: string }).reason ?? '',
      /^NetworkConfig from cluster-b: podCIDR fd00:a::\/48 overlaps a network in use and no free \/48 IPv6 network/,
    );
    assert.equal(a.planes.secondary!.peers.size, 0);
  });
});
