import assert from 'node:assert/strict';
import { KernelDatapath, cleanupKernelNode, kernelApplyChanged } from '../../../src/dataplane/kernel/kernel-datapath';
import { ip, run } from '../../../src/kernel/command';
import { createNetns, deleteNetns } from '../../../src/kernel/netns';
import { hubSpec, hubSpecDocument, withIpv6 } from '../../support/node-specs';
import { readNodeDataplaneSpec } from '../../../src/api/node-dataplane';
import { InputError } from '../../../src/errors';
import { ipsecHub, ipsecHubCarrying } from './ipsec-hub';
import { requireRoot, uniqueName } from '../../support/kernel';

describe('KernelDatapath (real kernel)', function () {
  requireRoot(this);
  let ns: string;
  beforeEach(() => {
    ns = uniqueName('strait-test-kdp');
    createNetns(ns);
    // As on any node: the kernel refuses onlink next hops ("invalid gateway") while lo is down.
    ip(['link', 'set', 'lo', 'up'], ns);
    // Foreign state that must survive everything below.
    ip(['link', 'add', 'other0', 'type', 'veth', 'peer', 'name', 'other1'], ns);
    ip(['route', 'add', 'blackhole', '10.99.0.0/16', 'table', '100'], ns);
    ip(['rule', 'add', 'pref', '100', 'lookup', '100'], ns);
    run(['ip', 'netns', 'exec', ns, 'nft', 'add', 'table', 'ip', 'foreign']);
  });
  afterEach(() => deleteNetns(ns));

  /** All but table 18952's routes (`ip route show` fails for a table that does not exist). */
  const stateButRoutes = () => ({
    links: run(['ip', '-n', ns, '-br', 'link'])
      .split('\n')
      .map((l) => l.split(/[\s@]+/)[0])
      .filter(Boolean)
      .sort(),
    // Rules of one priority list in the order they were added: compare them as a set.
    rules: run(['ip', '-n', ns, 'rule']).split('\n').sort().join('\n'),
    nft: run(['ip', 'netns', 'exec', ns, 'nft', 'list', 'tables']),
  });
  const state = () => ({ ...stateButRoutes(), table: run(['ip', '-n', ns, 'route', 'show', 'table', '18952']) });
  const foreign = () => [
    run(['ip', '-n', ns, 'route', 'show', 'table', '100']),
    run(['ip', '-n', ns, 'rule']).includes('100:\tfrom all lookup 100'),
    run(['ip', 'netns', 'exec', ns, 'nft', 'list', 'tables']).includes('table ip foreign'),
  ];

  it('programs a hub gateway, changes nothing the second time, repairs what was deleted by hand, and cleans up only its own', () => {
    const dp = new KernelDatapath(ns);
    const before = foreign();
    const first = dp.apply(hubSpec());
    assert.deepEqual(first.failed, []);
    assert.deepEqual(first.devices.created.sort(), ['stp00000007', 'stp00000009', 'strait.vxlan']);
    assert.equal(first.routes, 9, 'four backstops and five routes');
    assert.equal(first.rules, 6);
    assert.equal(first.natChanged, true);
    const programmed = state();
    assert.ok(programmed.table.includes('10.1.0.0/16 via 203.0.113.1 dev stp00000007 proto 252 onlink'));
    assert.ok(programmed.rules.includes('18953:\tfrom all iif stp00000009 lookup 18952'));
    assert.ok(programmed.nft.includes('table ip strait') && programmed.nft.includes('table inet strait_filter'));
    assert.equal(kernelApplyChanged(dp.apply(hubSpec())), false, 'a second apply changes nothing');

    ip(['route', 'del', '10.2.0.0/20', 'metric', '0', 'table', '18952'], ns);
    ip(['rule', 'del', 'pref', '18953', 'iif', 'stp00000007'], ns);
    run(['ip', 'netns', 'exec', ns, 'nft', 'delete', 'table', 'ip', 'strait']);
    const repaired = dp.apply(hubSpec());
    assert.deepEqual([repaired.routes, repaired.rules, repaired.natChanged], [1, 1, true]);
    assert.deepEqual(state(), programmed, 'everything deleted by hand is back');
    assert.deepEqual(foreign(), before, 'foreign routes, rules and tables untouched');

    const removed = cleanupKernelNode(ns);
    assert.deepEqual(
      [removed.rules, removed.routes, removed.devices.sort(), removed.nat],
      [6, 9, ['stp00000007', 'stp00000009', 'strait.vxlan'], true],
    );
    const after = state();
    assert.deepEqual(after.links, ['lo', 'other0', 'other1']);
    assert.ok(!after.rules.includes('18952') && !after.rules.includes('18953'));
    assert.deepEqual(foreign(), before);
    assert.deepEqual(cleanupKernelNode(ns), { rules: 0, routes: 0, devices: [], xfrm: 0, nat: false }, 'safe to run twice');
  });

  it("dual-stack: IPv6 routes and rules through the same devices, next hops the far devices' link-local addresses; a second apply changes nothing", () => {
    const dualStack = () => readNodeDataplaneSpec(withIpv6(hubSpecDocument()));
    const dp = new KernelDatapath(ns);
    const first = dp.apply(dualStack());
    assert.deepEqual(first.failed, []);
    assert.deepEqual(first.devices.created.sort(), ['stp00000007', 'stp00000009', 'strait.vxlan']);
    assert.equal(first.routes, 18, 'four backstops and five routes per family');
    assert.equal(first.rules, 12, 'six rules per family');
    const v6 = (args: string[]) => run(['ip', '-6', '-n', ns, ...args]);
    const table = v6(['route', 'show', 'table', '18952']);
    // A's tunnel MAC at our end of the peering is tunnelMac(A, B); the route names its EUI-64 address.
    const peerA = /fd00:11::\/56 via (fe80::[0-9a-f:]+) dev stp00000007 proto 252 metric 1024 onlink/.exec(table);
    assert.ok(peerA, table);
    assert.match(v6(['neigh', 'show', 'dev', 'stp00000007']), new RegExp(`^${peerA[1]} lladdr [0-9a-f:]+ PERMANENT`, 'm'));
    assert.match(table, /fd00:10:0:1::\/64 via fe80::[0-9a-f:]+ dev strait\.vxlan proto 252 metric 1024 onlink/);
    assert.match(table, /unreachable fd00:70::\/120 dev lo proto 252 metric 4294967295/);
    const rules = v6(['rule']);
    assert.match(rules, /18952:\tfrom all to fd00:12::\/60 lookup 18952/);
    assert.match(rules, /18953:\tfrom all iif stp00000009 lookup 18952/);
    assert.ok(state().nft.includes('table ip6 strait'));
    assert.equal(kernelApplyChanged(dp.apply(dualStack())), false, 'a second apply changes nothing');

    ip(['-6', 'route', 'del', 'fd00:12::/60', 'table', '18952', 'metric', '1024'], ns);
    ip(['-6', 'rule', 'del', 'pref', '18953', 'iif', 'stp00000007'], ns);
    const repaired = dp.apply(dualStack());
    assert.deepEqual([repaired.routes, repaired.rules], [1, 1]);
    assert.equal(v6(['route', 'show', 'table', '18952']), table, 'what was deleted by hand is back');

    const removed = cleanupKernelNode(ns);
    assert.deepEqual([removed.rules, removed.routes], [12, 18]);
    assert.equal(v6(['rule']).includes('1895'), false);
  });

  it("refuses IPv6 through tunnels whose MTU, derived from the underlay device, is under IPv6's minimum, changing nothing", () => {
    // The device holding the node's underlay address (hubSpec's 192.0.2.11), 1 byte short for VXLAN.
    ip(['link', 'set', 'other0', 'mtu', '1329'], ns);
    ip(['addr', 'add', '192.0.2.11/24', 'dev', 'other0'], ns);
    const dp = new KernelDatapath(ns);
    const before = stateButRoutes();
    const dualStack = readNodeDataplaneSpec(withIpv6(hubSpecDocument()));
    const namesOther0 = (mtu: number, needed: number) => (err: unknown) =>
      err instanceof InputError &&
      err.field === "the MTU of other0 (the node's underlay device)" &&
      err.value === mtu &&
      err.reason.endsWith(`raise it to at least ${needed}`);
    assert.throws(() => dp.validate(dualStack), namesOther0(1329, 1330));
    assert.throws(() => dp.apply(dualStack), namesOther0(1329, 1330));
    assert.deepEqual(stateButRoutes(), before, 'nothing programmed');
    // Enough for VXLAN, not for ESP: a gateway with an encrypted peering carrying IPv6.
    ip(['link', 'set', 'other0', 'mtu', '1359'], ns);
    assert.throws(() => dp.apply(ipsecHubCarrying('dual')), namesOther0(1359, 1360));
    assert.deepEqual(stateButRoutes(), before, 'nothing programmed');
    assert.throws(() => ip(['route', 'show', 'table', '18952'], ns), /table does not exist/, 'no route either');
    assert.deepEqual(dp.apply(dualStack).failed, [], 'the VXLAN tunnels carry IPv6 at 1309');
    assert.match(ip(['link', 'show', 'strait.vxlan'], ns), /mtu 1309 /);
  });

  it('blocks an encrypted peering it cannot set up: no tunnel, its traffic rejected rather than routed by the main table', () => {
    // A default route the main table would send A's traffic to, in the clear, without the backstop.
    ip(['addr', 'add', '192.0.2.11/24', 'dev', 'other0'], ns);
    ip(['link', 'set', 'other0', 'up'], ns);
    ip(['route', 'add', 'default', 'via', '192.0.2.1'], ns);
    const dp = new KernelDatapath(ns, { unavailable: 'esp (Requested AEAD algorithm not found)' });
    const result = dp.apply(ipsecHub(['cluster-a']));
    assert.deepEqual(result.blocked, ['peer cluster-a: this kernel cannot run IPsec peerings: esp (Requested AEAD algorithm not found)']);
    assert.deepEqual(result.failed, []);
    assert.deepEqual(state().links, ['lo', 'other0', 'other1', 'stp00000009', 'strait.vxlan'], 'no tunnel toward A');
    assert.throws(() => ip(['route', 'get', '10.1.0.5', 'from', '10.0.0.5', 'iif', 'other1'], ns), /No route to host/);
    assert.match(ip(['route', 'get', '10.2.0.5'], ns), /dev stp00000009/, 'the unencrypted peer C is routed as before');
    assert.ok(!ip(['rule'], ns).includes('iif stp00000007'));

    // Without a secret source, the same peer is blocked for that reason.
    assert.match(new KernelDatapath(ns).apply(ipsecHub(['cluster-a'])).blocked[0]!, /peer cluster-a: no source of IPsec secrets/);
  });
});
