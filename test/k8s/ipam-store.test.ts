/**
 * The IPAM state as objects in the lab's API server, with the real client: it reads back as saved, two
 * controllers that both read the same state cannot both give an address away (the second gets a conflict
 * and, having read again, the next address), and a save cut short after any of its writes leaves a valid
 * state, with no address twice and nothing for a peer that is gone, which the next save completes.
 */
import assert from 'node:assert/strict';
import { CustomObjectsApi, type KubernetesObject } from '@kubernetes/client-node';
import { StateError } from '../../src/errors';
import { mapEndpoint, unmapEndpoint } from '../../src/network-ipam/endpoints';
import { initializeIpam } from '../../src/network-ipam/initialize';
import { type IpamPlanes, initializePlanes, withPlane } from '../../src/network-ipam/planes';
import { addPeer, removePeer, setRemoteView } from '../../src/network-ipam/peers';
import type { IpamState } from '../../src/network-ipam/state';
import { toDocument } from '../../src/network-ipam/state-document';
import { ApiIpamStore } from '../../src/controller/kubernetes/ipam-store';
import { formatCidr, formatIp } from '../../src/net/cidr';
import { startTestApiServer, type TestApiServer } from '../support/apiserver';

const home = { podCIDR: '10.0.0.0/24', externalCIDR: '10.0.2.0/29', pools: ['10.0.4.0/22'] };
const group = 'strait.io';
const version = 'v1alpha1';

/**
 * Two peers, each with a pod of the other reflected to it: b's 10.7.0.1 to a at 10.0.2.1, a's 10.9.0.1 to b
 * at 10.0.2.2; on the IPv4 plane `start` (by default `home`'s, alone).
 */
function twoPeers(start: IpamState = initializeIpam(undefined, home).state): IpamState {
  let state = start;
  for (const [id, pod, ext] of [
    ['a', '10.9.0.0/24', '10.8.0.0/28'],
    ['b', '10.7.0.0/24', '10.6.0.0/28'],
  ] as const) {
    state = addPeer(state, { clusterId: id, podCIDR: pod, externalCIDR: ext }).state;
    state = setRemoteView(state, { clusterId: id, localNATPodCIDR: '10.0.0.0/24', localNATExternalCIDR: '10.0.2.0/29' }).state;
  }
  state = mapEndpoint(state, 'a', '10.7.0.1').state;
  return mapEndpoint(state, 'b', '10.9.0.1').state;
}

/** `home` with an IPv6 family: the reserved networks and pools are the cluster's, one list for both planes. */
const dualStackHome = {
  ...home,
  pools: [...home.pools, 'fd00::/8'],
  secondary: { podCIDR: 'fd00:a::/48', externalCIDR: 'fd00:ff::/120' },
};

/**
 * Both planes from one configuration, as the controller starts them (initializePlanes), each then peered
 * in its own family: the IPv4 plane as twoPeers, the IPv6 one with a (whose PodCIDR collides with ours,
 * so it is remapped) and b's pod fd00:99::5 reflected to it.
 */
function dualStackPlanes(): IpamPlanes {
  const start = initializePlanes(undefined, dualStackHome).planes;
  let six = addPeer(start.secondary!, { clusterId: 'a', podCIDR: 'fd00:a::/48', externalCIDR: 'fd00:fe::/120' }).state;
  six = setRemoteView(six, { clusterId: 'a', localNATPodCIDR: 'fd00:1::/48', localNATExternalCIDR: 'fd00:fd::/120' }).state;
  six = mapEndpoint(six, 'a', 'fd00:99::5').state;
  return withPlane(withPlane(start, 'primary', twoPeers(start.primary)), 'secondary', six);
}

/** Peer a gone, a's pod no longer reflected to b, a new peer c, and b's pod reflected to c: four writes. */
function changed(state: IpamState): IpamState {
  let next = removePeer(state, 'a').state;
  next = unmapEndpoint(next, 'b', '10.9.0.1').state;
  next = addPeer(next, { clusterId: 'c', podCIDR: '10.5.0.0/24', externalCIDR: '10.4.0.0/28' }).state;
  next = setRemoteView(next, { clusterId: 'c', localNATPodCIDR: '10.0.0.0/24', localNATExternalCIDR: '10.0.2.0/29' }).state;
  return mapEndpoint(next, 'c', '10.7.0.1').state;
}

