import assert from 'node:assert/strict';
import fc from 'fast-check';
import { InputError } from '../../src/errors';
import { candidatePools } from '../../src/pool-ipam/candidates';
import type { PodContext } from '../../src/pool-ipam/model';
import { pod, pool } from './fixtures';

const sts = { apiVersion: 'apps/v1', kind: 'StatefulSet', namespace: 'shop', name: 'web', uid: 'uid-sts-web' };
const noDefaults = { ipv4: [], ipv6: [] };
const clusterPools = [
  pool('zz-default-v4', { default: true }),
  pool('aa-default-v4', { default: true }),
  pool('not-default-v4'),
  pool('default-v6', { default: true, subnet: 'fd00::/120', ips: ['fd00::10-fd00::20'] }),
];
/** Every rule names pools: each test removes the rules above the one it is about. */
const everyRule = {
  annotations: {
    'ipam.strait.io/subnet': '{"ipv4": ["s1"]}',
    'ipam.strait.io/ippool': '{"ipv4": ["annotated-v4"], "ipv6": ["annotated-v6"]}',
  },
  namespaceAnnotations: {
    'ipam.strait.io/default-ipv4-ippool': '["ns-v4-a", "ns-v4-b"]',
    'ipam.strait.io/default-ipv6-ippool': '["ns-v6"]',
  },
};
const cni = { ipv4: ['cni-v4-b', 'cni-v4-a'], ipv6: ['cni-v6'] };
const without = (...keys: string[]): Record<string, string> =>
  Object.fromEntries(Object.entries(everyRule.annotations).filter(([k]) => !keys.includes(k)));
const refusedFor = (key: string, value: string, pattern: RegExp) => (err: unknown) =>
  err instanceof InputError && err.field === key && err.value === value && pattern.test(err.message);

