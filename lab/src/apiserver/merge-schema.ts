/**
 * How each place of an object merges in server-side apply and which path elements its items get, as
 * structured-merge-diff reads it from the kind's OpenAPI schema: a map is merged key by key unless
 * atomic (`x-kubernetes-map-type: atomic`); a list is atomic (replaced whole, owned whole) unless it is
 * a set (`x-kubernetes-list-type: set`: items are scalars, owned one by one as `v:<value>`) or a map
 * (`x-kubernetes-list-type: map` with `x-kubernetes-list-map-keys`: items are objects, owned one by one
 * as `k:{"name":"x"}`). A custom resource's come from its CRD's structural schema; a built-in's from the
 * `+listType` markers of k8s.io/api that kube-apiserver's OpenAPI publishes, for the lists of the kinds
 * Strait, its Helm chart and kubectl write. What a schema does not describe (preserved unknown fields)
 * is deduced: maps merged by key, lists atomic.
 */
import { isRecord } from './kube-object';

export type ListType = { type: 'atomic' } | { type: 'set' } | { type: 'map'; keys: readonly string[] };

export interface MergeSchema {
  /** A map here is replaced whole rather than merged by key. */
  readonly atomicMap: boolean;
  readonly list: ListType;
  /** The schema of the field `name` of a map here. */
  field(name: string): MergeSchema;
  /** The schema of an item of a list here. */
  item(): MergeSchema;
}

const atomicList: ListType = { type: 'atomic' };

/** What no schema describes: maps by key, lists atomic (structured-merge-diff's deduced type). */
const deduced: MergeSchema = { atomicMap: false, list: atomicList, field: () => deduced, item: () => deduced };

/** Defaults of list-map key fields the OpenAPI declares (a port's protocol), used for an item that leaves one out. */
export const keyDefaults: Readonly<Record<string, unknown>> = { protocol: 'TCP' };

const listMap = (...keys: string[]): ListType => ({ type: 'map', keys });

/** A place known by the names of the fields on the way to it (`*`: any list item or map key), and how a list or map there merges. */
type Rule = [path: string, merge: ListType | 'atomic map'];

/**
 * k8s.io/api's list types (`+listType=map`, `+listMapKey=`, `+listType=set`) of ObjectMeta, PodSpec
 * (in a Pod and in a workload's template), Container, Service and the status conditions, by the field
 * path below which they sit; every other list of a built-in is atomic (`+listType=atomic` or unmarked).
 */
const containerLists = (container: string): Rule[] => [
  [`${container}.*.ports`, listMap('containerPort', 'protocol')],
  [`${container}.*.env`, listMap('name')],
  [`${container}.*.volumeMounts`, listMap('mountPath')],
  [`${container}.*.volumeDevices`, listMap('devicePath')],
];

const podSpecLists = (spec: string): Rule[] => [
  [`${spec}.containers`, listMap('name')],
  [`${spec}.initContainers`, listMap('name')],
  [`${spec}.ephemeralContainers`, listMap('name')],
  [`${spec}.volumes`, listMap('name')],
  [`${spec}.imagePullSecrets`, listMap('name')],
  [`${spec}.hostAliases`, listMap('ip')],
  [`${spec}.topologySpreadConstraints`, listMap('topologyKey', 'whenUnsatisfiable')],
  [`${spec}.resourceClaims`, listMap('name')],
  [`${spec}.schedulingGates`, listMap('name')],
  ...containerLists(`${spec}.containers`),
  ...containerLists(`${spec}.initContainers`),
  ...containerLists(`${spec}.ephemeralContainers`),
];

const metadataLists = (metadata: string): Rule[] => [
  [`${metadata}.finalizers`, { type: 'set' }],
  [`${metadata}.ownerReferences`, listMap('uid')],
];

/** Label selectors (`+structType=atomic`) and node selectors (`+mapType=atomic`) are replaced whole. */
const atomicMaps: Rule[] = ['spec.selector', 'spec.nodeSelector', 'spec.template.spec.nodeSelector'].map((path) => [path, 'atomic map']);

const builtInRules: Rule[] = [
  ...atomicMaps,
  ...metadataLists('metadata'),
  ...metadataLists('spec.template.metadata'),
  ...podSpecLists('spec'),
  ...podSpecLists('spec.template.spec'),
  ['status.conditions', listMap('type')],
  ['spec.finalizers', { type: 'set' }],
];

/** Service ports are keyed by port and protocol (no other built-in here has a `spec.ports`). */
const serviceRules: Rule[] = [['spec.ports', listMap('port', 'protocol')]];

function ruleSchema(rules: readonly Rule[], at: string): MergeSchema {
  const merge = rules.find(([path]) => path === at)?.[1];
  const below = (name: string) => ruleSchema(rules, at === '' ? name : `${at}.${name}`);
  return {
    atomicMap: merge === 'atomic map',
    list: merge === undefined || merge === 'atomic map' ? atomicList : merge,
    field: below,
    item: () => below('*'),
  };
}

/** The merge schema of a built-in kind (by `kind`: only a Service has a `spec.ports`). */
export const builtInMergeSchema = (kind: string): MergeSchema =>
  ruleSchema(kind === 'Service' ? [...builtInRules, ...serviceRules] : builtInRules, '');

function listTypeOf(schema: Record<string, unknown>): ListType {
  const type = schema['x-kubernetes-list-type'];
  if (type === 'set') return { type: 'set' };
  if (type === 'map' && Array.isArray(schema['x-kubernetes-list-map-keys']))
    return listMap(...(schema['x-kubernetes-list-map-keys'] as string[]));
  return atomicList;
}

/** The merge schema a CRD's structural schema (one node of it) declares. */
function structuralSchema(schema: Record<string, unknown>): MergeSchema {
  const properties = isRecord(schema.properties) ? schema.properties : {};
  return {
    atomicMap: schema['x-kubernetes-map-type'] === 'atomic',
    list: listTypeOf(schema),
    field: (name) => {
      const child = Object.hasOwn(properties, name) ? properties[name] : schema.additionalProperties;
      return isRecord(child) ? structuralSchema(child) : deduced;
    },
    item: () => (isRecord(schema.items) ? structuralSchema(schema.items) : deduced),
  };
}

/** A custom resource's merge schema: its CRD's, with ObjectMeta's lists under metadata whatever the CRD writes. */
export function customResourceMergeSchema(openAPIV3Schema: Record<string, unknown>): MergeSchema {
  const root = structuralSchema(openAPIV3Schema);
  const metadata = ruleSchema(metadataLists('metadata'), 'metadata');
  return { ...root, field: (name) => (name === 'metadata' ? metadata : root.field(name)) };
}
