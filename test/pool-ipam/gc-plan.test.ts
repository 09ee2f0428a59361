/**
 * The garbage collection planner (the source document's "IP Garbage Collection"), one rule per test with
 * the plan written out: which claims are released and why, which Endpoints are deleted and why. Then
 * properties over random clusters: live StatefulSet addresses and other Ready nodes' claims are never
 * touched, a second plan over what is left releases nothing, every decision says why.
 */
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { parseIp } from '../../src/net/cidr';
import type { Claim } from '../../src/pool-ipam/claim';
import { type GcEndpoint, type GcInput, type GcPod, type GcSettings, planGarbageCollection } from '../../src/pool-ipam/gc-plan';

const now = Date.parse('2025-03-01T12:00:00Z');
const minutesAgo = (m: number) => now - m * 60_000;

const settings: GcSettings = {
  additionalGraceDelayMs: 5_000,
  terminatingOnReadyNode: true,
  terminatingOnNotReadyNode: true,
  conflictHoldMs: 600_000,
  freshMs: 60_000,
  cleanOutdatedEndpoints: true,
};

/** A claim of shop/web-0 (incarnation uid-1) on node-a, ten minutes old. */
function claim(address: string, fields: Partial<Claim> = {}): Claim {
  return {
    name: address.replaceAll(':', '-'),
    uid: `claim-${address}`,
    resourceVersion: '7',
    created: minutesAgo(10),
    address: parseIp('address', address),
    pool: 'pool-a',
    podNamespace: 'shop',
    podName: 'web-0',
    podUID: 'uid-1',
    node: 'node-a',
    network: 'underlay',
    ifname: 'eth0',
    containerID: 'c1',
    ...fields,
  };
}

function endpoint(name: string, fields: Partial<GcEndpoint> = {}): GcEndpoint {
  return { namespace: 'shop', name, uid: `endpoint-${name}`, node: 'node-a', podUID: 'uid-1', created: minutesAgo(10), ...fields };
}

const running = (fields: Partial<GcPod> = {}): GcPod => ({ uid: 'uid-1', nodeName: 'node-a', phase: 'Running', ...fields });

const db = { apiVersion: 'apps/v1', kind: 'StatefulSet', name: 'db', uid: 'set-uid' };

interface Cluster {
  claims?: Claim[];
  endpoints?: GcEndpoint[];
  pods?: Record<string, GcPod>;
  nodes?: Record<string, boolean>;
  statefulSets?: Record<string, number>;
  settings?: Partial<GcSettings>;
  deletedPods?: string[];
  at?: number;
}

/** The plan of node-a over the cluster (nodes a and b Ready unless said), as [claim, reason] and [endpoint, reason]. */
function plan(cluster: Cluster): { release: [string, string][]; deleteEndpoints: [string, string][] } {
  const input: GcInput = {
    node: 'node-a',
    now: cluster.at ?? now,
    claims: cluster.claims ?? [],
    endpoints: cluster.endpoints ?? [],
    pods: new Map(Object.entries(cluster.pods ?? {})),
    nodes: new Map(Object.entries(cluster.nodes ?? { 'node-a': true, 'node-b': true })),
    statefulSets: new Map(Object.entries(cluster.statefulSets ?? {})),
    settings: { ...settings, ...cluster.settings },
    ...(cluster.deletedPods ? { deletedPods: new Set(cluster.deletedPods) } : {}),
  };
  const result = planGarbageCollection(input);
  return {
    release: result.release.map((r) => [r.claim.name, r.reason]),
    deleteEndpoints: result.deleteEndpoints.map((d) => [`${d.endpoint.namespace}/${d.endpoint.name}`, d.reason]),
  };
}

const nothing = { release: [], deleteEndpoints: [] };

