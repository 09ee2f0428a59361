import assert from 'node:assert/strict';
import { InputError } from '../../../src/errors';
import { requireFallbackFamilies } from '../../../src/dataplane/kernel/carried-families';
import { readNodeDataplaneSpec } from '../../../src/api/node-dataplane';
import type { NodeDataplaneSpec } from '../../../src/nodespec/spec';
import { type NodeTunnelMtus, defaultUnderlayMtu, tunnelMtus } from '../../../src/nodespec/tunnel-mtu';
import { hubSpecDocument, ipv6Only, ipv6Primary, ipv6Underlay, peerIpv6Only, specWith, withIpv6 } from '../../support/node-specs';
import { ipsecHubCarrying, ipsecHubCarryingDocument } from './ipsec-hub';

/** The MTUs of a node whose underlay device is `name` of `mtu` (spec.tunnelMTU not given). */
const underlayOf = (name: string, mtu: number): NodeTunnelMtus => ({ ...tunnelMtus(mtu), underlay: { name, mtu } });

/** The check on a node with the spec's override, else (by default) no device holding its address: Ethernet's MTU assumed. */
const check = (spec: NodeDataplaneSpec, mtus: NodeTunnelMtus = tunnelMtus(defaultUnderlayMtu, spec.tunnelMTU)) =>
  requireFallbackFamilies(spec, mtus);

