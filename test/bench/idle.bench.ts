/**
 * What an idle agent costs: `strait agent` on a spec file of 100,000 NatMappings in a throw-away
 * namespace (as test/agent/process.test.ts runs it), eBPF dataplane, nothing changing. Once it is ready
 * and has settled, its CPU over 20 s (its own, and its children's: the change monitors and every process
 * it ran, from /proc) and its resident memory (VmRSS, the agent alone). At the default --interval (1 s)
 * and at the lab's (0.2 s). IDLE_AGENT_CLI=<a build's dist/src/cli/main.js> measures another build, for
 * the figure before a change. IDLE_LAB=1 also brings up the default lab (eBPF), measures each of its
 * agents the same way and takes it down: run it under the lab lock, with no other lab up.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { noMetricsServer } from '../support/metrics';
import { waitFor } from '../support/wait';
import { runDirPaths } from '../../src/api/run-dir';
import { labDown, labUp } from '../../lab/src/lab';
import { defaultRunDir, defaultTopologyPath } from '../../lab/src/names';
import { createAgentNode, removeAgentNode } from '../agent/agent-node';
import { specFileText } from '../support/node-specs';
import { hubSpecDocument } from './reconcile.bench';
import type { BenchFigure, BenchSuite } from './result';

const cliPath = process.env.IDLE_AGENT_CLI ?? join(__dirname, '../../src/cli/main.js');
const clockTicks = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const settleMs = 5_000;
const sampleMs = 20_000;

/** A process and its descendants, now. */
function tree(pid: number): number[] {
  const children = (p: number) => {
    try {
      return readdirSync(`/proc/${p}/task`).flatMap((t) =>
        readFileSync(`/proc/${p}/task/${t}/children`, 'utf8').split(' ').filter(Boolean).map(Number),
      );
    } catch (err) {
      if (gone(err)) return []; // exited meanwhile
      throw err;
    }
  };
  const all = [pid];
  for (let i = 0; i < all.length; i++) all.push(...children(all[i]!));
  return all;
}

/** A /proc read that failed because the process exited between listing and reading. */
const gone = (err: unknown) => ['ENOENT', 'ESRCH'].includes((err as NodeJS.ErrnoException).code ?? '');

/** CPU seconds of a process: its own, and its reaped children's (utime, stime, cutime, cstime). */
function cpuSeconds(pid: number): number {
  // The fields after the command (which may hold spaces) start at field 3.
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8')
    .replace(/^.*\) /, '')
    .split(' ');
  return fields.slice(11, 15).reduce((sum, f) => sum + Number(f), 0) / clockTicks;
}

/** The agent's CPU and its descendants'; a descendant that exited meanwhile counts in its parent's (reaped). */
const treeCpuSeconds = (pid: number) =>
  cpuSeconds(pid) +
  tree(pid)
    .slice(1)
    .reduce((sum, p) => {
      try {
        return sum + cpuSeconds(p);
      } catch (err) {
        if (gone(err)) return sum;
        throw err;
      }
    }, 0);
const rssMiB = (pid: number) => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024;

