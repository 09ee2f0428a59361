/**
 * RBAC in the lab API server, driven by the real @kubernetes/client-node 1.4.0 under users of a token
 * auth file: what a Role, a ClusterRole and their bindings allow (verbs, resourceNames, subresources,
 * namespaces, watch as its own verb), evaluated live (a deleted binding revokes at the next request),
 * and the 403 kube-apiserver answers the rest with, word for word, logged.
 */
import assert from 'node:assert/strict';
import { request } from 'node:https';
import {
  ApisApi,
  AuthorizationV1Api,
  CoordinationV1Api,
  CoreV1Api,
  CustomObjectsApi,
  type KubeConfig,
  PatchStrategy,
  RbacAuthorizationV1Api,
  type V1PolicyRule,
  VersionApi,
  Watch,
  setHeaderOptions,
} from '@kubernetes/client-node';
import type { TokenUser } from '../../../lab/src/apiserver/authentication';
import { type TestApiServer, apiFailure, nodeDataplaneObject, rawRequest, startTestApiServer } from '../../support/apiserver';
import { type CapturedLog, captureLog } from '../../support/log-capture';

const agent: TokenUser = {
  token: 'agent-token-7f3a9c',
  name: 'system:serviceaccount:strait-system:strait-agent',
  uid: 'uid-agent',
  groups: ['system:serviceaccounts', 'system:serviceaccounts:strait-system'],
};
const alice: TokenUser = { token: 'alice-token-51be02', name: 'alice', uid: 'uid-alice', groups: ['operators'] };

const strait = { group: 'strait.io', version: 'v1alpha1', plural: 'nodedataplanes' };

/** The Status of a 403, as kube-apiserver writes it. */
const forbiddenStatus = (message: string, details: Record<string, string>) => ({
  kind: 'Status',
  apiVersion: 'v1',
  metadata: {},
  status: 'Failure',
  message,
  reason: 'Forbidden',
  details,
  code: 403,
});

/** The first event of a watch on `path` (it must come within 5 s), or the error that ended it. */
function firstWatchEvent(
  kubeConfig: KubeConfig,
  path: string,
  query: Record<string, string>,
): Promise<{ type: string; name: string } | { error: number }> {
  return new Promise((resolve, reject) => {
    let abort: AbortController | undefined;
    const timer = setTimeout(() => {
      abort?.abort();
      reject(new Error(`no watch event on ${path} within 5 s`));
    }, 5000);
    const end = (value: { type: string; name: string } | { error: number }) => {
      clearTimeout(timer);
      abort?.abort();
      resolve(value);
    };
    void new Watch(kubeConfig)
      .watch(
        path,
        query,
        (type, object: { metadata: { name: string } }) => end({ type, name: object.metadata.name }),
        (err: { statusCode?: number } | null) => {
          if (err?.statusCode) end({ error: err.statusCode });
        },
      )
      .then((a) => (abort = a), reject);
  });
}

