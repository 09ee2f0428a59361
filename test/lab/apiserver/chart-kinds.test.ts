/**
 * The built-in kinds Strait's Helm chart renders, driven by the real kubectl 1.31 as a chart install
 * is: `kubectl apply -f` of one multi-document manifest, a second apply of a changed one (kubectl sends
 * strategic merge patches), `kubectl get` with the real server's columns, and `kubectl delete -f`. A
 * change kubectl can only express with strategic-merge directives is refused, not misapplied.
 */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { AppsV1Api, CoreV1Api } from '@kubernetes/client-node';
import { type TestApiServer, startTestApiServer } from '../../support/apiserver';
import { kubectl as runKubectl, tableLines as lines } from '../../support/k8s-tools';

const labels = 'labels: {app.kubernetes.io/name: strait}';

/** What the chart renders (in the namespace strait-system), with the two fields a re-apply changes. */
const manifest = (clusterId: string, checksum: string, image = 'strait:0.1.0') => `apiVersion: v1
kind: ServiceAccount
metadata: {name: strait-agent, namespace: strait-system, ${labels}}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: strait-controller, namespace: strait-system, ${labels}}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: strait-config, namespace: strait-system, ${labels}}
data: {clusterId: ${clusterId}, logLevel: info}
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: strait-node-critical, ${labels}}
value: 1000000
globalDefault: false
description: The dataplane of every node.
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: strait-agent, ${labels}}
rules:
- apiGroups: [strait.io]
  resources: [nodedataplanes]
  verbs: [get, list, watch]
- apiGroups: [strait.io]
  resources: [nodedataplanes/status]
  verbs: [update, patch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: strait-agent, ${labels}}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: strait-agent}
subjects:
- {kind: ServiceAccount, name: strait-agent, namespace: strait-system}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: strait-controller, namespace: strait-system, ${labels}}
rules:
- apiGroups: [coordination.k8s.io]
  resources: [leases]
  verbs: [get, create, update]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: strait-controller, namespace: strait-system, ${labels}}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: strait-controller}
subjects:
- {kind: ServiceAccount, name: strait-controller, namespace: strait-system}
- {kind: Group, name: strait-operators, apiGroup: rbac.authorization.k8s.io}
---
apiVersion: v1
kind: Service
metadata: {name: strait-controller-metrics, namespace: strait-system, ${labels}}
spec:
  clusterIP: None
  selector: {app.kubernetes.io/component: controller}
  ports: [{name: metrics, port: 9090, targetPort: metrics, protocol: TCP}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: strait-controller, namespace: strait-system, ${labels}}
spec:
  replicas: 2
  selector: {matchLabels: {app.kubernetes.io/component: controller}}
  template:
    metadata:
      labels: {app.kubernetes.io/component: controller}
      annotations: {checksum/config: "${checksum}"}
    spec:
      serviceAccountName: strait-controller
      containers:
      - {name: controller, image: "${image}", args: [controller, --kubernetes]}
      - {name: metrics, image: "strait:0.1.0", args: [metrics]}
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: strait-agent, namespace: strait-system, ${labels}}
spec:
  selector: {matchLabels: {app.kubernetes.io/component: agent}}
  template:
    metadata: {labels: {app.kubernetes.io/component: agent}}
    spec:
      serviceAccountName: strait-agent
      priorityClassName: strait-node-critical
      nodeSelector: {kubernetes.io/os: linux}
      containers: [{name: agent, image: "strait:0.1.0", args: [agent, --kubernetes]}]
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: strait-agent-own-node, ${labels}}
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules: [{apiGroups: [strait.io], apiVersions: ["*"], operations: [UPDATE], resources: [nodedataplanes/status]}]
  validations:
  - expression: request.userInfo.extra['authentication.kubernetes.io/node-name'][0] == object.metadata.name
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: strait-agent-own-node, ${labels}}
spec:
  policyName: strait-agent-own-node
  validationActions: [Deny]
`;

