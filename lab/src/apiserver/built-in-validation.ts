/**
 * kube-apiserver's own validation of built-in kinds, rule by rule, where Strait, helm or kubectl could send
 * what the real server refuses; each rule names its source in kubernetes/kubernetes (release-1.31). Not
 * every rule of each kind: those a chart, a controller or an operator's kubectl can get wrong.
 */
import { type KubeObject, isRecord } from './kube-object';
import { validateLabels } from './object-meta-validation';
import type { StatusCause } from './status';
import { selectorSelects } from './selectors';
import { invalidValue, required, unsupported, validateNameFormat } from './validation';

const forbidden = (field: string, detail: string): StatusCause => ({
  reason: 'FieldValueForbidden',
  message: `Forbidden: ${detail}`,
  field,
});
const immutable = (field: string, value: unknown) => invalidValue(field, value, 'field is immutable');
const record = (value: unknown): Record<string, unknown> => (isRecord(value) ? value : {});
const records = (value: unknown): Record<string, unknown>[] => (Array.isArray(value) ? value.filter(isRecord) : []);
const strings = (value: unknown): string[] => (Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : []);
const same = (a: unknown, b: unknown) => JSON.stringify(a ?? null) === JSON.stringify(b ?? null);

const configKeyPattern = /^[-._a-zA-Z0-9]+$/;
const maxDataBytes = 1024 * 1024;

/** IsConfigMapKey, for each key of a ConfigMap's or a Secret's `field` (pkg/apis/core/validation). */
function configKeyCauses(field: string, data: Record<string, unknown>): StatusCause[] {
  const causes: StatusCause[] = [];
  for (const key of Object.keys(data)) {
    const at = `${field}[${key}]`;
    if (key.length > 253) causes.push(invalidValue(at, key, 'must be no more than 253 characters'));
    if (!configKeyPattern.test(key))
      causes.push(
        invalidValue(
          at,
          key,
          "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')",
        ),
      );
    if (key === '.') causes.push(invalidValue(at, key, "must not be '.'"));
    else if (key.startsWith('..')) causes.push(invalidValue(at, key, "must not start with '..'"));
  }
  return causes;
}

const tooLong = (field: string, max: number): StatusCause => ({
  reason: 'FieldValueTooLong',
  message: `Too long: must have at most ${max} bytes`,
  field,
});

/** The bytes a `data` map of base64 values holds. */
const decodedBytes = (data: Record<string, unknown>) =>
  Object.values(data).reduce<number>((sum, v) => sum + (typeof v === 'string' ? Buffer.from(v, 'base64').length : 0), 0);

/** A Secret (pkg/apis/core/validation ValidateSecret): config keys, 1 MiB at most, a service account token names its ServiceAccount. */
export function validateSecret(secret: KubeObject): StatusCause[] {
  const data = record(secret.data);
  const causes = configKeyCauses('data', data);
  if (decodedBytes(data) > maxDataBytes) causes.push(tooLong('data', maxDataBytes));
  if (secret.type === 'kubernetes.io/service-account-token' && !record(secret.metadata.annotations)['kubernetes.io/service-account.name'])
    causes.push(required('metadata.annotations[kubernetes.io/service-account.name]'));
  return causes;
}

/** ValidateSecretUpdate: the type stays, and an immutable Secret's data too. */
export function validateSecretUpdate(next: KubeObject, current: KubeObject): StatusCause[] {
  const causes: StatusCause[] = [];
  if ((next.type ?? 'Opaque') !== (current.type ?? 'Opaque')) causes.push(immutable('type', next.type));
  if (current.immutable === true && (!same(next.data, current.data) || next.immutable !== true))
    causes.push({ reason: 'FieldValueForbidden', message: 'Forbidden: field is immutable when `immutable` is set', field: 'data' });
  return causes;
}

/** A ConfigMap (ValidateConfigMap): config keys, none in both data and binaryData, 1 MiB at most. */
export function validateConfigMap(configMap: KubeObject): StatusCause[] {
  const data = record(configMap.data);
  const binary = record(configMap.binaryData);
  const causes = [...configKeyCauses('data', data), ...configKeyCauses('binaryData', binary)];
  for (const key of Object.keys(data))
    if (Object.hasOwn(binary, key)) causes.push(invalidValue(`data[${key}]`, key, 'duplicate of key present in binaryData'));
  const bytes = Object.values(data).reduce<number>((sum, v) => sum + Buffer.byteLength(String(v)), 0) + decodedBytes(binary);
  if (bytes > maxDataBytes) causes.push(tooLong('', maxDataBytes));
  return causes;
}

/** A Lease (pkg/apis/coordination/validation ValidateLeaseSpec). */
export function validateLease(lease: KubeObject): StatusCause[] {
  const spec = record(lease.spec);
  const causes: StatusCause[] = [];
  if (typeof spec.leaseDurationSeconds === 'number' && spec.leaseDurationSeconds <= 0)
    causes.push(invalidValue('spec.leaseDurationSeconds', spec.leaseDurationSeconds, 'must be greater than 0'));
  if (typeof spec.leaseTransitions === 'number' && spec.leaseTransitions < 0)
    causes.push(invalidValue('spec.leaseTransitions', spec.leaseTransitions, 'must be greater than or equal to 0'));
  return causes;
}

