/**
 * The netlink change monitor against a real kernel, in throwaway namespaces: each kind of change made in
 * its namespace is an event, changes in another namespace are not, and close() stops the events and gives
 * back the sockets. The kernel queues an event to the monitor's socket before the command that caused it
 * returns, so a last change whose event has arrived proves every earlier one had its chance.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { NetnsError } from '../../src/native';
import { ip, run } from '../../src/kernel/command';
import { createNetns, deleteNetns, netnsPath } from '../../src/kernel/netns';
import type { NetlinkEvent } from '../../src/native/binding';
import { type NetlinkGroup, NetlinkMonitor } from '../../src/kernel/netlink-monitor';
import { requireRoot, uniqueName } from '../support/kernel';

const openFds = () => readdirSync('/proc/self/fd').length;

/** A monitor keeping every event it hears, and a way to wait (event-driven, bounded) for one. */
class Recorder {
  readonly events: NetlinkEvent[] = [];
  private waiting: { match: (e: NetlinkEvent) => boolean; resolve: () => void } | undefined;
  readonly monitor: NetlinkMonitor;

  constructor(groups: NetlinkGroup[], ns: string) {
    this.monitor = new NetlinkMonitor(
      groups,
      (batch) => {
        this.events.push(...batch);
        if (this.waiting && batch.some(this.waiting.match)) this.waiting.resolve();
      },
      netnsPath(ns),
    );
  }

  /** Resolves once an event matching `expected` (a subset of its fields) has arrived; fails after 5 s. */
  async next(expected: Partial<NetlinkEvent> & Record<string, unknown>): Promise<void> {
    const match = (e: NetlinkEvent) => Object.entries(expected).every(([k, v]) => (e as Record<string, unknown>)[k] === v);
    if (this.events.some(match)) return;
    let timer: NodeJS.Timeout | undefined;
    try {
      await new Promise<void>((resolve, reject) => {
        this.waiting = { match, resolve };
        timer = setTimeout(
          () => reject(new Error(`no event ${JSON.stringify(expected)} within 5 s; heard ${JSON.stringify(this.events)}`)),
          5000,
        );
      });
    } finally {
      clearTimeout(timer);
      this.waiting = undefined;
    }
  }
}