/** Every mapping, as "peer endpoint>address", sorted; and the peers. */
function summary(state: IpamState | undefined) {
  const peers = [...(state?.peers.values() ?? [])];
  const family = state?.home.externalCIDR.family ?? 4;
  return {
    peers: peers.map((p) => p.clusterId).sort(),
    mappings: peers
      .flatMap((p) => [...p.natMappings.entries()].map(([e, a]) => `${p.clusterId} ${e}>${formatIp({ family, value: a })}`))
      .sort(),
  };
}

describe('IPAM store on the API server', function () {
  this.timeout(20_000);
  let api: TestApiServer;
  let objects: CustomObjectsApi;
  before(async () => {
    api = await startTestApiServer();
    objects = api.kubeConfig.makeApiClient(CustomObjectsApi);
  });
  after(() => api.close());

  const planesStore = (client: CustomObjectsApi = objects, leading = true) =>
    new ApiIpamStore({ api: client, clusterId: 'home', leading: () => leading });

  /** The store's primary plane: these tests use one family (the dual-stack one below takes the planes). */
  const store = (client: CustomObjectsApi = objects, leading = true) => {
    const planes = planesStore(client, leading);
    return {
      lock: () => planes.lock(),
      load: async (): Promise<IpamState | undefined> => (await planes.load())?.primary,
      save: (state: IpamState) => planes.save({ primary: state }),
      get dropped() {
        return planes.dropped;
      },
    };
  };

  const plurals: Record<string, string> = { ClusterNetworks: 'clusternetworks', PeerNetworks: 'peernetworks', NatMapping: 'natmappings' };

  /** The IPAM objects in the server, as "kind/name". */
  async function stored(): Promise<string[]> {
    const names: string[] = [];
    for (const [kind, plural] of Object.entries(plurals)) {
      const list = (await objects.listClusterCustomObject({ group, version, plural })) as { items: KubernetesObject[] };
      names.push(...list.items.map((o) => `${kind}/${o.metadata!.name}`));
    }
    return names;
  }

  async function clear(): Promise<void> {
    for (const id of await stored()) {
      const [kind, name] = id.split('/') as [string, string];
      await objects.deleteClusterCustomObject({ group, version, plural: plurals[kind]!, name });
    }
  }

  beforeEach(clear);

  it('reads back the state it saved, as one object per cluster, peer and address; a second save writes nothing', async () => {
    const saving = store();
    assert.equal(await saving.load(), undefined, 'nothing before the first save');
    const state = twoPeers();
    await saving.save(state);
    assert.deepEqual(await stored(), [
      'ClusterNetworks/home',
      'PeerNetworks/a',
      'PeerNetworks/b',
      'NatMapping/10.0.2.1',
      'NatMapping/10.0.2.2',
    ]);
    const reading = store();
    const back = await reading.load();
    assert.deepEqual([toDocument({ primary: back! }), reading.dropped], [toDocument({ primary: state }), []]);
    const before = (await objects.listClusterCustomObject({ group, version, plural: 'natmappings' })) as {
      metadata: { resourceVersion: string };
    };
    await reading.save(back!);
    const after = (await objects.listClusterCustomObject({ group, version, plural: 'natmappings' })) as {
      metadata: { resourceVersion: string };
    };
    assert.equal(after.metadata.resourceVersion, before.metadata.resourceVersion, 'no write');
  });

  it('is written only by the controller holding the lease', async () => {
    await assert.rejects(
      store(objects, false).lock(),
      (err: Error) => err instanceof StateError && /written by the controller holding the lease; this one does not/.test(err.message),
    );
    await (await store().lock()).release();
  });

  it('of two controllers that read the same state and give the same address away, the second gets a conflict, and after reading again the next address', async () => {
    const setup = store();
    await setup.load();
    await setup.save(twoPeers());
    const [first, second] = [store(), store()];
    const [s1, s2] = [await first.load(), await second.load()];
    // Both take the lowest free address, 10.0.2.3: the first for a's pod 10.9.0.5 to b, the second for b's pod 10.7.0.9 to a.
    await first.save(mapEndpoint(s1!, 'b', '10.9.0.5').state);
    await assert.rejects(
      second.save(mapEndpoint(s2!, 'a', '10.7.0.9').state),
      (err: Error) =>
        err instanceof StateError && /^NatMapping\/10\.0\.2\.3: changed by another writer since it was read \(409 /.test(err.message),
    );
    await assert.rejects(
      second.save(mapEndpoint(s2!, 'a', '10.7.0.9').state),
      /must be read \(load\) before a save, and again after a conflict/,
    );
    await second.save(mapEndpoint((await second.load())!, 'a', '10.7.0.9').state);
    assert.deepEqual(summary(await store().load()).mappings, [
      'a 10.7.0.1>10.0.2.1',
      'a 10.7.0.9>10.0.2.4',
      'b 10.9.0.1>10.0.2.2',
      'b 10.9.0.5>10.0.2.3',
    ]);
  });

  it('of two controllers that change the same peer, the second gets a conflict (the resourceVersion it read is old)', async () => {
    const setup = store();
    await setup.load();
    await setup.save(twoPeers());
    const [first, second] = [store(), store()];
    const [s1, s2] = [await first.load(), await second.load()];
    await first.save(setRemoteView(s1!, { clusterId: 'a', localNATPodCIDR: '10.50.0.0/24', localNATExternalCIDR: '10.60.0.8/29' }).state);
    await assert.rejects(
      second.save(setRemoteView(s2!, { clusterId: 'a', localNATPodCIDR: '10.51.0.0/24', localNATExternalCIDR: '10.61.0.8/29' }).state),
      /^StateError: PeerNetworks\/a: changed by another writer since it was read \(409 /,
    );
    const peer = (await objects.getClusterCustomObject({ group, version, plural: 'peernetworks', name: 'a' })) as {
      spec: { localNATPodCIDR: string };
    };
    assert.equal(peer.spec.localNATPodCIDR, '10.50.0.0/24');
  });

  it("a controller deleting a NatMapping another has changed since it read it gets a conflict, and the other's reflection stays", async () => {
    const setup = store();
    await setup.load();
    let state = addPeer(twoPeers(), { clusterId: 'c', podCIDR: '10.5.0.0/24', externalCIDR: '10.4.0.0/28' }).state;
    state = setRemoteView(state, { clusterId: 'c', localNATPodCIDR: '10.0.0.0/24', localNATExternalCIDR: '10.0.2.0/29' }).state;
    await setup.save(state);
    const [first, second] = [store(), store()];
    const [s1, s2] = [await first.load(), await second.load()];
    // The first reflects a's pod 10.9.0.1 to c as well (the same address, 10.0.2.2); the second stops reflecting it to b: for it, the address is free.
    await first.save(mapEndpoint(s1!, 'c', '10.9.0.1').state);
    await assert.rejects(
      second.save(unmapEndpoint(s2!, 'b', '10.9.0.1').state),
      /^StateError: NatMapping\/10\.0\.2\.2: changed by another writer since it was read \(409 /,
    );
    assert.deepEqual(summary(await store().load()).mappings, ['a 10.7.0.1>10.0.2.1', 'b 10.9.0.1>10.0.2.2', 'c 10.9.0.1>10.0.2.2']);
  });

  it('a save cut short after any of its writes reads back valid; the next save completes it and leaves nothing behind', async () => {
    const old = twoPeers();
    const next = changed(old);
    // The writes, in order: put PeerNetworks c, delete NatMapping 10.0.2.2, put NatMapping 10.0.2.1 (b's pod now to c), delete PeerNetworks a.
    const expected = [
      { peers: ['a', 'b'], mappings: ['a 10.7.0.1>10.0.2.1', 'b 10.9.0.1>10.0.2.2'] },
      { peers: ['a', 'b', 'c'], mappings: ['a 10.7.0.1>10.0.2.1', 'b 10.9.0.1>10.0.2.2'] },
      { peers: ['a', 'b', 'c'], mappings: ['a 10.7.0.1>10.0.2.1'] },
      { peers: ['a', 'b', 'c'], mappings: ['c 10.7.0.1>10.0.2.1'] },
      { peers: ['b', 'c'], mappings: ['c 10.7.0.1>10.0.2.1'] },
    ];
    for (const [done, after] of expected.entries()) {
      await clear();
      const setup = store();
      await setup.load();
      await setup.save(old);
      // The process dies at its write number done + 1: that write and the ones after never happen.
      let writes = 0;
      const dying = new Proxy(objects, {
        get(target, prop, receiver) {
          const value = Reflect.get(target, prop, receiver) as unknown;
          if (typeof value !== 'function' || !/^(create|replace|delete)ClusterCustomObject$/.test(String(prop))) return value;
          return (...args: unknown[]) =>
            ++writes > done ? Promise.reject(new Error('killed')) : (value as (...a: unknown[]) => unknown).apply(target, args);
        },
      });
      const crashing = store(dying);
      await crashing.load();
      if (done < 4) await assert.rejects(crashing.save(next), /killed/);
      else await crashing.save(next);
      const reader = store();
      const state = await reader.load();
      assert.deepEqual({ ...summary(state), dropped: reader.dropped }, { ...after, dropped: [] }, `read back after ${done} writes`);
      await reader.save(next);
      const final = store();
      assert.deepEqual(toDocument({ primary: (await final.load())! }), toDocument({ primary: next }), `completed after ${done} writes`);
      assert.deepEqual(
        await stored(),
        ['ClusterNetworks/home', 'PeerNetworks/b', 'PeerNetworks/c', 'NatMapping/10.0.2.1'],
        `nothing left behind after ${done} writes`,
      );
    }
  });

  it('keeps a dual-stack state: the secondary networks beside the primary in the same objects, IPv6 NatMappings by address', async () => {
    const planes = dualStackPlanes();
    assert.deepEqual(
      planes.primary.home.pools.map(formatCidr),
      ['10.0.4.0/22', 'fd00::/8'],
      "the primary plane's home is the configuration's (both families' pools), not single-stack home's",
    );
    const saving = planesStore();
    await saving.load();
    await saving.save(planes);
    assert.deepEqual(await stored(), [
      'ClusterNetworks/home',
      'PeerNetworks/a',
      'PeerNetworks/b',
      'NatMapping/10.0.2.1',
      'NatMapping/10.0.2.2',
      'NatMapping/fd00-00ff-0000-0000-0000-0000-0000-0000',
    ]);
    const peerA = (await objects.getClusterCustomObject({ group, version, plural: 'peernetworks', name: 'a' })) as {
      spec: { secondary?: unknown };
    };
    assert.deepEqual(peerA.spec.secondary, {
      podCIDR: 'fd00:a::/48',
      externalCIDR: 'fd00:fe::/120',
      remotePodCIDR: 'fd00::/48',
      remoteExternalCIDR: 'fd00:fe::/120',
      localNATPodCIDR: 'fd00:1::/48',
      localNATExternalCIDR: 'fd00:fd::/120',
    });
    const reading = planesStore();
    const back = await reading.load();
    assert.deepEqual([toDocument(back!), reading.dropped], [toDocument(planes), []]);
  });

  it('reads an object that breaks an invariant as left out, naming it, and the next save deletes it', async () => {
    const setup = store();
    await setup.load();
    await setup.save(twoPeers());
    // By hand: a second address for b's pod 10.7.0.1 to a (it has 10.0.2.1).
    await objects.createClusterCustomObject({
      group,
      version,
      plural: 'natmappings',
      body: {
        apiVersion: `${group}/${version}`,
        kind: 'NatMapping',
        metadata: { name: '10.0.2.5' },
        spec: { externalAddress: '10.0.2.5', endpointAddress: '10.7.0.1', reflectedTo: ['a'] },
      },
    });
    const reader = store();
    const state = await reader.load();
    assert.equal(reader.dropped.length, 1);
    assert.match(reader.dropped[0]!, /^NatMapping 10\.0\.2\.5 to a: /);
    assert.deepEqual(summary(state).mappings, ['a 10.7.0.1>10.0.2.1', 'b 10.9.0.1>10.0.2.2']);
    await reader.save(state!);
    assert.deepEqual(await stored(), [
      'ClusterNetworks/home',
      'PeerNetworks/a',
      'PeerNetworks/b',
      'NatMapping/10.0.2.1',
      'NatMapping/10.0.2.2',
    ]);
  });
});
