/**
 * The objects as a store's cache holds them: per resource, by namespace and name, at the newest version
 * the cache has seen, with a bounded history of each resource from which it reads a resource as it was
 * at a past version (the last `historySize` changes of each resource; older versions are compacted
 * away). A write reaches it as `apply` with its version; it hands each change to its listeners (the
 * watch cache, the controllers) and knows nothing of API rules.
 */
import { type KubeObject, deepFreeze, objectKey } from './kube-object';
import type { Change } from './store';

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

/** `object` at resourceVersion `version`, frozen (the cache's objects are shared with watches and responses). */
export const atVersion = (object: KubeObject, version: number): KubeObject =>
  deepFreeze({ ...object, metadata: { ...object.metadata, resourceVersion: String(version) } });

export class ObjectCache {
  private readonly byResource = new Map<string, Map<string, KubeObject>>();
  private readonly histories = new Map<string, History>();
  private readonly listeners = new Set<(change: Change) => void>();

  /** `version`: the version the cache starts at (what it holds, or will load, is as of it). */
  constructor(
    private readonly historySize: number,
    private version: number,
  ) {}

  get resourceVersion(): number {
    return this.version;
  }

  resources(): string[] {
    return [...this.byResource.keys()];
  }

  onChange(listener: (change: Change) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  get(resource: string, namespace: string | undefined, name: string): KubeObject | undefined {
    return this.objects(resource).get(objectKey(namespace, name));
  }

  list(resource: string, namespace?: string): KubeObject[] {
    return sorted(this.objects(resource), namespace);
  }

  /** The objects of a resource as they were at version `at`, from the history; undefined when it is older. */
  protected listFromHistory(resource: string, namespace: string | undefined, at: number): KubeObject[] | undefined {
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

  /** An object the cache starts with (with its resourceVersion), no change. */
  protected load(resource: string, object: KubeObject): void {
    this.objects(resource).set(objectKey(object.metadata.namespace, object.metadata.name), deepFreeze(object));
  }

  /**
   * The write of version `version`: `object` (new or replacing one) or, when undefined, the deletion of
   * the object at `namespace`/`name`. Returns the object as stored (as deleted), undefined when a
   * deleted one was not there.
   */
  protected apply(
    resource: string,
    namespace: string | undefined,
    name: string,
    object: KubeObject | undefined,
    version: number,
  ): KubeObject | undefined {
    const key = objectKey(namespace, name);
    const objects = this.objects(resource);
    const previous = objects.get(key);
    if (!object && !previous) return undefined;
    this.version = version;
    const stored = atVersion(object ?? previous!, version);
    if (object) objects.set(key, stored);
    else objects.delete(key);
    this.remember(resource, key, previous);
    const type = !object ? 'DELETED' : previous ? 'MODIFIED' : 'ADDED';
    this.emit({ type, resource, object: stored, ...(object && previous ? { previous } : {}), resourceVersion: version });
    return stored;
  }

  /** Records the write just applied; past `historySize`, the oldest is compacted away. */
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