describe('lab API server: RBAC with @kubernetes/client-node', () => {
  let t: TestApiServer;
  let captured: CapturedLog;
  let core: CoreV1Api;
  let rbac: RbacAuthorizationV1Api;

  /** client-node's API of `api` with `user`'s token. */
  const as = <T>(user: TokenUser, api: new (...args: never[]) => T): T =>
    t.kubeconfigFor(user.token).kubeConfig.makeApiClient(api as never) as T;

  const role = (namespace: string, name: string, rules: V1PolicyRule[]) =>
    rbac.createNamespacedRole({ namespace, body: { metadata: { name }, rules } });
  const roleBinding = (namespace: string, name: string, roleRef: { kind: string; name: string }, subjects: object[]) =>
    rbac.createNamespacedRoleBinding({
      namespace,
      body: { metadata: { name }, roleRef: { apiGroup: 'rbac.authorization.k8s.io', ...roleRef }, subjects: subjects as never },
    });
  const clusterRole = (name: string, rules: V1PolicyRule[]) => rbac.createClusterRole({ body: { metadata: { name }, rules } });
  const clusterRoleBinding = (name: string, roleName: string, subjects: object[]) =>
    rbac.createClusterRoleBinding({
      body: {
        metadata: { name },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: roleName },
        subjects: subjects as never,
      },
    });
  const agentSubject = { kind: 'ServiceAccount', name: 'strait-agent', namespace: 'strait-system' };

  beforeEach(async () => {
    captured = captureLog('info');
    t = await startTestApiServer({ users: [agent, alice], logger: captured.log });
    core = t.kubeConfig.makeApiClient(CoreV1Api);
    rbac = t.kubeConfig.makeApiClient(RbacAuthorizationV1Api);
    for (const name of ['strait-system', 'other']) await core.createNamespace({ body: { metadata: { name } } });
  });
  afterEach(async () => t.close());

  it("lets a ServiceAccount bound to a Role get, list and watch what the rule says in the Role's namespace, and refuses the rest with kube-apiserver's 403", async () => {
    await role('strait-system', 'reader', [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'list', 'watch'] }]);
    // The subject's namespace left out: a RoleBinding's own namespace is meant.
    await roleBinding('strait-system', 'reader', { kind: 'Role', name: 'reader' }, [{ kind: 'ServiceAccount', name: 'strait-agent' }]);
    await core.createNamespacedConfigMap({ namespace: 'strait-system', body: { metadata: { name: 'c1' }, data: { a: '1' } } });
    await core.createNamespacedSecret({ namespace: 'strait-system', body: { metadata: { name: 's1' } } });
    const agentCore = as(agent, CoreV1Api);

    assert.deepEqual((await agentCore.readNamespacedConfigMap({ name: 'c1', namespace: 'strait-system' })).data, { a: '1' });
    assert.deepEqual(
      (await agentCore.listNamespacedConfigMap({ namespace: 'strait-system' })).items.map((c) => c.metadata?.name),
      ['c1'],
    );
    const agentConfig = t.kubeconfigFor(agent.token).kubeConfig;
    assert.deepEqual(await firstWatchEvent(agentConfig, '/api/v1/namespaces/strait-system/configmaps', { resourceVersion: '0' }), {
      type: 'ADDED',
      name: 'c1',
    });

    const user = 'User "system:serviceaccount:strait-system:strait-agent"';
    const create = await apiFailure(
      agentCore.createNamespacedConfigMap({ namespace: 'strait-system', body: { metadata: { name: 'c2' } } }),
    );
    assert.deepEqual(create, {
      code: 403,
      status: forbiddenStatus(
        `configmaps is forbidden: ${user} cannot create resource "configmaps" in API group "" in the namespace "strait-system"`,
        { kind: 'configmaps' },
      ),
    });
    const refused = [
      [
        agentCore.readNamespacedSecret({ name: 's1', namespace: 'strait-system' }),
        `secrets "s1" is forbidden: ${user} cannot get resource "secrets" in API group "" in the namespace "strait-system"`,
      ],
      [
        agentCore.deleteNamespacedConfigMap({ name: 'c1', namespace: 'strait-system' }),
        `configmaps "c1" is forbidden: ${user} cannot delete resource "configmaps" in API group "" in the namespace "strait-system"`,
      ],
      [
        agentCore.listNamespacedConfigMap({ namespace: 'other' }),
        `configmaps is forbidden: ${user} cannot list resource "configmaps" in API group "" in the namespace "other"`,
      ],
      [
        agentCore.listConfigMapForAllNamespaces(),
        `configmaps is forbidden: ${user} cannot list resource "configmaps" in API group "" at the cluster scope`,
      ],
      [agentCore.listNode(), `nodes is forbidden: ${user} cannot list resource "nodes" in API group "" at the cluster scope`],
    ] as const;
    for (const [call, message] of refused) {
      const failed = await apiFailure(call);
      assert.deepEqual([failed.code, failed.status.message], [403, message]);
    }
    assert.deepEqual(
      (await core.listNamespacedConfigMap({ namespace: 'strait-system' })).items.map((c) => c.metadata?.name),
      ['c1'],
      'a refused request writes nothing',
    );
  });

  it('matches a rule with resourceNames only for a request naming that object: get, update, a list or watch selecting it by metadata.name; never a create or an unselected list', async () => {
    await role('strait-system', 'own-lease', [
      {
        apiGroups: ['coordination.k8s.io'],
        resources: ['leases'],
        resourceNames: ['strait-node-n1'],
        verbs: ['get', 'update', 'list', 'watch', 'create'],
      },
    ]);
    await roleBinding('strait-system', 'own-lease', { kind: 'Role', name: 'own-lease' }, [agentSubject]);
    const admin = t.kubeConfig.makeApiClient(CoordinationV1Api);
    for (const name of ['strait-node-n1', 'strait-node-n2'])
      await admin.createNamespacedLease({ namespace: 'strait-system', body: { metadata: { name }, spec: { holderIdentity: name } } });
    const leases = as(agent, CoordinationV1Api);

    const own = await leases.readNamespacedLease({ name: 'strait-node-n1', namespace: 'strait-system' });
    const renewed = await leases.replaceNamespacedLease({
      name: 'strait-node-n1',
      namespace: 'strait-system',
      body: { ...own, spec: { ...own.spec, leaseDurationSeconds: 1 } },
    });
    assert.equal(renewed.spec?.leaseDurationSeconds, 1);
    const selected = await leases.listNamespacedLease({ namespace: 'strait-system', fieldSelector: 'metadata.name=strait-node-n1' });
    assert.deepEqual(
      selected.items.map((l) => l.metadata?.name),
      ['strait-node-n1'],
    );
    assert.deepEqual(
      await firstWatchEvent(t.kubeconfigFor(agent.token).kubeConfig, '/apis/coordination.k8s.io/v1/namespaces/strait-system/leases', {
        fieldSelector: 'metadata.name=strait-node-n1',
      }),
      { type: 'ADDED', name: 'strait-node-n1' },
    );

    const cannot = (verb: string) =>
      `User "${agent.name}" cannot ${verb} resource "leases" in API group "coordination.k8s.io" in the namespace "strait-system"`;
    const refused = [
      [
        leases.readNamespacedLease({ name: 'strait-node-n2', namespace: 'strait-system' }),
        `leases.coordination.k8s.io "strait-node-n2" is forbidden: ${cannot('get')}`,
        { name: 'strait-node-n2', group: 'coordination.k8s.io', kind: 'leases' },
      ],
      [
        leases.listNamespacedLease({ namespace: 'strait-system' }),
        `leases.coordination.k8s.io is forbidden: ${cannot('list')}`,
        { group: 'coordination.k8s.io', kind: 'leases' },
      ],
      [
        leases.listNamespacedLease({ namespace: 'strait-system', fieldSelector: 'metadata.name=strait-node-n2' }),
        `leases.coordination.k8s.io "strait-node-n2" is forbidden: ${cannot('list')}`,
        { name: 'strait-node-n2', group: 'coordination.k8s.io', kind: 'leases' },
      ],
      // A create names its object only in the body: resourceNames never allow it.
      [
        leases.createNamespacedLease({ namespace: 'strait-system', body: { metadata: { name: 'strait-node-n1' } } }),
        `leases.coordination.k8s.io is forbidden: ${cannot('create')}`,
        { group: 'coordination.k8s.io', kind: 'leases' },
      ],
    ] as const;
    for (const [call, message, details] of refused)
      assert.deepEqual(await apiFailure(call), { code: 403, status: forbiddenStatus(message, details) });
  });

  // kube-apiserver's RequestInfoFactory names the object of a list or watch only when its query decodes
  // and its field selector requires metadata.name (test/lab/apiserver/request-info.test.ts has the source):
  // the chart's controller reads its peers' Secrets so, and a selector it does not read as a name is a
  // list of every Secret, refused.
  it('allows a list or watch of a Secret named in resourceNames only as kube-apiserver names it: by a field selector that parses, in a query that decodes', async () => {
    await role('strait-system', 'peer-secret', [
      { apiGroups: [''], resources: ['secrets'], resourceNames: ['strait-peer-b'], verbs: ['list', 'watch'] },
    ]);
    await roleBinding('strait-system', 'peer-secret', { kind: 'Role', name: 'peer-secret' }, [agentSubject]);
    for (const name of ['strait-peer-b', 'sh.helm.release.v1.strait.v1'])
      await core.createNamespacedSecret({ namespace: 'strait-system', body: { metadata: { name }, data: { k: 'dg==' } } });
    const list = (query: string) =>
      rawRequest(t, 'GET', `/api/v1/namespaces/strait-system/secrets?${query}`, { token: agent.token, streamMs: 300 }).then((a) => {
        const body = a.ended ? (JSON.parse(a.body) as { items?: { metadata: { name: string } }[]; message?: string }) : undefined;
        return { code: a.code, names: body?.items?.map((i) => i.metadata.name), message: body?.message };
      });
    for (const query of [
      'fieldSelector=metadata.name%3Dstrait-peer-b',
      'fieldSelector=metadata.name%3D%3Dstrait-peer-b&limit=10',
      'fieldSelector=type%3DOpaque,metadata.name%3Dstrait-peer-b',
    ])
      assert.deepEqual(await list(query), { code: 200, names: ['strait-peer-b'], message: undefined }, query);
    assert.equal((await list('fieldSelector=metadata.name%3Dstrait-peer-b&watch=1')).code, 200);
    const cannot = `secrets is forbidden: User "${agent.name}" cannot list resource "secrets" in API group "" in the namespace "strait-system"`;
    for (const query of [
      '',
      'fieldSelector=metadata.name!%3Dstrait-peer-b',
      'fieldSelector=%20metadata.name%3Dstrait-peer-b',
      'fieldSelector=metadata.name%3Dstrait-peer-b,junk',
      'fieldSelector=metadata.name%3Dstrait-peer-b&labelSelector=%3Dx',
      'fieldSelector=metadata.name%3Dstrait-peer-b&limit=ten',
    ])
      assert.deepEqual(await list(query), { code: 403, names: undefined, message: cannot }, query);
    assert.deepEqual(await list('fieldSelector=metadata.name%3Dsh.helm.release.v1.strait.v1'), {
      code: 403,
      names: undefined,
      message: `secrets "sh.helm.release.v1.strait.v1" is forbidden: User "${agent.name}" cannot list resource "secrets" in API group "" in the namespace "strait-system"`,
    });
    // The deprecated /watch/ path takes its verb from the path, and then the selector names nothing.
    const watchPath = await rawRequest(
      t,
      'GET',
      '/api/v1/watch/namespaces/strait-system/secrets?fieldSelector=metadata.name%3Dstrait-peer-b',
      {
        token: agent.token,
        streamMs: 300,
      },
    );
    assert.equal(watchPath.code, 403);
  });

  it('limits a ClusterRole bound by a RoleBinding to that namespace; bound by a ClusterRoleBinding to a group, it holds everywhere', async () => {
    await clusterRole('configmap-lister', [{ apiGroups: [''], resources: ['configmaps'], verbs: ['list'] }]);
    await roleBinding('other', 'alice-lists', { kind: 'ClusterRole', name: 'configmap-lister' }, [{ kind: 'User', name: 'alice' }]);
    const aliceCore = as(alice, CoreV1Api);
    assert.deepEqual((await aliceCore.listNamespacedConfigMap({ namespace: 'other' })).items, []);
    const elsewhere = await apiFailure(aliceCore.listNamespacedConfigMap({ namespace: 'strait-system' }));
    assert.deepEqual(
      [elsewhere.code, elsewhere.status.message],
      [403, 'configmaps is forbidden: User "alice" cannot list resource "configmaps" in API group "" in the namespace "strait-system"'],
    );
    const everywhere = await apiFailure(aliceCore.listConfigMapForAllNamespaces());
    assert.deepEqual(
      [everywhere.code, everywhere.status.message],
      [403, 'configmaps is forbidden: User "alice" cannot list resource "configmaps" in API group "" at the cluster scope'],
    );

    await clusterRoleBinding('operators-list', 'configmap-lister', [{ kind: 'Group', name: 'operators' }]);
    assert.deepEqual((await aliceCore.listNamespacedConfigMap({ namespace: 'strait-system' })).items, []);
    assert.ok(Array.isArray((await aliceCore.listConfigMapForAllNamespaces()).items));
  });

  it('grants a subresource rule (nodedataplanes/status) only the subresource, and the main resource rule only the main resource', async () => {
    await t.kubeConfig.makeApiClient(CustomObjectsApi).createClusterCustomObject({ ...strait, body: nodeDataplaneObject('n1') });
    await clusterRole('status-writer', [{ apiGroups: ['strait.io'], resources: ['nodedataplanes/status'], verbs: ['get', 'patch'] }]);
    await clusterRoleBinding('agent-status', 'status-writer', [agentSubject]);
    await clusterRole('spec-writer', [{ apiGroups: ['strait.io'], resources: ['nodedataplanes'], verbs: ['get', 'patch'] }]);
    await clusterRoleBinding('alice-spec', 'spec-writer', [{ kind: 'User', name: 'alice' }]);
    const merge = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
    const status = { status: { ready: true, time: '2026-01-01T00:00:00Z', dataplane: 'ebpf', specGeneration: 1 } };
    const spec = { spec: { clusterId: 'west' } };

    const agentCustom = as(agent, CustomObjectsApi);
    const patched = (await agentCustom.patchClusterCustomObjectStatus({ ...strait, name: 'n1', body: status }, merge)) as {
      status: unknown;
    };
    assert.deepEqual(patched.status, status.status);
    const agentMain = await apiFailure(agentCustom.patchClusterCustomObject({ ...strait, name: 'n1', body: spec }, merge));
    assert.deepEqual(agentMain, {
      code: 403,
      status: forbiddenStatus(
        `nodedataplanes.strait.io "n1" is forbidden: User "${agent.name}" cannot patch resource "nodedataplanes" in API group "strait.io" at the cluster scope`,
        {
          name: 'n1',
          group: 'strait.io',
          kind: 'nodedataplanes',
        },
      ),
    });

    const aliceCustom = as(alice, CustomObjectsApi);
    const respec = (await aliceCustom.patchClusterCustomObject({ ...strait, name: 'n1', body: spec }, merge)) as {
      spec: { clusterId: string };
    };
    assert.equal(respec.spec.clusterId, 'west');
    const aliceStatus = await apiFailure(aliceCustom.patchClusterCustomObjectStatus({ ...strait, name: 'n1', body: status }, merge));
    assert.deepEqual(
      [aliceStatus.code, aliceStatus.status.message],
      [
        403,
        'nodedataplanes.strait.io "n1" is forbidden: User "alice" cannot patch resource "nodedataplanes/status" in API group "strait.io" at the cluster scope',
      ],
    );
  });

  it('revokes at the next request when the binding is deleted, and grants again when it is back', async () => {
    await role('strait-system', 'reader', [{ apiGroups: [''], resources: ['configmaps'], verbs: ['list'] }]);
    await roleBinding('strait-system', 'reader', { kind: 'Role', name: 'reader' }, [agentSubject]);
    const agentCore = as(agent, CoreV1Api);
    assert.deepEqual((await agentCore.listNamespacedConfigMap({ namespace: 'strait-system' })).items, []);
    await rbac.deleteNamespacedRoleBinding({ name: 'reader', namespace: 'strait-system' });
    assert.equal((await apiFailure(agentCore.listNamespacedConfigMap({ namespace: 'strait-system' }))).code, 403);
    await roleBinding('strait-system', 'reader', { kind: 'Role', name: 'reader' }, [agentSubject]);
    assert.deepEqual((await agentCore.listNamespacedConfigMap({ namespace: 'strait-system' })).items, []);
  });

  it('authorizes a watch as the verb watch: list alone does not allow it, and watch alone does not allow a list', async () => {
    await role('strait-system', 'lister', [{ apiGroups: [''], resources: ['configmaps'], verbs: ['list'] }]);
    await roleBinding('strait-system', 'lister', { kind: 'Role', name: 'lister' }, [agentSubject]);
    await role('other', 'watcher', [{ apiGroups: [''], resources: ['configmaps'], verbs: ['watch'] }]);
    await roleBinding('other', 'watcher', { kind: 'Role', name: 'watcher' }, [agentSubject]);
    await core.createNamespacedConfigMap({ namespace: 'other', body: { metadata: { name: 'c1' } } });
    const agentConfig = t.kubeconfigFor(agent.token).kubeConfig;
    const agentCore = as(agent, CoreV1Api);

    assert.deepEqual((await agentCore.listNamespacedConfigMap({ namespace: 'strait-system' })).items, []);
    assert.deepEqual(await firstWatchEvent(agentConfig, '/api/v1/namespaces/strait-system/configmaps', {}), { error: 403 });
    assert.deepEqual(await firstWatchEvent(agentConfig, '/api/v1/namespaces/other/configmaps', {}), { type: 'ADDED', name: 'c1' });
    const list = await apiFailure(agentCore.listNamespacedConfigMap({ namespace: 'other' }));
    assert.deepEqual(
      [list.code, list.status.message],
      [403, `configmaps is forbidden: User "${agent.name}" cannot list resource "configmaps" in API group "" in the namespace "other"`],
    );
  });

  it('answers a SelfSubjectAccessReview with the binding that allows, or not allowed; any authenticated user may ask', async () => {
    await role('strait-system', 'reader', [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get'] }]);
    await roleBinding('strait-system', 'reader-binding', { kind: 'Role', name: 'reader' }, [
      { kind: 'ServiceAccount', name: 'strait-agent' },
    ]);
    const reviews = as(agent, AuthorizationV1Api);
    // As plain JSON: client-node's classes hold every field, set or not.
    const ask = async (resourceAttributes: Record<string, string>) =>
      JSON.parse(
        JSON.stringify((await reviews.createSelfSubjectAccessReview({ body: { spec: { resourceAttributes } } })).status),
      ) as unknown;
    assert.deepEqual(await ask({ verb: 'get', resource: 'configmaps', namespace: 'strait-system', name: 'c1' }), {
      allowed: true,
      reason: 'RBAC: allowed by RoleBinding "reader-binding/strait-system" of Role "reader" to ServiceAccount "strait-agent/strait-system"',
    });
    assert.deepEqual(await ask({ verb: 'list', resource: 'configmaps', namespace: 'strait-system' }), { allowed: false });
    assert.deepEqual(await ask({ verb: 'get', resource: 'configmaps', namespace: 'other' }), { allowed: false });
  });

  it('allows discovery and /version to every user, refuses other paths as the real server does, and says which role reference is missing', async () => {
    assert.equal((await as(alice, VersionApi).getCode()).minor, '31');
    assert.ok((await as(alice, ApisApi).getAPIVersions()).groups.some((g) => g.name === 'strait.io'));
    const raw = await new Promise<{ code: number; body: string }>((resolve, reject) => {
      request(`${t.server.url}/`, { ca: t.server.ca, headers: { Authorization: `Bearer ${alice.token}` } }, (res) => {
        let body = '';
        res.on('data', (chunk: Buffer) => (body += chunk.toString()));
        res.on('end', () => resolve({ code: res.statusCode!, body }));
      })
        .on('error', reject)
        .end();
    });
    assert.deepEqual(
      { code: raw.code, status: JSON.parse(raw.body) },
      { code: 403, status: forbiddenStatus('forbidden: User "alice" cannot get path "/"', {}) },
    );

    await roleBinding('other', 'dangling', { kind: 'Role', name: 'missing' }, [{ kind: 'User', name: 'alice' }]);
    const dangling = await apiFailure(as(alice, CoreV1Api).listNamespacedConfigMap({ namespace: 'other' }));
    assert.deepEqual(
      [dangling.code, dangling.status.message],
      [
        403,
        'configmaps is forbidden: User "alice" cannot list resource "configmaps" in API group "" in the namespace "other": RBAC: role.rbac.authorization.k8s.io "missing" not found',
      ],
    );
  });

  it('logs every refusal at warn with the user, the groups, the request and the message', async () => {
    await apiFailure(as(alice, CoreV1Api).readNamespacedSecret({ name: 's1', namespace: 'other' }));
    const refusals = captured.lines.filter((l) => l.level === 40);
    assert.deepEqual(
      refusals.map(({ user, groups, verb, group, resource, subresource, namespace, name, msg }) => ({
        user,
        groups,
        verb,
        group,
        resource,
        subresource,
        namespace,
        name,
        msg,
      })),
      [
        {
          user: 'alice',
          groups: ['operators', 'system:authenticated'],
          verb: 'get',
          group: '',
          resource: 'secrets',
          subresource: '',
          namespace: 'other',
          name: 's1',
          msg: 'secrets "s1" is forbidden: User "alice" cannot get resource "secrets" in API group "" in the namespace "other"',
        },
      ],
    );
    assert.ok(!captured.text().includes(alice.token), 'the token is in the log');
  });
});