async function idleAgent(intervalSeconds: string): Promise<{ cpuPercent: number; rss: number }> {
  const agentNode = createAgentNode('strait-bench-idle-');
  let child: ChildProcess | undefined;
  try {
    const { node, pinRoot, dir } = agentNode;
    const specPath = join(dir, 'nodes', 'gw.json');
    const statusPath = join(dir, 'status', 'gw.json');
    mkdirSync(join(dir, 'nodes'));
    writeFileSync(specPath, specFileText(hubSpecDocument(100_000, 0)));
    let stderr = '';
    child = spawn(
      process.execPath,
      [
        cliPath,
        'agent',
        '--spec',
        specPath,
        '--pin-root',
        pinRoot,
        '--status',
        statusPath,
        '--netns',
        node,
        '--interval',
        intervalSeconds,
        ...noMetricsServer,
      ],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
    child.stderr!.on('data', (chunk) => (stderr += String(chunk)));
    const ready = () =>
      existsSync(statusPath) &&
      (JSON.parse(readFileSync(statusPath, 'utf8')) as { ready: boolean; specGeneration: number }).specGeneration === 1;
    await waitFor('the agent ready with the spec applied', ready, 60_000, () => stderr);
    await sleep(settleMs);
    const pid = child.pid!;
    const before = treeCpuSeconds(pid);
    await sleep(sampleMs);
    const cpuPercent = ((treeCpuSeconds(pid) - before) / (sampleMs / 1000)) * 100;
    return { cpuPercent, rss: rssMiB(pid) };
  } finally {
    removeAgentNode(agentNode, child);
  }
}

/** The default lab's agents, each: CPU over the same window, and RSS. */
async function idleLabAgents(): Promise<{ node: string; cpuPercent: number; rss: number }[]> {
  const say = (line: string) => process.stderr.write(`  ${line}\n`);
  try {
    await labUp(defaultTopologyPath, { runDir: defaultRunDir, dataplane: 'ebpf', say, convergeTimeoutMs: 120_000 });
    await sleep(settleMs);
    const pidsDir = join(defaultRunDir, runDirPaths.pids);
    const agents = readdirSync(pidsDir)
      .filter((f) => /^agent-.*\.pid$/.test(f))
      .map((f) => ({ node: f.slice('agent-'.length, -'.pid'.length), pid: Number(readFileSync(join(pidsDir, f), 'utf8')) }));
    const before = agents.map((a) => treeCpuSeconds(a.pid));
    await sleep(sampleMs);
    return agents.map((a, i) => ({
      node: a.node,
      cpuPercent: ((treeCpuSeconds(a.pid) - before[i]!) / (sampleMs / 1000)) * 100,
      rss: rssMiB(a.pid),
    }));
  } finally {
    await labDown(defaultRunDir, say);
  }
}

export const run: BenchSuite = async () => {
  const figures: BenchFigure[] = [];
  const build = process.env.IDLE_AGENT_CLI === undefined ? '' : ` (${process.env.IDLE_AGENT_CLI})`;
  for (const [interval, which] of [
    ['1', 'the default --interval 1'],
    ['0.2', "the lab's --interval 0.2"],
  ] as const) {
    const { cpuPercent, rss } = await idleAgent(interval);
    figures.push(
      {
        suite: 'idle',
        name: `idle agent at 100,000 NatMappings, ${which}: CPU`,
        value: Math.round(cpuPercent * 100) / 100,
        unit: '% of a core',
        note: `over ${sampleMs / 1000} s, ${settleMs / 1000} s after ready; with its children${build}`,
      },
      {
        suite: 'idle',
        name: `idle agent at 100,000 NatMappings, ${which}: RSS`,
        value: Math.round(rss),
        unit: 'MiB',
        note: `the agent process${build}`,
      },
    );
  }
  if (process.env.IDLE_LAB === '1') {
    const agents = await idleLabAgents();
    const top = agents.reduce((a, b) => (b.cpuPercent > a.cpuPercent ? b : a));
    figures.push(
      {
        suite: 'idle',
        name: 'idle agent in the default lab (eBPF, --interval 0.2): CPU, the busiest agent',
        value: Math.round(top.cpuPercent * 100) / 100,
        unit: '% of a core',
        note: `${top.node}; every agent: ${agents.map((a) => `${a.node} ${a.cpuPercent.toFixed(2)}%`).join(', ')}`,
      },
      {
        suite: 'idle',
        name: 'idle agent in the default lab: RSS, the largest agent',
        value: Math.round(Math.max(...agents.map((a) => a.rss))),
        unit: 'MiB',
        note: agents.map((a) => `${a.node} ${Math.round(a.rss)}`).join(', '),
      },
    );
  }
  return figures;
};
