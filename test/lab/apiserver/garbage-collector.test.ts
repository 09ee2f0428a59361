/**
 * Owner references on the lab API server, as kube-controller-manager's garbage collector treats them
 * (pkg/controller/garbagecollector; kubernetes.io "Owners and Dependents", "Garbage Collection"): an
 * owner deleted takes its dependents with it (background propagation, a Pod on a node gracefully), a
 * dependent another owner still holds only loses the reference, `propagationPolicy: Orphan` keeps them
 * all, and a cluster-scoped dependent of a namespaced owner is never collected (a Warning Event
 * OwnerRefInvalidNamespace says why).
 */
import assert from 'node:assert/strict';
import { AppsV1Api, CoreV1Api, CustomObjectsApi, type V1OwnerReference } from '@kubernetes/client-node';
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
    const pools = { group: 'strait.io', version: 'v1alpha1', plural: 'ippools' };
    await custom.createClusterCustomObject({
      ...pools,
      body: {
        apiVersion: 'strait.io/v1alpha1',
        kind: 'IPPool',
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
    assert.ok(await custom.getClusterCustomObject({ ...pools, name: 'auto-web' }), 'the IPPool is still there');
  });
});
