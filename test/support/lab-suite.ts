/**
 * The hooks every end-to-end lab suite needs: leave a developer's lab alone, take each test's lab down
 * (printing its output when the test failed), and check at the end that nothing of any lab is left and
 * the host's own links, qdiscs, rules and routes are as they were.
 */
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { run } from '../../src/kernel/command';
import { type AgentPace, type LabDataplane, type Say, labDown, nodePinRoot, readHeartbeat, startAgent } from '../../lab/src/lab';
import type { NodeDataplaneStatus } from '../../src/api/node-dataplane';
import { type LabTestOutcome, labStatus } from '../../lab/src/lab-test';
import { isAlive, knownProcesses, logsDir, processPid, stopProcess } from '../../lab/src/processes';
import type { LabTopology } from '../../lab/src/topology';
import { inspectNode } from '../../src/dataplane/ebpf/inspect';
import { labPinRoot, nodeNetns, podNetns } from '../../lab/src/names';
import { labNamespaces } from '../../lab/src/network';
import { type PingCount, echoOutcome } from '../../lab/src/ping';
import { cannotRunHere } from './kernel';
import { restartLines } from './supervised';
import { waitFor } from './wait';

const hostState = () => ({
  links: run(['ip', '-br', 'link'])
    .split('\n')
    .map((l) => l.split(/\s+/)[0])
    .sort(),
  qdiscs: run(['tc', 'qdisc', 'show']),
  rules: run(['ip', 'rule']),
  routes: run(['ip', 'route']),
});

/** Call in a describe whose tests bring labs up in `runDir`, reporting through `say` into `lines`. */
export function labSuiteHooks(runDir: string, lines: string[], say: Say): void {
  let hostBefore: ReturnType<typeof hostState>;
  before(function (this: Mocha.Context) {
    if (labNamespaces().length > 0) cannotRunHere(this, "a lab is up (namespaces sl-*): left alone; 'strait-lab down' first");
    hostBefore = hostState();
  });
  afterEach(async function (this: Mocha.Context) {
    if (this.currentTest?.state === 'failed') {
      process.stdout.write(`lab output:\n${lines.slice(-60).join('\n')}\n`);
      // A lab process that died (an echo server) or crashed and was restarted by its supervisor (an agent, a
      // controller) explains many failures at once; its log goes with the run dir.
      for (const name of knownProcesses(runDir)) {
        const restarts = restartLines(runDir, name).length;
        if (isAlive(processPid(runDir, name) ?? 0) && restarts === 0) continue;
        const what = restarts > 0 ? `crashed (restarted ${restarts} times)` : 'died';
        process.stdout.write(
          `${name} ${what}; its log ends:\n${readFileSync(join(logsDir(runDir), `${name}.log`), 'utf8').slice(-2000)}\n`,
        );
      }
    }
    lines.length = 0;
    await labDown(runDir, say);
  });
  after(() => {
    assert.deepEqual(labNamespaces(), [], 'no lab namespace is left');
    assert.equal(existsSync(labPinRoot), false, 'no pinned map or link is left');
    assert.equal(existsSync(runDir), false);
    const podEtc = existsSync('/etc/netns') ? readdirSync('/etc/netns').filter((e) => e.startsWith('sl-')) : [];
    assert.deepEqual(podEtc, [], "no pod's /etc/netns directory is left");
    assert.deepEqual(hostState(), hostBefore, "the host's links, qdiscs, rules and routes are as they were");
  });
}

export { emulatedLab, emulatedPace } from '../../lab/src/pace';

/** A node's last heartbeat (its agent writes one after each reconcile); fails when there is none. */
export function heartbeatOf(runDir: string, cluster: string, node: string): NodeDataplaneStatus {
  const heartbeat = readHeartbeat(runDir, cluster, node);
  assert.ok(heartbeat, `${node} has written no heartbeat`);
  return heartbeat;
}

/**
 * Stops a node's agent (SIGTERM: it leaves the datapath in place) and starts a new one; resolves once the
 * new agent has written a Ready heartbeat, i.e. applied the spec. `pace`: the lab's agents' (LabOptions);
 * `build`: the CLI of another build to start (an upgrade, or back).
 */
