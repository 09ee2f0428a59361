/**
 * The native rtnetlink calls against a real kernel, in a throwaway namespace: a batch of changes gives one
 * result per change in order, a refused change carries its errno and names its operation without
 * stopping the ones after it, and the dumps decode what `ip` set up.
 */
import assert from 'node:assert/strict';
import { NetlinkError, NetnsError } from '../../src/native/error';
import { ip, run } from '../../src/kernel/command';
import { createNetns, deleteNetns } from '../../src/kernel/netns';
import {
  type NetlinkChange,
  type NetlinkResult,
  applyNetlink,
  dumpFdb,
  dumpLinks,
  dumpNeighbours,
  dumpRoutes,
  dumpRules,
} from '../../src/kernel/rtnetlink';
import { requireRoot, uniqueName } from '../support/kernel';

/** A result as comparable data: ok, or the error's errno, code, operation and message. */
const outcome = (r: NetlinkResult) =>
  r.ok ? 'ok' : { errno: r.error.errno, code: r.error.code, operation: r.error.operation, message: r.error.message };

describe('rtnetlink through the native addon (real kernel)', function () {
  requireRoot(this);
  let ns: string;
  beforeEach(() => {
    ns = uniqueName('strait-test-rtnl');
    createNetns(ns);
    ip(['link', 'add', 'veth0', 'type', 'veth', 'peer', 'name', 'veth1'], ns);
    ip(['addr', 'add', '10.213.0.1/24', 'dev', 'veth0'], ns);
    for (const dev of ['veth0', 'veth1', 'lo']) ip(['link', 'set', dev, 'up'], ns);
  });
  afterEach(() => deleteNetns(ns));

  const table = (id: number) =>
    ip(['-4', 'route', 'show', 'table', String(id)], ns)
      .trim()
      .split('\n')
      .filter(Boolean)
      .map((l) => l.trim())
      .sort();
  const route = (dst: string, more: Partial<Extract<NetlinkChange, { kind: 'route' }>> = {}): NetlinkChange => ({
    kind: 'route',
    op: 'add',
    dst,
    dev: 'veth0',
    table: 18952,
    ...more,
  });

  it('gives one result per change in order; a refused change names its operation and errno and the ones after it are applied', () => {
    const results = applyNetlink(
      [
        route('10.1.0.0/24'),
        route('10.2.0.0/24', { dev: 'nope' }), // refused before it is sent: no such device here
        route('10.1.0.0/24'), // refused by the kernel: exists
        route('10.4.0.0/24', { via: '10.9.9.9' }), // refused by the kernel, with its own reason
        route('10.3.0.0/24', { via: '10.213.0.2', metric: 5 }),
      ],
      ns,
    );
    assert.deepEqual(results.map(outcome), [
      'ok',
      {
        errno: 19,
        code: 'ENODEV',
        operation: 'route add 10.2.0.0/24',
        message: 'route add 10.2.0.0/24 failed: ENODEV (No such device): dev nope',
      },
      { errno: 17, code: 'EEXIST', operation: 'route add 10.1.0.0/24', message: 'route add 10.1.0.0/24 failed: EEXIST (File exists)' },
      {
        errno: 101,
        code: 'ENETUNREACH',
        operation: 'route add 10.4.0.0/24',
        message: 'route add 10.4.0.0/24 failed: ENETUNREACH (Network is unreachable): Nexthop has invalid gateway',
      },
      'ok',
    ]);
    assert.ok(
      results.every((r) => r.ok || r.error instanceof NetlinkError),
      'every refusal is a NetlinkError',
    );
    assert.deepEqual(table(18952), ['10.1.0.0/24 dev veth0 scope link', '10.3.0.0/24 via 10.213.0.2 dev veth0 metric 5']);
  });

  it('matches every acknowledgement to its change across several sends (2,000 changes, every 400th refused)', () => {
    const prefix = (i: number) => `10.${100 + (i >> 8)}.${i & 255}.0/24`;
    const changes = Array.from({ length: 2000 }, (_, i) => route(prefix(i), i % 400 === 399 ? { via: '10.9.9.9' } : {}));
    const results = applyNetlink(changes, ns);
    assert.equal(results.length, 2000);
    const refused = results.flatMap((r, i) => (r.ok ? [] : [`${i} ${r.error.operation} ${r.error.code}`]));
    assert.deepEqual(
      refused,
      [399, 799, 1199, 1599, 1999].map((i) => `${i} route add ${prefix(i)} ENETUNREACH`),
    );
    assert.equal(table(18952).length, 1995);
  });

  it('replaces and deletes routes; deleting a missing one is ESRCH', () => {
    assert.deepEqual(applyNetlink([route('10.1.0.0/24'), route('10.1.0.0/24', { op: 'replace', dev: 'veth1' })], ns).map(outcome), [
      'ok',
      'ok',
    ]);
    assert.deepEqual(table(18952), ['10.1.0.0/24 dev veth1 scope link']);
    assert.deepEqual(
      applyNetlink([route('10.1.0.0/24', { op: 'del', dev: undefined }), route('10.1.0.0/24', { op: 'del', dev: undefined })], ns).map(
        outcome,
      ),
      [
        'ok',
        { errno: 3, code: 'ESRCH', operation: 'route del 10.1.0.0/24', message: 'route del 10.1.0.0/24 failed: ESRCH (No such process)' },
      ],
    );
    assert.deepEqual(table(18952), []);
  });

  it('dumps the routes of one table as set up by ip (type, protocol, metric, gateway, onlink)', () => {
    ip(['route', 'add', '10.1.0.0/24', 'dev', 'veth0', 'table', '18952', 'proto', '252'], ns);
    ip(['route', 'add', '10.2.0.0/24', 'via', '10.9.0.1', 'dev', 'veth1', 'onlink', 'metric', '7', 'table', '18952'], ns);
    ip(['route', 'add', 'unreachable', '10.3.0.0/16', 'table', '18952'], ns);
    ip(['route', 'add', 'default', 'via', '10.213.0.2', 'table', '18952'], ns);
    ip(['route', 'add', '10.4.0.0/24', 'dev', 'veth0', 'table', '18953'], ns); // another table
    const byDst = (a: { dst: string }, b: { dst: string }) => a.dst.localeCompare(b.dst);
    assert.deepEqual(dumpRoutes(18952, ns).sort(byDst), [
      { dst: '0.0.0.0/0', type: 1, protocol: 3, table: 18952, metric: 0, onlink: false, dev: 'veth0', gateway: '10.213.0.2' },
      { dst: '10.1.0.0/24', type: 1, protocol: 252, table: 18952, metric: 0, onlink: false, dev: 'veth0' },
      { dst: '10.2.0.0/24', type: 1, protocol: 3, table: 18952, metric: 7, onlink: true, dev: 'veth1', gateway: '10.9.0.1' },
      { dst: '10.3.0.0/16', type: 7, protocol: 3, table: 18952, metric: 0, onlink: false },
    ]);
    assert.deepEqual(dumpRoutes(18960, ns), [], 'a table with no route is empty, not an error');
  });

  it('adds, dumps and deletes rules', () => {
    ip(['rule', 'add', 'priority', '100', 'not', 'from', '10.9.0.0/16', 'table', '7'], ns);
    const changes: NetlinkChange[] = [
      { kind: 'rule', op: 'add', priority: 18952, src: '10.1.0.0/16', table: 18952 },
      { kind: 'rule', op: 'add', priority: 18953, dst: '10.2.0.0/16', iif: 'veth0', fwmark: 0x10, fwmask: 0xff, table: 254 },
      { kind: 'rule', op: 'add', priority: 18952, src: '10.1.0.0/16', table: 18952 },
    ];
    assert.deepEqual(applyNetlink(changes, ns).map(outcome), [
      'ok',
      'ok',
      { errno: 17, code: 'EEXIST', operation: 'rule add priority 18952', message: 'rule add priority 18952 failed: EEXIST (File exists)' },
    ]);
    const base = { action: 1, flags: 0, tos: 0, other: [] };
    assert.deepEqual(dumpRules(ns), [
      { ...base, priority: 0, table: 255 },
      { ...base, priority: 100, table: 7, flags: 2, src: '10.9.0.0/16' },
      { ...base, priority: 18952, table: 18952, src: '10.1.0.0/16' },
      { ...base, priority: 18953, table: 254, dst: '10.2.0.0/16', iif: 'veth0', fwmark: 0x10, fwmask: 0xff },
      { ...base, priority: 32766, table: 254 },
      { ...base, priority: 32767, table: 253 },
    ]);
    assert.deepEqual(
      applyNetlink([{ kind: 'rule', op: 'del', priority: 18953, dst: '10.2.0.0/16', iif: 'veth0', fwmark: 0x10, fwmask: 0xff }], ns).map(
        outcome,
      ),
      ['ok'],
    );
    assert.deepEqual(
      dumpRules(ns).map((r) => r.priority),
      [0, 100, 18952, 32766, 32767],
    );
  });

  it('replaces and deletes permanent neighbours, and dumps one device only', () => {
    ip(['neigh', 'add', '10.213.0.8', 'lladdr', '02:00:00:00:00:08', 'dev', 'veth0', 'nud', 'stale'], ns);
    ip(['neigh', 'add', '10.213.0.2', 'lladdr', '02:00:00:00:00:77', 'dev', 'veth1', 'nud', 'permanent'], ns);
    assert.deepEqual(
      applyNetlink(
        [
          { kind: 'neighbour', op: 'replace', dev: 'veth0', address: '10.213.0.2', lladdr: '02:00:00:00:00:02' },
          { kind: 'neighbour', op: 'replace', dev: 'veth0', address: 'fd00::2', lladdr: '02:00:00:00:00:06' },
          { kind: 'neighbour', op: 'del', dev: 'veth0', address: '10.213.0.99' },
        ],
        ns,
      ).map(outcome),
      [
        'ok',
        'ok',
        {
          errno: 2,
          code: 'ENOENT',
          operation: 'neighbour del 10.213.0.99 dev veth0',
          message: 'neighbour del 10.213.0.99 dev veth0 failed: ENOENT (No such file or directory)',
        },
      ],
    );
    const byAddress = (a: { address?: string }, b: { address?: string }) => (a.address ?? '').localeCompare(b.address ?? '');
    // Not the kernel's own IPv6 entries: multicast (ff02::, noarp) and, after the link's first
    // neighbour discovery, its peer's link-local address (fe80::, any state).
    const own = (e: { address?: string }) => /^(ff02|fe80):/.test(e.address ?? '');
    assert.deepEqual(
      dumpNeighbours('veth0', ns)
        .filter((e) => !own(e))
        .sort(byAddress),
      [
        { address: '10.213.0.2', lladdr: '02:00:00:00:00:02', state: 0x80, flags: 0 },
        { address: '10.213.0.8', lladdr: '02:00:00:00:00:08', state: 0x04, flags: 0 },
        { address: 'fd00::2', lladdr: '02:00:00:00:00:06', state: 0x80, flags: 0 },
      ],
    );
    assert.throws(
      () => dumpNeighbours('nope', ns),
      (err: unknown) => err instanceof NetlinkError && err.code === 'ENODEV' && err.operation === 'find interface',
    );
  });

  it("appends and deletes a VXLAN device's FDB entries (one per remote for the all-zeros MAC)", () => {
    ip(['link', 'add', 'strait.vxlan', 'type', 'vxlan', 'id', '7', 'dstport', '4789', 'local', '10.213.0.1', 'nolearning'], ns);
    const zero = '00:00:00:00:00:00';
    assert.deepEqual(
      applyNetlink(
        [
          { kind: 'fdb', op: 'append', dev: 'strait.vxlan', mac: zero, dst: '192.0.2.2' },
          { kind: 'fdb', op: 'append', dev: 'strait.vxlan', mac: zero, dst: '192.0.2.3' },
          { kind: 'fdb', op: 'append', dev: 'strait.vxlan', mac: '02:00:00:00:00:09', dst: '192.0.2.3' },
        ],
        ns,
      ).map(outcome),
      ['ok', 'ok', 'ok'],
    );
    const fdb = () =>
      run(['bridge', '-n', ns, 'fdb', 'show', 'dev', 'strait.vxlan'])
        .trim()
        .split('\n')
        .filter((l) => l.includes('dst'))
        .map((l) => l.trim())
        .sort();
    assert.deepEqual(fdb(), [
      '00:00:00:00:00:00 dst 192.0.2.2 self permanent',
      '00:00:00:00:00:00 dst 192.0.2.3 self permanent',
      '02:00:00:00:00:09 dst 192.0.2.3 self permanent',
    ]);
    const withDst = dumpFdb('strait.vxlan', ns)
      .filter((e) => e.address !== undefined)
      .sort((a, b) => `${a.lladdr} ${a.address}`.localeCompare(`${b.lladdr} ${b.address}`));
    assert.deepEqual(withDst, [
      { lladdr: zero, address: '192.0.2.2', state: 0x80, flags: 2 },
      { lladdr: zero, address: '192.0.2.3', state: 0x80, flags: 2 },
      { lladdr: '02:00:00:00:00:09', address: '192.0.2.3', state: 0x80, flags: 2 },
    ]);
    assert.deepEqual(applyNetlink([{ kind: 'fdb', op: 'del', dev: 'strait.vxlan', mac: zero, dst: '192.0.2.2' }], ns).map(outcome), ['ok']);
    assert.deepEqual(fdb(), ['00:00:00:00:00:00 dst 192.0.2.3 self permanent', '02:00:00:00:00:09 dst 192.0.2.3 self permanent']);
  });

  it('adds, changes and deletes links by name in one batch (a link added earlier in it is found), and dumps their VXLAN settings', () => {
    assert.deepEqual(
      applyNetlink(
        [
          {
            kind: 'link',
            op: 'add',
            name: 'vx0',
            type: 'vxlan',
            address: '02:00:00:00:00:a1',
            mtu: 1400,
            vni: 7,
            local: '10.213.0.1',
            remote: '192.0.2.2',
            port: 4790,
          },
          { kind: 'link', op: 'set', name: 'vx0', up: true, mtu: 1300 },
          {
            kind: 'link',
            op: 'add',
            name: 'ext0',
            type: 'vxlan',
            address: '02:00:00:00:00:e1',
            external: true,
            port: 4789,
            up: true,
            noarp: true,
          },
          { kind: 'link', op: 'add', name: 'vx1', type: 'vxlan', vni: 7, local: '10.213.0.1', port: 4790 }, // the VNI and port of vx0
          { kind: 'link', op: 'del', name: 'nope0' },
        ],
        ns,
      ).map(outcome),
      [
        'ok',
        'ok',
        'ok',
        {
          errno: 17,
          code: 'EEXIST',
          operation: 'link add vx1',
          message: 'link add vx1 failed: EEXIST (File exists): A VXLAN device with the specified VNI already exists',
        },
        { errno: 19, code: 'ENODEV', operation: 'link del nope0', message: 'link del nope0 failed: ENODEV (No such device)' },
      ],
    );
    assert.deepEqual(
      dumpLinks(ns).filter((l) => l.kind === 'vxlan'),
      [
        {
          ifname: 'vx0',
          up: true,
          noarp: false,
          mtu: 1300,
          address: '02:00:00:00:00:a1',
          kind: 'vxlan',
          vxlan: { id: 7, port: 4790, local: '10.213.0.1', remote: '192.0.2.2', learning: false, external: false },
        },
        {
          ifname: 'ext0',
          up: true,
          noarp: true,
          mtu: 1500,
          address: '02:00:00:00:00:e1',
          kind: 'vxlan',
          vxlan: { id: 0, port: 4789, learning: false, external: true },
        },
      ],
    );
    assert.match(ip(['-d', 'link', 'show', 'vx0'], ns), /vxlan id 7 remote 192\.0\.2\.2 local 10\.213\.0\.1 .*dstport 4790 nolearning/);
    assert.match(ip(['-d', 'link', 'show', 'ext0'], ns), /NOARP[\s\S]*vxlan external .*dstport 4789 nolearning/);
    // NOARP cleared in place where a change says so, and kept where it does not.
    assert.deepEqual(applyNetlink([{ kind: 'link', op: 'set', name: 'ext0', up: true }], ns).map(outcome), ['ok']);
    assert.equal(dumpLinks(ns).find((l) => l.ifname === 'ext0')?.noarp, true);
    assert.deepEqual(applyNetlink([{ kind: 'link', op: 'set', name: 'ext0', noarp: false }], ns).map(outcome), ['ok']);
    assert.equal(dumpLinks(ns).find((l) => l.ifname === 'ext0')?.noarp, false);
    assert.deepEqual(applyNetlink([{ kind: 'link', op: 'del', name: 'vx0' }], ns).map(outcome), ['ok']);
    assert.deepEqual(
      dumpLinks(ns)
        .map((l) => l.ifname)
        .sort(),
      ['ext0', 'lo', 'veth0', 'veth1'],
    );
  });

  it('refuses a namespace that does not exist with ENOENT, naming it', () => {
    assert.throws(
      () => applyNetlink([route('10.1.0.0/24')], `${ns}-missing`),
      (err: unknown) =>
        err instanceof NetnsError &&
        err.code === 'ENOENT' &&
        err.operation === 'open network namespace' &&
        err.message.includes(`/run/netns/${ns}-missing`),
    );
  });
});
