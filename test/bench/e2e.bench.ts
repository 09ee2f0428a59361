/**
 * `npm run bench -- e2e`: the datapath end to end on the lab (test/bench/e2e/topology.yaml), side by side
 * with the limit (pod to pod over a plain route, no Strait) and the incumbent's rule list, for 2 to
 * 100,000 NatMappings on the hub, and the peered and hub paths in IPv6 against IPv6's limit; then the
 * time to apply 10,000 mapping changes three ways. Writes
 * bench-results/e2e.json, e2e.md (the table) and e2e.svg (the chart); docs/benchmarks.md says how to read them.
 *
 * During each measurement the lab's controllers and agents are paused (SIGSTOP): on 2 cores their
 * reconciles of 100,000 mappings would compete with the traffic, and the datapath (kernel state) runs
 * without them. The lab's heartbeat timeout is an hour so that no pause counts as a node failure.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { labDown, labUp, type LabDataplane } from '../../lab/src/lab';
import { addressSeenFrom } from '../../lab/src/checks';
import { defaultRunDir, nodeNetns } from '../../lab/src/names';
import { findPod, type LabTopology } from '../../lab/src/topology';
import { readFragments } from '../../lab/src/wire';
import { applyChangeFigures } from './e2e/apply-changes';
import { bpfCost, bpfTotals, enableBpfStats } from './e2e/bpf-stats';
import { ratioChart } from './e2e/chart';
import { pauseControlPlane } from './e2e/pause';
import { dialledLast, installIncumbent, lastRulePackets, mappingRules, removeIncumbent } from './e2e/incumbent';
import { benchTopologyPath, roles, setMappings } from './e2e/mappings';
import { type Measurement, type PathFigures, markdownTable, ratios } from './e2e/results';
import {
  buildCrr,
  connectionsPerSecond,
  requestResponse,
  requestResponseTool,
  startServers,
  stream,
  toolSeconds,
  waitForServers,
} from './e2e/traffic';
import { type BenchFigure, type BenchSuite, benchResultsDir, headCommit } from './result';

/** NatMappings on the hub: at least the reflected pod's two (IPv4 and IPv6). */
const sizes = [2, 1_000, 10_000, 100_000];
/** The lab's own run directory, so `strait-lab down` also cleans up after a bench that was killed. */
const runDir = defaultRunDir;
const say = (line: string) => process.stderr.write(`  ${line}\n`);

/** Fragments the lab's wire counters (every peering's public path, every underlay) have seen so far. */
const fragmentsOnTheWire = (topology: LabTopology) => readFragments(topology).reduce((sum, w) => sum + w.fragments, 0);

function measure(topology: LabTopology, address: string, withBpf: boolean): PathFigures & { connections: number } {
  const bpfBefore = withBpf ? bpfTotals(topology) : undefined;
  const crr = connectionsPerSecond(roles.client, address);
  const { p50Us, p99Us } = requestResponse(roles.client, address);
  const fragmentsBefore = fragmentsOnTheWire(topology);
  const gbps = stream(roles.client, address);
  const fragments = fragmentsOnTheWire(topology) - fragmentsBefore;
  return {
    connPerS: crr.perSecond,
    connections: crr.connections,
    p50Us,
    p99Us,
    gbps,
    fragments,
    ...(bpfBefore ? { bpf: bpfCost(bpfBefore, bpfTotals(topology)) } : {}),
  };
}

