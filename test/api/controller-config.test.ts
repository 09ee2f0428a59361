import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadControllerConfig, readControllerConfig } from '../../src/api/controller-config';
import { InputError } from '../../src/errors';
import { formatIp } from '../../src/net/cidr';

const valid = {
  clusterId: 'cluster-b',
  podCIDR: '10.0.0.0/16',
  externalCIDR: '10.200.0.0/24',
  peers: ['cluster-a', 'cluster-c'],
  reflections: [{ to: 'cluster-a', fromPeer: 'cluster-c', podIP: '10.2.1.10' }],
  nodes: [
    { name: 'b-gw', underlayAddress: '192.168.2.1', podCIDRs: ['10.0.0.0/24'], publicAddress: '203.0.113.2' },
    { name: 'b-w1', underlayAddress: '192.168.2.2', podCIDRs: ['10.0.1.0/24'] },
  ],
};

/** Parses `valid` with `change` applied and expects an InputError on `field` whose message contains `text`. */
function refused(change: (doc: Record<string, unknown>) => void, field: string, text: string): void {
  const doc = structuredClone(valid) as unknown as Record<string, unknown>;
  change(doc);
  assert.throws(
    () => readControllerConfig(doc),
    (err: unknown) => err instanceof InputError && err.field === field && err.message.includes(text),
    `expected an InputError on ${field} mentioning ${text}`,
  );
}

