import assert from 'node:assert/strict';
import type { DatapathCounters } from '../../src/dataplane/ebpf/inspect';
import { DROP_REASON_COUNT, DropReason } from '../../src/dataplane/ebpf/layout';
import { AgentMetrics } from '../../src/metrics/agent-metrics';
import { parseSamples, series } from '../support/metrics';
import { hubSpec } from '../support/node-specs';

const counts = (txPackets: number, txBytes: number, rxPackets: number, rxBytes: number) => ({ txPackets, txBytes, rxPackets, rxBytes });

/** Hub B's peers 7 (cluster-a) and 9 (cluster-c), and 11, which the spec in force does not name. */
const counters: DatapathCounters = {
  peers: [
    { peerId: 7, counters: { ...counts(5, 700, 12, 1700), ipv4: counts(3, 400, 10, 1400), ipv6: counts(2, 300, 2, 300) } },
    { peerId: 9, counters: { ...counts(1, 90, 0, 0), ipv4: counts(0, 0, 0, 0), ipv6: counts(1, 90, 0, 0) } },
    { peerId: 11, counters: { ...counts(8, 800, 8, 800), ipv4: counts(8, 800, 8, 800), ipv6: counts(0, 0, 0, 0) } },
  ],
  drops: Object.fromEntries(Array.from({ length: DROP_REASON_COUNT }, (_, r) => [DropReason[r], 0])) as DatapathCounters['drops'],
};

describe('agent metrics (pure)', () => {
  const metrics = new AgentMetrics({
    notReady: () => undefined,
    state: () => ({ dataplane: 'ebpf', specGeneration: 1, applied: hubSpec(), counters: () => counters }),
  });
  const scrape = async () => parseSamples(await metrics.registry.metrics());

  it("labels each peer's packets and bytes with its family: each family's figures, not their sum", async () => {
    const samples = await scrape();
    assert.deepEqual(series(samples, 'strait_agent_peer_packets_total'), [
      'direction=rx family=ipv4 peer=cluster-a 10',
      'direction=rx family=ipv4 peer=cluster-c 0',
      'direction=rx family=ipv6 peer=cluster-a 2',
      'direction=rx family=ipv6 peer=cluster-c 0',
      'direction=tx family=ipv4 peer=cluster-a 3',
      'direction=tx family=ipv4 peer=cluster-c 0',
      'direction=tx family=ipv6 peer=cluster-a 2',
      'direction=tx family=ipv6 peer=cluster-c 1',
    ]);
    assert.deepEqual(series(samples, 'strait_agent_peer_bytes_total'), [
      'direction=rx family=ipv4 peer=cluster-a 1400',
      'direction=rx family=ipv4 peer=cluster-c 0',
      'direction=rx family=ipv6 peer=cluster-a 300',
      'direction=rx family=ipv6 peer=cluster-c 0',
      'direction=tx family=ipv4 peer=cluster-a 400',
      'direction=tx family=ipv4 peer=cluster-c 0',
      'direction=tx family=ipv6 peer=cluster-a 300',
      'direction=tx family=ipv6 peer=cluster-c 90',
    ]);
  });

  it('a scrape again gives the same series, not their double (the counters are read, not added to)', async () => {
    const first = series(await scrape(), 'strait_agent_peer_bytes_total');
    assert.deepEqual(series(await scrape(), 'strait_agent_peer_bytes_total'), first);
  });
});
