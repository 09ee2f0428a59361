/**
 * A store in a real etcd, as kube-apiserver's (k8s.io/apiserver pkg/storage/etcd3/store.go with the
 * cacher in front): an object is the JSON value of `/registry/<resource>/<namespace>/<name>`
 * (`/registry/<resource>/<name>` when cluster-scoped), stored without its resourceVersion, which is the
 * key's mod_revision (etcd3's APIObjectVersioner). Each write is one transaction guarded by the key's
 * mod_revision (0: absent); the cache is fed by an etcd watch of the prefix only, so the order of
 * changes is etcd's, and a write answers once the watch has brought it. It starts by ranging the prefix
 * and watching from the revision of that read: a restarted server serves what was there, with the same
 * resourceVersions. A list at a past version ranges etcd at that revision; etcd's ErrCompacted is the
 * caller's 410.
 */
import { Etcd3, type IKeyValue, type Watcher } from 'etcd3';
import type { Logger } from '../../../src/log';
import type { KubeObject } from './kube-object';
import { ObjectCache, atVersion } from './object-cache';
import { type Store, refusedWrite } from './store';

const prefix = '/registry/';

/** How long a write waits for the watch to bring it before it is a 500 (the watch is a local etcd's: milliseconds). */
const watchDelayMs = 10_000;

const keyOf = (resource: string, namespace: string | undefined, name: string) =>
  `${prefix}${resource}/${namespace === undefined ? '' : `${namespace}/`}${name}`;

/** Where a key is: its resource, namespace (none when cluster-scoped) and name. */
function placeOf(key: string): { resource: string; namespace: string | undefined; name: string } {
  const [resource = '', ...rest] = key.slice(prefix.length).split('/');
  const name = rest.pop() ?? '';
  return { resource, namespace: rest.length === 0 ? undefined : rest.join('/'), name };
}

/** A stored value as the object it holds, at the key's mod_revision. */
const decode = (kv: IKeyValue): KubeObject => atVersion(JSON.parse(kv.value.toString()) as KubeObject, Number(kv.mod_revision));

/** What etcd keeps of an object: all but its resourceVersion (etcd3's versioner clears it before a write). */
function encode(object: KubeObject): string {
  const { resourceVersion: _, ...metadata } = object.metadata;
  return JSON.stringify({ ...object, metadata });
}

const isCompacted = (err: unknown) => err instanceof Error && err.message.includes('required revision has been compacted');

export class EtcdStore extends ObjectCache implements Store {
  private watcher: Watcher | undefined;

  private constructor(
    private readonly client: Etcd3,
    revision: number,
  ) {
    // No history of its own: a list at a past version is etcd's (cacher.go delegates it).
    super(0, revision);
  }

  /** Connects to the etcd at `endpoint` (`http://127.0.0.1:2379`) and loads the objects it holds. */
  static async open(endpoint: string, logger?: Logger): Promise<EtcdStore> {
    const client = new Etcd3({ hosts: endpoint });
    try {
      const range = await client.getAll().prefix(prefix).exec();
      const store = new EtcdStore(client, Number(range.header.revision));
      for (const kv of range.kvs) store.load(placeOf(kv.key.toString()).resource, decode(kv));
      await store.follow(logger);
      return store;
    } catch (err) {
      client.close();
      throw new Error(`cannot read the objects in etcd at ${endpoint}: ${(err as Error).message}`, { cause: err });
    }
  }

  async listAt(resource: string, namespace: string | undefined, at: number): Promise<KubeObject[] | undefined> {
    try {
      const range = await this.client
        .getAll()
        .prefix(namespace === undefined ? `${prefix}${resource}/` : keyOf(resource, namespace, ''))
        .revision(at)
        .exec();
      // etcd returns keys in byte order, which is the cache's order (namespace, then name).
      return range.kvs.map(decode);
    } catch (err) {
      if (isCompacted(err)) return undefined;
      throw err;
    }
  }

  async put(resource: string, object: KubeObject): Promise<KubeObject> {
    const { namespace, name, resourceVersion: expected = '' } = object.metadata;
    const key = keyOf(resource, namespace, name);
    const result = await this.client
      .if(key, 'Mod', '==', Number(expected || 0))
      .then(this.client.put(key).value(encode(object)))
      .commit();
    if (!result.succeeded) throw refusedWrite(resource, name, expected === '');
    return this.seen(atVersion(object, Number(result.header.revision)));
  }

  async delete(resource: string, namespace: string | undefined, name: string): Promise<KubeObject | undefined> {
    const current = this.get(resource, namespace, name);
    if (!current) return undefined;
    const key = keyOf(resource, namespace, name);
    const result = await this.client
      .if(key, 'Mod', '==', Number(current.metadata.resourceVersion))
      .then(this.client.delete().key(key))
      .commit();
    if (!result.succeeded) throw refusedWrite(resource, name, false);
    return this.seen(atVersion(current, Number(result.header.revision)));
  }

  /** Compacts etcd's history up to `revision`: lists and continue tokens of older versions get 410. */
  async compact(revision: number): Promise<void> {
    try {
      await this.client.kv.compact({ revision: String(revision) });
    } catch (err) {
      // Already compacted as far (another compactor, or a restart): nothing to do, as compact.go.
      if (!isCompacted(err)) throw err;
    }
  }

  async close(): Promise<void> {
    await this.watcher?.cancel();
    this.client.close();
  }

  /** Feeds the cache from etcd's watch of the prefix, from the revision after the one it loaded. */
  private async follow(logger: Logger | undefined): Promise<void> {
    const place = (kv: IKeyValue) => placeOf(kv.key.toString());
    this.watcher = await this.client
      .watch()
      .prefix(prefix)
      .startRevision(String(this.resourceVersion + 1))
      .create();
    this.watcher.on('put', (kv) => {
      const { resource, namespace, name } = place(kv);
      this.apply(resource, namespace, name, decode(kv), Number(kv.mod_revision));
    });
    // A deletion's mod_revision is the revision of the delete.
    this.watcher.on('delete', (kv) => {
      const { resource, namespace, name } = place(kv);
      this.apply(resource, namespace, name, undefined, Number(kv.mod_revision));
    });
    this.watcher.on('error', (err) => logger?.error({ err }, 'etcd watch failed'));
  }

  /** `written` once the cache has its version (read-your-writes), or a 500 when the watch does not bring it. */
  private seen(written: KubeObject): Promise<KubeObject> {
    const version = Number(written.metadata.resourceVersion);
    if (this.resourceVersion >= version) return Promise.resolve(written);
    return new Promise((resolve, reject) => {
      const stop = this.onChange(() => {
        if (this.resourceVersion < version) return;
        clearTimeout(timer);
        stop();
        resolve(written);
      });
      const timer = setTimeout(() => {
        stop();
        reject(
          new Error(`etcd's watch did not bring revision ${version} in ${watchDelayMs / 1000} s (the cache is at ${this.resourceVersion})`),
        );
      }, watchDelayMs);
    });
  }
}
