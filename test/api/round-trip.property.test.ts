/**
 * Property: what a resource's reader accepts round-trips through the typed form. A document made from
 * any valid typed spec reads back to the same typed spec, and writing a read document gives the
 * canonical text, which reads to the same values again (IPv6 in any notation, MACs in any case).
 */
import assert from 'node:assert/strict';
import fc from 'fast-check';
import {
  readNodeDataplaneSpec,
  writeClusterNodes,
  writeGateways,
  writeNodeDataplaneObjectSpec,
  writeNodeDataplaneSpec,
} from '../../src/api/node-dataplane';
import { withGateways } from '../../src/k8s/gateway-view';
import { withNodeList } from '../../src/k8s/node-list';
import { readTunnelEndpoint, writeTunnelEndpoint } from '../../src/api/tunnel-endpoint';
import { type Cidr, type Ip, cidrsOverlap, containsIp, formatIp } from '../../src/net/cidr';
import type { NodeDataplaneSpec } from '../../src/nodespec/spec';

const v4 = (a: number, b: number, c: number, d: number): bigint => BigInt(((a << 24) >>> 0) + (b << 16) + (c << 8) + d);
const cidr4 = (base: bigint, prefix: number): Cidr => ({ family: 4, base: base & ~((1n << BigInt(32 - prefix)) - 1n), prefix });
const ipv4 = fc.integer({ min: 1, max: 0xdfffffff }).map((n): Ip => ({ family: 4, value: BigInt(n) }));
const ipv6 = fc.bigInt({ min: 1n, max: (1n << 128n) - 1n }).map((value): Ip => ({ family: 6, value }));
const anyIp = fc.oneof(ipv4, ipv6);
const cidr6 = (base: bigint, prefix: number): Cidr => ({ family: 6, base: base & ~((1n << BigInt(128 - prefix)) - 1n), prefix });
/** fdXX:: as a 128-bit value: the secondary family's networks sit in fd00::/8. */
const v6 = (first: number, second = 0): bigint => (BigInt(first) << 112n) | (BigInt(second) << 96n);
const clusterId = fc.stringMatching(/^[a-z][a-z0-9-]{0,10}[a-z0-9]$/);
const mac = fc
  .array(fc.integer({ min: 0, max: 255 }), { minLength: 6, maxLength: 6 })
  .map((b) => [b[0]! & 0xfe, ...b.slice(1)].map((x) => x.toString(16).padStart(2, '0')).join(':'));

/**
 * A valid spec by construction: our networks in 10.0/8, each peer's remote networks in its own /15 of
 * 10.128/9, its views of us of our sizes, mappings inside our ExternalCIDR (not the transit address).
 */