describe("pool IPAM garbage collection plan: the document's rules", () => {
  it('releases the address of a stateless pod that is gone, but keeps a claim younger than freshMs (the pod informer may not have seen the pod yet)', () => {
    assert.deepEqual(plan({ claims: [claim('10.6.0.10')] }).release, [['10.6.0.10', 'pod shop/web-0 is gone']]);
    assert.deepEqual(plan({ claims: [claim('10.6.0.10', { created: now - 60_000 })] }).release, [['10.6.0.10', 'pod shop/web-0 is gone']]);
    assert.deepEqual(plan({ claims: [claim('10.6.0.10', { created: now - 59_999 })] }), nothing);
  });

  it('releases a fresh claim at once when its pod was seen deleted (a watch event), not only once it is old', () => {
    assert.deepEqual(plan({ claims: [claim('10.6.0.10', { created: now - 1_000 })], deletedPods: ['uid-1'] }).release, [
      ['10.6.0.10', 'pod shop/web-0 is gone'],
    ]);
    assert.deepEqual(plan({ claims: [claim('10.6.0.10', { created: now - 1_000 })], deletedPods: ['uid-9'] }), nothing);
  });

  it('releases the address of an earlier incarnation of a stateless pod (the pod of that name has another uid)', () => {
    assert.deepEqual(plan({ claims: [claim('10.6.0.10')], pods: { 'shop/web-0': running({ uid: 'uid-2' }) } }).release, [
      ['10.6.0.10', 'pod shop/web-0 is a new incarnation (uid uid-2, the address was given to uid-1)'],
    ]);
  });

  it('keeps a fresh claim of a new incarnation while the pod informer still holds the earlier one', () => {
    // The ADD read the new pod from the API server; the informer has not seen the old one go yet.
    assert.deepEqual(
      plan({ claims: [claim('10.6.0.10', { podUID: 'uid-2', created: now - 1_000 })], pods: { 'shop/web-0': running({ uid: 'uid-1' }) } }),
      nothing,
    );
  });

  it('releases the address of a pod that has Succeeded or Failed', () => {
    assert.deepEqual(plan({ claims: [claim('10.6.0.10')], pods: { 'shop/web-0': running({ phase: 'Succeeded' }) } }).release, [
      ['10.6.0.10', 'pod shop/web-0 has Succeeded'],
    ]);
    assert.deepEqual(plan({ claims: [claim('10.6.0.10')], pods: { 'shop/web-0': running({ phase: 'Failed' }) } }).release, [
      ['10.6.0.10', 'pod shop/web-0 has Failed'],
    ]);
  });

  it('never releases the address of a Running or Pending pod (status.podIPs is not read: an empty one is no reason)', () => {
    for (const phase of ['Running', 'Pending', '']) {
      assert.deepEqual(
        plan({ claims: [claim('10.6.0.10', { created: minutesAgo(600) })], pods: { 'shop/web-0': running({ phase }) } }),
        nothing,
        phase,
      );
    }
  });

  it('releases a stateless pod terminating on a Ready node additionalGraceDelayMs after its grace period ends (its deletionTimestamp), not before', () => {
    const pods = { 'shop/web-0': running({ deletionTimestamp: now - 5_000 }) };
    assert.deepEqual(plan({ claims: [claim('10.6.0.10')], pods }).release, [
      ['10.6.0.10', 'pod shop/web-0 is terminating 5 s past its grace period on Ready node node-a'],
    ]);
    assert.deepEqual(plan({ claims: [claim('10.6.0.10')], pods, at: now - 1 }), nothing);
    assert.deepEqual(plan({ claims: [claim('10.6.0.10')], pods: { 'shop/web-0': running({ deletionTimestamp: now + 60_000 }) } }), nothing);
  });

  it('with terminatingOnReadyNode false, never releases a pod terminating on a Ready node', () => {
    const pods = { 'shop/web-0': running({ deletionTimestamp: minutesAgo(600) }) };
    assert.deepEqual(plan({ claims: [claim('10.6.0.10')], pods, settings: { terminatingOnReadyNode: false } }), nothing);
  });

  it('releases a stateless pod terminating on a node that is not Ready (or gone) as its grace period ends, without the additional delay', () => {
    const on = (nodeName: string, deletionTimestamp: number) => ({
      claims: [claim('10.6.0.10', { node: nodeName })],
      pods: { 'shop/web-0': running({ nodeName, deletionTimestamp }) },
      nodes: { 'node-a': true, 'node-b': false },
    });
    assert.deepEqual(plan(on('node-b', now)).release, [
      ['10.6.0.10', 'pod shop/web-0 is terminating past its grace period on node node-b, which is not Ready'],
    ]);
    assert.deepEqual(plan(on('node-c', now)).release, [
      ['10.6.0.10', 'pod shop/web-0 is terminating past its grace period on node node-c, which is not Ready'],
    ]);
    assert.deepEqual(plan({ ...on('node-b', now + 1) }), nothing);
  });

  it('with terminatingOnNotReadyNode false, never releases a pod terminating on a node that is not Ready', () => {
    const cluster = {
      claims: [claim('10.6.0.10', { node: 'node-b' })],
      pods: { 'shop/web-0': running({ nodeName: 'node-b', deletionTimestamp: minutesAgo(600) }) },
      nodes: { 'node-a': true, 'node-b': false },
    };
    assert.deepEqual(plan({ ...cluster, settings: { terminatingOnNotReadyNode: false } }), nothing);
  });

  it("never releases a StatefulSet pod's address while the set exists and the ordinal is below its replicas, whatever the pod does", () => {
    const sts = (fields: Partial<Claim> = {}) => claim('10.6.0.20', { podName: 'db-1', owner: db, created: minutesAgo(600), ...fields });
    const statefulSets = { 'shop/db': 2 };
    const cases: [string, Cluster][] = [
      ['gone', { claims: [sts()] }],
      [
        'terminating long past its grace period on a Ready node',
        { claims: [sts()], pods: { 'shop/db-1': running({ deletionTimestamp: minutesAgo(600) }) } },
      ],
      ['a new incarnation', { claims: [sts()], pods: { 'shop/db-1': running({ uid: 'uid-2' }) } }],
      ['Failed', { claims: [sts()], pods: { 'shop/db-1': running({ phase: 'Failed' }) } }],
      [
        'terminating on a node that is not Ready',
        {
          claims: [sts({ node: 'node-b' })],
          pods: { 'shop/db-1': running({ nodeName: 'node-b', deletionTimestamp: minutesAgo(600) }) },
          nodes: { 'node-a': true, 'node-b': false },
        },
      ],
      ['on a node that is gone', { claims: [sts({ node: 'node-c' })] }],
    ];
    for (const [what, cluster] of cases) assert.deepEqual(plan({ ...cluster, statefulSets }).release, [], what);
  });

  it("releases a StatefulSet pod's address once the set is gone or scaled to its ordinal or below, or when the pod is no ordinal pod of the set", () => {
    const sts = (podName: string) => claim('10.6.0.20', { podName, owner: db });
    assert.deepEqual(plan({ claims: [sts('db-1')] }).release, [['10.6.0.20', 'StatefulSet shop/db is gone']]);
    assert.deepEqual(plan({ claims: [sts('db-1')], statefulSets: { 'shop/db': 1 } }).release, [
      ['10.6.0.20', 'StatefulSet shop/db has 1 replicas, below ordinal 1'],
    ]);
    assert.deepEqual(plan({ claims: [sts('db-1')], statefulSets: { 'shop/db': 0 } }).release, [
      ['10.6.0.20', 'StatefulSet shop/db has 0 replicas, below ordinal 1'],
    ]);
    assert.deepEqual(plan({ claims: [sts('dbx-1')], statefulSets: { 'shop/db': 3 } }).release, [
      ['10.6.0.20', 'pod shop/dbx-1 is not an ordinal pod of StatefulSet db'],
    ]);
    assert.deepEqual(plan({ claims: [sts('db-one')], statefulSets: { 'shop/db': 3 } }).release, [
      ['10.6.0.20', 'pod shop/db-one is not an ordinal pod of StatefulSet db'],
    ]);
  });

  it('releases an address marked conflicting once conflictHoldMs has passed since the conflict was seen, whatever its pod does', () => {
    const conflicting = (detectedAt: number) =>
      claim('10.6.0.30', { conflict: { mac: '02:00:00:00:00:01', detectedAt }, containerID: undefined });
    const pods = { 'shop/web-0': running() };
    assert.deepEqual(plan({ claims: [conflicting(now - 600_000)], pods }).release, [
      ['10.6.0.30', 'the conflict seen 600 s ago is over its hold'],
    ]);
    assert.deepEqual(plan({ claims: [conflicting(now - 599_999)], pods }), nothing);
  });

  it("collects its own node's claims and those of nodes gone or not Ready, never those of another Ready node", () => {
    const claims = [
      claim('10.6.0.1', { podName: 'on-a', node: 'node-a' }),
      claim('10.6.0.2', { podName: 'on-b', node: 'node-b' }),
      claim('10.6.0.3', { podName: 'on-c', node: 'node-c' }),
      claim('10.6.0.4', { podName: 'on-d', node: 'node-d' }),
    ];
    assert.deepEqual(plan({ claims, nodes: { 'node-a': true, 'node-b': true, 'node-c': false } }).release, [
      ['10.6.0.1', 'pod shop/on-a is gone'],
      ['10.6.0.3', 'pod shop/on-c is gone'],
      ['10.6.0.4', 'pod shop/on-d is gone'],
    ]);
  });

  it('deletes an Endpoint no kept claim names, older than freshMs, of a node it collects for; nothing with cleanOutdatedEndpoints false', () => {
    const cluster: Cluster = {
      claims: [claim('10.6.0.1', { podName: 'live' }), claim('10.6.0.2', { podName: 'moved', node: 'node-b' })],
      pods: { 'shop/live': running() },
      endpoints: [
        endpoint('live'),
        endpoint('moved'),
        endpoint('orphan'),
        endpoint('orphan-fresh', { created: now - 59_999 }),
        endpoint('orphan-of-b', { node: 'node-b' }),
        endpoint('orphan-of-c', { node: 'node-c' }),
      ],
      nodes: { 'node-a': true, 'node-b': true, 'node-c': false },
    };
    assert.deepEqual(plan(cluster), {
      release: [],
      deleteEndpoints: [
        ['shop/orphan', 'no address is given to pod shop/orphan any more'],
        ['shop/orphan-of-c', 'no address is given to pod shop/orphan-of-c any more'],
      ],
    });
    assert.deepEqual(plan({ ...cluster, settings: { cleanOutdatedEndpoints: false } }), nothing);
  });

  it('deletes a fresh Endpoint at once when its pod was seen deleted (a watch event), not only once it is old', () => {
    const fresh = { endpoints: [endpoint('gone', { created: now - 1_000, podUID: 'uid-7' })] };
    assert.deepEqual(plan({ ...fresh, deletedPods: ['uid-7'] }).deleteEndpoints, [
      ['shop/gone', 'no address is given to pod shop/gone any more'],
    ]);
    assert.deepEqual(plan({ ...fresh, deletedPods: ['uid-9'] }), nothing, 'another pod deleted: the fresh Endpoint stays');
  });

  it('deletes in the same plan the Endpoint of a pod whose claims it all releases; keeps it while one is kept', () => {
    const dualStack = [claim('10.6.0.10'), claim('fd00::10')];
    assert.deepEqual(plan({ claims: dualStack, endpoints: [endpoint('web-0')] }), {
      release: [
        ['10.6.0.10', 'pod shop/web-0 is gone'],
        ['fd00--10', 'pod shop/web-0 is gone'],
      ],
      deleteEndpoints: [['shop/web-0', 'no address is given to pod shop/web-0 any more']],
    });
    // One interface's claim is fresh (an ADD of a second network in flight): the Endpoint stays.
    assert.deepEqual(
      plan({ claims: [claim('10.6.0.10'), claim('10.6.1.10', { ifname: 'net1', created: now - 1_000 })], endpoints: [endpoint('web-0')] }),
      {
        release: [['10.6.0.10', 'pod shop/web-0 is gone']],
        deleteEndpoints: [],
      },
    );
    // A conflicting address the pod's ADD marked keeps nothing.
    assert.deepEqual(plan({ claims: [claim('10.6.0.11', { conflict: { detectedAt: now - 1_000 } })], endpoints: [endpoint('web-0')] }), {
      release: [],
      deleteEndpoints: [['shop/web-0', 'no address is given to pod shop/web-0 any more']],
    });
  });
});

