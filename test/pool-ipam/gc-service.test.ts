/**
 * Garbage collection in node-a's pool IPAM service, end to end: addresses given by ADD through Debian's
 * macvlan plugin, pods ended on the lab API server the way a kubelet and kubectl end them (graceful
 * DELETE, then a DELETE with grace 0), released by the Pod event or by collect() (the periodic scan's
 * pass; its timer is an hour here) as the document's rules say, and never a live StatefulSet pod's.
 */
import assert from 'node:assert/strict';
import { group, version } from '../../src/api/resource-names';
import type { GcPlan, GcSettings } from '../../src/pool-ipam/gc-plan';
import { requireRoot } from '../support/kernel';
import { waitFor } from '../support/wait';
import { type PoolIpamFixture, poolIpamFixture } from './fixture';

describe('pool IPAM garbage collection in the node service', function () {
  this.timeout(60_000);
  requireRoot(this);
  let f: PoolIpamFixture | undefined;

  afterEach(async () => {
    await f?.close();
    f = undefined;
  });

  /** The fixture with garbage collection `gc` (claims are never fresh unless said) and a pool of `ips`. */
  async function start(gc: Partial<GcSettings>, ips = ['10.6.7.10-10.6.7.30']): Promise<PoolIpamFixture> {
    f = await poolIpamFixture({ gc: { freshMs: 0, ...gc } });
    await f.pool('pool-gc', { subnet: '10.6.7.0/24', ips });
    return f;
  }

  const config = (fx: PoolIpamFixture) => fx.config('macvlan', { default_ipv4_ippool: ['pool-gc'], detect_ip_conflict: false });

  /** A pod with an address given by ADD: [the pod, its address]. */
  async function added(fx: PoolIpamFixture, name: string, options: Parameters<PoolIpamFixture['pod']>[1] = {}) {
    const pod = await fx.pod(name, options);
    const out = await fx.node.run('ADD', config(fx), pod);
    assert.equal(out.code, 0, out.stdout + out.stderr);
    return [pod, (out.json!.ips[0].address as string).split('/')[0]!] as const;
  }

  const claimed = async (fx: PoolIpamFixture, address: string) => (await fx.claims()).find((c) => c.name === address);

  /** When the pod's grace period ends (ms): the deletionTimestamp of the graceful DELETE. */
  async function endGracefully(fx: PoolIpamFixture, name: string): Promise<number> {
    const marked = await fx.core.deleteNamespacedPod({ namespace: 'default', name });
    assert.ok(marked.metadata?.deletionTimestamp, `pod ${name} was not marked terminating`);
    return new Date(marked.metadata.deletionTimestamp).getTime();
  }

  /** Polls (no collect(): the service's own timers and events must do it) until the claim of `address` is gone: when it went. */
  async function goneAt(fx: PoolIpamFixture, address: string, ms: number): Promise<number> {
    let at = 0;
    await waitFor(
      `the service to release ${address} by itself`,
      async () => ((await claimed(fx, address)) === undefined ? ((at = Date.now()), true) : false),
      ms,
      undefined,
      50,
    );
    return at;
  }

  /** Runs collect() until the claim of `address` is gone from the API server (a Pod event's pass may be the one releasing it): every plan it got. */
  async function collectUntilGone(fx: PoolIpamFixture, address: string): Promise<{ plan: GcPlan }[]> {
    const passes: { plan: GcPlan }[] = [];
    await waitFor(
      `the claim of ${address} released`,
      async () => (passes.push({ plan: await fx.service!.collector.collect() }), (await claimed(fx, address)) === undefined),
      5_000,
      undefined,
      100,
    );
    return passes;
  }

  const releasesOf = (passes: { plan: GcPlan }[], address: string) =>
    passes.flatMap((p) => p.plan.release.filter((r) => r.claim.name === address).map((r) => r.reason));

  it("releases a stateless pod's address and Endpoint on the Pod event of its deletion alone, however fresh the claim", async () => {
    // The default freshness (60 s): a pod seen deleted is gone for sure, whatever the claim's age.
    const fx = await start({ freshMs: 60_000 });
    const [, address] = await added(fx, 'web-1');
    await fx.core.deleteNamespacedPod({ namespace: 'default', name: 'web-1', gracePeriodSeconds: 0 });
    await waitFor(`the claim of ${address} released`, async () => (await claimed(fx, address)) === undefined, 5_000);
    await waitFor(
      'the Endpoint deleted',
      () =>
        fx.custom.getNamespacedCustomObject({ group, version, namespace: 'default', plural: 'straitendpoints', name: 'web-1' }).then(
          () => false,
          (err) => /404|not found/i.test(String(err)),
        ),
      5_000,
    );
  });

  it('releases a stateless pod terminating on a Ready node additionalGraceDelayMs after its grace period, not before, by its own timer', async () => {
    const fx = await start({ additionalGraceDelayMs: 2_000 });
    const [, address] = await added(fx, 'web-2', { terminationGracePeriodSeconds: 1 });
    const due = (await endGracefully(fx, 'web-2')) + 2_000;
    const at = await goneAt(fx, address, due - Date.now() + 5_000);
    assert.ok(at >= due, `released ${due - at} ms before its grace period and the additional delay were over`);
  });

  it('releases a stateless pod terminating on a node that is not Ready as its grace period ends, without the additional delay, by its own timer', async () => {
    const fx = await start({ additionalGraceDelayMs: 3_600_000 });
    // node-a's plugin plays node-b's runtime here: the claim names the pod's node.
    const [, address] = await added(fx, 'web-3', { node: 'node-b', terminationGracePeriodSeconds: 1 });
    assert.equal((await claimed(fx, address))?.spec.node, 'node-b');
    await fx.core.replaceNodeStatus({
      name: 'node-b',
      body: { metadata: { name: 'node-b' }, status: { conditions: [{ type: 'Ready', status: 'False' }] } },
    });
    const due = await endGracefully(fx, 'web-3');
    const at = await goneAt(fx, address, due - Date.now() + 5_000);
    assert.ok(at >= due, `released ${due - at} ms before its grace period was over`);
  });

  it("never releases a StatefulSet pod's address while it terminates, after it is deleted, or when it is created again; the new incarnation gets it back", async () => {
    // No delay and nothing fresh: a stateless pod's address would go at each step.
    const fx = await start({ additionalGraceDelayMs: 0 });
    const set = await fx.apps.createNamespacedStatefulSet({
      namespace: 'default',
      body: {
        metadata: { name: 'db' },
        spec: {
          replicas: 2,
          serviceName: 'db',
          selector: { matchLabels: { app: 'db' } },
          template: { metadata: { labels: { app: 'db' } }, spec: { containers: [{ name: 'c', image: 'i' }] } },
        },
      },
    });
    const owner = { kind: 'StatefulSet', name: 'db', uid: set.metadata!.uid! };
    const [first, address] = await added(fx, 'db-1', { owner, terminationGracePeriodSeconds: 1 });
    // Each step ends a stateless witness after db-1's change: once the witness is released, the
    // service's informer had seen db-1's change (a watch delivers in order) and a pass judged it.
    const [, witness1] = await added(fx, 'w-1', { terminationGracePeriodSeconds: 1 });
    const [, witness2] = await added(fx, 'w-2');
    const [, witness3] = await added(fx, 'w-3');
    const passes: { plan: GcPlan }[] = [];

    await endGracefully(fx, 'db-1');
    await endGracefully(fx, 'w-1');
    passes.push(...(await collectUntilGone(fx, witness1)));

    await fx.core.deleteNamespacedPod({ namespace: 'default', name: 'db-1', gracePeriodSeconds: 0 });
    await fx.core.deleteNamespacedPod({ namespace: 'default', name: 'w-2', gracePeriodSeconds: 0 });
    passes.push(...(await collectUntilGone(fx, witness2)));

    const again = await fx.pod('db-1', { owner });
    assert.notEqual(again.uid, (await claimed(fx, address))?.spec.podUID);
    await fx.core.deleteNamespacedPod({ namespace: 'default', name: 'w-3', gracePeriodSeconds: 0 });
    passes.push(...(await collectUntilGone(fx, witness3)));
    assert.deepEqual(releasesOf(passes, address), [], `db-1's address ${address} was released`);
    // Not released by a Pod event's pass either: still the first incarnation's claim.
    const kept = await claimed(fx, address);
    assert.deepEqual([kept?.spec.podUID, kept?.spec.containerID], [first.uid, first.containerId]);

    const readded = await fx.node.run('ADD', config(fx), again);
    assert.equal(readded.code, 0, readded.stdout + readded.stderr);
    assert.equal(readded.json!.ips[0].address, `${address}/24`);
    assert.deepEqual((await fx.service!.collector.collect()).release, []);
    const claim = await claimed(fx, address);
    assert.deepEqual([claim?.spec.podName, claim?.spec.podUID, claim?.spec.containerID], ['db-1', again.uid, again.containerId]);
  });

  it('deletes the Endpoint of a pod whose claim was deleted by hand, and keeps the Endpoint of a pod holding its address', async () => {
    const fx = await start({});
    const [, orphaned] = await added(fx, 'web-5');
    await added(fx, 'web-6');
    await fx.custom.deleteClusterCustomObject({ group, version, plural: 'ipclaims', name: orphaned });
    await waitFor('the service to see the claim go', () => !fx.service!.allocator.claims.all().some((c) => c.name === orphaned), 5_000);
    const plan = await fx.service!.collector.collect();
    assert.deepEqual(plan.release, []);
    assert.deepEqual(
      plan.deleteEndpoints.map((d) => [`${d.endpoint.namespace}/${d.endpoint.name}`, d.reason]),
      [['default/web-5', 'no address is given to pod default/web-5 any more']],
    );
    const endpoints = (await fx.custom.listNamespacedCustomObject({ group, version, namespace: 'default', plural: 'straitendpoints' })) as {
      items: { metadata: { name: string } }[];
    };
    assert.deepEqual(
      endpoints.items.map((e) => e.metadata.name),
      ['web-6'],
    );
  });

  it("CNI DEL after garbage collection released the address succeeds and leaves the address's next holder alone", async () => {
    // A pool of one address: the next pod gets the released one.
    const fx = await start({}, ['10.6.7.10']);
    const [first] = await added(fx, 'web-7');
    await fx.core.deleteNamespacedPod({ namespace: 'default', name: 'web-7', gracePeriodSeconds: 0 });
    await waitFor('the claim of 10.6.7.10 released', async () => (await claimed(fx, '10.6.7.10')) === undefined, 5_000);
    const [next] = await added(fx, 'web-8');
    const deleted = await fx.node.run('DEL', config(fx), first);
    assert.equal(deleted.code, 0, deleted.stdout + deleted.stderr);
    const claim = await claimed(fx, '10.6.7.10');
    assert.deepEqual([claim?.spec.podName, claim?.spec.containerID], ['web-8', next.containerId]);
  });
});
