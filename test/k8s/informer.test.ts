/**
 * The informer against the lab's API server with the real @kubernetes/client-node: changes arrive, a 410
 * makes it relist (and the cache holds what changed in the gap), and it recovers from an API server that
 * stopped and came back empty.
 */
import assert from 'node:assert/strict';
import { CoreV1Api, PatchStrategy, type V1Node, type V1NodeList, setHeaderOptions } from '@kubernetes/client-node';
import { Informer } from '../../src/k8s/informer';
import { reflectorBackoff } from '../../src/k8s/backoff';
import type { ListPage } from '../../src/k8s/pager';
import type { Logger } from '../../src/log';
import { startTestApiServer } from '../support/apiserver';
import { captureLog } from '../support/log-capture';

const node = (name: string, labels: Record<string, string> = {}): V1Node => ({
  apiVersion: 'v1',
  kind: 'Node',
  metadata: { name, labels },
});

/** Resolves when `check` holds after a change the informer reports (or now); fails after `ms` naming `what`. */
function until(informer: Informer<V1Node>, what: string, check: () => boolean, ms = 5000): Promise<void> {
  return new Promise((resolve, reject) => {
    if (check()) return resolve();
    const timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}; cache: ${names(informer)}`)), ms);
    informer.onChange(() => {
      if (check()) {
        clearTimeout(timer);
        resolve();
      }
    });
  });
}

const names = (informer: Informer<V1Node>) =>
  informer
    .list()
    .map((n) => n.metadata!.name)
    .join(',');

describe('informer on the API server', function () {
  this.timeout(20_000);
  const stops: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const stop of stops.splice(0).reverse()) await stop();
  });

  async function setup(
    options: { watchCacheSize?: number; logger?: Logger; retryMs?: number; list?: (core: CoreV1Api) => Promise<V1NodeList> } = {},
  ) {
    const { list: _list, retryMs = 50, ...serverOptions } = options;
    const api = await startTestApiServer(serverOptions);
    stops.push(() => api.close());
    const core = api.kubeConfig.makeApiClient(CoreV1Api);
    const captured = captureLog();
    let lists = 0;
    const pages: ListPage[] = [];
    const informer = new Informer<V1Node>({
      kubeConfig: api.kubeConfig,
      path: '/api/v1/nodes',
      list: (page) => {
        lists++;
        pages.push(page);
        return options.list ? options.list(core) : core.listNode(page);
      },
      // No jitter: the recovery test counts on the first retry coming when it says.
      backoff: { ...reflectorBackoff, initial: retryMs, cap: 8 * retryMs, jitter: 0 },
      log: captured.log,
    });
    stops.push(() => informer.stop());
    const changes: string[] = [];
    informer.onChange((key) => changes.push(`${key}${informer.get(key) ? '' : ' gone'}`));
    return { api, core, informer, changes, captured, lists: () => lists, pages };
  }

  it('fills its cache from the list, then each add, update and delete arrives with the key', async () => {
    const { core, informer, changes } = await setup();
    await core.createNode({ body: node('before') });
    await informer.start();
    assert.deepEqual([informer.synced, names(informer), changes], [true, 'before', ['before']]);

    await core.createNode({ body: node('n1') });
    await until(informer, 'n1 added', () => informer.get('n1') !== undefined);
    const added = informer.get('n1')!.metadata!.resourceVersion;
    await core.replaceNode({
      name: 'n1',
      body: { ...informer.get('n1')!, metadata: { ...informer.get('n1')!.metadata, labels: { role: 'gateway' } } },
    });
    await until(informer, 'n1 updated', () => informer.get('n1')?.metadata?.labels?.role === 'gateway');
    assert.notEqual(informer.get('n1')!.metadata!.resourceVersion, added);
    await core.deleteNode({ name: 'before' });
    await until(informer, 'before deleted', () => informer.get('before') === undefined);
    assert.deepEqual([names(informer), changes], ['n1', ['before', 'n1', 'n1', 'before gone']]);
  });

  it('relists on 410 Gone: a watch from a version past the tiny window; the cache then has what was created and lacks what was deleted in the gap', async () => {
    let gap = true;
    const { core, informer, changes, captured, lists } = await setup({
      watchCacheSize: 2,
      // The first list is answered, then the world moves on by more than the window before the watch starts.
      list: async (core) => {
        const list = await core.listNode();
        if (gap) {
          gap = false;
          await core.createNode({ body: node('new') });
          await core.deleteNode({ name: 'gone' });
          for (const name of ['churn1', 'churn2', 'churn3']) await core.createNode({ body: node(name) });
          for (const name of ['churn1', 'churn2', 'churn3']) await core.deleteNode({ name });
        }
        return list;
      },
    });
    await core.createNode({ body: node('kept') });
    await core.createNode({ body: node('gone') });
    await informer.start();
    assert.equal(names(informer), 'gone,kept', 'the first list, before the gap');
    await until(informer, 'the relist', () => names(informer) === 'kept,new');
    assert.equal(lists(), 2, 'listed once more');
    assert.deepEqual(changes, ['gone', 'kept', 'gone gone', 'new']);
    assert.deepEqual(
      captured.lines.filter((l) => l.level === 40),
      [],
      "client-node's own 410 relist, not our recovery from an error",
    );
    await core.createNode({ body: node('after') });
    await until(informer, 'a change after the relist', () => informer.get('after') !== undefined);
  });

  it('recovers when the API server stops and an empty one starts on the same port: the cache becomes what the new one holds', async () => {
    // Its first retry comes a second after it lost the server: by then the new one holds as many versions
    // as the old did, so a watch from the old version would be accepted and miss what the new one holds.
    const { api, core, informer, changes, captured } = await setup({ retryMs: 1000 });
    for (const name of ['a', 'b']) await core.createNode({ body: node(name) });
    await informer.start();
    const before = informer.get('a')!.metadata!;
    await api.stop();
    // The informer notices (its watch fails to reconnect) before the new server starts, as with a real restart.
    await new Promise<void>((resolve) => {
      const check = setInterval(() => {
        if (captured.lines.some((l) => l.msg === 'informer lost its watch; relisting')) resolve(clearInterval(check));
      }, 20);
    });
    await api.start();
    for (const name of ['a', 'c']) await core.createNode({ body: node(name, { restarted: 'yes' }) });
    await until(
      informer,
      'the new server state',
      () => names(informer) === 'a,c' && informer.get('a')?.metadata?.labels?.restarted === 'yes',
    );
    // The new server counts versions from 1 again: the same version can name another object (its uid differs).
    assert.deepEqual(
      [informer.get('a')!.metadata!.resourceVersion === before.resourceVersion, informer.get('a')!.metadata!.uid === before.uid],
      [true, false],
    );
    assert.deepEqual(changes.slice(2).sort(), ['a', 'b gone', 'c']);
    await core.deleteNode({ name: 'c' });
    await until(informer, 'watching the new server', () => informer.get('c') === undefined);
  });

  // k8s.io/client-go/tools/pager: the reflector lists in pages of 500 with the continue token of each.
  it('lists 1,200 Nodes in 3 pages of at most 500, and caches all of them', async () => {
    const { core, informer, pages } = await setup();
    for (let i = 0; i < 1200; i++) await core.createNode({ body: node(`n${String(i).padStart(4, '0')}`) });
    await informer.start();
    assert.equal(informer.list().length, 1200);
    assert.deepEqual(
      pages.map((p) => [p.limit, p._continue !== undefined]),
      [
        [500, false],
        [500, true],
        [500, true],
      ],
    );
  });

  it('with a transform, caches what it keeps, and tells no change when an update changes nothing kept but the version', async () => {
    const { api, core } = await setup();
    const informer = new Informer<V1Node>({
      kubeConfig: api.kubeConfig,
      path: '/api/v1/nodes',
      list: (page) => core.listNode(page),
      transform: (n) => ({
        metadata: { name: n.metadata!.name!, resourceVersion: n.metadata!.resourceVersion!, labels: n.metadata!.labels ?? {} },
      }),
    });
    stops.push(() => informer.stop());
    const changes: string[] = [];
    informer.onChange((key) => changes.push(key));
    await core.createNode({ body: node('a') });
    await informer.start();
    assert.deepEqual(informer.get('a')!.spec, undefined, 'only what the transform keeps');
    await core.patchNode(
      { name: 'a', body: { metadata: { annotations: { unread: 'x' } } } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    await core.patchNode(
      { name: 'a', body: { metadata: { labels: { read: 'y' } } } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    await until(informer, 'the label', () => informer.get('a')?.metadata?.labels?.read === 'y');
    assert.deepEqual(changes, ['a', 'a'], 'the annotation was no change');
  });

  it('asks for bookmarks and a server-side watch timeout (client-node alone asks for neither)', async () => {
    const server = captureLog();
    const { informer } = await setup({ logger: server.log });
    await informer.start();
    const watchQuery = () =>
      server.lines.find((l) => l.path === '/api/v1/nodes' && String(l.query).includes('watch=true'))?.query as string | undefined;
    await new Promise<void>((resolve) => {
      const check = setInterval(() => watchQuery() && resolve(clearInterval(check)), 20);
    });
    const query = new URLSearchParams(watchQuery());
    assert.equal(query.get('allowWatchBookmarks'), 'true');
    const timeout = Number(query.get('timeoutSeconds'));
    assert.ok(timeout >= 300 && timeout < 600, `timeoutSeconds ${timeout}`);
  });
});
