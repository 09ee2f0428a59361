/** The pure diffs of every kernel-state reconciler: applied to the current state they give the desired one. */
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { InputError } from '../../src/errors';
import { type Diff, type Identity, diffByIdentity } from '../../src/kernel/desired-state';
import { type FdbEntry, diffFdb, fdbEntry, fdbFromKernel, fdbIdentity } from '../../src/kernel/fdb';
import { type Neighbour, diffNeighbours, neighbour, neighbourIdentity } from '../../src/kernel/neighbours';
import { type Route, diffRoutes, route, routeIdentity } from '../../src/kernel/routes';
import { type KernelRule, type Rule, diffRules, rule, ruleIdentity, rulesFromKernel } from '../../src/kernel/rules';
import type { NativeNeighbour, NativeRule } from '../../src/kernel/rtnetlink';

/** The state after applying `diff` to `current`, as a reconcile's batch does; `written`: what the kernel stores for an entry. */
function applied<T>(current: readonly T[], diff: Diff<T>, written: (entry: T) => T): T[] {
  const gone = new Set<T>([...diff.remove, ...diff.change.flatMap((c) => c.from)]);
  return [...current.filter((e) => !gone.has(e)), ...diff.change.map((c) => c.to), ...diff.add].map(written);
}

// Spread: fast-check's records have no prototype, which deepEqual would count as a difference.
const sorted = <T>(entries: readonly T[], identity: Identity<T>) =>
  entries.map((e) => ({ ...e })).sort((a, b) => identity.key(a).localeCompare(identity.key(b)));

/** Entries unique by identity, as a desired list must be. */
const uniqueBy = <T>(identity: Identity<T>, entry: fc.Arbitrary<T>) => fc.uniqueArray(entry, { selector: identity.key, maxLength: 12 });

function checkDiff<T>(
  name: string,
  current: fc.Arbitrary<T[]>,
  desired: fc.Arbitrary<T[]>,
  diff: (c: T[], d: T[]) => Diff<T>,
  identity: Identity<T>,
  normalise: (e: T) => T,
  written = (e: T) => e,
) {
  it(`${name}: applying the diff gives the desired state, and an in-sync state gives an empty diff`, () => {
    fc.assert(
      fc.property(current, desired, (c, d) => {
        const result = diff(c, d);
        const after = applied(c, result, written);
        const wanted = d.map(normalise);
        assert.deepEqual(sorted(after, identity).map(identity.key), sorted(wanted, identity).map(identity.key));
        for (const w of wanted)
          assert.ok(
            identity.same(
              after.find((a) => identity.key(a) === identity.key(w))!,
              w,
            ),
            `${identity.key(w)} is as desired`,
          );
        for (const removed of [...result.remove, ...result.change.flatMap((x) => x.from)])
          assert.ok(c.includes(removed), 'only deletes what is there');
        assert.deepEqual(diff(after, d), { add: [], change: [], remove: [] });
      }),
    );
  });
}

const octet = fc.integer({ min: 0, max: 3 });
const routeArb: fc.Arbitrary<Route> = fc
  .record({
    a: octet,
    b: octet,
    metric: fc.constantFrom(0, 10),
    dev: fc.constantFrom('veth0', 'strait.vxlan', undefined),
    via: fc.constantFrom('10.213.0.2', '10.213.0.3', undefined),
  })
  .map(({ a, b, metric, dev, via }) => ({
    dst: `10.${a}.${b}.0/24`,
    ...(metric ? { metric } : {}),
    ...(dev || !via ? { dev: dev ?? 'veth0' } : {}),
    ...(via ? { via } : {}),
  }));

const ruleArb: fc.Arbitrary<KernelRule> = fc
  .record({
    priority: fc.integer({ min: 18952, max: 18959 }),
    from: fc.constantFrom('10.1.0.0/16', undefined),
    fwmark: fc.constantFrom(0x10, undefined),
    table: fc.constantFrom(18952, 18953),
  })
  .map(({ priority, from, fwmark, table }) => ({ priority, table, ...(from ? { from } : {}), ...(fwmark ? { fwmark } : {}) }));

const mac = fc.constantFrom('00:00:00:00:00:00', '02:00:00:00:00:01', '02:00:00:00:00:02');
const fdbArb: fc.Arbitrary<FdbEntry> = fc.record({ mac, dst: fc.constantFrom('192.0.2.1', '192.0.2.2', '192.0.2.3') });
const neighbourArb: fc.Arbitrary<Neighbour> = fc.record({
  address: fc.constantFrom('10.9.0.1', '10.9.0.2', '10.9.0.3', 'fd00::1'),
  lladdr: mac,
});

