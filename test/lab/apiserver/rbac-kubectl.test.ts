/**
 * RBAC in the lab API server as kubectl 1.31 sees it: `kubectl auth can-i` (a SelfSubjectAccessReview)
 * answering yes or no as the rules say, for the user of the kubeconfig or the one named with `--as`;
 * and kube-apiserver's Forbidden messages as kubectl prints them, also for a watch.
 */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { TokenUser } from '../../../src/lab/apiserver/authentication';
import { type TestApiServer, startTestApiServer } from '../../support/apiserver';
import { kubectl } from '../../support/k8s-tools';

const alice: TokenUser = { token: 'alice-token-3c81d0', name: 'alice', uid: 'uid-alice', groups: ['operators'] };

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
    t = await startTestApiServer({ users: [alice] });
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
    for (const [question, answer] of answers) assert.deepEqual(await asAlice('auth', 'can-i', ...question), answer, `can-i ${question.join(' ')}`);
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
      stderr: 'Error from server (Forbidden): users "bob" is forbidden: User "alice" cannot impersonate resource "users" in API group "" at the cluster scope\n',
    });
  });

  it("prints kube-apiserver's Forbidden message for a refused list, and what a real server's refused watch prints", async () => {
    assert.deepEqual(await asAlice('get', 'secrets'), {
      code: 1,
      stdout: '',
      stderr: 'Error from server (Forbidden): secrets is forbidden: User "alice" cannot list resource "secrets" in API group "" in the namespace "default"\n',
    });
    // kubectl get -w lists (allowed), then watches: refused, and kubectl shows no message for it, as with a real server.
    assert.deepEqual(await asAlice('get', 'configmaps', '-w'), { code: 1, stdout: '', stderr: 'Error from server (Forbidden): unknown (get configmaps)\n' });
    assert.deepEqual(await asAlice('get', '--raw', '/api/v1/namespaces/default/configmaps?watch=true'), {
      code: 1,
      stdout: '',
      stderr: 'Error from server (Forbidden): configmaps is forbidden: User "alice" cannot watch resource "configmaps" in API group "" in the namespace "default"\n',
    });
  });
});
