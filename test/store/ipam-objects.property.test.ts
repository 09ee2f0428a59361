/**
 * The IPAM state as small objects: random histories of peer and endpoint operations, each saved as the
 * ordered object writes, and a crash after every single write. Read back at any point, the objects hold a
 * valid state (every invariant checked record by record), with no ExternalCIDR address for two endpoints
 * and no mapping for a peer that is gone, made only of what the old or the new state had and with all
 * they both have; once every write is done they hold exactly the new state.
 */
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { InputError, StateError } from '../../src/errors';
import { mapEndpoint, unmapEndpoint } from '../../src/network-ipam/endpoints';
import { initializeIpam } from '../../src/network-ipam/initialize';
import { initializePlanes, withPlane } from '../../src/network-ipam/planes';
import { addPeer, removePeer, setRemoteView } from '../../src/network-ipam/peers';
import type { IpamState } from '../../src/network-ipam/state';
import { toDocument } from '../../src/network-ipam/state-document';
import { cidrsEqual, formatCidr, parseIp } from '../../src/net/cidr';
import {
  type IpamObjects,
  type IpamWrite,
  ipamFromObjects,
  ipamObjects,
  ipamWrites,
  natMappingName,
} from '../../src/controller/kubernetes/ipam-objects';

const home = { podCIDR: '10.0.0.0/24', externalCIDR: '10.0.2.0/29', pools: ['10.0.4.0/22', '172.16.0.0/23'] };
const ops = fc.oneof(
  fc.record({
    kind: fc.constant('add' as const),
    id: fc.constantFrom('a', 'b', 'c'),
    pod: fc.constantFrom('10.0.0.0/24', '10.0.4.0/24', '10.9.0.0/24'),
    ext: fc.constantFrom('10.0.2.0/29', '10.8.0.0/28', '10.0.5.0/25'),
  }),
  fc.record({
    kind: fc.constant('view' as const),
    id: fc.constantFrom('a', 'b', 'c'),
    pod: fc.constantFrom('10.0.0.0/24', '10.50.0.0/24'),
    ext: fc.constantFrom('10.0.2.0/29', '10.60.0.8/29'),
  }),
  fc.record({ kind: fc.constant('remove' as const), id: fc.constantFrom('a', 'b', 'c') }),
  fc.record({
    kind: fc.constant('map' as const),
    id: fc.constantFrom('a', 'b', 'c'),
    ip: fc.constantFrom('10.9.0.1', '10.9.0.2', '10.9.0.3', '172.30.0.1', '172.30.0.2'),
  }),
  fc.record({
    kind: fc.constant('unmap' as const),
    id: fc.constantFrom('a', 'b', 'c'),
    ip: fc.constantFrom('10.9.0.1', '10.9.0.2', '10.9.0.3', '172.30.0.1', '172.30.0.2'),
  }),
);
type Op = typeof ops extends fc.Arbitrary<infer T> ? T : never;

/** The state after `op`, or the same one when the IPAM refuses it. */
function apply(state: IpamState, op: Op): IpamState {
  try {
    switch (op.kind) {
      case 'add':
        return addPeer(state, { clusterId: op.id, podCIDR: op.pod, externalCIDR: op.ext }).state;
      case 'view':
        return setRemoteView(state, { clusterId: op.id, localNATPodCIDR: op.pod, localNATExternalCIDR: op.ext }).state;
      case 'remove':
        return removePeer(state, op.id).state;
      case 'map':
        return mapEndpoint(state, op.id, op.ip).state;
      case 'unmap':
        return unmapEndpoint(state, op.id, op.ip).state;
    }
  } catch (err) {
    if (err instanceof InputError || err instanceof StateError) return state;
    throw err;
  }
}

/** Runs writes on an in-memory set of objects, as a store would on an API server. */
function run(objects: IpamObjects, writes: readonly IpamWrite[]): IpamObjects {
  const next: IpamObjects = {
    ...(objects.cluster ? { cluster: objects.cluster } : {}),
    peers: new Map(objects.peers),
    natMappings: new Map(objects.natMappings),
  };
  for (const w of writes) {
    if (w.kind === 'ClusterNetworks') {
      if (w.op === 'put') next.cluster = { name: w.name, spec: w.spec };
      continue;
    }
    const table = w.kind === 'PeerNetworks' ? next.peers : next.natMappings;
    if (w.op === 'delete') table.delete(w.name);
    else (table as Map<string, unknown>).set(w.name, w.spec);
  }
  return next;
}

