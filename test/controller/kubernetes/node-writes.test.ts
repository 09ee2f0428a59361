/**
 * What the controller on Kubernetes writes when a Node is added, changes or goes, or the gateway moves,
 * counted from the lab API server's request log (real client): NodeDataplanes hold neither the node
 * list (each agent reads the Node objects) nor the gateways (each agent reads the cluster's
 * StraitGateway), so a Node's change writes only the objects whose own content changed and a gateway
 * move one object, whatever the cluster's size (issue 27). Its writes are server-side applies: a label,
 * annotation or finalizer another writer adds survives them.
 */
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { CoreV1Api, CustomObjectsApi, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { readControllerConfig } from '../../../src/api/controller-config';
import { runKubernetesController } from '../../../src/controller/kubernetes/controller';
import { defaultNamespace } from '../../../src/k8s/names';
import { registerNode, seedCluster } from '../../../lab/src/kubernetes-control-plane';
import { createLogger } from '../../../src/log';
import { type TestApiServer, startTestApiServer } from '../../support/apiserver';
import { nodeStatusHeartbeat } from '../../support/kubelet';
import { type CapturedLog, captureLog } from '../../support/log-capture';
import { nodeObject, nodeSpecDocument } from '../../support/node-specs';
import { waitFor } from '../../support/wait';

interface Listed {
  items: {
    metadata: {
      name: string;
      resourceVersion: string;
      labels: Record<string, string>;
      annotations?: Record<string, string>;
      finalizers?: string[];
      managedFields: { manager: string; operation: string }[];
    };
    spec: Record<string, unknown>;
  }[];
}

interface ControllerRun {
  api: TestApiServer;
  requests: CapturedLog;
  core: CoreV1Api;
  close(): Promise<void>;
}

/**
 * A cluster of `count` Ready Nodes on a lab API server, and its controller (a reconcile every 0.1 s),
 * started once `before` has written what it finds there.
 */
async function controllerRun(count: number, before?: (api: TestApiServer) => Promise<void>): Promise<ControllerRun> {
  const requests = captureLog();
  const api = await startTestApiServer({ logger: requests.log });
  await seedCluster(
    api.kubeConfig,
    Array.from({ length: count }, (_, i) => node(i + 1)),
    new Map(),
  );
  await before?.(api);
  const config = readControllerConfig(
    { clusterId: 'cluster-a', podCIDR: '10.0.0.0/16', externalCIDR: '10.200.0.0/24', interval: 0.1 },
    'kubernetes',
  );
  const stop = new AbortController();
  const done = runKubernetesController(
    {
      config,
      kubeConfig: api.kubeConfig,
      namespace: defaultNamespace,
      identity: 'controller-0',
      log: createLogger('controller', 'silent'),
    },
    stop.signal,
  );
  return {
    api,
    requests,
    core: api.kubeConfig.makeApiClient(CoreV1Api),
    close: async () => {
      stop.abort();
      await done;
      await api.close();
    },
  };
}

const list = async (run: ControllerRun, plural: string) =>
  (
    (await run.api.kubeConfig
      .makeApiClient(CustomObjectsApi)
      .listClusterCustomObject({ group: 'strait.io', version: 'v1alpha1', plural })) as Listed
  ).items;

/** The StraitGateway's active gateway, or undefined before the controller wrote it. */
const activeGateway = async (run: ControllerRun) =>
  ((await list(run, 'straitgateways')).find((o) => o.metadata.name === 'cluster-a')?.spec.activeGateway as { name: string } | undefined)
    ?.name;

/**
 * The controller's writes since `from` (an index into the request log), as "METHOD path": everything
 * but reads, its leader Lease's renewals, and the Node writes the test makes as a kubelet.
 */
const writesSince = (run: ControllerRun, from: number) =>
  run.requests.lines
    .slice(from)
    .filter(
      (l) =>
        l.msg === 'request' &&
        l.method !== 'GET' &&
        !String(l.path).startsWith('/apis/coordination.k8s.io/') &&
        !String(l.path).startsWith('/api/v1/nodes'),
    )
    .map((l) => `${String(l.method)} ${String(l.path)}`);

/** Ten reconciles (interval 0.1 s) after the change has been seen: whatever they would write is written. */
const settle = () => sleep(1_000);

const node = (i: number) => ({
  name: `n${i}`,
  underlayAddress: `192.168.1.${i}`,
  podCIDR: `10.0.${i}.0/24`,
  publicAddress: `203.0.113.${i}`,
});

describe('controller on Kubernetes: what a Node added, changed or removed writes (lab API server, real client)', function () {
  this.timeout(60_000);
  let run: ControllerRun;

  before(async () => {
    run = await controllerRun(3);
  });
  after(async () => run.close());

  const dataplanes = () => list(run, 'nodedataplanes');

  it("writes the new Node's NodeDataplane and the StraitGateway (a new standby) for a Node added to three, nothing for a heartbeat, one object for a worker's new address, one delete for a worker removed, the StraitGateway alone for the gateway removed", async () => {
    const { api, core, requests } = run;
    await waitFor('three NodeDataplanes', async () => (await dataplanes()).length === 3, 20_000);
    await settle();
    const [first] = await dataplanes();
    assert.equal(first!.spec.nodes, undefined, 'a NodeDataplane lists no nodes');
    assert.equal(first!.spec.activeGateway, undefined, 'a NodeDataplane names no gateway');
    assert.equal(await activeGateway(run), 'n1');

    let mark = requests.lines.length;
    await registerNode(core, node(4));
    await waitFor("n4's NodeDataplane", async () => (await dataplanes()).some((o) => o.metadata.name === 'n4'));
    await settle();
    // n4 is a gateway candidate too: it joins the StraitGateway's standbys (and the peers' NetworkConfigs, on their API servers).
    assert.deepEqual(writesSince(run, mark).sort(), [
      'PATCH /apis/strait.io/v1alpha1/nodedataplanes/n4',
      'PATCH /apis/strait.io/v1alpha1/straitgateways/cluster-a',
    ]);

    mark = requests.lines.length;
    for (const n of ['n1', 'n2', 'n3', 'n4']) await nodeStatusHeartbeat(core, n);
    await settle();
    assert.deepEqual(writesSince(run, mark), [], 'a status heartbeat of every Node writes nothing');

    // Another writer (a person, a policy engine) marks n3's NodeDataplane; the controller's next write keeps the marks.
    const marks = {
      labels: { 'team.example.com/owner': 'net' },
      annotations: { 'example.com/ticket': 'NET-42' },
      finalizers: ['example.com/audit'],
    };
    await api.kubeConfig
      .makeApiClient(CustomObjectsApi)
      .patchClusterCustomObject(
        { group: 'strait.io', version: 'v1alpha1', plural: 'nodedataplanes', name: 'n3', body: { metadata: marks }, fieldManager: 'ops' },
        setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
      );
    mark = requests.lines.length;
    await core.patchNodeStatus(
      { name: 'n3', body: { status: { addresses: [{ type: 'InternalIP', address: '192.168.1.33' }] } } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    await waitFor(
      "n3's new address",
      async () =>
        ((await dataplanes()).find((o) => o.metadata.name === 'n3')!.spec.node as { underlayAddress: string }).underlayAddress ===
        '192.168.1.33',
    );
    await settle();
    assert.deepEqual(
      writesSince(run, mark),
      ['PATCH /apis/strait.io/v1alpha1/nodedataplanes/n3'],
      "a worker's address is in its own object only",
    );
    const n3 = (await dataplanes()).find((o) => o.metadata.name === 'n3')!;
    assert.equal(n3.metadata.labels['team.example.com/owner'], 'net');
    assert.equal(n3.metadata.annotations?.['example.com/ticket'], 'NET-42');
    assert.deepEqual(n3.metadata.finalizers, ['example.com/audit']);
    assert.deepEqual(
      n3.metadata.managedFields.map((m) => `${m.manager} ${m.operation}`),
      ['strait-controller Apply', 'ops Update'],
      'the controller owns what it applies, the other writer its marks',
    );

    mark = requests.lines.length;
    await core.deleteNode({ name: 'n4' });
    await waitFor("n4's NodeDataplane deleted", async () => !(await dataplanes()).some((o) => o.metadata.name === 'n4'));
    await settle();
    assert.deepEqual(writesSince(run, mark).sort(), [
      'DELETE /apis/strait.io/v1alpha1/nodedataplanes/n4',
      'PATCH /apis/strait.io/v1alpha1/straitgateways/cluster-a',
    ]);

    // The gateway's Node removed: the gateway moves to n2, which the StraitGateway alone names.
    mark = requests.lines.length;
    await core.deleteNode({ name: 'n1' });
    await waitFor("n2 the gateway, n1's object deleted", async () => {
      const names = (await dataplanes()).map((o) => o.metadata.name).join();
      return names === 'n2,n3' && (await activeGateway(run)) === 'n2';
    });
    await settle();
    assert.deepEqual(
      writesSince(run, mark).sort(),
      [
        'DELETE /apis/strait.io/v1alpha1/nodedataplanes/n1',
        'PATCH /apis/strait.io/v1alpha1/straitgateways/cluster-a',
        'POST /apis/events.k8s.io/v1/namespaces/default/events',
      ],
      'the GatewayMoved Event, the StraitGateway, and no other NodeDataplane',
    );
  });
});

describe('controller on Kubernetes: the gateway an earlier controller chose (lab API server, real client)', function () {
  this.timeout(60_000);

  it('keeps the gateway a controller from before the StraitGateway named in the NodeDataplanes, and writes it to the StraitGateway', async () => {
    // What such a controller left: every NodeDataplane naming the gateway (n2; the name order would pick n1).
    const run = await controllerRun(3, async (api) => {
      for (const name of ['n1', 'n2', 'n3'])
        await api.kubeConfig.makeApiClient(CustomObjectsApi).createClusterCustomObject({
          group: 'strait.io',
          version: 'v1alpha1',
          plural: 'nodedataplanes',
          body: {
            apiVersion: 'strait.io/v1alpha1',
            kind: 'NodeDataplane',
            metadata: { name, labels: { 'app.kubernetes.io/managed-by': 'strait-controller', 'strait.io/cluster-id': 'cluster-a' } },
            spec: {
              ...nodeObject({ ...nodeSpecDocument([]), node: { name, underlayAddress: '192.0.2.1' } }).spec,
              activeGateway: { name: 'n2', underlayAddress: '192.168.1.2' },
            },
          },
        });
    });
    try {
      await waitFor('the StraitGateway', async () => (await activeGateway(run)) !== undefined, 20_000);
      assert.equal(await activeGateway(run), 'n2');
    } finally {
      await run.close();
    }
  });
});

describe('controller on Kubernetes: what a gateway move writes at 10 and 100 nodes (lab API server, real client)', function () {
  this.timeout(120_000);
  for (const count of [10, 100]) {
    it(`${count} nodes: the gateway's Node removed moves the gateway with its NodeDataplane's delete, the StraitGateway and the Event: three writes`, async () => {
      const run = await controllerRun(count);
      try {
        await waitFor(`${count} NodeDataplanes`, async () => (await list(run, 'nodedataplanes')).length === count, 60_000);
        await waitFor('a gateway', async () => (await activeGateway(run)) !== undefined);
        await settle();
        const before = (await activeGateway(run))!;
        const mark = run.requests.lines.length;
        await run.core.deleteNode({ name: before });
        await waitFor('the gateway moved', async () => ![before, undefined].includes(await activeGateway(run)), 20_000);
        await settle();
        assert.deepEqual(writesSince(run, mark).sort(), [
          `DELETE /apis/strait.io/v1alpha1/nodedataplanes/${before}`,
          'PATCH /apis/strait.io/v1alpha1/straitgateways/cluster-a',
          'POST /apis/events.k8s.io/v1/namespaces/default/events',
        ]);
      } finally {
        await run.close();
      }
    });
  }
});