describe('controller configuration', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'strait-config-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('reads the YAML of docs/lab.md, with defaults for what is left out', () => {
    const path = join(dir, 'b.yaml');
    writeFileSync(
      path,
      [
        'clusterId: cluster-b',
        'podCIDR: 10.0.0.0/16',
        'externalCIDR: 10.200.0.0/24',
        'serviceCIDR: 10.96.0.0/16',
        'peers: [cluster-a, cluster-c]',
        'reflections:',
        "  - { to: cluster-a, fromPeer: cluster-c, podIP: 10.2.1.10 }   # podIP in fromPeer's view",
        'nodes:',
        '  - { name: b-gw, underlayAddress: 192.168.2.1, podCIDRs: [10.0.0.0/24], publicAddress: 203.0.113.2 }',
        'interval: 0.5',
      ].join('\n'),
    );
    const config = loadControllerConfig(path);
    assert.equal(config.clusterId, 'cluster-b');
    assert.equal(config.runDir, '/run/strait/lab', 'the documented default');
    assert.deepEqual(config.home, { podCIDR: '10.0.0.0/16', externalCIDR: '10.200.0.0/24', serviceCIDR: '10.96.0.0/16' });
    assert.deepEqual(config.peers, ['cluster-a', 'cluster-c']);
    assert.deepEqual(config.encryptedPeers, []);
    assert.deepEqual(config.reflections, [{ to: 'cluster-a', fromPeer: 'cluster-c', podIP: '10.2.1.10' }]);
    assert.deepEqual(config.nodes, [
      {
        name: 'b-gw',
        underlayAddress: { family: 4, value: 0xc0a80201n },
        podCIDRs: [{ family: 4, base: 0x0a000000n, prefix: 24 }],
        publicAddress: { family: 4, value: 0xcb007102n },
        gatewayCandidate: true,
      },
    ]);
    assert.equal(config.heartbeatTimeout, 1.5);
    assert.equal(config.interval, 0.5);
  });

  it('reads a peer given as {clusterId, encryption}, and which peerings are encrypted', () => {
    const path = join(dir, 'enc.yaml');
    writeFileSync(
      path,
      [
        'clusterId: cluster-b',
        'podCIDR: 10.0.0.0/16',
        'externalCIDR: 10.200.0.0/24',
        'peers: [{ clusterId: cluster-a, encryption: ipsec }, { clusterId: cluster-c, encryption: none }, cluster-d]',
        'nodes: [{ name: b-gw, underlayAddress: 192.168.2.1 }]',
      ].join('\n'),
    );
    const config = loadControllerConfig(path);
    assert.deepEqual(config.peers, ['cluster-a', 'cluster-c', 'cluster-d']);
    assert.deepEqual(config.encryptedPeers, ['cluster-a']);
  });

  it('reads a dual-stack cluster: the secondary family beside the primary, nodes with pod networks of both', () => {
    const path = join(dir, 'dual.yaml');
    writeFileSync(
      path,
      [
        'clusterId: cluster-b',
        'podCIDR: 10.0.0.0/16',
        'externalCIDR: 10.200.0.0/24',
        'secondary: { podCIDR: "fd00:b::/48", externalCIDR: "fd00:bb::/120", serviceCIDR: "fd00:bc::/112" }',
        'nodes: [{ name: b-gw, underlayAddress: 192.168.2.1, podCIDRs: [10.0.1.0/24, "fd00:b:0:1::/64"] }]',
      ].join('\n'),
    );
    const config = loadControllerConfig(path);
    assert.deepEqual(config.home.secondary, { podCIDR: 'fd00:b::/48', externalCIDR: 'fd00:bb::/120', serviceCIDR: 'fd00:bc::/112' });
    assert.deepEqual(
      config.nodes[0]!.podCIDRs.map((c) => c.family),
      [4, 6],
    );
  });

  it('reads an IPv6-only cluster and an IPv6-first dual-stack one, over an IPv4 or an IPv6 underlay', () => {
    for (const [name, secondary] of [
      ['six.yaml', undefined],
      ['six-first.yaml', 'secondary: { podCIDR: 10.0.0.0/16, externalCIDR: 10.200.0.0/24 }'],
    ] as const) {
      const path = join(dir, name);
      writeFileSync(
        path,
        [
          'clusterId: cluster-b',
          'podCIDR: "fd00:b::/48"',
          'externalCIDR: "fd00:bb::/120"',
          ...(secondary ? [secondary] : []),
          'nodes: [{ name: b-gw, underlayAddress: 192.168.2.1, podCIDRs: ["fd00:b:0:1::/64"] }]',
        ].join('\n'),
      );
      const config = loadControllerConfig(path);
      assert.equal(config.home.podCIDR, 'fd00:b::/48', name);
      assert.equal(config.home.secondary?.podCIDR, secondary && '10.0.0.0/16', name);
    }
    const path = join(dir, 'six-under.yaml');
    writeFileSync(
      path,
      [
        'clusterId: cluster-b',
        'podCIDR: "fd00:b::/48"',
        'externalCIDR: "fd00:bb::/120"',
        'nodes:',
        '  - { name: b-gw, underlayAddress: "fd00:2::1", publicAddress: "2001:db8::2", podCIDRs: ["fd00:b:0:1::/64"] }',
        '  - { name: b-w1, underlayAddress: "fd00:2::2", podCIDRs: ["fd00:b:0:2::/64"] }',
      ].join('\n'),
    );
    assert.deepEqual(
      loadControllerConfig(path).nodes.map((n) => [formatIp(n.underlayAddress), n.publicAddress && formatIp(n.publicAddress)]),
      [
        ['fd00:2::1', '2001:db8::2'],
        ['fd00:2::2', undefined],
      ],
    );
  });

  it('reads JSON too (a subset of YAML 1.2)', () => {
    const path = join(dir, 'b.json');
    writeFileSync(path, JSON.stringify({ ...valid, runDir: '/tmp/lab', heartbeatTimeout: 3 }));
    const config = loadControllerConfig(path);
    assert.equal(config.runDir, '/tmp/lab');
    assert.equal(config.heartbeatTimeout, 3);
    assert.equal(config.nodes.length, 2);
  });

  it('refuses a file that is missing or not YAML, naming it', () => {
    assert.throws(
      () => loadControllerConfig(join(dir, 'nope.yaml')),
      (err: unknown) => err instanceof InputError && err.field === 'config',
    );
    const path = join(dir, 'bad.yaml');
    writeFileSync(path, 'clusterId: [unclosed');
    assert.throws(
      () => loadControllerConfig(path),
      (err: unknown) => err instanceof InputError && err.field === 'config' && err.message.includes('not valid YAML'),
    );
  });

  it('names the field and value of a bad CIDR', () => {
    refused((d) => (d.podCIDR = '10.0.0.1/16'), 'podCIDR', 'did you mean 10.0.0.0/16');
    refused((d) => (d.externalCIDR = '10.0.5.0/24'), 'externalCIDR', 'overlaps podCIDR 10.0.0.0/16');
    refused((d) => ((d.nodes as { podCIDRs: string[] }[])[1]!.podCIDRs = ['10.0.1.0/33']), 'nodes[1].podCIDRs[0]', 'prefix length');
    refused(
      (d) => ((d.nodes as { podCIDRs: string[] }[])[1]!.podCIDRs = ['10.9.0.0/24']),
      'nodes[1].podCIDRs[0]',
      'not inside the cluster podCIDR',
    );
    refused(
      (d) => ((d.nodes as { podCIDRs: string[] }[])[1]!.podCIDRs = ['10.0.0.128/25']),
      'nodes[1].podCIDRs[0]',
      'overlaps nodes[0].podCIDRs[0]',
    );
    refused((d) => (d.pools = ['10.0.0.0/8', 'nonsense']), 'pools[1]', 'expected a CIDR');
  });

  it('names unknown settings, so a typo is not silently ignored', () => {
    refused((d) => (d.peer = ['cluster-a']), 'peer', 'unknown field');
    refused((d) => ((d.nodes as Record<string, unknown>[])[0]!.podCIDR = '10.0.0.0/24'), 'nodes[0].podCIDR', 'unknown field');
    refused((d) => ((d.reflections as Record<string, unknown>[])[0]!.pod = 'x'), 'reflections[0].pod', 'unknown field');
  });

  it('takes the nodes from the file standalone, and refuses them on Kubernetes, where the Node objects say', () => {
    assert.throws(
      () => readControllerConfig({ clusterId: 'cluster-b', podCIDR: '10.0.0.0/16', externalCIDR: '10.200.0.0/24' }),
      (err: unknown) =>
        err instanceof InputError &&
        err.field === 'nodes' &&
        /is required: the standalone controller has no Node objects to read/.test(err.message),
    );
    const onKubernetes = readControllerConfig(
      { clusterId: 'cluster-b', podCIDR: '10.0.0.0/16', externalCIDR: '10.200.0.0/24', peers: ['cluster-a'] },
      'kubernetes',
    );
    assert.deepEqual(onKubernetes.nodes, []);
    assert.deepEqual(onKubernetes.peers, ['cluster-a']);
    assert.throws(
      () =>
        readControllerConfig(
          {
            clusterId: 'cluster-b',
            podCIDR: '10.0.0.0/16',
            externalCIDR: '10.200.0.0/24',
            nodes: [{ name: 'n1', underlayAddress: '192.0.2.1' }],
          },
          'kubernetes',
        ),
      (err: unknown) =>
        err instanceof InputError &&
        err.message === 'nodes: come from the cluster\'s Node objects on Kubernetes; remove them (got "1 nodes")',
    );
  });

  it('names bad ids, peers, reflections, nodes and durations', () => {
    refused((d) => (d.clusterId = 'Cluster_B'), 'clusterId', 'cluster id');
    refused((d) => (d.peers = ['cluster-a', 'cluster-b']), 'peers[1]', 'does not peer with itself');
    refused((d) => (d.peers = ['cluster-a', 'cluster-c', 'cluster-a']), 'peers[2]', 'listed twice');
    refused(
      (d) => (d.peers = ['cluster-a', { clusterId: 'cluster-c', encryption: 'wireguard' }]),
      'peers[1].encryption',
      'must be one of none, ipsec',
    );
    refused((d) => (d.peers = ['cluster-a', { clusterId: 'cluster-c', key: 'x' }]), 'peers[1].key', 'unknown field');
    refused((d) => (d.peers = ['cluster-a', { clusterId: 'Cluster_C' }]), 'peers[1].clusterId', 'cluster id');
    refused((d) => (d.peers = ['cluster-a']), 'reflections[0].fromPeer', 'not one of our peers');
    refused((d) => ((d.reflections as Record<string, unknown>[])[0]!.to = 'cluster-c'), 'reflections[0].to', 'equals fromPeer');
    refused((d) => ((d.reflections as Record<string, unknown>[])[0]!.podIP = '10.2.1.300'), 'reflections[0].podIP', 'not an IPv4');
    refused((d) => (d.nodes = []), 'nodes', 'expected at least 1 item');
    refused((d) => ((d.nodes as Record<string, unknown>[])[1]!.name = 'b-gw'), 'nodes[1].name', 'repeats nodes[0].name');
    refused((d) => ((d.nodes as Record<string, unknown>[])[1]!.name = '../etc'), 'nodes[1].name', 'DNS-1123');
    refused((d) => ((d.nodes as Record<string, unknown>[])[1]!.underlayAddress = '192.168.2'), 'nodes[1].underlayAddress', 'not an IPv4');
    refused((d) => ((d.nodes as Record<string, unknown>[])[1]!.publicAddress = 'example.com'), 'nodes[1].publicAddress', 'not an IPv4');
    refused(
      (d) => (d.nodes as Record<string, unknown>[]).forEach((n) => (n.gatewayCandidate = false)),
      'nodes[*].gatewayCandidate',
      'at least one must be a candidate',
    );
    refused(
      (d) => ((d.nodes as Record<string, unknown>[])[1]!.gatewayCandidate = 'yes'),
      'nodes[1].gatewayCandidate',
      'expected a boolean',
    );
    refused((d) => (d.heartbeatTimeout = 0), 'heartbeatTimeout', 'from 0.05 to 3600');
    refused((d) => (d.interval = '1s'), 'interval', 'expected a number');
    refused((d) => (d.interval = 7200), 'interval', 'from 0.05 to 3600');
    // Issue 24: a controller at interval 1e-9 took 40% of a core.
    refused((d) => (d.interval = 1e-9), 'interval', 'from 0.05 to 3600');
    refused((d) => (d.tunnelMTU = 1279), 'tunnelMTU', 'from 1280 to 65535');
    refused((d) => (d.tunnelMTU = 65536), 'tunnelMTU', 'from 1280 to 65535');
    refused((d) => (d.tunnelMTU = 1400.5), 'tunnelMTU', 'a whole number');
  });

  it('refuses what every agent would refuse in its spec: another family, a special block, a shared underlay address (issue 24)', () => {
    const node = (i: number) => (d: Record<string, unknown>) => (d.nodes as Record<string, unknown>[])[i]!;
    refused((d) => (d.externalCIDR = 'fd00::/120'), 'externalCIDR', 'must be IPv4, as podCIDR');
    refused((d) => (d.podCIDR = 'fd00::/48'), 'externalCIDR', 'must be IPv6, as podCIDR');
    refused((d) => (d.serviceCIDR = 'fd00:1::/112'), 'serviceCIDR', 'must be IPv4, as podCIDR');
    // Dual-stack (docs/dual-stack.md): the secondary family is the other one, each network of its family.
    refused(
      (d) => (d.secondary = { podCIDR: '10.9.0.0/16', externalCIDR: '10.10.0.0/24' }),
      'secondary.podCIDR',
      "is IPv4, as podCIDR 10.0.0.0/16 is: a secondary holds the other IP family's networks",
    );
    refused(
      (d) => (d.secondary = { podCIDR: 'fd00:a::/48', externalCIDR: '10.10.0.0/24' }),
      'secondary.externalCIDR',
      'must be IPv6, as secondary.podCIDR',
    );
    refused((d) => (d.secondary = { podCIDR: 'ff00::/48', externalCIDR: 'fd00:b::/120' }), 'secondary.podCIDR', 'multicast');
    refused(
      (d) => (d.pools = ['10.0.0.0/8']) && (d.secondary = { podCIDR: 'fd00:a::/48', externalCIDR: 'fd00:b::/120' }),
      'pools',
      'has no IPv6 pool',
    );
    refused(
      (d) => {
        d.secondary = { podCIDR: 'fd00:a::/48', externalCIDR: 'fd00:b::/120' };
        node(0)(d).podCIDRs = ['fd00:c::/64'];
      },
      'nodes[0].podCIDRs[0]',
      'is not inside the cluster podCIDR',
    );
    refused((d) => (node(1)(d).underlayAddress = '0.0.0.0'), 'nodes[1].underlayAddress', 'is in 0.0.0.0/8, "this network"');
    // A cluster's tunnels run over one family (issue 29).
    refused(
      (d) => (node(1)(d).underlayAddress = 'fd00::2'),
      'nodes[1].underlayAddress',
      "is IPv6, not the family of nodes[0].underlayAddress 192.168.2.1 (IPv4): a tunnel's two ends are of one family",
    );
    refused(
      (d) => (node(0)(d).publicAddress = '2001:db8::1'),
      'nodes[0].publicAddress',
      'is IPv6, not the family of nodes[0].underlayAddress',
    );
    refused((d) => (node(1)(d).underlayAddress = 'fe80::2'), 'nodes[1].underlayAddress', 'is IPv6 link-local (fe80::/10)');
    refused((d) => (node(1)(d).underlayAddress = '192.168.2.1'), 'nodes[1].underlayAddress', 'is also nodes[0].underlayAddress');
    refused((d) => (node(0)(d).publicAddress = '255.255.255.255'), 'nodes[0].publicAddress', 'the limited broadcast address');
    refused((d) => (node(0)(d).publicAddress = '224.0.0.1'), 'nodes[0].publicAddress', 'multicast');
    refused((d) => ((d.reflections as Record<string, unknown>[])[0]!.podIP = 'fd00::10'), 'reflections[0].podIP', 'is IPv6');
    refused((d) => (d.podCIDR = '127.0.0.0/16'), 'podCIDR', 'overlaps 127.0.0.0/8, loopback');
  });

  it('reads the tunnel MTU override, and leaves it unset when absent (each node derives its own)', () => {
    const path = join(dir, 'mtu.json');
    writeFileSync(path, JSON.stringify({ ...valid, tunnelMTU: 1400 }));
    assert.equal(loadControllerConfig(path).tunnelMTU, 1400);
    writeFileSync(path, JSON.stringify(valid));
    assert.equal('tunnelMTU' in loadControllerConfig(path), false);
  });
});
