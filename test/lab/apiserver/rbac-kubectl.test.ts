/**
 * RBAC in the lab API server as kubectl 1.31 sees it: `kubectl auth can-i` (a SelfSubjectAccessReview)
 * answering yes or no as the rules say, for the user of the kubeconfig or the one named with `--as`;
 * and kube-apiserver's Forbidden messages as kubectl prints them, also for a watch; and a `/watch/`
 * path serving GET only, whatever the user may watch.
 */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'yaml';
import type { TokenUser } from '../../../lab/src/apiserver/authentication';
import { type TestApiServer, nodeDataplaneObject, rawRequest, startTestApiServer } from '../../support/apiserver';
import { kubectl } from '../../support/k8s-tools';

const alice: TokenUser = { token: 'alice-token-3c81d0', name: 'alice', uid: 'uid-alice', groups: ['operators'] };
const agent: TokenUser = {
  token: 'agent-token-e50b4a',
  name: 'system:serviceaccount:strait-system:strait-agent',
  uid: 'uid-agent',
  groups: ['system:serviceaccounts'],
};

const policy = `apiVersion: v1
kind: Namespace
metadata: {name: strait-system}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: operator, namespace: default}
rules:
- {apiGroups: [""], resources: [configmaps], verbs: [list]}
- {apiGroups: [""], resources: [configmaps], resourceNames: [own], verbs: [get]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: operators, namespace: default}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: operator}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: Group, name: operators}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: strait-agent}
rules:
- {apiGroups: [strait.io], resources: [nodedataplanes], verbs: [get, list, watch]}
- {apiGroups: [strait.io], resources: [nodedataplanes/status], verbs: [update, patch]}
- {apiGroups: [""], resources: [nodes], verbs: [get, list, watch]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: strait-agent}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: strait-agent}
subjects: [{kind: ServiceAccount, name: strait-agent, namespace: strait-system}]
`;

