/**
 * The objects, what etcd is to a real API server: per resource, by namespace and name, with one
 * resourceVersion counter for the whole server (every write takes the next number, so versions order
 * all changes). Like etcd's MVCC it can read a resource as it was at a past version, within a bounded
 * history (the last `historySize` changes of each resource: older versions are compacted away). It
 * knows nothing of API rules; it hands each change to its listeners (the watch cache).
 */
import { type KubeObject, deepFreeze, objectKey } from './kube-object';

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

/** One write, as its undoing needs it: the object's key and what it replaced (none for a create). */
interface Revision {
  resourceVersion: number;
  key: string;
  before: KubeObject | undefined;
}

interface History {
  revisions: Revision[];
  /** The resource is known as of every version from this one on (older ones are compacted). */
  since: number;
}

export class Store {
  private readonly byResource = new Map<string, Map<string, KubeObject>>();
  private readonly histories = new Map<string, History>();
  private readonly listeners = new Set<(change: Change) => void>();
  private version = 1;

  constructor(private readonly historySize: number) {}

  /** The newest resourceVersion (of any resource). */
  get resourceVersion(): number {
    return this.version;
  }

  /** The resources that have (or had) objects. */
  resources(): string[] {
    return [...this.byResource.keys()];
  }

  /** Calls `listener` with every change from now on, until the returned function is called. */
  onChange(listener: (change: Change) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  get(resource: string, namespace: string | undefined, name: string): KubeObject | undefined {
    return this.objects(resource).get(objectKey(namespace, name));
  }

  /** The objects of a resource (in one namespace, or all), sorted by namespace and name. */
  list(resource: string, namespace?: string): KubeObject[] {
    return sorted(this.objects(resource), namespace);
  }

  /**
   * The objects of a resource as they were at version `at` (in one namespace, or all), sorted as list
   * sorts them; undefined when `at` is older than the history kept (etcd's ErrCompacted).
   */
  listAt(resource: string, namespace: string | undefined, at: number): KubeObject[] | undefined {
    const history = this.history(resource);
    if (at < history.since) return undefined;
    const byKey = new Map(this.objects(resource));
    for (let i = history.revisions.length - 1; i >= 0 && history.revisions[i]!.resourceVersion > at; i--) {
      const { key, before } = history.revisions[i]!;
      if (before) byKey.set(key, before);
      else byKey.delete(key);
    }
    return sorted(byKey, namespace);
  }

  /** Writes `object` (new or replacing one) with the next resourceVersion; returns it as stored. */
  put(resource: string, object: KubeObject): KubeObject {
    const key = objectKey(object.metadata.namespace, object.metadata.name);
    const previous = this.objects(resource).get(key);
    const stored = this.versioned(object);
    this.objects(resource).set(key, stored);
    this.remember(resource, key, previous);
    this.emit({
      type: previous ? 'MODIFIED' : 'ADDED',
      resource,
      object: stored,
      ...(previous ? { previous } : {}),
      resourceVersion: this.version,
    });
    return stored;
  }

  /** Removes an object; returns it as deleted (with the deletion's resourceVersion). */
  delete(resource: string, namespace: string | undefined, name: string): KubeObject | undefined {
    const key = objectKey(namespace, name);
    const previous = this.objects(resource).get(key);
    if (!previous) return undefined;
    this.objects(resource).delete(key);
    const deleted = this.versioned(previous);
    this.remember(resource, key, previous);
    this.emit({ type: 'DELETED', resource, object: deleted, resourceVersion: this.version });
    return deleted;
  }

  private versioned(object: KubeObject): KubeObject {
    this.version += 1;
    return deepFreeze({ ...object, metadata: { ...object.metadata, resourceVersion: String(this.version) } });
  }

  /** Records the write just versioned; past `historySize`, the oldest is compacted away. */
  private remember(resource: string, key: string, before: KubeObject | undefined): void {
    const history = this.history(resource);
    history.revisions.push({ resourceVersion: this.version, key, before });
    if (history.revisions.length > this.historySize) history.since = history.revisions.shift()!.resourceVersion;
  }

  private history(resource: string): History {
    let history = this.histories.get(resource);
    if (!history) this.histories.set(resource, (history = { revisions: [], since: 1 }));
    return history;
  }

  private emit(change: Change): void {
    for (const listener of this.listeners) listener(change);
  }

  private objects(resource: string): Map<string, KubeObject> {
    let byKey = this.byResource.get(resource);
    if (!byKey) this.byResource.set(resource, (byKey = new Map()));
    return byKey;
  }
}

function sorted(byKey: Map<string, KubeObject>, namespace: string | undefined): KubeObject[] {
  const all = [...byKey.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, o]) => o);
  return namespace === undefined ? all : all.filter((o) => o.metadata.namespace === namespace);
}
