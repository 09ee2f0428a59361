/**
 * A store that serves some resources from another's storage, converted each way, as kube-apiserver
 * serves one resource at several API versions (event-conversion.ts: events.k8s.io/v1 Events are core/v1
 * Events). Every read, write and change of a view is the storage resource's, converted: one object,
 * one resourceVersion, seen through both. The underlying store lists only its own resources.
 */
import type { KubeObject } from './kube-object';
import type { Change, Store } from './store';

export interface ResourceView {
  /** The resource served (`events.events.k8s.io`). */
  resource: string;
  /** The resource it is stored as (`events`). */
  storage: string;
  fromStorage(object: KubeObject): KubeObject;
  toStorage(object: KubeObject): KubeObject;
}

export class ViewingStore implements Store {
  private readonly views: Map<string, ResourceView>;
  /** The views of each storage resource. */
  private readonly viewsOf = new Map<string, ResourceView[]>();

  constructor(
    private readonly store: Store,
    views: readonly ResourceView[],
  ) {
    this.views = new Map(views.map((v) => [v.resource, v]));
    for (const view of views) this.viewsOf.set(view.storage, [...(this.viewsOf.get(view.storage) ?? []), view]);
  }

  get resourceVersion(): number {
    return this.store.resourceVersion;
  }

  resources(): string[] {
    return this.store.resources();
  }

  onChange(listener: (change: Change) => void): () => void {
    return this.store.onChange((change) => {
      listener(change);
      for (const view of this.viewsOf.get(change.resource) ?? [])
        listener({
          ...change,
          resource: view.resource,
          object: view.fromStorage(change.object),
          ...(change.previous ? { previous: view.fromStorage(change.previous) } : {}),
        });
    });
  }

  get(resource: string, namespace: string | undefined, name: string): KubeObject | undefined {
    const view = this.views.get(resource);
    if (!view) return this.store.get(resource, namespace, name);
    const object = this.store.get(view.storage, namespace, name);
    return object && view.fromStorage(object);
  }

  list(resource: string, namespace?: string): KubeObject[] {
    const view = this.views.get(resource);
    return view ? this.store.list(view.storage, namespace).map(view.fromStorage) : this.store.list(resource, namespace);
  }

  async listAt(resource: string, namespace: string | undefined, at: number): Promise<KubeObject[] | undefined> {
    const view = this.views.get(resource);
    if (!view) return this.store.listAt(resource, namespace, at);
    return (await this.store.listAt(view.storage, namespace, at))?.map(view.fromStorage);
  }

  async put(resource: string, object: KubeObject): Promise<KubeObject> {
    const view = this.views.get(resource);
    return view ? view.fromStorage(await this.store.put(view.storage, view.toStorage(object))) : this.store.put(resource, object);
  }

  async delete(resource: string, namespace: string | undefined, name: string): Promise<KubeObject | undefined> {
    const view = this.views.get(resource);
    if (!view) return this.store.delete(resource, namespace, name);
    const deleted = await this.store.delete(view.storage, namespace, name);
    return deleted && view.fromStorage(deleted);
  }

  close(): Promise<void> {
    return this.store.close();
  }
}
