/**
 * The kernel fallback's change monitor hears every kind of state the fallback owns, each changed by hand
 * in a throwaway namespace: a kind it did not hear would go unrepaired until the resync (10 s).
 */
import assert from 'node:assert/strict';
import { KernelChangeMonitor } from '../../src/kernel/change-monitor';
import { ip, run } from '../../src/kernel/command';
import { createNetns, deleteNetns } from '../../src/kernel/netns';
import { requireRoot, uniqueName } from '../support/kernel';
import { waitFor } from '../support/wait';

describe('kernel change monitor (real kernel)', function () {
  requireRoot(this);
  let ns: string;
  let monitor: KernelChangeMonitor | undefined;
  beforeEach(() => {
    ns = uniqueName('strait-test-kchange');
    createNetns(ns);
    // No IPv6 link-local addresses arriving a second later, in the middle of the checks below.
    run(['ip', 'netns', 'exec', ns, 'sysctl', '-qw', 'net.ipv6.conf.all.disable_ipv6=1', 'net.ipv6.conf.default.disable_ipv6=1']);
    ip(['link', 'add', 'veth0', 'type', 'veth', 'peer', 'name', 'veth1'], ns);
    ip(['link', 'add', 'vx0', 'type', 'vxlan', 'id', '7', 'dstport', '4789', 'dev', 'veth0'], ns);
    ip(['addr', 'add', '10.213.0.1/24', 'dev', 'veth0'], ns);
    for (const dev of ['veth0', 'veth1', 'vx0', 'lo']) ip(['link', 'set', dev, 'up'], ns);
  });
  afterEach(() => {
    monitor?.close();
    deleteNetns(ns);
  });

  it('says "changed" once at start, then after each change by hand of a link, address, route, rule, neighbour, FDB entry, xfrm policy or nftables table, and not while nothing changes', async () => {
    monitor = new KernelChangeMonitor(ns);
    const m = monitor;
    assert.equal(m.takeChanged(), true, 'at start');
    const changes: [string, () => void][] = [
      ['link', () => ip(['link', 'set', 'veth1', 'mtu', '1400'], ns)],
      // (Its lifetime: adding or removing an address is also a route event, for its local route.)
      ['address', () => ip(['addr', 'change', '10.213.0.1/24', 'dev', 'veth0', 'valid_lft', '3600', 'preferred_lft', '3600'], ns)],
      ['route', () => ip(['route', 'add', '10.1.0.0/24', 'via', '10.213.0.2', 'table', '18952'], ns)],
      ['rule', () => ip(['rule', 'add', 'to', '10.1.0.0/16', 'table', '18952', 'priority', '18952'], ns)],
      ['neighbour', () => ip(['neigh', 'add', '10.213.0.9', 'lladdr', '02:00:00:00:00:09', 'dev', 'veth0'], ns)],
      ['FDB entry', () => run(['bridge', '-n', ns, 'fdb', 'append', '00:00:00:00:00:00', 'dev', 'vx0', 'dst', '10.213.0.2'])],
      ['xfrm policy', () => ip(['xfrm', 'policy', 'add', 'src', '10.1.0.0/16', 'dst', '10.2.0.0/16', 'dir', 'out', 'action', 'block'], ns)],
      ['nftables table', () => run(['ip', 'netns', 'exec', ns, 'nft', 'add table ip strait_test'])],
    ];
    // Quiet first: the set-up's own events have been taken.
    const quiet = async () => {
      for (let still = 0; still < 5;) {
        await new Promise((r) => setTimeout(r, 100));
        still = m.takeChanged() ? 0 : still + 1;
      }
    };
    for (const [what, change] of changes) {
      await quiet();
      change();
      await waitFor(`the change of a ${what} heard`, () => m.takeChanged(), 5_000, undefined, 10);
    }
  });
});
