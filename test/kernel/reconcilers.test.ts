/**
 * The kernel-state reconcilers against a real kernel, each in a throwaway namespace: they add what is
 * missing once, change nothing the second time, put back what was deleted by hand, remove their own stale
 * entries, and never touch a foreign entry (another table, protocol, priority or device).
 */
import assert from 'node:assert/strict';
import { InputError } from '../../src/errors';
import { ip, run } from '../../src/kernel/command';
import { reconcileFdb } from '../../src/kernel/fdb';
import { createNetns, deleteNetns } from '../../src/kernel/netns';
import { reconcileNeighbours } from '../../src/kernel/neighbours';
import { type Route, reconcileRoutes } from '../../src/kernel/routes';
import { type Rule, reconcileRules } from '../../src/kernel/rules';
import { requireRoot, uniqueName } from '../support/kernel';

const nothing = { added: [], changed: [], deleted: [], failed: [] };

describe('kernel-state reconcilers (real kernel)', function () {
  requireRoot(this);
  let ns: string;
  beforeEach(() => {
    ns = uniqueName('strait-test-state');
    createNetns(ns);
    ip(['link', 'add', 'veth0', 'type', 'veth', 'peer', 'name', 'veth1'], ns);
    ip(['addr', 'add', '10.213.0.1/24', 'dev', 'veth0'], ns);
    for (const dev of ['veth0', 'veth1', 'lo']) ip(['link', 'set', dev, 'up'], ns);
  });
  afterEach(() => deleteNetns(ns));

  const routes = (...table: string[]) =>
    ip(['-4', 'route', 'show', ...table], ns)
      .trim()
      .split('\n')
      .filter(Boolean)
      .map((l) => l.trim())
      .sort();

  describe('routes', () => {
    const wanted: Route[] = [
      { dst: '10.1.0.0/24', dev: 'veth0' },
      { dst: '10.2.0.0/24', via: '10.213.0.2', dev: 'veth0' },
      { dst: 'default', via: '10.213.0.3' },
      { dst: '10.4.0.0/24', dev: 'veth1', metric: 20 },
    ];

    it('table scope: owns table 18952 and nothing else', () => {
      ip(['route', 'add', '10.1.0.0/24', 'dev', 'veth1', 'table', '18953'], ns); // another table
      ip(['route', 'add', '10.1.0.0/24', 'dev', 'veth1'], ns); // main
      ip(['route', 'add', '10.9.0.0/24', 'dev', 'veth1', 'table', '18952', 'proto', 'static'], ns); // ours to remove: the whole table is ours
      ip(['route', 'add', 'blackhole', '10.1.0.0/24', 'table', '18952'], ns); // ours, wrong: replaced
      const foreign = [routes('table', '18953'), routes('table', 'main')];

      const first = reconcileRoutes(wanted, { table: 18952 }, ns);
      assert.deepEqual(first.failed, []);
      assert.deepEqual(first.added.map((r) => r.dst).sort(), ['0.0.0.0/0', '10.2.0.0/24', '10.4.0.0/24']);
      assert.deepEqual(first.changed, [{ dst: '10.1.0.0/24', dev: 'veth0' }]);
      assert.deepEqual(first.deleted, [{ dst: '10.9.0.0/24', dev: 'veth1' }]);
      const expected = routes('table', '18952');
      assert.deepEqual(expected, [
        '10.1.0.0/24 dev veth0 proto 252 scope link',
        '10.2.0.0/24 via 10.213.0.2 dev veth0 proto 252',
        '10.4.0.0/24 dev veth1 proto 252 scope link metric 20',
        'default via 10.213.0.3 dev veth0 proto 252',
      ]);

      assert.deepEqual(reconcileRoutes(wanted, { table: 18952 }, ns), nothing, 'running twice changes nothing');
      ip(['route', 'del', '10.2.0.0/24', 'table', '18952'], ns);
      assert.deepEqual(
        reconcileRoutes(wanted, { table: 18952 }, ns).added,
        [{ dst: '10.2.0.0/24', via: '10.213.0.2', dev: 'veth0' }],
        'deleted by hand comes back',
      );
      assert.deepEqual(routes('table', '18952'), expected);
      assert.deepEqual([routes('table', '18953'), routes('table', 'main')], foreign, 'other tables untouched');

      assert.equal(reconcileRoutes([], { table: 18952 }, ns).deleted.length, 4);
      assert.deepEqual(routes('table', '18952'), []);
      assert.deepEqual([routes('table', '18953'), routes('table', 'main')], foreign);
    });

    it('protocol scope: owns the proto 252 routes of the main table; a foreign route for a wanted destination is a failure, not a takeover', () => {
      ip(['route', 'add', '10.1.0.0/24', 'dev', 'veth1', 'proto', 'static'], ns); // foreign, same identity as a wanted one
      ip(['route', 'add', '10.8.0.0/24', 'dev', 'veth1'], ns); // foreign
      ip(['route', 'add', '10.9.0.0/24', 'dev', 'veth1', 'proto', '252'], ns); // ours, stale
      ip(['route', 'add', '10.9.0.0/24', 'dev', 'veth1', 'proto', '252', 'table', '18953'], ns); // proto 252 elsewhere: not in scope
      const mainWanted = wanted.filter((r) => r.dst !== 'default');

      const first = reconcileRoutes(mainWanted, { protocol: 252 }, ns);
      assert.deepEqual(
        first.failed.map((f) => ({ item: f.item, errno: f.error.errno, code: f.error.code, operation: f.error.operation })),
        [{ item: { dst: '10.1.0.0/24', dev: 'veth0' }, errno: 17, code: 'EEXIST', operation: 'route add 10.1.0.0/24' }],
      );
      assert.deepEqual(first.deleted, [{ dst: '10.9.0.0/24', dev: 'veth1' }]);
      assert.deepEqual(routes('table', 'main'), [
        '10.1.0.0/24 dev veth1 proto static scope link',
        '10.2.0.0/24 via 10.213.0.2 dev veth0 proto 252',
        '10.213.0.0/24 dev veth0 proto kernel scope link src 10.213.0.1',
        '10.4.0.0/24 dev veth1 proto 252 scope link metric 20',
        '10.8.0.0/24 dev veth1 scope link',
      ]);
      assert.deepEqual(routes('table', '18953'), ['10.9.0.0/24 dev veth1 proto 252 scope link']);
      const again = reconcileRoutes(mainWanted, { protocol: 252 }, ns);
      assert.deepEqual({ ...again, failed: [] }, nothing, 'only the conflict is left');
      assert.equal(again.failed.length, 1);
    });

    it('a route on a missing device fails alone, with ENODEV and the operation named; the others are applied', () => {
      const changes = reconcileRoutes([...wanted, { dst: '10.5.0.0/24', dev: 'gone0' }], { table: 18952 }, ns);
      assert.deepEqual(
        changes.failed.map((f) => ({ item: f.item, errno: f.error.errno, code: f.error.code, operation: f.error.operation })),
        [{ item: { dst: '10.5.0.0/24', dev: 'gone0' }, errno: 19, code: 'ENODEV', operation: 'route add 10.5.0.0/24' }],
      );
      assert.equal(changes.added.length, 4);
      assert.equal(routes('table', '18952').length, 4);
    });

    it('fills a table that does not exist yet (the kernel creates it with its first route)', () => {
      assert.deepEqual(reconcileRoutes([], { table: 18955 }, ns), nothing);
      assert.equal(reconcileRoutes(wanted, { table: 18955 }, ns).added.length, 4);
      assert.equal(routes('table', '18955').length, 4);
    });

    it('routes IPv4 through an IPv6 next hop (RFC 5549: an IPv6 underlay), read back as it was written; refuses the reverse', () => {
      // fe80::1 on veth0, as the fallback's link-local next hops across a tunnel: onlink, its neighbour permanent.
      ip(['-6', 'neigh', 'replace', 'fe80::1', 'lladdr', '02:00:00:00:00:01', 'dev', 'veth0', 'nud', 'permanent'], ns);
      const overIpv6: Route[] = [{ dst: '10.6.0.0/24', via: 'fe80::1', dev: 'veth0', onlink: true }];
      assert.deepEqual(reconcileRoutes(overIpv6, { table: 18952 }, ns).added, overIpv6);
      assert.deepEqual(routes('table', '18952'), ['10.6.0.0/24 via inet6 fe80::1 dev veth0 proto 252 onlink']);
      assert.deepEqual(reconcileRoutes(overIpv6, { table: 18952 }, ns), nothing, 'running twice changes nothing');
      assert.throws(
        () => reconcileRoutes([{ dst: 'fd00:6::/64', via: '10.213.0.2', dev: 'veth0' }], { table: 18952 }, ns),
        (err: unknown) =>
          err instanceof InputError && err.field === 'desired[0].via' && /an IPv6 route takes no IPv4 gateway/.test(err.reason),
      );
    });

    it('refuses a shared table as a scope, naming it', () => {
      assert.throws(
        () => reconcileRoutes([], { table: 254 }, ns),
        (err: unknown) => err instanceof InputError && err.field === 'scope.table',
      );
    });
  });

  describe('rules', () => {
    const rules = () =>
      ip(['-4', 'rule', 'show'], ns)
        .trim()
        .split('\n')
        .map((l) => l.replace(/\s+/g, ' ').trim());
    const wanted: Rule[] = [
      { priority: 18952, from: '10.1.0.0/16', table: 18952 },
      { priority: 18953, to: '10.2.0.0/16', fwmark: 0x10, fwmask: 0xff, table: 18952 },
      { priority: 18954, table: 18953 },
    ];

    it('owns priorities 18952..18959 only: adds, replaces a changed rule, removes its own stale ones, leaves the rest', () => {
      ip(['rule', 'add', 'priority', '18951', 'table', '18952'], ns); // foreign: just below the range
      ip(['rule', 'add', 'priority', '18960', 'table', '18952'], ns); // foreign: just above
      ip(['rule', 'add', 'priority', '18952', 'from', '10.7.0.0/16', 'table', '18952'], ns); // ours, changed
      ip(['rule', 'add', 'priority', '18959', 'iif', 'veth0', 'table', '18952'], ns); // ours, stale
      ip(['rule', 'add', 'priority', '18958', 'unreachable'], ns); // ours, stale, no table
      ip(['rule', 'add', 'priority', '18957', 'table', 'main'], ns); // ours, stale, a named table

      const first = reconcileRules(wanted, ns);
      assert.deepEqual(first.failed, []);
      // A rule is its priority and selectors: the one with another source is replaced (deleted, added).
      assert.deepEqual(first.changed, []);
      assert.deepEqual(first.added, [wanted[0], wanted[1], wanted[2]]);
      assert.equal(first.deleted.length, 4);
      const expected = [
        '0: from all lookup local',
        '18951: from all lookup 18952',
        '18952: from 10.1.0.0/16 lookup 18952',
        '18953: from all to 10.2.0.0/16 fwmark 0x10/0xff lookup 18952',
        '18954: from all lookup 18953',
        '18960: from all lookup 18952',
        '32766: from all lookup main',
        '32767: from all lookup default',
      ];
      assert.deepEqual(rules(), expected);
      assert.deepEqual(reconcileRules(wanted, ns), nothing, 'running twice changes nothing');

      ip(['rule', 'del', 'priority', '18953'], ns);
      assert.deepEqual(reconcileRules(wanted, ns).added, [wanted[1]], 'deleted by hand comes back');
      assert.deepEqual(rules(), expected);

      assert.equal(reconcileRules([], ns).deleted.length, 3);
      assert.deepEqual(rules(), [
        '0: from all lookup local',
        '18951: from all lookup 18952',
        '18960: from all lookup 18952',
        '32766: from all lookup main',
        '32767: from all lookup default',
      ]);
    });
  });

  describe('fdb', () => {
    const fdb = (dev: string) =>
      run(['bridge', '-n', ns, 'fdb', 'show', 'dev', dev])
        .trim()
        .split('\n')
        .filter((l) => l.includes('dst'))
        .map((l) => l.trim())
        .sort();
    beforeEach(() => {
      for (const [name, vni] of [
        ['strait.vxlan', '7'],
        ['other.vxlan', '8'],
      ] as const) {
        ip(['link', 'add', name, 'type', 'vxlan', 'id', vni, 'dstport', '4789', 'local', '10.213.0.1', 'nolearning'], ns);
        ip(['link', 'set', name, 'up'], ns);
      }
    });
    const wanted = [
      { mac: '00:00:00:00:00:00', dst: '192.0.2.2' },
      { mac: '00:00:00:00:00:00', dst: '192.0.2.3' },
      { mac: '02:00:00:00:00:09', dst: '192.0.2.3' },
    ];

    it('owns the static entries with a destination on one device only', () => {
      run(['bridge', '-n', ns, 'fdb', 'append', '00:00:00:00:00:00', 'dev', 'other.vxlan', 'dst', '192.0.2.2', 'self', 'permanent']); // other device
      run(['bridge', '-n', ns, 'fdb', 'append', '00:00:00:00:00:00', 'dev', 'strait.vxlan', 'dst', '192.0.2.9', 'self', 'permanent']); // ours, stale
      const other = fdb('other.vxlan');

      const first = reconcileFdb(wanted, 'strait.vxlan', ns);
      assert.deepEqual(first, { added: wanted, changed: [], deleted: [{ mac: '00:00:00:00:00:00', dst: '192.0.2.9' }], failed: [] });
      const expected = fdb('strait.vxlan');
      assert.deepEqual(expected, [
        '00:00:00:00:00:00 dst 192.0.2.2 self permanent',
        '00:00:00:00:00:00 dst 192.0.2.3 self permanent',
        '02:00:00:00:00:09 dst 192.0.2.3 self permanent',
      ]);
      assert.deepEqual(reconcileFdb(wanted, 'strait.vxlan', ns), nothing, 'running twice changes nothing');
      run(['bridge', '-n', ns, 'fdb', 'del', '00:00:00:00:00:00', 'dev', 'strait.vxlan', 'dst', '192.0.2.3', 'self']);
      assert.deepEqual(reconcileFdb(wanted, 'strait.vxlan', ns).added, [wanted[1]], 'deleted by hand comes back');
      assert.deepEqual(fdb('strait.vxlan'), expected);
      assert.deepEqual(fdb('other.vxlan'), other, 'other device untouched');
      assert.throws(
        () => reconcileFdb([], 'bad dev', ns),
        (err: unknown) => err instanceof InputError && err.field === 'device',
      );
    });
  });

  describe('neighbours', () => {
    const neigh = (dev: string) =>
      ip(['neigh', 'show', 'dev', dev], ns)
        .trim()
        .split('\n')
        .filter(Boolean)
        .map((l) => l.trim())
        .sort();
    const wanted = [
      { address: '10.213.0.2', lladdr: '02:00:00:00:00:02' },
      { address: '10.213.0.3', lladdr: '02:00:00:00:00:03' },
    ];

    it('owns the permanent entries on one device only', () => {
      ip(['neigh', 'add', '10.213.0.2', 'lladdr', '02:00:00:00:00:99', 'dev', 'veth0', 'nud', 'permanent'], ns); // ours, changed
      ip(['neigh', 'add', '10.213.0.9', 'lladdr', '02:00:00:00:00:09', 'dev', 'veth0', 'nud', 'permanent'], ns); // ours, stale
      ip(['neigh', 'add', '10.213.0.8', 'lladdr', '02:00:00:00:00:08', 'dev', 'veth0', 'nud', 'stale'], ns); // not permanent: foreign
      ip(['neigh', 'add', '10.213.0.2', 'lladdr', '02:00:00:00:00:77', 'dev', 'veth1', 'nud', 'permanent'], ns); // other device

      const first = reconcileNeighbours(wanted, 'veth0', ns);
      assert.deepEqual(first, {
        added: [wanted[1]],
        changed: [wanted[0]],
        deleted: [{ address: '10.213.0.9', lladdr: '02:00:00:00:00:09' }],
        failed: [],
      });
      const expected = neigh('veth0');
      assert.deepEqual(expected, [
        '10.213.0.2 lladdr 02:00:00:00:00:02 PERMANENT',
        '10.213.0.3 lladdr 02:00:00:00:00:03 PERMANENT',
        '10.213.0.8 lladdr 02:00:00:00:00:08 STALE',
      ]);
      assert.deepEqual(reconcileNeighbours(wanted, 'veth0', ns), nothing, 'running twice changes nothing');
      ip(['neigh', 'del', '10.213.0.3', 'dev', 'veth0'], ns);
      assert.deepEqual(reconcileNeighbours(wanted, 'veth0', ns).added, [wanted[1]], 'deleted by hand comes back');
      assert.deepEqual(neigh('veth0'), expected);
      assert.deepEqual(neigh('veth1'), ['10.213.0.2 lladdr 02:00:00:00:00:77 PERMANENT'], 'other device untouched');
    });
  });
});
