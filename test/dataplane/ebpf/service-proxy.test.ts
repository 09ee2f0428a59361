/**
 * A service proxy in front of the eBPF datapath, as kube-proxy is on a real node: a pod connects to a
 * service address, the node's nftables DNAT turns it into a peer's pod (in this cluster's view of it)
 * after strait_from_pod let the packet pass (a service address is no peer's), and the stack routes it
 * into the overlay device, whose egress program (strait_to_overlay) translates and tunnels it. The
 * reply comes back through the stack, whose conntrack undoes the DNAT. This is how an imported
 * multi-cluster service (docs/services.md) reaches another cluster. Both families, over real packets.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { inspectNode } from '../../../src/dataplane/ebpf/inspect';
import { desiredRoutes, reconcileOverlayRoutes } from '../../../src/dataplane/ebpf/overlay-routes';
import { requireRoot } from '../../support/kernel';
import { connectOnce, twoGateways } from './two-gateways';

/** kube-proxy's nftables mode in miniature: a service address and port DNATed to one endpoint. */
const serviceRules = `
table inet strait-test-proxy {
  chain prerouting {
    type nat hook prerouting priority dstnat;
    ip daddr 10.96.0.10 tcp dport 80 dnat ip to 10.61.0.5:8080
    ip6 daddr fd96::10 tcp dport 80 dnat ip6 to [fd60:b::5]:8080
  }
}
`;

describe('eBPF datapath: a service proxy’s DNAT to a peer’s pod (real kernel)', function () {
  requireRoot(this);
  const same = <T>(doc: T) => doc;
  const { names, pins, specs } = twoGateways({ a: same, b: same, underlay: 4 });
  before(() => {
    // What the agent adds beside the programs: the peers' prefixes routed into the overlay device.
    reconcileOverlayRoutes(desiredRoutes(specs[names.gwA]!), 'strait0', names.gwA);
    const r = spawnSync('ip', ['netns', 'exec', names.gwA, 'nft', '-f', '-'], { input: serviceRules, encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
  });

  for (const [family, service, seenAs] of [
    ['IPv4', '10.96.0.10', '10.60.0.5'],
    ['IPv6', 'fd96::10', 'fd60:a::5'],
  ] as const)
    it(`${family}: A's pod reaches B's pod through a service address of A, B seeing it at A's address in B's view`, async () => {
      const before = inspectNode(pins[names.gwA]!).peers[0]!.counters;
      assert.equal(await connectOnce(names.podA, names.podB, service, 80), `hello from ${seenAs}`);
      const after = inspectNode(pins[names.gwA]!).peers[0]!.counters;
      const counted = family === 'IPv4' ? [before.ipv4, after.ipv4] : [before.ipv6, after.ipv6];
      assert.ok(counted[1]!.txPackets > counted[0]!.txPackets, 'the gateway translated it toward the peer');
    });

  it('keeps the overlay device free of neighbour resolution (NOARP): nothing waits on an answer no one gives', () => {
    const link = JSON.parse(spawnSync('ip', ['-n', names.gwA, '-j', 'link', 'show', 'strait0'], { encoding: 'utf8' }).stdout) as {
      flags: string[];
    }[];
    assert.ok(link[0]!.flags.includes('NOARP'), JSON.stringify(link));
  });
});
