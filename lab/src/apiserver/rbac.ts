/**
 * Authorization as kube-apiserver's `--authorization-mode=RBAC` does it (plugin/pkg/auth/authorizer/rbac
 * and pkg/registry/rbac/validation/rule.go), evaluated from the stored objects at every request, so a
 * binding applied or deleted counts from the next one. `system:masters` may do anything. Anyone else may
 * do what some rule allows: a rule of the ClusterRole a ClusterRoleBinding names, or of the Role (of the
 * binding's namespace) or ClusterRole a RoleBinding names, for requests in the RoleBinding's namespace;
 * a binding applies when a subject is the user (User by name, Group by group, ServiceAccount
 * {namespace, name} as user `system:serviceaccount:<namespace>:<name>`, the namespace defaulting to the
 * RoleBinding's). A rule matches by verbs, apiGroups, resources (a subresource as
 * `<resource>/<subresource>`; `*` for all; `*` + `/<subresource>` for that subresource of all),
 * resourceNames (only a request naming one object matches a rule that has them) or nonResourceURLs
 * (exact, or a prefix ending in `*`). A ClusterRole's aggregationRule is not evaluated: its rules are
 * used as stored.
 */
import { type UserInfo, mastersGroup } from './authentication';
import { type KubeObject, isRecord } from './kube-object';
import type { RequestInfo } from './request-info';
import { rbacGroup } from './resource-types';
import type { Store } from './store';

export interface Decision {
  allowed: boolean;
  /** Why: the binding that allowed it, or the role references that could not be resolved (as the real server says). */
  reason: string;
}

interface PolicyRule {
  verbs: string[];
  apiGroups: string[];
  resources: string[];
  resourceNames: string[];
  nonResourceURLs: string[];
}

interface Subject {
  kind: string;
  name: string;
  namespace: string;
}

const strings = (value: unknown): string[] => (Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : []);
const text = (value: unknown): string => (typeof value === 'string' ? value : '');

function policyRules(role: KubeObject): PolicyRule[] {
  return (Array.isArray(role.rules) ? role.rules : []).filter(isRecord).map((r) => ({
    verbs: strings(r.verbs),
    apiGroups: strings(r.apiGroups),
    resources: strings(r.resources),
    resourceNames: strings(r.resourceNames),
    nonResourceURLs: strings(r.nonResourceURLs),
  }));
}

function ruleAllows(request: RequestInfo, rule: PolicyRule): boolean {
  if (!rule.verbs.some((v) => v === '*' || v === request.verb)) return false;
  if (!request.resourceRequest) {
    return rule.nonResourceURLs.some(
      (url) => url === '*' || url === request.path || (url.endsWith('*') && request.path.startsWith(url.replace(/\*+$/, ''))),
    );
  }
  const combined = request.subresource ? `${request.resource}/${request.subresource}` : request.resource;
  return (
    rule.apiGroups.some((g) => g === '*' || g === request.group) &&
    rule.resources.some((r) => r === '*' || r === combined || (request.subresource !== '' && r === `*/${request.subresource}`)) &&
    (rule.resourceNames.length === 0 || rule.resourceNames.includes(request.name))
  );
}

function appliesTo(user: UserInfo, subject: Subject, bindingNamespace: string): boolean {
  switch (subject.kind) {
    case 'User':
      return user.name === subject.name;
    case 'Group':
      return user.groups.includes(subject.name);
    case 'ServiceAccount': {
      const namespace = subject.namespace || bindingNamespace;
      return namespace !== '' && user.name === `system:serviceaccount:${namespace}:${subject.name}`;
    }
    default:
      return false;
  }
}

/** How the real server names a subject in its reasons: `ServiceAccount "agent/strait-system"`. */
function describeSubject(subject: Subject, bindingNamespace: string): string {
  if (subject.kind === 'ServiceAccount')
    return `${subject.kind} ${JSON.stringify(`${subject.name}/${subject.namespace || bindingNamespace}`)}`;
  return `${subject.kind} ${JSON.stringify(subject.name)}`;
}

const resources = {
  clusterRoles: `clusterroles.${rbacGroup}`,
  clusterRoleBindings: `clusterrolebindings.${rbacGroup}`,
  roles: `roles.${rbacGroup}`,
  roleBindings: `rolebindings.${rbacGroup}`,
};

export class RbacAuthorizer {
  constructor(private readonly store: Store) {}

  authorize(user: UserInfo, request: RequestInfo): Decision {
    if (user.groups.includes(mastersGroup)) return { allowed: true, reason: '' };
    const errors: string[] = [];
    // A RoleBinding counts only for requests in its namespace; non-resource URLs are in none.
    const namespace = request.resourceRequest ? request.namespace : '';
    const bindings = [
      ...this.store.list(resources.clusterRoleBindings).map((binding) => ({ binding, namespace: '' })),
      ...(namespace !== '' ? this.store.list(resources.roleBindings, namespace) : []).map((binding) => ({ binding, namespace })),
    ];
    for (const { binding, namespace } of bindings) {
      const subjects = (Array.isArray(binding.subjects) ? binding.subjects : [])
        .filter(isRecord)
        .map((s): Subject => ({ kind: text(s.kind), name: text(s.name), namespace: text(s.namespace) }));
      const subject = subjects.find((s) => appliesTo(user, s, namespace));
      if (!subject) continue;
      const roleRef = isRecord(binding.roleRef) ? binding.roleRef : {};
      const role = this.role(text(roleRef.kind), text(roleRef.name), namespace);
      if (typeof role === 'string') {
        errors.push(role);
        continue;
      }
      if (policyRules(role).some((rule) => ruleAllows(request, rule))) {
        const source =
          namespace === ''
            ? `ClusterRoleBinding ${JSON.stringify(binding.metadata.name)}`
            : `RoleBinding ${JSON.stringify(`${binding.metadata.name}/${namespace}`)}`;
        return {
          allowed: true,
          reason: `RBAC: allowed by ${source} of ${text(roleRef.kind)} ${JSON.stringify(text(roleRef.name))} to ${describeSubject(subject, namespace)}`,
        };
      }
    }
    const unique = [...new Set(errors)];
    return { allowed: false, reason: unique.length === 0 ? '' : `RBAC: ${unique.length === 1 ? unique[0] : `[${unique.join(', ')}]`}` };
  }

  /** The role a binding refers to, or why it cannot be had (a ClusterRoleBinding's Role is looked up in no namespace, so never found). */
  private role(kind: string, name: string, bindingNamespace: string): KubeObject | string {
    if (kind === 'ClusterRole')
      return this.store.get(resources.clusterRoles, undefined, name) ?? `clusterrole.${rbacGroup} ${JSON.stringify(name)} not found`;
    if (kind === 'Role') {
      return (
        (bindingNamespace !== '' ? this.store.get(resources.roles, bindingNamespace, name) : undefined) ??
        `role.${rbacGroup} ${JSON.stringify(name)} not found`
      );
    }
    return `unsupported role reference kind: ${JSON.stringify(kind)}`;
  }
}
