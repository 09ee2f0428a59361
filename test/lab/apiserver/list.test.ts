/**
 * The lab API server's lists as kube-apiserver 1.31 answers them: pages (`limit`, `continue`) that are
 * one consistent snapshot, remainingItemCount, a continue token the store has compacted (410 with a
 * token to go on inconsistently), resourceVersion with resourceVersionMatch (NotOlderThan, Exact, "0")
 * on list and on get, a version not reached yet (504 after the watch cache's wait), and the list
 * options kube-apiserver refuses (422). Each expectation names its kube-apiserver source (the API
 * concepts page: https://kubernetes.io/docs/reference/using-api/api-concepts/; k8s.io/apiserver's
 * pkg/storage/cacher/cacher.go, pkg/storage/etcd3/store.go and errors.go, pkg/storage/continue.go;
 * apimachinery's pkg/apis/meta/internalversion/validation/validation.go). Driven by client-node and
 * kubectl where they send the request, else over HTTPS as sent.
 */
import assert from 'node:assert/strict';
import { CoreV1Api, PatchStrategy, type V1ConfigMapList, setHeaderOptions } from '@kubernetes/client-node';
import { type TestApiServer, rawRequest, startTestApiServer } from '../../support/apiserver';
import { kubectl } from '../../support/k8s-tools';

type Json = Record<string, any>;

const token = (text: string) => JSON.parse(Buffer.from(text, 'base64url').toString()) as Json;
const names = (list: { items: { metadata?: { name?: string } }[] }) => list.items.map((i) => i.metadata?.name);