/**
 * A DaemonSet's or a Deployment's spec (pkg/apis/apps/validation ValidateDaemonSetSpec,
 * ValidateDeploymentSpec, and the pod template's ValidatePodTemplateSpec as far as a chart can get it
 * wrong): a selector, not empty, that selects the template's labels; containers, each named and with an image.
 */
function validateWorkload(kind: 'daemonset' | 'deployment') {
  return (workload: KubeObject): StatusCause[] => {
    const spec = record(workload.spec);
    const template = record(spec.template);
    const labels = record(record(template.metadata).labels);
    const causes: StatusCause[] = [];
    if (!isRecord(spec.selector)) causes.push(required('spec.selector'));
    else if (Object.keys(record(spec.selector.matchLabels)).length === 0 && records(spec.selector.matchExpressions).length === 0)
      causes.push(invalidValue('spec.selector', spec.selector, `empty selector is invalid for ${kind}`));
    else if (!selectorSelects(spec.selector, labels))
      causes.push(invalidValue('spec.template.metadata.labels', labels, '`selector` does not match template `labels`'));
    const containers = records(record(template.spec).containers);
    if (containers.length === 0) causes.push(required('spec.template.spec.containers'));
    containers.forEach((container, i) => {
      if (!container.name) causes.push(required(`spec.template.spec.containers[${i}].name`));
      if (!container.image) causes.push(required(`spec.template.spec.containers[${i}].image`));
    });
    return causes;
  };
}
export const validateDaemonSet = validateWorkload('daemonset');
export const validateDeployment = validateWorkload('deployment');

/** apps/v1 ValidateDaemonSetUpdate, ValidateDeploymentUpdate: the selector stays. */
export const validateWorkloadUpdate = (next: KubeObject, current: KubeObject): StatusCause[] =>
  same(record(next.spec).selector, record(current.spec).selector) ? [] : [immutable('spec.selector', record(next.spec).selector)];

/** A Role's or a ClusterRole's rules (pkg/apis/rbac/validation ValidatePolicyRule). */
export function validateRole(role: KubeObject): StatusCause[] {
  const causes: StatusCause[] = [];
  records(role.rules).forEach((rule, i) => {
    if (!Array.isArray(rule.verbs) || rule.verbs.length === 0)
      causes.push(required(`rules[${i}].verbs`, 'verbs must contain at least one value'));
    const urls = Array.isArray(rule.nonResourceURLs) && rule.nonResourceURLs.length > 0;
    if (!urls && (!Array.isArray(rule.apiGroups) || rule.apiGroups.length === 0))
      causes.push(required(`rules[${i}].apiGroups`, 'resource rules must supply at least one api group'));
  });
  return causes;
}

const rbacApiGroup = 'rbac.authorization.k8s.io';

/** A RoleBinding's or a ClusterRoleBinding's roleRef and subjects (ValidateRoleBinding, ValidateRoleBindingSubject). */
function validateBinding(clusterWide: boolean) {
  return (binding: KubeObject): StatusCause[] => {
    const roleRef = record(binding.roleRef);
    const causes: StatusCause[] = [];
    if (roleRef.apiGroup !== rbacApiGroup) causes.push(unsupported('roleRef.apiGroup', roleRef.apiGroup, [rbacApiGroup]));
    const kinds = clusterWide ? ['ClusterRole'] : ['Role', 'ClusterRole'];
    if (!kinds.includes(roleRef.kind as string)) causes.push(unsupported('roleRef.kind', roleRef.kind, kinds));
    if (!roleRef.name) causes.push(required('roleRef.name'));
    records(binding.subjects).forEach((subject, i) => {
      const at = `subjects[${i}]`;
      if (!subject.name) causes.push(required(`${at}.name`));
      if (subject.kind === 'ServiceAccount') {
        if (subject.apiGroup) causes.push(unsupported(`${at}.apiGroup`, subject.apiGroup, ['']));
        if (clusterWide && !subject.namespace) causes.push(required(`${at}.namespace`));
      } else if (subject.kind === 'User' || subject.kind === 'Group') {
        if (subject.apiGroup !== rbacApiGroup) causes.push(unsupported(`${at}.apiGroup`, subject.apiGroup, [rbacApiGroup]));
      } else {
        causes.push(unsupported(`${at}.kind`, subject.kind, ['ServiceAccount', 'User', 'Group']));
      }
    });
    return causes;
  };
}
export const validateRoleBinding = validateBinding(false);
export const validateClusterRoleBinding = validateBinding(true);

/** ValidateRoleBindingUpdate: `cannot change roleRef` (delete the binding and create another). */
export const validateBindingUpdate = (next: KubeObject, current: KubeObject): StatusCause[] =>
  same(next.roleRef, current.roleRef) ? [] : [invalidValue('roleRef', next.roleRef, 'cannot change roleRef')];

/** util/validation IsValidPortNum. */
const portNumberCauses = (field: string, port: unknown): StatusCause[] =>
  typeof port === 'number' && Number.isInteger(port) && port >= 1 && port <= 65535
    ? []
    : [invalidValue(field, port ?? 0, 'must be between 1 and 65535, inclusive')];

