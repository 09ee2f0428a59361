/**
 * The default ClusterRoles and ClusterRoleBindings every kube-apiserver creates at start (its RBAC
 * bootstrap policy), those a user outside `system:masters` needs before any binding of their own:
 * discovery and the health and version endpoints (system:discovery, system:public-info-viewer), asking
 * "may I?" (system:basic-user, which `kubectl auth can-i` needs), and cluster-admin for system:masters.
 * Stored objects like any other (labelled `kubernetes.io/bootstrapping: rbac-defaults`); a restarted
 * server keeps those it finds.
 */
import { randomUUID } from 'node:crypto';
import { type KubeObject, timestamp } from './kube-object';
import { rbacGroup } from './resource-types';
import type { Store } from './store';

const meta = (name: string) => ({
  name,
  uid: randomUUID(),
  creationTimestamp: timestamp(),
  labels: { 'kubernetes.io/bootstrapping': 'rbac-defaults' },
  annotations: { 'rbac.authorization.kubernetes.io/autoupdate': 'true' },
});

const clusterRole = (name: string, rules: Record<string, string[]>[]): KubeObject => ({
  apiVersion: `${rbacGroup}/v1`,
  kind: 'ClusterRole',
  metadata: meta(name),
  rules,
});

const binding = (name: string, groups: string[]): KubeObject => ({
  apiVersion: `${rbacGroup}/v1`,
  kind: 'ClusterRoleBinding',
  metadata: meta(name),
  roleRef: { apiGroup: rbacGroup, kind: 'ClusterRole', name },
  subjects: groups.map((group) => ({ apiGroup: rbacGroup, kind: 'Group', name: group })),
});

const publicInfo = ['/healthz', '/livez', '/readyz', '/version', '/version/'];

export async function storeRbacDefaults(store: Store): Promise<void> {
  const roles = [
    clusterRole('cluster-admin', [
      { apiGroups: ['*'], resources: ['*'], verbs: ['*'] },
      { nonResourceURLs: ['*'], verbs: ['*'] },
    ]),
    clusterRole('system:basic-user', [
      { apiGroups: ['authorization.k8s.io'], resources: ['selfsubjectaccessreviews', 'selfsubjectrulesreviews'], verbs: ['create'] },
      { apiGroups: ['authentication.k8s.io'], resources: ['selfsubjectreviews'], verbs: ['create'] },
    ]),
    clusterRole('system:discovery', [
      { nonResourceURLs: [...publicInfo, '/api', '/api/*', '/apis', '/apis/*', '/openapi', '/openapi/*'], verbs: ['get'] },
    ]),
    clusterRole('system:public-info-viewer', [{ nonResourceURLs: publicInfo, verbs: ['get'] }]),
  ];
  const bindings = [
    binding('cluster-admin', ['system:masters']),
    binding('system:basic-user', ['system:authenticated']),
    binding('system:discovery', ['system:authenticated']),
    binding('system:public-info-viewer', ['system:authenticated', 'system:unauthenticated']),
  ];
  const objects = [
    ...roles.map((o) => ({ resource: `clusterroles.${rbacGroup}`, o })),
    ...bindings.map((o) => ({ resource: `clusterrolebindings.${rbacGroup}`, o })),
  ];
  for (const { resource, o } of objects) if (!store.get(resource, undefined, o.metadata.name)) await store.put(resource, o);
}