const objects = [
  'serviceaccount/strait-agent',
  'serviceaccount/strait-controller',
  'configmap/strait-config',
  'priorityclass.scheduling.k8s.io/strait-node-critical',
  'clusterrole.rbac.authorization.k8s.io/strait-agent',
  'clusterrolebinding.rbac.authorization.k8s.io/strait-agent',
  'role.rbac.authorization.k8s.io/strait-controller',
  'rolebinding.rbac.authorization.k8s.io/strait-controller',
  'service/strait-controller-metrics',
  'deployment.apps/strait-controller',
  'daemonset.apps/strait-agent',
  'validatingadmissionpolicy.admissionregistration.k8s.io/strait-agent-own-node',
  'validatingadmissionpolicybinding.admissionregistration.k8s.io/strait-agent-own-node',
];

describe("lab API server: the Helm chart's built-in kinds with kubectl 1.31", function () {
  this.timeout(30_000);
  let t: TestApiServer;
  let path: string;
  const kubectl = (...args: string[]) => runKubectl(t.kubeconfigPath, t.dir, ...args);

  beforeEach(async () => {
    t = await startTestApiServer();
    path = join(t.dir, 'strait.yaml');
    await t.kubeConfig.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: 'strait-system' } } });
  });
  afterEach(async () => t.close());

  it('applies the manifest (every object created), re-applies a changed one (only the ConfigMap key and the pod-template annotation configured), and deletes it', async () => {
    writeFileSync(path, manifest('east', '1'));
    assert.deepEqual(await kubectl('apply', '-f', path), { code: 0, stdout: objects.map((o) => `${o} created\n`).join(''), stderr: '' });

    writeFileSync(path, manifest('west', '2'));
    const changed = new Set(['configmap/strait-config', 'deployment.apps/strait-controller']);
    assert.deepEqual(await kubectl('apply', '-f', path), {
      code: 0,
      stdout: objects.map((o) => `${o} ${changed.has(o) ? 'configured' : 'unchanged'}\n`).join(''),
      stderr: '',
    });
    const config = await t.kubeConfig
      .makeApiClient(CoreV1Api)
      .readNamespacedConfigMap({ name: 'strait-config', namespace: 'strait-system' });
    assert.deepEqual(config.data, { clusterId: 'west', logLevel: 'info' });
    const deployment = await t.kubeConfig
      .makeApiClient(AppsV1Api)
      .readNamespacedDeployment({ name: 'strait-controller', namespace: 'strait-system' });
    assert.deepEqual(deployment.spec?.template.metadata?.annotations, { 'checksum/config': '2' });
    assert.deepEqual(
      deployment.spec?.template.spec?.containers?.map(({ name, image, args }) => ({ name, image, args })),
      [
        { name: 'controller', image: 'strait:0.1.0', args: ['controller', '--kubernetes'] },
        { name: 'metrics', image: 'strait:0.1.0', args: ['metrics'] },
      ],
    );

    const deleted = objects.map((o) => {
      const [resource, name] = o.split('/');
      return `${resource} "${name}" deleted\n`;
    });
    assert.deepEqual(await kubectl('delete', '-f', path), { code: 0, stdout: deleted.join(''), stderr: '' });
    assert.deepEqual(await kubectl('get', 'sa,cm,deploy,ds,svc,role,rolebinding', '-n', 'strait-system'), {
      code: 0,
      stdout: '',
      stderr: 'No resources found in strait-system namespace.\n',
    });
  });

  it('gets daemonsets, deployments, service accounts and cluster roles at once with the real columns', async () => {
    writeFileSync(path, manifest('east', '1'));
    await kubectl('apply', '-f', path);
    const run = await kubectl('get', 'ds,deploy,sa,clusterrole', '-n', 'strait-system', '-l', 'app.kubernetes.io/name=strait');
    assert.deepEqual({ code: run.code, stderr: run.stderr }, { code: 0, stderr: '' });
    const got = lines(run.stdout);
    assert.equal(got.length, 12, run.stdout);
    assert.equal(got[0], 'NAME DESIRED CURRENT READY UP-TO-DATE AVAILABLE NODE SELECTOR AGE');
    assert.match(got[1]!, /^daemonset\.apps\/strait-agent 0 0 0 0 0 kubernetes\.io\/os=linux \d+s$/);
    assert.equal(got[2], '');
    assert.equal(got[3], 'NAME READY UP-TO-DATE AVAILABLE AGE');
    assert.match(got[4]!, /^deployment\.apps\/strait-controller 0\/2 0 0 \d+s$/);
    assert.equal(got[5], '');
    assert.equal(got[6], 'NAME SECRETS AGE');
    assert.match(got[7]!, /^serviceaccount\/strait-agent 0 \d+s$/);
    assert.match(got[8]!, /^serviceaccount\/strait-controller 0 \d+s$/);
    assert.equal(got[9], '');
    assert.equal(got[10], 'NAME CREATED AT');
    assert.match(got[11]!, /^clusterrole\.rbac\.authorization\.k8s\.io\/strait-agent \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
  });

  it('prints services, role bindings, priority classes and admission policies with their -o wide columns', async () => {
    writeFileSync(path, manifest('east', '1'));
    await kubectl('apply', '-f', path);
    const run = await kubectl('get', 'svc,rolebinding', '-n', 'strait-system', '-o', 'wide');
    assert.deepEqual({ code: run.code, stderr: run.stderr }, { code: 0, stderr: '' });
    const namespaced = lines(run.stdout);
    assert.equal(namespaced[0], 'NAME TYPE CLUSTER-IP EXTERNAL-IP PORT(S) AGE SELECTOR');
    assert.match(
      namespaced[1]!,
      /^service\/strait-controller-metrics ClusterIP None <none> 9090\/TCP \d+s app\.kubernetes\.io\/component=controller$/,
    );
    assert.equal(namespaced[3], 'NAME ROLE AGE USERS GROUPS SERVICEACCOUNTS');
    assert.match(
      namespaced[4]!,
      /^rolebinding\.rbac\.authorization\.k8s\.io\/strait-controller Role\/strait-controller \d+s strait-operators strait-system\/strait-controller$/,
    );
    const cluster = await kubectl(
      'get',
      'pc,validatingadmissionpolicies,validatingadmissionpolicybindings',
      '-l',
      'app.kubernetes.io/name=strait',
    );
    assert.deepEqual({ code: cluster.code, stderr: cluster.stderr }, { code: 0, stderr: '' });
    const got = lines(cluster.stdout);
    assert.equal(got[0], 'NAME VALUE GLOBAL-DEFAULT AGE PREEMPTIONPOLICY');
    assert.match(got[1]!, /^priorityclass\.scheduling\.k8s\.io\/strait-node-critical 1000000 false \d+s PreemptLowerPriority$/);
    assert.equal(got[3], 'NAME VALIDATIONS PARAMKIND AGE');
    assert.match(got[4]!, /^validatingadmissionpolicy\.admissionregistration\.k8s\.io\/strait-agent-own-node 1 <unset> \d+s$/);
    assert.equal(got[6], 'NAME POLICYNAME PARAMREF AGE');
    assert.match(
      got[7]!,
      /^validatingadmissionpolicybinding\.admissionregistration\.k8s\.io\/strait-agent-own-node strait-agent-own-node <unset> \d+s$/,
    );
  });

  it('refuses a re-apply that changes a container image (a $setElementOrder directive) with 422 naming it, and leaves the Deployment as it was', async () => {
    writeFileSync(path, manifest('east', '1'));
    await kubectl('apply', '-f', path);
    writeFileSync(path, manifest('east', '1', 'strait:0.2.0'));
    const run = await kubectl('apply', '-f', path);
    assert.equal(run.code, 1);
    assert.equal(
      run.stderr,
      'The Deployment "strait-controller" is invalid: spec.template.spec: Forbidden: strategic merge patch directive "$setElementOrder/containers" is not supported by this API server, ' +
        'which applies a strategic merge patch as a JSON merge patch: send a JSON merge patch or a JSON patch, or replace the object (kubectl replace, kubectl apply --force)\n',
    );
    const deployment = await t.kubeConfig
      .makeApiClient(AppsV1Api)
      .readNamespacedDeployment({ name: 'strait-controller', namespace: 'strait-system' });
    assert.deepEqual(
      deployment.spec?.template.spec?.containers?.map((c) => c.image),
      ['strait:0.1.0', 'strait:0.1.0'],
    );
  });
});
