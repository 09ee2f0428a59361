/**
 * IPv6 TCP between two clusters with the same networks (two-gateways.ts), in every shape of their
 * families and over either underlay family.
 */
import assert from 'node:assert/strict';
import { ipv6Only, ipv6Primary, peerIpv6Only } from '../../support/node-specs';
import { inspectNode } from '../../../src/dataplane/ebpf/inspect';
import { homeNetworks, peerNetworks } from '../../../src/nodespec/families';
import { requireRoot } from '../../support/kernel';
import { type Doc, connectOnce, twoGateways } from './two-gateways';

const same = (doc: Doc) => doc;

/**
 * The shapes of the two clusters the IPv6 connection is made between (each cluster's spec from the
 * dual-stack one), and the family of the underlay their gateways tunnel over.
 */
const shapes: { name: string; a: (doc: Doc) => Doc; b: (doc: Doc) => Doc; underlay: 4 | 6 }[] = [
  { name: 'both dual-stack, IPv4 primary', a: same, b: same, underlay: 4 },
  { name: 'both dual-stack, IPv6 primary', a: ipv6Primary, b: ipv6Primary, underlay: 4 },
  { name: 'both IPv6-only', a: ipv6Only, b: ipv6Only, underlay: 4 },
  // A's peering carries only its secondary family: its PeerSpec's own fields are IPv6, with no secondary.
  { name: 'A dual-stack (IPv4 primary), peered in IPv6 only with an IPv6-only B', a: (d) => peerIpv6Only(d, 0), b: ipv6Only, underlay: 4 },
  // What an IPv6-only cluster's nodes have: no IPv4 address at all (the lab's ipv6-underlay.yaml runs the
  // agents over one end to end).
  { name: 'both IPv6-only, their gateways tunnelling over an IPv6 underlay', a: ipv6Only, b: ipv6Only, underlay: 6 },
];

for (const shape of shapes)
  describe(`IPv6 TCP between two clusters with the same networks, through their eBPF gateways (real kernel): ${shape.name}`, function () {
    requireRoot(this);
    const { names, pins, specs, underlay } = twoGateways(shape);
    it("A's pod reaches B's pod (the same address as its own) at B's address in A's view; B sees it at A's address in B's view", async () => {
      assert.equal(await connectOnce(names.podA, names.podB, 'fd60:b::5'), 'hello from fd60:a::5');
      // Both gateways counted what they translated, on the peering's entry (its tunnel), whatever its
      // families: in IPv6's counters, none in IPv4's (no IPv4 packet was sent).
      for (const gw of [names.gwA, names.gwB]) {
        const report = inspectNode(pins[gw]!);
        const [peer] = report.peers;
        const { ipv4, ipv6 } = peer!.counters;
        assert.ok(ipv6.txPackets > 0 && ipv6.rxPackets > 0, `${gw}: ${JSON.stringify(peer)}`);
        assert.deepEqual(ipv4, { txPackets: 0, txBytes: 0, rxPackets: 0, rxBytes: 0 }, gw);
        // A family the node or the peering lacks is shown absent, not as 0.0.0.0/255.
        const spec = specs[gw]!;
        assert.equal(report.config!.podCIDR !== undefined, homeNetworks(spec, 4) !== undefined, gw);
        assert.equal(peer!.localNATPodCIDR !== undefined, peerNetworks(spec.peers[0]!, 4) !== undefined, gw);
        assert.ok(report.config!.ipv6 && peer!.ipv6, gw);
        // The tunnel ends as inspect shows them, in the underlay's family (the other gateway's is the endpoint).
        const [self, other] = gw === names.gwA ? [underlay.a, underlay.b] : [underlay.b, underlay.a];
        assert.deepEqual([report.config!.nodeAddress, report.config!.activeGatewayAddress, peer!.endpoint], [self, self, other], gw);
      }
    });
  });
