/**
 * How soon a new pod is programmed, and what watching the kernel costs at rest. An eBPF agent process
 * runs a node namespace with a reconcile interval of a minute, so only the netlink link event can
 * attach anything; each of 50 pod veths is created by `ip link add`, and its latency runs from that
 * command returning to the time of the agent's "pod interface programmed" line (written right after the
 * attach; both clocks are this machine's). Before, a new pod waited for the next reconcile: up to one
 * interval (1 s by default, 250 ms in the lab), half of it on average.
 *
 * The idle cost saved: the four monitor processes the kernel fallback ran per node before the netlink
 * monitor (`ip monitor all`, `ip xfrm monitor`, `bridge monitor fdb`, `nft monitor`), their resident
 * memory measured here by starting them again in a throwaway namespace.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ip } from '../../src/kernel/command';
import { withThrowawayNetns } from '../../src/kernel/netns';
import { createAgentNode, removeAgentNode } from '../agent/agent-node';
import { nodeSpecDocument, specFileText } from '../support/node-specs';
import { noMetricsServer } from '../support/metrics';
import { waitFor } from '../support/wait';
import { type BenchFigure, type BenchSuite, median, percentile } from './result';

const pods = 50;
const cliPath = join(__dirname, '../../src/cli/main.js');

const rssKiB = (pid: number) => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]);

async function podLatency(): Promise<BenchFigure[]> {
  const node = createAgentNode('strait-bench-pod-');
  let agent: ChildProcess | undefined;
  try {
    mkdirSync(join(node.dir, 'nodes'));
    const specPath = join(node.dir, 'nodes', 'n1.json');
    const statusPath = join(node.dir, 'status', 'n1.json');
    writeFileSync(specPath, specFileText(nodeSpecDocument()));
    agent = spawn(
      process.execPath,
      [
        cliPath,
        'agent',
        '--spec',
        specPath,
        '--pin-root',
        node.pinRoot,
        '--status',
        statusPath,
        '--netns',
        node.node,
        '--interval',
        '60',
        ...noMetricsServer,
      ],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
    let log = '';
    const programmedAt = new Map<string, number>();
    agent.stderr!.on('data', (chunk) => {
      log += String(chunk);
      const lines = log.split('\n');
      log = lines.pop()!;
      for (const line of lines) {
        const entry = JSON.parse(line) as { msg: string; time: number; interface?: string };
        if (entry.msg === 'pod interface programmed') programmedAt.set(entry.interface!, entry.time);
      }
    });
    await waitFor('a ready heartbeat', () => (JSON.parse(readFileSync(statusPath, 'utf8')) as { ready: boolean }).ready, 30_000);
    const latencies: number[] = [];
    for (let i = 0; i < pods; i++) {
      const name = `p-b${i}`;
      execFileSync('ip', ['-n', node.node, 'link', 'add', name, 'type', 'veth', 'peer', 'name', `pb${i}`, 'netns', node.pod]);
      const created = Date.now();
      await waitFor(
        `the agent's line for ${name}`,
        () => programmedAt.has(name),
        10_000,
        () => log,
        1,
      );
      latencies.push(programmedAt.get(name)! - created);
    }
    const agentRss = rssKiB(agent.pid!);
    return [
      {
        suite: 'podattach',
        name: `new pod programmed after its veth appears (link event), median of ${pods}`,
        value: median(latencies),
        unit: 'ms',
        note: "from `ip link add` returning to the agent's log line; before: up to one interval, 1,000 ms by default",
      },
      { suite: 'podattach', name: `the same, p99 (the slowest of ${pods})`, value: percentile(latencies, 99), unit: 'ms' },
      {
        suite: 'podattach',
        name: "the eBPF agent's resident memory at rest, after those pods",
        value: Math.round(agentRss / 1024),
        unit: 'MiB',
      },
    ];
  } finally {
    removeAgentNode(node, agent);
  }
}

/** The resident memory of the four monitor processes the fallback ran before, idle in a fresh namespace. */
const monitorProcesses = () =>
  withThrowawayNetns('strait-bench-monitors', async (ns) => {
    ip(['link', 'set', 'lo', 'up'], ns);
    const commands = [
      ['ip', '-n', ns, 'monitor', 'all'],
      ['ip', '-n', ns, 'xfrm', 'monitor'],
      ['ip', 'netns', 'exec', ns, 'bridge', 'monitor', 'fdb'],
      ['ip', 'netns', 'exec', ns, 'nft', 'monitor'],
    ];
    const children = commands.map(([command, ...args]) => spawn(command!, args, { stdio: 'ignore' }));
    try {
      // Each is subscribed and idle once it has exec'd its tool (ip netns exec execs in place).
      await waitFor(
        'the monitors to start',
        () => children.every((c) => /(^|\/)(ip|bridge|nft)\0(?!netns)/.test(readFileSync(`/proc/${c.pid}/cmdline`, 'latin1'))),
        10_000,
      );
      await new Promise((r) => setTimeout(r, 500));
      const total = children.reduce((sum, c) => sum + rssKiB(c.pid!), 0);
      return [
        {
          suite: 'podattach',
          name: 'resident memory of the four monitor processes per fallback node, before (now: none, 3 netlink sockets in the agent)',
          value: Math.round(total / 102.4) / 10,
          unit: 'MiB',
          note: 'ip monitor all, ip xfrm monitor, bridge monitor fdb, nft monitor',
        },
      ];
    } finally {
      for (const c of children) c.kill('SIGKILL');
    }
  });

export const run: BenchSuite = async () => [...(await podLatency()), ...(await monitorProcesses())];
