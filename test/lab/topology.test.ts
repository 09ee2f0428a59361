import assert from 'node:assert/strict';
import { parseCidr } from '../../src/net/cidr';
import { join } from 'node:path';
import { parse } from 'yaml';
import { readFileSync } from 'node:fs';
import { InputError } from '../../src/errors';
import { type ClusterView, planChecks } from '../../lab/src/checks';
import { agentDataplane } from '../../lab/src/lab';
import { defaultTopologyPath } from '../../lab/src/names';
import { type LabTopology, findPod, isEncrypted, loadTopology, parseTopology } from '../../lab/src/topology';
import { podNetworkConfig } from '../../lab/src/pod-network';
import type { NodeDataplaneSpec } from '../../src/nodespec/spec';

const doc = () => parse(readFileSync(defaultTopologyPath, 'utf8')) as Record<string, any>;

describe('lab topology', () => {
  it('derives pod, underlay and public addresses from the default topology', () => {
    const t = loadTopology(defaultTopologyPath);
    assert.deepEqual(
      t.clusters.map((c) => c.id),
      ['cluster-a', 'cluster-b', 'cluster-c'],
    );
    assert.deepEqual(t.clusters[2]!.nodes[1], {
      name: 'c-w1',
      podCIDR: '172.20.1.0/24',
      underlayAddress: '192.168.3.2',
      publicAddress: '203.0.113.32',
      pods: [{ name: 'c-w1-p', ip: '172.20.1.10' }],
    });
    assert.deepEqual(t.reflections, [{ hub: 'cluster-b', to: 'cluster-a', pod: 'c-w1-p' }]);
    assert.deepEqual(t.encryptedPeerings, []);
    const distinct = loadTopology(join(defaultTopologyPath, '..', 'distinct.yaml'));
    assert.equal(distinct.clusters.length, 3);
  });

  it('gives every link MTU 1500 unless the topology says otherwise, as the jumbo topology does', () => {
    assert.equal(loadTopology(defaultTopologyPath).mtu, 1500);
    const jumbo = loadTopology(join(defaultTopologyPath, '..', 'jumbo.yaml'));
    assert.equal(jumbo.mtu, 9000);
    assert.deepEqual([jumbo.clusters.map((c) => c.id), jumbo.peerings], [['cluster-a', 'cluster-b'], [['cluster-a', 'cluster-b']]]);
    for (const mtu of [1280, 9000]) assert.equal(parseTopology({ ...doc(), mtu }).mtu, mtu);
  });

  it('reads encrypted peerings and pinned cluster dataplanes, and what the lab runs for them', () => {
    const t = loadTopology(join(defaultTopologyPath, '..', 'encrypted.yaml'));
    assert.deepEqual(t.peerings, [
      ['cluster-a', 'cluster-b'],
      ['cluster-b', 'cluster-c'],
    ]);
    assert.deepEqual(t.encryptedPeerings, [['cluster-a', 'cluster-b']]);
    assert.ok(isEncrypted(t, 'cluster-b', 'cluster-a') && !isEncrypted(t, 'cluster-b', 'cluster-c'));
    assert.deepEqual(
      t.clusters.map((c) => agentDataplane(t, c.id, 'auto')),
      ['kernel', 'kernel', 'auto'],
    );
    assert.throws(
      () => agentDataplane(t, 'cluster-a', 'ebpf'),
      (e: unknown) => e instanceof InputError && e.field === '--dataplane',
    );
    const d = doc();
    d.clusters[2].dataplane = 'kernel';
    const pinned = parseTopology(d);
    assert.deepEqual(
      pinned.clusters.map((c) => agentDataplane(pinned, c.id, 'ebpf')),
      ['ebpf', 'ebpf', 'kernel'],
    );
  });

  it('refuses bad topologies with the field and the value', () => {
    const cases: [(d: Record<string, any>) => void, RegExp][] = [
      [
        (d) => {
          d.clusters[0].podCIDR = '10.0.0.1/16';
        },
        /clusters\[0\]\.podCIDR/,
      ],
      [
        (d) => {
          d.clusters[0].nodes[0].podCIDR = '10.9.0.0/24';
        },
        /clusters\[0\]\.nodes\[0\]\.podCIDR: is not inside the cluster's PodCIDR/,
      ],
      [
        (d) => {
          d.clusters[1].underlay = 'fd10:2::/64';
        },
        /clusters\[1\]\.underlay: is IPv6, not the family of public 203\.0\.113\.0\/24: a lab's tunnels run over one family/,
      ],
      [
        (d) => {
          d.clusters[1].nodes[0].name = 'a-gw';
        },
        /clusters\[1\]\.nodes\[0\]\.name: is used twice/,
      ],
      [
        (d) => {
          d.clusters[0].nodes[0].name = 'A_GW';
        },
        /must be 1-11 characters/,
      ],
      [
        (d) => {
          d.peerings[0] = ['cluster-a', 'cluster-x'];
        },
        /peerings\[0\]\[1\]: is not a cluster/,
      ],
      [
        (d) => {
          d.reflections[0].to = 'cluster-c';
        },
        /reflections\[0\]: the hub, the cluster reflected to and the pod's cluster must be three different clusters/,
      ],
      [
        (d) => {
          d.peerings = [d.peerings[0]];
        },
        /reflections\[0\]: the hub cluster-b must be peered with cluster-a and with cluster-c/,
      ],
      [
        (d) => {
          d.reflections[0].pod = 'nope';
        },
        /reflections\[0\]\.pod: is not a pod/,
      ],
      [
        (d) => {
          d.peerings[0] = { between: ['cluster-a', 'cluster-b'], encryption: 'wireguard' };
        },
        /peerings\[0\]\.encryption: must be one of none, ipsec/,
      ],
      [
        (d) => {
          d.peerings[0] = { between: ['cluster-a', 'cluster-b'], cipher: 'aes' };
        },
        /peerings\[0\]\.cipher: unknown field/,
      ],
      [
        (d) => {
          d.peerings[0] = { between: ['cluster-a'] };
        },
        /peerings\[0\]\.between: expected at least 2 items/,
      ],
      [
        (d) => {
          d.peerings[0] = ['cluster-a', 'cluster-a'];
        },
        /peerings\[0\]: must be two different clusters/,
      ],
      [
        (d) => {
          d.services = [{ name: 'cart', cluster: 'cluster-b', pods: ['a-gw-p'] }];
          for (const c of d.clusters) c.serviceCIDR = '10.96.0.0/16';
        },
        /services\[0\]\.pods\[0\]: is not a pod of cluster cluster-b/,
      ],
      [
        (d) => {
          d.services = [{ name: 'cart', cluster: 'cluster-b', pods: ['b-gw-p'] }];
        },
        /clusters\[0\]\.serviceCIDR: is required where the lab has services/,
      ],
      [
        (d) => {
          d.services = [
            { name: 'cart', cluster: 'cluster-b', pods: ['b-gw-p'] },
            { name: 'cart', namespace: 'default', cluster: 'cluster-b', pods: ['b-w1-p'] },
          ];
          for (const c of d.clusters) c.serviceCIDR = '10.96.0.0/16';
        },
        /services\[1\]: is exported twice by cluster-b/,
      ],
      [
        (d) => {
          d.services = [{ name: 'Cart', cluster: 'cluster-b', pods: ['b-gw-p'] }];
        },
        /services\[0\]\.name/,
      ],
      [
        (d) => {
          d.clusters[0].serviceCIDR = 'fd96::/112';
        },
        /clusters\[0\]\.serviceCIDR: is not of the family of podCIDR/,
      ],
      [
        (d) => {
          d.clusters[1].secondary = { podCIDR: '10.9.0.0/16', externalCIDR: '10.10.0.0/24' };
          for (const n of d.clusters[1].nodes) n.secondaryPodCIDR = '10.9.0.0/24';
        },
        /^clusters\[1\]\.secondary\.podCIDR: is IPv4, as clusters\[1\]\.podCIDR \S+ is: a secondary holds the other IP family's networks/,
      ],
      [
        (d) => {
          d.clusters[0].dataplane = 'xdp';
        },
        /clusters\[0\]\.dataplane: must be one of ebpf, kernel/,
      ],
      [
        (d) => {
          d.mtu = 1279;
        },
        /^mtu: expected a whole number from 1280 to 9000 \(got 1279\)$/,
      ],
      [
        (d) => {
          d.mtu = 9001;
        },
        /^mtu: expected a whole number from 1280 to 9000 \(got 9001\)$/,
      ],
      [
        (d) => {
          d.mtu = 1500.5;
        },
        /^mtu: expected a whole number/,
      ],
      [
        (d) => {
          d.mtu = '9000';
        },
        /^mtu: expected a whole number/,
      ],
    ];
    for (const [mutate, message] of cases) {
      const d = doc();
      mutate(d);
      assert.throws(
        () => parseTopology(d),
        (e: unknown) => e instanceof InputError && message.test(e.message),
        String(message),
      );
    }
    assert.throws(() => loadTopology('/nonexistent.yaml'), /--topology: cannot read/);
  });
});