/** util/validation IsValidPortName: an IANA service name. */
function portNameCauses(field: string, name: string): StatusCause[] {
  const problems: string[] = [];
  if (name.length > 15) problems.push('must be no more than 15 characters');
  if (!/^[-a-z0-9]+$/.test(name)) problems.push('must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)');
  if (!/[a-z]/.test(name)) problems.push('must contain at least one letter (a-z)');
  if (name.includes('--')) problems.push('must not contain consecutive hyphens');
  if (name.startsWith('-') || name.endsWith('-')) problems.push('must not begin or end with a hyphen');
  return problems.map((problem) => invalidValue(field, name, problem));
}

const serviceTypes = ['ClusterIP', 'ExternalName', 'LoadBalancer', 'NodePort'];
const protocols = ['SCTP', 'TCP', 'UDP'];

/** validateServicePort: a name (when there are several ports, a unique DNS label), the port, the protocol, the target port. */
function servicePortCauses(port: Record<string, unknown>, at: string, several: boolean, names: Set<string>): StatusCause[] {
  const causes: StatusCause[] = [];
  const name = typeof port.name === 'string' ? port.name : '';
  if (several && name === '') causes.push(required(`${at}.name`));
  else if (name !== '') {
    causes.push(...validateNameFormat(name, 'label', `${at}.name`));
    if (names.has(name))
      causes.push({ reason: 'FieldValueDuplicate', message: `Duplicate value: ${JSON.stringify(name)}`, field: `${at}.name` });
    names.add(name);
  }
  causes.push(...portNumberCauses(`${at}.port`, port.port));
  if (!port.protocol) causes.push(required(`${at}.protocol`));
  else if (!protocols.includes(port.protocol as string)) causes.push(unsupported(`${at}.protocol`, port.protocol, protocols));
  // ValidatePortNumOrName: a number is a port, a string a port name.
  if (typeof port.targetPort === 'string') causes.push(...portNameCauses(`${at}.targetPort`, port.targetPort));
  else causes.push(...portNumberCauses(`${at}.targetPort`, port.targetPort));
  return causes;
}

/** How Go's %#v prints the (protocol, port) key a duplicate port is reported by. */
const servicePortKey = (protocol: unknown, port: unknown) =>
  `core.ServicePort{Name:"", Protocol:${JSON.stringify(protocol ?? '')}, AppProtocol:(*string)(nil), Port:${Number(port ?? 0)}, TargetPort:intstr.IntOrString{Type:0, IntVal:0, StrVal:""}, NodePort:0}`;

/**
 * A Service (pkg/apis/core/validation ValidateService, after the defaults and the cluster IP's
 * allocation): ports unless headless or ExternalName, each valid and none twice by (protocol, port);
 * no headless NodePort or LoadBalancer; an ExternalName's externalName a DNS subdomain; the selector
 * labels; a known sessionAffinity and type; no nodePort on a ClusterIP Service.
 */
export function validateService(service: KubeObject): StatusCause[] {
  const spec = record(service.spec);
  const ports = records(spec.ports);
  const headless = strings(spec.clusterIPs)[0] === 'None';
  const causes: StatusCause[] = [];
  if (ports.length === 0 && !headless && spec.type !== 'ExternalName') causes.push(required('spec.ports'));
  if ((spec.type === 'LoadBalancer' || spec.type === 'NodePort') && headless)
    causes.push(invalidValue('spec.clusterIPs[0]', 'None', `may not be set to 'None' for ${spec.type} services`));
  if (spec.type === 'ExternalName') {
    const cname = typeof spec.externalName === 'string' ? spec.externalName.replace(/\.$/, '') : '';
    if (cname === '') causes.push(required('spec.externalName'));
    else causes.push(...validateNameFormat(cname, 'subdomain', 'spec.externalName'));
  }
  const names = new Set<string>();
  ports.forEach((port, i) => causes.push(...servicePortCauses(port, `spec.ports[${i}]`, ports.length > 1, names)));
  if (isRecord(spec.selector)) causes.push(...validateLabels(spec.selector as Record<string, string>, 'spec.selector'));
  if (!['ClientIP', 'None'].includes(spec.sessionAffinity as string))
    causes.push(unsupported('spec.sessionAffinity', spec.sessionAffinity, ['ClientIP', 'None']));
  if (!serviceTypes.includes(spec.type as string)) causes.push(unsupported('spec.type', spec.type, serviceTypes));
  if (spec.type === 'ClusterIP')
    ports.forEach((port, i) => {
      if (port.nodePort) causes.push(forbidden(`spec.ports[${i}].nodePort`, "may not be used when `type` is 'ClusterIP'"));
    });
  const seen = new Set<string>();
  ports.forEach((port, i) => {
    const key = servicePortKey(port.protocol, port.port);
    if (seen.has(key)) causes.push({ reason: 'FieldValueDuplicate', message: `Duplicate value: ${key}`, field: `spec.ports[${i}]` });
    seen.add(key);
  });
  return causes;
}