/** Whether a peer's networks sit in the same place here in both states. */
function samePlace(a: IpamState, b: IpamState, peer: string): boolean {
  const [x, y] = [a.peers.get(peer), b.peers.get(peer)];
  return !!x && !!y && cidrsEqual(x.remotePodCIDR, y.remotePodCIDR) && cidrsEqual(x.remoteExternalCIDR, y.remoteExternalCIDR);
}

/** Endpoint → address of every mapping of a state, with the peer it is reflected to. */
const mappings = (state: IpamState | undefined) =>
  new Set([...(state?.peers.values() ?? [])].flatMap((p) => [...p.natMappings.entries()].map(([e, a]) => `${p.clusterId} ${e} ${a}`)));

describe('IPAM state as objects (property)', () => {
  it('reads back a valid state after a crash at any write, made of the old and the new, and exactly the new at the end', () => {
    fc.assert(
      fc.property(fc.array(ops, { minLength: 4, maxLength: 30 }), fc.array(ops, { minLength: 1, maxLength: 8 }), (before, change) => {
        const old = before.reduce(apply, initializeIpam(undefined, home).state);
        const next = change.reduce(apply, old);
        const stored = ipamObjects('home', { primary: old });
        const back = ipamFromObjects(stored);
        assert.deepEqual([toDocument(back.state!), back.dropped], [toDocument({ primary: old }), []], 'the old state reads back as it was');
        const writes = ipamWrites(stored, ipamObjects('home', { primary: next }));
        for (let done = 0; done <= writes.length; done++) {
          const { state: planes, dropped } = ipamFromObjects(run(stored, writes.slice(0, done)));
          assert.ok(planes, 'a state');
          const state = planes.primary;
          // Made only of records of the old or the new state.
          const either = new Set([...mappings(old), ...mappings(next)]);
          for (const m of mappings(state))
            assert.ok(either.has(m), `${m} after ${done} of ${writes.length} writes (dropped: ${dropped.join('; ')})`);
          for (const { clusterId } of state.peers.values()) assert.ok(old.peers.has(clusterId) || next.peers.has(clusterId));
          // And everything both have, for every peer whose networks stay where they are: a crash loses
          // nothing the change keeps. (A peer renumbered in the change may take a place another leaves; cut
          // short, the two may overlap and the later one waits for the next save.)
          const kept = mappings(state);
          for (const m of mappings(old))
            if (mappings(next).has(m) && samePlace(old, next, m.split(' ')[0]!))
              assert.ok(
                kept.has(m),
                `${m}, in the old and the new state, lost after ${done} of ${writes.length} writes (dropped: ${dropped.join('; ')})`,
              );
          // No address for two endpoints (the restorer checks it; this says it from the outside).
          const owner = new Map<bigint, string>();
          for (const p of state.peers.values())
            for (const [e, a] of p.natMappings.entries()) {
              assert.ok(!owner.has(a) || owner.get(a) === e, `address ${a} given to ${owner.get(a)} and ${e}`);
              owner.set(a, e);
            }
        }
        const final = ipamFromObjects(run(stored, writes));
        assert.deepEqual(final.dropped, []);
        assert.deepEqual(toDocument(final.state!), toDocument({ primary: next }));
        assert.deepEqual(ipamWrites(run(stored, writes), ipamObjects('home', { primary: next })), [], 'a second save writes nothing');
      }),
      { numRuns: 1000 },
    );
  });

  it('names an IPv6 address as a DNS-1123 subdomain, and drops a NatMapping whose name is not its address', () => {
    assert.equal(natMappingName(parseIp('a', 'fd00::5')), 'fd00-0000-0000-0000-0000-0000-0000-0005');
    assert.equal(natMappingName(parseIp('a', '10.0.2.1')), '10.0.2.1');
    let state = initializeIpam(undefined, home).state;
    state = addPeer(state, { clusterId: 'a', podCIDR: '10.9.0.0/24', externalCIDR: '10.8.0.0/28' }).state;
    state = setRemoteView(state, { clusterId: 'a', localNATPodCIDR: '10.0.0.0/24', localNATExternalCIDR: '10.0.2.0/29' }).state;
    state = mapEndpoint(state, 'a', '10.9.0.1').state;
    const objects = ipamObjects('home', { primary: state });
    const [[name, spec]] = [...objects.natMappings] as [
      [string, { externalAddress: string; endpointAddress: string; reflectedTo: string[] }],
    ];
    assert.deepEqual([name, spec], ['10.0.2.1', { externalAddress: '10.0.2.1', endpointAddress: '10.9.0.1', reflectedTo: ['a'] }]);
    objects.natMappings.set('10.0.2.2', spec);
    const read = ipamFromObjects(objects);
    assert.equal(read.dropped.length, 1);
    assert.match(read.dropped[0]!, /^NatMapping 10\.0\.2\.2: named 10\.0\.2\.2 but for address 10\.0\.2\.1/);
  });
});

