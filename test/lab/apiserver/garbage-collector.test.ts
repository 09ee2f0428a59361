/**
 * Owner references on the lab API server, as kube-controller-manager's garbage collector treats them
 * (pkg/controller/garbagecollector; kubernetes.io "Owners and Dependents", "Garbage Collection"): an
 * owner deleted takes its dependents with it (background propagation, a Pod on a node gracefully), a
 * dependent another owner still holds only loses the reference, `propagationPolicy: Orphan` keeps them
 * all, `Foreground` keeps the owner until its blocking dependents are gone, and a cluster-scoped dependent
 * of a namespaced owner is never collected (a Warning Event OwnerRefInvalidNamespace says why).
 */
import assert from 'node:assert/strict';
import { AppsV1Api, CoreV1Api, CustomObjectsApi, PatchStrategy, type V1OwnerReference, setHeaderOptions } from '@kubernetes/client-node';
import { type TestApiServer, startTestApiServer } from '../../support/apiserver';
import { waitFor } from '../../support/wait';

describe('lab API server: garbage collection of dependents', function () {
  this.timeout(30_000);
  let t: TestApiServer;
  let core: CoreV1Api;
  let apps: AppsV1Api;
  beforeEach(async () => {
    t = await startTestApiServer();
    core = t.kubeConfig.makeApiClient(CoreV1Api);
    apps = t.kubeConfig.makeApiClient(AppsV1Api);
  });
  afterEach(async () => t.close());

  const labels = { app: 'web' };
  const statefulSet = async (name: string) =>
    apps.createNamespacedStatefulSet({
      namespace: 'default',
      body: {
        metadata: { name },
        spec: {
          serviceName: name,
          selector: { matchLabels: labels },
          template: { metadata: { labels }, spec: { containers: [{ name: 'c', image: 'i' }] } },
        },
      },
    });
  const ownedBy = (owner: { metadata?: { name?: string; uid?: string } }, kind = 'StatefulSet'): V1OwnerReference => ({
    apiVersion: 'apps/v1',
    kind,
    name: owner.metadata!.name!,
    uid: owner.metadata!.uid!,
    controller: true,
  });
  const pod = (name: string, owners: V1OwnerReference[], nodeName?: string) =>
    core.createNamespacedPod({
      namespace: 'default',
      body: {
        metadata: { name, ownerReferences: owners },
        spec: { ...(nodeName ? { nodeName } : {}), containers: [{ name: 'c', image: 'i' }] },
      },
    });
  const pods = async () => (await core.listNamespacedPod({ namespace: 'default' })).items;

  it('deletes the dependents of a deleted owner, a Pod on a node gracefully, and keeps one another owner holds', async () => {
    const web = await statefulSet('web');
    const other = await statefulSet('other');
    await pod('web-0', [ownedBy(web)]);
    await pod('web-1', [ownedBy(web)], 'node-a');
    await pod('shared', [ownedBy(web), ownedBy(other)]);
    await apps.deleteNamespacedStatefulSet({ name: 'web', namespace: 'default' });
    await waitFor('web-0 gone', async () => !(await pods()).some((p) => p.metadata!.name === 'web-0'), 5_000);
    const left = await pods();
    const terminating = left.find((p) => p.metadata!.name === 'web-1');
    assert.ok(terminating?.metadata?.deletionTimestamp, 'web-1 (on a node) is Terminating, not gone');
    const shared = left.find((p) => p.metadata!.name === 'shared')!;
    assert.deepEqual(
      shared.metadata!.ownerReferences!.map((r) => r.name),
      ['other'],
    );
  });

  it('keeps the dependents of an owner deleted with propagationPolicy Orphan, without the reference', async () => {
    const web = await statefulSet('web');
    await pod('web-0', [ownedBy(web)]);
    await apps.deleteNamespacedStatefulSet({ name: 'web', namespace: 'default', body: { propagationPolicy: 'Orphan' } });
    await new Promise((r) => setTimeout(r, 200));
    const [orphan] = await pods();
    assert.equal(orphan?.metadata!.name, 'web-0');
    assert.equal(orphan?.metadata!.ownerReferences, undefined);
  });

  it('never collects a cluster-scoped dependent of a namespaced owner, and says so in a Warning Event', async () => {
    const web = await statefulSet('web');
    const custom = t.kubeConfig.makeApiClient(CustomObjectsApi);
    const pools = { group: 'strait.io', version: 'v1alpha1', plural: 'straitippools' };
    await custom.createClusterCustomObject({
      ...pools,
      body: {
        apiVersion: 'strait.io/v1alpha1',
        kind: 'StraitIPPool',
        metadata: { name: 'auto-web', ownerReferences: [ownedBy(web)] },
        spec: { subnet: '192.0.2.0/24', ips: ['192.0.2.10-192.0.2.20'] },
      },
    });
    await apps.deleteNamespacedStatefulSet({ name: 'web', namespace: 'default' });
    await waitFor(
      'the Warning Event',
      async () => (await core.listNamespacedEvent({ namespace: 'default' })).items.some((e) => e.reason === 'OwnerRefInvalidNamespace'),
      5_000,
    );
    assert.ok(await custom.getClusterCustomObject({ ...pools, name: 'auto-web' }), 'the StraitIPPool is still there');
  });

  // pkg/controller/garbagecollector/garbagecollector.go processDeletingDependentsItem, attemptToDeleteItem;
  // apiserver/pkg/registry/rest/delete.go (the finalizer `foregroundDeletion`); kubernetes.io "Garbage
  // Collection", "Foreground cascading deletion".
  it('keeps an owner deleted in the foreground, held by foregroundDeletion, until its blocking dependents are gone', async () => {
    const web = await statefulSet('web');
    const blocking = { ...ownedBy(web), blockOwnerDeletion: true };
    // One dependent a finalizer of its own holds, one that blocks nothing, one with a dependent of its own.
    await core.createNamespacedPod({
      namespace: 'default',
      body: {
        metadata: { name: 'held', ownerReferences: [blocking], finalizers: ['example.com/hold'] },
        spec: { containers: [{ name: 'c', image: 'i' }] },
      },
    });
    await pod('free', [ownedBy(web)]);
    const parent = await core.createNamespacedConfigMap({
      namespace: 'default',
      body: { metadata: { name: 'parent', ownerReferences: [blocking] } },
    });
    await core.createNamespacedConfigMap({
      namespace: 'default',
      body: {
        metadata: {
          name: 'child',
          ownerReferences: [{ apiVersion: 'v1', kind: 'ConfigMap', name: 'parent', uid: parent.metadata!.uid!, blockOwnerDeletion: true }],
        },
      },
    });
    await apps.deleteNamespacedStatefulSet({ name: 'web', namespace: 'default', body: { propagationPolicy: 'Foreground' } });
    const configMaps = async () =>
      (await core.listNamespacedConfigMap({ namespace: 'default' })).items
        .map((c) => c.metadata!.name)
        .filter((n) => n !== 'kube-root-ca.crt');
    await waitFor(
      'free, parent and child gone',
      async () => !(await pods()).some((p) => p.metadata!.name === 'free') && (await configMaps()).length === 0,
      5_000,
    );
    const owner = await apps.readNamespacedStatefulSet({ name: 'web', namespace: 'default' });
    assert.deepEqual(owner.metadata!.finalizers, ['foregroundDeletion'], 'held while a blocking dependent is there');
    assert.ok(owner.metadata!.deletionTimestamp, 'marked for deletion');
    const held = (await pods()).find((p) => p.metadata!.name === 'held')!;
    assert.ok(held.metadata!.deletionTimestamp, 'the held dependent is being deleted');
    // Its own finalizer removed, the dependent goes, and the owner with it.
    await core.patchNamespacedPod(
      { name: 'held', namespace: 'default', body: [{ op: 'remove', path: '/metadata/finalizers' }] },
      setHeaderOptions('Content-Type', PatchStrategy.JsonPatch),
    );
    await waitFor('the owner gone', async () => (await apps.listNamespacedStatefulSet({ namespace: 'default' })).items.length === 0, 5_000);
  });

  it('deletes an owner without dependents in the foreground at once', async () => {
    await statefulSet('web');
    await apps.deleteNamespacedStatefulSet({ name: 'web', namespace: 'default', body: { propagationPolicy: 'Foreground' } });
    await waitFor('the owner gone', async () => (await apps.listNamespacedStatefulSet({ namespace: 'default' })).items.length === 0, 5_000);
  });
});
