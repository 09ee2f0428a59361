/**
 * The lab API server driven by the real @kubernetes/client-node 1.4.0: the semantics Strait's
 * controllers and agents will rely on (CRUD, conflicts, validation, status subresource, watches,
 * informers across a 410, bookmarks, selectors, auth), each checked against literal expected answers.
 */
import assert from 'node:assert/strict';
import {
  AppsV1Api,
  CoordinationV1Api,
  CoreV1Api,
  CustomObjectsApi,
  KubeConfig,
  type KubernetesObject,
  PatchStrategy,
  Watch,
  makeInformer,
  setHeaderOptions,
} from '@kubernetes/client-node';
import { kubeconfigText } from '../../../lab/src/apiserver/kubeconfig';
import {
  type RawAnswer,
  type TestApiServer,
  apiFailure,
  nodeDataplaneObject,
  rawRequest,
  startTestApiServer,
} from '../../support/apiserver';

type Obj = KubernetesObject & { spec?: Record<string, unknown>; status?: Record<string, unknown>; [k: string]: unknown };

const strait = { group: 'strait.io', version: 'v1alpha1', plural: 'nodedataplanes' };

/** Resolves with the first value `check` returns (not undefined), from events `subscribe` delivers; fails after `ms`. */
function eventually<E, T>(
  what: string,
  subscribe: (on: (event: E) => void) => void,
  check: (event: E) => T | undefined,
  ms = 5000,
): Promise<T> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms);
    subscribe((event) => {
      const value = check(event);
      if (value !== undefined) {
        clearTimeout(timer);
        resolve(value);
      }
    });
  });
}

