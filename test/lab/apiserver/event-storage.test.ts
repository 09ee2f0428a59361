/**
 * core/v1 and events.k8s.io/v1 Events are one resource, as kube-apiserver stores them (one storage,
 * converted per request: pkg/apis/events/v1/conversion.go; registered together in
 * pkg/registry/core/event and pkg/registry/events): an Event written through either API is read,
 * listed and watched through both, with the fields renamed, and `kubectl describe` of the object an
 * events.k8s.io/v1 Event regards lists it, as on a real cluster.
 */
import assert from 'node:assert/strict';
import { CoreV1Api, type CoreV1Event, EventsV1Api, type EventsV1Event, V1MicroTime, Watch } from '@kubernetes/client-node';
import { kubectl } from '../../support/k8s-tools';
import { type TestApiServer, startTestApiServer } from '../../support/apiserver';
import { waitFor } from '../../support/wait';

/** The client's model objects as plain JSON. */
const plain = (value: unknown): unknown => JSON.parse(JSON.stringify(value));

/** An events.k8s.io/v1 Event of the controller, `name`, about Node `node` (with its uid when given). */
const nodeEvent = (name: string, node: string, what: { reason: string; note: string; type?: string; uid?: string }): EventsV1Event =>
  ({
    metadata: { name },
    eventTime: new V1MicroTime(),
    reportingController: 'strait.io/controller',
    reportingInstance: 'strait-controller-0',
    action: 'ReadNode',
    reason: what.reason,
    note: what.note,
    type: what.type ?? 'Warning',
    regarding: { apiVersion: 'v1', kind: 'Node', name: node, ...(what.uid ? { uid: what.uid } : {}) },
  }) as EventsV1Event;

describe('lab API server: core/v1 and events.k8s.io/v1 Events are one resource', function () {
  this.timeout(30_000);
  let t: TestApiServer;
  let core: CoreV1Api;
  let events: EventsV1Api;
  before(async () => {
    t = await startTestApiServer();
    core = t.kubeConfig.makeApiClient(CoreV1Api);
    events = t.kubeConfig.makeApiClient(EventsV1Api);
  });
  after(async () => t.close());

  it('an events.k8s.io/v1 Event is a core/v1 Event with its fields renamed, and back; one resourceVersion; deleted through either', async () => {
    const node = await core.createNode({ body: { metadata: { name: 'node-a' } } });
    const written = await events.createNamespacedEvent({
      namespace: 'default',
      body: nodeEvent('node-a.1', 'node-a', { reason: 'NodeNotUsable', note: 'node-a has no PodCIDR', uid: node.metadata!.uid! }),
    });
    const legacy = await core.readNamespacedEvent({ namespace: 'default', name: 'node-a.1' });
    assert.equal(legacy.metadata.resourceVersion, written.metadata!.resourceVersion);
    assert.deepEqual(
      plain({
        involvedObject: legacy.involvedObject,
        message: legacy.message,
        reportingComponent: legacy.reportingComponent,
        reportingInstance: legacy.reportingInstance,
        action: legacy.action,
        reason: legacy.reason,
        type: legacy.type,
      }),
      {
        involvedObject: { apiVersion: 'v1', kind: 'Node', name: 'node-a', uid: node.metadata!.uid! },
        message: 'node-a has no PodCIDR',
        reportingComponent: 'strait.io/controller',
        reportingInstance: 'strait-controller-0',
        action: 'ReadNode',
        reason: 'NodeNotUsable',
        type: 'Warning',
      },
    );
    assert.deepEqual(plain(legacy.eventTime), plain(written.eventTime));

    // The other way: a core/v1 Event read through events.k8s.io/v1.
    await core.createNamespacedEvent({
      namespace: 'default',
      body: {
        metadata: { name: 'node-a.2' },
        involvedObject: { kind: 'Node', name: 'node-a' },
        reason: 'Old',
        message: 'from a core/v1 recorder',
        source: { component: 'kubelet', host: 'node-a' },
        count: 3,
        firstTimestamp: new Date('2026-11-27T09:00:00Z'),
        lastTimestamp: new Date('2026-11-27T09:05:00Z'),
        type: 'Normal',
      } as CoreV1Event,
    });
    const modern = await events.readNamespacedEvent({ namespace: 'default', name: 'node-a.2' });
    assert.deepEqual(
      [
        modern.regarding?.name,
        modern.note,
        plain(modern.deprecatedSource),
        modern.deprecatedCount,
        modern.deprecatedFirstTimestamp?.toISOString(),
      ],
      ['node-a', 'from a core/v1 recorder', { component: 'kubelet', host: 'node-a' }, 3, '2026-11-27T09:00:00.000Z'],
    );
    assert.deepEqual((await events.listNamespacedEvent({ namespace: 'default' })).items.map((e) => e.metadata!.name).sort(), [
      'node-a.1',
      'node-a.2',
    ]);

    await core.deleteNamespacedEvent({ namespace: 'default', name: 'node-a.1' });
    assert.deepEqual(
      (await events.listNamespacedEvent({ namespace: 'default' })).items.map((e) => e.metadata!.name),
      ['node-a.2'],
    );
    await events.deleteNamespacedEvent({ namespace: 'default', name: 'node-a.2' });
    assert.deepEqual((await core.listNamespacedEvent({ namespace: 'default' })).items, []);
  });

  it('a core/v1 watch sees an Event written through events.k8s.io/v1, converted', async () => {
    const seen: CoreV1Event[] = [];
    const request = await new Watch(t.kubeConfig).watch(
      '/api/v1/namespaces/default/events',
      {},
      (type, object: CoreV1Event) => {
        if (type === 'ADDED') seen.push(object);
      },
      () => undefined,
    );
    try {
      await events.createNamespacedEvent({
        namespace: 'default',
        body: nodeEvent('node-b.1', 'node-b', { reason: 'GatewayElected', note: 'node-b is the gateway', type: 'Normal' }),
      });
      await waitFor('the Event in the core/v1 watch', () => seen.some((e) => e.metadata.name === 'node-b.1'));
      const event = seen.find((e) => e.metadata.name === 'node-b.1')!;
      assert.deepEqual([event.apiVersion, event.involvedObject.name, event.message], ['v1', 'node-b', 'node-b is the gateway']);
    } finally {
      request.abort();
    }
  });

  it("kubectl describe of a Node lists the events.k8s.io/v1 Events about it (found through core/v1's involvedObject field selectors)", async () => {
    const node = await core.createNode({ body: { metadata: { name: 'node-c' } } });
    await events.createNamespacedEvent({
      namespace: 'default',
      body: nodeEvent('node-c.1', 'node-c', { reason: 'NodeNotUsable', note: 'node-c has no InternalIP', uid: node.metadata!.uid! }),
    });
    const described = await kubectl(t.kubeconfigPath, t.dir, 'describe', 'node', 'node-c');
    assert.equal(described.code, 0, described.stderr);
    assert.match(
      described.stdout,
      /Events:\n\s+Type\s+Reason\s+Age\s+From\s+Message\n.*\n\s+Warning\s+NodeNotUsable\s+\S+\s+strait\.io\/controller\s+node-c has no InternalIP/,
    );
  });
});
