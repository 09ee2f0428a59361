/**
 * The `kubectl get` columns of the workload, RBAC and policy kinds, as kube-apiserver's printers
 * (pkg/printers/internalversion) make them. Objects are stored as given, not defaulted, so a cell falls
 * back to the value the real server would have defaulted (a Deployment's 1 replica, a Service's
 * ClusterIP type, a port's TCP).
 */
import { type KubeObject, isRecord } from './kube-object';
import { type Column, ageColumn, computedColumn, nameColumn, pathColumn } from './table';

type Fields = Record<string, unknown>;

const record = (value: unknown): Fields => (isRecord(value) ? value : {});
const list = (value: unknown): unknown[] => (Array.isArray(value) ? value : []);
const count = (value: unknown): number => (typeof value === 'number' ? value : 0);
const text = (value: unknown): string => (typeof value === 'string' ? value : '');

/** labels.FormatLabels: `a=1,b=2` sorted by key, `<none>` when empty. */
function formatLabels(labels: unknown): string {
  const entries = Object.entries(record(labels)).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return entries.length === 0 ? '<none>' : entries.map(([k, v]) => `${k}=${String(v)}`).join(',');
}

/** metav1.FormatLabelSelector: matchLabels and matchExpressions as one selector sorted by key, `<none>` when empty. */
function formatLabelSelector(selector: unknown): string {
  const { matchLabels, matchExpressions } = record(selector);
  const requirements: [string, string][] = Object.entries(record(matchLabels)).map(([k, v]) => [k, `${k}=${String(v)}`]);
  for (const e of list(matchExpressions).map(record)) {
    const key = text(e.key);
    const values = `(${list(e.values).map(String).sort().join(',')})`;
    const shown = { In: `${key} in ${values}`, NotIn: `${key} notin ${values}`, Exists: key, DoesNotExist: `!${key}` }[text(e.operator)];
    if (shown !== undefined) requirements.push([key, shown]);
  }
  requirements.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return requirements.length === 0 ? '<none>' : requirements.map(([, r]) => r).join(',');
}

const podSpec = (o: KubeObject) => record(record(record(o.spec).template).spec);
const containers = (o: KubeObject) => list(podSpec(o).containers).map(record);
const spec = (o: KubeObject) => record(o.spec);
const status = (o: KubeObject) => record(o.status);

/** Containers, Images and Selector: the `-o wide` columns of a workload. */
const workloadWide: Column[] = [
  computedColumn(
    'Containers',
    (o) =>
      containers(o)
        .map((c) => text(c.name))
        .join(','),
    'string',
    1,
  ),
  computedColumn(
    'Images',
    (o) =>
      containers(o)
        .map((c) => text(c.image))
        .join(','),
    'string',
    1,
  ),
  computedColumn('Selector', (o) => formatLabelSelector(spec(o).selector), 'string', 1),
];

export const deploymentColumns: Column[] = [
  nameColumn,
  computedColumn('Ready', (o) => `${count(status(o).readyReplicas)}/${typeof spec(o).replicas === 'number' ? spec(o).replicas : 1}`),
  computedColumn('Up-to-date', (o) => count(status(o).updatedReplicas)),
  computedColumn('Available', (o) => count(status(o).availableReplicas)),
  ageColumn,
  ...workloadWide,
];

export const daemonSetColumns: Column[] = [
  nameColumn,
  ...(
    [
      ['Desired', 'desiredNumberScheduled'],
      ['Current', 'currentNumberScheduled'],
      ['Ready', 'numberReady'],
      ['Up-to-date', 'updatedNumberScheduled'],
      ['Available', 'numberAvailable'],
    ] as const
  ).map(([name, field]) => computedColumn(name, (o) => count(status(o)[field]), 'integer')),
  computedColumn('Node Selector', (o) => formatLabels(podSpec(o).nodeSelector)),
  ageColumn,
  ...workloadWide,
];

const serviceType = (o: KubeObject) => text(spec(o).type) || 'ClusterIP';

function serviceExternalIp(o: KubeObject): string {
  const external = list(spec(o).externalIPs).map(String);
  switch (serviceType(o)) {
    case 'ClusterIP':
    case 'NodePort':
      return external.length > 0 ? external.join(',') : '<none>';
    case 'LoadBalancer': {
      const ingress = list(record(status(o).loadBalancer).ingress)
        .map(record)
        .map((i) => text(i.ip) || text(i.hostname))
        .filter((a) => a !== '');
      const all = [...new Set(ingress)].sort().concat(external);
      return all.length > 0 ? all.join(',') : '<pending>';
    }
    case 'ExternalName':
      return text(spec(o).externalName);
    default:
      return '<unknown>';
  }
}