const specs: fc.Arbitrary<NodeDataplaneSpec> = fc
  .record({
    podPrefix: fc.integer({ min: 12, max: 24 }),
    extPrefix: fc.integer({ min: 20, max: 28 }),
    peers: fc.uniqueArray(
      fc.record({
        clusterId,
        peerId: fc.integer({ min: 1, max: 0xffffffff }),
        podPrefix: fc.integer({ min: 16, max: 24 }),
        extPrefix: fc.integer({ min: 16, max: 26 }),
        address: anyIp,
        port: fc.integer({ min: 1, max: 65535 }),
        ipsec: fc.boolean(),
        dualStack: fc.boolean(),
      }),
      { maxLength: 5, selector: (p) => p.clusterId },
    ),
    mappings: fc.uniqueArray(fc.record({ offset: fc.integer({ min: 1, max: 8 }), endpoint: ipv4 }), {
      maxLength: 6,
      selector: (m) => m.offset,
    }),
    /** The secondary (IPv6) family: its prefix lengths and mappings, or none (single-stack). */
    secondary: fc.option(
      fc.record({
        podPrefix: fc.integer({ min: 40, max: 64 }),
        extPrefix: fc.integer({ min: 96, max: 120 }),
        mappings: fc.uniqueArray(fc.record({ offset: fc.integer({ min: 1, max: 8 }), endpoint: ipv6 }), {
          maxLength: 3,
          selector: (m) => m.offset,
        }),
      }),
      { nil: undefined },
    ),
    nodes: fc.uniqueArray(
      fc.record({
        name: fc.stringMatching(/^[a-z][a-z0-9-]{0,6}[a-z0-9](\.[a-z][a-z0-9]{0,4})?$/),
        underlay: anyIp,
        podCIDRs: fc.array(fc.integer({ min: 0, max: 255 }), { maxLength: 3 }),
      }),
      { minLength: 1, maxLength: 4, selector: (n) => n.name },
    ),
    publicAddress: fc.option(anyIp, { nil: undefined }),
    role: fc.constantFrom('gateway' as const, 'worker' as const),
    gatewayCandidate: fc.boolean(),
    vni: fc.integer({ min: 0, max: 0xffffff }),
    mac,
  })
  .filter((r) => new Set(r.peers.map((p) => p.peerId)).size === r.peers.length)
  .map((r): NodeDataplaneSpec => {
    const podCIDR = cidr4(v4(10, 0, 0, 0), r.podPrefix);
    const externalCIDR = cidr4(v4(10, 64, 0, 0), r.extPrefix);
    const size = 1n << BigInt(32 - r.extPrefix);
    const six = r.secondary;
    const secondary = six && {
      podCIDR: cidr6(v6(0xfd00, 0x0a00), six.podPrefix),
      externalCIDR: cidr6(v6(0xfd00, 0x0b00), six.extPrefix),
      transitAddress: { family: 6 as const, value: v6(0xfd00, 0x0b00) + 1n },
    };
    const [self, ...others] = r.nodes;
    // The role follows from the active gateway (the reader refuses a role that does not).
    const gateway = r.role === 'gateway' ? self : (others[0] ?? self);
    return {
      clusterId: 'home',
      podCIDR,
      externalCIDR,
      transitAddress: { family: 4, value: externalCIDR.base + size - 2n },
      ...(secondary ? { secondary } : {}),
      node: {
        name: self!.name,
        role: gateway === self ? 'gateway' : 'worker',
        underlayAddress: self!.underlay,
        ...(r.publicAddress ? { publicAddress: r.publicAddress } : {}),
        gatewayCandidate: r.gatewayCandidate,
      },
      activeGateway: { name: gateway!.name, underlayAddress: gateway!.underlay },
      // Every other node a standby, in the order generated.
      standbyGateways: r.nodes.map((n) => n.name).filter((n) => n !== gateway!.name),
      overlay: { vni: r.vni, port: 4789, mac: r.mac },
      peers: r.peers.map((p, i) => ({
        clusterId: p.clusterId,
        peerId: p.peerId,
        remotePodCIDR: cidr4(v4(10, 128 + 2 * i, 0, 0), p.podPrefix),
        remoteExternalCIDR: cidr4(v4(10, 129 + 2 * i, 0, 0), p.extPrefix),
        localNATPodCIDR: cidr4(v4(172, 16 + i, 0, 0), r.podPrefix),
        localNATExternalCIDR: cidr4(v4(100, 64 + i, 0, 0), r.extPrefix),
        ...(six && p.dualStack
          ? {
              secondary: {
                remotePodCIDR: cidr6(v6(0xfd10 + i), 48),
                remoteExternalCIDR: cidr6(v6(0xfd20 + i), 100),
                localNATPodCIDR: cidr6(v6(0xfd30 + i), six.podPrefix),
                localNATExternalCIDR: cidr6(v6(0xfd40 + i), six.extPrefix),
              },
            }
          : {}),
        endpoint: { address: p.address, port: p.port, standbyAddresses: i % 2 === 0 ? [] : [r.nodes[0]!.underlay] },
        transport: p.ipsec ? 'ipsec' : 'vxlan',
      })),
      natMappings: [
        ...r.mappings.map((m) => ({
          externalAddress: { family: 4 as const, value: externalCIDR.base + BigInt(m.offset) },
          endpointAddress: m.endpoint,
        })),
        ...(secondary && six
          ? six.mappings.map((m) => ({
              externalAddress: { family: 6 as const, value: secondary.externalCIDR.base + 1n + BigInt(m.offset) },
              endpointAddress: m.endpoint,
            }))
          : []),
      ],
      nodes: r.nodes.map((n, i) => ({
        name: n.name,
        underlayAddress: n.underlay,
        podCIDRs: [
          ...n.podCIDRs.map((k) => cidr4(v4(10, 0, 0, 0) + BigInt((k * r.nodes.length + i) << 8), 24)),
          ...(secondary ? [cidr6(secondary.podCIDR.base + (BigInt(i) << 64n), 64)] : []),
        ],
      })),
    };
  })
  // The reader's rules for the node list: pod CIDRs inside the cluster's and disjoint across nodes.
  .filter((s) => {
    const all = s.nodes.flatMap((n) => n.podCIDRs.map((c) => ({ node: n.name, c })));
    const podCIDRs = [s.podCIDR, ...(s.secondary ? [s.secondary.podCIDR] : [])];
    return all.every(
      ({ node, c }) =>
        podCIDRs.some((p) => c.prefix >= p.prefix && containsIp(p, { family: c.family, value: c.base })) &&
        all.every((o) => o.node === node || !cidrsOverlap(o.c, c)),
    );
  });

