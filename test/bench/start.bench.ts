/**
 * Agent start on an adopted node (the datapath a previous agent left, as after an upgrade or a crash):
 * from the process spawned to its first successful apply ("spec applied" in its log), for each
 * dataplane, with the probe report kept from an earlier start of this boot (the default) and with
 * `--probe-cache none` (a probe at every start, as before). Median and p90 of `rounds` restarts each.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { type AgentNode, createAgentNode, removeAgentNode } from '../agent/agent-node';
import { nodeSpecDocument, specFileText } from '../support/node-specs';
import { ip } from '../../src/kernel/command';
import { noMetricsServer } from '../support/metrics';
import { type BenchFigure, type BenchSuite, median, percentile } from './result';

const cli = join(__dirname, '..', '..', 'src', 'cli', 'main.js');

/** CPU time the process used so far (user + system, its own: not the ip and nft processes it ran), ms. */
function cpuMs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8')
    .replace(/^.*\) /, '')
    .split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
}

interface Start {
  /** Wall time from spawn to the first "spec applied" line: on a machine shared with other work, mostly waiting for a core. */
  wallMs: number;
  /** The agent's own CPU time by then: what the start costs whatever the load. */
  cpuMs: number;
}

/** Spawns an agent, times its first "spec applied" line, then stops it (SIGTERM) and waits for its exit. */
function startToProgrammed(node: AgentNode, dataplane: string, probeCache: string): Promise<Start> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    let programmed: Start | undefined;
    let log = '';
    const child: ChildProcess = spawn(
      process.execPath,
      [
        cli,
        'agent',
        '--spec',
        join(node.dir, 'spec.json'),
        '--pin-root',
        node.pinRoot,
        '--netns',
        node.node,
        '--dataplane',
        dataplane,
        '--interval',
        '10',
        '--probe-cache',
        probeCache,
        ...noMetricsServer,
      ],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
    child.stderr!.on('data', (chunk) => {
      log += String(chunk);
      if (programmed === undefined && log.includes('"msg":"spec applied"')) {
        programmed = { wallMs: performance.now() - started, cpuMs: cpuMs(child.pid!) };
        child.kill('SIGTERM');
      }
    });
    // An apply that fails is retried only at the next interval: give up instead of waiting for it.
    const timeout = setTimeout(() => child.kill('SIGTERM'), 30_000);
    child.on('close', () => clearTimeout(timeout));
    child.on('close', () =>
      programmed === undefined ? reject(new Error(`the agent exited without applying:\n${log}`)) : resolve(programmed),
    );
  });
}

export const run: BenchSuite = async () => {
  const rounds = 10;
  const figures: BenchFigure[] = [];
  for (const dataplane of ['ebpf', 'kernel']) {
    const node = createAgentNode('strait-bench-start-');
    try {
      // As on any node: the fallback's onlink next hops are refused ("invalid gateway") while lo is down.
      ip(['link', 'set', 'lo', 'up'], node.node);
      writeFileSync(join(node.dir, 'spec.json'), specFileText(nodeSpecDocument()));
      mkdirSync(join(node.dir, 'run'));
      const cache = join(node.dir, 'run', 'probe-cache.json');
      // The node adopted: a first agent programmed it (and kept the probe report).
      await startToProgrammed(node, dataplane, cache);
      for (const [variant, probeCache] of [
        ['probe report cached', cache],
        ['probed at every start', 'none'],
      ] as const) {
        const starts: Start[] = [];
        for (let i = 0; i < rounds; i++) starts.push(await startToProgrammed(node, dataplane, probeCache));
        const wall = starts.map((s) => s.wallMs);
        const cpu = starts.map((s) => s.cpuMs);
        const load = loadavg()[0]!.toFixed(1);
        figures.push({
          suite: 'start',
          name: `${dataplane}: process start to the first apply on an adopted node, ${variant} (median)`,
          value: Math.round(median(wall)),
          unit: 'ms',
          note: `${rounds} restarts, p90 ${percentile(wall, 90).toFixed(0)} ms, min ${Math.min(...wall).toFixed(0)} ms; load average ${load}`,
        });
        figures.push({
          suite: 'start',
          name: `${dataplane}: the agent's own CPU time to that apply, ${variant} (median)`,
          value: Math.round(median(cpu)),
          unit: 'ms',
          note: `p90 ${percentile(cpu, 90).toFixed(0)} ms; 10 ms resolution`,
        });
      }
    } finally {
      removeAgentNode(node, undefined);
    }
  }
  return figures;
};
