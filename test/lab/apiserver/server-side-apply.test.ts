/**
 * Server-side apply on the lab API server, driven by the real kubectl 1.31 (`apply --server-side`,
 * `--field-manager`, `--force-conflicts`, and its move from client-side apply) and by
 * @kubernetes/client-node 1.4.0 (PatchStrategy.ServerSideApply): objects created and changed by
 * apply, managedFields recorded for every write (manager from `fieldManager`, else the User-Agent),
 * list items merged by key, dropped fields removed, conflicts refused with kube-apiserver's 409, and
 * every request the real server refuses refused with its answer (the source next to each).
 */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { AppsV1Api, CoreV1Api, CustomObjectsApi, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { type RawAnswer, type TestApiServer, apiFailure, rawRequest, startTestApiServer } from '../../support/apiserver';
import { kubectl as runKubectl } from '../../support/k8s-tools';

type Json = Record<string, any>;

const applyHeaders = { 'Content-Type': 'application/apply-patch+yaml' };
const answered = (a: RawAnswer) => ({ code: a.code, status: JSON.parse(a.body) as Json });
const failure = (code: number, reason: string, message: string, details?: Json) => ({
  code,
  status: {
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message,
    ...(reason ? { reason } : {}),
    ...(details ? { details } : {}),
    code,
  },
});

/** Each manager's owned fields (FieldsV1), operation and subresource. */
const managers = (object: Json) =>
  (object.metadata.managedFields as Json[]).map((m) => ({
    manager: m.manager,
    operation: m.operation,
    ...(m.subresource ? { subresource: m.subresource } : {}),
    fieldsV1: m.fieldsV1,
  }));

/** `managers`' entries in the order of their names. */
const byManager = (entries: ReturnType<typeof managers>) => [...entries].sort((a, b) => String(a.manager).localeCompare(String(b.manager)));

const configMapYaml = (data: Record<string, string>, labels = '') => `apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  namespace: default
${labels}data:
${Object.entries(data)
  .map(([k, v]) => `  ${k}: "${v}"`)
  .join('\n')}
`;

const deploymentYaml = (containers: string) => `apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: default}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
${containers}`;

/** A CRD whose lists are a list-map (by name), a set and atomic, as structural schemas declare them. */
const widgetCrd = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget, listKind: WidgetList}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              ports:
                type: array
                x-kubernetes-list-type: map
                x-kubernetes-list-map-keys: [name]
                items: {type: object, required: [name], properties: {name: {type: string}, port: {type: integer}}}
              tags: {type: array, x-kubernetes-list-type: set, items: {type: string}}
              hosts: {type: array, items: {type: string}}
          status:
            type: object
            properties:
              phase: {type: string}
