import assert from 'node:assert/strict';
import { InputError } from '../../../src/errors';
import { requireFallbackFamilies } from '../../../src/dataplane/kernel/carried-families';
import { readNodeDataplaneSpec } from '../../../src/api/node-dataplane';
import { hubSpecDocument, ipv6Only, ipv6Primary, peerIpv6Only, specWith, withIpv6 } from '../../support/node-specs';
import { ipsecHubCarrying, ipsecHubCarryingDocument } from './ipsec-hub';

describe('kernel fallback: the IP families it carries', () => {
  const dualStackWith = (edit: Parameters<typeof specWith>[1]) => specWith(withIpv6(hubSpecDocument()), edit);

  it('passes IPv4 only, dual-stack with either family primary, IPv6 only, and a dual-stack home peered in IPv6 only', () => {
    assert.doesNotThrow(() => requireFallbackFamilies(dualStackWith(() => {})));
    assert.doesNotThrow(() => requireFallbackFamilies(specWith(hubSpecDocument(), () => {})));
    for (const shape of [ipv6Primary, ipv6Only, (d: ReturnType<typeof hubSpecDocument>) => peerIpv6Only(d, 0)])
      assert.doesNotThrow(() => requireFallbackFamilies(specWith(shape(withIpv6(hubSpecDocument())), () => {})), shape.name);
  });

  it("passes an encrypted peering of IPv4 only, in the peering's own fields or under its secondary (an IPv6-primary home)", () => {
    const encrypted = (doc: ReturnType<typeof hubSpecDocument>) => {
      doc.peers[0]!.transport = 'ipsec';
      delete doc.peers[0]!.secondary;
      return doc;
    };
    assert.doesNotThrow(() => requireFallbackFamilies(specWith(encrypted(withIpv6(hubSpecDocument())), () => {})));
    // IPv6 primary: the peering's IPv4 networks are its only ones, in its own fields.
    const v6Primary = ipv6Primary(withIpv6(hubSpecDocument()));
    v6Primary.peers[0] = { ...hubSpecDocument().peers[0]!, transport: 'ipsec' };
    assert.doesNotThrow(() => requireFallbackFamilies(specWith(v6Primary, () => {})));
  });

  it('passes encrypted peerings carrying IPv6: dual-stack, IPv6 only (its own fields IPv6), and at the smallest MTU IPv6 takes', () => {
    assert.doesNotThrow(() => requireFallbackFamilies(ipsecHubCarrying('dual')));
    assert.doesNotThrow(() => requireFallbackFamilies(ipsecHubCarrying('ipv6')));
    const atMinimum = ipsecHubCarryingDocument('dual');
    atMinimum.tunnelMTU = 1310;
    assert.doesNotThrow(() => requireFallbackFamilies(readNodeDataplaneSpec(atMinimum)));
    // A small MTU is no matter for an encrypted peering without IPv6, nor for IPv6 over VXLAN.
    const v4Only = ipsecHubCarryingDocument('ipv4', undefined, { dualStackHome: true });
    v4Only.tunnelMTU = 1280;
    assert.doesNotThrow(() => requireFallbackFamilies(readNodeDataplaneSpec(v4Only)));
    assert.doesNotThrow(() => requireFallbackFamilies(dualStackWith((s) => (s.tunnelMTU = 1280))));
  });

  const cases: [string, Parameters<typeof specWith>[1], string, string | number, RegExp][] = [
    ['an IPv6 public address', (s) => (s.node.publicAddress = '2001:db8::1'), 'spec.node.publicAddress', '2001:db8::1', /underlay/],
    ['an IPv6 node address', (s) => (s.nodes![1]!.underlayAddress = 'fd00::12'), 'spec.nodes[1].underlayAddress', 'fd00::12', /underlay/],
    [
      'an IPv6 peer gateway',
      (s) => (s.peers[1]!.endpoint.address = '2001:db8::3'),
      'spec.peers[1].endpoint.address',
      '2001:db8::3',
      /underlay/,
    ],
    [
      'an IPv6 standby gateway of a peer',
      (s) => (s.peers[0]!.endpoint.standbyAddresses = ['203.0.113.2', '2001:db8::4']),
      'spec.peers[0].endpoint.standbyAddresses[1]',
      '2001:db8::4',
      /underlay/,
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
        () => requireFallbackFamilies(dualStackWith(edit)),
        (err: unknown) => err instanceof InputError && err.field === field && err.value === value && reason.test(err.reason),
      );
    });
  }
});
