/**
 * CustomResourceDefinitions on the lab API server started as a new cluster, as kube-apiserver's
 * apiextensions registry treats them (k8s.io/apiextensions-apiserver, release-1.31): validated
 * (pkg/apis/apiextensions/validation/validation.go), served once created with the status helm waits for
 * (pkg/controller/establish), changed in place by an update, and deleted after their custom resources
 * (pkg/controller/finalizer/crd_finalizer.go). And the protobuf bodies helm's client sends
 * (k8s.io/apimachinery/pkg/runtime/serializer/protobuf), read as the real server reads them.
 */
import assert from 'node:assert/strict';
import { ApiextensionsV1Api, CoreV1Api, CustomObjectsApi, type V1CustomResourceDefinition } from '@kubernetes/client-node';
import { parse } from 'yaml';
import { crdFiles } from '../../../src/api/write-crds';
import { encodeProtobuf, protobufMediaType } from '../../../lab/src/apiserver/protobuf';
import { type TestApiServer, apiFailure, rawRequest, startTestApiServer } from '../../support/apiserver';
import { kubectl } from '../../support/k8s-tools';
import { widgetCrd } from '../../support/widget-crd';

describe('lab API server: CustomResourceDefinitions as a new cluster serves them, and protobuf bodies', function () {
  this.timeout(30_000);
  let t: TestApiServer;
  let crds: ApiextensionsV1Api;
  let custom: CustomObjectsApi;
  beforeEach(async () => {
    t = await startTestApiServer({ crdsInstalled: false });
    crds = t.kubeConfig.makeApiClient(ApiextensionsV1Api);
    custom = t.kubeConfig.makeApiClient(CustomObjectsApi);
  });
  afterEach(async () => t.close());

  const widgets = { group: 'example.com', version: 'v1', plural: 'widgets' };
  const widget = (name: string, spec: Record<string, unknown> = { size: 1 }, finalizers?: string[]) =>
    custom.createClusterCustomObject({
      ...widgets,
      body: { apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name, ...(finalizers ? { finalizers } : {}) }, spec },
    });
  const widgetNames = async () =>
    ((await custom.listClusterCustomObject(widgets)) as { items: { metadata: { name: string } }[] }).items.map((w) => w.metadata.name);

  // validation.go ValidateCustomResourceDefinitionSpec and ValidateCustomResourceDefinition: the name is
  // `<plural>.<group>`, the group a domain, exactly one storage version, a schema for each version.
  it('refuses a CRD that breaks the apiextensions rules, naming each field and value, and stores nothing', async () => {
    const cases: [V1CustomResourceDefinition, { field: string; message: string }][] = [
      [
        widgetCrd({ name: 'gadgets.example.com' }),
        { field: 'metadata.name', message: 'Invalid value: "gadgets.example.com": must be spec.names.plural+"."+spec.group' },
      ],
      [
        widgetCrd({ group: 'example' }),
        { field: 'spec.group', message: 'Invalid value: "example": should be a domain with at least one dot' },
      ],
    ];
    for (const [crd, cause] of cases) {
      const refused = await apiFailure(crds.createCustomResourceDefinition({ body: crd }));
      assert.equal(refused.code, 422, crd.metadata!.name);
      assert.deepEqual(refused.status.details.causes, [{ reason: 'FieldValueInvalid', ...cause }]);
    }
    const twoStorage = await apiFailure(crds.createCustomResourceDefinition({ body: widgetCrd({ storage: [true, true] }) }));
    assert.equal(twoStorage.code, 422);
    assert.match(twoStorage.status.message, /spec\.versions: Invalid value: .*must have exactly one version marked as storage version/);
    const noSchema = widgetCrd();
    delete noSchema.spec.versions[0]!.schema;
    const schemaless = await apiFailure(crds.createCustomResourceDefinition({ body: noSchema }));
    assert.deepEqual(schemaless.status.details.causes, [
      { reason: 'FieldValueRequired', message: 'Required value: schemas are required', field: 'spec.versions[0].schema.openAPIV3Schema' },
    ]);
    assert.deepEqual((await crds.listCustomResourceDefinition()).items, []);
  });

  it('serves a created CRD at once, Established, with an update changing its schema in place and its group immutable', async () => {
    assert.equal((await apiFailure(widget('early'))).code, 404);
    await crds.createCustomResourceDefinition({ body: widgetCrd() });
    const stored = await crds.readCustomResourceDefinition({ name: 'widgets.example.com' });
    assert.deepEqual(
      stored.status!.conditions!.map((c) => `${c.type}=${c.status}`),
      ['NamesAccepted=True', 'Established=True'],
    );
    assert.deepEqual(stored.status!.storedVersions, ['v1']);
    const waited = await kubectl(
      t.kubeconfigPath,
      t.dir,
      'wait',
      '--for',
      'condition=established',
      '--timeout=10s',
      'crd/widgets.example.com',
    );
    assert.equal(waited.code, 0, waited.stderr);

    await widget('a', { size: 1, colour: 'red' });
    assert.deepEqual(((await custom.getClusterCustomObject({ ...widgets, name: 'a' })) as { spec: object }).spec, { size: 1 });
    await crds.replaceCustomResourceDefinition({
      name: 'widgets.example.com',
      body: { ...widgetCrd({ extraField: 'colour' }), metadata: stored.metadata },
    });
    await widget('b', { size: 2, colour: 'blue' });
    assert.deepEqual(((await custom.getClusterCustomObject({ ...widgets, name: 'b' })) as { spec: object }).spec, {
      size: 2,
      colour: 'blue',
    });

    const current = await crds.readCustomResourceDefinition({ name: 'widgets.example.com' });
    const regrouped = await apiFailure(
      crds.replaceCustomResourceDefinition({
        name: 'widgets.example.com',
        body: { ...current, spec: { ...current.spec, group: 'example.org' } },
      }),
    );
    assert.equal(regrouped.code, 422);
    assert.ok(
      regrouped.status.details.causes.some(
        (c: { field: string; message: string }) => c.field === 'spec.group' && /field is immutable/.test(c.message),
      ),
      JSON.stringify(regrouped.status),
    );
  });

  // crd_finalizer.go: a deleted CRD is Terminating (finalizer customresourcecleanup.apiextensions.k8s.io)
  // while its custom resources are deleted; one a finalizer of its own holds keeps it until released.
  it('deletes a CRD after its custom resources, Terminating while a finalizer holds one of them', async () => {
    await crds.createCustomResourceDefinition({ body: widgetCrd() });
    await widget('plain');
    await widget('held', { size: 3 }, ['example.com/hold']);
    await crds.deleteCustomResourceDefinition({ name: 'widgets.example.com' });
    const terminating = await crds.readCustomResourceDefinition({ name: 'widgets.example.com' });
    assert.ok(terminating.metadata!.deletionTimestamp);
    assert.deepEqual(terminating.metadata!.finalizers, ['customresourcecleanup.apiextensions.k8s.io']);
    assert.deepEqual(await widgetNames(), ['held']);

    await custom.patchClusterCustomObject({ ...widgets, name: 'held', body: [{ op: 'remove', path: '/metadata/finalizers' }] });
    for (const deadline = Date.now() + 5_000; Date.now() < deadline; await new Promise((r) => setTimeout(r, 20))) {
      if ((await crds.listCustomResourceDefinition()).items.length === 0) break;
    }
    assert.deepEqual((await crds.listCustomResourceDefinition()).items, []);
    assert.equal((await apiFailure(custom.listClusterCustomObject(widgets))).code, 404);

    // Created again, the CRD starts empty: the widgets went with it, not only out of sight.
    await crds.createCustomResourceDefinition({ body: widgetCrd() });
    assert.deepEqual(await widgetNames(), []);
  });

  // rest.BeforeDelete (registry/rest/delete.go) and ValidateObjectMetaUpdate (apimachinery objectmeta.go):
  // a deletion a finalizer holds is a new generation, and the object takes no new finalizer after.
  it('counts the start of a held deletion as a generation, and refuses a finalizer added after it', async () => {
    await crds.createCustomResourceDefinition({ body: widgetCrd() });
    await widget('held', { size: 1 }, ['example.com/hold']);
    await custom.deleteClusterCustomObject({ ...widgets, name: 'held' });
    const marked = (await custom.getClusterCustomObject({ ...widgets, name: 'held' })) as { metadata: Record<string, any> };
    assert.ok(marked.metadata.deletionTimestamp);
    assert.equal(marked.metadata.generation, 2);
    const added = await apiFailure(
      custom.replaceClusterCustomObject({
        ...widgets,
        name: 'held',
        body: { ...marked, metadata: { ...marked.metadata, finalizers: ['example.com/hold', 'example.com/late'] } },
      }),
    );
    assert.equal(added.code, 422);
    assert.deepEqual(added.status.details.causes, [
      {
        reason: 'FieldValueForbidden',
        message:
          'Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers []string{"example.com/late"}',
        field: 'metadata.finalizers',
      },
    ]);
  });

  it("installs the chart's CRDs (the YAML helm renders) and serves each strait.io resource", async () => {
    for (const text of crdFiles().values()) await crds.createCustomResourceDefinition({ body: parse(text) as V1CustomResourceDefinition });
    const resources = await kubectl(t.kubeconfigPath, t.dir, 'api-resources', '--api-group', 'strait.io', '-o', 'name');
    assert.deepEqual(resources.stdout.trim().split('\n').sort(), [...crdFiles().keys()].map((f) => f.replace(/\.yaml$/, '')).sort());
  });

  // Helm's release Secrets, and the DeleteOptions of its deletes, come as protobuf
  // (application/vnd.kubernetes.protobuf: `k8s\0` and a runtime.Unknown).
  describe('protobuf bodies', () => {
    const secret = {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'sh.helm.release.v1.strait.v1', namespace: 'default', labels: { owner: 'helm', version: '1' } },
      type: 'helm.sh/release.v1',
      data: { release: Buffer.from('H4sI...release').toString('base64') },
    };
    const post = (body: Buffer, path = '/api/v1/namespaces/default/secrets', contentType = protobufMediaType) =>
      rawRequest(t, 'POST', path, { headers: { 'Content-Type': contentType }, body });

    it('creates a Secret sent as protobuf, stored as the same JSON object would be', async () => {
      const created = await post(encodeProtobuf(secret));
      assert.equal(created.code, 201, created.body);
      const stored = await t.kubeConfig.makeApiClient(CoreV1Api).readNamespacedSecret({ name: secret.metadata.name, namespace: 'default' });
      assert.equal(stored.type, 'helm.sh/release.v1');
      assert.deepEqual(stored.metadata!.labels, secret.metadata.labels);
      assert.deepEqual(stored.data, secret.data);
    });

    it('honours the preconditions of protobuf DeleteOptions (a wrong uid is 409, nothing deleted)', async () => {
      assert.equal((await post(encodeProtobuf(secret))).code, 201);
      const path = `/api/v1/namespaces/default/secrets/${secret.metadata.name}`;
      const wrong = encodeProtobuf({ apiVersion: 'v1', kind: 'DeleteOptions', preconditions: { uid: 'not-its-uid' } });
      const refused = await rawRequest(t, 'DELETE', path, { headers: { 'Content-Type': protobufMediaType }, body: wrong });
      assert.equal(refused.code, 409, refused.body);
      const empty = encodeProtobuf({ apiVersion: 'v1', kind: 'DeleteOptions' });
      assert.equal((await rawRequest(t, 'DELETE', path, { headers: { 'Content-Type': protobufMediaType }, body: empty })).code, 200);
    });

    it('refuses a protobuf body it cannot read: 400 without the envelope, 415 for a kind it does not decode (naming what it reads)', async () => {
      const bare = await post(Buffer.from('not protobuf'));
      assert.equal(bare.code, 400);
      assert.match(JSON.parse(bare.body).message, /does not appear to be a protobuf message, expected prefix \[107 56 115 0\]/);
      const configMap = await post(encodeProtobuf(secret), '/api/v1/namespaces/default/configmaps');
      assert.equal(configMap.code, 415);
      assert.equal(
        JSON.parse(configMap.body).message,
        'the body of the request was in an unknown format - accepted media types include: application/json',
      );
      assert.deepEqual((await t.kubeConfig.makeApiClient(CoreV1Api).listNamespacedSecret({ namespace: 'default' })).items, []);
    });
  });
});