describe('lab API server: lists as kube-apiserver answers them', function () {
  this.timeout(30_000);
  let t: TestApiServer;
  let core: CoreV1Api;
  const get = async (path: string) => {
    const answer = await rawRequest(t, 'GET', path);
    return { code: answer.code, body: JSON.parse(answer.body) as Json };
  };
  const create = (name: string, data: Record<string, string> = {}, labels?: Record<string, string>) =>
    core.createNamespacedConfigMap({ namespace: 'default', body: { metadata: { name, ...(labels ? { labels } : {}) }, data } });

  const modify = (name: string, data: Record<string, string>) =>
    core.patchNamespacedConfigMap(
      { name, namespace: 'default', body: { data } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );

  beforeEach(async () => {
    t = await startTestApiServer({ storeHistorySize: 5 });
    core = t.kubeConfig.makeApiClient(CoreV1Api);
  });
  afterEach(async () => t.close());

  it('pages a list as one snapshot: later pages show the objects as they were at the first page, and count what remains', async () => {
    for (const name of ['cm-a', 'cm-b', 'cm-c', 'cm-d', 'cm-e']) await create(name, { v: '1' });
    const first = await core.listNamespacedConfigMap({ namespace: 'default', limit: 2 });
    assert.deepEqual(names(first), ['cm-a', 'cm-b']);
    const at = first.metadata!.resourceVersion!;
    // continue.go: the token is {"v":"meta.k8s.io/v1","rv":<the first page's revision>,"start":<last key + "\x00">}, base64url.
    assert.deepEqual(token(first.metadata!._continue!), { v: 'meta.k8s.io/v1', rv: Number(at), start: 'cm-b\u0000' });
    // PrepareContinueToken: remainingItemCount = the keys left - limit, when no selector filters.
    assert.equal(first.metadata!.remainingItemCount, 3);

    await core.deleteNamespacedConfigMap({ name: 'cm-c', namespace: 'default' });
    await modify('cm-d', { v: '2' });
    await create('cm-bb', { v: '1' });

    // API concepts, "Retrieving large results sets in chunks": every page is read at the first page's resourceVersion.
    const second = await core.listNamespacedConfigMap({ namespace: 'default', limit: 2, _continue: first.metadata!._continue });
    assert.deepEqual(
      second.items.map((c) => [c.metadata?.name, c.data?.v]),
      [
        ['cm-c', '1'],
        ['cm-d', '1'],
      ],
    );
    assert.equal(second.metadata!.resourceVersion, at);
    assert.equal(second.metadata!.remainingItemCount, 1);
    const last = await core.listNamespacedConfigMap({ namespace: 'default', limit: 2, _continue: second.metadata!._continue });
    assert.deepEqual(names(last), ['cm-e']);
    assert.equal(last.metadata!._continue, undefined);
    assert.equal(last.metadata!.remainingItemCount, undefined);

    const now = await core.listNamespacedConfigMap({ namespace: 'default' });
    assert.deepEqual(names(now), ['cm-a', 'cm-b', 'cm-bb', 'cm-d', 'cm-e']);
    assert.ok(Number(now.metadata!.resourceVersion) > Number(at));
  });

  it('keys pages of every namespace by namespace/name, and gives no remainingItemCount (but a token) when a selector filters', async () => {
    await core.createNamespace({ body: { metadata: { name: 'a-ns' } } });
    await core.createNamespacedConfigMap({ namespace: 'a-ns', body: { metadata: { name: 'x', labels: { app: 'y' } } } });
    await create('x', {}, { app: 'y' });
    await create('z', {}, { app: 'n' });
    const all = await get('/api/v1/configmaps?limit=1');
    assert.equal(token(all.body.metadata.continue).start, 'a-ns/x\u0000');
    // store.go GetList: a full page ends the list only at the last key; keys left that the selector drops still get a token.
    const selected = await get('/api/v1/namespaces/default/configmaps?limit=1&labelSelector=app%3Dy');
    assert.deepEqual(names(selected.body as V1ConfigMapList), ['x']);
    assert.equal(token(selected.body.metadata.continue).start, 'x\u0000');
    assert.equal(selected.body.metadata.remainingItemCount, undefined);
    const rest = await get(
      `/api/v1/namespaces/default/configmaps?limit=1&labelSelector=app%3Dy&continue=${selected.body.metadata.continue}`,
    );
    assert.deepEqual([names(rest.body as V1ConfigMapList), rest.body.metadata.continue], [[], undefined]);
  });

  it('answers a continue token whose version is compacted with 410 Expired and a token that goes on from the same key', async () => {
    for (const name of ['cm-a', 'cm-b', 'cm-c']) await create(name);
    const first = await get('/api/v1/namespaces/default/configmaps?limit=1');
    // Past the 5 changes of configmaps the store keeps, the first page's version is compacted.
    for (let i = 0; i < 6; i++) await create(`cm-later-${i}`);
    const gone = await get(`/api/v1/namespaces/default/configmaps?limit=1&continue=${first.body.metadata.continue}`);
    // etcd3 errors.go handleCompactedErrorForPaging: inconsistentContinue, with a token of rv -1 (the newest) from the same key.
    assert.deepEqual(gone, {
      code: 410,
      body: {
        kind: 'Status',
        apiVersion: 'v1',
        metadata: { continue: gone.body.metadata.continue },
        status: 'Failure',
        message:
          'The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.',
        reason: 'Expired',
        code: 410,
      },
    });
    assert.deepEqual(token(gone.body.metadata.continue), { v: 'meta.k8s.io/v1', rv: -1, start: 'cm-a\u0000' });
    const rest = await get(`/api/v1/namespaces/default/configmaps?continue=${gone.body.metadata.continue}`);
    assert.deepEqual(names(rest.body as V1ConfigMapList), [
      'cm-b',
      'cm-c',
      'cm-later-0',
      'cm-later-1',
      'cm-later-2',
      'cm-later-3',
      'cm-later-4',
      'cm-later-5',
    ]);
  });

  it('lists at a resourceVersion: Exact (and limit with a version) at that version, NotOlderThan and "0" the newest; refuses a compacted or future one', async () => {
    const a = await create('cm-a', { v: '1' });
    const at = a.metadata!.resourceVersion!;
    await modify('cm-a', { v: '2' });
    await create('cm-b');
    const values = (list: Json) => list.items.map((c: Json) => [c.metadata.name, c.data?.v]);
    // API concepts, "Semantics for get and list": Exact is the state at that version; cacher.go shouldDelegateList sends it to etcd.
    const exact = await get(`/api/v1/namespaces/default/configmaps?resourceVersion=${at}&resourceVersionMatch=Exact`);
    assert.deepEqual([values(exact.body), exact.body.metadata.resourceVersion], [[['cm-a', '1']], at]);
    // store.go resolveGetListRev: a limit with a resourceVersion and no match is the legacy exact read.
    const legacy = await get(`/api/v1/namespaces/default/configmaps?resourceVersion=${at}&limit=5`);
    assert.deepEqual(values(legacy.body), [['cm-a', '1']]);
    const newest = await get(`/api/v1/namespaces/default/configmaps?resourceVersion=${at}&resourceVersionMatch=NotOlderThan`);
    assert.deepEqual(values(newest.body), [
      ['cm-a', '2'],
      ['cm-b', undefined],
    ]);
    // cacher.go computeListLimit: the watch cache ignores a limit with resourceVersion "0".
    const any = await get('/api/v1/namespaces/default/configmaps?resourceVersion=0&limit=1');
    assert.deepEqual([names(any.body as V1ConfigMapList), any.body.metadata.continue], [['cm-a', 'cm-b'], undefined]);

    for (let i = 0; i < 5; i++) await create(`cm-later-${i}`);
    // etcd3 errors.go interpretListError: a compacted revision without paging is `expired`.
    const compacted = await get(`/api/v1/namespaces/default/configmaps?resourceVersion=${at}&resourceVersionMatch=Exact`);
    assert.deepEqual(
      [compacted.code, compacted.body.reason, compacted.body.message],
      [410, 'Expired', 'The resourceVersion for the provided list is too old.'],
    );
    // etcd's ErrFutureRev is no Status: responsewriters ErrorToAPIStatus makes it a 500 without a reason.
    const future = await get(`/api/v1/namespaces/default/configmaps?resourceVersion=999999&resourceVersionMatch=Exact`);
    assert.deepEqual(future, {
      code: 500,
      body: {
        kind: 'Status',
        apiVersion: 'v1',
        metadata: {},
        status: 'Failure',
        message: 'etcdserver: mvcc: required revision is a future revision',
        code: 500,
      },
    });
  });

  it('waits for a resourceVersion not reached yet (list NotOlderThan, get), then answers 504 Too large resource version', async () => {
    const a = await create('cm-a');
    const next = Number(a.metadata!.resourceVersion) + 1;
    // watch_cache.go waitUntilFreshAndBlock: a write within the wait answers the list.
    const waiting = get(`/api/v1/namespaces/default/configmaps?resourceVersion=${next}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
    await create('cm-b');
    const listed = await waiting;
    assert.deepEqual([listed.code, names(listed.body as V1ConfigMapList)], [200, ['cm-a', 'cm-b']]);

    const started = Date.now();
    const late = await get(`/api/v1/namespaces/default/configmaps/cm-a?resourceVersion=${next + 10}`);
    // blockTimeout is 3 s; storage.NewTooLargeResourceVersionError, retry after resourceVersionTooHighRetrySeconds (1).
    assert.ok(Date.now() - started >= 2900);
    assert.deepEqual(late, {
      code: 504,
      body: {
        kind: 'Status',
        apiVersion: 'v1',
        metadata: {},
        status: 'Failure',
        message: `Timeout: Too large resource version: ${next + 10}, current: ${next}`,
        reason: 'Timeout',
        details: { causes: [{ reason: 'ResourceVersionTooLarge', message: 'Too large resource version' }], retryAfterSeconds: 1 },
        code: 504,
      },
    });
    // A get at an older version is served from the watch cache: not older than it, so the newest.
    const old = await get(`/api/v1/namespaces/default/configmaps/cm-a?resourceVersion=1`);
    assert.equal(old.body.metadata.resourceVersion, a.metadata!.resourceVersion);
  });

  it('refuses the list options ValidateListOptions refuses, with 422', async () => {
    const refused = async (query: string) => {
      const answer = await get(`/api/v1/namespaces/default/configmaps?${query}`);
      return [answer.code, answer.body.message];
    };
    const invalid = (why: string) => [422, `ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: ${why}`];
    assert.deepEqual(
      await refused('resourceVersionMatch=NotOlderThan'),
      invalid('Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided'),
    );
    assert.deepEqual(
      await refused('resourceVersionMatch=Exact&resourceVersion=0'),
      invalid('Forbidden: resourceVersionMatch "exact" is forbidden for resourceVersion "0"'),
    );
    assert.deepEqual(
      await refused('resourceVersionMatch=Newest&resourceVersion=5'),
      invalid('Unsupported value: "Newest": supported values: "Exact", "NotOlderThan", ""'),
    );
    assert.deepEqual(await refused('resourceVersionMatch=NotOlderThan&continue=x'), [
      422,
      'ListOptions.meta.k8s.io "" is invalid: [resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided, resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden when continue is provided]',
    ]);
    assert.deepEqual(
      await refused('watch=true&resourceVersionMatch=NotOlderThan&resourceVersion=1'),
      invalid('Forbidden: resourceVersionMatch is forbidden for watch'),
    );
    // store.go resolveGetListRev: a continue with a resourceVersion is a 400.
    const first = await get('/api/v1/namespaces?limit=1');
    assert.deepEqual(await refused(`limit=1&resourceVersion=5&continue=${first.body.metadata.continue}`), [
      400,
      'specifying resource version is not allowed when using continue',
    ]);
  });

  it('serves kubectl get --chunk-size page by page as one list', async () => {
    for (const name of ['cm-a', 'cm-b', 'cm-c', 'cm-d', 'cm-e']) await create(name);
    const table = await kubectl(
      t.kubeconfigPath,
      t.dir,
      'get',
      'configmaps',
      '--chunk-size=2',
      '--no-headers',
      '-o',
      'custom-columns=N:.metadata.name',
    );
    assert.deepEqual(table, { code: 0, stdout: 'cm-a\ncm-b\ncm-c\ncm-d\ncm-e\n', stderr: '' });
    const printed = await kubectl(t.kubeconfigPath, t.dir, 'get', 'configmaps', '--chunk-size=2', '--no-headers');
    assert.deepEqual(
      printed.stdout.split('\n').map((line) => line.split(/\s+/)[0]),
      ['cm-a', 'cm-b', 'cm-c', 'cm-d', 'cm-e', ''],
    );
  });
});
