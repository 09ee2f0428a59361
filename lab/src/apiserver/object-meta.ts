/**
 * An object's apiVersion, kind and metadata checked against their Go types, as kube-apiserver's JSON
 * decoder checks them before anything else looks at the object: a field of the wrong JSON type is the
 * decoder's error, `json: cannot unmarshal array into Go struct field ObjectMeta.metadata.name of type
 * string` (null is any field's zero value, as is a field left out). The server reads names, labels,
 * finalizers and versions from here on: nothing after this meets a name that is not a string.
 */
import { jsonKind } from './go-json';
import { isRecord } from './kube-object';

type GoType =
  | { go: 'string' | 'int64' | 'bool' | 'time' }
  | { map: GoType }
  | { slice: GoType; name: string }
  | { struct: string; fields: Record<string, GoType> };

const string: GoType = { go: 'string' };
const int64: GoType = { go: 'int64' };
const bool: GoType = { go: 'bool' };
const time: GoType = { go: 'time' };

const ownerReference: GoType = {
  struct: 'OwnerReference',
  fields: { apiVersion: string, kind: string, name: string, uid: string, controller: bool, blockOwnerDeletion: bool },
};

/** k8s.io/apimachinery/pkg/apis/meta/v1.ObjectMeta (managedFields: only that it is a list of objects). */
const objectMeta = {
  struct: 'ObjectMeta',
  fields: {
    name: string,
    generateName: string,
    namespace: string,
    selfLink: string,
    uid: string,
    resourceVersion: string,
    generation: int64,
    creationTimestamp: time,
    deletionTimestamp: time,
    deletionGracePeriodSeconds: int64,
    labels: { map: string },
    annotations: { map: string },
    ownerReferences: { slice: ownerReference, name: '[]v1.OwnerReference' },
    finalizers: { slice: string, name: '[]string' },
    managedFields: { slice: { struct: 'ManagedFieldsEntry', fields: {} }, name: '[]v1.ManagedFieldsEntry' },
  },
} satisfies GoType;

const goTypeName = (type: GoType): string =>
  'go' in type
    ? type.go === 'time'
      ? 'v1.Time'
      : type.go
    : 'map' in type
      ? `map[string]${goTypeName(type.map)}`
      : 'slice' in type
        ? type.name
        : `v1.${type.struct}`;

/** The decoder's error for `value` as `type` at `path` (fields of `struct`), or undefined. */
function check(value: unknown, type: GoType, struct: string, path: string): string | undefined {
  if (value === null || value === undefined) return undefined;
  const mismatch = (what = jsonKind(value)) =>
    `json: cannot unmarshal ${what} into Go struct field ${struct}.${path} of type ${goTypeName(type)}`;
  if ('go' in type) {
    switch (type.go) {
      case 'string':
        return typeof value === 'string' ? undefined : mismatch();
      case 'bool':
        return typeof value === 'boolean' ? undefined : mismatch();
      case 'time':
        // metav1.Time.UnmarshalJSON reads a string itself: its error carries no field.
        return typeof value === 'string' ? undefined : `json: cannot unmarshal ${jsonKind(value)} into Go value of type string`;
      default:
        if (typeof value !== 'number') return mismatch();
        return Number.isSafeInteger(value) ? undefined : mismatch(`number ${String(value)}`);
    }
  }
  if ('map' in type) {
    if (!isRecord(value)) return mismatch();
    for (const v of Object.values(value)) {
      const error = check(v, type.map, struct, path);
      if (error) return error;
    }
    return undefined;
  }
  if ('slice' in type) {
    if (!Array.isArray(value)) return mismatch();
    for (const v of value) {
      const error = check(v, type.slice, struct, path);
      if (error) return error;
    }
    return undefined;
  }
  if (!isRecord(value)) return mismatch();
  for (const [key, field] of Object.entries(type.fields)) {
    const error = check(value[key], field, type.struct, `${path}.${key}`);
    if (error) return error;
  }
  return undefined;
}

/**
 * The decoder's error for an apiVersion or kind that is not a string: the serializer reads them first
 * (runtime/serializer/json/meta.go Interpret), into an unnamed struct.
 */
export function typeMetaError(object: Record<string, unknown>): string | undefined {
  for (const field of ['apiVersion', 'kind']) {
    const value = object[field];
    if (value !== undefined && value !== null && typeof value !== 'string')
      return `couldn't get version/kind; json parse error: json: cannot unmarshal ${jsonKind(value)} into Go struct field .${field} of type string`;
  }
  return undefined;
}

/** The decoder's error for an object of `kind` whose metadata does not fit ObjectMeta, or undefined. */
export const objectMetaError = (kind: string, metadata: unknown): string | undefined => check(metadata, objectMeta, kind, 'metadata');