describe('lab checks', () => {
  const peer = (clusterId: string, remotePodCIDR: string) =>
    ({
      clusterId,
      remotePodCIDR: parseCidr('p', remotePodCIDR),
      remoteExternalCIDR: parseCidr('e', '10.250.0.0/24'),
    }) as NodeDataplaneSpec['peers'][number];
  const view = (gateway: string, peers: NodeDataplaneSpec['peers'], reflections: ClusterView['reflections'] = []): ClusterView => ({
    spec: { peers, activeGateway: { name: gateway } } as NodeDataplaneSpec,
    reflections,
    imports: [],
  });
  // B's gateway is its second node, so the path MTU probes pick its first node's pod.
  const defaultViews = () => ({
    'cluster-a': view('a-gw', [peer('cluster-b', '10.1.0.0/16')]),
    'cluster-b': view(
      'b-w1',
      [peer('cluster-a', '10.1.0.0/16'), peer('cluster-c', '10.2.0.0/20')],
      [{ to: 'cluster-a', fromPeer: 'cluster-c', podIP: '172.20.1.10', endpoint: '10.2.1.10', address: '10.3.0.1' }],
    ),
    // C keeps B's PodCIDR 10.0.0.0/16 as it is: A's pods' own addresses mean B's pods there.
    'cluster-c': view('c-gw', [peer('cluster-b', '10.0.0.0/16')]),
  });
  const byKind = (checks: { kind: string }[]) =>
    checks.reduce<Record<string, number>>((n, c) => ({ ...n, [c.kind]: (n[c.kind] ?? 0) + 1 }), {});

  it("dials every peered pod at its address in the caller's view, the hub path, and an unpeered pair", () => {
    const checks = planChecks(loadTopology(defaultTopologyPath), defaultViews());
    // Peered: 2 peerings x 2 directions x 2 x 2 pods x 5 probes, and 2 path MTU probes each way per
    // peering (8); intra: 3 clusters x 2 ordered pairs of nodes x 5; the hub from A's 2 pods x 4 (no
    // fragments); one unpeered pair.
    assert.deepEqual(byKind(checks), { peered: 88, intra: 30, hub: 8, 'not-peered': 1 });
    assert.equal(checks.length, 127);
    assert.equal(checks.filter((c) => c.kind === 'peered' && !c.probe.startsWith('pmtu-')).length, 80);
    assert.deepEqual(
      checks.filter((c) => c.kind === 'hub' && c.from === 'a-w1-p').map((c) => c.probe),
      ['icmp', 'tcp', 'udp', 'unreach'],
    );
    assert.deepEqual(
      checks.filter((c) => c.kind === 'not-peered').map((c) => [c.from, c.address, c.expect]),
      [['a-gw-p', '172.20.0.10', 'blocked']],
      'C -> A is skipped: every A pod address is a B pod in C',
    );
    const find = (from: string, to: string) => checks.find((c) => c.from === from && c.to === to && c.kind !== 'not-peered')!.address;
    assert.equal(find('a-w1-p', 'b-w1-p'), '10.1.1.10', "B's pod in A's view of B's PodCIDR");
    assert.equal(find('b-gw-p', 'c-w1-p'), '10.2.1.10', "C's pod (172.20.1.10 in 172.20.0.0/20) in B's /20 view");
    assert.equal(find('c-gw-p', 'b-gw-p'), '10.0.0.10');
    assert.equal(find('a-gw-p', 'c-w1-p'), '10.3.0.1', 'the hub path dials the reflected address');
  });

  it("plans every check in both families of a dual-stack peering, each dialled at its family's view", () => {
    const topology = loadTopology(join(defaultTopologyPath, '..', 'dual-stack.yaml'));
    assert.deepEqual(findPod(topology, 'c-w1-p').pod, { name: 'c-w1-p', ip: '172.20.1.10', secondaryIp: 'fd00:a::1:0:0:a' });
    const dual = (clusterId: string, v4: string, v6: string) =>
      ({
        ...peer(clusterId, v4),
        secondary: { remotePodCIDR: parseCidr('p', v6), remoteExternalCIDR: parseCidr('e', 'fd00:fe::/120') },
      }) as NodeDataplaneSpec['peers'][number];
    const views = {
      'cluster-a': view('a-gw', [dual('cluster-b', '10.1.0.0/16', 'fd00::/56')]),
      'cluster-b': view('b-w1', [dual('cluster-a', '10.1.0.0/16', 'fd00::/48'), dual('cluster-c', '10.2.0.0/20', 'fd00:1::/64')]),
      'cluster-c': view('c-gw', [dual('cluster-b', '10.0.0.0/16', 'fd00::/56')]),
    };
    const checks = planChecks(topology, views);
    // Twice the default lab's peered and intra checks (no hub here); one unpeered pair per family.
    assert.deepEqual(byKind(checks), { peered: 176, intra: 60, 'not-peered': 2 });
    const dialled = (from: string, to: string) =>
      checks.filter((c) => c.from === from && c.to === to && c.probe === 'icmp' && c.kind === 'peered').map((c) => c.address);
    assert.deepEqual(dialled('b-gw-p', 'c-w1-p'), ['10.2.1.10', 'fd00:1::1:0:0:a'], "C's /64 in B's view of it, host bits kept");
    assert.deepEqual(dialled('a-w1-p', 'b-w1-p'), ['10.1.1.10', 'fd00:0:0:1::a']);
    assert.deepEqual(
      checks.filter((c) => c.probe === 'pmtu-icmp' && c.from === 'a-w1-p').map((c) => c.address),
      ['10.1.0.10', 'fd00::a'],
    );
  });

  it('gives each pod an address of each family its cluster has, IPv6 first where the cluster is, and the CNI a range per family', () => {
    const mixed = loadTopology(join(defaultTopologyPath, '..', 'ipv6-mixed.yaml'));
    assert.deepEqual(findPod(mixed, 'a-w1-p').pod, { name: 'a-w1-p', ip: '10.0.1.10', secondaryIp: 'fd00:a:0:1::a' });
    assert.deepEqual(findPod(mixed, 'b-w1-p').pod, { name: 'b-w1-p', ip: 'fd00:a:0:1::a' });
    assert.deepEqual(findPod(mixed, 'c-w1-p').pod, { name: 'c-w1-p', ip: 'fd00:a::1:0:0:a', secondaryIp: '10.0.1.10' });
    const ipam = (node: string) => podNetworkConfig(findPod(mixed, `${node}-p`).node, 1500, '/leases').ipam as { routes: unknown };
    assert.deepEqual(ipam('c-w1'), {
      type: 'host-local',
      ranges: [[{ subnet: 'fd00:a:0:0:1::/80' }], [{ subnet: '10.0.1.0/24' }]],
      routes: [{ dst: '::/0' }, { dst: '0.0.0.0/0' }],
      dataDir: '/leases',
    });
    assert.deepEqual(ipam('b-w1').routes, [{ dst: '::/0' }]);
    assert.deepEqual(
      loadTopology(join(defaultTopologyPath, '..', 'ipv6-only.yaml')).clusters.map((c) => c.podCIDR),
      ['fd00:a::/48', 'fd00:a::/56', 'fd00:a::/64'],
    );
  });

  it('gives the nodes of an IPv6 underlay lab IPv6 addresses, and its fragmented echoes time to learn the path MTU (issue 29)', () => {
    const six = loadTopology(join(defaultTopologyPath, '..', 'ipv6-underlay.yaml'));
    assert.deepEqual(
      six.clusters.map((c) => c.nodes.map((n) => [n.underlayAddress, n.publicAddress])),
      [
        [
          ['fd10:1::1', '2001:db8:113::b'],
          ['fd10:1::2', '2001:db8:113::c'],
        ],
        [
          ['fd10:2::1', '2001:db8:113::15'],
          ['fd10:2::2', '2001:db8:113::16'],
        ],
        [
          ['fd10:3::1', '2001:db8:113::1f'],
          ['fd10:3::2', '2001:db8:113::20'],
        ],
      ],
    );
    // The default lab's checks with its tunnels over IPv6: every peered frag probe (IPv4 ones too) learns the path MTU, nothing else.
    const topology = loadTopology(defaultTopologyPath);
    const learning = (t: LabTopology) => planChecks(t, defaultViews()).filter((c) => c.learnsPathMtu);
    assert.deepEqual(learning(topology), []);
    const overIpv6 = planChecks({ ...topology, public: '2001:db8:113::/64' }, defaultViews());
    assert.deepEqual(
      overIpv6.filter((c) => c.learnsPathMtu),
      overIpv6.filter((c) => c.probe === 'frag' && c.kind === 'peered'),
    );
    assert.ok(overIpv6.some((c) => c.learnsPathMtu));
  });

  it("probes the path MTU once each way per peering, between pods off the gateways, at the pods' MTU", () => {
    const checks = planChecks(loadTopology(defaultTopologyPath), defaultViews());
    const pmtu = checks.filter((c) => c.probe.startsWith('pmtu-')).map((c) => [c.kind, c.from, c.to, c.address, c.probe, c.mtu, c.expect]);
    assert.deepEqual(pmtu, [
      ['peered', 'a-w1-p', 'b-gw-p', '10.1.0.10', 'pmtu-tcp', 1500, 'reach'],
      ['peered', 'a-w1-p', 'b-gw-p', '10.1.0.10', 'pmtu-icmp', 1500, 'reach'],
      ['peered', 'b-gw-p', 'a-w1-p', '10.1.1.10', 'pmtu-tcp', 1500, 'reach'],
      ['peered', 'b-gw-p', 'a-w1-p', '10.1.1.10', 'pmtu-icmp', 1500, 'reach'],
      ['peered', 'b-gw-p', 'c-w1-p', '10.2.1.10', 'pmtu-tcp', 1500, 'reach'],
      ['peered', 'b-gw-p', 'c-w1-p', '10.2.1.10', 'pmtu-icmp', 1500, 'reach'],
      ['peered', 'c-w1-p', 'b-gw-p', '10.0.0.10', 'pmtu-tcp', 1500, 'reach'],
      ['peered', 'c-w1-p', 'b-gw-p', '10.0.0.10', 'pmtu-icmp', 1500, 'reach'],
    ]);
    const jumbo = planChecks(loadTopology(join(defaultTopologyPath, '..', 'jumbo.yaml')), {
      'cluster-a': view('a-gw', [peer('cluster-b', '10.1.0.0/16')]),
      'cluster-b': view('b-gw', [peer('cluster-a', '10.1.0.0/16')]),
    });
    // 1 peering x 2 directions x 2 x 2 pods x 5 probes + 4 path MTU probes; 2 clusters x 2 x 5.
    assert.deepEqual(byKind(jumbo), { peered: 44, intra: 20 });
    assert.deepEqual(
      jumbo.filter((c) => c.probe === 'pmtu-icmp').map((c) => [c.from, c.to, c.mtu]),
      [
        ['a-w1-p', 'b-w1-p', 9000],
        ['b-w1-p', 'a-w1-p', 9000],
      ],
    );
  });

  it('checks every pod against every pod on another node of its cluster, by its own address', () => {
    const intra = planChecks(loadTopology(defaultTopologyPath), defaultViews()).filter((c) => c.kind === 'intra');
    const pairs = [...new Set(intra.map((c) => `${c.from} -> ${c.to} ${c.address} ${c.expect}`))];
    assert.deepEqual(pairs, [
      'a-gw-p -> a-w1-p 10.0.1.10 reach',
      'a-w1-p -> a-gw-p 10.0.0.10 reach',
      'b-gw-p -> b-w1-p 10.0.1.10 reach',
      'b-w1-p -> b-gw-p 10.0.0.10 reach',
      'c-gw-p -> c-w1-p 172.20.1.10 reach',
      'c-w1-p -> c-gw-p 172.20.0.10 reach',
    ]);
    assert.deepEqual(
      intra.filter((c) => c.from === 'c-w1-p').map((c) => c.probe),
      ['icmp', 'tcp', 'udp', 'frag', 'unreach'],
    );
  });
});
