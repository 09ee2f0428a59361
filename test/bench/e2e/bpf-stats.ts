/**
 * What Strait's programs cost per run on the lab's nodes: with kernel.bpf_stats_enabled the kernel sums
 * each program's run time and runs. Only the programs the lab's agents pinned are counted, not those
 * another process loads meanwhile.
 */
import { existsSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { run } from '../../../src/kernel/command';
import { nodePinRoot } from '../../../lab/src/lab';
import type { LabTopology } from '../../../lab/src/topology';

const sysctlPath = '/proc/sys/kernel/bpf_stats_enabled';

/** Turns the statistics on; the returned function puts the setting back. */
export function enableBpfStats(): () => void {
  const before = readFileSync(sysctlPath, 'utf8').trim();
  writeFileSync(sysctlPath, '1');
  return () => writeFileSync(sysctlPath, before);
}

/** Program name → total run time and runs, over every node's attached Strait programs. */
export type BpfTotals = Map<string, { ns: number; runs: number }>;

/** The programs each node's agent loaded, as pinned under its pin root (`programs/`). */
function labProgramIds(topology: LabTopology): Set<number> {
  const ids = new Set<number>();
  for (const node of topology.clusters.flatMap((c) => c.nodes)) {
    const dir = join(nodePinRoot(node.name), 'programs');
    for (const pin of existsSync(dir) ? readdirSync(dir) : []) {
      ids.add((JSON.parse(run(['bpftool', 'prog', 'show', 'pinned', join(dir, pin), '-j'])) as { id: number }).id);
    }
  }
  return ids;
}

export function bpfTotals(topology: LabTopology): BpfTotals {
  const ids = labProgramIds(topology);
  const programs = JSON.parse(run(['bpftool', 'prog', 'show', '-j'])) as {
    id: number;
    name?: string;
    run_time_ns?: number;
    run_cnt?: number;
  }[];
  const totals: BpfTotals = new Map();
  for (const p of programs) {
    if (!ids.has(p.id) || !p.name?.startsWith('strait_')) continue;
    const t = totals.get(p.name) ?? { ns: 0, runs: 0 };
    totals.set(p.name, { ns: t.ns + (p.run_time_ns ?? 0), runs: t.runs + (p.run_cnt ?? 0) });
  }
  return totals;
}

/** Per program, between two readings: runs and ns per run (pure). */
export function bpfCost(before: BpfTotals, after: BpfTotals): Record<string, { runs: number; nsPerRun: number }> {
  const cost: Record<string, { runs: number; nsPerRun: number }> = {};
  for (const [name, a] of after) {
    const b = before.get(name) ?? { ns: 0, runs: 0 };
    const runs = a.runs - b.runs;
    if (runs > 0) cost[name] = { runs, nsPerRun: Math.round((a.ns - b.ns) / runs) };
  }
  return cost;
}