export async function restartAgent(
  runDir: string,
  topology: LabTopology,
  node: string,
  dataplane: LabDataplane,
  options: { pace?: AgentPace; timeoutMs?: number; build?: string } = {},
): Promise<void> {
  const cluster = topology.clusters.find((c) => c.nodes.some((n) => n.name === node))!.id;
  await stopProcess(runDir, `agent-${node}`);
  // Taken once the old agent is gone: it writes heartbeats until it exits (seconds under emulation).
  const restarted = Date.now();
  startAgent(topology, runDir, node, dataplane, options.pace, undefined, options.build);
  // The heartbeat file is there from the old agent: what counts is a Ready one written after it exited.
  await waitFor(
    `${node}'s new agent to be Ready`,
    () => {
      const h = heartbeatOf(runDir, cluster, node);
      return h.ready && Date.parse(h.time) > restarted;
    },
    options.timeoutMs ?? 20_000,
  );
}

/** The gateway a cluster's controller elected last (its controller.json in the run directory). */
export const gatewayOf = (runDir: string, cluster: string) =>
  (JSON.parse(readFileSync(join(runDir, cluster, 'controller.json'), 'utf8')) as { gateway: string }).gateway;

/** Runs `argv` in a lab pod's namespace: its stdout, whatever the exit code (a minute at most). */
export function inPod(pod: string, argv: string[]): Promise<string> {
  return new Promise((resolve) =>
    execFile('ip', ['netns', 'exec', podNetns(pod), ...argv], { timeout: 60_000 }, (_err, stdout) => resolve(stdout)),
  );
}

export interface PingRun extends PingCount {
  /**
   * The longest time without a reply, in ms: from the start to the first reply, between two replies,
   * or from the last reply to the end. With replies every `intervalS`, a loss window shows as one long
   * gap; counting lost pings would not measure it, since ping slows down while its pings go unanswered.
   */
  longestGapMs: number;
}

/** A ping run's judged requests (the first `judged`) and its longest gap between `started` and `ended`. */
function pingRun(code: number, stdout: string, stderr: string, judged: number, started: number, ended: number): PingRun {
  const { transmitted, received, replyTimesMs } = echoOutcome(code, stdout, stderr, judged);
  const marks = [started, ...replyTimesMs, ended];
  const longestGapMs = Math.round(Math.max(...marks.slice(1).map((t, i) => t - marks[i]!)));
  return { transmitted, received, longestGapMs };
}

/**
 * `count` pings `intervalS` apart from a lab pod: how many of them went out and were answered (see
 * echoOutcome), and the longest gap. Not pingArgv's deadline: with one, ping stops at the first ICMP
 * error, which a failover may well bring. Instead ping sends a second's worth of requests more, not
 * judged, so that each judged request has at least a second for its reply before ping stops.
 */
export async function pingFor(pod: string, address: string, count: number, intervalS = 0.01): Promise<PingRun> {
  const argv = ['ping', '-n', '-D', '-i', String(intervalS), '-c', String(count + Math.ceil(1 / intervalS)), '-W', '1', address];
  const started = Date.now();
  const { code, stdout, stderr } = await new Promise<{ code: number; stdout: string; stderr: string }>((resolve) =>
    execFile('ip', ['netns', 'exec', podNetns(pod), ...argv], { timeout: 300_000, maxBuffer: 16 << 20 }, (err, out, errOut) =>
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : -1) : 0, stdout: out, stderr: errOut }),
    ),
  );
  return pingRun(code, stdout, stderr, count, started, Date.now());
}

/**
 * Pings `intervalS` apart from a lab pod until `until` settles, then for a second more (those last
 * requests are not judged, as pingFor's); at most `maxS` seconds. For traffic that must span an event of
 * unknown length (an agent restart in an emulated VM: 20 to 60 s) without a fixed count sized for the
 * slowest case.
 */
export async function pingUntil(pod: string, address: string, until: Promise<unknown>, intervalS: number, maxS = 300): Promise<PingRun> {
  const child = spawn('ip', [
    'netns',
    'exec',
    podNetns(pod),
    'ping',
    '-n',
    '-D',
    '-i',
    String(intervalS),
    '-w',
    String(maxS),
    '-W',
    '1',
    address,
  ]);
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const started = Date.now();
  const exited = new Promise<number>((resolve) => child.on('close', (code) => resolve(code ?? -1)));
  // ping prints its statistics on SIGINT, as at its end.
  const stop = () => setTimeout(() => child.kill('SIGINT'), 1000);
  until.then(stop, stop);
  const code = await exited;
  const ended = Date.now();
  const unjudged = Math.ceil(1 / intervalS);
  const sent = Number(/(\d+) packets transmitted/.exec(stdout)?.[1] ?? 0);
  return pingRun(code, stdout, stderr, Math.max(0, sent - unjudged), started, ended);
}

