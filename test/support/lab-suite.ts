/**
 * The hooks every end-to-end lab suite needs: leave a developer's lab alone, take each test's lab down
 * (printing its output when the test failed), and check at the end that nothing of any lab is left and
 * the host's own links, qdiscs, rules and routes are as they were.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { run } from '../../src/kernel/command';
import { type Say, labDown, nodePinRoot } from '../../src/lab/lab';
import { inspectNode } from '../../src/datapath/inspect';
import { labPinRoot, nodeNetns, podNetns } from '../../src/lab/names';
import { labNamespaces } from '../../src/lab/network';
import { type PingCount, pingOutcome } from '../../src/lab/ping';
import { cannotRunHere } from './kernel';

const hostState = () => ({
  links: run(['ip', '-br', 'link']).split('\n').map((l) => l.split(/\s+/)[0]).sort(),
  qdiscs: run(['tc', 'qdisc', 'show']),
  rules: run(['ip', 'rule']),
  routes: run(['ip', 'route']),
});

/** Call in a describe whose tests bring labs up in `runDir`, reporting through `say` into `lines`. */
export function labSuiteHooks(runDir: string, lines: string[], say: Say): void {
  let hostBefore: ReturnType<typeof hostState>;
  before(function (this: Mocha.Context) {
    if (labNamespaces().length > 0) cannotRunHere(this, "a lab is up (namespaces sl-*): left alone; 'strait lab down' first");
    hostBefore = hostState();
  });
  afterEach(async function (this: Mocha.Context) {
    if (this.currentTest?.state === 'failed') process.stdout.write(`lab output:\n${lines.slice(-60).join('\n')}\n`);
    lines.length = 0;
    await labDown(runDir, say);
  });
  after(() => {
    assert.deepEqual(labNamespaces(), [], 'no lab namespace is left');
    assert.equal(existsSync(labPinRoot), false, 'no pinned map or link is left');
    assert.equal(existsSync(runDir), false);
    assert.deepEqual(hostState(), hostBefore, "the host's links, qdiscs, rules and routes are as they were");
  });
}

/** The gateway a cluster's controller elected last (its controller.json in the run directory). */
export const gatewayOf = (runDir: string, cluster: string) => (JSON.parse(readFileSync(join(runDir, cluster, 'controller.json'), 'utf8')) as { gateway: string }).gateway;

/** Runs `argv` in a lab pod's namespace: its stdout, whatever the exit code (a minute at most). */
export function inPod(pod: string, argv: string[]): Promise<string> {
  return new Promise((resolve) => execFile('ip', ['netns', 'exec', podNetns(pod), ...argv], { timeout: 60_000 }, (_err, stdout) => resolve(stdout)));
}

export interface PingRun extends PingCount {
  /**
   * The longest time without a reply, in ms: from the start to the first reply, between two replies,
   * or from the last reply to the end. With replies every `intervalS`, a loss window shows as one long
   * gap; counting lost pings would not measure it, since ping slows down while its pings go unanswered.
   */
  longestGapMs: number;
}

/** `count` pings `intervalS` apart (1 s deadline each) from a lab pod: how many were sent and answered, and the longest gap. */
export async function pingFor(pod: string, address: string, count: number, intervalS = 0.01): Promise<PingRun> {
  const started = Date.now();
  const { code, stdout, stderr } = await new Promise<{ code: number; stdout: string; stderr: string }>((resolve) =>
    execFile('ip', ['netns', 'exec', podNetns(pod), 'ping', '-D', '-i', String(intervalS), '-c', String(count), '-W', '1', address], { timeout: 120_000, maxBuffer: 16 << 20 }, (err, out, errOut) =>
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : -1) : 0, stdout: out, stderr: errOut })));
  const ended = Date.now();
  const counts = pingOutcome(code, stdout, stderr);
  // Replies: "[1700000000.123456] 64 bytes from ...: icmp_seq=..."
  const replies = [...stdout.matchAll(/^\[(\d+\.\d+)\] \d+ bytes from/gm)].map((m) => Number(m[1]) * 1000);
  const marks = [started, ...replies, ended];
  const longestGapMs = Math.round(Math.max(...marks.slice(1).map((t, i) => t - marks[i]!)));
  return { ...counts, longestGapMs };
}

/** How many peers a node has programmed, read from the kernel: map entries, or tunnel rules and routes. */
export function peersProgrammed(dataplane: 'ebpf' | 'kernel', node: string): number {
  if (dataplane === 'ebpf') return inspectNode(nodePinRoot(node)).peers.length;
  // Every peer has a rule to its remote PodCIDR and one to its ExternalCIDR, on workers and gateways alike.
  return run(['ip', '-n', nodeNetns(node), 'rule']).split('\n').filter((l) => l.startsWith('18952:')).length / 2;
}

/** How many checks of each kind a lab test ran: the exact count, so a check that silently drops out shows. */
export const checksByKind = (results: { kind: string }[]) => results.reduce<Record<string, number>>((n, r) => ({ ...n, [r.kind]: (n[r.kind] ?? 0) + 1 }), {});

/**
 * The interfaces of lab nodes whose reverse-path filter is not strict, as `ns dev=value` (empty: all
 * strict). The kernel applies max(all, device), so `all` must be 1 and no device may say 2 (loose).
 */
export function nonStrictReversePath(nodes: string[]): string[] {
  return nodes.flatMap((node) => {
    const values = new Map(run(['ip', 'netns', 'exec', nodeNetns(node), 'sysctl', '-a', '-r', '^net\\.ipv4\\.conf\\..*\\.rp_filter$']).trim().split('\n')
      .map((l) => /^net\.ipv4\.conf\.(.+)\.rp_filter = (\d)$/.exec(l)!).map((m) => [m[1]!, Number(m[2])] as const));
    const all = values.get('all');
    return [...values].filter(([dev, v]) => dev !== 'default' && Math.max(all ?? 0, v) !== 1).map(([dev, v]) => `${nodeNetns(node)} ${dev}=${v} (all=${all})`);
  });
}
