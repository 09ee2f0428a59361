/** A Kubernetes object as the API server stores and serves it: apiVersion, kind, metadata, the rest as given. */

interface ObjectMeta {
  name: string;
  generateName?: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  generation?: number;
  creationTimestamp?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  finalizers?: string[];
  deletionTimestamp?: string;
  [field: string]: unknown;
}

export interface KubeObject {
  apiVersion: string;
  kind: string;
  metadata: ObjectMeta;
  [field: string]: unknown;
}

export const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** Where an object lives in the store: `namespace/name` (`/name` when cluster-scoped); sorts as kubectl lists. */
export const objectKey = (namespace: string | undefined, name: string) => `${namespace ?? ''}/${name}`;

/** A time as Kubernetes writes it (RFC 3339, whole seconds). */
export const timestamp = (date = new Date()) => date.toISOString().replace(/\.\d{3}Z$/, 'Z');

/** Stored objects are shared by the store, the watch history and responses: frozen, so none can change another. */
export function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const child of Object.values(value)) deepFreeze(child);
  }
  return value;
}

/** A mutable copy of a (frozen) stored object. */
export const copy = <T>(value: T): T => structuredClone(value);
