/**
 * A typed informer: a cache of one collection's objects by key (`name`, or `namespace/name`), kept up to
 * date by @kubernetes/client-node's ListWatch (list, then watch from the list's resourceVersion; on 410
 * Gone it relists, deleting what went and adding what came in the gap; BOOKMARKs move its
 * resourceVersion on), telling `onChange` the key of each object added, changed or deleted, typically a
 * WorkQueue's add.
 *
 * What is ours around ListWatch, from its source (1.4.0, dist/cache.js and watch.js):
 * - ListWatch never asks for bookmarks: our Watch adds allowWatchBookmarks (so a quiet watch's
 *   resourceVersion stays recent and a reconnect does not fall out of the server's window) and a
 *   timeoutSeconds, so the server ends a watch now and then, as client-go asks.
 * - After any error other than 410 (the server unreachable, a list refused) ListWatch just stops: we
 *   start again after client-go's reflector backoff (backoff.ts: 0.8 s doubling to 30 s, jittered, so
 *   many agents do not relist in the same instant), with a new ListWatch, so a relist: a server back
 *   after a restart may have lost its history, and a watch from our old version could miss changes.
 * - ListWatch lists in one request: ours lists in pages of 500 (pager.ts), as client-go's reflector.
 * - A stop while a watch is being opened leaves that watch running in ListWatch: ours aborts it.
 */
import { type KubeConfig, type KubernetesListObject, type KubernetesObject, ListWatch, Watch } from '@kubernetes/client-node';
import type { Logger } from '../log';
import { apiErrorText } from './api-errors';
import { type BackoffParameters, type BackoffState, initialBackoff, nextBackoff, reflectorBackoff } from './backoff';
import { type ListPage, listAllPages } from './pager';

export interface InformerOptions<T extends KubernetesObject> {
  kubeConfig: KubeConfig;
  /** The collection's URL path: `/api/v1/nodes`, `/apis/strait.io/v1alpha1/nodedataplanes`. */
  path: string;
  /** Lists a page of the collection (a client-node API call with the same selectors and `page`'s limit and continue). */
  list: (page: ListPage) => Promise<KubernetesListObject<T>>;
  labelSelector?: string;
  fieldSelector?: string;
  /**
   * What of each object the cache keeps (client-go's SetTransform): an update that changes nothing it
   * keeps but the resourceVersion is no change. A method (bivariant), so an Informer of Nodes is still
   * an Informer of KubernetesObjects.
   */
  transform?(object: T): T;
  /** The delays before starting again after an error (default: client-go's reflector's). */
  backoff?: BackoffParameters;
  log?: Logger;
}

/** The cache key of an object, as client-go's MetaNamespaceKeyFunc: `namespace/name`, or `name` when cluster-scoped. */
function objectKey(object: KubernetesObject): string {
  const { namespace, name } = object.metadata ?? {};
  return namespace ? `${namespace}/${name ?? ''}` : (name ?? '');
}

/** client-node's Watch, asking for bookmarks and a server-side timeout, and aborting a watch opened after its informer stopped. */
class InformerWatch extends Watch {
  constructor(
    config: KubeConfig,
    private readonly current: () => boolean,
  ) {
    super(config);
  }

  override async watch(
    path: string,
    queryParams: Record<string, unknown>,
    callback: (phase: string, apiObj: unknown, watchObj?: unknown) => void,
    done: (err: unknown) => void,
  ): Promise<AbortController> {
    // Between 5 and 10 minutes, as client-go's reflector, so watches do not all end at once.
    const timeoutSeconds = 300 + Math.floor(Math.random() * 300);
    const controller = await super.watch(path, { ...queryParams, allowWatchBookmarks: true, timeoutSeconds }, callback, done);
    if (!this.current()) controller.abort();
    return controller;
  }
}

/** Whether two objects differ in their resourceVersion alone. */
function sameButVersion(a: KubernetesObject, b: KubernetesObject): boolean {
  const unversioned = (o: KubernetesObject) => JSON.stringify({ ...o, metadata: { ...o.metadata, resourceVersion: undefined } });
  return unversioned(a) === unversioned(b);
}

