import assert from 'node:assert/strict';
import { parseIp } from '../../../src/net/cidr';
import fc from 'fast-check';
import { linkLocalAddress, overlayMac, tunnelDevice } from '../../../src/dataplane/kernel/identities';
import { peeringVni, tunnelMac } from '../../../src/nodespec/peer-tunnel';
import { type RoutePlan, planKernelRouting } from '../../../src/dataplane/kernel/routing-plan';
import {
  hubSpec,
  hubSpecDocument,
  ipv6Only,
  ipv6Underlay,
  ipv6UnderlayOf,
  peerIpv6Only,
  specWith,
  withIpv6,
} from '../../support/node-specs';
import { ipsecHub } from './ipsec-hub';

const show = (r: RoutePlan) =>
  r.unreachable ? `unreachable ${r.prefix} metric ${r.metric}` : `${r.prefix}${r.via ? ` via ${r.via}` : ''} dev ${r.device}`;
// The backstops' metric is the largest there is (docs/kernel-fallback.md), so any real route wins.
const backstops = ['10.1.0.0/16', '10.60.0.0/24', '10.2.0.0/20', '10.70.0.0/24'].map((p) => `unreachable ${p} metric 4294967295`);

describe('fallback routing plan (pure)', () => {
  it('derives the same tunnel VNI and MACs at both ends of a peering, never the overlay VNI', () => {
    fc.assert(
      fc.property(fc.string({ minLength: 1 }), fc.string({ minLength: 1 }), fc.integer({ min: 1, max: 0xffffff }), (a, b, overlay) => {
        const vni = peeringVni(a, b, overlay);
        assert.equal(vni, peeringVni(b, a, overlay));
        assert.ok(vni >= 1 && vni <= 0xffffff && vni !== overlay);
      }),
    );
    assert.notEqual(tunnelMac('a', 'b'), tunnelMac('b', 'a'), 'each end has its own MAC');
    assert.match(overlayMac('c', 'n1'), /^02(:[0-9a-f]{2}){5}$/);
    assert.equal(tunnelDevice(7), 'stp00000007');
  });

  it('plans the hub gateway: overlay with FDB, one tunnel per peer, remote prefixes through it, symmetric routes', () => {
    const plan = planKernelRouting(hubSpec());
    // MACs are sha256('overlay\0cluster\0node') or sha256('tunnel\0owner\0peer') behind 02, VNIs
    // sha256('peering\0x\0y') (src/nodespec/peer-tunnel.ts), computed here once outside the code.
    assert.deepEqual(plan.devices, [
      { name: 'strait.vxlan', vni: 18952, port: 4789, mac: '02:70:e0:03:d3:59', local: '192.0.2.11', mtu: 1450 },
      { name: 'stp00000007', vni: 1829182, port: 4789, mac: '02:93:55:a1:01:47', remote: '203.0.113.1', mtu: 1450 },
      { name: 'stp00000009', vni: 8387962, port: 4789, mac: '02:d1:97:a8:06:b1', remote: '203.0.113.3', mtu: 1450 },
    ]);
    assert.deepEqual(plan.fdb, [
      { device: 'strait.vxlan', mac: '02:e2:47:dd:e9:77', dst: '192.0.2.12' },
      { device: 'strait.vxlan', mac: '00:00:00:00:00:00', dst: '192.0.2.12' },
    ]);
    assert.deepEqual(plan.neighbours, [
      { device: 'strait.vxlan', address: '192.0.2.12', mac: '02:e2:47:dd:e9:77' },
      { device: 'stp00000007', address: '203.0.113.1', mac: '02:c3:8b:16:94:d6' },
      { device: 'stp00000009', address: '203.0.113.3', mac: '02:a0:0a:81:2a:63' },
    ]);
    assert.ok(plan.routes.every((r) => r.table === 18952));
    assert.deepEqual(plan.routes.map(show), [
      ...backstops,
      '10.1.0.0/16 via 203.0.113.1 dev stp00000007',
      '10.60.0.0/24 via 203.0.113.1 dev stp00000007',
      '10.2.0.0/20 via 203.0.113.3 dev stp00000009',
      '10.70.0.0/24 via 203.0.113.3 dev stp00000009',
      '10.0.1.0/24 via 192.0.2.12 dev strait.vxlan',
    ]);
    assert.deepEqual(plan.rules, [
      { priority: 18952, table: 18952, to: '10.1.0.0/16' },
      { priority: 18952, table: 18952, to: '10.60.0.0/24' },
      { priority: 18952, table: 18952, to: '10.2.0.0/20' },
      { priority: 18952, table: 18952, to: '10.70.0.0/24' },
      { priority: 18953, table: 18952, iif: 'stp00000007' },
      { priority: 18953, table: 18952, iif: 'stp00000009' },
    ]);
  });

  it('plans a worker: remote prefixes via the active gateway through the overlay, and a new gateway is only new next hops', () => {
    const worker = {
      ...hubSpec(),
      node: { name: 'b-worker', role: 'worker' as const, underlayAddress: parseIp('a', '192.0.2.12'), gatewayCandidate: false },
    };
    const plan = planKernelRouting(worker);
    assert.deepEqual(
      plan.devices.map((d) => d.name),
      ['strait.vxlan'],
    );
    assert.deepEqual(plan.routes.map(show), [
      ...backstops,
      '10.1.0.0/16 via 192.0.2.11 dev strait.vxlan',
      '10.60.0.0/24 via 192.0.2.11 dev strait.vxlan',
      '10.2.0.0/20 via 192.0.2.11 dev strait.vxlan',
      '10.70.0.0/24 via 192.0.2.11 dev strait.vxlan',
    ]);
    assert.equal(
      plan.rules.every((r) => r.priority === 18952 && r.to !== undefined),
      true,
    );
    const failover = planKernelRouting({ ...worker, activeGateway: { name: 'b-x', underlayAddress: parseIp('a', '192.0.2.13') } });
    assert.deepEqual({ ...failover, routes: [] }, { ...plan, routes: [] });
    assert.ok(failover.routes.every((r) => r.unreachable || r.via === '192.0.2.13'));
  });

  it("plans a dual-stack worker: IPv6 prefixes via the gateway overlay device's link-local address, which a neighbour entry maps to its MAC", () => {
    const worker = specWith(withIpv6(hubSpecDocument()), (s) => {
      s.node = { name: 'b-worker', role: 'worker', underlayAddress: '192.0.2.12' };
    });
    const plan = planKernelRouting(worker);
    const gatewayMac = overlayMac('cluster-b', 'b-gw');
    const via = linkLocalAddress(gatewayMac);
    assert.deepEqual(plan.neighbours, [
      { device: 'strait.vxlan', address: '192.0.2.11', mac: gatewayMac },
      { device: 'strait.vxlan', address: via, mac: gatewayMac },
    ]);
    assert.deepEqual(
      plan.routes.filter((r) => !r.unreachable && r.prefix.includes(':')).map(show),
      ['fd00:11::/56', 'fd00:60::/120', 'fd00:12::/60', 'fd00:70::/120'].map((p) => `${p} via ${via} dev strait.vxlan`),
    );
    assert.equal(plan.routes.filter((r) => r.unreachable).length, 8, 'a backstop per remote prefix of either family');
    assert.deepEqual(
      plan.rules.filter((r) => r.to?.includes(':')).map((r) => r.to),
      ['fd00:11::/56', 'fd00:60::/120', 'fd00:12::/60', 'fd00:70::/120'],
    );
  });

  it("plans each peer by the families its peering carries: a dual-stack gateway's IPv6-only peering gets IPv6 routes, rule and neighbour only", () => {
    const plan = planKernelRouting(specWith(peerIpv6Only(withIpv6(hubSpecDocument()), 0), () => {}));
    const [toA, toC] = [7, 9].map(tunnelDevice);
    const viaA = linkLocalAddress(tunnelMac('cluster-a', 'cluster-b'));
    assert.deepEqual(
      plan.routes.filter((r) => r.device === toA).map(show),
      ['fd00:11::/56', 'fd00:60::/120'].map((p) => `${p} via ${viaA} dev ${toA}`),
    );
    assert.deepEqual(
      plan.neighbours.filter((n) => n.device === toA).map((n) => n.address),
      [viaA],
    );
    assert.deepEqual(
      plan.rules.filter((r) => r.iif).map((r) => [r.iif, r.family ?? 4]),
      [
        [toA, 6],
        [toC, 4],
        [toC, 6],
      ],
    );
    assert.deepEqual(
      plan.rules.filter((r) => r.to && !r.to.includes(':')).map((r) => r.to),
      ['10.2.0.0/20', '10.70.0.0/24'],
      "IPv4 rules for C's prefixes only",
    );
  });

  it('plans an IPv6-only node with no IPv4 route, rule or neighbour (the FDB, which carries both, stays)', () => {
    for (const role of ['gateway', 'worker'] as const) {
      const plan = planKernelRouting(
        specWith(ipv6Only(withIpv6(hubSpecDocument())), (s) => {
          if (role === 'worker') s.node = { name: 'b-worker', role: 'worker', underlayAddress: '192.0.2.12' };
        }),
      );
      const ipv4 = (text: string | undefined) => text !== undefined && !text.includes(':');
      assert.deepEqual(
        plan.routes.filter((r) => ipv4(r.prefix)),
        [],
        role,
      );
      assert.deepEqual(
        plan.rules.filter((r) => ipv4(r.to) || (r.iif && r.family !== 6)),
        [],
        role,
      );
      assert.deepEqual(
        plan.neighbours.filter((n) => ipv4(n.address)),
        [],
        role,
      );
      assert.ok(plan.routes.length > 0 && plan.rules.length > 0 && plan.fdb.length > 0, role);
    }
  });

  it("plans a dual-stack hub over an IPv6 underlay: VXLAN between IPv6 ends, IPv4 routes too via the far devices' link-local addresses (RFC 5549), one neighbour each (issue 29)", () => {
    for (const role of ['gateway', 'worker'] as const) {
      const spec = specWith(ipv6Underlay(withIpv6(hubSpecDocument())), (s) => {
        if (role === 'worker') s.node = { name: 'b-worker', role: 'worker', underlayAddress: ipv6UnderlayOf('192.0.2.12') };
      });
      const plan = planKernelRouting(spec);
      const self = role === 'gateway' ? '192.0.2.11' : '192.0.2.12';
      const other = role === 'gateway' ? { name: 'b-worker', at: '192.0.2.12' } : { name: 'b-gw', at: '192.0.2.11' };
      const otherMac = overlayMac('cluster-b', other.name);
      assert.equal(plan.devices[0]!.name, 'strait.vxlan');
      assert.equal((plan.devices[0] as { local?: string }).local, ipv6UnderlayOf(self), role);
      assert.deepEqual(
        plan.fdb.map((e) => e.dst),
        [ipv6UnderlayOf(other.at), ipv6UnderlayOf(other.at)],
        role,
      );
      // Every next hop is a link-local address with its neighbour entry: none is the IPv6 underlay address.
      const hops = plan.routes.filter((r) => r.via).map((r) => r.via!);
      assert.ok(hops.length > 0 && hops.every((h) => h.startsWith('fe80:')), `${role}: ${hops.join(', ')}`);
      assert.ok(
        plan.routes.some((r) => r.via && !r.prefix.includes(':')),
        `${role}: IPv4 routes through IPv6 next hops`,
      );
      const neighbours = plan.neighbours.map((n) => `${n.device} ${n.address} ${n.mac}`);
      assert.deepEqual(neighbours, [...new Set(neighbours)], `${role}: one neighbour entry per next hop`);
      assert.deepEqual(
        plan.neighbours.filter((n) => n.device === 'strait.vxlan'),
        [{ device: 'strait.vxlan', address: linkLocalAddress(otherMac), mac: otherMac }],
        role,
      );
      if (role === 'gateway')
        assert.deepEqual(
          plan.devices.filter((d) => d.name !== 'strait.vxlan').map((d) => (d as { remote?: string }).remote),
          [ipv6UnderlayOf('203.0.113.1'), ipv6UnderlayOf('203.0.113.3')],
        );
    }
  });

  it("derives a MAC's modified EUI-64 link-local address (RFC 4291)", () => {
    assert.equal(linkLocalAddress('02:53:54:00:00:01'), 'fe80::53:54ff:fe00:1');
    assert.equal(linkLocalAddress('52:54:00:12:34:56'), 'fe80::5054:ff:fe12:3456');
  });

  it('plans an encrypted peering through an xfrm interface, and blocks one that cannot be set up', () => {
    const plan = planKernelRouting(ipsecHub(['cluster-a']));
    // 1500 less tunnel-mode ESP with AES-GCM over IPv4, with room for UDP encapsulation (docs/kernel-fallback.md).
    assert.deepEqual(plan.devices[1], { name: 'stp00000007', ifId: 7, mtu: 1420 });
    const jumbo = planKernelRouting(ipsecHub(['cluster-a']), new Set(), { vxlan: 8950, ipsec: 8920 });
    assert.deepEqual(
      jumbo.devices.map((d) => [d.name, d.mtu]),
      [
        ['strait.vxlan', 8950],
        ['stp00000007', 8920],
        ['stp00000009', 8950],
      ],
      'every tunnel device gets the MTU of its kind',
    );
    assert.deepEqual(
      plan.neighbours.map((n) => n.device),
      ['strait.vxlan', 'stp00000009'],
      'no neighbour on an xfrm interface',
    );
    assert.deepEqual(plan.routes.map(show).slice(4, 6), ['10.1.0.0/16 dev stp00000007', '10.60.0.0/24 dev stp00000007']);
    assert.ok(plan.rules.some((r) => r.iif === 'stp00000007'));

    const blocked = planKernelRouting(ipsecHub(['cluster-a']), new Set(['cluster-a']));
    assert.deepEqual(
      blocked.devices.map((d) => d.name),
      ['strait.vxlan', 'stp00000009'],
    );
    // Only the backstop matches A's prefixes: rejected, never sent in the clear or by the main table.
    assert.deepEqual(blocked.routes.filter((r) => ['10.1.0.0/16', '10.60.0.0/24'].includes(r.prefix)).map(show), backstops.slice(0, 2));
    assert.ok(!blocked.rules.some((r) => r.iif === 'stp00000007'));
    assert.deepEqual(blocked.rules.filter((r) => r.to).length, 4, 'traffic to A still looks up table 18952');
  });
});
