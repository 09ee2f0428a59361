/**
 * kube-apiserver's validation of the built-in kinds Strait writes, as the lab API server applies it,
 * driven by the real client: each rule cites its source in kubernetes/kubernetes (release-1.31) and is
 * checked both ways, refused as the real server refuses it and accepted as it accepts it.
 */
import assert from 'node:assert/strict';
import { CoreV1Api, type CoreV1Event } from '@kubernetes/client-node';
import { type TestApiServer, apiFailure, startTestApiServer } from '../../support/apiserver';
import { kubectl } from '../../support/k8s-tools';

describe('lab API server: built-in kinds validated as kube-apiserver validates them', function () {
  this.timeout(30_000);
  let t: TestApiServer;
  let core: CoreV1Api;
  before(async () => {
    t = await startTestApiServer();
    core = t.kubeConfig.makeApiClient(CoreV1Api);
    await core.createNamespace({ body: { metadata: { name: 'strait-system' } } });
  });
  after(async () => t.close());

  let n = 0;
  const event = (namespace: string, involvedNamespace?: string, eventTime?: Date): CoreV1Event => ({
    metadata: { name: `e${++n}`, namespace },
    involvedObject: { apiVersion: 'v1', kind: 'Node', name: 'n1', ...(involvedNamespace ? { namespace: involvedNamespace } : {}) },
    reason: 'Test',
    message: 'a test',
    type: 'Normal',
    ...(eventTime ? { eventTime, reportingComponent: 'strait.io/test', reportingInstance: 'test-1', action: 'Test' } : {}),
  });
  const names = async (namespace: string) => (await core.listNamespacedEvent({ namespace })).items.map((e) => e.metadata!.name);

  // pkg/apis/core/validation/events.go, legacyValidateEvent: without an eventTime, an Event about an
  // object with no namespace (a Node, a cluster-scoped custom resource) must be in `default` (or none),
  // else `involvedObject.namespace: Invalid value: "": does not match event.namespace`.
  it('refuses an Event about a cluster-scoped object outside `default`, naming involvedObject.namespace, and stores nothing', async () => {
    const refused = await apiFailure(core.createNamespacedEvent({ namespace: 'strait-system', body: event('strait-system') }));
    assert.equal(refused.code, 422);
    assert.equal(refused.status.reason, 'Invalid');
    assert.deepEqual(refused.status.details.causes, [
      { reason: 'FieldValueInvalid', message: 'Invalid value: "": does not match event.namespace', field: 'involvedObject.namespace' },
    ]);
    assert.deepEqual(await names('strait-system'), []);
    // A PUT that would create it (Events are created on update) is refused the same.
    const put = event('strait-system');
    const replaced = await apiFailure(core.replaceNamespacedEvent({ name: put.metadata!.name!, namespace: 'strait-system', body: put }));
    assert.equal(replaced.code, 422);
  });

  it('accepts the same Event in `default`', async () => {
    const created = await core.createNamespacedEvent({ namespace: 'default', body: event('default') });
    assert.deepEqual(await names('default'), [created.metadata!.name]);
  });

  it("refuses an Event about a namespaced object in another namespace, and accepts it in the object's own", async () => {
    const refused = await apiFailure(core.createNamespacedEvent({ namespace: 'default', body: event('default', 'strait-system') }));
    assert.equal(refused.code, 422);
    assert.equal(refused.status.details.causes[0].message, 'Invalid value: "strait-system": does not match event.namespace');
    await core.createNamespacedEvent({ namespace: 'strait-system', body: event('strait-system', 'strait-system') });
  });

  // The same function, with an eventTime (the events.k8s.io shape): `default` or `kube-system` only.
  it('accepts a new-style Event (eventTime set) about a cluster-scoped object in kube-system, and refuses it elsewhere', async () => {
    await core.createNamespacedEvent({ namespace: 'kube-system', body: event('kube-system', undefined, new Date()) });
    const refused = await apiFailure(
      core.createNamespacedEvent({ namespace: 'strait-system', body: event('strait-system', undefined, new Date()) }),
    );
    assert.equal(refused.code, 422);
  });

  // kubectl 1.31 describe (staging/src/k8s.io/kubectl/pkg/describe, searchEvents): an object's Events are
  // those whose involvedObject has its kind, name, namespace and uid: one without the uid is not shown.
  it("lets kubectl describe show an Event about a Node only when it carries the Node's uid", async () => {
    const node = await core.createNode({ body: { metadata: { name: 'n1' } } });
    const about = (reason: string, uid?: string): CoreV1Event => ({
      metadata: { name: `${reason.toLowerCase()}-event`, namespace: 'default' },
      involvedObject: { apiVersion: 'v1', kind: 'Node', name: 'n1', ...(uid ? { uid } : {}) },
      reason,
      message: 'about n1',
      type: 'Warning',
    });
    await core.createNamespacedEvent({ namespace: 'default', body: about('WithUid', node.metadata!.uid) });
    await core.createNamespacedEvent({ namespace: 'default', body: about('WithoutUid') });
    const described = await kubectl(t.kubeconfigPath, t.dir, 'describe', 'node', 'n1');
    assert.equal(described.code, 0, described.stderr);
    assert.match(described.stdout, /Warning\s+WithUid\s/);
    assert.doesNotMatch(described.stdout, /WithoutUid/);
  });
});