// Random clusters: four nodes (a is the planner's), pods of a stateless app and of StatefulSet db.
const nodeNames = ['node-a', 'node-b', 'node-c', 'node-d'];
const podNames = ['web-0', 'web-1', 'db-0', 'db-1', 'db-2'];
const ordinalOf = (name: string) => Number(name.split('-')[1]);

const clusterArb = fc
  .record({
    ready: fc.record({
      'node-a': fc.constant(true),
      'node-b': fc.option(fc.boolean()),
      'node-c': fc.option(fc.boolean()),
      'node-d': fc.option(fc.boolean()),
    }),
    replicas: fc.option(fc.integer({ min: 0, max: 3 })),
    pods: fc.dictionary(
      fc.constantFrom(...podNames),
      fc.record({
        uid: fc.constantFrom('uid-1', 'uid-2'),
        nodeName: fc.constantFrom(...nodeNames),
        phase: fc.constantFrom('Pending', 'Running', 'Succeeded', 'Failed'),
        deletionTimestamp: fc.option(fc.integer({ min: -600_000, max: 600_000 })),
      }),
    ),
    claims: fc.uniqueArray(
      fc.record({
        host: fc.integer({ min: 1, max: 250 }),
        podName: fc.constantFrom(...podNames),
        podUID: fc.constantFrom('uid-1', 'uid-2'),
        node: fc.constantFrom(...nodeNames),
        age: fc.integer({ min: 0, max: 1_200_000 }),
        conflictAge: fc.option(fc.integer({ min: 0, max: 1_200_000 })),
      }),
      { selector: (c) => c.host, maxLength: 12 },
    ),
    endpoints: fc.uniqueArray(
      fc.record({
        podName: fc.constantFrom(...podNames),
        node: fc.constantFrom(...nodeNames),
        age: fc.integer({ min: 0, max: 1_200_000 }),
      }),
      { selector: (e) => e.podName },
    ),
    settings: fc.record({
      additionalGraceDelayMs: fc.integer({ min: 0, max: 60_000 }),
      terminatingOnReadyNode: fc.boolean(),
      terminatingOnNotReadyNode: fc.boolean(),
      conflictHoldMs: fc.integer({ min: 0, max: 1_200_000 }),
      freshMs: fc.integer({ min: 0, max: 120_000 }),
      cleanOutdatedEndpoints: fc.boolean(),
    }),
  })
  .map((c): GcInput => ({
    node: 'node-a',
    now,
    claims: c.claims.map((k) =>
      claim(`10.6.0.${k.host}`, {
        podName: k.podName,
        podUID: k.podUID,
        node: k.node,
        created: now - k.age,
        ...(k.podName.startsWith('db-') ? { owner: db } : {}),
        ...(k.conflictAge !== null ? { conflict: { detectedAt: now - k.conflictAge } } : {}),
      }),
    ),
    endpoints: c.endpoints.map((e) => endpoint(e.podName, { node: e.node, created: now - e.age })),
    pods: new Map(
      Object.entries(c.pods).map(([name, p]) => [
        `shop/${name}`,
        {
          uid: p.uid,
          nodeName: p.nodeName,
          phase: p.phase,
          ...(p.deletionTimestamp !== null ? { deletionTimestamp: now + p.deletionTimestamp } : {}),
        },
      ]),
    ),
    nodes: new Map(Object.entries(c.ready).flatMap(([n, r]) => (r === null ? [] : [[n, r] as [string, boolean]]))),
    statefulSets: new Map(c.replicas === null ? [] : [['shop/db', c.replicas]]),
    settings: c.settings,
  }));

