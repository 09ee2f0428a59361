/**
 * The resources this API server serves: the built-ins Strait's controller, agent, lab and Helm chart use
 * (as in Kubernetes: scope, short names, status subresource, the `kubectl get` columns) and one per CRD.
 * Built-ins are stored as given (no schema beyond apiVersion, kind and metadata) but for the rules of
 * built-in-validation.ts; custom resources are checked against their CRD's openAPIV3Schema, and served
 * while their CRD is stored (served-types.ts).
 */
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import {
  bindingColumns,
  createdAtColumns,
  daemonSetColumns,
  deploymentColumns,
  eventColumns,
  priorityClassColumns,
  serviceAccountColumns,
  serviceColumns,
  validatingAdmissionPolicyBindingColumns,
  validatingAdmissionPolicyColumns,
} from './built-in-columns';
import { type KubeObject, isRecord } from './kube-object';
import { validateValidatingAdmissionPolicy, validateValidatingAdmissionPolicyBinding } from './admission-policy-validation';
import { type Column, ageColumn, computedColumn, nameColumn, pathColumn } from './table';
import { defaultBinding, defaultNamespace, defaultSecret, defaultService } from './built-in-defaults';
import {
  validateBindingUpdate,
  validateClusterRoleBinding,
  validateConfigMap,
  validateDaemonSet,
  validateDeployment,
  validateLease,
  validateRole,
  validateRoleBinding,
  validateSecret,
  validateSecretUpdate,
  validateService,
  validateWorkloadUpdate,
} from './built-in-validation';
import { validateCoreEvent, validateEventsV1Create, validateEventsV1Update } from './event-validation';
import { establishedStatus, validateCustomResourceDefinition, validateCustomResourceDefinitionUpdate } from './custom-resource-definitions';
import type { StatusCause } from './status';
import { allocateService } from './service-allocation';
import type { Store } from './store';
import { type NameFormat, type SchemaChecker, schemaChecker } from './validation';

export interface ResourceType {
  /** '' for the core group. */
  group: string;
  version: string;
  kind: string;
  listKind: string;
  plural: string;
  singular: string;
  namespaced: boolean;
  shortNames: string[];
  categories: string[];
  /** PUT/PATCH of .../status change only status; the main endpoint keeps the stored status. */
  statusSubresource: boolean;
  /** A review (SelfSubjectAccessReview): only created, answered from the request, never stored. */
  createOnly: boolean;
  /**
   * A custom resource's schema checker: such objects are pruned and validated, count generations,
   * drop status on create, are updated only with a resourceVersion and never created by a PUT, take
   * no strategic merge patch, and a DELETE answers with the object (all as the real server does).
   */
  schema?: SchemaChecker;
  /** The CRD's openAPIV3Schema as written (published in the OpenAPI documents). */
  openAPIV3Schema?: Record<string, unknown>;
  /** A PUT of a missing object creates it (Leases, Events), as their real strategies allow. */
  createOnUpdate: boolean;
  /** Field selectors beyond metadata.name and metadata.namespace (a Pod's spec.nodeName). */
  fields: Record<string, (object: KubeObject) => string>;
  columns: Column[];
  /** The real server's defaulting of a built-in kind (./built-in-defaults.ts), as a create's or an update's body is decoded. */
  defaults?: (object: KubeObject) => void;
  /** What the real server sets on create (a Namespace is Active, a Pod Pending). */
  onCreate?: (object: KubeObject) => void;
  /** What the real server sets on an update of the object (not of its status), from the stored one. */
  onUpdate?: (next: KubeObject, current: KubeObject) => void;
  /**
   * What the real registry allocates before validation (a Service's cluster IP), from
   * what other objects hold; on an update, `current`'s allocations are kept. Throws the 422 of a
   * request it cannot satisfy.
   */
  allocate?: (object: KubeObject, store: Store, current?: KubeObject) => void;
  /** How the name is checked: a DNS subdomain unless said otherwise (a Namespace's is a label, a Service's a DNS-1035 label). */
  nameFormat?: NameFormat;
  /** The real server's validation of a built-in kind (./built-in-validation.ts), on create and update. */
  validate?: (object: KubeObject) => StatusCause[];
  /** What an update may not change (a CRD's group and scope). */
  validateUpdate?: (next: KubeObject, current: KubeObject) => StatusCause[];
}