describe('IPAM state of two families as objects', () => {
  it('reads back a peer of both families, one of the secondary family only, and an IPv6-first cluster, each family in its plane', () => {
    const views = { a: ['10.0.0.0/24', '10.0.2.0/29'], b: ['fd00:a::/48', 'fd00:ff::/120'] } as const;
    for (const secondary of [
      { podCIDR: 'fd00:a::/48', externalCIDR: 'fd00:ff::/120' },
      { podCIDR: '10.0.0.0/24', externalCIDR: '10.0.2.0/29' },
    ]) {
      const primary = secondary.podCIDR.includes(':') ? home : { podCIDR: 'fd00:a::/48', externalCIDR: 'fd00:ff::/120' };
      let planes = initializePlanes(undefined, { ...primary, secondary, pools: [...home.pools, 'fd00::/8'] }).planes;
      const [v4, v6] = planes.primary.home.podCIDR.family === 4 ? (['primary', 'secondary'] as const) : (['secondary', 'primary'] as const);
      const peer = (plane: 'primary' | 'secondary', id: string, pod: string, ext: string, view: readonly [string, string]) => {
        let state = addPeer(planes[plane]!, { clusterId: id, podCIDR: pod, externalCIDR: ext }).state;
        state = setRemoteView(state, { clusterId: id, localNATPodCIDR: view[0], localNATExternalCIDR: view[1] }).state;
        planes = withPlane(planes, plane, state);
      };
      peer(v4, 'dual', '10.9.0.0/24', '10.8.0.0/28', views.a); // both families
      peer(v6, 'dual', 'fd00:b::/48', 'fd00:bb::/120', views.b);
      peer(v6, 'six', 'fd00:a::/48', 'fd00:cc::/120', views.b); // the IPv6 family only: remapped here
      planes = withPlane(planes, v6, mapEndpoint(planes[v6]!, 'six', 'fd00:b::5').state);
      const objects = ipamObjects('home', planes);
      // A PeerNetworks holds the peering's first family (ours, in our order) as its own networks.
      const first = planes.primary.home.podCIDR.family === 4 ? '10.9.0.0/24' : 'fd00:b::/48';
      assert.equal(objects.peers.get('dual')!.podCIDR, first);
      assert.equal(objects.peers.get('six')!.podCIDR, 'fd00:a::/48');
      assert.equal(objects.peers.get('six')!.secondary, undefined);
      const back = ipamFromObjects(objects);
      assert.deepEqual(back.dropped, []);
      assert.deepEqual(toDocument(back.state!), toDocument(planes), 'both planes read back as they were');
    }
  });

  it('drops a PeerNetworks of a family the cluster lacks, or whose two places hold one family, saying why', () => {
    let planes = initializePlanes(undefined, home).planes;
    planes = withPlane(
      planes,
      'primary',
      addPeer(planes.primary, { clusterId: 'a', podCIDR: '10.9.0.0/24', externalCIDR: '10.8.0.0/28' }).state,
    );
    const objects = ipamObjects('home', planes);
    const a = objects.peers.get('a')!;
    const six = {
      ...a,
      clusterId: 'six',
      podCIDR: 'fd00:b::/48',
      externalCIDR: 'fd00:bb::/120',
      remotePodCIDR: 'fd00:b::/48',
      remoteExternalCIDR: 'fd00:bb::/120',
    };
    objects.peers.set('six', six);
    objects.peers.set('a', { ...a, secondary: { ...a, podCIDR: '10.7.0.0/24' } } as typeof a);
    const { dropped } = ipamFromObjects(objects);
    assert.deepEqual(dropped, [
      'PeerNetworks a secondary: secondary.podCIDR: is IPv4, as podCIDR 10.9.0.0/24 is: a secondary holds the other IP family\'s networks (got "10.7.0.0/24")',
      'PeerNetworks six: podCIDR fd00:b::/48 is IPv6, a family the cluster has no networks of',
    ]);
  });

  it("reads back the family a cluster kept when it dropped the other: an IPv6-only cluster keeps its dual-stack peers' IPv6", () => {
    let planes = initializePlanes(undefined, {
      ...home,
      secondary: { podCIDR: 'fd00:a::/48', externalCIDR: 'fd00:ff::/120' },
      pools: [...home.pools, 'fd00::/8'],
    }).planes;
    planes = withPlane(
      planes,
      'primary',
      addPeer(planes.primary, { clusterId: 'p', podCIDR: '10.9.0.0/24', externalCIDR: '10.8.0.0/28' }).state,
    );
    planes = withPlane(
      planes,
      'secondary',
      addPeer(planes.secondary!, { clusterId: 'p', podCIDR: 'fd00:b::/48', externalCIDR: 'fd00:bb::/120' }).state,
    );
    const objects = ipamObjects('home', planes);
    // The cluster becomes IPv6-only: its ClusterNetworks holds the IPv6 networks alone.
    objects.cluster = {
      name: 'home',
      spec: { clusterId: 'home', podCIDR: 'fd00:a::/48', externalCIDR: 'fd00:ff::/120', reserved: [], pools: ['fd00::/8'] },
    };
    const back = ipamFromObjects(objects);
    assert.deepEqual(back.dropped, ['PeerNetworks p: podCIDR 10.9.0.0/24 is IPv4, a family the cluster has no networks of']);
    assert.equal(back.state!.primary.peers.get('p')?.podCIDR && formatCidr(back.state!.primary.peers.get('p')!.podCIDR), 'fd00:b::/48');
  });
});