describe('lab API server with @kubernetes/client-node', () => {
  let t: TestApiServer;
  let core: CoreV1Api;
  let custom: CustomObjectsApi;

  beforeEach(async () => {
    t = await startTestApiServer({ watchCacheSize: 3, bookmarkIntervalMs: 200 });
    core = t.kubeConfig.makeApiClient(CoreV1Api);
    custom = t.kubeConfig.makeApiClient(CustomObjectsApi);
  });
  afterEach(async () => t.close());

  it('creates, reads, replaces and deletes a ConfigMap, each write with a larger resourceVersion; then it is NotFound', async () => {
    const created = await core.createNamespacedConfigMap({ namespace: 'default', body: { metadata: { name: 'cm1' }, data: { a: '1' } } });
    assert.equal(created.metadata?.namespace, 'default');
    assert.match(created.metadata?.uid ?? '', /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    assert.match(created.metadata?.resourceVersion ?? '', /^\d+$/);
    const read = await core.readNamespacedConfigMap({ name: 'cm1', namespace: 'default' });
    assert.deepEqual(read.data, { a: '1' });
    const replaced = await core.replaceNamespacedConfigMap({ name: 'cm1', namespace: 'default', body: { ...read, data: { a: '2' } } });
    assert.deepEqual(replaced.data, { a: '2' });
    assert.ok(Number(replaced.metadata?.resourceVersion) > Number(created.metadata?.resourceVersion));
    const list = await core.listNamespacedConfigMap({ namespace: 'default' });
    assert.deepEqual(
      list.items.map((c) => c.metadata?.name),
      ['cm1'],
    );
    assert.equal(list.metadata?.resourceVersion, replaced.metadata?.resourceVersion);
    await core.deleteNamespacedConfigMap({ name: 'cm1', namespace: 'default' });
    const gone = await apiFailure(core.readNamespacedConfigMap({ name: 'cm1', namespace: 'default' }));
    assert.equal(gone.code, 404);
    assert.deepEqual(
      { reason: gone.status.reason, message: gone.status.message, details: gone.status.details },
      { reason: 'NotFound', message: 'configmaps "cm1" not found', details: { name: 'cm1', group: '', kind: 'configmaps' } },
    );
  });

  it('ends a Pod bound to a node gracefully (Terminating until a delete with grace 0), and an unbound one at once', async () => {
    const pod = (name: string, spec: Record<string, unknown>) => ({
      metadata: { name },
      spec: { containers: [{ name: 'c', image: 'i' }], ...spec },
    });
    await core.createNamespacedPod({ namespace: 'default', body: pod('bound', { nodeName: 'node-a', terminationGracePeriodSeconds: 45 }) });
    await core.createNamespacedPod({ namespace: 'default', body: pod('unbound', {}) });
    const before = Date.now();
    await core.deleteNamespacedPod({ name: 'bound', namespace: 'default' });
    const terminating = await core.readNamespacedPod({ name: 'bound', namespace: 'default' });
    assert.equal(terminating.metadata?.deletionGracePeriodSeconds, 45);
    const ends = new Date(terminating.metadata!.deletionTimestamp!).getTime();
    assert.ok(
      ends >= Math.floor(before / 1000) * 1000 + 44_000 && ends <= Date.now() + 46_000,
      `deletionTimestamp ${terminating.metadata?.deletionTimestamp}`,
    );
    // A shorter grace period shortens it; a longer one does not lengthen it.
    await core.deleteNamespacedPod({ name: 'bound', namespace: 'default', gracePeriodSeconds: 5 });
    assert.equal((await core.readNamespacedPod({ name: 'bound', namespace: 'default' })).metadata?.deletionGracePeriodSeconds, 5);
    await core.deleteNamespacedPod({ name: 'bound', namespace: 'default', gracePeriodSeconds: 60 });
    assert.equal((await core.readNamespacedPod({ name: 'bound', namespace: 'default' })).metadata?.deletionGracePeriodSeconds, 5);
    await core.deleteNamespacedPod({ name: 'bound', namespace: 'default', gracePeriodSeconds: 0 });
    assert.equal((await apiFailure(core.readNamespacedPod({ name: 'bound', namespace: 'default' }))).code, 404);
    await core.deleteNamespacedPod({ name: 'unbound', namespace: 'default' });
    assert.equal((await apiFailure(core.readNamespacedPod({ name: 'unbound', namespace: 'default' }))).code, 404);
  });

  it('serves StatefulSets (apps/v1), their scale in spec.replicas', async () => {
    const apps = t.kubeConfig.makeApiClient(AppsV1Api);
    const body = {
      metadata: { name: 'db' },
      spec: {
        replicas: 3,
        serviceName: 'db',
        selector: { matchLabels: { app: 'db' } },
        template: { metadata: { labels: { app: 'db' } }, spec: { containers: [{ name: 'c', image: 'i' }] } },
      },
    };
    await apps.createNamespacedStatefulSet({ namespace: 'default', body });
    await apps.patchNamespacedStatefulSet(
      { name: 'db', namespace: 'default', body: { spec: { replicas: 1 } } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    assert.equal((await apps.readNamespacedStatefulSet({ name: 'db', namespace: 'default' })).spec?.replicas, 1);
  });

  it('refuses a namespaced object in a namespace that does not exist (404), and serves default and kube-system from the start', async () => {
    const missing = await apiFailure(core.createNamespacedSecret({ namespace: 'nope', body: { metadata: { name: 's1' } } }));
    assert.equal(missing.code, 404);
    assert.equal(missing.status.message, 'namespaces "nope" not found');
    const names = (await core.listNamespace()).items.map((n) => n.metadata?.name);
    assert.ok(names.includes('default') && names.includes('kube-system'), `namespaces: ${names.join(', ')}`);
    await core.createNamespace({ body: { metadata: { name: 'nope' } } });
    const secret = await core.createNamespacedSecret({
      namespace: 'nope',
      body: { metadata: { name: 's1' }, stringData: undefined, data: { k: 'dg==' } },
    });
    assert.equal(secret.metadata?.namespace, 'nope');
  });

  it('names an object from generateName, sets uid, creationTimestamp and generation 1; the same name again is 409 AlreadyExists', async () => {
    const created = (await custom.createClusterCustomObject({
      ...strait,
      body: { ...nodeDataplaneObject('node'), metadata: { generateName: 'node-' } },
    })) as Obj;
    assert.match(created.metadata!.name!, /^node-[bcdfghjklmnpqrstvwxz2456789]{5}$/);
    assert.equal(created.metadata!.generation, 1);
    assert.ok(Math.abs(Date.parse(String(created.metadata!.creationTimestamp)) - Date.now()) < 60_000);
    const again = await apiFailure(custom.createClusterCustomObject({ ...strait, body: nodeDataplaneObject(created.metadata!.name!) }));
    assert.equal(again.code, 409);
    assert.equal(again.status.reason, 'AlreadyExists');
    assert.equal(again.status.message, `nodedataplanes.strait.io "${created.metadata!.name}" already exists`);
  });

  it('answers an update from a stale resourceVersion with 409 Conflict, and applies one from the current version', async () => {
    const first = (await custom.createClusterCustomObject({ ...strait, body: nodeDataplaneObject('n1') })) as Obj;
    const second = (await custom.replaceClusterCustomObject({
      ...strait,
      name: 'n1',
      body: { ...first, spec: { ...first.spec, clusterId: 'west' } },
    })) as Obj;
    const stale = await apiFailure(
      custom.replaceClusterCustomObject({ ...strait, name: 'n1', body: { ...first, spec: { ...first.spec, clusterId: 'north' } } }),
    );
    assert.equal(stale.code, 409);
    assert.deepEqual(
      { reason: stale.status.reason, message: stale.status.message },
      {
        reason: 'Conflict',
        message:
          'Operation cannot be fulfilled on nodedataplanes.strait.io "n1": the object has been modified; please apply your changes to the latest version and try again',
      },
    );
    const third = (await custom.replaceClusterCustomObject({
      ...strait,
      name: 'n1',
      body: { ...second, spec: { ...second.spec, clusterId: 'north' } },
    })) as Obj;
    assert.equal(third.spec!.clusterId, 'north');
  });

  it('bumps generation only for spec changes, ignores status on the object, and changes only status through /status (merge patch)', async () => {
    const created = (await custom.createClusterCustomObject({
      ...strait,
      body: { ...nodeDataplaneObject('n1'), status: { ready: true } },
    })) as Obj;
    assert.equal(created.status, undefined, 'status is dropped on create');
    const labelled = (await custom.replaceClusterCustomObject({
      ...strait,
      name: 'n1',
      body: { ...created, metadata: { ...created.metadata, labels: { a: 'b' } } },
    })) as Obj;
    assert.equal(labelled.metadata!.generation, 1);
    const respec = (await custom.replaceClusterCustomObject({
      ...strait,
      name: 'n1',
      body: {
        ...labelled,
        spec: { ...labelled.spec, clusterId: 'west' },
        status: { ready: true, time: '2026-01-01T00:00:00Z', dataplane: 'ebpf', specGeneration: 1 },
      },
    })) as Obj;
    assert.equal(respec.metadata!.generation, 2);
    assert.equal(respec.status, undefined, 'status is ignored on the main resource');
    const status = { ready: true, time: '2026-01-01T00:00:00Z', dataplane: 'ebpf', specGeneration: 1 };
    const patched = (await custom.patchClusterCustomObjectStatus(
      { ...strait, name: 'n1', body: { status, spec: { clusterId: 'ignored' } } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    )) as Obj;
    assert.deepEqual(patched.status, status);
    assert.equal(patched.spec!.clusterId, 'west', 'spec is ignored on /status');
    assert.equal(patched.metadata!.generation, 2);
    const read = (await custom.getClusterCustomObject({ ...strait, name: 'n1' })) as Obj;
    assert.deepEqual(read.status, status);
  });

  it('answers a NodeDataplane that breaks its schema with 422 Invalid naming each field', async () => {
    const bad = nodeDataplaneObject('bad', { podCIDR: '10.0.0.0/33' });
    const one = await apiFailure(custom.createClusterCustomObject({ ...strait, body: bad }));
    assert.equal(one.code, 422);
    assert.deepEqual(one.status, {
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message:
        'NodeDataplane.strait.io "bad" is invalid: spec.podCIDR: Invalid value: "10.0.0.0/33": spec.podCIDR in body must be of type cidr: "10.0.0.0/33"',
      reason: 'Invalid',
      details: {
        name: 'bad',
        group: 'strait.io',
        kind: 'NodeDataplane',
        causes: [
          {
            reason: 'FieldValueInvalid',
            message: 'Invalid value: "10.0.0.0/33": spec.podCIDR in body must be of type cidr: "10.0.0.0/33"',
            field: 'spec.podCIDR',
          },
        ],
      },
      code: 422,
    });
    const spec = nodeDataplaneObject('bad').spec!;
    const several = await apiFailure(
      custom.createClusterCustomObject({
        ...strait,
        body: nodeDataplaneObject('bad', {
          node: { name: 'bad', role: 'boss', underlayAddress: '192.168.1.10' },
          overlay: { vni: 1, mac: '02:53:54:00:00:01' },
          clusterId: 'East',
          peers: spec.peers,
        }),
      }),
    );
    assert.equal(several.code, 422);
    assert.deepEqual(
      (several.status.details.causes as { field: string; message: string }[]).map((c) => `${c.field}: ${c.message}`).sort(),
      [
        'spec.clusterId: Invalid value: "East": spec.clusterId in body should match \'^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$\'',
        'spec.node.role: Unsupported value: "boss": supported values: "gateway", "worker"',
        'spec.overlay.port: Required value',
      ],
    );
  });

  it('prunes unknown fields by default (with a warning) and refuses them under fieldValidation=Strict, naming them', async () => {
    const strict = await apiFailure(
      custom.createClusterCustomObject({ ...strait, fieldValidation: 'Strict', body: nodeDataplaneObject('n1', { colour: 'blue' }) }),
    );
    assert.equal(strict.code, 400);
    assert.deepEqual(
      { reason: strict.status.reason, message: strict.status.message },
      {
        reason: 'BadRequest',
        message:
          'NodeDataplane in version "v1alpha1" cannot be handled as a NodeDataplane: strict decoding error: unknown field "spec.colour"',
      },
    );
    const pruned = (await custom.createClusterCustomObject({ ...strait, body: nodeDataplaneObject('n1', { colour: 'blue' }) })) as Obj;
    assert.equal(pruned.spec!.colour, undefined);
    assert.equal(pruned.spec!.clusterId, 'east');
    // A field named like a member of Object.prototype is as unknown as any other (the schema's own properties only).
    const named = await apiFailure(
      custom.createClusterCustomObject({
        ...strait,
        fieldValidation: 'Strict',
        body: nodeDataplaneObject('n2', { constructor: 'x', toString: 'y' }),
      }),
    );
    assert.equal(
      named.status.message,
      'NodeDataplane in version "v1alpha1" cannot be handled as a NodeDataplane: strict decoding error: unknown field "spec.constructor", unknown field "spec.toString"',
    );
  });

  it('applies a strategic merge patch without directives as a merge patch, and refuses one with any directive (422 naming it and where it is)', async () => {
    const apps = t.kubeConfig.makeApiClient(AppsV1Api);
    const container = (name: string) => ({ name, image: 'strait:0.1.0', args: [name], env: [{ name: 'A', value: '1' }] });
    await apps.createNamespacedDeployment({
      namespace: 'default',
      body: {
        metadata: { name: 'd' },
        spec: {
          selector: { matchLabels: { app: 'd' } },
          template: { metadata: { labels: { app: 'd' } }, spec: { containers: [container('a'), container('b')] } },
        },
      },
    });
    const strategic = setHeaderOptions('Content-Type', PatchStrategy.StrategicMergePatch);
    const patched = await apps.patchNamespacedDeployment(
      { name: 'd', namespace: 'default', body: { spec: { replicas: 3, template: { metadata: { annotations: { x: 'y' } } } } } },
      strategic,
    );
    assert.equal(patched.spec?.replicas, 3);
    assert.deepEqual(patched.spec?.template.metadata?.annotations, { x: 'y' });
    assert.deepEqual(
      patched.spec?.template.spec?.containers.map((c) => c.name),
      ['a', 'b'],
    );

    const refusals: [unknown, string, string][] = [
      [{ spec: { template: { spec: { containers: [{ name: 'b', $patch: 'delete' }] } } } }, '$patch', 'spec.template.spec.containers[0]'],
      [{ spec: { strategy: { $retainKeys: ['type'], type: 'Recreate' } } }, '$retainKeys', 'spec.strategy'],
      [{ metadata: { '$deleteFromPrimitiveList/finalizers': ['x'] } }, '$deleteFromPrimitiveList/finalizers', 'metadata'],
      [
        { spec: { template: { spec: { '$setElementOrder/containers': [{ name: 'b' }, { name: 'a' }] } } } },
        '$setElementOrder/containers',
        'spec.template.spec',
      ],
    ];
    for (const [body, directive, field] of refusals) {
      const refused = await apiFailure(apps.patchNamespacedDeployment({ name: 'd', namespace: 'default', body }, strategic));
      const message =
        `Forbidden: strategic merge patch directive "${directive}" is not supported by this API server, which applies a strategic merge patch as a JSON merge patch: ` +
        'send a JSON merge patch or a JSON patch, or replace the object (kubectl replace, kubectl apply --force)';
      assert.deepEqual(
        { code: refused.code, reason: refused.status.reason, message: refused.status.message, causes: refused.status.details.causes },
        {
          code: 422,
          reason: 'Invalid',
          message: `Deployment.apps "d" is invalid: ${field}: ${message}`,
          causes: [{ reason: 'FieldValueForbidden', message, field }],
        },
      );
    }
    const read = await apps.readNamespacedDeployment({ name: 'd', namespace: 'default' });
    assert.deepEqual(
      read.spec?.template.spec?.containers.map((c) => c.name),
      ['a', 'b'],
    );
    assert.equal(read.metadata?.resourceVersion, patched.metadata?.resourceVersion, 'a refused patch writes nothing');
  });

  it('creates and renews a Lease with CoordinationV1Api; a PUT of a missing Lease creates it (201)', async () => {
    const leases = t.kubeConfig.makeApiClient(CoordinationV1Api);
    const lease = await leases.createNamespacedLease({
      namespace: 'kube-system',
      body: { metadata: { name: 'strait-controller' }, spec: { holderIdentity: 'a', leaseDurationSeconds: 15 } },
    });
    const renewed = await leases.replaceNamespacedLease({
      name: 'strait-controller',
      namespace: 'kube-system',
      body: { ...lease, spec: { ...lease.spec, holderIdentity: 'b' } },
    });
    assert.equal(renewed.spec?.holderIdentity, 'b');
    const put = await leases.replaceNamespacedLease({
      name: 'other',
      namespace: 'kube-system',
      body: { metadata: { name: 'other' }, spec: { holderIdentity: 'c' } },
    });
    assert.equal(put.spec?.holderIdentity, 'c');
    assert.deepEqual(
      (await leases.listNamespacedLease({ namespace: 'kube-system' })).items.map((l) => l.metadata?.name),
      ['other', 'strait-controller'],
    );
  });

  it('feeds an informer on NodeDataplanes add, update and delete, in order', async () => {
    const seen: string[] = [];
    const informer = makeInformer<Obj>(
      t.kubeConfig,
      '/apis/strait.io/v1alpha1/nodedataplanes',
      () => custom.listClusterCustomObject(strait) as never,
    );
    for (const verb of ['add', 'update', 'delete'] as const)
      informer.on(verb, (o: Obj) => seen.push(`${verb} ${o.metadata!.name} ${String(o.spec!.clusterId)}`));
    await informer.start();
    try {
      const created = (await custom.createClusterCustomObject({ ...strait, body: nodeDataplaneObject('n1') })) as Obj;
      await custom.replaceClusterCustomObject({
        ...strait,
        name: 'n1',
        body: { ...created, spec: { ...created.spec, clusterId: 'west' } },
      });
      await custom.deleteClusterCustomObject({ ...strait, name: 'n1' });
      await eventually(
        'the delete event',
        (on) => informer.on('delete', on),
        () => true,
      );
      assert.deepEqual(seen, ['add n1 east', 'update n1 west', 'delete n1 west']);
    } finally {
      await informer.stop();
    }
  });

  it('makes an informer whose watch is too old (410 Expired) relist, and it sees what was created meanwhile', async () => {
    let lists = 0;
    const informer = makeInformer<Obj>(t.kubeConfig, '/apis/strait.io/v1alpha1/nodedataplanes', () => {
      lists += 1;
      return custom.listClusterCustomObject(strait) as never;
    });
    const added: string[] = [];
    informer.on('add', (o: Obj) => added.push(o.metadata!.name!));
    informer.on('error', () => undefined);
    await informer.start();
    try {
      await custom.createClusterCustomObject({ ...strait, body: nodeDataplaneObject('n1') });
      await eventually(
        'n1 added',
        (on) => informer.on('add', on),
        (o: Obj) => (o.metadata!.name === 'n1' ? true : undefined),
      );
      await informer.stop();
      // The watch cache keeps 3 changes: these 4 push the informer's resourceVersion out of it.
      for (const name of ['n2', 'n3', 'n4', 'n5']) await custom.createClusterCustomObject({ ...strait, body: nodeDataplaneObject(name) });
      const seenN5 = eventually(
        'n5 added after the relist',
        (on) => informer.on('add', on),
        (o: Obj) => (o.metadata!.name === 'n5' ? true : undefined),
      );
      await informer.start();
      await seenN5;
      assert.equal(lists, 2, 'the informer listed again after the 410');
      assert.deepEqual([...added].sort(), ['n1', 'n2', 'n3', 'n4', 'n5']);
    } finally {
      await informer.stop();
    }
  });

  it('answers a watch from a resourceVersion older than the watch cache with one ERROR event: a 410 Expired Status', async () => {
    const from = Number(
      ((await custom.listClusterCustomObject(strait)) as { metadata: { resourceVersion: string } }).metadata.resourceVersion,
    );
    // The watch cache keeps 3 changes: after 4, the changes since `from` are no longer all known.
    const first = (await custom.createClusterCustomObject({ ...strait, body: nodeDataplaneObject('n1') })) as Obj;
    for (const name of ['n2', 'n3', 'n4']) await custom.createClusterCustomObject({ ...strait, body: nodeDataplaneObject(name) });
    const oldestKnown = Number(first.metadata!.resourceVersion);
    const events: { type: string; object: any }[] = [];
    let request: AbortController | undefined;
    const ended = new Promise<unknown>((resolve) => {
      void new Watch(t.kubeConfig)
        .watch(
          '/apis/strait.io/v1alpha1/nodedataplanes',
          { resourceVersion: String(from) },
          (type, object) => events.push({ type, object }),
          resolve,
        )
        .then((r) => (request = r));
    });
    const timeout = setTimeout(() => request?.abort(), 5000);
    const end = await ended;
    clearTimeout(timeout);
    assert.equal(end, null, `the server ends the stream (events: ${JSON.stringify(events.map((e) => e.type))})`);
    assert.deepEqual(events, [
      {
        type: 'ERROR',
        object: {
          kind: 'Status',
          apiVersion: 'v1',
          metadata: {},
          status: 'Failure',
          message: `too old resource version: ${from} (${oldestKnown})`,
          reason: 'Expired',
          code: 410,
        },
      },
    ]);
  });

  it('sends BOOKMARK events carrying the newest resourceVersion when asked', async () => {
    const created = (await custom.createClusterCustomObject({ ...strait, body: nodeDataplaneObject('n1') })) as Obj;
    const watch = new Watch(t.kubeConfig);
    const events: { type: string; object: any }[] = [];
    let request: AbortController | undefined;
    const bookmark = new Promise<any>((resolve) => {
      void watch
        .watch(
          '/apis/strait.io/v1alpha1/nodedataplanes',
          { resourceVersion: created.metadata!.resourceVersion, allowWatchBookmarks: true },
          (type, object) => {
            events.push({ type, object });
            if (type === 'BOOKMARK') resolve(object);
          },
          () => undefined,
        )
        .then((r) => (request = r));
    });
    const timeout = setTimeout(() => request?.abort(), 5000);
    try {
      assert.deepEqual(await bookmark, {
        kind: 'NodeDataplane',
        apiVersion: 'strait.io/v1alpha1',
        metadata: { resourceVersion: created.metadata!.resourceVersion },
      });
      assert.deepEqual(
        events.map((e) => e.type),
        ['BOOKMARK'],
      );
    } finally {
      clearTimeout(timeout);
      request?.abort();
    }
  });

  it('filters lists and watches by label and field selectors, and answers a bad selector with 400 naming it', async () => {
    const make = (name: string, labels: Record<string, string>) =>
      core.createNamespacedConfigMap({ namespace: 'default', body: { metadata: { name, labels } } });
    await make('a', { env: 'prod', tier: 'web' });
    await make('b', { env: 'staging', tier: 'db' });
    await make('c', { env: 'prod', tier: 'db', canary: 'yes' });
    await make('d', { env: 'dev' });
    const names = async (labelSelector?: string, fieldSelector?: string) =>
      (await core.listNamespacedConfigMap({ namespace: 'default', labelSelector, fieldSelector })).items.map((c) => c.metadata!.name);
    assert.deepEqual(await names('env in (prod,staging),!canary'), ['a', 'b']);
    assert.deepEqual(await names('tier!=web'), ['b', 'c', 'd']);
    assert.deepEqual(await names('env notin (prod),tier'), ['b']);
    assert.deepEqual(await names('env==prod,canary'), ['c']);
    assert.deepEqual(await names(undefined, 'metadata.name=b'), ['b']);
    assert.deepEqual(await names('env=prod', 'metadata.name!=a'), ['c']);
    const badLabel = await apiFailure(core.listNamespacedConfigMap({ namespace: 'default', labelSelector: 'env in prod' }));
    assert.deepEqual([badLabel.code, badLabel.status.reason], [400, 'BadRequest']);
    assert.match(badLabel.status.message, /env in prod/);
    const badField = await apiFailure(core.listNamespacedConfigMap({ namespace: 'default', fieldSelector: 'spec.colour=blue' }));
    assert.deepEqual([badField.code, badField.status.message], [400, 'field label not supported: spec.colour']);
    // Labels and fields named like members of Object.prototype are no labels and no fields.
    assert.deepEqual(await names('constructor'), []);
    assert.deepEqual(await names('!toString'), ['a', 'b', 'c', 'd']);
    const prototypeField = await apiFailure(core.listNamespacedConfigMap({ namespace: 'default', fieldSelector: 'constructor=x' }));
    assert.deepEqual([prototypeField.code, prototypeField.status.message], [400, 'field label not supported: constructor']);

    // A watch with a selector: an object leaving the selection is DELETED for it, one entering ADDED.
    const events: string[] = [];
    let request: AbortController | undefined;
    const done = new Promise<void>((resolve) => {
      void new Watch(t.kubeConfig)
        .watch(
          '/api/v1/namespaces/default/configmaps',
          { labelSelector: 'env=prod', resourceVersion: '0' },
          (type, o: Obj) => {
            events.push(`${type} ${o.metadata!.name}`);
            if (events.length === 4) resolve();
          },
          () => resolve(),
        )
        .then((r) => (request = r));
    });
    const a = await core.readNamespacedConfigMap({ name: 'a', namespace: 'default' });
    await core.replaceNamespacedConfigMap({
      name: 'a',
      namespace: 'default',
      body: { ...a, metadata: { ...a.metadata, labels: { env: 'dev' } } },
    });
    const d = await core.readNamespacedConfigMap({ name: 'd', namespace: 'default' });
    await core.replaceNamespacedConfigMap({
      name: 'd',
      namespace: 'default',
      body: { ...d, metadata: { ...d.metadata, labels: { env: 'prod' } } },
    });
    const timeout = setTimeout(() => request?.abort(), 5000);
    await done;
    clearTimeout(timeout);
    request?.abort();
    assert.deepEqual(events, ['ADDED a', 'ADDED c', 'DELETED a', 'ADDED d']);
  });

  it("answers a path with a malformed escape as Go's HTTP server does: its bare 400, before authentication, and keeps serving", async () => {
    // net/http readRequest → url.ParseRequestURI → URL.setPath → unescape(path, encodePath) fails on a `%`
    // not followed by two hex digits (net/url url.go), and conn.serve writes "HTTP/1.1 400 Bad Request"
    // with Content-Type text/plain and Connection: close, body "400 Bad Request" (net/http server.go):
    // kube-apiserver's handlers (and so a Status) never see it.
    const goBadRequest = { code: 400, contentType: 'text/plain; charset=utf-8', connection: 'close', body: '400 Bad Request' };
    const seen = (a: RawAnswer) => ({
      code: a.code,
      contentType: a.headers['content-type'],
      connection: a.headers.connection,
      body: a.body,
    });
    for (const path of ['/api/v1/namespaces/%E0%A4%A/configmaps', '/api/v1/namespaces/default/configmaps/%zz', '/api/v1/nodes/x%', '/%']) {
      assert.deepEqual(seen(await rawRequest(t, 'GET', path)), goBadRequest, path);
      assert.deepEqual(seen(await rawRequest(t, 'DELETE', path, { token: null })), goBadRequest, `${path} without a token`);
    }
    // Escapes that are well formed are unescaped whole, as Go does: %2F separates segments; a bad escape in the query drops that pair (URL.Query()).
    assert.equal((await rawRequest(t, 'GET', '/api/v1/namespaces%2Fdefault%2Fconfigmaps')).code, 200);
    assert.equal((await rawRequest(t, 'GET', '/api/v1/namespaces?labelSelector=%zz')).code, 200);
    assert.ok((await core.listNamespace()).items.length > 0);
  });

  it('answers 401 Unauthorized without a token and with a wrong one', async () => {
    const unauthorized = {
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message: 'Unauthorized',
      reason: 'Unauthorized',
      code: 401,
    };
    const raw = await rawRequest(t, 'GET', '/api/v1/namespaces', { token: null });
    assert.deepEqual({ code: raw.code, status: JSON.parse(raw.body) }, { code: 401, status: unauthorized });
    const wrong = new KubeConfig();
    wrong.loadFromString(kubeconfigText([{ name: 'test', server: t.server.url, ca: t.server.ca, token: 'wrong' }]));
    assert.equal((await apiFailure(wrong.makeApiClient(CoreV1Api).listNamespace())).code, 401);
  });
});