/** The group of Roles, ClusterRoles and their bindings. */
export const rbacGroup = 'rbac.authorization.k8s.io';

export const apiVersionOf = (type: ResourceType) => (type.group ? `${type.group}/${type.version}` : type.version);

/** `nodedataplanes.strait.io`, `nodes`: how errors and RBAC name a resource. */
export const groupResource = (type: ResourceType) => (type.group ? `${type.plural}.${type.group}` : type.plural);

/** A DELETE answers with the object for custom resources, Pods and Namespaces; with a Status Success for the other built-ins. */
export const deleteAnswersWithObject = (type: ResourceType) =>
  type.schema !== undefined || type.kind === 'Pod' || type.kind === 'Namespace';

const readWrite = ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'];
export const verbsOf = (type: ResourceType) => (type.createOnly ? ['create'] : readWrite);

type BuiltIn = Pick<ResourceType, 'group' | 'version' | 'kind' | 'plural' | 'namespaced'> & Partial<ResourceType>;

function builtIn(spec: BuiltIn): ResourceType {
  return {
    listKind: `${spec.kind}List`,
    singular: spec.kind.toLowerCase(),
    shortNames: [],
    categories: [],
    statusSubresource: false,
    createOnly: false,
    createOnUpdate: false,
    fields: {},
    columns: [nameColumn, ageColumn],
    ...spec,
  };
}

/** A Node's STATUS column: Ready, NotReady or Unknown, from its Ready condition. */
function nodeStatus(node: KubeObject): string {
  const conditions = (isRecord(node.status) && Array.isArray(node.status.conditions) ? node.status.conditions : []) as Record<
    string,
    unknown
  >[];
  const ready = conditions.find((c) => c.type === 'Ready');
  return ready?.status === 'True' ? 'Ready' : ready?.status === 'False' ? 'NotReady' : 'Unknown';
}

/** `object[a][b]` as a field selector compares it ('' when absent). */
const text = (object: KubeObject, a: string, b: string) =>
  isRecord(object[a]) && typeof object[a][b] === 'string' ? (object[a][b] as string) : '';

const entries = (field: string) => computedColumn('Data', (o) => String(isRecord(o[field]) ? Object.keys(o[field] as object).length : 0));

/**
 * The namespace strategy's PrepareForCreate: Active, with the `kubernetes` finalizer in spec (the
 * namespace controller's, which this server does at once on delete); labelled with its name once a
 * generated one is known (Canonicalize).
 */
function prepareNamespace(namespace: KubeObject): void {
  namespace.status = { phase: 'Active' };
  const spec = isRecord(namespace.spec) ? namespace.spec : {};
  const finalizers = Array.isArray(spec.finalizers) ? spec.finalizers : [];
  namespace.spec = { ...spec, finalizers: finalizers.includes('kubernetes') ? finalizers : [...finalizers, 'kubernetes'] };
  defaultNamespace(namespace);
}