describe('IPAM object writes', () => {
  it('orders a change: peers put, NatMappings deleted, NatMappings put, peers deleted', () => {
    let state = initializeIpam(undefined, home).state;
    for (const id of ['a', 'b']) {
      state = addPeer(state, {
        clusterId: id,
        podCIDR: id === 'a' ? '10.9.0.0/24' : '10.7.0.0/24',
        externalCIDR: id === 'a' ? '10.8.0.0/28' : '10.6.0.0/28',
      }).state;
      state = setRemoteView(state, { clusterId: id, localNATPodCIDR: '10.0.0.0/24', localNATExternalCIDR: '10.0.2.0/29' }).state;
    }
    state = mapEndpoint(state, 'a', '10.7.0.1').state; // b's pod reflected to a: 10.0.2.1
    state = mapEndpoint(state, 'b', '10.9.0.1').state; // a's pod reflected to b: 10.0.2.2
    let next = removePeer(state, 'a').state; // b's pod was reflected to a: that reflection goes with a
    next = unmapEndpoint(next, 'b', '10.9.0.1').state; // a's pod, reflected to b, goes too
    next = addPeer(next, { clusterId: 'c', podCIDR: '10.5.0.0/24', externalCIDR: '10.4.0.0/28' }).state;
    next = setRemoteView(next, { clusterId: 'c', localNATPodCIDR: '10.0.0.0/24', localNATExternalCIDR: '10.0.2.0/29' }).state;
    next = mapEndpoint(next, 'c', '10.7.0.1').state; // b's pod again, now to c: the lowest free address
    const writes = ipamWrites(ipamObjects('home', { primary: state }), ipamObjects('home', { primary: next })).map(
      (w) =>
        `${w.op} ${w.kind} ${w.name}${w.op === 'put' && w.kind === 'NatMapping' ? ` ${w.spec.endpointAddress}>${w.spec.reflectedTo}` : ''}`,
    );
    assert.deepEqual(writes, [
      'put PeerNetworks c',
      'delete NatMapping 10.0.2.2',
      'put NatMapping 10.0.2.1 10.7.0.1>c',
      'delete PeerNetworks a',
    ]);
  });
});
