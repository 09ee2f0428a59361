import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseJsonDocument, readTextFile } from '../../src/api/document';
import {
  canonicalSpecText,
  readNodeDataplane,
  readNodeDataplaneSpec,
  readNodeDataplaneStatus,
  specDigest,
  writeNodeDataplaneSpec,
} from '../../src/api/node-dataplane';
import { InputError } from '../../src/errors';
import {
  dualStackHubSpecDocument,
  hubSpecDocument,
  ipv6Only,
  ipv6Primary,
  nodeSpecDocument,
  peerB,
  peerC,
  peerIpv6Only,
  specFileText,
} from '../support/node-specs';

type Mutable = Record<string, any>;

/** The fixture spec with one change made by `edit`. */
function edited(edit: (s: Mutable) => void): unknown {
  const s = JSON.parse(JSON.stringify(nodeSpecDocument([peerB, peerC]))) as Mutable;
  edit(s);
  return s;
}

function rejects(value: unknown, field: string, got: unknown, reason?: RegExp): void {
  assert.throws(
    () => readNodeDataplaneSpec(value),
    (err: unknown) => {
      assert.ok(err instanceof InputError, `an InputError, got ${String(err)}`);
      assert.equal(err.field, field);
      assert.deepEqual(err.value, got);
      if (reason) assert.match(err.reason, reason);
      return true;
    },
  );
}

/** Makes the fixture dual-stack: an IPv6 secondary family at home, and peer b's IPv6 networks. */
function dualStack(s: Mutable): void {
  s.secondary = { podCIDR: 'fd00:a::/48', externalCIDR: 'fd00:b::/112', transitAddress: 'fd00:b::fe' };
  s.peers[0].secondary = {
    remotePodCIDR: 'fd00:1::/56',
    remoteExternalCIDR: 'fd00:2::/120',
    localNATPodCIDR: 'fd00:3::/48',
    localNATExternalCIDR: 'fd00:4::/112',
  };
}

