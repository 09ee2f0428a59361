import assert from 'node:assert/strict';
import { InputError } from '../../src/errors';
import { requireIpv4 } from '../../src/nodespec/ip-family';
import { hubSpec, hubSpecWith } from '../support/node-specs';

describe('IP family of a node spec', () => {
  it('passes an IPv4 spec, and refuses the first IPv6 value with its field and the dataplane that cannot carry it', () => {
    assert.doesNotThrow(() => requireIpv4(hubSpec(), 'the eBPF datapath'));
    const cases: [string, Parameters<typeof hubSpecWith>[0], string][] = [
      [
        'a secondary IPv6 family',
        (s) => {
          s.secondary = { podCIDR: 'fd00:a::/48', externalCIDR: 'fd00:b::/112', transitAddress: 'fd00:b::fe' };
        },
        'spec.secondary.podCIDR',
      ],
      [
        'an IPv6 public address',
        (s) => {
          s.node.publicAddress = '2001:db8::1';
        },
        'spec.node.publicAddress',
      ],
      [
        'an IPv6 node address',
        (s) => {
          s.nodes![1]!.underlayAddress = 'fd00::12';
        },
        'spec.nodes[1].underlayAddress',
      ],
      [
        'an IPv6 peer gateway',
        (s) => {
          s.peers[1]!.endpoint.address = '2001:db8::3';
        },
        'spec.peers[1].endpoint.address',
      ],
    ];
    for (const [what, edit, field] of cases) {
      assert.throws(
        () => requireIpv4(hubSpecWith(edit), 'the kernel fallback'),
        (err: unknown) =>
          err instanceof InputError &&
          err.field === field &&
          err.reason === 'the kernel fallback carries IPv4 only (IPv6 clusters are not supported yet)',
        what,
      );
    }
  });
});