`;

describe('lab API server: server-side apply and managedFields (kubectl 1.31, client-node 1.4.0)', function () {
  this.timeout(30_000);
  let t: TestApiServer;
  let core: CoreV1Api;

  const kubectl = (...args: string[]) => runKubectl(t.kubeconfigPath, t.dir, ...args);
  const file = (name: string, text: string) => {
    const path = join(t.dir, name);
    writeFileSync(path, text);
    return path;
  };
  const getJson = async (...what: string[]) =>
    JSON.parse((await kubectl('get', ...what, '-o', 'json', '--show-managed-fields')).stdout) as Json;
  const applyRaw = (path: string, body: string, query = 'fieldManager=test') =>
    rawRequest(t, 'PATCH', `${path}?${query}`, { body, headers: applyHeaders });

  beforeEach(async () => {
    t = await startTestApiServer();
    core = t.kubeConfig.makeApiClient(CoreV1Api);
  });
  afterEach(async () => t.close());

  it('creates with kubectl apply --server-side, owns exactly the applied fields, and removes a field it stops applying', async () => {
    const path = file('cm.yaml', configMapYaml({ a: '1', b: '2' }, '  labels: {app: web}\n'));
    assert.deepEqual(await kubectl('apply', '--server-side', '-f', path), {
      code: 0,
      stdout: 'configmap/settings serverside-applied\n',
      stderr: '',
    });
    const created = await getJson('configmap', 'settings');
    // An applier's set is its configuration's leaves (tofieldset.go): no `.` on maps, no name or namespace (stripmeta.go).
    assert.deepEqual(managers(created), [
      {
        manager: 'kubectl',
        operation: 'Apply',
        fieldsV1: { 'f:data': { 'f:a': {}, 'f:b': {} }, 'f:metadata': { 'f:labels': { 'f:app': {} } } },
      },
    ]);
    assert.equal(created.metadata.managedFields[0].apiVersion, 'v1');
    assert.equal(created.metadata.managedFields[0].fieldsType, 'FieldsV1');
    assert.match(created.metadata.managedFields[0].time, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    // merge/update.go prune: what the manager applied before and no longer applies goes.
    writeFileSync(path, configMapYaml({ a: '1' }));
    assert.equal((await kubectl('apply', '--server-side', '-f', path)).code, 0);
    const after = await getJson('configmap', 'settings');
    assert.deepEqual([after.data, after.metadata.labels], [{ a: '1' }, undefined]);
    // The same configuration again is no write (no new resourceVersion).
    assert.equal((await kubectl('apply', '--server-side', '-f', path)).code, 0);
    assert.equal((await getJson('configmap', 'settings')).metadata.resourceVersion, after.metadata.resourceVersion);
  });

  it("refuses with kube-apiserver's 409 a change of a field another manager owns; --force-conflicts takes it; the same value is shared", async () => {
    const path = file('cm.yaml', configMapYaml({ a: '1', b: '2' }));
    await kubectl('apply', '--server-side', '-f', path);
    assert.equal((await kubectl('patch', 'configmap', 'settings', '--type', 'merge', '-p', '{"data":{"a":"9","c":"3"}}')).code, 0);
    const conflicted = await kubectl('apply', '--server-side', '-f', path);
    assert.equal(conflicted.code, 1);
    // internal/conflict.go: one conflict, the updater named with its apiVersion.
    assert.match(conflicted.stderr, /^error: Apply failed with 1 conflict: conflict with "kubectl-patch" using v1: \.data\.a\n/);
    const raw = await applyRaw(
      '/api/v1/namespaces/default/configmaps/settings',
      JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'settings' }, data: { a: '1', c: '1' } }),
      'fieldManager=kubectl',
    );
    assert.deepEqual(
      answered(raw),
      failure(409, 'Conflict', 'Apply failed with 2 conflicts: conflicts with "kubectl-patch" using v1:\n- .data.a\n- .data.c', {
        causes: [
          { reason: 'FieldManagerConflict', message: 'conflict with "kubectl-patch" using v1', field: '.data.a' },
          { reason: 'FieldManagerConflict', message: 'conflict with "kubectl-patch" using v1', field: '.data.c' },
        ],
      }),
    );
    assert.equal((await kubectl('apply', '--server-side', '--force-conflicts', '-f', path)).code, 0);
    const forced = await getJson('configmap', 'settings');
    assert.deepEqual(forced.data, { a: '1', b: '2', c: '3' });
    assert.deepEqual(managers(forced), [
      { manager: 'kubectl', operation: 'Apply', fieldsV1: { 'f:data': { 'f:a': {}, 'f:b': {} } } },
      { manager: 'kubectl-patch', operation: 'Update', fieldsV1: { 'f:data': { 'f:c': {} } } },
    ]);
    // A second applier setting the value already there shares the field: no conflict, and it stays when kubectl drops it.
    const shared = file('shared.yaml', configMapYaml({ c: '3' }));
    assert.equal((await kubectl('apply', '--server-side', '--field-manager', 'helm', '-f', shared)).code, 0);
    writeFileSync(path, configMapYaml({ a: '1' }));
    assert.equal((await kubectl('apply', '--server-side', '-f', path)).code, 0);
    assert.deepEqual((await getJson('configmap', 'settings')).data, { a: '1', c: '3' });
  });

  it("merges containers, ports and env by key: another manager's container and env var survive kubectl's apply", async () => {
    const mine = file(
      'web.yaml',
      deploymentYaml(`      - name: app
        image: nginx:1
        ports: [{containerPort: 80}]
        env: [{name: A, value: "1"}]
`),
    );
    assert.equal((await kubectl('apply', '--server-side', '-f', mine)).code, 0);
    // A second manager adds a sidecar and an env var of the app container (client-node, as a controller would).
    const apps = t.kubeConfig.makeApiClient(AppsV1Api);
    await apps.patchNamespacedDeployment(
      {
        name: 'web',
        namespace: 'default',
        fieldManager: 'injector',
        body: {
          apiVersion: 'apps/v1',
          kind: 'Deployment',
          metadata: { name: 'web' },
          spec: {
            template: {
              spec: {
                containers: [
                  { name: 'app', env: [{ name: 'B', value: '2' }] },
                  { name: 'sidecar', image: 'envoy' },
                ],
              },
            },
          },
        },
      },
      setHeaderOptions('Content-Type', PatchStrategy.ServerSideApply),
    );
    writeFileSync(
      mine,
      deploymentYaml(`      - name: app
        image: nginx:2
        ports: [{containerPort: 80}]