/** The same document with IPv6 addresses spelled out in full and upper case, and the MAC in upper case. */
function respelled(doc: ReturnType<typeof writeNodeDataplaneSpec>): unknown {
  const full = (text: string) => (text.includes(':') ? formatIp6Long(text) : text);
  return {
    ...doc,
    overlay: { ...doc.overlay, mac: doc.overlay.mac.toUpperCase() },
    natMappings: doc.natMappings.map((m) => ({ externalAddress: full(m.externalAddress), endpointAddress: full(m.endpointAddress) })),
    peers: doc.peers.map((p) => ({
      ...p,
      endpoint: {
        ...p.endpoint,
        address: full(p.endpoint.address),
        ...(p.endpoint.standbyAddresses ? { standbyAddresses: p.endpoint.standbyAddresses.map(full) } : {}),
      },
    })),
  };
}

function formatIp6Long(text: string): string {
  const [head, tail] = text.split('::') as [string, string | undefined];
  const left = head ? head.split(':') : [];
  const right = tail ? tail.split(':') : [];
  const groups = tail === undefined ? left : [...left, ...Array(8 - left.length - right.length).fill('0'), ...right];
  return groups.map((g) => g.padStart(4, '0').toUpperCase()).join(':');
}

describe('strait.io documents round-trip through their typed form (property)', () => {
  it('NodeDataplane: any valid typed spec writes to a document that reads back to it, in any spelling of its addresses', () => {
    fc.assert(
      fc.property(specs, (spec) => {
        const doc = writeNodeDataplaneSpec(spec);
        assert.deepEqual(readNodeDataplaneSpec(JSON.parse(JSON.stringify(doc))), spec);
        assert.deepEqual(readNodeDataplaneSpec(respelled(doc)), spec);
        assert.deepEqual(writeNodeDataplaneSpec(readNodeDataplaneSpec(respelled(doc))), doc, 'written back canonical');
      }),
      { numRuns: 300 },
    );
  });

  it('NodeDataplane on Kubernetes: the object the controller writes, with the node list and the StraitGateway the agent adds, reads back to the spec', () => {
    fc.assert(
      fc.property(specs, (spec) => {
        const object = { metadata: { name: spec.node.name }, spec: writeNodeDataplaneObjectSpec(spec) };
        const gateways = { metadata: { name: spec.clusterId }, spec: writeGateways(spec) };
        const stored = JSON.parse(JSON.stringify(object)) as typeof object;
        assert.deepEqual(readNodeDataplaneSpec(withGateways(withNodeList(stored, writeClusterNodes(spec.nodes)), gateways).spec), spec);
        assert.throws(
          () => readNodeDataplaneSpec(withNodeList(stored, writeClusterNodes(spec.nodes)).spec),
          /spec\.activeGateway: is required/,
        );
      }),
      { numRuns: 300 },
    );
  });

  it('TunnelEndpoint: the same for the four prefixes and the gateway', () => {
    fc.assert(
      fc.property(
        specs.filter((s) => s.peers.length > 0),
        fc.boolean(),
        (spec, withPort) => {
          const p = spec.peers[0]!;
          const te = {
            clusterId: p.clusterId,
            remotePodCIDR: p.remotePodCIDR,
            remoteExternalCIDR: p.remoteExternalCIDR,
            localNATPodCIDR: p.localNATPodCIDR,
            localNATExternalCIDR: p.localNATExternalCIDR,
            endpoint: {
              address: p.endpoint.address,
              ...(withPort ? { port: p.endpoint.port } : {}),
              standbyAddresses: p.endpoint.standbyAddresses,
            },
          };
          assert.deepEqual(readTunnelEndpoint(JSON.parse(JSON.stringify(writeTunnelEndpoint(te)))), te);
        },
      ),
      { numRuns: 200 },
    );
  });

  it('the canonical spelling is what the writer gives (known answers)', () => {
    assert.equal(formatIp({ family: 6, value: (0xfd00n << 112n) | 5n }), 'fd00::5');
    assert.equal(formatIp6Long('fd00::5'), 'FD00:0000:0000:0000:0000:0000:0000:0005');
  });
});