/** How many peers a node has programmed, read from the kernel: map entries, or tunnel rules and routes. */
export function peersProgrammed(dataplane: 'ebpf' | 'kernel', node: string): number {
  if (dataplane === 'ebpf') return inspectNode(nodePinRoot(node)).peers.length;
  // Every peer has a rule to its remote PodCIDR and one to its ExternalCIDR, on workers and gateways alike.
  return (
    run(['ip', '-n', nodeNetns(node), 'rule'])
      .split('\n')
      .filter((l) => l.startsWith('18952:')).length / 2
  );
}

/** How many checks of each kind a lab test ran: the exact count, so a check that silently drops out shows. */
/**
 * The node's end of a pod's veth: its name is the CNI plugin's (`veth` and 8 hex digits), found as the
 * link whose index is the pod's `eth0`'s peer.
 */
export function podVethOf(node: string, pod: string): string {
  const [eth0] = JSON.parse(run(['ip', '-n', podNetns(pod), '-j', 'link', 'show', 'eth0'])) as { link_index: number }[];
  const links = JSON.parse(run(['ip', '-n', nodeNetns(node), '-j', 'link', 'show'])) as { ifindex: number; ifname: string }[];
  const veth = links.find((l) => l.ifindex === eth0!.link_index);
  assert.ok(veth, `no link of ${node} is the peer of ${pod}'s eth0`);
  return veth.ifname;
}

export const checksByKind = (results: { kind: string }[]) =>
  results.reduce<Record<string, number>>((n, r) => ({ ...n, [r.kind]: (n[r.kind] ?? 0) + 1 }), {});

/**
 * The interfaces of lab nodes whose reverse-path filter is not strict, as `ns dev=value` (empty: all
 * strict). The kernel applies max(all, device), so `all` must be 1 and no device may say 2 (loose).
 */
export function nonStrictReversePath(nodes: string[]): string[] {
  return nodes.flatMap((node) => {
    const values = new Map(
      run(['ip', 'netns', 'exec', nodeNetns(node), 'sysctl', '-a', '-r', '^net\\.ipv4\\.conf\\..*\\.rp_filter$'])
        .trim()
        .split('\n')
        .map((l) => /^net\.ipv4\.conf\.(.+)\.rp_filter = (\d)$/.exec(l)!)
        .map((m) => [m[1]!, Number(m[2])] as const),
    );
    const all = values.get('all');
    return [...values]
      .filter(([dev, v]) => dev !== 'default' && Math.max(all ?? 0, v) !== 1)
      .map(([dev, v]) => `${nodeNetns(node)} ${dev}=${v} (all=${all})`);
  });
}

/**
 * What the mixed topology (lab/src/topologies/mixed.yaml) must show once its checks ran: each cluster on
 * its pinned dataplane, both peerings right on the wire, and each eBPF gateway having translated traffic
 * both ways with the fallback hub (its frames were accepted).
 */
export async function assertMixedLab(runDir: string, outcome: LabTestOutcome): Promise<void> {
  // The dual-stack lab's count, each check in both families: a check that silently drops out shows.
  assert.deepEqual(checksByKind(outcome.results), { peered: 176, intra: 60, hub: 8, 'not-peered': 2 });
  assert.ok(
    outcome.results.some((r) => r.kind === 'hub' && r.probe === 'udp' && r.detail === `reply from ${r.address}`),
    'the hub reply comes from the address dialled',
  );
  assert.deepEqual(
    outcome.wire.map((w) => [w.peering.join('-'), w.ok]),
    [
      ['cluster-a-cluster-b', true],
      ['cluster-b-cluster-c', true],
    ],
  );
  const status = await labStatus(runDir);
  const dataplanes = Object.fromEntries(status.clusters.map((c) => [c.id, [...new Set(c.nodes.map((n) => n.dataplane))]]));
  assert.deepEqual(
    dataplanes,
    { 'cluster-a': ['ebpf'], 'cluster-b': ['kernel'], 'cluster-c': ['ebpf'] },
    'each cluster runs its pinned dataplane',
  );
  for (const id of ['cluster-a', 'cluster-c']) {
    const c = status.clusters.find((x) => x.id === id)!;
    const gateway = c.nodes.find((n) => n.name === c.gateway)!;
    assert.ok(
      gateway.peers.length === 1 && gateway.peers[0]!.txPackets > 0 && gateway.peers[0]!.rxPackets > 0,
      `${id}'s eBPF gateway counted traffic both ways: ${JSON.stringify(gateway.peers)}`,
    );
  }
}