export const builtInTypes: ResourceType[] = [
  builtIn({
    group: '',
    version: 'v1',
    kind: 'Namespace',
    plural: 'namespaces',
    namespaced: false,
    shortNames: ['ns'],
    statusSubresource: true,
    columns: [nameColumn, pathColumn({ name: 'Status', type: 'string', jsonPath: '.status.phase' }), ageColumn],
    nameFormat: 'label',
    defaults: defaultNamespace,
    onCreate: prepareNamespace,
    onUpdate: (next, current) => {
      // The namespace strategy's PrepareForUpdate: spec.finalizers change only through /finalize.
      const { finalizers: _, ...spec } = isRecord(next.spec) ? next.spec : {};
      next.spec = isRecord(current.spec) && current.spec.finalizers ? { ...spec, finalizers: current.spec.finalizers } : spec;
      defaultNamespace(next);
    },
  }),
  builtIn({
    group: '',
    version: 'v1',
    kind: 'Node',
    plural: 'nodes',
    namespaced: false,
    shortNames: ['no'],
    statusSubresource: true,
    columns: [nameColumn, computedColumn('Status', nodeStatus), ageColumn],
  }),
  builtIn({
    group: '',
    version: 'v1',
    kind: 'Pod',
    plural: 'pods',
    namespaced: true,
    shortNames: ['po'],
    categories: ['all'],
    statusSubresource: true,
    fields: { 'spec.nodeName': (o) => text(o, 'spec', 'nodeName'), 'status.phase': (o) => text(o, 'status', 'phase') },
    columns: [nameColumn, pathColumn({ name: 'Status', type: 'string', jsonPath: '.status.phase' }), ageColumn],
    onCreate: (o) => void (o.status = { phase: 'Pending', ...(isRecord(o.status) ? o.status : {}) }),
  }),
  builtIn({
    group: '',
    version: 'v1',
    kind: 'Secret',
    plural: 'secrets',
    namespaced: true,
    defaults: defaultSecret,
    validate: validateSecret,
    validateUpdate: validateSecretUpdate,
    // pkg/registry/core/secret/strategy.go SelectableFields: a Secret's type is a field selector too.
    fields: { type: (o) => (typeof o.type === 'string' ? o.type : '') },
    columns: [nameColumn, pathColumn({ name: 'Type', type: 'string', jsonPath: '.type' }), entries('data'), ageColumn],
  }),
  builtIn({
    group: '',
    version: 'v1',
    kind: 'ConfigMap',
    plural: 'configmaps',
    namespaced: true,
    validate: validateConfigMap,
    shortNames: ['cm'],
    columns: [nameColumn, entries('data'), ageColumn],
  }),
  builtIn({
    group: '',
    version: 'v1',
    kind: 'Event',
    plural: 'events',
    namespaced: true,
    shortNames: ['ev'],
    createOnUpdate: true,
    validate: validateCoreEvent,
    fields: Object.fromEntries(
      ['kind', 'namespace', 'name', 'uid', 'apiVersion', 'resourceVersion', 'fieldPath'].map((f) => [
        `involvedObject.${f}`,
        (o: KubeObject) => text(o, 'involvedObject', f),
      ]),
    ),
    columns: eventColumns('involvedObject', 'Message', 'message'),
  }),
  // Stored as core/v1 Events, converted each way (event-conversion.ts), as kube-apiserver stores them.
  builtIn({
    group: 'events.k8s.io',
    version: 'v1',
    kind: 'Event',
    plural: 'events',
    namespaced: true,
    shortNames: ['ev'],
    createOnUpdate: true,
    validate: validateEventsV1Create,
    validateUpdate: validateEventsV1Update,
    columns: eventColumns('regarding', 'Note', 'note'),
  }),
  builtIn({
    group: 'coordination.k8s.io',
    version: 'v1',
    kind: 'Lease',
    plural: 'leases',
    namespaced: true,
    validate: validateLease,
    createOnUpdate: true,
    columns: [nameColumn, pathColumn({ name: 'Holder', type: 'string', jsonPath: '.spec.holderIdentity' }), ageColumn],
  }),
  builtIn({
    group: 'apiextensions.k8s.io',
    version: 'v1',
    kind: 'CustomResourceDefinition',
    plural: 'customresourcedefinitions',
    namespaced: false,
    shortNames: ['crd', 'crds'],
    categories: ['api-extensions'],
    statusSubresource: true,
    columns: createdAtColumns,
    validate: validateCustomResourceDefinition,
    validateUpdate: validateCustomResourceDefinitionUpdate,
    onCreate: (crd) => void (crd.status = establishedStatus(crd)),
    onUpdate: (next, current) => void (next.status = establishedStatus(next, current)),
  }),
  // What Strait's Helm chart renders, printed as kube-apiserver prints them.
  builtIn({
    group: '',
    version: 'v1',
    kind: 'ServiceAccount',
    plural: 'serviceaccounts',
    namespaced: true,
    shortNames: ['sa'],
    columns: serviceAccountColumns,
  }),
  builtIn({
    group: '',
    version: 'v1',
    kind: 'Service',
    plural: 'services',
    namespaced: true,
    shortNames: ['svc'],
    categories: ['all'],
    statusSubresource: true,
    columns: serviceColumns,
    nameFormat: 'dns1035',
    defaults: defaultService,
    allocate: allocateService,
    validate: validateService,
  }),
  builtIn({
    group: 'apps',
    version: 'v1',
    kind: 'Deployment',
    plural: 'deployments',
    namespaced: true,
    validate: validateDeployment,
    validateUpdate: validateWorkloadUpdate,
    shortNames: ['deploy'],
    categories: ['all'],
    statusSubresource: true,
    columns: deploymentColumns,
  }),
  // What the pool IPAM reads: a StatefulSet pod keeps its addresses while its ordinal is below replicas.
  builtIn({
    group: 'apps',
    version: 'v1',
    kind: 'StatefulSet',
    plural: 'statefulsets',
    namespaced: true,
    shortNames: ['sts'],
    categories: ['all'],
    statusSubresource: true,
    columns: [
      nameColumn,
      computedColumn(
        'Ready',
        (o) => `${isRecord(o.status) ? Number(o.status.readyReplicas ?? 0) : 0}/${isRecord(o.spec) ? Number(o.spec.replicas ?? 1) : 1}`,
      ),
      ageColumn,
    ],
  }),
  builtIn({
    group: 'apps',
    version: 'v1',
    kind: 'DaemonSet',
    plural: 'daemonsets',
    namespaced: true,
    validate: validateDaemonSet,
    validateUpdate: validateWorkloadUpdate,
    shortNames: ['ds'],
    categories: ['all'],
    statusSubresource: true,
    columns: daemonSetColumns,
  }),
  builtIn({
    group: rbacGroup,
    version: 'v1',
    kind: 'ClusterRole',
    plural: 'clusterroles',
    namespaced: false,
    columns: createdAtColumns,
    validate: validateRole,
  }),
  builtIn({
    group: rbacGroup,
    version: 'v1',
    kind: 'ClusterRoleBinding',
    plural: 'clusterrolebindings',
    namespaced: false,
    defaults: defaultBinding,
    validate: validateClusterRoleBinding,
    validateUpdate: validateBindingUpdate,
    columns: bindingColumns,
  }),
  builtIn({
    group: rbacGroup,
    version: 'v1',
    kind: 'Role',
    plural: 'roles',
    namespaced: true,
    columns: createdAtColumns,
    validate: validateRole,
  }),
  builtIn({
    group: rbacGroup,
    version: 'v1',
    kind: 'RoleBinding',
    plural: 'rolebindings',
    namespaced: true,
    columns: bindingColumns,
    defaults: defaultBinding,
    validate: validateRoleBinding,
    validateUpdate: validateBindingUpdate,
  }),
  // Evaluated on every write they match (admission-policy.ts).
  builtIn({
    group: 'admissionregistration.k8s.io',
    version: 'v1',
    kind: 'ValidatingAdmissionPolicy',
    plural: 'validatingadmissionpolicies',
    namespaced: false,
    categories: ['api-extensions'],
    statusSubresource: true,
    columns: validatingAdmissionPolicyColumns,
    validate: validateValidatingAdmissionPolicy,
  }),
  builtIn({
    group: 'admissionregistration.k8s.io',
    version: 'v1',
    kind: 'ValidatingAdmissionPolicyBinding',
    plural: 'validatingadmissionpolicybindings',
    namespaced: false,
    categories: ['api-extensions'],
    columns: validatingAdmissionPolicyBindingColumns,
    validate: validateValidatingAdmissionPolicyBinding,
  }),
  // What `kubectl auth can-i` asks: may I?
  builtIn({
    group: 'authorization.k8s.io',
    version: 'v1',
    kind: 'SelfSubjectAccessReview',
    plural: 'selfsubjectaccessreviews',
    namespaced: false,
    createOnly: true,
  }),
  builtIn({
    group: 'scheduling.k8s.io',
    version: 'v1',
    kind: 'PriorityClass',
    plural: 'priorityclasses',
    namespaced: false,
    shortNames: ['pc'],
    columns: priorityClassColumns,
  }),
];

