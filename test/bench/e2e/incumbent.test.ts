import assert from 'node:assert/strict';
import { parseIp } from '../../../src/net/cidr';
import { hubSpec } from '../reconcile.bench';
import { dialledLast, fromPeersWithoutNatMappings, mappingRules, ruleListRestore } from './incumbent';

describe("the e2e bench's incumbent rule list (pure)", () => {
  it('writes one DNAT per IPv4 NatMapping from the address the peer dials (its view of our ExternalCIDR) to the endpoint', () => {
    // hubSpec: ExternalCIDR 11.0.0.0/8, which peer p sees as 12.0.0.0/8; mapping i: 11.0.0.i -> 13.0.0.i.
    const spec = hubSpec(3, 0);
    // An IPv6 mapping (the bench's hub reflects its pod in both families) is not the IPv4 rule list's.
    const ipv6 = { externalAddress: parseIp('m', 'fd00:fe::1'), endpointAddress: parseIp('m', 'fd00:c:0:1::10') };
    assert.deepEqual(mappingRules({ ...spec, natMappings: [...spec.natMappings, ipv6] }, 'p'), [
      { destination: '12.0.0.1', endpoint: '13.0.0.1' },
      { destination: '12.0.0.2', endpoint: '13.0.0.2' },
      { destination: '12.0.0.3', endpoint: '13.0.0.3' },
    ]);
  });

  it('moves the dialled rule last and refuses an address no rule has', () => {
    const rules = mappingRules(hubSpec(3, 0), 'p');
    assert.deepEqual(
      dialledLast(rules, '12.0.0.1').map((r) => r.destination),
      ['12.0.0.2', '12.0.0.3', '12.0.0.1'],
    );
    assert.throws(() => dialledLast(rules, '12.0.0.9'), /no rule for the dialled address 12\.0\.0\.9/);
  });

  it('gives iptables-restore the chain declared (emptied) and its rules, with the jump from PREROUTING only when asked', () => {
    const rules = [
      { destination: '12.0.0.2', endpoint: '13.0.0.2' },
      { destination: '12.0.0.1', endpoint: '13.0.0.1' },
    ];
    assert.equal(
      ruleListRestore(rules, { jump: true }),
      [
        '*nat',
        ':STRAIT-BENCH-NATMAP - [0:0]',
        '-A STRAIT-BENCH-NATMAP -d 12.0.0.2/32 -j DNAT --to-destination 13.0.0.2',
        '-A STRAIT-BENCH-NATMAP -d 12.0.0.1/32 -j DNAT --to-destination 13.0.0.1',
        '-A PREROUTING -j STRAIT-BENCH-NATMAP',
        'COMMIT',
        '',
      ].join('\n'),
    );
    assert.doesNotMatch(ruleListRestore(rules, { jump: false }), /PREROUTING/);
  });

  it("rewrites the fallback's from_peers without the NatMapping lookup, after iptables' nat PREROUTING, and empties the map", () => {
    const listing = [
      'table ip strait {',
      '\tchain from_peers {',
      '\t\ttype nat hook prerouting priority dstnat - 10; policy accept;',
      '\t\tiifname "stp00000001" ip daddr 10.4.0.0/15 dnat ip to ip daddr & 0.1.255.255 | 10.202.0.0 map @natmappings',
      '\t\tiifname "stp00000001" dnat ip prefix to ip daddr map { 10.1.0.0/16 : 10.0.0.0/16, 10.4.0.0/15 : 10.202.0.0/15 }',
      '\t}',
      '}',
    ].join('\n');
    assert.equal(
      fromPeersWithoutNatMappings(listing),
      [
        'delete chain ip strait from_peers',
        'table ip strait {',
        '\tchain from_peers {',
        '\t\ttype nat hook prerouting priority dstnat + 10; policy accept;',
        '\t\tiifname "stp00000001" dnat ip prefix to ip daddr map { 10.1.0.0/16 : 10.0.0.0/16, 10.4.0.0/15 : 10.202.0.0/15 }',
        '\t}',
        '}',
        'flush map ip strait natmappings',
        '',
      ].join('\n'),
    );
    assert.throws(() => fromPeersWithoutNatMappings(listing.replace('dstnat - 10', 'dstnat')), /not hooked at dstnat - 10/);
  });
});
