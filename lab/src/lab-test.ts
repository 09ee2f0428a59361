/** `strait-lab test` and `strait-lab status`: traffic across a running lab, and what it is made of. */
import { inspectNode } from '../../src/dataplane/ebpf/inspect';
import { StateError } from '../../src/errors';
import { type ClusterView, type TrafficCheck, planChecks } from './checks';
import type { LabTopology } from './topology';
import { type Say, nodePinRoot, readLabState, savedTopology, waitForConvergence } from './lab';
import { openLabState } from './lab-state';
import { PodProbers } from './pod-probers';
import { type CheckResult, resultTable, runChecks } from './run-checks';
import { type FragmentResult, type WireResult, fragmentLine, fragmentResult, readFragments, readWire, wireLine } from './wire';
import { type MetricsResult, checkAgentMetrics, metricsLine } from './metrics-check';

/** What each cluster's controller decided: a node spec (the peers are the same on every node) and reflections. */
export async function clusterViews(topology: LabTopology, runDir: string): Promise<Record<string, ClusterView>> {
  const state = await openLabState(runDir, topology);
  try {
    const states = await readLabState(topology, state);
    const views: Record<string, ClusterView> = {};
    for (const c of topology.clusters) {
      const { spec } = states.get(c.id)!.nodes.get(c.nodes[0]!.name) ?? {};
      if (!spec) throw new StateError(`${c.id}: no node spec of ${c.nodes[0]!.name} yet; is the lab up (strait-lab status)?`);
      views[c.id] = { spec, reflections: states.get(c.id)!.reflections, imports: states.get(c.id)!.imports };
    }
    return views;
  } finally {
    await state.close();
  }
}

/** The failed checks of a `labTest`, one line each (for a test's assertion message). */
export function failureSummary(outcome: LabTestOutcome): string {
  return [
    ...outcome.results.filter((r) => !r.ok).map((r) => `${r.probe} ${r.from} -> ${r.to} (${r.address}): ${r.detail}`),
    ...outcome.wire.filter((w) => !w.ok).map(wireLine),
    ...(outcome.fragments && !outcome.fragments.ok ? [fragmentLine(outcome.fragments)] : []),
    ...outcome.metrics.filter((m) => !m.ok).map(metricsLine),
  ].join('\n');
}

/**
 * How long the lab may take, for machines slower than a host (an emulated VM starts a node process in
 * seconds): convergence, the start of each probe process, how long an echo probe waits for its answer,
 * how many probes run at once, and how long an agent's metrics server may take to answer a scrape. The
 * echo's answer comes from the echo server, a node process in the pod: in an emulated VM on a loaded
 * machine it can wait seconds for a CPU, which the path itself (in the kernel) has no part in. An ICMP
 * reply comes from the kernel, but there too a loaded emulated VM's kernel can leave it hundreds of ms
 * late: ping gets the same wait.
 */
export interface LabPace {
  convergeTimeoutMs: number;
  probeStartTimeoutMs: number;
  /** How long a probe waits for its answer: each ping reply, a tcp, udp, frag or unreach echo (the bulk `pmtu-tcp` echo: 15 s). */
  echoWaitMs: number;
  /** Seconds between the echo requests of a ping check. */
  pingIntervalS: number;
  concurrency: number;
  scrapeTimeoutMs: number;
}

export const hostPace: LabPace = {
  convergeTimeoutMs: 15_000,
  probeStartTimeoutMs: 10_000,
  echoWaitMs: 3000,
  pingIntervalS: 0.05,
  concurrency: 8,
  scrapeTimeoutMs: 5_000,
};

export interface LabTestOutcome {
  results: CheckResult[];
  wire: WireResult[];
  /** The wires' fragment counters around the `pmtu-tcp` probes (none without a peering). */
  fragments?: FragmentResult;
  metrics: MetricsResult[];
  failed: number;
}

/**
 * Runs planned checks with a progress line each: the bulk echoes last and on their own, so that wire
 * counters read around them (`beforeBulk`, then the caller after) count only their traffic (the `frag`
 * probes fragment on purpose).
 */