describe('pool IPAM garbage collection plan: properties', () => {
  it('never releases the address of a StatefulSet pod whose set exists with more replicas than its ordinal', () => {
    fc.assert(
      fc.property(clusterArb, (input) => {
        const replicas = input.statefulSets.get('shop/db');
        for (const { claim: c } of planGarbageCollection(input).release) {
          if (c.owner?.kind === 'StatefulSet' && !c.conflict)
            assert.ok(replicas === undefined || ordinalOf(c.podName) >= replicas, `released ${c.podName} of a set of ${replicas}`);
        }
      }),
      { numRuns: 500 },
    );
  });

  it('never releases a claim, or deletes an Endpoint, of another node that is Ready', () => {
    fc.assert(
      fc.property(clusterArb, (input) => {
        const result = planGarbageCollection(input);
        for (const { claim: c } of result.release)
          assert.ok(c.node === 'node-a' || input.nodes.get(c.node) !== true, `released ${c.name} of Ready ${c.node}`);
        for (const { endpoint: e } of result.deleteEndpoints)
          assert.ok(e.node === 'node-a' || input.nodes.get(e.node) !== true, `deleted Endpoint ${e.name} of Ready ${e.node}`);
      }),
      { numRuns: 500 },
    );
  });

  it('planning again over what the plan left releases and deletes nothing more', () => {
    fc.assert(
      fc.property(clusterArb, (input) => {
        const first = planGarbageCollection(input);
        const released = new Set(first.release.map((r) => r.claim.name));
        const deleted = new Set(first.deleteEndpoints.map((d) => d.endpoint.name));
        const second = planGarbageCollection({
          ...input,
          claims: input.claims.filter((c) => !released.has(c.name)),
          endpoints: input.endpoints.filter((e) => !deleted.has(e.name)),
        });
        assert.deepEqual(second, { release: [], deleteEndpoints: [] });
      }),
      { numRuns: 500 },
    );
  });

  it('gives a reason for every release and every Endpoint deleted', () => {
    fc.assert(
      fc.property(clusterArb, (input) => {
        const result = planGarbageCollection(input);
        for (const { claim: c, reason } of result.release) assert.ok(reason.length > 0, `no reason for ${c.name}`);
        for (const { endpoint: e, reason } of result.deleteEndpoints) assert.ok(reason.length > 0, `no reason for Endpoint ${e.name}`);
      }),
      { numRuns: 500 },
    );
  });
});