describe('desired-state diffs (pure)', () => {
  checkDiff(
    'routes',
    uniqueBy(routeIdentity, routeArb),
    uniqueBy(routeIdentity, routeArb),
    diffRoutes,
    routeIdentity,
    (r) => route(r),
    (r) => ({ dev: 'veth0', ...r }),
  ); // the kernel picks a device for a gateway-only route
  // The kernel allows several rules at one priority; a desired list has one each.
  checkDiff(
    'rules',
    fc.array(ruleArb, { maxLength: 12 }),
    uniqueBy(ruleIdentity, ruleArb),
    (c, d) => diffRules(c, d) as Diff<KernelRule>,
    ruleIdentity,
    (r) => rule(r),
  );
  checkDiff('fdb', uniqueBy(fdbIdentity, fdbArb), uniqueBy(fdbIdentity, fdbArb), diffFdb, fdbIdentity, (e) => fdbEntry(e));
  checkDiff(
    'neighbours',
    uniqueBy(neighbourIdentity, neighbourArb),
    uniqueBy(neighbourIdentity, neighbourArb),
    diffNeighbours,
    neighbourIdentity,
    (n) => neighbour(n),
  );

  it('a rule the model cannot describe (an iif selector) is rewritten even if the rest matches', () => {
    const wanted: Rule = { priority: 18952, table: 18952 };
    assert.deepEqual(diffRules([{ ...wanted, unmodelled: ['iif'] }], [wanted]).change.length, 1);
    assert.deepEqual(diffRules([wanted], [wanted]), { add: [], change: [], remove: [] });
  });

  it('rules: only priorities 18952..18959 come out of the kernel listing, so no other rule is ever in a diff', () => {
    const kernelRule = fc.record({
      priority: fc.integer({ min: 0, max: 40000 }),
      table: fc.constantFrom(254, 18952, 255),
      src: fc.constantFrom(undefined, '10.0.0.0/8'),
    });
    fc.assert(
      fc.property(fc.array(kernelRule, { maxLength: 20 }), (listing) => {
        const json: NativeRule[] = listing.map(({ src, ...r }) => ({
          ...r,
          action: 1,
          flags: 0,
          tos: 0,
          other: [],
          ...(src ? { src } : {}),
        }));
        const diff = diffRules(rulesFromKernel(json), []);
        for (const r of [...diff.remove, ...diff.change.flatMap((c) => c.from)]) assert.ok(r.priority >= 18952 && r.priority <= 18959);
        assert.equal(diff.remove.length, json.filter((r) => r.priority >= 18952 && r.priority <= 18959).length);
      }),
    );
  });

  it('rules: a kernel rule with an action, inversion, tos, oif or selector the model lacks reads as unmodelled, so it is rewritten', () => {
    const base: NativeRule = { priority: 18952, table: 18952, action: 1, flags: 0, tos: 0, other: [] };
    const read = rulesFromKernel([
      base,
      { ...base, flags: 2 },
      { ...base, action: 7, table: 0 },
      { ...base, tos: 4 },
      { ...base, oif: 'eth9' },
      { ...base, other: [22, 23] },
    ]);
    assert.deepEqual(
      read.map((r) => r.unmodelled),
      [undefined, ['not'], ['action 7'], ['tos'], ['oif'], ['attribute 22', 'attribute 23']],
    );
    assert.equal(read[2]!.table, 0, 'a rule that looks up no table deletes as any table');
    assert.deepEqual(
      diffRules(read, [{ priority: 18952, table: 18952 }]).change.map((c) => c.from.length),
      [6],
    );
  });

  it('fdb: learned entries and entries without a destination never come out of the kernel listing', () => {
    const listed: NativeNeighbour[] = [
      { lladdr: '02:00:00:00:00:01', address: '192.0.2.1', state: 0x80, flags: 2 }, // permanent
      { lladdr: '02:00:00:00:00:02', address: '192.0.2.2', state: 0x02, flags: 2 }, // learned: reachable
      { lladdr: '02:00:00:00:00:03', state: 0x80, flags: 2 }, // a bridge port's own address: no dst
      { lladdr: '02:00:00:00:00:04', address: '192.0.2.4', state: 0x40, flags: 2 }, // static (noarp)
    ];
    assert.deepEqual(fdbFromKernel(listed), [
      { mac: '02:00:00:00:00:01', dst: '192.0.2.1' },
      { mac: '02:00:00:00:00:04', dst: '192.0.2.4' },
    ]);
  });

  it('a desired entry twice, or bad input, is an InputError naming the field and value', () => {
    const isInput = (field: string) => (err: unknown) => err instanceof InputError && err.field === field;
    assert.throws(
      () =>
        diffRoutes(
          [],
          [
            { dst: '10.0.0.0/24', dev: 'a' },
            { dst: '10.0.0.0/24', dev: 'b' },
          ],
        ),
      isInput('desired[1]'),
    );
    assert.throws(() => diffRoutes([], [{ dst: '10.0.0.1/24', dev: 'a' }]), isInput('desired[0].dst'));
    assert.throws(() => diffRoutes([], [{ dst: '10.0.0.0/24', dev: 'a b' }]), isInput('desired[0].dev'));
    assert.throws(() => diffRoutes([], [{ dst: '10.0.0.0/24' }]), isInput('desired[0]'));
    assert.throws(() => diffRoutes([], [{ dst: '10.0.0.0/24', via: 'x', dev: 'a' }]), isInput('desired[0].via'));
    assert.throws(() => diffRoutes([], [{ dst: '10.0.0.0/24', dev: 'a', metric: Number.NaN }]), isInput('desired[0].metric'));
    assert.throws(() => diffRules([], [{ priority: 100, table: 18952 }]), isInput('desired[0].priority'));
    assert.throws(() => diffFdb([], [{ mac: '02:00:00:00:00', dst: '192.0.2.1' }]), isInput('desired[0].mac'));
    assert.throws(() => diffNeighbours([], [{ address: '10.0.0.1', lladdr: '02:00:00:00:00:01;reboot' }]), isInput('desired[0].lladdr'));
  });

  it('the generic diff changes an identity with several current entries into the one desired', () => {
    const identity: Identity<{ k: string; v: number }> = { key: (e) => e.k, same: (a, b) => a.v === b.v };
    const a1 = { k: 'a', v: 1 };
    const a2 = { k: 'a', v: 1 };
    assert.deepEqual(diffByIdentity([a1, a2], [{ k: 'a', v: 1 }], identity).change, [{ from: [a1, a2], to: { k: 'a', v: 1 } }]);
  });
});
