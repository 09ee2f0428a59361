/**
 * Agent start on an adopted node (the datapath a previous agent left, as after an upgrade or a crash):
 * from the process spawned to its first successful apply ("spec applied" in its log), for each
 * dataplane, with the probe report kept from an earlier start of this boot (the default) and with
 * `--probe-cache none` (a probe at every start, as before). Median and p90 of `rounds` restarts each.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { type AgentNode, createAgentNode, removeAgentNode } from '../agent/agent-node';
import { nodeSpecDocument, specFileText } from '../agent/fixture';
import { ip } from '../../src/kernel/command';
import { noMetricsServer } from '../support/metrics';
import { type BenchFigure, type BenchSuite, median, percentile } from './result';

const cli = join(__dirname, '..', '..', 'src', 'cli', 'main.js');

/** Spawns an agent, resolves with the ms from spawn to its first "spec applied" line, then stops it (SIGTERM) and waits for its exit. */
function startToProgrammed(node: AgentNode, dataplane: string, probeCache: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    let programmedMs: number | undefined;
    let log = '';
    const child: ChildProcess = spawn(process.execPath, [cli, 'agent', '--spec', join(node.dir, 'spec.json'), '--pin-root', node.pinRoot, '--netns', node.node,
      '--dataplane', dataplane, '--interval', '10', '--probe-cache', probeCache, ...noMetricsServer], { stdio: ['ignore', 'ignore', 'pipe'] });
    child.stderr!.on('data', (chunk) => {
      log += String(chunk);
      if (programmedMs === undefined && log.includes('"msg":"spec applied"')) {
        programmedMs = performance.now() - started;
        child.kill('SIGTERM');
      }
    });
    // An apply that fails is retried only at the next interval: give up instead of waiting for it.
    const timeout = setTimeout(() => child.kill('SIGTERM'), 30_000);
    child.on('close', () => clearTimeout(timeout));
    child.on('close', () => (programmedMs === undefined ? reject(new Error(`the agent exited without applying:\n${log}`)) : resolve(programmedMs)));
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
      for (const [variant, probeCache] of [['probe report cached', cache], ['probed at every start', 'none']] as const) {
        const samples: number[] = [];
        for (let i = 0; i < rounds; i++) samples.push(await startToProgrammed(node, dataplane, probeCache));
        const note = `${rounds} restarts, p90 ${percentile(samples, 90).toFixed(0)} ms, min ${Math.min(...samples).toFixed(0)} ms`;
        figures.push({ suite: 'start', name: `${dataplane}: process start to the first apply on an adopted node, ${variant} (median)`, value: Math.round(median(samples)), unit: 'ms', note });
      }
    } finally {
      removeAgentNode(node, undefined);
    }
  }
  return figures;
};
