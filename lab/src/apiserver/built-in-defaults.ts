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

const record = (value: unknown): Record<string, unknown> => (isRecord(value) ? value : {});

/**
 * A Service's defaults (pkg/apis/core/v1/defaults.go SetDefaults_Service): type ClusterIP,
 * sessionAffinity None, each port TCP with its targetPort the port, the traffic policies Cluster
 * (externalTrafficPolicy for a service reachable from outside), allocateLoadBalancerNodePorts true for
 * a LoadBalancer.
 */
export function defaultService(service: KubeObject): void {
  const spec = record(service.spec);
  service.spec = spec;
  spec.sessionAffinity ||= 'None';
  if (spec.sessionAffinity === 'None') delete spec.sessionAffinityConfig;
  if (spec.sessionAffinity === 'ClientIP' && record(record(spec.sessionAffinityConfig).clientIP).timeoutSeconds === undefined)
    spec.sessionAffinityConfig = { clientIP: { timeoutSeconds: 10800 } };
  spec.type ||= 'ClusterIP';
  for (const port of Array.isArray(spec.ports) ? spec.ports.filter(isRecord) : []) {
    port.protocol ||= 'TCP';
    if (!port.targetPort && typeof port.port === 'number') port.targetPort = port.port;
  }
  const externalIPs = Array.isArray(spec.externalIPs) && spec.externalIPs.length > 0;
  const externallyAccessible = spec.type === 'LoadBalancer' || spec.type === 'NodePort' || (spec.type === 'ClusterIP' && externalIPs);
  if (externallyAccessible) spec.externalTrafficPolicy ||= 'Cluster';
  if (['ClusterIP', 'NodePort', 'LoadBalancer'].includes(spec.type as string)) spec.internalTrafficPolicy ??= 'Cluster';
  if (spec.type === 'LoadBalancer') spec.allocateLoadBalancerNodePorts ??= true;
}

const metadataNameLabel = 'kubernetes.io/metadata.name';

/**
 * A Namespace is labelled with its name (SetDefaults_Namespace, and the namespace strategy's
 * Canonicalize once a generated name is known): the label always says the name, whatever was sent.
 */
export function defaultNamespace(namespace: KubeObject): void {
  if (!namespace.metadata.name) return;
  namespace.metadata.labels = { ...namespace.metadata.labels, [metadataNameLabel]: namespace.metadata.name };
}
