/**
 * The objects, what etcd is to a real API server: per resource, by namespace and name, with one
 * resourceVersion counter for the whole server (every write takes the next number, so versions order
 * all changes). It knows nothing of API rules; it hands each change to its listeners (the watch cache).
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

export class Store {
  private readonly byResource = new Map<string, Map<string, KubeObject>>();
  private readonly listeners: ((change: Change) => void)[] = [];
  private version = 1;

  /** The newest resourceVersion (of any resource). */
  get resourceVersion(): number {
    return this.version;
  }

  /** The resources that have (or had) objects. */
  resources(): string[] {
    return [...this.byResource.keys()];
  }

  onChange(listener: (change: Change) => void): void {
    this.listeners.push(listener);
  }

  get(resource: string, namespace: string | undefined, name: string): KubeObject | undefined {
    return this.objects(resource).get(objectKey(namespace, name));
  }

  /** The objects of a resource (in one namespace, or all), sorted by namespace and name. */
  list(resource: string, namespace?: string): KubeObject[] {
    const all = [...this.objects(resource).entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, o]) => o);
    return namespace === undefined ? all : all.filter((o) => o.metadata.namespace === namespace);
  }

  /** Writes `object` (new or replacing one) with the next resourceVersion; returns it as stored. */
  put(resource: string, object: KubeObject): KubeObject {
    const key = objectKey(object.metadata.namespace, object.metadata.name);
    const previous = this.objects(resource).get(key);
    const stored = this.versioned(object);
    this.objects(resource).set(key, stored);
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
    this.emit({ type: 'DELETED', resource, object: deleted, resourceVersion: this.version });
    return deleted;
  }

  private versioned(object: KubeObject): KubeObject {
    this.version += 1;
    return deepFreeze({ ...object, metadata: { ...object.metadata, resourceVersion: String(this.version) } });
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