`),
    );
    assert.equal((await kubectl('apply', '--server-side', '-f', mine)).code, 0);
    const web = await getJson('deployment', 'web');
    assert.deepEqual(web.spec.template.spec.containers, [
      { name: 'app', image: 'nginx:2', ports: [{ containerPort: 80 }], env: [{ name: 'B', value: '2' }] },
      { name: 'sidecar', image: 'envoy' },
    ]);
    const injector = managers(web).find((m) => m.manager === 'injector')!;
    assert.deepEqual(injector.fieldsV1['f:spec']['f:template']['f:spec']['f:containers'], {
      'k:{"name":"app"}': { '.': {}, 'f:env': { 'k:{"name":"B"}': { '.': {}, 'f:name': {}, 'f:value': {} } }, 'f:name': {} },
      'k:{"name":"sidecar"}': { '.': {}, 'f:image': {}, 'f:name': {} },
    });
    // A port keyed without its protocol takes the default TCP (ContainerPort's +default).
    const kubectlSet = managers(web).find((m) => m.manager === 'kubectl')!;
    assert.deepEqual(Object.keys(kubectlSet.fieldsV1['f:spec']['f:template']['f:spec']['f:containers']['k:{"name":"app"}']['f:ports']), [
      'k:{"containerPort":80,"protocol":"TCP"}',
    ]);
  });

  it("merges a custom resource's lists as its CRD declares them (map by key, set, atomic) and applies status through /status", async () => {
    assert.equal((await kubectl('apply', '--server-side', '-f', file('crd.yaml', widgetCrd))).code, 0);
    const widget = (spec: Json) => ({ apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name: 'w' }, spec });
    const path = '/apis/example.com/v1/namespaces/default/widgets/w';
    assert.equal(
      (await applyRaw(path, JSON.stringify(widget({ ports: [{ name: 'a', port: 1 }], tags: ['x'], hosts: ['h1'] })), 'fieldManager=one'))
        .code,
      201,
    );
    const two = await applyRaw(
      path,
      JSON.stringify(widget({ ports: [{ name: 'b', port: 2 }], tags: ['y'], hosts: ['h2'] })),
      'fieldManager=two&force=true',
    );
    assert.equal(two.code, 200);
    assert.deepEqual((JSON.parse(two.body) as Json).spec, {
      ports: [
        { name: 'a', port: 1 },
        { name: 'b', port: 2 },
      ],
      tags: ['x', 'y'],
      hosts: ['h2'],
    });
    // Status through the status subresource: the manager is recorded with subresource "status" and owns only status.
    const custom = t.kubeConfig.makeApiClient(CustomObjectsApi);
    const status = (await custom.patchNamespacedCustomObjectStatus(
      {
        group: 'example.com',
        version: 'v1',
        namespace: 'default',
        plural: 'widgets',
        name: 'w',
        fieldManager: 'agent',
        body: { apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name: 'w' }, status: { phase: 'Ready' } },
      },
      setHeaderOptions('Content-Type', PatchStrategy.ServerSideApply),
    )) as Json;
    assert.equal(status.status.phase, 'Ready');
    assert.deepEqual(
      managers(status).find((m) => m.manager === 'agent'),
      { manager: 'agent', operation: 'Apply', subresource: 'status', fieldsV1: { 'f:status': { 'f:phase': {} } } },
    );
    // The object's endpoint owns no status: one's status in a configuration is neither written nor owned.
    const one = await applyRaw(
      path,
      JSON.stringify({ ...widget({ ports: [{ name: 'a', port: 1 }] }), status: { phase: 'Gone' } }),
      'fieldManager=one',
    );
    const oneBody = JSON.parse(one.body) as Json;
    assert.equal(oneBody.status.phase, 'Ready');
    assert.deepEqual(managers(oneBody).find((m) => m.manager === 'one')?.fieldsV1, {
      'f:spec': { 'f:ports': { 'k:{"name":"a"}': { '.': {}, 'f:name': {}, 'f:port': {} } } },
    });
  });

  it('records every write: create and update by User-Agent product or fieldManager, an Update entry per manager, a reset by an empty list', async () => {
    const post = await rawRequest(t, 'POST', '/api/v1/namespaces/default/configmaps', {
      body: JSON.stringify({ metadata: { name: 'c', labels: { a: 'b' } }, data: { k: 'v' } }),
      headers: { 'Content-Type': 'application/json', 'User-Agent': 'strait-lab/0.1 (linux)' },
    });
    const created = JSON.parse(post.body) as Json;
    // handlers/rest.go prefixFromUserAgent; an updater that added a map owns it with "." (compare.go).
    assert.deepEqual(managers(created), [
      {
        manager: 'strait-lab',
        operation: 'Update',
        fieldsV1: { 'f:data': { '.': {}, 'f:k': {} }, 'f:metadata': { 'f:labels': { '.': {}, 'f:a': {} } } },
      },
    ]);
    const replaced = await core.replaceNamespacedConfigMap({
      name: 'c',
      namespace: 'default',
      fieldManager: 'editor',
      body: { metadata: { name: 'c', labels: { a: 'b' } }, data: { k: 'w' } },
    });
    // managedfields.go sortEncodedManagedFields: by operation, then the second of the write, then the
    // manager; the two writes may fall in one second or two, so the order is compared by manager.
    assert.deepEqual(byManager(managers(replaced as Json)), [
      { manager: 'editor', operation: 'Update', fieldsV1: { 'f:data': { 'f:k': {} } } },
      { manager: 'strait-lab', operation: 'Update', fieldsV1: { 'f:data': {}, 'f:metadata': { 'f:labels': { '.': {}, 'f:a': {} } } } },
    ]);
    // fieldmanager.go isResetManagedFields: `[{}]` forgets every manager; the same request's changes go to its own.
    const reset = await rawRequest(t, 'PATCH', '/api/v1/namespaces/default/configmaps/c?fieldManager=resetter', {
      body: JSON.stringify([{ op: 'replace', path: '/metadata/managedFields', value: [{}] }]),
      headers: { 'Content-Type': 'application/json-patch+json' },
    });
    assert.equal((JSON.parse(reset.body) as Json).metadata.managedFields, undefined);
    // managedFields a client sends are honoured (kubectl rewrites them moving from client-side apply).
    const sent = [{ manager: 'mine', operation: 'Apply', apiVersion: 'v1', fieldsType: 'FieldsV1', fieldsV1: { 'f:data': { 'f:k': {} } } }];
    const rewritten = await rawRequest(t, 'PATCH', '/api/v1/namespaces/default/configmaps/c', {
      body: JSON.stringify({ metadata: { managedFields: sent } }),
      headers: { 'Content-Type': 'application/merge-patch+json' },
    });
    assert.deepEqual(managers(JSON.parse(rewritten.body) as Json), [
      { manager: 'mine', operation: 'Apply', fieldsV1: { 'f:data': { 'f:k': {} } } },
    ]);
  });

  it("moves kubectl's client-side apply to server-side apply (kubectl's managedFields upgrade), keeping the annotation in step", async () => {
    const path = file('cm.yaml', configMapYaml({ a: '1', b: '2' }));
    assert.equal((await kubectl('apply', '-f', path)).code, 0);
    assert.equal(managers(await getJson('configmap', 'settings'))[0]?.manager, 'kubectl-client-side-apply');
    writeFileSync(path, configMapYaml({ a: '1' }));
    assert.deepEqual(await kubectl('apply', '--server-side', '-f', path), {
      code: 0,
      stdout: 'configmap/settings serverside-applied\n',
      stderr: '',
    });
    const moved = await getJson('configmap', 'settings');
    assert.deepEqual(moved.data, { a: '1' });
    assert.deepEqual(
      managers(moved).map((m) => `${m.manager}/${m.operation}`),
      ['kubectl/Apply', 'kubectl-last-applied/Apply'],
    );
    // lastappliedupdater.go: kubectl's apply keeps the client-side annotation at what it applied.
    assert.deepEqual(JSON.parse(moved.metadata.annotations['kubectl.kubernetes.io/last-applied-configuration'] as string), {
      apiVersion: 'v1',
      data: { a: '1' },
      kind: 'ConfigMap',
      metadata: { name: 'settings', namespace: 'default' },
    });
  });

  it('refuses what kube-apiserver refuses: options, a configuration of another kind or name, managedFields, a body that is no map', async () => {
    await core.createNamespacedConfigMap({ namespace: 'default', body: { metadata: { name: 'c' } } });
    const path = '/api/v1/namespaces/default/configmaps/c';
    const config = (extra: Json = {}) => JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c' }, ...extra });
    const required = 'Required value: is required for apply patch';
    // meta/v1/validation ValidatePatchOptions: an apply needs a fieldManager; force is for apply only.
    assert.deepEqual(
      answered(await applyRaw(path, config(), '')),
      failure(422, 'Invalid', `PatchOptions.meta.k8s.io "" is invalid: fieldManager: ${required}`, {
        group: 'meta.k8s.io',
        kind: 'PatchOptions',
        causes: [{ reason: 'FieldValueRequired', message: required, field: 'fieldManager' }],
      }),
    );
    const merge = await rawRequest(t, 'PATCH', `${path}?force=false`, {
      body: '{}',
      headers: { 'Content-Type': 'application/merge-patch+json' },
    });
    assert.equal(
      answered(merge).status.message,
      'PatchOptions.meta.k8s.io "" is invalid: force: Forbidden: may not be specified for non-apply patch',
    );
    // ValidateFieldManager: at most 128 bytes, printable; on every write's options.
    assert.equal(
      answered(await applyRaw(path, config(), `fieldManager=${'m'.repeat(129)}`)).status.message,
      'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Too long: may not be more than 128 bytes',
    );
    const tab = await rawRequest(t, 'POST', '/api/v1/namespaces/default/configmaps?fieldManager=a%09b', {
      body: JSON.stringify({ metadata: { name: 'd' } }),
      headers: { 'Content-Type': 'application/json' },
    });
    assert.deepEqual(
      [tab.code, answered(tab).status.message],
      [422, 'CreateOptions.meta.k8s.io "" is invalid: fieldManager: Invalid value: "a\\tb": invalid character U+0009 (at position 1)'],
    );
    // versioncheck.go, structuredmerge.go, rest.go checkName: 400 BadRequest.
    assert.deepEqual(
      answered(await applyRaw(path, JSON.stringify({ apiVersion: 'apps/v1', kind: 'ConfigMap', metadata: { name: 'c' } }))),
      failure(400, 'BadRequest', 'invalid object type: apps/v1, Kind=ConfigMap'),
    );
    assert.deepEqual(
      answered(await applyRaw(path, config({ metadata: { name: 'c', managedFields: [] } }))),
      failure(400, 'BadRequest', 'metadata.managedFields must be nil'),
    );
    assert.deepEqual(
      answered(await applyRaw(path, config({ metadata: { name: 'other' } }))),
      failure(400, 'BadRequest', 'the name of the object (other) does not match the name on the URL (c)'),
    );
    assert.deepEqual(
      answered(await applyRaw(path, config({ metadata: { name: 'c', namespace: 'kube-system' } }))),
      failure(400, 'BadRequest', 'the namespace of the object (kube-system) does not match the namespace on the URL (default)'),
    );
    // applyPatcher: sigs.k8s.io/yaml into a map.
    assert.deepEqual(
      answered(await applyRaw(path, '- a\n- b\n')),
      failure(
        400,
        'BadRequest',
        'error decoding YAML: error unmarshaling JSON: while decoding JSON: json: cannot unmarshal array into Go value of type map[string]interface {}',
      ),
    );
    // structuredmerge.go: a list-map item without its key cannot be typed, a plain error: 500 without a reason
    // (kubernetes/kubernetes#122480 shows the real server's answer).
    const keyless = await applyRaw(
      '/apis/apps/v1/namespaces/default/deployments/web',
      JSON.stringify({
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        metadata: { name: 'web' },
        spec: { template: { spec: { containers: [{ image: 'x' }] } } },
      }),
    );
    assert.deepEqual(
      answered(keyless),
      failure(
        500,
        '',
        'failed to create typed patch object (/web; apps/v1, Kind=Deployment): .spec.template.spec.containers: element 0: associative list with keys has an element that omits key field "name" (and doesn\'t have default value)',
      ),
    );
    // An apply through a status subresource does not create (patch.go: only the main resource creates on apply).
    const missing = await apiFailure(
      t.kubeConfig.makeApiClient(CustomObjectsApi).patchClusterCustomObjectStatus(
        {
          group: 'strait.io',
          version: 'v1alpha1',
          plural: 'nodedataplanes',
          name: 'none',
          fieldManager: 'agent',
          body: { apiVersion: 'strait.io/v1alpha1', kind: 'NodeDataplane', metadata: { name: 'none' } },
        },
        setHeaderOptions('Content-Type', PatchStrategy.ServerSideApply),
      ),
    );
    assert.equal(missing.code, 404);
  });
});