async function labMeasurements(dataplane: LabDataplane): Promise<Measurement[]> {
  const lab = dataplane === 'ebpf' ? 'eBPF' : 'kernel';
  say(`lab up (--dataplane ${dataplane})`);
  const measurements: Measurement[] = [];
  let servers: { stop: () => void }[] = [];
  let restoreBpfStats: (() => void) | undefined;
  try {
    const topology = await labUp(benchTopologyPath, { runDir, dataplane, say, heartbeatTimeout: 3600, convergeTimeoutMs: 120_000 });
    servers = [roles.samePod, roles.peeredPod, roles.reflectedPod].map(startServers);
    for (const pod of [roles.samePod, roles.peeredPod, roles.reflectedPod]) await waitForServers(pod);
    if (dataplane === 'ebpf') restoreBpfStats = enableBpfStats();
    const ebpf = dataplane === 'ebpf';
    for (const n of sizes) {
      const { views, hubGatewaySpec, dialled, dialled6 } = await setMappings(runDir, topology, n, say, 300_000);
      const client = findPod(topology, roles.client);
      const peered = findPod(topology, roles.peeredPod);
      const resume = pauseControlPlane(runDir);
      try {
        const limit = measure(topology, findPod(topology, roles.samePod).pod.ip, false);
        const add = (path: string, figures: PathFigures, family: 4 | 6 = 4, limitOfFamily = limit) => {
          measurements.push({ path, family, mappings: n, figures, limit: limitOfFamily });
          const r = ratios(measurements.at(-1)!);
          say(
            `${path}, ${n} NatMappings: ${Math.round(figures.connPerS)} conn/s (×${r.connPerS}), p99 ${figures.p99Us} µs (×${r.p99}), ${figures.gbps.toFixed(2)} Gbit/s (×${r.gbps}), ${figures.fragments} fragments`,
          );
        };
        add(`limit (${lab} lab)`, limit);
        add(
          `${lab} peered`,
          measure(topology, addressSeenFrom(topology, views, client.cluster.id, peered.cluster.id, peered.pod.ip), ebpf),
        );
        add(`${lab} hub`, measure(topology, dialled, ebpf));
        if (n === sizes[0]) {
          // IPv6 (every cluster is dual-stack): the limit, the peered and the hub path, against IPv6's limit.
          const limit6 = measure(topology, findPod(topology, roles.samePod).pod.secondaryIp!, false);
          add(`limit IPv6 (${lab} lab)`, limit6, 6, limit6);
          const peered6 = addressSeenFrom(topology, views, client.cluster.id, peered.cluster.id, peered.pod.secondaryIp!);
          add(`${lab} peered IPv6`, measure(topology, peered6, ebpf), 6, limit6);
          add(`${lab} hub IPv6`, measure(topology, dialled6, ebpf), 6, limit6);
        }
        if (!ebpf) {
          const rules = dialledLast(mappingRules(hubGatewaySpec, client.cluster.id), dialled);
          installIncumbent(nodeNetns(roles.hubGateway), rules);
          try {
            const incumbent = measure(topology, dialled, false);
            const matched = lastRulePackets(nodeNetns(roles.hubGateway), rules.length);
            // Every connection's first packet walks the list to the last rule; fewer means Strait carried some.
            if (matched < incumbent.connections)
              throw new Error(`the incumbent's last rule matched ${matched} packets for ${incumbent.connections} connections`);
            add('incumbent hub (iptables rule list)', incumbent);
          } finally {
            removeIncumbent(nodeNetns(roles.hubGateway));
          }
        }
      } finally {
        resume();
      }
    }
  } finally {
    for (const s of servers) s.stop();
    restoreBpfStats?.();
    await labDown(runDir, say);
  }
  return measurements;
}

const figureName = (m: Measurement) => `${m.path}, ${m.mappings.toLocaleString('en')} NatMapping${m.mappings === 1 ? '' : 's'}`;

function figuresOf(m: Measurement): BenchFigure[] {
  const r = ratios(m);
  const f = m.figures;
  const name = figureName(m);
  return [
    { suite: 'e2e', name: `${name}: connections/s`, value: Math.round(f.connPerS), unit: 'conn/s', note: `× limit ${r.connPerS}` },
    {
      suite: 'e2e',
      name: `${name}: TCP request/response p50`,
      value: f.p50Us,
      unit: 'µs',
      note: `${requestResponseTool(m.family ?? 4)}, round trip`,
    },
    { suite: 'e2e', name: `${name}: TCP request/response p99`, value: f.p99Us, unit: 'µs', note: `× limit ${r.p99}` },
    {
      suite: 'e2e',
      name: `${name}: stream`,
      value: Number(f.gbps.toFixed(2)),
      unit: 'Gbit/s',
      note: `× limit ${r.gbps}; ${f.fragments} IPv4 fragments on the wire`,
    },
    ...Object.entries(f.bpf ?? {}).map(([prog, c]) => ({
      suite: 'e2e',
      name: `${name}: ${prog}`,
      value: c.nsPerRun,
      unit: 'ns/run',
      note: `${c.runs} runs, kernel.bpf_stats_enabled`,
    })),
  ];
}

export const run: BenchSuite = async () => {
  const started = Date.now();
  buildCrr();
  const measurements = [...(await labMeasurements('ebpf')), ...(await labMeasurements('kernel'))];
  say('apply 10,000 changes at 100,000 NatMappings');
  const applyFigures = await applyChangeFigures();
  const seconds = Math.round((Date.now() - started) / 1000);
  const commit = headCommit();
  const table = markdownTable(measurements);
  const applyTable = [
    '| apply 10,000 changes at 100,000 NatMappings | ms |',
    '|---|---:|',
    ...applyFigures.map((f) => `| ${f.name.replace(/^.*100,000: /, '')} | ${f.value.toLocaleString('en')} |`),
  ].join('\n');
  const markdown = `Commit ${commit}, ${new Date().toISOString()}; ${toolSeconds} s per tool; the whole run took ${seconds} s.\n\n${table}\n${applyTable}\n`;
  mkdirSync(benchResultsDir, { recursive: true });
  writeFileSync(
    join(benchResultsDir, 'e2e.json'),
    `${JSON.stringify({ commit, date: new Date().toISOString(), seconds, toolSeconds, measurements, applyChanges: applyFigures }, null, 2)}\n`,
  );
  writeFileSync(join(benchResultsDir, 'e2e.md'), markdown);
  writeFileSync(join(benchResultsDir, 'e2e.svg'), ratioChart(measurements));
  process.stdout.write(`\n${markdown}\n`);
  return [...measurements.flatMap(figuresOf), ...applyFigures, { suite: 'e2e', name: 'the whole e2e run', value: seconds, unit: 's' }];
};
