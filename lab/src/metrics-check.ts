/**
 * After the traffic, every agent's /metrics against what `strait inspect` reads from the same node's
 * pinned maps: per peer and IP family, packets and bytes each way must be the same numbers (the agent's
 * metrics are read from those maps at scrape time; a wrong label, a peer or family mixed up or a stale
 * cache shows here).
 * The kernel fallback has no per-peer counters: its agents must say which dataplane they run and be
 * ready. Counters that move between the two readings (a late packet) are read again.
 */
import { type CounterFamily, counterFamilies, inspectNode } from '../../src/dataplane/ebpf/inspect';
import { parseSamples, sampleValue } from '../../src/metrics/exposition';
import type { ClusterState } from './lab-state-port';
import { nodePinRoot } from './lab';
import { get, labMetricsPort } from './metrics-endpoint';
import type { LabTopology } from './topology';

export interface MetricsResult {
  node: string;
  ok: boolean;
  detail: string;
}

type Figure = number | undefined;

/** One peer's counters in one family, as both readings are compared. */
const row = (peer: string, family: CounterFamily, c: { txPackets: Figure; txBytes: Figure; rxPackets: Figure; rxBytes: Figure }) =>
  `${peer} ${family} tx ${c.txPackets}/${c.txBytes} rx ${c.rxPackets}/${c.rxBytes}`;

/** Per peer cluster id and family: tx/rx packets and bytes, as inspect reads them. */
function inspected(node: string, names: ReadonlyMap<number, string>): string {
  const rows = inspectNode(nodePinRoot(node))
    .peers.filter((p) => names.has(p.peerId))
    .flatMap((p) => counterFamilies.map((family) => row(names.get(p.peerId)!, family, p.counters[family])));
  return rows.sort().join('; ');
}

function scraped(text: string, names: ReadonlyMap<number, string>): string {
  const samples = parseSamples(text);
  const value = (unit: 'packets' | 'bytes', peer: string, family: CounterFamily, direction: string) =>
    sampleValue(samples, `strait_agent_peer_${unit}_total`, { peer, family, direction });
  return [...names.values()]
    .flatMap((peer) =>
      counterFamilies.map((family) =>
        row(peer, family, {
          txPackets: value('packets', peer, family, 'tx'),
          txBytes: value('bytes', peer, family, 'tx'),
          rxPackets: value('packets', peer, family, 'rx'),
          rxBytes: value('bytes', peer, family, 'rx'),
        }),
      ),
    )
    .sort()
    .join('; ');
}

/**
 * `timeoutMs`: how long one scrape may take (LabPace.scrapeTimeoutMs). `only`: the node whose agent runs
 * on this machine, in a lab across machines (each scrapes its own: the metrics servers are on loopback).
 */
export async function checkAgentMetrics(
  topology: LabTopology,
  states: ReadonlyMap<string, ClusterState>,
  timeoutMs: number,
  only?: string,
): Promise<MetricsResult[]> {
  const results: MetricsResult[] = [];
  for (const cluster of topology.clusters) {
    for (const node of cluster.nodes.filter((n) => only === undefined || n.name === only)) {
      const state = states.get(cluster.id)!.nodes.get(node.name);
      const port = labMetricsPort(topology, `agent-${node.name}`);
      const dataplane = state?.status?.dataplane ?? 'unknown';
      const ready = await get(port, '/readyz', timeoutMs);
      const first = await get(port, '/metrics', timeoutMs);
      const dataplaneSample = sampleValue(parseSamples(first.text), 'strait_agent_dataplane', { dataplane });
      const problems: string[] = [];
      if (ready.status !== 200) problems.push(`/readyz ${ready.status} ${ready.text.trim()}`);
      if (dataplaneSample !== 1) problems.push(`strait_agent_dataplane{dataplane="${dataplane}"} is ${dataplaneSample}`);
      let detail = `${dataplane}, ready`;
      if (dataplane === 'ebpf') {
        const names = new Map((state?.spec?.peers ?? []).map((p) => [p.peerId, p.clusterId]));
        // In a lab across machines the other machines' checks may still cross this node (a gateway) while
        // it checks: read again until the counters stand still, for as long as a scrape may take.
        const until = Date.now() + timeoutMs;
        let agreed = false;
        for (let attempt = 0; !agreed && (attempt < 5 || Date.now() < until); attempt++) {
          if (attempt > 0) await new Promise((r) => setTimeout(r, 500));
          const before = inspected(node.name, names);
          const metrics = scraped((await get(port, '/metrics', timeoutMs)).text, names);
          const after = inspected(node.name, names);
          if (before !== after) {
            detail = `counters still moving: inspect said ${before}, then ${after}`;
            continue;
          }
          agreed = metrics === before;
          detail = agreed ? `ebpf, /metrics = inspect: ${before}` : `/metrics says ${metrics}; inspect says ${before}`;
        }
        if (!agreed) problems.push(detail);
      }
      results.push({ node: node.name, ok: problems.length === 0, detail: problems.length === 0 ? detail : problems.join('; ') });
    }
  }
  return results;
}

export const metricsLine = (r: MetricsResult) => `metrics ${r.ok ? 'ok  ' : 'FAIL'} ${r.node}: ${r.detail}`;
