/**
 * kube-apiserver's validation and defaulting of the built-in kinds Strait, helm and kubectl write, as the
 * lab API server applies them, driven by the real clients: each rule cites its source in
 * kubernetes/kubernetes (release-1.31) and is checked both ways, refused as the real server refuses it
 * (422, the field and the value) and accepted once mended.
 */
import assert from 'node:assert/strict';
import { CoreV1Api, type CoreV1Event } from '@kubernetes/client-node';
import { type TestApiServer, apiFailure, rawRequest, startTestApiServer } from '../../support/apiserver';
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

/** One rule of one kind: a body refused (its first cause) and the same body mended, accepted. */
interface Rule {
  source: string;
  path: string;
  refused: Record<string, unknown>;
  cause: { field: string; message: string | RegExp };
  accepted: Record<string, unknown>;
}

const labels = { app: 'strait' };
const workload = (kind: string, spec: Record<string, unknown>) => ({ apiVersion: 'apps/v1', kind, metadata: { name: 'w' }, spec });
const podTemplate = (containers: unknown[], templateLabels: Record<string, string> = labels) => ({
  metadata: { labels: templateLabels },
  spec: { containers },
});
const binding = (kind: string, roleRef: Record<string, unknown>, subjects: unknown[]) => ({
  apiVersion: 'rbac.authorization.k8s.io/v1',
  kind,
  metadata: { name: 'b' },
  roleRef,
  subjects,
});

const service = (spec: Record<string, unknown>, name = 's') => ({ metadata: { name }, spec: { selector: labels, ...spec } });
const port = (fields: Record<string, unknown> = {}) => ({ name: 'metrics', port: 9090, ...fields });
const services = '/api/v1/namespaces/default/services';

