import assert from 'node:assert/strict';
import { parseIp } from '../../../src/net/cidr';
import { InputError } from '../../../src/errors';
import { peeringSecret } from '../../../src/dataplane/kernel/ipsec-keys';
import { isStraitReqid, planIpsec } from '../../../src/dataplane/kernel/ipsec-plan';
import { readNodeDataplaneSpec } from '../../../src/api/node-dataplane';
import { hubSpec, ipv6Primary, withIpv6 } from '../../support/node-specs';
import { ipsecHub, ipsecHubDocument } from './ipsec-hub';

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

  it('refuses a secret for an unknown or unencrypted peer', () => {
    assert.throws(
      () => planIpsec(ipsecHub(['cluster-a']), new Map([['cluster-z', secretA]])),
      (e: unknown) => e instanceof InputError && e.field === 'secrets',
    );
    assert.throws(() => planIpsec(hubSpec(), new Map([['cluster-a', secretA]])), /transport is vxlan, not ipsec/);
  });
});