describe('kernel fallback: the IP families it carries', () => {
  const dualStackWith = (edit: Parameters<typeof specWith>[1]) => specWith(withIpv6(hubSpecDocument()), edit);

  it('passes IPv4 only, dual-stack with either family primary, IPv6 only, and a dual-stack home peered in IPv6 only, over an underlay of either family', () => {
    assert.doesNotThrow(() => check(dualStackWith(() => {})));
    assert.doesNotThrow(() => check(specWith(ipv6Underlay(withIpv6(hubSpecDocument())), () => {})));
    assert.doesNotThrow(() => check(specWith(ipv6Underlay(hubSpecDocument()), () => {})), 'IPv4 pods over an IPv6 underlay');
    assert.doesNotThrow(() => check(specWith(hubSpecDocument(), () => {})));
    for (const shape of [ipv6Primary, ipv6Only, (d: ReturnType<typeof hubSpecDocument>) => peerIpv6Only(d, 0)])
      assert.doesNotThrow(() => check(specWith(shape(withIpv6(hubSpecDocument())), () => {})), shape.name);
  });

  it("passes an encrypted peering of IPv4 only, in the peering's own fields or under its secondary (an IPv6-primary home)", () => {
    const encrypted = (doc: ReturnType<typeof hubSpecDocument>) => {
      doc.peers[0]!.transport = 'ipsec';
      delete doc.peers[0]!.secondary;
      return doc;
    };
    assert.doesNotThrow(() => check(specWith(encrypted(withIpv6(hubSpecDocument())), () => {})));
    // IPv6 primary: the peering's IPv4 networks are its only ones, in its own fields.
    const v6Primary = ipv6Primary(withIpv6(hubSpecDocument()));
    v6Primary.peers[0] = { ...hubSpecDocument().peers[0]!, transport: 'ipsec' };
    assert.doesNotThrow(() => check(specWith(v6Primary, () => {})));
  });

  it('passes encrypted peerings carrying IPv6: dual-stack, IPv6 only (its own fields IPv6), and at the smallest MTU IPv6 takes', () => {
    assert.doesNotThrow(() => check(ipsecHubCarrying('dual')));
    assert.doesNotThrow(() => check(ipsecHubCarrying('ipv6')));
    const atMinimum = ipsecHubCarryingDocument('dual');
    atMinimum.tunnelMTU = 1310;
    assert.doesNotThrow(() => check(readNodeDataplaneSpec(atMinimum)));
    // A small MTU is no matter for an encrypted peering without IPv6, nor for IPv6 over VXLAN.
    const v4Only = ipsecHubCarryingDocument('ipv4', undefined, { dualStackHome: true });
    v4Only.tunnelMTU = 1280;
    assert.doesNotThrow(() => check(readNodeDataplaneSpec(v4Only)));
    assert.doesNotThrow(() => check(dualStackWith((s) => (s.tunnelMTU = 1280))));
  });

  it('passes an MTU derived from the underlay device at the smallest each tunnel carrying IPv6 takes, and any where none does', () => {
    assert.doesNotThrow(
      () =>
        check(
          dualStackWith(() => {}),
          underlayOf('eth0', 1330),
        ),
      "VXLAN's 50 bytes less: 1280",
    );
    assert.doesNotThrow(() => check(ipsecHubCarrying('dual'), underlayOf('eth0', 1360)), "ESP's 80 less: 1280");
    assert.doesNotThrow(
      () =>
        check(
          specWith(hubSpecDocument(), () => {}),
          underlayOf('eth0', 1000),
        ),
      'IPv4 only',
    );
    // A worker makes no xfrm interface: its encrypted peerings' traffic leaves through the gateway's.
    const worker = ipsecHubCarryingDocument('dual');
    worker.node = { name: 'b-worker', role: 'worker', underlayAddress: '192.0.2.12' };
    assert.doesNotThrow(() => check(readNodeDataplaneSpec(worker), underlayOf('eth0', 1330)));
    worker.tunnelMTU = 1280;
    assert.doesNotThrow(() => check(readNodeDataplaneSpec(worker)));
  });

  it("refuses IPv6 through a tunnel whose MTU, derived from the underlay device, is under IPv6's minimum, naming the device, its MTU and the one needed", () => {
    const refused = (spec: NodeDataplaneSpec, mtus: NodeTunnelMtus, reason: RegExp) =>
      assert.throws(
        () => check(spec, mtus),
        (err: unknown) =>
          err instanceof InputError &&
          err.field === "the MTU of eth0 (the node's underlay device)" &&
          err.value === mtus.underlay?.mtu &&
          reason.test(err.reason),
      );
    refused(
      dualStackWith(() => {}),
      underlayOf('eth0', 1329),
      /^this cluster has IPv6, and its VXLAN tunnels' MTU would be 1279, under IPv6's minimum of 1280: without spec.tunnelMTU the tunnels' MTU follows this device's; raise it to at least 1330$/,
    );
    refused(
      ipsecHubCarrying('ipv6'),
      underlayOf('eth0', 1359),
      /^the encrypted peering with cluster-a carries IPv6, and its tunnel's MTU would be 1279, .*raise it to at least 1360$/,
    );
  });

  /** No tunnel joins two families (issue 29): the node's underlay address gives the family. */
  const oneFamily =
    /^is IPv6, not the family of spec\.node\.underlayAddress 192\.0\.2\.11 \(IPv4\): a tunnel's two ends are of one family$/;
  const cases: [string, Parameters<typeof specWith>[1], string, string | number, RegExp][] = [
    [
      'an IPv6 public address on an IPv4 underlay',
      (s) => (s.node.publicAddress = '2001:db8::1'),
      'spec.node.publicAddress',
      '2001:db8::1',
      oneFamily,
    ],
    ['an IPv6 node address', (s) => (s.nodes![1]!.underlayAddress = 'fd00::12'), 'spec.nodes[1].underlayAddress', 'fd00::12', oneFamily],
    [
      'an IPv6 peer gateway',
      (s) => (s.peers[1]!.endpoint.address = '2001:db8::3'),
      'spec.peers[1].endpoint.address',
      '2001:db8::3',
      oneFamily,
    ],
    [
      'an IPv6 standby gateway of a peer',
      (s) => (s.peers[0]!.endpoint.standbyAddresses = ['203.0.113.2', '2001:db8::4']),
      'spec.peers[0].endpoint.standbyAddresses[1]',
      '2001:db8::4',
      oneFamily,
    ],
    [
      "an encrypted peering's IPv6 through a tunnel MTU under IPv6's minimum",
      (s) => {
        s.peers[0]!.transport = 'ipsec';
        s.tunnelMTU = 1309; // the xfrm interface's 1279
      },
      'spec.tunnelMTU',
      1309,
      /peering with cluster-a carries IPv6.*MTU would be 1279, under IPv6's minimum of 1280: give at least 1310/,
    ],
  ];
  for (const [what, edit, field, value, reason] of cases) {
    it(`refuses ${what}, naming ${field} and its value`, () => {
      assert.throws(
        () => check(dualStackWith(edit)),
        (err: unknown) => err instanceof InputError && err.field === field && err.value === value && reason.test(err.reason),
      );
    });
  }
});