const rules: Rule[] = [
  {
    source: 'apimachinery pkg/apis/meta/v1/validation ValidateLabels (IsQualifiedName)',
    path: '/api/v1/namespaces/default/configmaps',
    refused: { metadata: { name: 'c', labels: { 'bad key': 'v' } } },
    cause: { field: 'metadata.labels', message: /^Invalid value: "bad key": name part must consist of alphanumeric characters/ },
    accepted: { metadata: { name: 'c', labels: { 'strait.io/good-key': 'v' } } },
  },
  {
    source: 'apimachinery pkg/apis/meta/v1/validation ValidateLabels (IsValidLabelValue)',
    path: '/api/v1/namespaces/default/configmaps',
    refused: { metadata: { name: 'c', labels: { k: 'x'.repeat(64) } } },
    cause: { field: 'metadata.labels', message: /must be no more than 63 characters$/ },
    accepted: { metadata: { name: 'c', labels: { k: 'x'.repeat(63) } } },
  },
  {
    source: 'apimachinery pkg/api/validation ValidateAnnotations (256 KiB in all)',
    path: '/api/v1/namespaces/default/configmaps',
    refused: { metadata: { name: 'c', annotations: { a: 'x'.repeat(256 * 1024) } } },
    cause: { field: 'metadata.annotations', message: 'Too long: must have at most 262144 bytes' },
    accepted: { metadata: { name: 'c', annotations: { a: 'x'.repeat(1024) } } },
  },
  {
    source: 'pkg/apis/core/validation ValidateConfigMap (IsConfigMapKey)',
    path: '/api/v1/namespaces/default/configmaps',
    refused: { metadata: { name: 'c' }, data: { 'a/b': 'v' } },
    cause: { field: 'data[a/b]', message: /^Invalid value: "a\/b": a valid config key must consist of alphanumeric characters/ },
    accepted: { metadata: { name: 'c' }, data: { 'a.b': 'v' } },
  },
  {
    source: 'pkg/apis/core/validation ValidateSecret (a service account token names its ServiceAccount)',
    path: '/api/v1/namespaces/default/secrets',
    refused: { metadata: { name: 's' }, type: 'kubernetes.io/service-account-token' },
    cause: { field: 'metadata.annotations[kubernetes.io/service-account.name]', message: 'Required value' },
    accepted: { metadata: { name: 's' }, type: 'Opaque' },
  },
  {
    source: 'pkg/apis/coordination/validation ValidateLeaseSpec',
    path: '/apis/coordination.k8s.io/v1/namespaces/default/leases',
    refused: { metadata: { name: 'l' }, spec: { leaseDurationSeconds: 0 } },
    cause: { field: 'spec.leaseDurationSeconds', message: 'Invalid value: 0: must be greater than 0' },
    accepted: { metadata: { name: 'l' }, spec: { leaseDurationSeconds: 4 } },
  },
  {
    source: 'pkg/apis/apps/validation ValidateDaemonSetSpec (the selector selects the template)',
    path: '/apis/apps/v1/namespaces/default/daemonsets',
    refused: workload('DaemonSet', { selector: { matchLabels: { app: 'other' } }, template: podTemplate([{ name: 'c', image: 'i' }]) }),
    cause: {
      field: 'spec.template.metadata.labels',
      message: 'Invalid value: {"app":"strait"}: `selector` does not match template `labels`',
    },
    accepted: workload('DaemonSet', { selector: { matchLabels: labels }, template: podTemplate([{ name: 'c', image: 'i' }]) }),
  },
  {
    source: 'pkg/apis/apps/validation ValidateDeploymentSpec (a selector), ValidatePodTemplateSpec (an image)',
    path: '/apis/apps/v1/namespaces/default/deployments',
    refused: workload('Deployment', { template: podTemplate([{ name: 'c', image: 'i' }]) }),
    cause: { field: 'spec.selector', message: 'Required value' },
    accepted: workload('Deployment', { selector: { matchLabels: labels }, template: podTemplate([{ name: 'c', image: 'i' }]) }),
  },
  {
    source: 'pkg/apis/apps/validation ValidatePodTemplateSpec (each container has an image)',
    path: '/apis/apps/v1/namespaces/default/deployments',
    refused: workload('Deployment', { selector: { matchLabels: labels }, template: podTemplate([{ name: 'c' }]) }),
    cause: { field: 'spec.template.spec.containers[0].image', message: 'Required value' },
    accepted: workload('Deployment', { selector: { matchLabels: labels }, template: podTemplate([{ name: 'c', image: 'i' }]) }),
  },
  {
    source: 'pkg/apis/rbac/validation ValidatePolicyRule',
    path: '/apis/rbac.authorization.k8s.io/v1/namespaces/default/roles',
    refused: { metadata: { name: 'r' }, rules: [{ apiGroups: [''], resources: ['pods'], verbs: [] }] },
    cause: { field: 'rules[0].verbs', message: 'Required value: verbs must contain at least one value' },
    accepted: { metadata: { name: 'r' }, rules: [{ apiGroups: [''], resources: ['pods'], verbs: ['get'] }] },
  },
  {
    source: 'pkg/apis/rbac/validation ValidateRoleBinding (a ClusterRoleBinding names a ClusterRole)',
    path: '/apis/rbac.authorization.k8s.io/v1/clusterrolebindings',
    refused: binding('ClusterRoleBinding', { kind: 'Role', name: 'r' }, [{ kind: 'User', name: 'alice' }]),
    cause: { field: 'roleRef.kind', message: 'Unsupported value: "Role": supported values: "ClusterRole"' },
    accepted: binding('ClusterRoleBinding', { kind: 'ClusterRole', name: 'r' }, [{ kind: 'User', name: 'alice' }]),
  },
  {
    source: 'pkg/apis/rbac/validation ValidateRoleBindingSubject (a ServiceAccount of a ClusterRoleBinding has a namespace)',
    path: '/apis/rbac.authorization.k8s.io/v1/clusterrolebindings',
    refused: binding('ClusterRoleBinding', { kind: 'ClusterRole', name: 'r' }, [{ kind: 'ServiceAccount', name: 'sa' }]),
    cause: { field: 'subjects[0].namespace', message: 'Required value' },
    accepted: binding('ClusterRoleBinding', { kind: 'ClusterRole', name: 'r' }, [
      { kind: 'ServiceAccount', name: 'sa', namespace: 'default' },
    ]),
  },
  {
    source: 'pkg/apis/core/validation ValidateServiceAccount (ValidateServiceAccountName: a DNS subdomain)',
    path: '/api/v1/namespaces/default/serviceaccounts',
    refused: { metadata: { name: 'strait_agent' } },
    cause: { field: 'metadata.name', message: /^Invalid value: "strait_agent": a lowercase RFC 1123 subdomain must consist of/ },
    accepted: { metadata: { name: 'strait-agent' } },
  },
  {
    source: 'pkg/apis/core/validation ValidateNamespace (ValidateNamespaceName: a DNS label)',
    path: '/api/v1/namespaces',
    refused: { metadata: { name: 'strait.system' } },
    cause: { field: 'metadata.name', message: /^Invalid value: "strait.system": a lowercase RFC 1123 label must consist of/ },
    accepted: { metadata: { name: 'strait-system-2' } },
  },
  {
    source: 'pkg/apis/core/validation ValidateService (ValidateServiceName: a DNS-1035 label)',
    path: services,
    refused: service({ ports: [port()] }, '9-metrics'),
    cause: {
      field: 'metadata.name',
      message: `Invalid value: "9-metrics": a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')`,
    },
    accepted: service({ ports: [port()] }, 'metrics-9'),
  },
  {
    source: 'pkg/apis/core/validation ValidateService (ports, unless headless or ExternalName)',
    path: services,
    refused: service({}),
    cause: { field: 'spec.ports', message: 'Required value' },
    accepted: service({ clusterIP: 'None' }),
  },
  {
    source: 'pkg/apis/core/validation validateServicePort (a name for each of several ports)',
    path: services,
    refused: service({ ports: [port(), { port: 9091 }] }),
    cause: { field: 'spec.ports[1].name', message: 'Required value' },
    accepted: service({ ports: [port(), port({ name: 'health', port: 9091 })] }),
  },
  {
    source: 'pkg/apis/core/validation validateServicePort (IsValidPortNum)',
    path: services,
    refused: service({ ports: [port({ port: 70000 })] }),
    cause: { field: 'spec.ports[0].port', message: 'Invalid value: 70000: must be between 1 and 65535, inclusive' },
    accepted: service({ ports: [port({ port: 7000 })] }),
  },
  {
    source: 'pkg/apis/core/validation validateServicePort (supportedPortProtocols)',
    path: services,
    refused: service({ ports: [port({ protocol: 'HTTP' })] }),
    cause: { field: 'spec.ports[0].protocol', message: 'Unsupported value: "HTTP": supported values: "SCTP", "TCP", "UDP"' },
    accepted: service({ ports: [port({ protocol: 'UDP' })] }),
  },
  {
    source: 'pkg/apis/core/validation ValidatePortNumOrName (IsValidPortName: a container port name)',
    path: services,
    refused: service({ ports: [port({ targetPort: 'metrics_port' })] }),
    cause: {
      field: 'spec.ports[0].targetPort',
      message: 'Invalid value: "metrics_port": must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)',
    },
    accepted: service({ ports: [port({ targetPort: 'metrics' })] }),
  },
  {
    source: 'pkg/apis/core/validation ValidateService (no two ports by protocol and port)',
    path: services,
    refused: service({ ports: [port(), port({ name: 'again' })] }),
    cause: {
      field: 'spec.ports[1]',
      message:
        'Duplicate value: core.ServicePort{Name:"", Protocol:"TCP", AppProtocol:(*string)(nil), Port:9090, TargetPort:intstr.IntOrString{Type:0, IntVal:0, StrVal:""}, NodePort:0}',
    },
    accepted: service({ ports: [port(), port({ name: 'again', protocol: 'UDP' })] }),
  },
  {
    source: 'pkg/apis/core/validation ValidateService (the selector is labels: ValidateLabels)',
    path: services,
    refused: { metadata: { name: 's' }, spec: { selector: { 'app name': 'x' }, ports: [port()] } },
    cause: { field: 'spec.selector', message: /^Invalid value: "app name": name part must consist of alphanumeric characters/ },
    accepted: { metadata: { name: 's' }, spec: { selector: { 'app.kubernetes.io/name': 'x' }, ports: [port()] } },
  },
  {
    source: 'pkg/apis/core/validation ValidateService (supportedServiceType)',
    path: services,
    refused: service({ type: 'Internal', ports: [port()] }),
    cause: {
      field: 'spec.type',
      message: 'Unsupported value: "Internal": supported values: "ClusterIP", "ExternalName", "LoadBalancer", "NodePort"',
    },
    accepted: service({ type: 'ClusterIP', ports: [port()] }),
  },
  {
    source: "pkg/apis/core/validation ValidateService (no nodePort when `type` is 'ClusterIP')",
    path: services,
    refused: service({ ports: [port({ nodePort: 30090 })] }),
    cause: { field: 'spec.ports[0].nodePort', message: "Forbidden: may not be used when `type` is 'ClusterIP'" },
    accepted: service({ type: 'NodePort', ports: [port({ nodePort: 30090 })] }),
  },
  {
    source: 'pkg/apis/core/validation ValidateService (a NodePort Service may not be headless)',
    path: services,
    refused: service({ type: 'NodePort', clusterIP: 'None', ports: [port({ nodePort: 30091 })] }),
    cause: { field: 'spec.clusterIPs[0]', message: `Invalid value: "None": may not be set to 'None' for NodePort services` },
    accepted: service({ type: 'NodePort', ports: [port({ nodePort: 30091 })] }),
  },
  {
    source: 'pkg/registry/core/service/storage/alloc.go allocIPs (a cluster IP in --service-cluster-ip-range, 10.96.0.0/12)',
    path: services,
    refused: service({ clusterIP: '192.168.0.10', ports: [port()] }),
    cause: {
      field: 'spec.clusterIPs',
      message:
        'Invalid value: []string{"192.168.0.10"}: failed to allocate IP 192.168.0.10: the provided IP (192.168.0.10) is not in the valid range. The range of valid IPs is 10.96.0.0/12',
    },
    accepted: service({ clusterIP: '10.96.0.10', ports: [port()] }),
  },
  {
    source: 'pkg/registry/core/service/storage/alloc.go initIPFamilyFields (a single-stack cluster)',
    path: services,
    refused: service({ ipFamilyPolicy: 'RequireDualStack', ports: [port()] }),
    cause: {
      field: 'spec.ipFamilyPolicy',
      message: 'Invalid value: "RequireDualStack": this cluster is not configured for dual-stack services',
    },
    accepted: service({ ipFamilyPolicy: 'PreferDualStack', ports: [port()] }),
  },
];

