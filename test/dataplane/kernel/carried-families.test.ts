import assert from 'node:assert/strict';
import { InputError } from '../../../src/errors';
import { requireFallbackFamilies } from '../../../src/dataplane/kernel/carried-families';
import { hubSpecDocument, specWith, withIpv6 } from '../../support/node-specs';

describe('kernel fallback: the IP families it carries', () => {
  const dualStackWith = (edit: Parameters<typeof specWith>[1]) => specWith(withIpv6(hubSpecDocument()), edit);

  it('passes an IPv4 spec and a dual-stack one with IPv6 as the secondary family', () => {
    assert.doesNotThrow(() => requireFallbackFamilies(dualStackWith(() => {})));
    assert.doesNotThrow(() => requireFallbackFamilies(specWith(hubSpecDocument(), () => {})));
  });

  const cases: [string, Parameters<typeof specWith>[1], string, string, RegExp][] = [
    [
      'IPv6 as the primary family',
      (s) => {
        // The same networks, the families' roles swapped.
        const swap = <T extends object>(whole: T & { secondary?: T }, keys: (keyof T)[]) => {
          const primary = Object.fromEntries(keys.map((k) => [k, whole[k]])) as T;
          for (const k of keys) whole[k] = whole.secondary![k];
          whole.secondary = primary;
        };
        swap(s, ['podCIDR', 'externalCIDR', 'transitAddress']);
        for (const p of s.peers) swap(p, ['remotePodCIDR', 'remoteExternalCIDR', 'localNATPodCIDR', 'localNATExternalCIDR']);
      },
      'spec.podCIDR',
      'fd00:10::/56',
      /IPv4 as the primary family/,
    ],
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
      'IPv6 through an encrypted peering',
      (s) => (s.peers[0]!.transport = 'ipsec'),
      'spec.peers[0].secondary.remotePodCIDR',
      'fd00:11::/56',
      /IPsec.*IPv4 only/,
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
