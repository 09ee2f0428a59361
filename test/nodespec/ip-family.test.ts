import assert from 'node:assert/strict';
import { InputError } from '../../src/errors';
import { requireOneUnderlayFamily } from '../../src/nodespec/ip-family';
import {
  dualStackHubSpec,
  dualStackHubSpecDocument,
  hubSpec,
  ipv6Only,
  ipv6Primary,
  ipv6Underlay,
  ipv6UnderlayOf,
  peerIpv6Only,
  specWith,
} from '../support/node-specs';

type Doc = ReturnType<typeof dualStackHubSpecDocument>;
const same = (doc: Doc) => doc;

describe('IP family of a node spec', () => {
  it("passes networks of either family in any place (secondary, primary, IPv6 only, a peering's only family)", () => {
    assert.doesNotThrow(() => requireOneUnderlayFamily(hubSpec()));
    assert.doesNotThrow(() => requireOneUnderlayFamily(dualStackHubSpec()));
    for (const shape of [ipv6Primary, ipv6Only, (d: ReturnType<typeof dualStackHubSpecDocument>) => peerIpv6Only(d, 1)])
      assert.doesNotThrow(() => requireOneUnderlayFamily(specWith(shape(dualStackHubSpecDocument()), () => {})), shape.name);
  });

  it('takes an underlay of either family, and refuses a tunnel end of another family than its node, naming field and value (issue 29)', () => {
    for (const shape of [same, ipv6Only])
      assert.doesNotThrow(() => requireOneUnderlayFamily(specWith(ipv6Underlay(shape(dualStackHubSpecDocument())), () => {})), shape.name);
    const ofOwn = (own: string, family: 4 | 6) => (reason: string) =>
      reason ===
      `is IPv${10 - family}, not the family of spec.node.underlayAddress ${own} (IPv${family}): a tunnel's two ends are of one family`;
    const v4 = ofOwn('192.0.2.11', 4);
    const v6 = ofOwn(ipv6UnderlayOf('192.0.2.11'), 6);
    const edit = (e: (doc: Doc) => void) => specWith(dualStackHubSpecDocument(), e);
    const edit6 = (e: (doc: Doc) => void) => specWith(ipv6Underlay(ipv6Only(dualStackHubSpecDocument())), e);
    const cases: [string, ReturnType<typeof hubSpec>, string, string, (reason: string) => boolean][] = [
      [
        'an IPv6 peer gateway',
        edit((d) => (d.peers[0]!.endpoint.address = '2001:db8::1')),
        'spec.peers[0].endpoint.address',
        '2001:db8::1',
        v4,
      ],
      ['an IPv6 public address', edit((d) => (d.node.publicAddress = '2001:db8::1')), 'spec.node.publicAddress', '2001:db8::1', v4],
      ['an IPv6 node address', edit((d) => (d.nodes![1]!.underlayAddress = 'fd00::12')), 'spec.nodes[1].underlayAddress', 'fd00::12', v4],
      [
        'an IPv4 standby of an IPv6 peer',
        edit6((d) => (d.peers[1]!.endpoint.standbyAddresses = ['203.0.113.9'])),
        'spec.peers[1].endpoint.standbyAddresses[0]',
        '203.0.113.9',
        v6,
      ],
      [
        'an IPv4 node of an IPv6 underlay',
        edit6((d) => (d.nodes![1]!.underlayAddress = '192.168.1.2')),
        'spec.nodes[1].underlayAddress',
        '192.168.1.2',
        v6,
      ],
    ];
    for (const [what, spec, field, value, reason] of cases) {
      assert.throws(
        () => requireOneUnderlayFamily(spec),
        (err: unknown) => err instanceof InputError && err.field === field && err.value === value && reason(err.reason),
        what,
      );
    }
  });
});
