/**
 * Where the API server keeps its objects, what etcd is to kube-apiserver: reads come from a cache of
 * the newest state (kube-apiserver's watch cache, always at hand), writes go to the storage and answer
 * once the cache has them (so a client reads its own writes). Each write is guarded by the version of
 * the object it replaces, as etcd3's store guards it by the key's mod_revision: a create only if the key
 * is absent, an update or a delete only if the key is unchanged since the version the writer read.
 * Two kinds: EtcdStore (a real etcd, which the lab runs) and MemoryStore (in this process only, for
 * unit tests: lost with the server).
 */
import type { KubeObject } from './kube-object';
import { alreadyExists, conflict, staleResourceVersion } from './status';

type ChangeType = 'ADDED' | 'MODIFIED' | 'DELETED';

export interface Change {
  type: ChangeType;
  /** The resource's key (`nodedataplanes.strait.io`). */
  resource: string;
  /** The object after the change; for DELETED, as it was, with the deletion's resourceVersion. */
  object: KubeObject;
  /** The object before a MODIFIED (a watch with a selector turns a change across it into ADDED or DELETED). */
  previous?: KubeObject;
  resourceVersion: number;
}

export interface Store {
  /** The newest resourceVersion the cache has (of any resource). */
  readonly resourceVersion: number;
  /** The resources that have (or had) objects. */
  resources(): string[];
  /** Calls `listener` with every change from now on, in version order, until the returned function is called. */
  onChange(listener: (change: Change) => void): () => void;
  get(resource: string, namespace: string | undefined, name: string): KubeObject | undefined;
  /** The objects of a resource (in one namespace, or all), sorted by namespace and name. */
  list(resource: string, namespace?: string): KubeObject[];
  /**
   * The objects of a resource as they were at version `at` (in one namespace, or all), sorted as list
   * sorts them; undefined when `at` is compacted away (etcd's ErrCompacted).
   */
  listAt(resource: string, namespace: string | undefined, at: number): Promise<KubeObject[] | undefined>;
  /**
   * Writes `object`: a create when it has no resourceVersion, else an update of the object at that
   * version (409 when the stored one is another). Resolves to it as stored, with its new resourceVersion.
   */
  put(resource: string, object: KubeObject): Promise<KubeObject>;
  /** Removes an object (as the cache has it); resolves to it as deleted (with the deletion's resourceVersion). */
  delete(resource: string, namespace: string | undefined, name: string): Promise<KubeObject | undefined>;
  close(): Promise<void>;
}

/**
 * The 409 of a write whose guard failed: the key exists (a create), or changed since the version the
 * writer read (an update or delete), as etcd3's store reports them (storage.NewKeyExistsError,
 * a conflict).
 */
export function refusedWrite(resource: string, name: string, creating: boolean): Error {
  const [plural = resource, ...group] = resource.split('.');
  const named = { groupResource: resource, group: group.join('.'), plural, name };
  return creating ? alreadyExists(named) : conflict(named, staleResourceVersion);
}