export class Informer<T extends KubernetesObject> {
  private readonly cache = new Map<string, T>();
  private readonly handlers: ((key: string) => void)[] = [];
  private listWatch: ListWatch<T> | undefined;
  private stopped = true;
  private backoff: BackoffState;
  private retryTimer: NodeJS.Timeout | undefined;
  private hasSynced = false;
  private syncWaiters: (() => void)[] = [];

  constructor(private readonly options: InformerOptions<T>) {
    this.backoff = initialBackoff(options.backoff ?? reflectorBackoff);
  }

  /** Called with the key of every object added, changed or deleted (also those a relist finds). */
  onChange(handler: (key: string) => void): void {
    this.handlers.push(handler);
  }

  get(key: string): T | undefined {
    return this.cache.get(key);
  }

  /** Every cached object, sorted by key. */
  list(): T[] {
    return [...this.cache.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, o]) => o);
  }

  /** Whether the cache has been filled by a first list (before it, an empty cache means nothing). */
  get synced(): boolean {
    return this.hasSynced;
  }

  /** Starts; resolves once the first list is in the cache (it retries until the server answers). */
  start(): Promise<void> {
    if (this.stopped) {
      this.stopped = false;
      this.connect();
    }
    return this.hasSynced ? Promise.resolve() : new Promise((resolve) => this.syncWaiters.push(resolve));
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.retryTimer);
    const listWatch = this.listWatch;
    this.listWatch = undefined;
    await listWatch?.stop();
  }

  private connect(): void {
    const { kubeConfig, path, labelSelector, fieldSelector } = this.options;
    const listWatch: ListWatch<T> = new ListWatch<T>(
      path,
      new InformerWatch(kubeConfig, () => this.listWatch === listWatch),
      () => this.relist(listWatch),
      false,
      labelSelector,
      fieldSelector,
    );
    this.listWatch = listWatch;
    listWatch.on('add', (object) => this.listWatch === listWatch && this.upsert(object));
    listWatch.on('update', (object) => this.listWatch === listWatch && this.upsert(object));
    listWatch.on('delete', (object) => this.listWatch === listWatch && this.remove(objectKey(object)));
    listWatch.on('error', (err) => this.failed(listWatch, err));
    void listWatch.start();
  }

  /** Lists, and makes the cache exactly the list before ListWatch goes on to watch. */
  private async relist(listWatch: ListWatch<T>): Promise<KubernetesListObject<T>> {
    const list = await listAllPages(this.options.list);
    if (this.listWatch !== listWatch) throw new Error('informer stopped');
    const listed = new Set(list.items.map(objectKey));
    for (const key of [...this.cache.keys()]) if (!listed.has(key)) this.remove(key);
    for (const object of list.items) this.upsert(object);
    if (!this.hasSynced) {
      this.hasSynced = true;
      for (const resolve of this.syncWaiters.splice(0)) resolve();
    }
    return list;
  }

  private failed(listWatch: ListWatch<T>, err: unknown): void {
    if (this.listWatch !== listWatch) return;
    this.listWatch = undefined;
    void listWatch.stop();
    const next = nextBackoff(this.backoff, this.options.backoff ?? reflectorBackoff, Date.now());
    this.backoff = next.state;
    const delay = Math.round(next.delay);
    this.options.log?.warn({ path: this.options.path, error: apiErrorText(err), retryInMs: delay }, 'informer lost its watch; relisting');
    this.retryTimer = setTimeout(() => {
      if (!this.stopped) this.connect();
    }, delay);
  }

  private upsert(received: T): void {
    const object = this.options.transform?.(received) ?? received;
    const key = objectKey(object);
    const cached = this.cache.get(key);
    // The uid too: an API server that lost its state (the lab's, restarted) gives versions again.
    if (cached && cached.metadata?.resourceVersion === object.metadata?.resourceVersion && cached.metadata?.uid === object.metadata?.uid)
      return;
    this.cache.set(key, object);
    if (!cached || !sameButVersion(cached, object)) this.tell(key);
  }

  private remove(key: string): void {
    if (this.cache.delete(key)) this.tell(key);
  }

  private tell(key: string): void {
    for (const handler of this.handlers) handler(key);
  }
}