describe('pool IPAM: candidate pool acquisition, in descending priority', () => {
  it('1st priority, the Subnet annotation: the application pools carved from its Subnets, overriding every later rule', () => {
    const got = candidatePools(pod({ ...everyRule, owner: sts }), cni, clusterPools);
    assert.deepEqual(got, {
      source: 'subnet-annotation',
      ipv4: ['auto-statefulset-web-v4-cda9a607'],
      ipv6: [],
      subnets: { ipv4: ['s1'], ipv6: [], ipNumber: { flexible: 1 } },
    });
  });

  it('1st priority: `subnets` (one entry per interface) before `subnet`; an orphan pod is its own application; ippool-ip-number sizes the pool', () => {
    const annotations = {
      'ipam.strait.io/subnets': '[{"interface": "eth0", "ipv4": ["s-eth0"]}, {"interface": "net1", "ipv6": ["s6"]}]',
      'ipam.strait.io/subnet': '{"ipv4": ["s1"]}',
      'ipam.strait.io/ippool-ip-number': '2',
    };
    const got = candidatePools(pod({ annotations, ifname: 'net1' }), cni, clusterPools);
    assert.deepEqual(got, {
      source: 'subnet-annotation',
      ipv4: [],
      ipv6: ['auto-pod-web-0-v6-81a84517'],
      subnets: { ipv4: [], ipv6: ['s6'], ipNumber: { fixed: 2 } },
    });
    const other = candidatePools(
      pod({ annotations: { ...annotations, 'ipam.strait.io/ippool-ip-number': '+3' }, ifname: 'eth9' }),
      cni,
      clusterPools,
    );
    assert.deepEqual(
      other.subnets,
      { ipv4: ['s1'], ipv6: [], ipNumber: { flexible: 3 } },
      'no entry for eth9: the single-interface `subnet` applies',
    );
  });

  it('2nd priority, the IPPool annotation: its pools in its order, for both families, overriding the namespace, CNI and cluster defaults', () => {
    const annotations = { ...without('ipam.strait.io/subnet'), 'ipam.strait.io/ippool': '{"ipv4": ["p2", "p1"], "ipv6": ["p6"]}' };
    assert.deepEqual(candidatePools(pod({ ...everyRule, annotations }), cni, clusterPools), {
      source: 'ippool-annotation',
      ipv4: ['p2', 'p1'],
      ipv6: ['p6'],
    });
  });

  it('2nd priority: `ippools` (per interface) before `ippool`; an entry for another interface does not apply', () => {
    const annotations = {
      'ipam.strait.io/ippools':
        '[{"interface": "eth0", "ipv4": ["eth0-pool"]}, {"interface": "net1", "ipv4": ["net1-pool"], "ipv6": ["net1-pool6"]}]',
      'ipam.strait.io/ippool': '{"ipv4": ["single"]}',
    };
    assert.deepEqual(candidatePools(pod({ annotations, ifname: 'net1' }), cni, clusterPools), {
      source: 'ippool-annotation',
      ipv4: ['net1-pool'],
      ipv6: ['net1-pool6'],
    });
    assert.deepEqual(candidatePools(pod({ annotations, ifname: 'eth0' }), cni, clusterPools), {
      source: 'ippool-annotation',
      ipv4: ['eth0-pool'],
      ipv6: [],
    });
    assert.deepEqual(candidatePools(pod({ annotations, ifname: 'net2' }), cni, clusterPools), {
      source: 'ippool-annotation',
      ipv4: ['single'],
      ipv6: [],
    });
  });

  it('a single-interface annotation applies to any interface without "interface", else only to the one it names', () => {
    const named = { 'ipam.strait.io/ippool': '{"interface": "net1", "ipv4": ["p-net1"]}' };
    assert.deepEqual(candidatePools(pod({ annotations: named, ifname: 'net1' }), cni, clusterPools), {
      source: 'ippool-annotation',
      ipv4: ['p-net1'],
      ipv6: [],
    });
    assert.deepEqual(candidatePools(pod({ annotations: named, ifname: 'eth0' }), cni, clusterPools), {
      source: 'cni-default',
      ipv4: ['cni-v4-b', 'cni-v4-a'],
      ipv6: ['cni-v6'],
    });
    const subnetForNet1 = { 'ipam.strait.io/subnet': '{"interface": "net1", "ipv4": ["s1"]}' };
    assert.equal(candidatePools(pod({ annotations: subnetForNet1, ifname: 'eth0' }), cni, clusterPools).source, 'cni-default');
  });

  it('3rd priority, the Namespace default pools: both families, overriding the CNI and cluster defaults', () => {
    assert.deepEqual(candidatePools(pod({ ...everyRule, annotations: {} }), cni, clusterPools), {
      source: 'namespace-default',
      ipv4: ['ns-v4-a', 'ns-v4-b'],
      ipv6: ['ns-v6'],
    });
  });

  it('4th priority, the CNI configuration default pools, in their order, overriding the cluster defaults', () => {
    assert.deepEqual(candidatePools(pod(), cni, clusterPools), { source: 'cni-default', ipv4: ['cni-v4-b', 'cni-v4-a'], ipv6: ['cni-v6'] });
  });

  it('5th priority, the cluster default pools (spec.default: true), per family, ordered by name; none: empty lists', () => {
    assert.deepEqual(candidatePools(pod(), noDefaults, clusterPools), {
      source: 'cluster-default',
      ipv4: ['aa-default-v4', 'zz-default-v4'],
      ipv6: ['default-v6'],
    });
    assert.deepEqual(candidatePools(pod(), noDefaults, [pool('not-default-v4')]), { source: 'cluster-default', ipv4: [], ipv6: [] });
  });

  it('the rule that names a pool decides both families: an IPv4-only annotation leaves IPv6 empty despite IPv6 defaults', () => {
    const annotations = { 'ipam.strait.io/ippool': '{"ipv4": ["p4"], "ipv6": []}' };
    assert.deepEqual(candidatePools(pod({ ...everyRule, annotations }), cni, clusterPools), {
      source: 'ippool-annotation',
      ipv4: ['p4'],
      ipv6: [],
    });
    const nsV6Only = { 'ipam.strait.io/default-ipv6-ippool': '["ns-v6"]', 'ipam.strait.io/default-ipv4-ippool': '[]' };
    assert.deepEqual(candidatePools(pod({ namespaceAnnotations: nsV6Only }), cni, clusterPools), {
      source: 'namespace-default',
      ipv4: [],
      ipv6: ['ns-v6'],
    });
  });

  it('an annotation naming no pool for the interface falls through to the next rule', () => {
    const annotations = {
      'ipam.strait.io/subnet': '{"ipv4": [], "ipv6": []}',
      'ipam.strait.io/ippools': '[{"interface": "eth0"}]',
      'ipam.strait.io/ippool': '{}',
    };
    assert.equal(candidatePools(pod({ ...everyRule, annotations }), cni, clusterPools).source, 'namespace-default');
  });

  it('a malformed annotation is an InputError naming the annotation and its text', () => {
    const cases: [string, string, RegExp][] = [
      ['ipam.strait.io/ippool', '{"ipv4": ["a"]', /not valid JSON/],
      ['ipam.strait.io/ippool', '["a"]', /expected an object/],
      ['ipam.strait.io/ippool', '{"ipv4pools": ["a"]}', /unknown key "ipv4pools"/],
      ['ipam.strait.io/ippool', '{"ipv4": "a"}', /ipv4 must be a list of names/],
      ['ipam.strait.io/ippool', '{"ipv4": ["Pool_A"]}', /ipv4: "Pool_A" is not an object name/],
      ['ipam.strait.io/ippool', '{"ipv6": ["a", "a"]}', /ipv6: a is named twice/],
      ['ipam.strait.io/ippool', '{"interface": "eth/0", "ipv4": ["a"]}', /"interface" must be an interface name/],
      ['ipam.strait.io/ippools', '[{"ipv4": ["a"]}]', /item 0: "interface" is required/],
      [
        'ipam.strait.io/ippools',
        '[{"interface": "eth0", "ipv4": ["a"]}, {"interface": "eth0", "ipv4": ["b"]}]',
        /interface eth0 is listed twice/,
      ],
      ['ipam.strait.io/ippools', '[]', /non-empty list/],
      ['ipam.strait.io/subnet', '{"ipv4": ["s1", "s2"]}', /ipv4 names 2 StraitSubnets; an application pool is made from one/],
      ['ipam.strait.io/subnets', '{"interface": "eth0", "ipv4": ["s1"]}', /non-empty list/],
    ];
    for (const [key, value, pattern] of cases) {
      assert.throws(
        () => candidatePools(pod({ annotations: { [key]: value } }), cni, clusterPools),
        refusedFor(key, value, pattern),
        `${key}: ${value}`,
      );
    }
    const ipNumber = { 'ipam.strait.io/subnet': '{"ipv4": ["s1"]}' };
    for (const bad of ['0', '-1', '1.5', '+', 'two', '02', '100000']) {
      const annotations = { ...ipNumber, 'ipam.strait.io/ippool-ip-number': bad };
      assert.throws(
        () => candidatePools(pod({ annotations }), cni, clusterPools),
        refusedFor('ipam.strait.io/ippool-ip-number', bad, /count like "2"|at least 1/),
        bad,
      );
    }
    for (const [key, value, pattern] of [
      ['ipam.strait.io/default-ipv4-ippool', 'ns-v4', /not valid JSON/],
      ['ipam.strait.io/default-ipv6-ippool', '{"ipv6": ["a"]}', /expected a JSON list of StraitIPPool names/],
      ['ipam.strait.io/default-ipv4-ippool', '["a", 3]', /3 is not an object name/],
    ] as const) {
      assert.throws(
        () => candidatePools(pod({ namespaceAnnotations: { [key]: value } }), cni, clusterPools),
        refusedFor(key, value, pattern),
        value,
      );
    }
  });

  it('a later rule is not consulted: its malformed annotation does not fail a pod an earlier rule decided', () => {
    const broken = { 'ipam.strait.io/default-ipv4-ippool': 'not json' };
    const annotations = { 'ipam.strait.io/ippool': '{"ipv4": ["p4"]}', 'ipam.strait.io/ippool-ip-number': 'bad' };
    assert.deepEqual(candidatePools(pod({ annotations, namespaceAnnotations: broken }), cni, clusterPools), {
      source: 'ippool-annotation',
      ipv4: ['p4'],
      ipv6: [],
    });
  });

  it('property: the first rule naming a pool for the interface decides, and the candidates come from that rule alone', () => {
    const rules = ['subnet-annotation', 'ippool-annotation', 'namespace-default', 'cni-default', 'cluster-default'] as const;
    const namesOf = (rule: string, max: number) => fc.subarray([`${rule}-x`, `${rule}-y`].slice(0, max));
    const ruleArb = (rule: string, max: number) =>
      fc.record({
        ipv4: namesOf(`${rule}-4`, max),
        ipv6: namesOf(`${rule}-6`, max),
        form: fc.constantFrom('single', 'single-for-eth0', 'plural', 'single-for-net1'),
      });
    fc.assert(
      fc.property(fc.tuple(ruleArb('s', 1), ruleArb('p', 2), ruleArb('n', 2), ruleArb('c', 2), ruleArb('d', 2)), ([s, p, n, c, d]) => {
        const annotations: Record<string, string> = {};
        const annotate = (singular: string, plural: string, r: typeof s) => {
          const body = { ipv4: r.ipv4, ipv6: r.ipv6 };
          if (r.form === 'plural')
            annotations[plural] = JSON.stringify([
              { interface: 'net1', ipv4: ['other-if'] },
              { interface: 'eth0', ...body },
            ]);
          else
            annotations[singular] = JSON.stringify(
              r.form === 'single' ? body : { interface: r.form === 'single-for-eth0' ? 'eth0' : 'net1', ...body },
            );
        };
        annotate('ipam.strait.io/subnet', 'ipam.strait.io/subnets', s);
        annotate('ipam.strait.io/ippool', 'ipam.strait.io/ippools', p);
        const namespaceAnnotations = {
          'ipam.strait.io/default-ipv4-ippool': JSON.stringify(n.ipv4),
          'ipam.strait.io/default-ipv6-ippool': JSON.stringify(n.ipv6),
        };
        const pools = [
          ...d.ipv4.map((name) => pool(name, { default: true })),
          ...d.ipv6.map((name) => pool(name, { default: true, subnet: 'fd00::/120', ips: ['fd00::10'] })),
        ];
        const podContext: PodContext = pod({ annotations, namespaceAnnotations, ifname: 'eth0', owner: sts });

        const applies = (r: typeof s, annotated: boolean) =>
          (!annotated || r.form !== 'single-for-net1') && r.ipv4.length + r.ipv6.length > 0;
        const decided = [applies(s, true), applies(p, true), applies(n, false), applies(c, false)].indexOf(true);
        const rule = decided < 0 ? 4 : decided;
        const got = candidatePools(podContext, c, pools);
        assert.equal(got.source, rules[rule]);
        const expected = [s, p, n, c, d][rule]!;
        if (rule === 0) {
          assert.deepEqual(got.subnets, { ipv4: s.ipv4, ipv6: s.ipv6, ipNumber: { flexible: 1 } });
          assert.equal(got.ipv4.length, s.ipv4.length);
          assert.equal(got.ipv6.length, s.ipv6.length);
          for (const name of [...got.ipv4, ...got.ipv6]) assert.match(name, /^auto-statefulset-web-v[46]-[0-9a-f]{8}$/);
        } else {
          assert.deepEqual({ ipv4: got.ipv4, ipv6: got.ipv6 }, { ipv4: expected.ipv4, ipv6: expected.ipv6 });
          assert.equal(got.subnets, undefined);
        }
      }),
    );
  });
});
