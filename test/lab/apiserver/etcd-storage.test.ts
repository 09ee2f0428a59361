/**
 * The lab API server on a real etcd (Debian's etcd-server, a child of the test), as kube-apiserver keeps
 * its objects: a resourceVersion is the etcd mod_revision of the object's key, a restarted server serves
 * the same objects at the same resourceVersions, a continue token etcd has compacted is a 410, a watch
 * from before a restart is a 410 that makes an informer relist, and a write on a stale version is a 409.
 * Each expectation names its kube-apiserver source (k8s.io/apiserver, under staging/src/k8s.io/apiserver
 * in kubernetes/kubernetes). Driven by client-node and kubectl; etcd is read with the etcd3 client.
 */
import assert from 'node:assert/strict';
import { ApiextensionsV1Api, CoreV1Api, CustomObjectsApi, PatchStrategy, Watch, setHeaderOptions } from '@kubernetes/client-node';
import { Etcd3 } from 'etcd3';
import { type TestApiServer, apiFailure, rawRequest, startTestApiServer } from '../../support/apiserver';
import { kubectl } from '../../support/k8s-tools';
import { widgetCrd } from '../../support/widget-crd';

type Json = Record<string, any>;

describe('lab API server: objects in etcd', function () {
  this.timeout(60_000);
  let t: TestApiServer;
  let core: CoreV1Api;
  let etcd: Etcd3;

  const configMap = (name: string, data: Record<string, string>) =>
    core.createNamespacedConfigMap({ namespace: 'default', body: { metadata: { name }, data } });
  const get = async (path: string) => {
    const answer = await rawRequest(t, 'GET', path);
    return { code: answer.code, body: JSON.parse(answer.body) as Json };
  };

  beforeEach(async () => {
    t = await startTestApiServer({ etcd: true, compactionIntervalMs: 200 });
    core = t.kubeConfig.makeApiClient(CoreV1Api);
    etcd = new Etcd3({ hosts: t.etcdUrl! });
  });
  afterEach(async () => {
    etcd.close();
    await t.close();
  });

  it('keeps each object at /registry/<resource>/<namespace>/<name>, its resourceVersion the key mod_revision, stored without it', async () => {
    const created = await configMap('settings', { mode: 'a' });
    const read = async () => (await etcd.get('/registry/configmaps/default/settings').exec()).kvs[0]!;
    // storage/etcd3/store.go Create: the key's value is the object with resourceVersion cleared
    // (APIObjectVersioner.PrepareObjectForStorage); storage/api_object_versioner.go UpdateObject: it reads
    // back as the key's mod_revision.
    let kv = await read();
    assert.equal(created.metadata!.resourceVersion, kv.mod_revision);
    let stored = JSON.parse(kv.value.toString()) as Json;
    assert.deepEqual(
      [stored.data, stored.metadata.resourceVersion, stored.metadata.uid],
      [{ mode: 'a' }, undefined, created.metadata!.uid],
    );

    const patched = await core.patchNamespacedConfigMap(
      { name: 'settings', namespace: 'default', body: { data: { mode: 'b' } } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    kv = await read();
    stored = JSON.parse(kv.value.toString()) as Json;
    assert.deepEqual([patched.metadata!.resourceVersion, stored.data], [kv.mod_revision, { mode: 'b' }]);
    // A cluster-scoped object's key has no namespace: /registry/namespaces/default.
    const ns = await core.readNamespace({ name: 'default' });
    assert.equal(ns.metadata!.resourceVersion, (await etcd.get('/registry/namespaces/default').exec()).kvs[0]!.mod_revision);

    await core.deleteNamespacedConfigMap({ name: 'settings', namespace: 'default' });
    assert.equal(await etcd.get('/registry/configmaps/default/settings'), null);
  });

  it('serves, once restarted, the same objects at the same resourceVersions, to kubectl and client-node', async () => {
    const created = await configMap('settings', { mode: 'a' });
    const before = await core.listNamespacedConfigMap({ namespace: 'default' });
    await t.stop();
    await t.start();
    // cacher.go: a starting kube-apiserver lists etcd and serves from its revision on, so objects and
    // resourceVersions are etcd's, whichever server instance answers.
    const read = await core.readNamespacedConfigMap({ name: 'settings', namespace: 'default' });
    assert.deepEqual(
      [read.metadata!.uid, read.metadata!.resourceVersion, read.data],
      [created.metadata!.uid, created.metadata!.resourceVersion, { mode: 'a' }],
    );
    const after = await core.listNamespacedConfigMap({ namespace: 'default' });
    assert.equal(after.metadata!.resourceVersion, before.metadata!.resourceVersion);
    const shown = await kubectl(t.kubeconfigPath, t.dir, 'get', 'configmap', 'settings', '-o', 'jsonpath={.metadata.resourceVersion}');
    assert.deepEqual(shown, { code: 0, stdout: created.metadata!.resourceVersion, stderr: '' });
    // The initial namespaces and RBAC defaults were there: the restart made none anew.
    const defaults = await core.readNamespace({ name: 'kube-system' });
    assert.ok(Number(defaults.metadata!.resourceVersion) < Number(created.metadata!.resourceVersion));
    // An update on the version read before the restart is no conflict (storage/etcd3/store.go GuaranteedUpdate).
    const replaced = await core.replaceNamespacedConfigMap({
      name: 'settings',
      namespace: 'default',
      body: { ...read, data: { mode: 'b' } },
    });
    assert.ok(Number(replaced.metadata!.resourceVersion) > Number(read.metadata!.resourceVersion));
  });

  it('goes on, once restarted, deleting a CRD a finalizer of one of its custom resources held', async () => {
    const crds = t.kubeConfig.makeApiClient(ApiextensionsV1Api);
    const widgets = { group: 'example.com', version: 'v1', plural: 'widgets' };
    await crds.createCustomResourceDefinition({ body: widgetCrd() });
    const body = { apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name: 'held', finalizers: ['example.com/hold'] }, spec: {} };
    await t.kubeConfig.makeApiClient(CustomObjectsApi).createClusterCustomObject({ ...widgets, body });
    await crds.deleteCustomResourceDefinition({ name: 'widgets.example.com' });
    await t.stop();
    await t.start();
    // pkg/controller/finalizer/crd_finalizer.go: the CRD's cleanup finalizer is work in etcd, which a
    // restarted server's finalizer controller picks up; the CRD goes once its last custom resource does.
    const custom = t.kubeConfig.makeApiClient(CustomObjectsApi);
    await custom.patchClusterCustomObject({ ...widgets, name: 'held', body: [{ op: 'remove', path: '/metadata/finalizers' }] });
    const left = async () => (await crds.listCustomResourceDefinition()).items.filter((c) => c.metadata!.name === 'widgets.example.com');
    for (const deadline = Date.now() + 5_000; (await left()).length > 0 && Date.now() < deadline;)
      await new Promise((r) => setTimeout(r, 50));
    assert.deepEqual(await left(), []);
  });

  it('answers a watch from before a restart, older than the watch cache, with 410 Expired; one from the list a restarted server made goes on', async () => {
    await configMap('first', { n: '1' });
    const old = (await core.listNamespacedConfigMap({ namespace: 'default' })).metadata!.resourceVersion!;
    await configMap('second', { n: '2' });
    await t.stop();
    await t.start();
    const watch = async (resourceVersion: string, until: (events: Json[]) => boolean) => {
      const events: Json[] = [];
      let request: AbortController | undefined;
      const ended = new Promise<void>((resolve) => {
        void new Watch(t.kubeConfig)
          .watch(
            '/api/v1/namespaces/default/configmaps',
            { resourceVersion },
            (type, object: Json) => {
              events.push({ type, name: object.metadata?.name, message: object.message, code: object.code });
              if (until(events)) request?.abort();
            },
            () => resolve(),
          )
          .then((r) => (request = r));
      });
      const timer = setTimeout(() => request?.abort(), 5000);
      return { events, ended: ended.finally(() => clearTimeout(timer)) };
    };
    // cacher/watch_cache.go getAllEventsSinceLocked: the restarted server's watch cache starts at the
    // revision it listed etcd at; a watch from before it is "too old resource version" (the informer relists).
    const tooOld = await watch(old, () => false);
    await tooOld.ended;
    const current = (await core.listNamespacedConfigMap({ namespace: 'default' })).metadata!.resourceVersion!;
    assert.deepEqual(tooOld.events, [
      { type: 'ERROR', name: undefined, message: `too old resource version: ${old} (${current})`, code: 410 },
    ]);

    const goesOn = await watch(current, (events) => events.length === 1);
    await new Promise((r) => setTimeout(r, 200));
    await configMap('third', { n: '3' });
    await goesOn.ended;
    assert.deepEqual(goesOn.events, [{ type: 'ADDED', name: 'third', message: undefined, code: undefined }]);
  });

  it('answers a continue token etcd has compacted with 410 Expired, and one that goes on inconsistently', async () => {
    for (const name of ['cm-a', 'cm-b', 'cm-c']) await configMap(name, {});
    const first = await get('/api/v1/namespaces/default/configmaps?limit=1');
    await configMap('cm-d', {});
    // storage/etcd3/compact.go: every interval, etcd is compacted to the revision of the previous tick;
    // storage/etcd3/errors.go handleCompactedErrorForPaging: a page at a compacted revision is a 410.
    let page = await get(`/api/v1/namespaces/default/configmaps?limit=1&continue=${first.body.metadata.continue}`);
    for (const deadline = Date.now() + 10_000; page.code === 200 && Date.now() < deadline; await new Promise((r) => setTimeout(r, 100)))
      page = await get(`/api/v1/namespaces/default/configmaps?limit=1&continue=${first.body.metadata.continue}`);
    assert.deepEqual([page.code, page.body.reason], [410, 'Expired']);
    const rest = await get(`/api/v1/namespaces/default/configmaps?continue=${page.body.metadata.continue}`);
    assert.deepEqual(
      rest.body.items.map((i: Json) => i.metadata.name),
      ['cm-b', 'cm-c', 'cm-d'],
    );
    // storage/etcd3/errors.go interpretListError: an exact list at a compacted revision is a 410 too.
    const exact = await get(
      `/api/v1/namespaces/default/configmaps?resourceVersion=${first.body.metadata.resourceVersion}&resourceVersionMatch=Exact`,
    );
    assert.deepEqual(
      [exact.code, exact.body.reason, exact.body.message],
      [410, 'Expired', 'The resourceVersion for the provided list is too old.'],
    );
  });

  it('answers 409 to a write on a stale resourceVersion and to the loser of two updates of the same version', async () => {
    const created = await configMap('settings', { mode: 'a' });
    const replace = (mode: string) =>
      core.replaceNamespacedConfigMap({ name: 'settings', namespace: 'default', body: { ...created, data: { mode } } });
    // storage/etcd3/store.go GuaranteedUpdate: the update's precondition is its resourceVersion; of two
    // on the same one, the first to etcd wins, the other is "the object has been modified".
    const outcomes = await Promise.allSettled([replace('b'), replace('c')]);
    assert.deepEqual(outcomes.map((o) => o.status).sort(), ['fulfilled', 'rejected']);
    const stale = await apiFailure(replace('d'));
    assert.deepEqual(
      [stale.code, stale.status.reason, stale.status.message],
      [
        409,
        'Conflict',
        'Operation cannot be fulfilled on configmaps "settings": the object has been modified; please apply your changes to the latest version and try again',
      ],
    );
    // storage/etcd3/store.go Create: a key that exists is storage.NewKeyExistsError, 409 AlreadyExists.
    const again = await apiFailure(configMap('settings', {}));
    assert.deepEqual([again.code, again.status.reason], [409, 'AlreadyExists']);
  });

  it('sees a write another etcd client makes, through its watch, and refuses an update on the version it replaced', async () => {
    const created = await configMap('settings', { mode: 'a' });
    const object = { ...created, metadata: { ...created.metadata, resourceVersion: undefined }, data: { mode: 'outside' } };
    await etcd.put('/registry/configmaps/default/settings').value(JSON.stringify(object));
    const revision = (await etcd.get('/registry/configmaps/default/settings').exec()).kvs[0]!.mod_revision;
    // cacher.go: the cache follows etcd's watch, whoever wrote.
    let read = await core.readNamespacedConfigMap({ name: 'settings', namespace: 'default' });
    for (const deadline = Date.now() + 5000; read.metadata!.resourceVersion !== revision && Date.now() < deadline;)
      read = await core.readNamespacedConfigMap({ name: 'settings', namespace: 'default' });
    assert.deepEqual([read.metadata!.resourceVersion, read.data], [revision, { mode: 'outside' }]);
    const stale = await apiFailure(
      core.replaceNamespacedConfigMap({ name: 'settings', namespace: 'default', body: { ...created, data: { mode: 'b' } } }),
    );
    assert.equal(stale.code, 409);
  });
});
