/**
 * A store in this process only, for unit tests where etcd is not the point: one version counter for the
 * whole server (every write takes the next number, as etcd's revision), a bounded history of each
 * resource for lists at a past version (etcd's until compaction). Lost with the server: the lab runs
 * on EtcdStore.
 */
import type { KubeObject } from './kube-object';
import { ObjectCache } from './object-cache';
import { type Store, refusedWrite } from './store';

export class MemoryStore extends ObjectCache implements Store {
  constructor(historySize: number) {
    super(historySize, 1);
  }

  listAt(resource: string, namespace: string | undefined, at: number): Promise<KubeObject[] | undefined> {
    return Promise.resolve(this.listFromHistory(resource, namespace, at));
  }

  put(resource: string, object: KubeObject): Promise<KubeObject> {
    const { namespace, name, resourceVersion: expected = '' } = object.metadata;
    const current = this.get(resource, namespace, name);
    if ((current?.metadata.resourceVersion ?? '') !== expected) return Promise.reject(refusedWrite(resource, name, expected === ''));
    return Promise.resolve(this.apply(resource, namespace, name, object, this.resourceVersion + 1)!);
  }

  delete(resource: string, namespace: string | undefined, name: string): Promise<KubeObject | undefined> {
    return Promise.resolve(this.apply(resource, namespace, name, undefined, this.resourceVersion + 1));
  }

  close(): Promise<void> {
    return Promise.resolve();
  }
}
