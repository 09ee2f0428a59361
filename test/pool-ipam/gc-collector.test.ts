/**
 * GarbageCollector.collect() as its callers use it (a test, a Pod event, the timer, one GC after a
 * restart): it resolves once a pass that began after the call is done, so what changed just before is
 * collected, also while another pass was running; it tells what was released from the pass running at
 * the call on; the calls made during one pass share the next.
 */
import assert from 'node:assert/strict';
import { createLogger } from '../../src/log';
import { parseIp } from '../../src/net/cidr';
import type { Claim } from '../../src/pool-ipam/claim';
import { defaultGcSettings } from '../../src/pool-ipam/gc-plan';
import type { Allocator } from '../../src/pool-ipam/service/allocator';
import type { PoolIpamView } from '../../src/pool-ipam/service/cluster-view';
import { GarbageCollector } from '../../src/pool-ipam/service/garbage-collector';

/**
 * A collector over one claim of StatefulSet pod shop/db-1 on node-a, and a set db of `replicas`. Each
 * pass reads the replicas as they are when it begins; the first then waits until `letFirstGoOn`.
 */
function collectorOfDb1() {
  const claim: Claim = {
    name: '10.6.0.20',
    uid: 'claim-uid',
    resourceVersion: '3',
    created: 0,
    address: parseIp('address', '10.6.0.20'),
    pool: 'pool-a',
    podNamespace: 'shop',
    podName: 'db-1',
    podUID: 'uid-1',
    node: 'node-a',
    network: 'underlay',
    ifname: 'eth0',
    owner: { apiVersion: 'apps/v1', kind: 'StatefulSet', name: 'db', uid: 'set-uid' },
  };
  const state = { claims: [claim], replicas: 2, passes: 0, letFirstGoOn: undefined as (() => void) | undefined };
  const allocator = {
    claims: { all: () => state.claims },
    statefulSets: async () => {
      const read = new Map([['shop/db', state.replicas]]);
      if (++state.passes === 1) await new Promise<void>((resolve) => (state.letFirstGoOn = resolve));
      return read;
    },
    release: async (c: Claim) => void (state.claims = state.claims.filter((k) => k !== c)),
    removeEndpoint: async () => undefined,
  } as unknown as Allocator;
  const empty = { list: () => [], get: () => undefined, onChange: () => undefined };
  const view = {
    pods: empty,
    endpoints: empty,
    nodes: { ...empty, list: () => [{ metadata: { name: 'node-a' }, status: { conditions: [{ type: 'Ready', status: 'True' }] } }] },
  } as unknown as PoolIpamView;
  const collector = new GarbageCollector({
    view,
    allocator,
    node: 'node-a',
    settings: defaultGcSettings,
    intervalMs: 3_600_000,
    log: createLogger('gc-test', 'silent'),
  });
  return { collector, state };
}

const reasons = (plan: { release: { claim: Claim; reason: string }[] }) => plan.release.map((r) => [r.claim.name, r.reason]);
const scaledBelow = [['10.6.0.20', 'StatefulSet shop/db has 1 replicas, below ordinal 1']];

describe('pool IPAM garbage collector passes', () => {
  it('a collect() called while a pass runs resolves after a pass that began after the call, and the calls made meanwhile share it', async () => {
    const { collector, state } = collectorOfDb1();
    const first = collector.collect();
    await new Promise((resolve) => setImmediate(resolve));
    assert.ok(state.letFirstGoOn, 'the first pass did not begin');
    state.replicas = 1;
    const second = collector.collect();
    const third = collector.collect();
    state.letFirstGoOn();
    assert.deepEqual(reasons(await second), scaledBelow);
    assert.deepEqual(state.claims, []);
    assert.deepEqual(reasons(await first), []);
    assert.equal(await third, await second, 'the calls made during a pass did not share the next');
    assert.equal(state.passes, 2);
  });

  it('a collect() called while a pass runs tells what that pass released', async () => {
    const { collector, state } = collectorOfDb1();
    state.replicas = 1;
    const first = collector.collect();
    await new Promise((resolve) => setImmediate(resolve));
    const second = collector.collect();
    state.letFirstGoOn!();
    assert.deepEqual(reasons(await first), scaledBelow);
    assert.deepEqual(reasons(await second), scaledBelow);
    assert.equal(state.passes, 2);
  });
});
