/**
 * Validating admission policies on the lab API server, evaluated as kube-apiserver's
 * ValidatingAdmissionPolicy plugin does (k8s.io/apiserver/pkg/admission/plugin/policy/validating:
 * dispatcher.go for the denial, `<resource> "<name>" is forbidden: ValidatingAdmissionPolicy 'P' with
 * binding 'B' denied request: MESSAGE` with the validation's reason, Invalid and 422 unless given, and
 * Warn's warning; validator.go for matchConditions, messageExpression and failurePolicy; the Kubernetes
 * docs page "Validating Admission Policy"). The chart's own policies are installed by the real helm 3.17
 * and met by the real clients as the chart's identities: the agent with a token bound to its Node
 * (`kubectl create token --bound-object-kind Node`, which carries `authentication.kubernetes.io/node-name`),
 * a peer with its ServiceAccount's token Secret, as the chart hands them out.
 */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { CoordinationV1Api, CoreV1Api, CustomObjectsApi, type KubeConfig, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { chartDirectory } from '../../../src/api/chart-paths';
import { registerNode } from '../../../lab/src/kubernetes-control-plane';
import { type TestApiServer, apiFailure, nodeDataplaneObject, rawRequest, startTestApiServer } from '../../support/apiserver';
import { chartNamespace } from '../../support/chart';
import { helm, kubectl } from '../../support/k8s-tools';
import { waitFor } from '../../support/wait';

const strait = { group: 'strait.io', version: 'v1alpha1' };
const dataplanes = { ...strait, plural: 'nodedataplanes' };
const networkConfigs = { ...strait, plural: 'networkconfigs' };
const merge = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
const status = { status: { ready: true, time: '2026-01-01T00:00:00Z', dataplane: 'ebpf', specGeneration: 1 } };

/** A peer's offer in this cluster (`a`): `<peer>.a`, in the peer's name unless `clusterId` says otherwise. */
const offer = (name: string, clusterId: string) => ({
  apiVersion: 'strait.io/v1alpha1',
  kind: 'NetworkConfig',
  metadata: { name },
  spec: {
    clusterId,
    remoteClusterId: 'a',
    podCIDR: '172.20.0.0/16',
    externalCIDR: '10.210.0.0/24',
    endpoint: { address: '203.0.113.9', port: 4789 },
  },
});

/** What kube-apiserver answers a request a policy denies (dispatcher.go). */
const denied = (what: string, policy: string, message: string) =>
  `${what} is forbidden: ValidatingAdmissionPolicy '${policy}' with binding '${policy}' denied request: ${message}`;

describe('lab API server: validating admission policies', function () {
  this.timeout(60_000);
  let t: TestApiServer;
  const admin = () => t.kubeConfig;
  const as = (token: string): KubeConfig => t.kubeconfigFor(token).kubeConfig;
  const kubectlAs = (token: string, ...args: string[]) => kubectl(t.kubeconfigFor(token).path, t.dir, ...args);

  describe("the chart's policies (helm install)", () => {
    let agentN1: string;
    let peerB: string;

    before(async () => {
      t = await startTestApiServer({ crdsInstalled: false });
      const core = admin().makeApiClient(CoreV1Api);
      await core.createNamespace({ body: { metadata: { name: chartNamespace } } });
      for (const [n, name] of ['n1', 'n2'].entries())
        await registerNode(core, { name, underlayAddress: `192.168.1.${n + 1}`, podCIDR: `10.1.${n}.0/24` });
      const values = ['--set', 'cluster.id=a', '--set', 'cluster.podCIDR=10.1.0.0/16', '--set', 'cluster.externalCIDR=10.201.0.0/16'];
      const installed = await helm(
        t.kubeconfigPath,
        t.dir,
        'install',
        'strait',
        chartDirectory,
        '-n',
        chartNamespace,
        ...values,
        '--set',
        'peers={b,c}',
      );
      assert.equal(installed.code, 0, installed.stderr);
      const custom = admin().makeApiClient(CustomObjectsApi);
      for (const name of ['n1', 'n2']) await custom.createClusterCustomObject({ ...dataplanes, body: nodeDataplaneObject(name) });
      const token = await kubectl(
        t.kubeconfigPath,
        t.dir,
        'create',
        'token',
        'strait-agent',
        '-n',
        chartNamespace,
        '--bound-object-kind',
        'Node',
        '--bound-object-name',
        'n1',
      );
      assert.equal(token.code, 0, token.stderr);
      agentN1 = token.stdout.trim();
      // The peer's token, as the token controller fills the chart's Secret strait-peer-b-token.
      const tokenOf = async () =>
        (await core.readNamespacedSecret({ name: 'strait-peer-b-token', namespace: chartNamespace })).data?.token ?? '';
      await waitFor('the token of strait-peer-b-token', async () => (await tokenOf()) !== '');
      peerB = Buffer.from(await tokenOf(), 'base64').toString();
    });
    after(async () => t.close());

    it("lets an agent write its own node's NodeDataplane status, refuses another node's (422, the policy's message), and any Lease (403: no rule)", async () => {
      const custom = as(agentN1).makeApiClient(CustomObjectsApi);
      const patched = (await custom.patchClusterCustomObjectStatus({ ...dataplanes, name: 'n1', body: status }, merge)) as typeof status;
      assert.deepEqual(patched.status, status.status);
      const refused = await apiFailure(custom.patchClusterCustomObjectStatus({ ...dataplanes, name: 'n2', body: status }, merge));
      const message = denied(
        'nodedataplanes.strait.io "n2"',
        'strait-agent-own-node',
        "an agent writes only its own node's objects (token of node n1, object n2)",
      );
      assert.deepEqual(
        [refused.code, refused.status.reason, refused.status.message, refused.status.details],
        [
          422,
          'Invalid',
          message,
          { name: 'n2', group: 'strait.io', kind: 'nodedataplanes', causes: [{ message: message.replace(/^.* is forbidden: /, '') }] },
        ],
      );

      // No Lease at all: an agent has no heartbeat of its own, and the chart's role grants it none.
      const lease = { metadata: { name: 'strait-node-n1' }, spec: { holderIdentity: 'n1', leaseDurationSeconds: 1 } };
      const leases = as(agentN1).makeApiClient(CoordinationV1Api);
      const refusedLease = await apiFailure(leases.createNamespacedLease({ namespace: chartNamespace, body: lease }));
      assert.equal(refusedLease.code, 403);
      assert.match(refusedLease.status.message, /cannot create resource "leases" in API group "coordination\.k8s\.io"/);
      // kubectl shows the same refusal, as a user would read it.
      const cli = await kubectlAs(
        agentN1,
        'create',
        '-n',
        chartNamespace,
        '-f',
        manifest(t, 'lease.yaml', stringify({ apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', ...lease })),
      );
      assert.equal(cli.code, 1);
      assert.match(cli.stderr, /cannot create resource "leases" in API group "coordination\.k8s\.io" in the namespace "strait-system"/);
    });

    it('refuses an agent token not bound to a node even its own writes, and the admin is not an agent', async () => {
      const unbound = (await kubectl(t.kubeconfigPath, t.dir, 'create', 'token', 'strait-agent', '-n', chartNamespace)).stdout.trim();
      const refused = await apiFailure(
        as(unbound)
          .makeApiClient(CustomObjectsApi)
          .patchClusterCustomObjectStatus({ ...dataplanes, name: 'n1', body: status }, merge),
      );
      assert.equal(refused.code, 422);
      assert.match(refused.status.message, /\(token of node , object n1\)$/);
      await admin()
        .makeApiClient(CustomObjectsApi)
        .patchClusterCustomObjectStatus({ ...dataplanes, name: 'n2', body: status }, merge);
    });

    it('takes the extra of an impersonated user (Impersonate-Extra-*, its key percent-encoded) as the policy reads it', async () => {
      const patchAs = (name: string) =>
        rawRequest(t, 'PATCH', `/apis/strait.io/v1alpha1/nodedataplanes/${name}/status`, {
          headers: {
            'Content-Type': 'application/merge-patch+json',
            'Impersonate-User': `system:serviceaccount:${chartNamespace}:strait-agent`,
            'Impersonate-Extra-authentication.kubernetes.io%2fnode-name': 'n2',
          },
          body: JSON.stringify(status),
        });
      assert.equal((await patchAs('n2')).code, 200);
      const refused = await patchAs('n1');
      assert.equal(refused.code, 422);
      assert.match(JSON.parse(refused.body).message, /\(token of node n2, object n1\)$/);
    });

    it("lets a peer create and delete NetworkConfigs in its own name only, also refusing the DELETE of another peer's", async () => {
      const custom = as(peerB).makeApiClient(CustomObjectsApi);
      await custom.createClusterCustomObject({ ...networkConfigs, body: offer('b.a', 'b') });
      const message = denied(
        'networkconfigs.strait.io "c.a"',
        'strait-peer-own-name',
        'a peer writes only NetworkConfigs in its own name (b.*, spec.clusterId b)',
      );
      const create = await apiFailure(custom.createClusterCustomObject({ ...networkConfigs, body: offer('c.a', 'c') }));
      assert.deepEqual([create.code, create.status.reason, create.status.message], [422, 'Invalid', message]);
      const disguised = await apiFailure(custom.createClusterCustomObject({ ...networkConfigs, body: offer('b.x', 'c') }));
      assert.equal(disguised.code, 422, 'its own name, another clusterId');

      await admin()
        .makeApiClient(CustomObjectsApi)
        .createClusterCustomObject({ ...networkConfigs, body: offer('c.a', 'c') });
      const remove = await apiFailure(custom.deleteClusterCustomObject({ ...networkConfigs, name: 'c.a' }));
      assert.deepEqual([remove.code, remove.status.message], [422, message]);
      const cli = await kubectlAs(peerB, 'delete', 'networkconfig', 'c.a');
      assert.equal(cli.code, 1);
      assert.match(cli.stderr, /denied request: a peer writes only NetworkConfigs in its own name/);
      await custom.deleteClusterCustomObject({ ...networkConfigs, name: 'b.a' });
      const left = (await admin().makeApiClient(CustomObjectsApi).listClusterCustomObject(networkConfigs)) as {
        items: { metadata: { name: string } }[];
      };
      assert.deepEqual(
        left.items.map((o) => o.metadata.name),
        ['c.a'],
      );
    });

    it('refuses the policy objects the real server refuses: an expression that does not compile, a binding without actions', async () => {
      const broken = await kubectl(
        t.kubeconfigPath,
        t.dir,
        'create',
        '-f',
        manifest(t, 'broken.yaml', policy('broken', { validations: [{ expression: '1 +' }] })),
      );
      assert.equal(broken.code, 1);
      assert.match(
        broken.stderr,
        /The ValidatingAdmissionPolicy "broken" is invalid: spec\.validations\[0\]\.expression: Invalid value: "1 \+": compilation failed: ERROR: /,
      );
      const binding = await kubectl(t.kubeconfigPath, t.dir, 'create', '-f', manifest(t, 'binding.yaml', bindingOf('broken', [])));
      assert.equal(binding.code, 1);
      assert.match(binding.stderr, /spec\.validationActions: Required value: at least one validation action is required/);
    });
  });

  describe('evaluation', () => {
    beforeEach(async () => {
      t = await startTestApiServer();
    });
    afterEach(async () => t.close());

    const core = () => admin().makeApiClient(CoreV1Api);
    const configMap = (name: string, data: Record<string, string> = {}) =>
      core().createNamespacedConfigMap({ namespace: 'default', body: { metadata: { name }, data } });
    const install = async (name: string, spec: Record<string, unknown>, actions = ['Deny']) => {
      const created = await kubectl(
        t.kubeconfigPath,
        t.dir,
        'create',
        '-f',
        manifest(t, `${name}.yaml`, `${policy(name, spec)}---\n${bindingOf(name, actions)}`),
      );
      assert.equal(created.code, 0, created.stderr);
    };

    it('skips a policy whose matchConditions are not all true, and matches only the resources, operations and namespaces it names', async () => {
      await install('no-deny', {
        matchConstraints: { resourceRules: [{ apiGroups: [''], apiVersions: ['*'], operations: ['CREATE'], resources: ['configmaps'] }] },
        matchConditions: [{ name: 'deny-prefix', expression: "object.metadata.name.startsWith('deny-')" }],
        validations: [{ expression: 'false', message: 'no deny- ConfigMaps' }],
      });
      await configMap('ok-1');
      const refused = await apiFailure(configMap('deny-1'));
      assert.deepEqual([refused.code, refused.status.message], [422, denied('configmaps "deny-1"', 'no-deny', 'no deny- ConfigMaps')]);
      await core().createNamespacedSecret({ namespace: 'default', body: { metadata: { name: 'deny-secret' } } });
      await core().deleteNamespacedConfigMap({ namespace: 'default', name: 'ok-1' });
    });

    it("scopes a binding by its matchResources (a namespaceSelector on the namespace's labels, resources left to the policy)", async () => {
      const binding = bindingOf('sealed', ['Deny'], { matchResources: { namespaceSelector: { matchLabels: { tier: 'vault' } } } });
      const policyText = policy('sealed', { validations: [{ expression: 'false' }] });
      const created = await kubectl(t.kubeconfigPath, t.dir, 'create', '-f', manifest(t, 'sealed.yaml', `${policyText}---\n${binding}`));
      assert.equal(created.code, 0, created.stderr);
      await core().createNamespace({ body: { metadata: { name: 'vault', labels: { tier: 'vault' } } } });
      const refused = await apiFailure(core().createNamespacedConfigMap({ namespace: 'vault', body: { metadata: { name: 'c' } } }));
      assert.deepEqual([refused.code, refused.status.message], [422, denied('configmaps "c"', 'sealed', 'failed expression: false')]);
      await configMap('c');
    });

    it("warns and allows under a Warn binding, with kube-apiserver's warning text", async () => {
      await install(
        'warned',
        { validations: [{ expression: "has(object.data) && 'owner' in object.data", message: 'a ConfigMap names its owner' }] },
        ['Warn'],
      );
      const created = await rawRequest(t, 'POST', '/api/v1/namespaces/default/configmaps', {
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'anonymous' } }),
      });
      assert.equal(created.code, 201);
      assert.equal(
        created.headers.warning,
        `299 - "Validation failed for ValidatingAdmissionPolicy 'warned' with binding 'warned': a ConfigMap names its owner"`,
      );
    });

    it('denies on an expression that errs under failurePolicy Fail, and ignores it under Ignore', async () => {
      const spec = (failurePolicy: string) => ({ failurePolicy, validations: [{ expression: "object.data.missing == 'x'" }] });
      await install('strict', spec('Fail'));
      const refused = await apiFailure(configMap('c1', { present: 'y' }));
      assert.equal(refused.code, 422);
      assert.match(
        refused.status.message,
        /^configmaps "c1" is forbidden: ValidatingAdmissionPolicy 'strict' with binding 'strict' denied request: expression 'object\.data\.missing == 'x'' resulted in error: /,
      );
      await kubectl(t.kubeconfigPath, t.dir, 'delete', 'validatingadmissionpolicy', 'strict');
      await install('lenient', spec('Ignore'));
      await configMap('c1', { present: 'y' });
    });

    it("answers with a validation's reason and its code, uses its messageExpression, and reads variables and oldObject", async () => {
      await install('frozen', {
        matchConstraints: {
          resourceRules: [{ apiGroups: [''], apiVersions: ['v1'], operations: ['UPDATE', 'DELETE'], resources: ['configmaps'] }],
        },
        variables: [
          { name: 'before', expression: 'has(oldObject.data) ? oldObject.data : {}' },
          { name: 'frozen', expression: "'frozen' in variables.before" },
        ],
        validations: [
          {
            expression: '!variables.frozen',
            messageExpression: "'ConfigMap ' + oldObject.metadata.name + ' is frozen (' + request.operation + ')'",
            reason: 'Forbidden',
          },
        ],
      });
      await configMap('cold', { frozen: 'yes' });
      const update = await apiFailure(
        core().patchNamespacedConfigMap({ namespace: 'default', name: 'cold', body: { data: { x: '1' } } }, merge),
      );
      assert.deepEqual(
        [update.code, update.status.reason, update.status.message],
        [403, 'Forbidden', denied('configmaps "cold"', 'frozen', 'ConfigMap cold is frozen (UPDATE)')],
      );
      const remove = await apiFailure(core().deleteNamespacedConfigMap({ namespace: 'default', name: 'cold' }));
      assert.match(remove.status.message, /ConfigMap cold is frozen \(DELETE\)$/);
      // A deletecollection: each object is admitted, and one refused keeps them all (the double's all or nothing).
      await configMap('warm', { x: '1' });
      const collection = await apiFailure(core().deleteCollectionNamespacedConfigMap({ namespace: 'default' }));
      assert.deepEqual(
        [collection.code, collection.status.message],
        [403, denied('configmaps "cold"', 'frozen', 'ConfigMap cold is frozen (DELETE)')],
      );
      assert.deepEqual((await core().listNamespacedConfigMap({ namespace: 'default' })).items.map((c) => c.metadata!.name).sort(), [
        'cold',
        'warm',
      ]);
      await core().deleteNamespacedConfigMap({ namespace: 'default', name: 'warm' });
    });
  });
});

/** A policy on the ConfigMaps of any namespace unless `spec` says otherwise. */
function policy(name: string, spec: Record<string, unknown>): string {
  const matchConstraints = {
    resourceRules: [{ apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE', 'UPDATE', 'DELETE'], resources: ['configmaps'] }],
  };
  return stringify({
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingAdmissionPolicy',
    metadata: { name },
    spec: { matchConstraints, ...spec },
  });
}

function bindingOf(name: string, validationActions: string[], more: Record<string, unknown> = {}): string {
  return stringify({
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingAdmissionPolicyBinding',
    metadata: { name },
    spec: { policyName: name, validationActions, ...more },
  });
}

function manifest(t: TestApiServer, file: string, text: string): string {
  const path = join(t.dir, file);
  writeFileSync(path, text);
  return path;
}
