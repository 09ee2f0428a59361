import assert from 'node:assert/strict';
import type { V1Node } from '@kubernetes/client-node';
import fc from 'fast-check';
import { clusterNodes } from '../../src/k8s/cluster-nodes';
import { cidrsOverlap, formatCidr, formatIp, parseCidr } from '../../src/net/cidr';

const clusterPods = parseCidr('test', '10.244.0.0/16');

interface NodeInput {
  /** One InternalIP, or several (a dual-stack node lists one per family). */
  internalIP?: string | string[];
  externalIP?: string;
  podCIDRs?: string[];
  podCIDR?: string;
  publicAddress?: string;
  candidate?: string;
  ready?: 'True' | 'False' | 'Unknown';
}

function node(name: string, input: NodeInput): V1Node {
  const addresses = [
    ...(input.externalIP ? [{ type: 'ExternalIP', address: input.externalIP }] : []),
    { type: 'Hostname', address: name },
    ...[input.internalIP ?? []].flat().map((address) => ({ type: 'InternalIP', address })),
  ];
  return {
    metadata: {
      name,
      ...(input.publicAddress !== undefined ? { annotations: { 'strait.io/public-address': input.publicAddress } } : {}),
      ...(input.candidate !== undefined ? { labels: { 'strait.io/gateway-candidate': input.candidate } } : {}),
    },
    spec: { ...(input.podCIDRs ? { podCIDRs: input.podCIDRs } : {}), ...(input.podCIDR ? { podCIDR: input.podCIDR } : {}) },
    status: {
      addresses,
      ...(input.ready
        ? {
            conditions: [
              { type: 'MemoryPressure', status: 'False' },
              { type: 'Ready', status: input.ready },
            ],
          }
        : {}),
    },
  };
}

/** The result as text, so a table row says it in one line. */
function summary(nodes: readonly V1Node[]) {
  const { nodes: read, problems } = clusterNodes(nodes, [clusterPods]);
  return {
    nodes: read.map((n) =>
      [
        n.config.name,
        formatIp(n.config.underlayAddress),
        n.config.podCIDRs.map(formatCidr).join(','),
        n.config.publicAddress ? formatIp(n.config.publicAddress) : '-',
        n.ready ? 'ready' : 'not-ready',
        n.gatewayCandidate ? 'candidate' : '-',
      ].join(' '),
    ),
    problems: problems.map((p) => p.message),
  };
}