describe('NodeDataplane documents', () => {
  it('reads a dual-stack spec: each family on its own, IPv6 mappings and node networks beside the IPv4 ones', () => {
    const doc = edited((s) => {
      dualStack(s);
      s.natMappings.push({ externalAddress: 'fd00:b::10', endpointAddress: 'fd00:a::5' });
      s.nodes[0].podCIDRs.push('fd00:a:0:1::/64');
    }) as Mutable;
    const spec = readNodeDataplaneSpec(doc);
    assert.deepEqual(spec.secondary?.podCIDR, { family: 6, base: 0xfd00000a_00000000_00000000_00000000n, prefix: 48 });
    assert.equal(spec.peers[0]!.secondary?.localNATExternalCIDR.prefix, 112);
    assert.equal(spec.peers[1]!.secondary, undefined, 'peer c is single-stack: the peering carries IPv4 only');
    assert.deepEqual(writeNodeDataplaneSpec(spec), doc);
  });

  it('reads a valid spec into typed values, and writes them back as the same document', () => {
    const doc = nodeSpecDocument([peerB, peerC]);
    const spec = readNodeDataplaneSpec(doc);
    assert.deepEqual(spec.podCIDR, { family: 4, base: 0x0a000000n, prefix: 16 });
    assert.deepEqual(spec.peers[1]!.endpoint, { address: { family: 4, value: 0xcb007103n }, port: 4789, standbyAddresses: [] });
    assert.deepEqual(writeNodeDataplaneSpec(spec), doc);
    assert.deepEqual(readNodeDataplane(parseJsonDocument(specFileText(doc), 'f.json')).spec, spec);
  });

  it('accepts an IPsec peering and a public address', () => {
    const spec = readNodeDataplaneSpec(
      edited((x) => {
        x.peers[0].transport = 'ipsec';
        x.node.publicAddress = '203.0.113.2';
      }),
    );
    assert.equal(spec.peers[0]!.transport, 'ipsec');
    assert.deepEqual(spec.node.publicAddress, { family: 4, value: 0xcb007102n });
  });

  it('carries the tunnel MTU override in the document, its canonical text and so its digest', () => {
    const plain = readNodeDataplaneSpec(nodeSpecDocument([peerB, peerC]));
    const withMtu = readNodeDataplaneSpec(
      edited((x) => {
        x.tunnelMTU = 1400;
      }),
    );
    assert.equal(withMtu.tunnelMTU, 1400);
    assert.equal(writeNodeDataplaneSpec(withMtu).tunnelMTU, 1400);
    assert.equal('tunnelMTU' in writeNodeDataplaneSpec(plain), false);
    assert.notEqual(specDigest(canonicalSpecText(withMtu)), specDigest(canonicalSpecText(plain)));
  });

  const cases: [string, (s: Mutable) => void, string, unknown][] = [
    [
      'a bad public address',
      (s) => {
        s.node.publicAddress = 'gw.example';
      },
      'spec.node.publicAddress',
      'gw.example',
    ],
    [
      'not an object',
      (s) => {
        s.node = 'n1';
      },
      'spec.node',
      'n1',
    ],
    [
      'a missing field',
      (s) => {
        delete s.overlay;
      },
      'spec.overlay',
      undefined,
    ],
    [
      'an unknown field (a typo)',
      (s) => {
        s.peer = [];
      },
      'spec.peer',
      [],
    ],
    [
      'an unknown nested field',
      (s) => {
        s.peers[1].endpoint.addr = '1.2.3.4';
      },
      'spec.peers[1].endpoint.addr',
      '1.2.3.4',
    ],
    [
      'a CIDR with host bits',
      (s) => {
        s.podCIDR = '10.0.0.1/16';
      },
      'spec.podCIDR',
      '10.0.0.1/16',
    ],
    [
      'a CIDR that is a number',
      (s) => {
        s.externalCIDR = 24;
      },
      'spec.externalCIDR',
      24,
    ],
    [
      'a bad address',
      (s) => {
        s.node.underlayAddress = '192.0.2.011';
      },
      'spec.node.underlayAddress',
      '192.0.2.011',
    ],
    [
      'an unknown role',
      (s) => {
        s.node.role = 'hub';
      },
      'spec.node.role',
      'hub',
    ],
    [
      'a transit address outside the ExternalCIDR',
      (s) => {
        s.transitAddress = '10.51.0.1';
      },
      'spec.transitAddress',
      '10.51.0.1',
    ],
    [
      'a VNI too large',
      (s) => {
        s.overlay.vni = 1 << 24;
      },
      'spec.overlay.vni',
      1 << 24,
    ],
    [
      'a port as text',
      (s) => {
        s.overlay.port = '4789';
      },
      'spec.overlay.port',
      '4789',
    ],
    [
      'a bad MAC',
      (s) => {
        s.overlay.mac = '02:53:54:00:00';
      },
      'spec.overlay.mac',
      '02:53:54:00:00',
    ],
    [
      'a multicast MAC',
      (s) => {
        s.overlay.mac = '01:00:5e:00:00:01';
      },
      'spec.overlay.mac',
      '01:00:5e:00:00:01',
    ],
    [
      'peers not an array',
      (s) => {
        s.peers = {};
      },
      'spec.peers',
      {},
    ],
    [
      'peer id 0',
      (s) => {
        s.peers[0].peerId = 0;
      },
      'spec.peers[0].peerId',
      0,
    ],
    [
      'a fractional peer id',
      (s) => {
        s.peers[1].peerId = 1.5;
      },
      'spec.peers[1].peerId',
      1.5,
    ],
    [
      'a bad remote prefix',
      (s) => {
        s.peers[1].remotePodCIDR = '10.2.0.0/33';
      },
      'spec.peers[1].remotePodCIDR',
      '10.2.0.0/33',
    ],
    [
      'a local NAT prefix of another length',
      (s) => {
        s.peers[1].localNATPodCIDR = '172.18.0.0/20';
      },
      'spec.peers[1].localNATPodCIDR',
      '172.18.0.0/20',
    ],
    [
      'a local NAT external prefix of another length',
      (s) => {
        s.peers[0].localNATExternalCIDR = '172.17.0.0/26';
      },
      'spec.peers[0].localNATExternalCIDR',
      '172.17.0.0/26',
    ],
    [
      'an endpoint port 0',
      (s) => {
        s.peers[0].endpoint.port = 0;
      },
      'spec.peers[0].endpoint.port',
      0,
    ],
    [
      'an unknown transport',
      (s) => {
        s.peers[0].transport = 'wireguard';
      },
      'spec.peers[0].transport',
      'wireguard',
    ],
    [
      'a duplicate peer id',
      (s) => {
        s.peers[1].peerId = 5;
      },
      'spec.peers[1].peerId',
      5,
    ],
    [
      'a duplicate peer',
      (s) => {
        s.peers[1].clusterId = 'b';
      },
      'spec.peers[1].clusterId',
      'b',
    ],
    [
      'a NatMapping outside the ExternalCIDR',
      (s) => {
        s.natMappings[0].externalAddress = '10.0.0.9';
      },
      'spec.natMappings[0].externalAddress',
      '10.0.0.9',
    ],
    [
      'a NatMapping to a bad endpoint',
      (s) => {
        s.natMappings[0].endpointAddress = 'pod-a';
      },
      'spec.natMappings[0].endpointAddress',
      'pod-a',
    ],
    [
      'a node with a bad pod prefix',
      (s) => {
        s.nodes[0].podCIDRs = ['10.0.0.0/24', '10.0.1.0/23'];
      },
      'spec.nodes[0].podCIDRs[1]',
      '10.0.1.0/23',
    ],
    [
      'an empty node name',
      (s) => {
        s.nodes[0].name = ' ';
      },
      'spec.nodes[0].name',
      ' ',
    ],
    [
      'no node list (on Kubernetes the agent adds it before reading)',
      (s) => {
        delete s.nodes;
      },
      'spec.nodes',
      undefined,
    ],
    [
      'a remote prefix overlapping our PodCIDR',
      (s) => {
        s.peers[0].remotePodCIDR = '10.0.0.0/16';
      },
      'spec.peers[0].remotePodCIDR',
      '10.0.0.0/16',
    ],
    [
      'two peers whose remote prefixes overlap',
      (s) => {
        s.peers[1].remoteExternalCIDR = '10.1.0.0/26';
      },
      'spec.peers[1].remoteExternalCIDR',
      '10.1.0.0/26',
    ],
    [
      "a peer's two views of us overlapping",
      (s) => {
        s.peers[0].localNATExternalCIDR = '172.16.0.0/24';
      },
      'spec.peers[0].localNATExternalCIDR',
      '172.16.0.0/24',
    ],
    [
      'a tunnel MTU below 1280',
      (s) => {
        s.tunnelMTU = 1200;
      },
      'spec.tunnelMTU',
      1200,
    ],
    [
      'a NatMapping on the transit address',
      (s) => {
        s.natMappings[0].externalAddress = '10.50.0.254';
      },
      'spec.natMappings[0].externalAddress',
      '10.50.0.254',
    ],
    // Issue 24: the node list the routes and the gateway come from must be one cluster's.
    [
      'a node pod network outside the PodCIDR',
      (s) => {
        s.nodes[0].podCIDRs = ['10.9.0.0/24'];
      },
      'spec.nodes[0].podCIDRs[0]',
      '10.9.0.0/24',
    ],
    [
      'a node pod network wider than the PodCIDR',
      (s) => {
        s.nodes[0].podCIDRs = ['10.0.0.0/15'];
      },
      'spec.nodes[0].podCIDRs[0]',
      '10.0.0.0/15',
    ],
    [
      'a node listed twice',
      (s) => {
        s.nodes.push({ name: 'n1', underlayAddress: '192.0.2.99', podCIDRs: ['10.0.9.0/24'] });
      },
      'spec.nodes[1].name',
      'n1',
    ],
    [
      "two nodes' pod networks overlapping",
      (s) => {
        s.nodes.push({ name: 'n9', underlayAddress: '192.0.2.99', podCIDRs: ['10.0.0.128/25'] });
      },
      'spec.nodes[1].podCIDRs[0]',
      '10.0.0.128/25',
    ],
    [
      'an active gateway that is not a node',
      (s) => {
        s.activeGateway.name = 'elsewhere';
      },
      'spec.activeGateway.name',
      'elsewhere',
    ],
    [
      "an active gateway away from its node's address",
      (s) => {
        s.activeGateway.underlayAddress = '192.0.2.250';
      },
      'spec.activeGateway.underlayAddress',
      '192.0.2.250',
    ],
    [
      'a secondary family of the primary family',
      (s) => {
        s.secondary = { podCIDR: '10.9.0.0/16', externalCIDR: '10.10.0.0/24', transitAddress: '10.10.0.254' };
      },
      'spec.secondary.podCIDR',
      '10.9.0.0/16',
    ],
    [
      'an ExternalCIDR of another family than its PodCIDR',
      (s) => {
        s.secondary = { podCIDR: 'fd00:a::/48', externalCIDR: '10.10.0.0/24', transitAddress: '10.10.0.254' };
      },
      'spec.secondary.externalCIDR',
      '10.10.0.0/24',
    ],
    [
      'a peering in a family the cluster does not have',
      (s) => {
        s.peers[0].secondary = {
          remotePodCIDR: 'fd00:1::/48',
          remoteExternalCIDR: 'fd00:2::/112',
          localNATPodCIDR: 'fd00:3::/48',
          localNATExternalCIDR: 'fd00:4::/112',
        };
      },
      'spec.peers[0].secondary.remotePodCIDR',
      'fd00:1::/48',
    ],
    [
      "a peering's secondary family the same as its primary",
      (s) => {
        dualStack(s);
        s.peers[0].secondary = { ...s.peers[1], remotePodCIDR: '10.3.0.0/16' };
        for (const k of ['clusterId', 'peerId', 'endpoint', 'transport']) delete s.peers[0].secondary[k];
      },
      'spec.peers[0].secondary.remotePodCIDR',
      '10.3.0.0/16',
    ],
    [
      'a view of our IPv6 PodCIDR of another prefix length',
      (s) => {
        dualStack(s);
        s.peers[0].secondary.localNATPodCIDR = 'fd00:30::/56';
      },
      'spec.peers[0].secondary.localNATPodCIDR',
      'fd00:30::/56',
    ],
    [
      'a peer IPv6 network overlapping ours',
      (s) => {
        dualStack(s);
        s.peers[0].secondary.remotePodCIDR = 'fd00:a:0:1::/64';
      },
      'spec.peers[0].secondary.remotePodCIDR',
      'fd00:a:0:1::/64',
    ],
    [
      'a NatMapping from an IPv4 to an IPv6 address',
      (s) => {
        dualStack(s);
        s.natMappings[0].endpointAddress = 'fd00:a::5';
      },
      'spec.natMappings[0].endpointAddress',
      'fd00:a::5',
    ],
    [
      'an IPv6 NatMapping outside the IPv6 ExternalCIDR',
      (s) => {
        dualStack(s);
        s.natMappings.push({ externalAddress: 'fd00:c::10', endpointAddress: 'fd00:a::5' });
      },
      'spec.natMappings[1].externalAddress',
      'fd00:c::10',
    ],
    [
      'a node IPv6 pod network outside the IPv6 PodCIDR',
      (s) => {
        dualStack(s);
        s.nodes[0].podCIDRs.push('fd00:9::/64');
      },
      'spec.nodes[0].podCIDRs[1]',
      'fd00:9::/64',
    ],
  ];
  for (const [what, edit, field, got] of cases) {
    it(`refuses ${what}, naming ${field} and its value`, () => rejects(edited(edit), field, got));
  }

  it('says why in the words of the parser: a network with host bits set names the one meant', () => {
    rejects(
      edited((x) => {
        x.podCIDR = '10.0.0.1/16';
      }),
      'spec.podCIDR',
      '10.0.0.1/16',
      /host bits are set; did you mean 10\.0\.0\.0\/16\?/,
    );
    rejects(
      edited((x) => {
        x.peer = [];
      }),
      'spec.peer',
      [],
      /unknown field \(known: clusterId, podCIDR, /,
    );
  });

  it('refuses a top level that is not an object', () => rejects([], 'spec', []));

  // The agent checks these documents with validators compiled at build time (src/api/write-validators.ts):
  // each kind of problem, in the spec, the object around it and the heartbeat, in the words it always had.
  it('says what is wrong in the same words for every kind of problem: spec, object and heartbeat', () => {
    const refusal = (read: () => unknown): string => {
      try {
        read();
      } catch (err) {
        assert.ok(err instanceof InputError, `an InputError, got ${String(err)}`);
        return err.message;
      }
      return 'accepted';
    };
    const spec = (edit: (s: Mutable) => void) => refusal(() => readNodeDataplaneSpec(edited(edit)));
    const object = (edit: (o: Mutable) => void) =>
      refusal(() => {
        const o = JSON.parse(specFileText(nodeSpecDocument())) as Mutable;
        edit(o);
        return readNodeDataplane(o);
      });
    const heartbeat = (edit: (h: Mutable) => void) =>
      refusal(() => {
        const h: Mutable = { ready: true, time: '2026-11-23T21:00:00Z', dataplane: 'ebpf', specGeneration: 1 };
        edit(h);
        return readNodeDataplaneStatus(h);
      });
    const condition = (fields: Mutable) => [
      { type: 'Ready', status: 'True', reason: 'Applied', message: '', lastTransitionTime: '2026-11-23T21:00:00Z', ...fields },
    ];
    assert.deepEqual(
      [
        spec((s) => {
          delete s.overlay;
        }),
        spec((s) => {
          s.overlay.colour = 'blue';
        }),
        spec((s) => {
          s.node.gatewayCandidate = 'yes';
        }),
        spec((s) => {
          s.node.role = 'hub';
        }),
        spec((s) => {
          s.peers[0].endpoint.port = 0;
        }),
        spec((s) => {
          s.overlay.mac = '02:53:54:00:00';
        }),
        spec((s) => {
          s.clusterId = 'East';
        }),
        object((o) => {
          o.kind = 'NetworkConfig';
        }),
        object((o) => {
          o.metadata.labels = { app: 1 };
        }),
        heartbeat((h) => {
          h.time = 'yesterday';
        }),
        heartbeat((h) => {
          h.specGeneration = -1;
        }),
        heartbeat((h) => {
          h.appliedSpec = 'xyz';
        }),
        // Lengths count characters, not UTF-16 units: 32768 emoji are 65536 units and within the bound.
        heartbeat((h) => {
          h.conditions = condition({ message: '\u{1F600}'.repeat(32768) });
        }),
      ],
      [
        'spec.overlay: is missing (got undefined)',
        'spec.overlay.colour: unknown field (known: vni, port, mac) (got "blue")',
        'spec.node.gatewayCandidate: expected a boolean (got "yes")',
        'spec.node.role: must be one of gateway, worker (got "hub")',
        'spec.peers[0].endpoint.port: expected a whole number from 1 to 65535 (got 0)',
        'spec.overlay.mac: expected a MAC address like 02:53:54:00:00:01 (got "02:53:54:00:00")',
        'spec.clusterId: a cluster id is 1 to 63 lowercase letters, digits or "-", starting and ending with a letter or digit (got "East")',
        'kind: must be equal to constant (got "NetworkConfig")',
        'metadata.labels.app: expected a string (got 1)',
        'status.time: must match format "date-time" (got "yesterday")',
        'status.specGeneration: expected a whole number at least 0 (got -1)',
        'status.appliedSpec: must match pattern "^[0-9a-f]{16}$" (got "xyz")',
        'accepted',
      ],
    );
  });

  it('refuses an object of another kind, or named after another node', () => {
    const object = JSON.parse(specFileText(nodeSpecDocument())) as Mutable;
    assert.throws(
      () => readNodeDataplane({ ...object, kind: 'NetworkConfig' }),
      (err: unknown) => err instanceof InputError && err.field === 'kind',
    );
    assert.throws(
      () => readNodeDataplane({ ...object, metadata: { name: 'n2' } }),
      (err: unknown) => err instanceof InputError && err.field === 'spec.node.name' && /object's name n2/.test(err.message),
    );
  });

  it('refuses a half-written file, naming the file', () => {
    const text = specFileText(nodeSpecDocument()).slice(0, 100);
    assert.throws(
      () => parseJsonDocument(text, '/run/a/n1.json'),
      (err: unknown) => err instanceof InputError && err.field === '/run/a/n1.json' && /not valid JSON/.test(err.message),
    );
  });

  it('reads the file text, and undefined while it does not exist', () => {
    const dir = mkdtempSync(join(tmpdir(), 'strait-spec-'));
    try {
      assert.equal(readTextFile(join(dir, 'n1.json')), undefined);
      writeFileSync(join(dir, 'n1.json'), '{}');
      assert.equal(readTextFile(join(dir, 'n1.json')), '{}');
      assert.throws(() => readTextFile(dir), /EISDIR/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('NodeDataplane reader: IPv6 in any place', () => {
  const shapes: [string, () => ReturnType<typeof hubSpecDocument>, (spec: ReturnType<typeof readNodeDataplaneSpec>) => unknown, unknown][] =
    [
      [
        'an IPv6-only home and peers',
        () => ipv6Only(dualStackHubSpecDocument()),
        (s) => [s.podCIDR.family, s.secondary, s.peers.map((p) => [p.remotePodCIDR.family, p.secondary])],
        [
          6,
          undefined,
          [
            [6, undefined],
            [6, undefined],
          ],
        ],
      ],
      [
        'a dual-stack home, IPv6 primary',
        () => ipv6Primary(dualStackHubSpecDocument()),
        (s) => [
          s.podCIDR.family,
          s.secondary?.podCIDR.family,
          s.peers.map((p) => [p.remotePodCIDR.family, p.secondary?.remotePodCIDR.family]),
        ],
        [
          6,
          4,
          [
            [6, 4],
            [6, 4],
          ],
        ],
      ],
      [
        'a dual-stack home (IPv4 primary) and a peering of its secondary family only',
        () => peerIpv6Only(dualStackHubSpecDocument(), 0),
        (s) => [
          s.podCIDR.family,
          s.secondary?.podCIDR.family,
          s.peers.map((p) => [p.remotePodCIDR.family, p.secondary?.remotePodCIDR.family]),
        ],
        [
          4,
          6,
          [
            [6, undefined],
            [4, 6],
          ],
        ],
      ],
    ];
  for (const [what, doc, families, expected] of shapes) {
    it(`reads ${what}, and reads back what it writes`, () => {
      const spec = readNodeDataplaneSpec(doc());
      assert.deepEqual(families(spec), expected);
      assert.deepEqual(readNodeDataplaneSpec(writeNodeDataplaneSpec(spec)), spec);
    });
  }

  const refusals: [string, (d: ReturnType<typeof hubSpecDocument>) => void, string, string][] = [
    [
      'an IPv4 peering of an IPv6-only home',
      (d) => (d.peers[1] = { ...hubSpecDocument().peers[1]! }),
      'spec.peers[1].remotePodCIDR',
      '10.2.0.0/20',
    ],
    [
      'an IPv4 NatMapping of an IPv6-only home',
      (d) => d.natMappings.push({ externalAddress: '10.50.0.9', endpointAddress: '10.0.0.9' }),
      'spec.natMappings[1].externalAddress',
      '10.50.0.9',
    ],
    [
      'an IPv4 pod network of a node of an IPv6-only home',
      (d) => d.nodes![1]!.podCIDRs.push('10.0.1.0/24'),
      'spec.nodes[1].podCIDRs[1]',
      '10.0.1.0/24',
    ],
  ];
  for (const [what, edit, field, value] of refusals) {
    it(`refuses ${what}, naming ${field} and its value`, () => {
      const d = ipv6Only(dualStackHubSpecDocument());
      edit(d);
      assert.throws(
        () => readNodeDataplaneSpec(d),
        (err: unknown) => err instanceof InputError && err.field === field && err.value === value,
      );
    });
  }
});