describe('lab API server: built-in kinds, each rule as kube-apiserver has it (release-1.31)', function () {
  this.timeout(30_000);
  let t: TestApiServer;
  beforeEach(async () => (t = await startTestApiServer()));
  afterEach(async () => t.close());

  const post = async (path: string, body: object) => {
    const answer = await rawRequest(t, 'POST', path, { body: JSON.stringify(body), headers: { 'Content-Type': 'application/json' } });
    return { code: answer.code, status: JSON.parse(answer.body) as Record<string, any> };
  };

  for (const rule of rules) {
    it(`${rule.source}: refused naming ${rule.cause.field}, nothing stored; accepted once mended`, async () => {
      const list = async () => (await rawRequest(t, 'GET', rule.path)).body.replace(/"resourceVersion":"\d+"/, '');
      const before = await list();
      const refused = await post(rule.path, rule.refused);
      assert.equal(refused.code, 422, JSON.stringify(refused.status));
      const cause = refused.status.details.causes[0] as { field: string; message: string };
      assert.equal(cause.field, rule.cause.field);
      if (typeof rule.cause.message === 'string') assert.equal(cause.message, rule.cause.message);
      else assert.match(cause.message, rule.cause.message);
      assert.equal(await list(), before, 'nothing stored');
      const accepted = await post(rule.path, rule.accepted);
      assert.equal(accepted.code, 201, JSON.stringify(accepted.status));
    });
  }

  // pkg/apis/rbac/v1/defaults.go: a User's or Group's apiGroup, and a roleRef's, are defaulted before validation.
  it('defaults the apiGroup of a binding subject that is a User or Group, and of its roleRef', async () => {
    const created = await post(
      '/apis/rbac.authorization.k8s.io/v1/clusterrolebindings',
      binding('ClusterRoleBinding', { kind: 'ClusterRole', name: 'r' }, [{ kind: 'Group', name: 'ops' }]),
    );
    assert.equal(created.code, 201);
    assert.deepEqual(created.status.roleRef.apiGroup, 'rbac.authorization.k8s.io');
    assert.deepEqual(created.status.subjects, [{ kind: 'Group', name: 'ops', apiGroup: 'rbac.authorization.k8s.io' }]);
  });

  // pkg/apis/core/v1/defaults.go SetDefaults_Service; alloc.go initIPFamilyFields, allocClusterIPs;
  // strategy.go patchAllocatedValues (an update that leaves the cluster IP out keeps it).
  it('defaults a Service and gives it a free cluster IP of 10.96.0.0/12, kept by an update that leaves it out', async () => {
    const created = await post(services, service({ ports: [{ port: 9090 }] }));
    assert.equal(created.code, 201, JSON.stringify(created.status));
    const { clusterIP, ...spec } = created.status.spec;
    assert.deepEqual(spec, {
      selector: labels,
      ports: [{ port: 9090, protocol: 'TCP', targetPort: 9090 }],
      sessionAffinity: 'None',
      type: 'ClusterIP',
      internalTrafficPolicy: 'Cluster',
      clusterIPs: [clusterIP],
      ipFamilyPolicy: 'SingleStack',
      ipFamilies: ['IPv4'],
    });
    const [a, b] = (clusterIP as string).split('.').map(Number);
    assert.ok(a === 10 && b! >= 96 && b! < 112 && clusterIP !== '10.96.0.1', clusterIP);
    const taken = await post(services, service({ clusterIP, ports: [port()] }, 'other'));
    assert.equal(
      taken.status.details.causes[0].message,
      `Invalid value: []string{"${clusterIP}"}: failed to allocate IP ${clusterIP}: provided IP is already allocated`,
    );
    const { clusterIP: _ip, clusterIPs: _ips, ...bodySpec } = created.status.spec;
    const replaced = await rawRequest(t, 'PUT', `${services}/s`, {
      body: JSON.stringify({ ...created.status, spec: { ...bodySpec, ports: [{ port: 9091 }] } }),
      headers: { 'Content-Type': 'application/json' },
    });
    assert.equal(replaced.code, 200, replaced.body);
    assert.deepEqual(JSON.parse(replaced.body).spec.clusterIPs, [clusterIP]);
    const printed = await kubectl(t.kubeconfigPath, t.dir, 'get', 'service', 's', '--no-headers');
    assert.match(printed.stdout, new RegExp(`^s\\s+ClusterIP\\s+${clusterIP.replace(/\./g, '\\.')}\\s+<none>\\s+9091/TCP\\s`));
  });

  it("defaults a headless Service (the chart's metrics Services) to no cluster IP, single-stack; a selectorless one to RequireDualStack", async () => {
    const headless = await post(services, service({ clusterIP: 'None', ports: [port({ targetPort: 'metrics' })] }, 'metrics'));
    assert.deepEqual(
      [headless.status.spec.clusterIPs, headless.status.spec.ipFamilyPolicy, headless.status.spec.ipFamilies],
      [['None'], 'SingleStack', ['IPv4']],
    );
    const selectorless = await post(services, { metadata: { name: 'peers' }, spec: { clusterIP: 'None' } });
    assert.deepEqual(
      [selectorless.status.spec.ipFamilyPolicy, selectorless.status.spec.ipFamilies],
      ['RequireDualStack', ['IPv4', 'IPv6']],
    );
  });

  // pkg/apis/core/v1/defaults.go SetDefaults_Namespace and the namespace strategy (Canonicalize,
  // PrepareForCreate, PrepareForUpdate): the name label, whatever was sent; the `kubernetes` finalizer.
  it('labels a Namespace with its name (a generated one too) and gives it the kubernetes finalizer', async () => {
    const created = await post('/api/v1/namespaces', { metadata: { name: 'ns1', labels: { 'kubernetes.io/metadata.name': 'x' } } });
    assert.deepEqual(created.status.metadata.labels, { 'kubernetes.io/metadata.name': 'ns1' });
    assert.deepEqual(created.status.spec, { finalizers: ['kubernetes'] });
    const generated = await post('/api/v1/namespaces', { metadata: { generateName: 'strait-' } });
    assert.deepEqual(generated.status.metadata.labels, { 'kubernetes.io/metadata.name': generated.status.metadata.name });
    const relabelled = await rawRequest(t, 'PATCH', '/api/v1/namespaces/ns1', {
      body: JSON.stringify({ metadata: { labels: { 'kubernetes.io/metadata.name': null, team: 'net' } }, spec: { finalizers: [] } }),
      headers: { 'Content-Type': 'application/merge-patch+json' },
    });
    const patched = JSON.parse(relabelled.body);
    assert.deepEqual(
      [patched.metadata.labels, patched.spec],
      [{ team: 'net', 'kubernetes.io/metadata.name': 'ns1' }, { finalizers: ['kubernetes'] }],
    );
    const listed = await kubectl(t.kubeconfigPath, t.dir, 'get', 'namespaces', '-l', 'kubernetes.io/metadata.name=default', '-o', 'name');
    assert.deepEqual(listed.stdout, 'namespace/default\n');
    // A body without metadata decodes to an empty ObjectMeta before the defaults run: the name check
    // answers, as kube-apiserver's update handler does (a 500 here before; the lab API server's fuzz found it).
    const bare = await rawRequest(t, 'PUT', '/api/v1/namespaces/ns1', {
      body: JSON.stringify({ kind: 'Namespace' }),
      headers: { 'Content-Type': 'application/json' },
    });
    assert.deepEqual(
      [bare.code, JSON.parse(bare.body).message],
      [400, 'the name of the object () does not match the name on the URL (ns1)'],
    );
  });

  // ValidateRoleBindingUpdate, ValidateDaemonSetUpdate, ValidateSecretUpdate: what an update may not change.
  it('refuses an update that changes a binding roleRef, a DaemonSet selector or a Secret type', async () => {
    const replace = async (path: string, body: Record<string, any>, change: (b: Record<string, any>) => void) => {
      const created = await post(path, body);
      const changed = structuredClone(created.status);
      change(changed);
      const answer = await rawRequest(t, 'PUT', `${path}/${changed.metadata.name}`, {
        body: JSON.stringify(changed),
        headers: { 'Content-Type': 'application/json' },
      });
      return JSON.parse(answer.body).details?.causes?.[0];
    };
    assert.deepEqual(
      await replace(
        '/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings',
        binding('RoleBinding', { kind: 'Role', name: 'r' }, []),
        (b) => (b.roleRef.name = 'other'),
      ),
      {
        reason: 'FieldValueInvalid',
        message: 'Invalid value: {"kind":"Role","name":"other","apiGroup":"rbac.authorization.k8s.io"}: cannot change roleRef',
        field: 'roleRef',
      },
    );
    const daemonSet = workload('DaemonSet', {
      selector: { matchLabels: labels },
      template: podTemplate([{ name: 'c', image: 'i' }], { ...labels, v: '1' }),
    });
    assert.equal(
      (await replace('/apis/apps/v1/namespaces/default/daemonsets', daemonSet, (d) => (d.spec.selector = { matchLabels: { v: '1' } })))
        .field,
      'spec.selector',
    );
    assert.deepEqual(
      await replace('/api/v1/namespaces/default/secrets', { metadata: { name: 's' }, data: {} }, (s) => (s.type = 'kubernetes.io/tls')),
      { reason: 'FieldValueInvalid', message: 'Invalid value: "kubernetes.io/tls": field is immutable', field: 'type' },
    );
  });
});
