import assert from 'node:assert/strict';
import { type ControllerConfig, readControllerConfig } from '../../../src/api/controller-config';
import type { IpamPlanes } from '../../../src/network-ipam/planes';
import {
  type KubeObject,
  type ObjectWrite,
  type OursInPeer,
  type WantedObject,
  answerStatuses,
  exchangeFromObjects,
  localObjects,
  objectWrites,
  peerNetworkConfigs,
} from '../../../src/controller/kubernetes/objects';
import type { GatewayTenure } from '../../../src/controller/election';
import { reconcile } from '../../../src/controller/reconcile';
import { emptyExchange } from '../../../src/controller/exchange-view';

const labels = (cluster: string) => ({ 'app.kubernetes.io/managed-by': 'strait-controller', 'strait.io/cluster-id': cluster });
const want = (name: string, spec: unknown): WantedObject => ({
  apiVersion: 'strait.io/v1alpha1',
  kind: 'TunnelEndpoint',
  metadata: { name, labels: labels('cluster-a') },
  spec,
});
const have = (name: string, rv: string, spec: unknown, owner: string | null = 'cluster-a'): KubeObject => ({
  metadata: { name, resourceVersion: rv, ...(owner ? { labels: labels(owner) } : {}) },
  spec,
});

describe('Kubernetes objects of a reconcile (pure)', () => {
  it('creates what is missing, updates what differs with the resourceVersion read, deletes what it owns and no longer wants, and leaves others alone', () => {
    const { writes, conflicts } = objectWrites(
      [want('new', { x: 1 }), want('same', { a: 1, b: [1, 2] }), want('changed', { x: 2 }), want('foreign', { x: 3 })],
      [
        have('same', '10', { b: [1, 2], a: 1 }),
        have('changed', '11', { x: 1 }),
        have('foreign', '12', { x: 0 }, null),
        have('stale', '13', { x: 9 }),
        have('of-cluster-b', '14', { x: 9 }, 'cluster-b'),
        have('unlabelled', '15', { x: 9 }, null),
      ],
      'cluster-a',
    );
    assert.deepEqual(writes, [
      { op: 'create', object: want('new', { x: 1 }) },
      { op: 'update', object: want('changed', { x: 2 }), resourceVersion: '11' },
      { op: 'delete', name: 'stale', resourceVersion: '13' },
    ] satisfies ObjectWrite[]);
    assert.deepEqual(conflicts, ['TunnelEndpoint foreign: exists and is not managed by the controller of cluster-a; left as it is']);
  });

  it('writes for a Node added, changed or removed only the NodeDataplanes whose own content changed, and for a gateway move the StraitGateway alone: no NodeDataplane lists the nodes or names a gateway', () => {
    type NodeInput = { name: string; underlayAddress: string; podCIDRs: string[]; gatewayCandidate: boolean };
    const node = (i: number, underlayAddress = `192.168.1.${i}`, podCIDR = `10.0.${i}.0/24`, gatewayCandidate = i === 1): NodeInput => ({
      name: `n${i}`,
      underlayAddress,
      podCIDRs: [podCIDR],
      gatewayCandidate,
    });
    const exchange = emptyExchange();
    const servers = { gateways: new Map<string, KubeObject>(), nodeDataplanes: new Map<string, KubeObject>() };
    let ipam: IpamPlanes | undefined;
    let previous: GatewayTenure | undefined;
    let rv = 0;
    /** One reconcile of the cluster with these nodes, its writes applied to `servers`, each as "op name" (the StraitGateway as "op gateways"). */
    const step = (nodes: NodeInput[]): string[] => {
      const config = readControllerConfig({ clusterId: 'cluster-a', podCIDR: '10.0.0.0/16', externalCIDR: '10.200.0.0/24', nodes });
      const result = reconcile({ config, ipam, exchange, heartbeats: new Map(), previous, now: Date.parse('2026-01-01T00:00:00Z') });
      ipam = result.ipam;
      previous = result.election;
      const wanted = localObjects(result, 'cluster-a');
      return (['gateways', 'nodeDataplanes'] as const).flatMap((kind) => {
        const server = servers[kind];
        const { writes } = objectWrites(wanted[kind], [...server.values()], 'cluster-a');
        for (const w of writes) {
          if (w.op === 'delete') server.delete(w.name);
          else server.set(w.object.metadata.name, { ...w.object, metadata: { ...w.object.metadata, resourceVersion: String(++rv) } });
        }
        const name = (n: string) => (kind === 'gateways' ? 'gateways' : n);
        return writes.map((w) => (w.op === 'delete' ? `delete ${name(w.name)}` : `${w.op} ${name(w.object.metadata.name)}`));
      });
    };
    assert.deepEqual(step([node(1), node(2), node(3)]), ['create gateways', 'create n1', 'create n2', 'create n3']);
    assert.deepEqual(step([node(1), node(2), node(3)]), [], 'nothing changed, nothing written');
    assert.deepEqual(step([node(1), node(2), node(3), node(4)]), ['create n4'], 'a Node added: its own object only');
    assert.deepEqual(servers.nodeDataplanes.get('n4')!.spec, {
      clusterId: 'cluster-a',
      podCIDR: '10.0.0.0/16',
      externalCIDR: '10.200.0.0/24',
      transitAddress: '10.200.0.254',
      node: { name: 'n4', underlayAddress: '192.168.1.4' },
      overlay: { vni: 18952, port: 4789, mac: '02:53:54:00:00:01' },
      peers: [],
      natMappings: [],
    });
    assert.deepEqual(servers.gateways.get('cluster-a')!.spec, { activeGateway: { name: 'n1', underlayAddress: '192.168.1.1' }, peers: [] });
    assert.deepEqual(step([node(1), node(2), node(3, '192.168.1.3', '10.0.33.0/24'), node(4)]), [], "a worker's pod network: in no object");
    assert.deepEqual(
      step([node(1), node(2, '192.168.1.22'), node(3, '192.168.1.3', '10.0.33.0/24'), node(4)]),
      ['update n2'],
      "a worker's address: its own object only",
    );
    assert.deepEqual(step([node(1), node(2, '192.168.1.22'), node(4)]), ['delete n3'], 'a Node removed: its own object only');
    assert.deepEqual(
      step([node(1, '192.168.1.11'), node(2, '192.168.1.22'), node(4)]),
      ['update gateways', 'update n1'],
      "the gateway's address: the StraitGateway and its own object",
    );
    assert.deepEqual(
      step([node(1, '192.168.1.11', '10.0.1.0/24', false), node(2, '192.168.1.22', '10.0.2.0/24', true), node(4)]),
      ['update gateways', 'update n1', 'update n2'],
      'the gateway moved: the StraitGateway, and the two nodes whose candidacy changed',
    );
  });

  it('reads offers meant for us, skips other recipients and our own, and names an object whose name does not match its spec', () => {
    const offer = (name: string, spec: unknown): KubeObject => ({ metadata: { name }, spec });
    const spec = (owner: string, recipient: string) => ({
      clusterId: owner,
      remoteClusterId: recipient,
      podCIDR: '10.0.0.0/16',
      externalCIDR: '10.200.0.0/24',
      endpoint: { address: '203.0.113.2' },
    });
    const view = exchangeFromObjects(
      [
        offer('cluster-b.cluster-a', spec('cluster-b', 'cluster-a')),
        offer('cluster-c.cluster-x', spec('cluster-c', 'cluster-x')),
        offer('cluster-d.cluster-a', spec('cluster-e', 'cluster-a')),
        offer('cluster-f.cluster-a', { ...spec('cluster-f', 'cluster-a'), podCIDR: '10.0.0.0/33' }),
      ],
      new Map<string, OursInPeer>([
        [
          'cluster-b',
          {
            metadata: { name: 'cluster-a.cluster-b' },
            status: {
              processed: true,
              remappedPodCIDR: '10.1.0.0/16',
              remappedExternalCIDR: 'None',
              observed: { podCIDR: '10.0.0.0/16', externalCIDR: '10.200.0.0/24' },
            },
          },
        ],
        ['cluster-c', { metadata: { name: 'cluster-a.cluster-c' } }],
        ['cluster-d', undefined],
        ['cluster-e', 'unread'],
      ]),
      'cluster-a',
      undefined,
    );
    assert.deepEqual([...view.specsForUs.keys()], ['cluster-b']);
    assert.deepEqual(
      [...view.statusesOfOurs.entries()],
      [
        [
          'cluster-b',
          {
            processed: true,
            remappedPodCIDR: '10.1.0.0/16',
            remappedExternalCIDR: 'None',
            observed: { podCIDR: '10.0.0.0/16', externalCIDR: '10.200.0.0/24' },
          },
        ],
      ],
    );
    assert.equal(view.problems.length, 2);
    assert.match(
      view.problems[0]!,
      /^NetworkConfig cluster-d\.cluster-a: metadata\.name: expected cluster-e\.cluster-a for spec\.clusterId cluster-e \(got "cluster-d\.cluster-a"\)$/,
    );
    assert.match(view.problems[1]!, /^NetworkConfig cluster-f\.cluster-a: .*spec\.podCIDR.*10\.0\.0\.0\/33/);
  });

  /**
   * Two clusters with the same PodCIDR and ExternalCIDR, each with its own "API server" (a map of
   * objects by kind), exchanging NetworkConfigs the way the Kubernetes adapter does: our spec into the
   * peer's server, our answer as the status of the peer's object in ours.
   */
  it('brings two overlapping clusters to ready through objects alone, each writing only its fields, then writes nothing', () => {
    const cluster = (id: string, peer: string, gw: string, address: string) =>
      readControllerConfig({
        clusterId: id,
        podCIDR: '10.0.0.0/16',
        externalCIDR: '10.200.0.0/24',
        peers: [peer],
        nodes: [{ name: gw, underlayAddress: address, podCIDRs: ['10.0.0.0/24'] }],
      });
    const configs: Record<string, ControllerConfig> = {
      'cluster-a': cluster('cluster-a', 'cluster-b', 'a-gw', '192.168.1.1'),
      'cluster-b': cluster('cluster-b', 'cluster-a', 'b-gw', '192.168.2.1'),
    };
    type Server = Map<string, Map<string, KubeObject>>;
    const servers = new Map<string, Server>(
      Object.keys(configs).map((id) => [
        id,
        new Map([
          ['NetworkConfig', new Map()],
          ['TunnelEndpoint', new Map()],
          ['NodeDataplane', new Map()],
        ]),
      ]),
    );
    const ipam = new Map<string, IpamPlanes | undefined>();
    let rv = 0;
    let writes = 0;
    const apply = (server: Server, kind: string, list: ObjectWrite[], owner: string) => {
      const objects = server.get(kind)!;
      for (const w of list) {
        writes++;
        if (w.op === 'delete') objects.delete(w.name);
        else
          objects.set(w.object.metadata.name, {
            ...w.object,
            metadata: { ...w.object.metadata, resourceVersion: String(++rv) },
            status: objects.get(w.object.metadata.name)?.status,
          });
        assert.equal(
          w.op === 'delete' ? undefined : w.object.metadata.labels['strait.io/cluster-id'],
          w.op === 'delete' ? undefined : owner,
        );
      }
    };
    const step = (id: string) => {
      const config = configs[id]!;
      const own = servers.get(id)!;
      const ours = new Map(config.peers.map((p) => [p, servers.get(p)!.get('NetworkConfig')!.get(`${id}.${p}`)]));
      const now = Date.parse('2026-01-01T00:00:00Z');
      const result = reconcile({
        config,
        ipam: ipam.get(id),
        exchange: exchangeFromObjects([...own.get('NetworkConfig')!.values()], ours, id, ipam.get(id)),
        heartbeats: new Map([[config.nodes[0]!.name, { ready: true, time: new Date(now).toISOString() }]]),
        previous: undefined,
        now,
      });
      ipam.set(id, result.ipam);
      const local = localObjects(result, id);
      apply(own, 'NodeDataplane', objectWrites(local.nodeDataplanes, [...own.get('NodeDataplane')!.values()], id).writes, id);
      apply(own, 'TunnelEndpoint', objectWrites(local.tunnelEndpoints, [...own.get('TunnelEndpoint')!.values()], id).writes, id);
      for (const [peer, object] of peerNetworkConfigs(result, id)) {
        const theirs = servers.get(peer)!.get('NetworkConfig')!;
        const existing = [...theirs.values()].filter((o) => o.metadata.name === object.metadata.name);
        apply(servers.get(peer)!, 'NetworkConfig', objectWrites([object], existing, id).writes, id);
      }
      for (const [name, status] of answerStatuses(result, id)) {
        const object = own.get('NetworkConfig')!.get(name);
        assert.ok(object, `${id} answers ${name}, which is there`);
        object.status = status;
      }
      return result;
    };
    for (let round = 0; round < 3; round++) for (const id of Object.keys(configs)) step(id);
    const before = writes;
    const a = step('cluster-a');
    const b = step('cluster-b');
    assert.equal(writes, before, 'a converged step writes nothing');
    assert.deepEqual(a.status.peers, [{ clusterId: 'cluster-b', state: 'ready' }]);
    assert.deepEqual(b.status.peers, [{ clusterId: 'cluster-a', state: 'ready' }]);
    assert.deepEqual([...servers.get('cluster-b')!.get('NetworkConfig')!.keys()], ['cluster-a.cluster-b']);
    const inB = servers.get('cluster-b')!.get('NetworkConfig')!.get('cluster-a.cluster-b')!;
    assert.deepEqual(inB.spec, {
      clusterId: 'cluster-a',
      remoteClusterId: 'cluster-b',
      podCIDR: '10.0.0.0/16',
      externalCIDR: '10.200.0.0/24',
      endpoint: { address: '192.168.1.1', port: 4789 },
    });
    assert.deepEqual(inB.status, {
      processed: true,
      remappedPodCIDR: '10.1.0.0/16',
      remappedExternalCIDR: '10.2.0.0/24',
      observed: { podCIDR: '10.0.0.0/16', externalCIDR: '10.200.0.0/24' },
    });
    assert.deepEqual(servers.get('cluster-a')!.get('TunnelEndpoint')!.get('cluster-b')!.spec, {
      clusterId: 'cluster-b',
      remotePodCIDR: '10.1.0.0/16',
      remoteExternalCIDR: '10.2.0.0/24',
      localNATPodCIDR: '10.1.0.0/16',
      localNATExternalCIDR: '10.2.0.0/24',
      endpoint: { address: '192.168.2.1', port: 4789 },
    });
    assert.deepEqual([...servers.get('cluster-a')!.get('NodeDataplane')!.keys()], ['a-gw']);

    // B's API server not read yet (a new leader of A, or B's server down): A goes on with the answer its
    // IPAM recorded, which is the one B wrote, and its peering stays ready.
    const unread = exchangeFromObjects(
      [...servers.get('cluster-a')!.get('NetworkConfig')!.values()],
      new Map([['cluster-b', 'unread']]),
      'cluster-a',
      ipam.get('cluster-a'),
    );
    assert.deepEqual(unread.statusesOfOurs.get('cluster-b'), inB.status);
    assert.deepEqual(
      exchangeFromObjects([], new Map([['cluster-b', 'unread']]), 'cluster-a', undefined).statusesOfOurs.size,
      0,
      'nothing recorded before the first answer',
    );
  });
});