describe('netlink change monitor (real kernel)', function () {
  requireRoot(this);
  let ns: string;
  let other: string;
  const open: NetlinkMonitor[] = [];
  const record = (groups: NetlinkGroup[], where = ns) => {
    const r = new Recorder(groups, where);
    open.push(r.monitor);
    return r;
  };
  beforeEach(() => {
    ns = uniqueName('strait-test-nlmon');
    other = uniqueName('strait-test-nlother');
    createNetns(ns);
    createNetns(other);
    ip(['link', 'add', 'veth0', 'type', 'veth', 'peer', 'name', 'veth1'], ns);
    ip(['addr', 'add', '10.213.0.1/24', 'dev', 'veth0'], ns);
    for (const dev of ['veth0', 'veth1', 'lo']) ip(['link', 'set', dev, 'up'], ns);
  });
  afterEach(() => {
    for (const m of open.splice(0)) m.close();
    deleteNetns(ns);
    deleteNetns(other);
  });

  it('reports a link created and deleted in its namespace, by index and name, and nothing from another namespace', async () => {
    const r = record(['link']);
    ip(['link', 'add', 'elsewhere0', 'type', 'veth', 'peer', 'name', 'elsewhere1'], other);
    ip(['link', 'add', 'pod0', 'type', 'veth', 'peer', 'name', 'pod1'], ns);
    const ifindex = Number(/^(\d+):/.exec(ip(['-o', 'link', 'show', 'pod0'], ns))![1]);
    await r.next({ kind: 'link', action: 'new', ifname: 'pod0' });
    assert.deepEqual(
      r.events.find((e) => e.kind === 'link' && e.ifname === 'pod0'),
      { kind: 'link', action: 'new', ifindex, ifname: 'pod0', family: 0 },
    );
    ip(['link', 'del', 'pod0'], ns);
    await r.next({ kind: 'link', action: 'del', ifname: 'pod0' });
    ip(['link', 'del', 'elsewhere0'], other);
    // A last change here, heard after the one there: had the monitor heard the other namespace, it would have by now.
    ip(['link', 'set', 'veth1', 'mtu', '1400'], ns);
    await r.next({ kind: 'link', action: 'new', ifname: 'veth1' });
    // (veth0 and veth1 may also announce their carrier, which the kernel reports up to a second late)
    const ours = ['pod0', 'pod1', 'veth0', 'veth1'];
    assert.deepEqual(
      r.events.filter((e) => e.kind !== 'link' || !ours.includes(e.ifname!)),
      [],
    );
  });

  it('reports route, rule, neighbour, FDB, address, xfrm policy and nftables changes, each as its kind', async () => {
    const r = record(['addr', 'route', 'rule', 'neigh', 'xfrm', 'nft']);
    ip(['route', 'add', '10.1.0.0/24', 'via', '10.213.0.2', 'table', '18952'], ns);
    await r.next({ kind: 'route', action: 'new', family: 2, table: 18952 });
    ip(['route', 'del', '10.1.0.0/24', 'table', '18952'], ns);
    await r.next({ kind: 'route', action: 'del', family: 2, table: 18952 });
    ip(['rule', 'add', 'to', '10.2.0.0/16', 'table', '18952', 'priority', '1234'], ns);
    await r.next({ kind: 'rule', action: 'new', family: 2 });
    const veth0 = Number(/^(\d+):/.exec(ip(['-o', 'link', 'show', 'veth0'], ns))![1]);
    ip(['neigh', 'add', '10.213.0.9', 'lladdr', '02:00:00:00:00:09', 'dev', 'veth0'], ns);
    await r.next({ kind: 'neigh', action: 'new', family: 2, ifindex: veth0 });
    ip(['link', 'add', 'vx0', 'type', 'vxlan', 'id', '7', 'dstport', '4789', 'dev', 'veth0'], ns);
    const vx0 = Number(/^(\d+):/.exec(ip(['-o', 'link', 'show', 'vx0'], ns))![1]);
    run(['bridge', '-n', ns, 'fdb', 'append', '00:00:00:00:00:00', 'dev', 'vx0', 'dst', '10.213.0.2']);
    await r.next({ kind: 'fdb', action: 'new', family: 7, ifindex: vx0 });
    ip(['addr', 'add', '10.214.0.1/24', 'dev', 'veth1'], ns);
    await r.next({ kind: 'addr', action: 'new', family: 2 });
    ip(['xfrm', 'policy', 'add', 'src', '10.1.0.0/16', 'dst', '10.2.0.0/16', 'dir', 'out', 'action', 'block'], ns);
    await r.next({ kind: 'xfrm', action: 'new', object: 'policy' });
    run(['ip', 'netns', 'exec', ns, 'nft', 'add table inet strait_test']);
    await r.next({ kind: 'nft', action: 'new', object: 'table' });
    run(['ip', 'netns', 'exec', ns, 'nft', 'delete table inet strait_test']);
    await r.next({ kind: 'nft', action: 'del', object: 'table' });
  });

  it('hears only the groups it joined', async () => {
    const r = record(['route']);
    ip(['rule', 'add', 'to', '10.2.0.0/16', 'table', '18952'], ns);
    ip(['neigh', 'add', '10.213.0.9', 'lladdr', '02:00:00:00:00:09', 'dev', 'veth0'], ns);
    ip(['route', 'add', '10.1.0.0/24', 'via', '10.213.0.2', 'table', '18952'], ns);
    await r.next({ kind: 'route', table: 18952 });
    assert.deepEqual([...new Set(r.events.map((e) => e.kind))], ['route']);
  });

  it('reports events the kernel dropped, from a receive buffer that filled while the event loop was busy, as an overflow, and goes on', async () => {
    const r = record(['route']);
    // 40,000 route notifications (several MiB of socket buffer each ~1 KiB) while this thread waits for `ip`.
    const routes = Array.from(
      { length: 40_000 },
      (_, i) => `route add 10.${100 + (i >> 16)}.${(i >> 8) & 255}.${i & 255}/32 dev veth0 table 18952`,
    );
    run(['ip', '-n', ns, '-batch', '-'], `${routes.join('\n')}\n`);
    await r.next({ kind: 'overflow' });
    assert.deepEqual(
      r.events.find((e) => e.kind === 'overflow'),
      { kind: 'overflow', code: 'ENOBUFS' },
    );
    // ...and it still hears what comes next, once it has read what the full buffer held.
    for (let heard = -1; heard !== r.events.length;) {
      heard = r.events.length;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    ip(['route', 'add', '10.99.0.0/24', 'dev', 'veth0', 'table', '18953'], ns);
    await r.next({ kind: 'route', action: 'new', table: 18953 });
  });

  it('stops reporting and gives back its sockets at close(), and 200 open/close cycles leak no descriptor', async () => {
    const closed = record(['link', 'route', 'xfrm', 'nft']);
    const witness = record(['link']);
    closed.monitor.close();
    ip(['link', 'add', 'pod0', 'type', 'veth', 'peer', 'name', 'pod1'], ns);
    await witness.next({ kind: 'link', ifname: 'pod0' });
    assert.deepEqual(closed.events, []);
    closed.monitor.close(); // twice: nothing happens
    const before = openFds();
    for (let i = 0; i < 200; i++)
      new NetlinkMonitor(['link', 'addr', 'route', 'rule', 'neigh', 'xfrm', 'nft'], () => {}, netnsPath(ns)).close();
    assert.equal(openFds(), before);
  });

  it('never keeps a process alive: one that opened a monitor and forgot it exits when its work is done', () => {
    const script = `new (require(${JSON.stringify(require.resolve('../../src/kernel/netlink-monitor'))}).NetlinkMonitor)(['link', 'xfrm', 'nft'], () => {}, ${JSON.stringify(netnsPath(ns))}); console.log('opened')`;
    const child = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', timeout: 10_000 });
    assert.deepEqual(
      { status: child.status, signal: child.signal, stdout: child.stdout },
      { status: 0, signal: null, stdout: 'opened\n' },
      child.stderr,
    );
  });

  it('fails with the errno, its code and the operation when it cannot open', () => {
    assert.throws(
      () => new NetlinkMonitor(['link'], () => {}, '/run/netns/strait-test-no-such-namespace'),
      (err: unknown) => {
        assert.ok(err instanceof NetnsError, `a NetnsError: ${String(err)}`);
        assert.equal(err.code, 'ENOENT');
        assert.equal(err.errno, 2);
        assert.equal(err.operation, 'open network namespace');
        return true;
      },
    );
  });
});