describe('Kubernetes Nodes as cluster nodes', () => {
  it('reads name, InternalIP, podCIDRs, the public-address annotation, the Ready condition and the candidate label', () => {
    assert.deepEqual(
      summary([
        node('n2', { internalIP: '192.168.1.2', externalIP: '198.51.100.9', podCIDRs: ['10.244.2.0/24'], ready: 'False' }),
        node('n1', {
          internalIP: '192.168.1.1',
          podCIDRs: ['10.244.1.0/24', 'fd00:10:244:1::/64'],
          publicAddress: '203.0.113.1',
          candidate: 'true',
          ready: 'True',
        }),
        node('n3', { internalIP: '192.168.1.3', podCIDR: '10.244.3.0/24', candidate: 'false', ready: 'Unknown' }),
        node('n4', { internalIP: ['fd00::4', '192.168.1.4'], candidate: 'true' }),
      ]),
      {
        nodes: [
          'n1 192.168.1.1 10.244.1.0/24 203.0.113.1 ready candidate',
          'n2 192.168.1.2 10.244.2.0/24 - not-ready -',
          'n3 192.168.1.3 10.244.3.0/24 - not-ready -',
          'n4 192.168.1.4  - not-ready candidate',
        ],
        problems: [],
      },
    );
  });

  it('prefers spec.podCIDRs over the older spec.podCIDR', () => {
    assert.deepEqual(summary([node('n', { internalIP: '192.168.1.1', podCIDRs: ['10.244.7.0/24'], podCIDR: '10.244.9.0/24' })]).nodes, [
      'n 192.168.1.1 10.244.7.0/24 - not-ready -',
    ]);
  });

  it("reads a dual-stack Node's pod networks of every family the cluster has, and the IPv4 InternalIP as its underlay", () => {
    const dual = node('n', { internalIP: ['192.168.1.1', 'fd00:1::1'], podCIDRs: ['10.244.7.0/24', 'fd00:a:0:7::/64'] });
    const read = (cidrs: string[]) =>
      clusterNodes(
        [dual],
        cidrs.map((c) => parseCidr('test', c)),
      ).nodes.map((n) => n.config.podCIDRs.map(formatCidr));
    assert.deepEqual(read(['10.244.0.0/16', 'fd00:a::/48']), [['10.244.7.0/24', 'fd00:a:0:7::/64']]);
    assert.deepEqual(read(['10.244.0.0/16']), [['10.244.7.0/24']], 'a single-stack cluster routes its family only');
    // An IPv6-first Node (its IPv6 InternalIP and PodCIDR listed first) of an IPv6-only cluster: its
    // IPv6 pods, over its IPv4 InternalIP.
    const sixFirst = node('s', { internalIP: ['fd00:1::2', '192.168.1.2'], podCIDRs: ['fd00:a:0:8::/64', '10.244.8.0/24'] });
    const six = clusterNodes([sixFirst], [parseCidr('test', 'fd00:a::/48')]).nodes;
    assert.deepEqual(
      six.map((n) => [n.config.underlayAddress && formatIp(n.config.underlayAddress), n.config.podCIDRs.map(formatCidr)]),
      [['192.168.1.2', ['fd00:a:0:8::/64']]],
    );
    const outside = clusterNodes([dual], [clusterPods, parseCidr('test', 'fd00:b::/48')]);
    assert.deepEqual(outside.nodes, []);
    assert.equal(
      outside.problems[0]!.message,
      'Node n: spec.podCIDRs[1]: is not inside the cluster podCIDR fd00:b::/48 (got "fd00:a:0:7::/64")',
    );
  });

  it('takes the IPv6 InternalIP as the underlay of a cluster whose Nodes have no IPv4 one, and one family for all (issue 29)', () => {
    const sixOnly = (name: string, internalIP: string, publicAddress?: string) =>
      node(name, { internalIP, ...(publicAddress ? { publicAddress } : {}), podCIDRs: [] });
    const pods = [parseCidr('test', 'fd00:a::/48')];
    const read = (nodes: V1Node[]) => {
      const out = clusterNodes(nodes, pods);
      return {
        nodes: out.nodes.map((n) => [
          n.config.name,
          formatIp(n.config.underlayAddress),
          n.config.publicAddress && formatIp(n.config.publicAddress),
        ]),
        problems: out.problems.map((p) => p.message),
      };
    };
    assert.deepEqual(read([sixOnly('a', 'fd00:1::1', '2001:db8::1'), sixOnly('b', 'fd00:1::2')]), {
      nodes: [
        ['a', 'fd00:1::1', '2001:db8::1'],
        ['b', 'fd00:1::2', undefined],
      ],
      problems: [],
    });
    // One Node with an IPv4 InternalIP makes the cluster's underlay IPv4, whatever the order of the list.
    const mixed = [sixOnly('a', 'fd00:1::1'), node('b', { internalIP: ['fd00:1::2', '192.168.1.2'] })];
    for (const list of [mixed, [...mixed].reverse()])
      assert.deepEqual(read(list), {
        nodes: [['b', '192.168.1.2', undefined]],
        problems: [
          `Node a: status.addresses: no IPv4 InternalIP: the cluster's tunnels run over IPv4, as other Nodes have one (got [{"type":"Hostname","address":"a"},{"type":"InternalIP","address":"fd00:1::1"}])`,
        ],
      });
    assert.deepEqual(read([sixOnly('a', 'fd00:1::1', '203.0.113.1'), sixOnly('l', 'fe80::1')]).problems, [
      `Node a: metadata.annotations["strait.io/public-address"]: is IPv4, not the family of the cluster's underlay (IPv6): a tunnel's two ends are of one family (got "203.0.113.1")`,
      'Node l: status.addresses[InternalIP]: is IPv6 link-local (fe80::/10): a tunnel end needs an address routed beyond its link (got "fe80::1")',
    ]);
  });

  it('leaves out a Node with bad input, naming the node, field and value, and keeps the others', () => {
    const good = node('good', { internalIP: '192.168.1.1', podCIDRs: ['10.244.1.0/24'], ready: 'True' });
    const cases: [V1Node, string][] = [
      [
        node('no-ip', { externalIP: '198.51.100.1' }),
        `Node no-ip: status.addresses: no IPv4 InternalIP: the cluster's tunnels run over IPv4, as other Nodes have one (got [{"type":"ExternalIP","address":"198.51.100.1"},{"type":"Hostname","address":"no-ip"}])`,
      ],
      // A cluster's tunnels run over one family: with good's IPv4 InternalIP, a Node with only an IPv6 one
      // could not reach the others (issue 29).
      [
        node('v6-only', { internalIP: 'fd00::4' }),
        `Node v6-only: status.addresses: no IPv4 InternalIP: the cluster's tunnels run over IPv4, as other Nodes have one (got [{"type":"Hostname","address":"v6-only"},{"type":"InternalIP","address":"fd00::4"}])`,
      ],
      [
        node('zero-ip', { internalIP: '0.0.0.0' }),
        'Node zero-ip: status.addresses[InternalIP]: is in 0.0.0.0/8, "this network" (RFC 1122): not unicast space a node or pod can be in (got "0.0.0.0")',
      ],
      [
        node('v6-public', { internalIP: '192.168.1.2', publicAddress: '2001:db8::1' }),
        'Node v6-public: metadata.annotations["strait.io/public-address"]: is IPv6, not the family of the cluster\'s underlay (IPv4): a tunnel\'s two ends are of one family (got "2001:db8::1")',
      ],
      [
        node('bad-ip', { internalIP: '192.168.1.300' }),
        'Node bad-ip: status.addresses[InternalIP]: not an IPv4 address (a.b.c.d, no leading zeros) nor an IPv6 address (got "192.168.1.300")',
      ],
      [
        node('bad-cidr', { internalIP: '192.168.1.2', podCIDRs: ['10.244.2.0/24', '10.244.3.1/24'] }),
        'Node bad-cidr: spec.podCIDRs[1]: host bits are set; did you mean 10.244.3.0/24? (got "10.244.3.1/24")',
      ],
      [
        node('old-cidr', { internalIP: '192.168.1.2', podCIDR: 'ten' }),
        'Node old-cidr: spec.podCIDR: expected a CIDR like 10.0.0.0/16 or fd00::/64 (got "ten")',
      ],
      [
        node('outside', { internalIP: '192.168.1.2', podCIDRs: ['10.245.0.0/24'] }),
        'Node outside: spec.podCIDRs[0]: is not inside the cluster podCIDR 10.244.0.0/16 (got "10.245.0.0/24")',
      ],
      [
        node('wider', { internalIP: '192.168.1.2', podCIDRs: ['10.244.0.0/15'] }),
        'Node wider: spec.podCIDRs[0]: is not inside the cluster podCIDR 10.244.0.0/16 (got "10.244.0.0/15")',
      ],
      [
        node('overlap', { internalIP: '192.168.1.2', podCIDRs: ['10.244.1.128/25'] }),
        'Node overlap: spec.podCIDRs[0]: overlaps the podCIDRs of Node good (got "10.244.1.128/25")',
      ],
      [
        node('bad-public', { internalIP: '192.168.1.2', publicAddress: 'gw.example.com' }),
        'Node bad-public: metadata.annotations["strait.io/public-address"]: not an IPv4 address (a.b.c.d, no leading zeros) nor an IPv6 address (got "gw.example.com")',
      ],
      [
        node('bad-label', { internalIP: '192.168.1.2', candidate: 'yes' }),
        'Node bad-label: metadata.labels["strait.io/gateway-candidate"]: expected "true" or "false" (got "yes")',
      ],
    ];
    for (const [bad, message] of cases) {
      assert.deepEqual(
        summary([good, bad]),
        { nodes: ['good 192.168.1.1 10.244.1.0/24 - ready -'], problems: [message] },
        bad.metadata!.name,
      );
    }
    const [problem] = clusterNodes([good, cases.find(([n]) => n.metadata!.name === 'bad-label')![0]], [clusterPods]).problems;
    assert.deepEqual(problem, {
      node: 'bad-label',
      field: 'metadata.labels["strait.io/gateway-candidate"]',
      value: 'yes',
      reason: 'expected "true" or "false"',
      message: 'Node bad-label: metadata.labels["strait.io/gateway-candidate"]: expected "true" or "false" (got "yes")',
    });
  });

  it('of two Nodes with overlapping pod CIDRs the later name is left out, whatever the list order', () => {
    const a = node('a', { internalIP: '192.168.1.1', podCIDRs: ['10.244.0.0/23'] });
    const b = node('b', { internalIP: '192.168.1.2', podCIDRs: ['10.244.1.0/24'] });
    const expected = {
      nodes: ['a 192.168.1.1 10.244.0.0/23 - not-ready -'],
      problems: ['Node b: spec.podCIDRs[0]: overlaps the podCIDRs of Node a (got "10.244.1.0/24")'],
    };
    assert.deepEqual(summary([a, b]), expected);
    assert.deepEqual(summary([b, a]), expected);
  });

  it('every Node is read or left out exactly once, the same for any order of the list (property)', () => {
    const input = fc.record({
      internalIP: fc.option(fc.constantFrom('192.168.1.1', '192.168.1.2', 'bad'), { nil: undefined }),
      podCIDRs: fc.option(
        fc.array(fc.constantFrom('10.244.1.0/24', '10.244.2.0/24', '10.244.0.0/16', '10.9.0.0/24', 'fd00::/64', '10.244.3.3/24'), {
          maxLength: 2,
        }),
        { nil: undefined },
      ),
      publicAddress: fc.option(fc.constantFrom('203.0.113.1', 'x'), { nil: undefined }),
      candidate: fc.option(fc.constantFrom('true', 'false', 'TRUE'), { nil: undefined }),
      ready: fc.option(fc.constantFrom('True' as const, 'False' as const), { nil: undefined }),
    });
    fc.assert(
      fc.property(
        fc.uniqueArray(fc.tuple(fc.constantFrom('a', 'b', 'c', 'd', 'e'), input), { selector: ([name]) => name, maxLength: 5 }),
        fc.func(fc.integer()),
        (entries, order) => {
          const nodes = entries.map(([name, i]) => node(name, i));
          const result = summary(nodes);
          const names = [
            ...result.nodes.map((line) => line.split(' ')[0]),
            ...result.problems.map((p) => p.split(' ')[1]!.slice(0, -1)),
          ].sort();
          assert.deepEqual(names, entries.map(([name]) => name).sort());
          const shuffled = nodes
            .map((n, i) => [order(i), n] as const)
            .sort(([x], [y]) => x - y)
            .map(([, n]) => n);
          assert.deepEqual(summary(shuffled), result);
        },
      ),
      { numRuns: 500 },
    );
  });

  it("leaves out exactly the Nodes whose pod CIDRs overlap an earlier name's, naming the first such name (property, many nodes)", () => {
    // CIDRs of 10.244.0.0/16 from /17 to /26, on a grid coarse enough for many overlaps.
    const cidr = fc.tuple(fc.integer({ min: 17, max: 26 }), fc.integer({ min: 0, max: 63 })).map(([prefix, k]) => {
      const base = (0x0af40000 + k * 1024) & ~((1 << (32 - prefix)) - 1);
      return `10.244.${(base >> 8) & 0xff}.${base & 0xff}/${prefix}`;
    });
    fc.assert(
      fc.property(fc.array(fc.array(cidr, { minLength: 1, maxLength: 2 }), { minLength: 1, maxLength: 40 }), (lists) => {
        const names = lists.map((_, i) => `n${String(i).padStart(2, '0')}`);
        const { nodes: read, problems } = clusterNodes(
          lists.map((podCIDRs, i) => node(names[i]!, { internalIP: '192.168.1.1', podCIDRs })),
          [clusterPods],
        );
        // The brute-force answer: each node in name order against every node kept before it.
        const kept: { name: string; cidrs: ReturnType<typeof parseCidr>[] }[] = [];
        const expected: string[] = [];
        lists.forEach((texts, i) => {
          const cidrs = texts.map((t) => parseCidr('t', t));
          for (const [j, c] of cidrs.entries()) {
            const other = kept.find((k) => k.cidrs.some((d) => cidrsOverlap(c, d)));
            if (other) {
              expected.push(`Node ${names[i]}: spec.podCIDRs[${j}]: overlaps the podCIDRs of Node ${other.name} (got "${texts[j]}")`);
              return;
            }
          }
          kept.push({ name: names[i]!, cidrs });
        });
        assert.deepEqual(
          read.map((n) => n.config.name),
          kept.map((k) => k.name),
        );
        assert.deepEqual(
          problems.map((p) => p.message),
          expected,
        );
      }),
      { numRuns: 300 },
    );
  });
});
