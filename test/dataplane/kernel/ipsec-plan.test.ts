import assert from 'node:assert/strict';
import fc from 'fast-check';
import { formatCidr, parseCidr, parseIp } from '../../../src/net/cidr';
import { InputError } from '../../../src/errors';
import { peeringSecret } from '../../../src/dataplane/kernel/ipsec-keys';
import { type IpsecPlan, isStraitReqid, planIpsec } from '../../../src/dataplane/kernel/ipsec-plan';
import { readNodeDataplaneSpec } from '../../../src/api/node-dataplane';
import { hubSpec, ipv6Primary, withIpv6 } from '../../support/node-specs';
import { type PeerFamilies, ipsecHub, ipsecHubCarrying, ipsecHubDocument } from './ipsec-hub';

const secretA = peeringSecret('secret', Buffer.alloc(32, 0xa5));
const local = '198.51.100.11';

describe('IPsec plan', () => {
  it("an IPv6-primary home's encrypted IPv4-only peering: the same IPv4 selectors as an IPv4 home's (its IPv4 networks by family, not by place)", () => {
    const doc = ipv6Primary(withIpv6(ipsecHubDocument(['cluster-a'], local)));
    const { secondary: _ipv6OfA, ...a } = doc.peers[0]!;
    doc.peers[0] = { ...a, ...ipsecHubDocument(['cluster-a'], local).peers[0]! };
    const secrets = new Map([['cluster-a', secretA]]);
    const plan = planIpsec(readNodeDataplaneSpec(doc), secrets);
    assert.equal(readNodeDataplaneSpec(doc).podCIDR.family, 6);
    assert.deepEqual(plan.policies, planIpsec(ipsecHub(['cluster-a'], local), secrets).policies);
    assert.ok(plan.policies.length > 0);
  });

  it('plans states per direction and wire-view selectors for an encrypted peer with distinct prefixes', () => {
    // Hub B: home 10.0.0.0/16 + 10.50.0.0/24; A sees B as 172.16.0.0/16 + 172.17.0.0/24; B sees A as 10.1.0.0/16 + 10.60.0.0/24.
    const plan = planIpsec(ipsecHub(['cluster-a'], local), new Map([['cluster-a', secretA]]));
    const reqid = 0x53540007;
    // Outbound B->A, inbound A->B: the SPIs and keys of those directions for secretA (docs/kernel-fallback.md,
    // computed with `openssl kdf ... HKDF`).
    assert.deepEqual(
      plan.states.map((s) => ({ ...s, key: s.key.reveal().toString('hex') })),
      [
        {
          peer: 'cluster-a',
          src: local,
          dst: '203.0.113.1',
          spi: 0xb166d469,
          reqid,
          ifId: 7,
          key: '644d4660794d7a668cfded1a3cfd186c1bea5641',
        },
        {
          peer: 'cluster-a',
          src: '203.0.113.1',
          dst: local,
          spi: 0x10941d78,
          reqid,
          ifId: 7,
          key: 'b3a0084cadbd9b3c9e7a748606e905e67a22208a',
        },
      ],
    );
    const out = { tmplSrc: local, tmplDst: '203.0.113.1', reqid, ifId: 7, peer: 'cluster-a' };
    const back = { tmplSrc: '203.0.113.1', tmplDst: local, reqid, ifId: 7, peer: 'cluster-a' };
    const expected = [];
    for (const ours of ['172.16.0.0/16', '172.17.0.0/24']) {
      for (const theirs of ['10.1.0.0/16', '10.60.0.0/24']) {
        expected.push({ dir: 'out', src: ours, dst: theirs, ...out });
        expected.push({ dir: 'in', src: theirs, dst: ours, ...back });
        expected.push({ dir: 'fwd', src: theirs, dst: ours, ...back });
      }
    }
    assert.deepEqual(plan.policies, expected);
    // No selector names a home network (10.0.0.0/16, 10.50.0.0/24): the peer never sees them.
    for (const p of plan.policies) for (const cidr of [p.src, p.dst]) assert.ok(!['10.0.0.0/16', '10.50.0.0/24'].includes(cidr), cidr);
    assert.ok(isStraitReqid(reqid) && !isStraitReqid(0x53550007) && !isStraitReqid(7));
  });

  it('plans nothing for a peer with encryption off, and nothing on a worker', () => {
    const plan = planIpsec(ipsecHub(['cluster-c'], local), new Map([['cluster-c', secretA]]));
    assert.deepEqual(new Set(plan.states.map((s) => s.peer)), new Set(['cluster-c']));
    assert.equal(plan.policies.length, 12);
    assert.ok(plan.policies.every((p) => p.peer === 'cluster-c' && p.reqid === 0x53540009 && p.ifId === 9));
    assert.deepEqual(planIpsec(ipsecHub(['cluster-a']), new Map()), { states: [], policies: [] });
    const worker = {
      ...ipsecHub(['cluster-a']),
      node: { name: 'b-worker', role: 'worker' as const, underlayAddress: parseIp('a', '192.0.2.12'), gatewayCandidate: false },
    };
    assert.deepEqual(planIpsec(worker, new Map([['cluster-a', secretA]])), { states: [], policies: [] });
  });

  it('starts the tunnels at the public address, else at the underlay address', () => {
    const atUnderlay = {
      ...ipsecHub(['cluster-a']),
      node: { name: 'b-gw', role: 'gateway' as const, underlayAddress: parseIp('a', '192.0.2.11'), gatewayCandidate: false },
    };
    const plan = planIpsec(atUnderlay, new Map([['cluster-a', secretA]]));
    assert.deepEqual(
      plan.states.map((s) => `${s.src} -> ${s.dst}`),
      ['192.0.2.11 -> 203.0.113.1', '203.0.113.1 -> 192.0.2.11'],
    );
  });

  /** The policies of one selector family, and the states with their keys in hex (comparable with deepEqual). */
  const ofFamily = (plan: IpsecPlan, family: 4 | 6) => plan.policies.filter((p) => parseCidr('p', p.src).family === family);
  const statesOf = (plan: IpsecPlan) => plan.states.map((s) => ({ ...s, key: s.key.reveal().toString('hex') }));
  /** For each pair of our network and theirs: out, then in and fwd, all through the one tunnel to A. */
  const wirePolicies = (ours: string[], theirs: string[]) => {
    const reqid = 0x53540007;
    const out = { tmplSrc: local, tmplDst: '203.0.113.1', reqid, ifId: 7, peer: 'cluster-a' };
    const back = { tmplSrc: '203.0.113.1', tmplDst: local, reqid, ifId: 7, peer: 'cluster-a' };
    return ours.flatMap((o) =>
      theirs.flatMap((t) => [
        { dir: 'out', src: o, dst: t, ...out },
        { dir: 'in', src: t, dst: o, ...back },
        { dir: 'fwd', src: t, dst: o, ...back },
      ]),
    );
  };
  const v4Policies = wirePolicies(['172.16.0.0/16', '172.17.0.0/24'], ['10.1.0.0/16', '10.60.0.0/24']);
  // A in IPv6 (test/support/node-specs.ts, withIpv6): fd00:11::/56 + fd00:60::/120 here, we are fd01:16::/56 + fd01:17::/120 there.
  const v6Policies = wirePolicies(['fd01:16::/56', 'fd01:17::/120'], ['fd00:11::/56', 'fd00:60::/120']);
  const secrets = new Map([['cluster-a', secretA]]);

  it('plans IPv6 policies beside the IPv4 ones for a dual-stack encrypted peering, through the same IPv4 states', () => {
    const v4Only = planIpsec(ipsecHubCarrying('ipv4', local), secrets);
    const dual = planIpsec(ipsecHubCarrying('dual', local), secrets);
    assert.deepEqual(v4Only.policies, v4Policies);
    assert.deepEqual(dual.policies, [...v4Policies, ...v6Policies], 'IPv4 first (the primary family), then IPv6');
    assert.deepEqual(statesOf(dual), statesOf(v4Only), 'one pair of states, IPv4 tunnel endpoints, for both families');
  });

  it("plans only IPv6 policies for an IPv6-only encrypted peering of a dual-stack cluster (the peering's own fields IPv6), and nothing for IPv4", () => {
    const plan = planIpsec(ipsecHubCarrying('ipv6', local), secrets);
    assert.deepEqual(plan.policies, v6Policies);
    assert.deepEqual(statesOf(plan), statesOf(planIpsec(ipsecHubCarrying('ipv4', local), secrets)));
    assert.deepEqual(ofFamily(plan, 4), []);
  });

  it('plans nothing in IPv6 for a single-stack peer of a dual-stack cluster, while the other peer carries both', () => {
    // The hub dual-stack, A's peering IPv4 only (no secondary), C's (unencrypted) in both.
    const plan = planIpsec(ipsecHubCarrying('ipv4', local, { dualStackHome: true }), secrets);
    assert.deepEqual(plan.policies, v4Policies);
  });

  it('property: each family the peering carries gets out/in/fwd for every pair of its networks, in the wire view, and no other family any', () => {
    /** A network of length `len` anywhere in fdXX::/16 (`first`: 0xfdXX), whose other bits are `rest`. */
    const net6 = (first: bigint, len: number) =>
      fc
        .bigInt({ min: 0n, max: (1n << 112n) - 1n })
        .map((rest) => formatCidr({ family: 6, base: ((first << 112n) | rest) & ~((1n << BigInt(128 - len)) - 1n), prefix: len }));
    const anyLength = (first: bigint) => fc.integer({ min: 17, max: 128 }).chain((len) => net6(first, len));
    fc.assert(
      fc.property(
        fc.constantFrom<PeerFamilies>('ipv4', 'dual', 'ipv6'),
        // A's IPv6 networks anywhere in fd11::/16 and fd61::/16 (nothing else of the spec is there), of any
        // length; ours in A's view of our lengths (/56, /120), anywhere in fd71::/16 and fd81::/16.
        fc.record({ pod: anyLength(0xfd11n), external: anyLength(0xfd61n), natPod: net6(0xfd71n, 56), natExternal: net6(0xfd81n, 120) }),
        (carried, a) => {
          const spec = ipsecHubCarrying(carried, local, { ipv6: a });
          const plan = planIpsec(spec, secrets);
          const v6 = wirePolicies([a.natPod, a.natExternal], [a.pod, a.external]);
          assert.deepEqual(ofFamily(plan, 4), carried === 'ipv6' ? [] : v4Policies);
          assert.deepEqual(ofFamily(plan, 6), carried === 'ipv4' ? [] : v6);
          assert.equal(plan.policies.length, ofFamily(plan, 4).length + ofFamily(plan, 6).length);
          // Selectors of one family each; the tunnel IPv4 whatever they are; no home network selected.
          for (const p of plan.policies) {
            assert.equal(parseCidr('p', p.src).family, parseCidr('p', p.dst).family);
            assert.equal(parseIp('t', p.tmplSrc).family, 4);
            for (const home of ['10.0.0.0/16', '10.50.0.0/24', 'fd00:10::/56', 'fd00:50::/120']) assert.ok(![p.src, p.dst].includes(home));
          }
          assert.deepEqual(statesOf(plan), statesOf(planIpsec(ipsecHubCarrying('ipv4', local), secrets)));
        },
      ),
      { numRuns: 200 },
    );
  });

  it('refuses a secret for an unknown or unencrypted peer', () => {
    assert.throws(
      () => planIpsec(ipsecHub(['cluster-a']), new Map([['cluster-z', secretA]])),
      (e: unknown) => e instanceof InputError && e.field === 'secrets',
    );
    assert.throws(() => planIpsec(hubSpec(), new Map([['cluster-a', secretA]])), /transport is vxlan, not ipsec/);
  });
});