interface CrdSpec {
  group: string;
  scope: 'Namespaced' | 'Cluster';
  names: { kind: string; listKind?: string; plural: string; singular?: string; shortNames?: string[]; categories?: string[] };
  versions: {
    name: string;
    served: boolean;
    storage: boolean;
    subresources?: { status?: object };
    additionalPrinterColumns?: {
      name: string;
      type: 'string' | 'integer' | 'number' | 'boolean' | 'date';
      jsonPath: string;
      description?: string;
      priority?: number;
      format?: string;
    }[];
    schema?: { openAPIV3Schema?: Record<string, unknown> };
  }[];
}

type CrdVersion = CrdSpec['versions'][number] & { schema: { openAPIV3Schema: Record<string, unknown> } };

/** The version a CustomResourceDefinition's resource is served at: its storage version (one version per CRD here). */
export function servedVersion(crd: KubeObject): CrdVersion {
  const served = (crd.spec as CrdSpec).versions.find((v) => v.storage && v.served);
  if (!served) throw new Error(`CRD ${crd.metadata.name}: no served storage version`);
  if (!served.schema?.openAPIV3Schema) throw new Error(`CRD ${crd.metadata.name}: no openAPIV3Schema`);
  return served as CrdVersion;
}

/** The resource a CustomResourceDefinition defines, served at its storage version. */
export function customResourceType(crd: KubeObject): ResourceType {
  const spec = crd.spec as CrdSpec;
  const served = servedVersion(crd);
  const printed = served.additionalPrinterColumns;
  return {
    group: spec.group,
    version: served.name,
    kind: spec.names.kind,
    listKind: spec.names.listKind ?? `${spec.names.kind}List`,
    plural: spec.names.plural,
    singular: spec.names.singular ?? spec.names.kind.toLowerCase(),
    namespaced: spec.scope === 'Namespaced',
    shortNames: spec.names.shortNames ?? [],
    categories: spec.names.categories ?? [],
    statusSubresource: served.subresources?.status !== undefined,
    createOnly: false,
    schema: schemaChecker(served.schema.openAPIV3Schema),
    openAPIV3Schema: served.schema.openAPIV3Schema,
    createOnUpdate: false,
    fields: {},
    // Without additionalPrinterColumns a CRD's table is Name and Age, as the real server prints it.
    columns: [nameColumn, ...(printed ? printed.map(pathColumn) : [ageColumn])],
  };
}

/** The CustomResourceDefinitions in YAML texts (the files of helm/strait/crds/). */
export function parseCrds(texts: string[]): KubeObject[] {
  return texts
    .flatMap((text) => parseAllDocuments(text).map((d) => d.toJS() as KubeObject))
    .filter((o) => o?.kind === 'CustomResourceDefinition');
}

/** The CRD texts of the YAML files in `dir`. */
export function readCrdDirectory(dir: string): string[] {
  return readdirSync(dir)
    .filter((f) => /\.ya?ml$/.test(f))
    .sort()
    .map((f) => readFileSync(join(dir, f), 'utf8'));
}
