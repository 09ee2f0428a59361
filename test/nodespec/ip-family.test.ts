import assert from 'node:assert/strict';
import { InputError } from '../../src/errors';
import { requireEbpfFamilies, requireIpv4 } from '../../src/nodespec/ip-family';
import {
  dualStackHubSpec,
  dualStackHubSpecDocument,
  hubSpec,
  hubSpecWith,
  ipv6Only,
  ipv6Primary,
  peerIpv6Only,
  specWith,
} from '../support/node-specs';

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

  it("the eBPF datapath: passes IPv6 in any place (secondary, primary, IPv6 only, a peering's only family), which requireIpv4 refuses", () => {
    assert.doesNotThrow(() => requireEbpfFamilies(hubSpec()));
    assert.doesNotThrow(() => requireEbpfFamilies(dualStackHubSpec()));
    for (const shape of [ipv6Primary, ipv6Only, (d: ReturnType<typeof dualStackHubSpecDocument>) => peerIpv6Only(d, 1)])
      assert.doesNotThrow(() => requireEbpfFamilies(specWith(shape(dualStackHubSpecDocument()), () => {})), shape.name);
    assert.throws(
      () => requireIpv4(dualStackHubSpec(), 'the kernel fallback'),
      (err: unknown) => err instanceof InputError && err.field === 'spec.secondary.podCIDR',
    );
  });

  it('the eBPF datapath: refuses IPv6 underlay, gateway and public addresses, also of an IPv6-only spec, naming field and value', () => {
    const underlay = /takes an IPv4 underlay only/;
    const edit = (e: (doc: ReturnType<typeof dualStackHubSpecDocument>) => void) => specWith(dualStackHubSpecDocument(), e);
    const cases: [string, ReturnType<typeof hubSpec>, string, string, RegExp][] = [
      [
        "an IPv6-only spec's IPv6 peer gateway",
        specWith(ipv6Only(dualStackHubSpecDocument()), (d) => {
          d.peers[0]!.endpoint.address = '2001:db8::1';
        }),
        'spec.peers[0].endpoint.address',
        '2001:db8::1',
        underlay,
      ],
      [
        'an IPv6 public address',
        edit((d) => {
          d.node.publicAddress = '2001:db8::1';
        }),
        'spec.node.publicAddress',
        '2001:db8::1',
        underlay,
      ],
      [
        'an IPv6 node address',
        edit((d) => {
          d.nodes![1]!.underlayAddress = 'fd00::12';
        }),
        'spec.nodes[1].underlayAddress',
        'fd00::12',
        underlay,
      ],
      [
        'an IPv6 peer gateway',
        edit((d) => {
          d.peers[1]!.endpoint.address = '2001:db8::3';
        }),
        'spec.peers[1].endpoint.address',
        '2001:db8::3',
        underlay,
      ],
    ];
    for (const [what, spec, field, value, reason] of cases) {
      assert.throws(
        () => requireEbpfFamilies(spec),
        (err: unknown) => err instanceof InputError && err.field === field && err.value === value && reason.test(err.reason),
        what,
      );
    }
  });
});
