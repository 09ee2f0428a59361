import assert from 'node:assert/strict';
import type { InspectReport } from '../../../src/dataplane/ebpf/inspect';
import { formatInspectReport } from '../../../src/dataplane/ebpf/inspect-format';
import { DROP_REASON_COUNT, DropReason } from '../../../src/dataplane/ebpf/layout';

const counts = (txPackets: number, txBytes: number, rxPackets: number, rxBytes: number) => ({ txPackets, txBytes, rxPackets, rxBytes });

/** A dual-stack peer 7 and an IPv4-only peer 12, with traffic of different sizes in each family. */
const report: InspectReport = {
  pinRoot: '/sys/fs/bpf/strait',
  config: null,
  peers: [
    {
      peerId: 7,
      remotePodCIDRs: ['10.1.0.0/16', 'fd00:a::/56'],
      remoteExternalCIDRs: ['10.60.0.0/24'],
      localNATPodCIDR: '172.16.0.0/16',
      localNATExternalCIDR: '172.17.0.0/24',
      endpoint: '203.0.113.1',
      vni: 1829182,
      srcMac: '02:93:55:a1:01:47',
      dstMac: '02:c3:8b:16:94:d6',
      counters: { ...counts(3, 426, 1025, 1_500_000), ipv4: counts(1, 142, 1024, 1_499_800), ipv6: counts(2, 284, 1, 200) },
      ipv6: { localNATPodCIDR: 'fd60:b::/48', localNATExternalCIDR: 'fd70:b:e::/112' },
    },
    {
      peerId: 12,
      remotePodCIDRs: ['10.2.0.0/20'],
      remoteExternalCIDRs: [],
      localNATPodCIDR: '192.168.0.0/16',
      localNATExternalCIDR: '10.90.0.0/24',
      endpoint: '203.0.113.3',
      vni: 8387962,
      srcMac: '02:d1:97:a8:06:b1',
      dstMac: '02:a0:0a:81:2a:63',
      counters: { ...counts(5, 710, 0, 0), ipv4: counts(5, 710, 0, 0), ipv6: counts(0, 0, 0, 0) },
    },
  ],
  strayRoutes: [],
  natMappings: [],
  strayReverseMappings: [],
  nodes: [],
  snat: { total: 0, limit: 100, flows: [] },
  drops: Object.fromEntries(Array.from({ length: DROP_REASON_COUNT }, (_, r) => [DropReason[r], 0])) as InspectReport['drops'],
};

describe('strait inspect tables (pure)', () => {
  it("shows each peer's counters in a row per family, numbers aligned to the right, after the peers", () => {
    const lines = formatInspectReport(report, ['peers']).split('\n');
    const at = lines.indexOf('peer counters');
    assert.ok(at > lines.indexOf('peers (2)'), lines.join('\n'));
    assert.deepEqual(lines.slice(at, at + 6), [
      'peer counters',
      '  PEER  FAMILY  TX PKTS  TX BYTES  RX PKTS  RX BYTES',
      '     7  ipv4          1       142     1024   1499800',
      '     7  ipv6          2       284        1       200',
      '    12  ipv4          5       710        0         0',
      '    12  ipv6          0         0        0         0',
    ]);
  });

  it('leaves the counters out of the peers table: its rows end with the MACs', () => {
    const lines = formatInspectReport(report, ['peers']).split('\n');
    assert.match(lines[3]!, / DST MAC$/);
    assert.match(lines[4]!, /^ {5}7 .* 02:c3:8b:16:94:d6$/);
  });
});
