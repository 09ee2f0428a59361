/**
 * kube-apiserver's defaulting of built-in kinds, applied as a body is decoded (before validation, on
 * create and on update), where what a client leaves out would otherwise be refused or stored differently
 * (kubernetes/kubernetes release-1.31, pkg/apis/<group>/v1/defaults.go).
 */
import { type KubeObject, isRecord } from './kube-object';

const rbacGroup = 'rbac.authorization.k8s.io';

/**
 * A RoleBinding's or ClusterRoleBinding's roleRef.apiGroup, and each subject's apiGroup by its kind
 * (pkg/apis/rbac/v1/defaults.go: SetDefaults_RoleBinding, SetDefaults_Subject): a User or Group in
 * rbac.authorization.k8s.io, a ServiceAccount in the core group.
 */
export function defaultBinding(binding: KubeObject): void {
  if (isRecord(binding.roleRef) && !binding.roleRef.apiGroup) binding.roleRef.apiGroup = rbacGroup;
  for (const subject of Array.isArray(binding.subjects) ? binding.subjects.filter(isRecord) : []) {
    if (!subject.apiGroup && (subject.kind === 'User' || subject.kind === 'Group')) subject.apiGroup = rbacGroup;
  }
}

/** A Secret without a type is Opaque (pkg/apis/core/v1/defaults.go SetDefaults_Secret). */
export function defaultSecret(secret: KubeObject): void {
  if (!secret.type) secret.type = 'Opaque';
}
