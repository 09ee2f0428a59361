/** Which application pools the pool IPAM deletes itself (src/pool-ipam/application-pool-gc.ts). */
import assert from 'node:assert/strict';
import fc from 'fast-check';
import {
  type ApplicationPoolRecord,
  type ApplicationState,
  applicationKey,
  staleApplicationPools,
} from '../../src/pool-ipam/application-pool-gc';

const pool = (name: string, uid = 'app-1'): ApplicationPoolRecord => ({
  name,
  uid: `pool-${name}`,
  subnet: 'subnet-a',
  application: { kind: 'StatefulSet', namespace: 'default', name: 'web', uid },
});
const web = applicationKey({ kind: 'StatefulSet', namespace: 'default', name: 'web' });
const names = (stale: { pool: ApplicationPoolRecord }[]) => stale.map((s) => s.pool.name);

describe('pool IPAM: application pools to delete', () => {
  it('deletes the pool of an application gone or made again, once no claim holds an address of it', () => {
    assert.deepEqual(names(staleApplicationPools([pool('p')], new Map([[web, 'absent']]), new Set())), ['p']);
    assert.deepEqual(names(staleApplicationPools([pool('p')], new Map([[web, { uid: 'app-2' }]]), new Set())), ['p']);
    assert.match(
      staleApplicationPools([pool('p')], new Map([[web, { uid: 'app-2' }]]), new Set())[0]!.reason,
      /another one \(uid app-2, the pool's app-1\)/,
    );
  });

  it('keeps the pool of a live application, of one it could not read, and one a claim holds', () => {
    assert.deepEqual(staleApplicationPools([pool('p')], new Map([[web, { uid: 'app-1' }]]), new Set()), []);
    assert.deepEqual(staleApplicationPools([pool('p')], new Map([[web, 'unknown']]), new Set()), []);
    assert.deepEqual(staleApplicationPools([pool('p')], new Map(), new Set()), [], 'not asked: unknown');
    assert.deepEqual(staleApplicationPools([pool('p')], new Map([[web, 'absent']]), new Set(['p'])), []);
  });

  it('never deletes a claimed pool nor one whose live application has its uid (property)', () => {
    const state = fc.oneof(
      fc.constant<ApplicationState>('absent'),
      fc.constant<ApplicationState>('unknown'),
      fc.constantFrom('app-1', 'app-2').map((uid) => ({ uid })),
    );
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.constantFrom('p1', 'p2', 'p3'), fc.constantFrom('app-1', 'app-2')), { maxLength: 6 }),
        state,
        fc.subarray(['p1', 'p2', 'p3']),
        (specs, s, claimed) => {
          const pools = specs.map(([n, uid]) => pool(n, uid));
          const stale = staleApplicationPools(pools, new Map([[web, s]]), new Set(claimed));
          for (const { pool: p } of stale) {
            assert.ok(!claimed.includes(p.name));
            assert.ok(s === 'absent' || (typeof s === 'object' && s.uid !== p.application.uid));
          }
        },
      ),
    );
  });
});