describe('lab API server: RBAC with kubectl 1.31', function () {
  this.timeout(30_000);
  let t: TestApiServer;
  const admin = (...args: string[]) => kubectl(t.kubeconfigPath, t.dir, ...args);
  const asAlice = (...args: string[]) => kubectl(t.kubeconfigFor(alice.token).path, t.dir, ...args);
  const yes = { code: 0, stdout: 'yes\n', stderr: '' };
  const no = { code: 1, stdout: 'no\n', stderr: '' };

  beforeEach(async () => {
    t = await startTestApiServer({ users: [alice, agent] });
    const path = join(t.dir, 'policy.yaml');
    writeFileSync(path, policy);
    assert.equal((await admin('apply', '-f', path)).code, 0);
  });
  afterEach(async () => t.close());

  it('answers kubectl auth can-i yes (exit 0) or no (exit 1) for verbs, resource names, namespaces and non-resource URLs', async () => {
    const answers = [
      [['list', 'configmaps'], yes],
      [['watch', 'configmaps'], no],
      [['list', 'configmaps', '-n', 'strait-system'], no],
      [['get', 'configmaps/own'], yes],
      [['get', 'configmaps/other'], no],
      [['get', 'configmaps'], no],
      [['get', '/version'], yes],
      [['get', '/metrics'], no],
      [['create', 'selfsubjectaccessreviews', '-A'], yes],
    ] as const;
    for (const [question, answer] of answers)
      assert.deepEqual(await asAlice('auth', 'can-i', ...question), answer, `can-i ${question.join(' ')}`);
    assert.deepEqual(await admin('auth', 'can-i', '*', '*', '-A'), yes);
  });

  it('answers for the user named with --as (a service account too), which the admin may impersonate and alice may not', async () => {
    const agent = ['--as', 'system:serviceaccount:strait-system:strait-agent'];
    assert.deepEqual(await admin('auth', 'can-i', 'patch', 'nodedataplanes', '--subresource=status', '-A', ...agent), yes);
    assert.deepEqual(await admin('auth', 'can-i', 'patch', 'nodedataplanes', '-A', ...agent), no);
    assert.deepEqual(await admin('auth', 'can-i', 'watch', 'nodedataplanes', '-A', ...agent), yes);
    assert.deepEqual(await admin('auth', 'can-i', 'list', 'configmaps', '--as', 'bob', '--as-group', 'operators'), yes);
    assert.deepEqual(await admin('auth', 'can-i', 'list', 'configmaps', '--as', 'bob'), no);
    assert.deepEqual(await asAlice('get', 'configmaps', '--as', 'bob'), {
      code: 1,
      stdout: '',
      stderr:
        'Error from server (Forbidden): users "bob" is forbidden: User "alice" cannot impersonate resource "users" in API group "" at the cluster scope\n',
    });
  });

  it("prints kube-apiserver's Forbidden message for a refused list, and what a real server's refused watch prints", async () => {
    assert.deepEqual(await asAlice('get', 'secrets'), {
      code: 1,
      stdout: '',
      stderr:
        'Error from server (Forbidden): secrets is forbidden: User "alice" cannot list resource "secrets" in API group "" in the namespace "default"\n',
    });
    // kubectl get -w lists (allowed), then watches: refused, and kubectl shows no message for it, as with a real server.
    assert.deepEqual(await asAlice('get', 'configmaps', '-w'), {
      code: 1,
      stdout: '',
      stderr: 'Error from server (Forbidden): unknown (get configmaps)\n',
    });
    assert.deepEqual(await asAlice('get', '--raw', '/api/v1/namespaces/default/configmaps?watch=true'), {
      code: 1,
      stdout: '',
      stderr:
        'Error from server (Forbidden): configmaps is forbidden: User "alice" cannot watch resource "configmaps" in API group "" in the namespace "default"\n',
    });
  });

  it("serves a /watch/ path for GET only: any other method is kube-apiserver's 405, also for a user allowed to watch, and changes nothing", async () => {
    // requestinfo.go takes the verb `watch` from the path whatever the method, so RBAC allows the agent;
    // installer.go registers the watch routes with ws.GET only, and go-restful's router (jsr311.go
    // detectRoute) answers a path whose routes have another method 405, which kube-apiserver writes as
    // a Status (server/handler.go serviceErrorHandler → apierrors.NewGenericServerResponse).
    const manifests = join(t.dir, 'objects.yaml');
    const dataplanes = ['n1', 'n2'].map((n) => nodeDataplaneObject(n));
    writeFileSync(
      manifests,
      [...dataplanes, ...['n1', 'n2'].map((n) => ({ apiVersion: 'v1', kind: 'Node', metadata: { name: n } }))]
        .map((o) => stringify(o))
        .join('---\n'),
    );
    assert.equal((await admin('create', '-f', manifests)).code, 0);
    const stored = async () =>
      (
        await admin(
          'get',
          'nodes,nodedataplanes',
          '-o',
          'jsonpath={range .items[*]}{.kind}/{.metadata.name}@{.metadata.resourceVersion} {end}',
        )
      ).stdout;
    const before = await stored();
    assert.match(before, /^Node\/n1@\d+ Node\/n2@\d+ NodeDataplane\/n1@\d+ NodeDataplane\/n2@\d+ $/);

    const asAgent = (...args: string[]) => kubectl(t.kubeconfigFor(agent.token).path, t.dir, ...args);
    const body = join(t.dir, 'n2.json');
    writeFileSync(body, JSON.stringify(nodeDataplaneObject('n2', { clusterId: 'west' })));
    const refused = {
      code: 1,
      stdout: '',
      stderr: 'Error from server (MethodNotAllowed): the server does not allow this method on the requested resource\n',
    };
    for (const args of [
      ['delete', '--raw', '/api/v1/watch/nodes'],
      ['delete', '--raw', '/api/v1/watch/nodes/n2'],
      ['delete', '--raw', '/apis/strait.io/v1alpha1/watch/nodedataplanes'],
      ['create', '--raw', '/apis/strait.io/v1alpha1/watch/nodedataplanes', '-f', body],
      ['replace', '--raw', '/apis/strait.io/v1alpha1/watch/nodedataplanes/n2', '-f', body],
    ])
      assert.deepEqual(await asAgent(...args), refused, args.join(' '));
    // kubectl sends no PATCH to a raw path: a JSON merge patch as any HTTP client would send it.
    const patched = await rawRequest(t, 'PATCH', '/apis/strait.io/v1alpha1/watch/nodedataplanes/n2', {
      token: agent.token,
      headers: { 'Content-Type': 'application/merge-patch+json' },
      body: JSON.stringify({ spec: { clusterId: 'west' } }),
    });
    assert.deepEqual(
      { code: patched.code, status: JSON.parse(patched.body) },
      {
        code: 405,
        status: {
          kind: 'Status',
          apiVersion: 'v1',
          metadata: {},
          status: 'Failure',
          message: 'the server does not allow this method on the requested resource',
          reason: 'MethodNotAllowed',
          details: {},
          code: 405,
        },
      },
    );
    assert.equal(await stored(), before, 'nothing changed');
    // GET of the same paths is the (deprecated) watch the agent may open.
    const watched = await asAgent('get', '--raw', '/apis/strait.io/v1alpha1/watch/nodedataplanes/n2?timeoutSeconds=1');
    assert.deepEqual(
      {
        code: watched.code,
        events: watched.stdout
          .trim()
          .split('\n')
          .map((l) => `${JSON.parse(l).type} ${JSON.parse(l).object.metadata.name}`),
      },
      { code: 0, events: ['ADDED n2'] },
    );
  });
});