function servicePorts(o: KubeObject): string {
  const ports = list(spec(o).ports)
    .map(record)
    .map((p) => {
      const protocol = text(p.protocol) || 'TCP';
      return typeof p.nodePort === 'number' && p.nodePort > 0
        ? `${String(p.port)}:${p.nodePort}/${protocol}`
        : `${String(p.port)}/${protocol}`;
    });
  return ports.length > 0 ? ports.join(',') : '<none>';
}

export const serviceColumns: Column[] = [
  nameColumn,
  computedColumn('Type', serviceType),
  computedColumn('Cluster-IP', (o) => text(list(spec(o).clusterIPs)[0]) || text(spec(o).clusterIP) || '<none>'),
  computedColumn('External-IP', serviceExternalIp),
  computedColumn('Port(s)', servicePorts),
  ageColumn,
  computedColumn('Selector', (o) => formatLabels(spec(o).selector), 'string', 1),
];

export const serviceAccountColumns: Column[] = [nameColumn, computedColumn('Secrets', (o) => list(o.secrets).length), ageColumn];

/** Roles and ClusterRoles have no printer: the default table, Name and Created At. */
export const createdAtColumns: Column[] = [
  nameColumn,
  pathColumn({ name: 'Created At', type: 'string', jsonPath: '.metadata.creationTimestamp' }),
];

/** rbac.SubjectsStrings: one kind of subject, joined as kubectl shows it (service accounts as namespace/name). */
const subjects = (kind: string) => (o: KubeObject) =>
  list(o.subjects)
    .map(record)
    .filter((s) => s.kind === kind)
    .map((s) => (kind === 'ServiceAccount' ? `${text(s.namespace)}/${text(s.name)}` : text(s.name)))
    .join(', ');

export const bindingColumns: Column[] = [
  nameColumn,
  computedColumn('Role', (o) => `${text(record(o.roleRef).kind)}/${text(record(o.roleRef).name)}`),
  ageColumn,
  computedColumn('Users', subjects('User'), 'string', 1),
  computedColumn('Groups', subjects('Group'), 'string', 1),
  computedColumn('ServiceAccounts', subjects('ServiceAccount'), 'string', 1),
];

export const priorityClassColumns: Column[] = [
  nameColumn,
  computedColumn('Value', (o) => count(o.value), 'integer'),
  computedColumn('Global-Default', (o) => o.globalDefault === true, 'boolean'),
  ageColumn,
  computedColumn('PreemptionPolicy', (o) => text(o.preemptionPolicy) || 'PreemptLowerPriority'),
];

export const validatingAdmissionPolicyColumns: Column[] = [
  nameColumn,
  computedColumn('Validations', (o) => list(spec(o).validations).length, 'integer'),
  computedColumn('ParamKind', (o) =>
    isRecord(spec(o).paramKind) ? `${text(record(spec(o).paramKind).apiVersion)}/${text(record(spec(o).paramKind).kind)}` : '<unset>',
  ),
  ageColumn,
];

function paramRef(o: KubeObject): string {
  if (!isRecord(spec(o).paramRef)) return '<unset>';
  const ref = record(spec(o).paramRef);
  if (text(ref.name) !== '') return text(ref.namespace) !== '' ? `${text(ref.namespace)}/${text(ref.name)}` : `*/${text(ref.name)}`;
  return isRecord(ref.selector) ? formatLabelSelector(ref.selector) : '<unset>';
}

export const validatingAdmissionPolicyBindingColumns: Column[] = [
  nameColumn,
  computedColumn('PolicyName', (o) => text(spec(o).policyName)),
  computedColumn('ParamRef', paramRef),
  ageColumn,
];

/** An Event's columns in either API: the object it is about and its text are named differently in each. */
export const eventColumns = (about: 'involvedObject' | 'regarding', textName: string, textField: string): Column[] => [
  nameColumn,
  pathColumn({ name: 'Type', type: 'string', jsonPath: '.type' }),
  pathColumn({ name: 'Reason', type: 'string', jsonPath: '.reason' }),
  computedColumn('Object', (o) => {
    const object = o[about];
    return isRecord(object) ? `${String(object.kind).toLowerCase()}/${String(object.name)}` : '';
  }),
  pathColumn({ name: textName, type: 'string', jsonPath: `.${textField}` }),
  ageColumn,
];
