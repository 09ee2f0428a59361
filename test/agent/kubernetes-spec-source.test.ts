/**
 * The agent's spec source on Kubernetes, on the lab's API server with the real client: its own
 * NodeDataplane (stored without a node list, as the controller writes it), the node list made from
 * the Node objects and the gateways of its cluster's StraitGateway, and when it tells the agent to
 * reconcile.
 */
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { CoreV1Api, CustomObjectsApi, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { readNodeDataplane } from '../../src/api/node-dataplane';
import { KubernetesSpecSource } from '../../src/agent/kubernetes/spec-source';
import { registerNode } from '../../lab/src/kubernetes-control-plane';
import { createLogger } from '../../src/log';
import { formatCidr, formatIp } from '../../src/net/cidr';
import { type TestApiServer, startTestApiServer } from '../support/apiserver';
import { nodeStatusHeartbeat } from '../support/kubelet';
import { waitFor } from '../support/wait';
import { nodeObject, nodeSpecDocument, peerB } from '../support/node-specs';

const strait = { group: 'strait.io', version: 'v1alpha1', plural: 'nodedataplanes' };

describe("the agent's spec source on Kubernetes (lab API server, real client)", function () {
  this.timeout(30_000);
  let api: TestApiServer;
  let core: CoreV1Api;
  let custom: CustomObjectsApi;
  let source: KubernetesSpecSource | undefined;

  beforeEach(async () => {
    api = await startTestApiServer();
    core = api.kubeConfig.makeApiClient(CoreV1Api);
    // What the controller stores: everything but the node list (cluster PodCIDR 10.0.0.0/16).
    const { nodes: _nodes, ...stored } = nodeSpecDocument([peerB]);
    custom = api.kubeConfig.makeApiClient(CustomObjectsApi);
    await custom.createClusterCustomObject({ ...strait, body: nodeObject(stored) });
    await registerNode(core, { name: 'n1', underlayAddress: '192.0.2.11', podCIDR: '10.0.0.0/24' });
    await registerNode(core, { name: 'n3', underlayAddress: '192.0.2.13', podCIDR: '10.0.2.0/24' });
    // Outside the cluster PodCIDR: left out, as the controller leaves it out.
    await registerNode(core, { name: 'n9', underlayAddress: '192.0.2.19', podCIDR: '10.9.0.0/24' });
  });
  afterEach(async () => {
    source?.close();
    source = undefined;
    await api.close();
  });

  const start = async () => {
    source = new KubernetesSpecSource({ kubeConfig: api.kubeConfig, nodeName: 'n1', log: createLogger('agent', 'silent') });
    let changes = 0;
    source.watch(() => {
      changes += 1;
    });
    await source.ready();
    // The agent's first reconcile; the notices of the first lists are behind it.
    source.read();
    await new Promise(setImmediate);
    const told = changes;
    return { source, changes: () => changes - told };
  };
  /** The node list of the typed spec the agent reads, one line per node. */
  const nodeList = (s: KubernetesSpecSource) =>
    readNodeDataplane(s.read()!.parse()).spec.nodes.map(
      (n) => `${n.name} ${formatIp(n.underlayAddress)} ${n.podCIDRs.map(formatCidr).join(',')}`,
    );
  const documentNodes = (s: KubernetesSpecSource) => (s.read()!.parse() as { spec: { nodes: unknown } }).spec.nodes;

  it('adds the node list made from the Node objects as the controller reads them, once both caches are filled', async () => {
    const { source } = await start();
    assert.deepEqual(documentNodes(source), [
      { name: 'n1', underlayAddress: '192.0.2.11', podCIDRs: ['10.0.0.0/24'] },
      { name: 'n3', underlayAddress: '192.0.2.13', podCIDRs: ['10.0.2.0/24'] },
    ]);
    // The typed spec the datapath gets: the same as from a spec file listing these nodes.
    assert.deepEqual(nodeList(source), ['n1 192.0.2.11 10.0.0.0/24', 'n3 192.0.2.13 10.0.2.0/24']);
  });

  it('tells the agent of a Node added, changed or removed, and not of a status heartbeat that changes nothing in the list', async () => {
    const { source, changes } = await start();
    const first = source.read()!.version;

    await nodeStatusHeartbeat(core, 'n3');
    // Apart from the next change, so the two are never made one.
    await sleep(200);
    // Same watch, in order: once n2 is in the list, the heartbeat before it has been seen.
    await registerNode(core, { name: 'n2', underlayAddress: '192.0.2.12', podCIDR: '10.0.1.0/24' });
    await waitFor('n2 in the node list', () => (documentNodes(source) as { name: string }[]).some((n) => n.name === 'n2'));
    assert.equal(changes(), 1, 'one change told: n2 (not the heartbeat before it)');
    assert.notEqual(source.read()!.version, first);
    assert.deepEqual(nodeList(source), ['n1 192.0.2.11 10.0.0.0/24', 'n2 192.0.2.12 10.0.1.0/24', 'n3 192.0.2.13 10.0.2.0/24']);

    await core.patchNodeStatus(
      { name: 'n3', body: { status: { addresses: [{ type: 'InternalIP', address: '192.0.2.33' }] } } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    await waitFor('the new address of n3', () => changes() === 2);
    assert.deepEqual(nodeList(source), ['n1 192.0.2.11 10.0.0.0/24', 'n2 192.0.2.12 10.0.1.0/24', 'n3 192.0.2.33 10.0.2.0/24']);

    await core.deleteNode({ name: 'n3' });
    await waitFor('n3 removed', () => changes() === 3);
    assert.deepEqual(nodeList(source), ['n1 192.0.2.11 10.0.0.0/24', 'n2 192.0.2.12 10.0.1.0/24']);
  });

  it("refuses a node list without this node's own Node (incomplete: the spec in force stays)", async () => {
    const { source } = await start();
    await core.deleteNode({ name: 'n1' });
    await waitFor('n1 gone from the cache', () => {
      try {
        source.read();
        return false;
      } catch (err) {
        return /Node n1 is not among the 1 usable Nodes read: the node list is incomplete/.test((err as Error).message);
      }
    });
    await registerNode(core, { name: 'n1', underlayAddress: '192.0.2.11', podCIDR: '10.0.0.0/24' });
    await waitFor('n1 back', () => (documentNodes(source) as { name: string }[]).some((n) => n.name === 'n1'));
  });

  it("reads the gateways from its cluster's StraitGateway, and tells the agent of a gateway move there, not of another cluster's StraitGateway", async () => {
    const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
    const gateways = { group: 'strait.io', version: 'v1alpha1', plural: 'straitgateways' };
    const gatewaysOf = (cluster: string, name: string, address: string) => ({
      apiVersion: 'strait.io/v1alpha1',
      kind: 'StraitGateway',
      metadata: { name: cluster },
      spec: {
        activeGateway: { name, underlayAddress: address },
        peers: [{ clusterId: 'b', endpoint: { address: '203.0.113.22', port: 4789 } }],
      },
    });
    // As the controller stores it: no gateway, no role, no peer endpoint.
    await custom.patchClusterCustomObject(
      {
        ...strait,
        name: 'n1',
        body: { spec: { activeGateway: null, node: { role: null }, peers: [{ ...peerB, endpoint: undefined }] } },
      },
      mergePatch,
    );
    await custom.createClusterCustomObject({ ...gateways, body: gatewaysOf('a', 'n3', '192.0.2.13') });
    const { source, changes } = await start();
    const gatewayOf = () => {
      const { spec } = readNodeDataplane(source.read()!.parse());
      return `${spec.activeGateway.name} ${formatIp(spec.activeGateway.underlayAddress)} ${spec.node.role} ${formatIp(spec.peers[0]!.endpoint.address)}`;
    };
    assert.equal(gatewayOf(), 'n3 192.0.2.13 worker 203.0.113.22');

    await custom.createClusterCustomObject({ ...gateways, body: gatewaysOf('z', 'z1', '192.0.2.99') });
    await sleep(200);
    // Same watch, in order: once the move is read, the other cluster's object before it has been seen.
    await custom.patchClusterCustomObject(
      { ...gateways, name: 'a', body: { spec: { activeGateway: { name: 'n1', underlayAddress: '192.0.2.11' } } } },
      mergePatch,
    );
    await waitFor('the gateway moved to n1', () => gatewayOf().startsWith('n1 '));
    assert.equal(gatewayOf(), 'n1 192.0.2.11 gateway 203.0.113.22');
    assert.equal(changes(), 1, "one change told: the move (not the other cluster's object)");
  });

  it('tells the agent of a new spec of its NodeDataplane, and not of its own status write', async () => {
    const { source, changes } = await start();
    const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
    await custom.patchClusterCustomObjectStatus(
      { ...strait, name: 'n1', body: { status: { ready: true, time: new Date().toISOString(), dataplane: 'ebpf', specGeneration: 1 } } },
      mergePatch,
    );
    await sleep(200);
    // Same watch, in order: once the new spec is read, the status write before it has been seen.
    await custom.patchClusterCustomObject({ ...strait, name: 'n1', body: { spec: { peers: [] } } }, mergePatch);
    await waitFor('the new spec', () => readNodeDataplane(source.read()!.parse()).spec.peers.length === 0);
    assert.equal(changes(), 1, 'one change told: the spec (not the status write)');
  });
});