export async function runPlannedChecks(
  checks: TrafficCheck[],
  say: Say,
  pace: LabPace,
  beforeBulk: () => void = () => {},
): Promise<CheckResult[]> {
  say(`running ${checks.length} checks`);
  const progress = (offset: number) => (r: CheckResult, done: number) => {
    say(
      `[${String(offset + done).padStart(3)}/${checks.length}] ${r.ok ? 'ok  ' : 'FAIL'} ${r.kind.padEnd(10)} ${r.probe.padEnd(9)} ${r.from} -> ${r.to} (${r.address}): ${r.expect === 'reach' ? '' : 'expected blocked, '}${r.detail}`,
    );
  };
  const bulk = checks.filter((c) => c.probe === 'pmtu-tcp');
  const others = checks.filter((c) => c.probe !== 'pmtu-tcp');
  const probers = new PodProbers();
  try {
    const results = await runChecks(others, progress(0), pace, probers);
    if (bulk.length > 0) beforeBulk();
    results.push(...(await runChecks(bulk, progress(others.length), pace, probers)));
    return results;
  } finally {
    probers.close();
  }
}

/** The result table, then a line per other finding, then the count; returns how many failed. */
export function reportOutcome(say: Say, results: CheckResult[], findings: { ok: boolean; line: string }[]): number {
  const failed = results.filter((r) => !r.ok).length + findings.filter((f) => !f.ok).length;
  say('');
  say(resultTable(results));
  say('');
  for (const f of findings) say(f.line);
  say('');
  say(`${results.length + findings.length - failed} passed, ${failed} failed`);
  return failed;
}

export async function labTest(runDir: string, say: Say, pace: LabPace = hostPace): Promise<LabTestOutcome> {
  const topology = savedTopology(runDir);
  await waitForConvergence(topology, runDir, say, pace.convergeTimeoutMs);
  const checks = planChecks(topology, await clusterViews(topology, runDir));
  let before: ReturnType<typeof readFragments> | undefined;
  const results = await runPlannedChecks(checks, say, pace, () => {
    before = readFragments(topology);
  });
  const fragments = before ? fragmentResult(before, readFragments(topology)) : undefined;
  // After the traffic: every peering has carried some, so its counters say how.
  const wire = readWire(topology);
  // And every agent's /metrics against inspect of the same node.
  const state = await openLabState(runDir, topology);
  const metrics = await checkAgentMetrics(topology, await readLabState(topology, state), pace.scrapeTimeoutMs).finally(() => state.close());
  const failed = reportOutcome(say, results, [
    ...wire.map((w) => ({ ok: w.ok, line: wireLine(w) })),
    ...(fragments ? [{ ok: fragments.ok, line: fragmentLine(fragments) }] : []),
    ...metrics.map((m) => ({ ok: m.ok, line: metricsLine(m) })),
  ]);
  return { results, wire, ...(fragments ? { fragments } : {}), metrics, failed };
}

export interface LabStatus {
  clusters: {
    id: string;
    gateway: string | null;
    peers: unknown;
    nodes: { name: string; ready: boolean; dataplane?: string; peers: { peerId: number; txPackets: number; rxPackets: number }[] }[];
  }[];
}

export async function labStatus(runDir: string): Promise<LabStatus> {
  const topology = savedTopology(runDir);
  const state = await openLabState(runDir, topology);
  try {
    const states = await readLabState(topology, state);
    return {
      clusters: topology.clusters.map((c) => {
        const cluster = states.get(c.id)!;
        return {
          id: c.id,
          gateway: cluster.gateway,
          peers: cluster.peers,
          nodes: c.nodes.map((n) => {
            const status = cluster.nodes.get(n.name)?.status;
            let peers: LabStatus['clusters'][number]['nodes'][number]['peers'] = [];
            try {
              peers = inspectNode(nodePinRoot(n.name)).peers.map((p) => ({
                peerId: p.peerId,
                txPackets: p.counters.txPackets,
                rxPackets: p.counters.rxPackets,
              }));
            } catch {
              // not programmed yet
            }
            return { name: n.name, ready: status?.ready === true, ...(status?.dataplane ? { dataplane: status.dataplane } : {}), peers };
          }),
        };
      }),
    };
  } finally {
    await state.close();
  }
}
