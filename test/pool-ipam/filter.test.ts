import assert from 'node:assert/strict';
import fc from 'fast-check';
import { type FilterResult, filterPools } from '../../src/pool-ipam/filter';
import type { Pool, PodContext } from '../../src/pool-ipam/model';
import { type AddressUse, pickAddress } from '../../src/pool-ipam/pick-address';
import { type PoolText, pod, pool, ranges } from './fixtures';

const nothingUsed: AddressUse = { taken: [], reserved: [], pending: [] };
const byName = (...pools: Pool[]) => new Map(pools.map((p) => [p.name, p]));

/** The reason one pool is rejected for (undefined: usable), filtering it as the only IPv4 candidate. */
function reasonFor(p: Pool, podContext: PodContext = pod(), use: AddressUse = nothingUsed): string | undefined {
  const result: FilterResult = filterPools(4, [p.name], byName(p), podContext, use);
  assert.equal(result.usable.length + result.rejected.length, 1);
  return result.rejected[0]?.reason;
}

describe("pool IPAM: candidate pool filtering, in the document's order", () => {
  it('a candidate naming no IPPool is filtered out: StraitIPPool "x" does not exist', () => {
    const result = filterPools(4, ['gone', 'here'], byName(pool('here')), pod(), nothingUsed);
    assert.deepEqual(result.rejected, [{ pool: 'gone', reason: 'StraitIPPool "gone" does not exist' }]);
    assert.deepEqual(
      result.usable.map((p) => p.name),
      ['here'],
    );
  });

  it('IP pools in the terminating state are filtered out', () => {
    assert.equal(reasonFor(pool('a', { terminating: true })), 'the pool is terminating (metadata.deletionTimestamp is set)');
  });

  it('spec.disable: true means the IP pool is not usable', () => {
    assert.equal(reasonFor(pool('a', { disable: true })), 'spec.disable is true');
  });

  it("a pool of the other family is filtered out of a family's candidates (an IPv4 list naming an IPv6 pool)", () => {
    const v6 = pool('v6', { subnet: 'fd00::/120', ips: ['fd00::10'] });
    assert.equal(reasonFor(v6), 'the pool is IPv6 (spec.subnet fd00::/120) but is named as an IPv4 candidate');
    assert.deepEqual(filterPools(6, ['v6'], byName(v6), pod(), nothingUsed).usable, [v6]);
  });

  it("spec.nodeName and spec.nodeAffinity must match the pod's node; nodeName takes precedence over nodeAffinity", () => {
    assert.equal(reasonFor(pool('a', { nodeName: ['node-b'] })), 'spec.nodeName ["node-b"] does not include node "node-a"');
    assert.equal(reasonFor(pool('a', { nodeName: ['node-b', 'node-a'] })), undefined);
    const westOnly = { matchLabels: { zone: 'west' } };
    assert.equal(
      reasonFor(pool('a', { nodeAffinity: westOnly })),
      'spec.nodeAffinity "zone=west" does not match node "node-a" (labels {"zone":"east"})',
    );
    assert.equal(
      reasonFor(pool('a', { nodeAffinity: { matchExpressions: [{ key: 'zone', operator: 'In', values: ['east'] }] } })),
      undefined,
    );
    assert.equal(
      reasonFor(pool('a', { nodeName: ['node-a'], nodeAffinity: westOnly })),
      undefined,
      'nodeName set: nodeAffinity is not consulted',
    );
  });

  it("spec.namespaceName and spec.namespaceAffinity must match the pod's namespace; namespaceName takes precedence", () => {
    assert.equal(reasonFor(pool('a', { namespaceName: ['billing'] })), 'spec.namespaceName ["billing"] does not include namespace "shop"');
    assert.equal(reasonFor(pool('a', { namespaceName: ['shop'] })), undefined);
    const red = { matchLabels: { team: 'red' } };
    assert.equal(
      reasonFor(pool('a', { namespaceAffinity: red })),
      'spec.namespaceAffinity "team=red" does not match namespace "shop" (labels {"team":"blue"})',
    );
    assert.equal(reasonFor(pool('a', { namespaceAffinity: { matchLabels: { team: 'blue' } } })), undefined);
    assert.equal(
      reasonFor(pool('a', { namespaceName: ['shop'], namespaceAffinity: red })),
      undefined,
      'namespaceName set: namespaceAffinity is not consulted',
    );
  });

  it("spec.podAffinity must match the pod's labels", () => {
    assert.equal(
      reasonFor(pool('a', { podAffinity: { matchLabels: { app: 'db' } } })),
      'spec.podAffinity "app=db" does not match pod "shop/web-0" (labels {"app":"web"})',
    );
    assert.equal(reasonFor(pool('a', { podAffinity: { matchLabels: { app: 'web' } } })), undefined);
  });

  it("spec.multusName must include the network of the pod's interface", () => {
    assert.equal(
      reasonFor(pool('a', { multusName: ['macvlan-west'] })),
      'spec.multusName ["macvlan-west"] does not include network "macvlan-east"',
    );
    assert.equal(reasonFor(pool('a', { multusName: ['macvlan-west', 'macvlan-east'] })), undefined);
  });

  it('a pool whose every IP is in spec.excludeIPs is filtered out', () => {
    const excluded = pool('a', {
      ips: ['10.6.0.10-10.6.0.12', '10.6.0.20'],
      excludeIps: ['10.6.0.9-10.6.0.11', '10.6.0.12', '10.6.0.20-10.6.0.21'],
    });
    assert.equal(
      reasonFor(excluded),
      'spec.excludeIPs ["10.6.0.9-10.6.0.12","10.6.0.20-10.6.0.21"] exclude every address of spec.ips ["10.6.0.10-10.6.0.12","10.6.0.20"]',
    );
    assert.equal(reasonFor(pool('a', { ips: [] })), 'spec.ips is empty');
    assert.equal(reasonFor(pool('a', { ips: ['10.6.0.10-10.6.0.12'], excludeIps: ['10.6.0.10', '10.6.0.12'] })), undefined);
  });

  it('a pool whose every IP is reserved by a ReservedIP is filtered out', () => {
    const p = pool('a', { ips: ['10.6.0.10-10.6.0.12'], excludeIps: ['10.6.0.11'] });
    const reserved = { ...nothingUsed, reserved: ranges('10.6.0.10', '10.6.0.12', 'fd00::10') };
    assert.equal(
      reasonFor(p, pod(), reserved),
      'every address of spec.ips outside spec.excludeIPs (10.6.0.10, 10.6.0.12) is reserved by a ReservedIP',
    );
    assert.equal(reasonFor(p, pod(), { ...nothingUsed, reserved: ranges('10.6.0.10') }), undefined);
  });

  it('a pool whose available IPs are exhausted is filtered out (taken, pending, or only network, broadcast and gateway left)', () => {
    const p = pool('a', { ips: ['10.6.0.10-10.6.0.13'], gateway: '10.6.0.13' });
    const use = { taken: ranges('10.6.0.10'), reserved: ranges('10.6.0.11'), pending: ranges('10.6.0.12') };
    assert.equal(
      reasonFor(p, pod(), use),
      'no free address: all 2 allocatable addresses (spec.ips minus spec.excludeIPs, ReservedIPs, the network, broadcast and gateway addresses) are allocated or being allocated',
    );
    assert.equal(reasonFor(p, pod(), { ...use, pending: [] }), undefined);
    const onlyNetwork = pool('b', { ips: ['10.6.0.0-10.6.0.1', '10.6.0.255'], gateway: '10.6.0.1' });
    assert.equal(
      reasonFor(onlyNetwork),
      'no allocatable address: what spec.excludeIPs and ReservedIPs leave of spec.ips is only the network, broadcast or gateway address',
    );
  });

  it("the filters apply in the document's order: a pool failing several is rejected for the first", () => {
    const use = { taken: ranges('10.6.0.12'), reserved: ranges('10.6.0.10-10.6.0.11'), pending: [] };
    let fields: PoolText = {
      terminating: true,
      disable: true,
      nodeName: ['node-b'],
      namespaceName: ['billing'],
      podAffinity: { matchLabels: { app: 'db' } },
      multusName: ['macvlan-west'],
      ips: ['10.6.0.10-10.6.0.12'],
      excludeIps: ['10.6.0.10-10.6.0.12'],
    };
    assert.match(reasonFor(pool('p', fields), pod(), use)!, /^the pool is terminating/);
    const fixes: [keyof PoolText, unknown, RegExp][] = [
      ['terminating', false, /^spec\.disable is true/],
      ['disable', false, /^spec\.nodeName /],
      ['nodeName', ['node-a'], /^spec\.namespaceName /],
      ['namespaceName', ['shop'], /^spec\.podAffinity /],
      ['podAffinity', undefined, /^spec\.multusName /],
      ['multusName', [], /^spec\.excludeIPs /],
      ['excludeIps', ['10.6.0.12'], /^every address of spec\.ips outside spec\.excludeIPs \(10\.6\.0\.10-10\.6\.0\.11\) is reserved/],
      ['excludeIps', [], /^no free address: all 1 allocatable/],
    ];
    for (const [field, fixed, next] of fixes) {
      if (field === 'nodeName') {
        const v6 = pool('p', { ...fields, subnet: 'fd00::/120', ips: ['fd00::10'], excludeIps: [] });
        assert.match(reasonFor(v6, pod(), use)!, /^the pool is IPv6/, 'the family filter comes before the node filter');
      }
      fields = { ...fields, [field]: fixed };
      assert.match(reasonFor(pool('p', fields), pod(), use)!, next, `after fixing ${field}`);
    }
    assert.equal(reasonFor(pool('p', { ...fields, ips: ['10.6.0.10-10.6.0.13'] }), pod(), use), undefined);
  });

  it('property: usable and rejected partition the candidates, usable in candidate order; a pool passes exactly when an address can be picked from it', () => {
    const offsets = fc.uniqueArray(fc.integer({ min: 0, max: 15 }), { maxLength: 12 });
    const text = (os: number[]) => os.map((o) => `10.6.0.${o}`);
    const poolArb = fc.record({
      ips: offsets,
      excluded: offsets,
      disable: fc.boolean(),
      nodeName: fc.subarray(['node-a', 'node-b']),
      gateway: fc.integer({ min: 1, max: 14 }),
    });
    fc.assert(
      fc.property(fc.array(poolArb, { minLength: 1, maxLength: 5 }), offsets, offsets, offsets, (specs, taken, reserved, pending) => {
        const pools = specs.map((s, i) =>
          pool(`p${i}`, {
            subnet: '10.6.0.0/28',
            ips: text(s.ips),
            excludeIps: text(s.excluded),
            disable: s.disable,
            nodeName: s.nodeName,
            gateway: `10.6.0.${s.gateway}`,
          }),
        );
        const names = [...pools.map((p) => p.name), 'missing'].reverse();
        const use = { taken: ranges(...text(taken)), reserved: ranges(...text(reserved)), pending: ranges(...text(pending)) };
        const result = filterPools(4, names, byName(...pools), pod(), use);
        assert.deepEqual([...result.usable.map((p) => p.name), ...result.rejected.map((r) => r.pool)].sort(), [...names].sort());
        assert.deepEqual(
          result.usable.map((p) => p.name),
          names.filter((n) => result.usable.some((p) => p.name === n)),
        );
        for (const p of pools) {
          const canPick = pickAddress(p, { ...use, start: 0n }) !== undefined;
          const eligible = !p.disable && (p.nodeName.length === 0 || p.nodeName.includes('node-a'));
          assert.equal(
            result.usable.includes(p),
            eligible && canPick,
            `${p.name}: ${result.rejected.find((r) => r.pool === p.name)?.reason}`,
          );
        }
      }),
    );
  });
});
