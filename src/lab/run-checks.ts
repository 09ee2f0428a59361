/** Runs traffic checks from inside the pods' namespaces, a few at a time, with progress as they finish. */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import type { TrafficCheck } from './checks';
import { echoPort, podNetns } from './names';

export interface CheckResult extends TrafficCheck {
  ok: boolean;
  detail: string;
  ms: number;
  /** Passed only when tried again (a path's very first packets can be lost while it settles). */
  retried?: boolean;
}

const echoClient = join(__dirname, 'echo-client.js');

function exec(argv: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(argv[0]!, argv.slice(1), { timeout: 10_000 }, (err, stdout, stderr) => {
      const code = err ? (typeof (err as { code?: unknown }).code === 'number' ? (err as { code: number }).code : 1) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}

async function runOne(check: TrafficCheck): Promise<CheckResult> {
  const inPod = ['ip', 'netns', 'exec', podNetns(check.from)];
  const started = Date.now();
  const argv = check.proto === 'icmp'
    // A fresh path may lose its first packet to neighbour resolution: 3 pings, or 3 s for a UDP/TCP echo.
    ? [...inPod, 'ping', '-c', '3', '-i', '0.3', '-w', '3', '-W', '1', '-q', check.address]
    : [...inPod, process.execPath, echoClient, check.proto, check.address, String(echoPort), '3000'];
  const r = await exec(argv);
  const reached = r.code === 0;
  let detail = reached ? 'reached' : 'no answer';
  if (check.proto !== 'icmp') {
    try {
      const out = JSON.parse(r.stdout) as { error?: string; from?: string };
      detail = out.error ?? `reply from ${out.from}`;
    } catch {
      detail = r.stderr.trim() || detail;
    }
  }
  return { ...check, ok: reached === (check.expect === 'reach'), detail, ms: Date.now() - started };
}

/** A check that should reach and did not is tried once more after a pause; the result says so. */
async function runWithRetry(check: TrafficCheck): Promise<CheckResult> {
  const first = await runOne(check);
  if (first.ok || check.expect !== 'reach') return first;
  await new Promise((r) => setTimeout(r, 500));
  const second = await runOne(check);
  return second.ok ? { ...second, retried: true, detail: `${second.detail} (first try: ${first.detail})` } : second;
}

export async function runChecks(checks: TrafficCheck[], onResult: (r: CheckResult, done: number) => void, concurrency = 4): Promise<CheckResult[]> {
  const results: CheckResult[] = new Array(checks.length);
  let next = 0;
  let done = 0;
  const worker = async () => {
    while (next < checks.length) {
      const i = next++;
      results[i] = await runWithRetry(checks[i]!);
      onResult(results[i]!, ++done);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  return results;
}

/** The result table: one row per (from, to, address), one column per protocol. */
export function resultTable(results: CheckResult[]): string {
  const rows = new Map<string, { from: string; to: string; address: string; kind: string; cells: Record<string, string> }>();
  for (const r of results) {
    const key = `${r.from}|${r.to}|${r.address}`;
    const row = rows.get(key) ?? { from: r.from, to: r.to, address: r.address, kind: r.kind, cells: {} };
    row.cells[r.proto] = r.ok ? (r.expect === 'reach' ? 'ok' : 'blocked') : 'FAIL';
    rows.set(key, row);
  }
  const lines = [...rows.values()].map((r) => [r.kind, r.from, r.to, r.address, r.cells.icmp ?? '-', r.cells.tcp ?? '-', r.cells.udp ?? '-']);
  const header = ['KIND', 'FROM', 'TO', 'ADDRESS DIALLED', 'PING', 'TCP', 'UDP'];
  const widths = header.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i]!.length)));
  return [header, ...lines].map((l) => l.map((c, i) => c.padEnd(widths[i]!)).join('  ').trimEnd()).join('\n');
}
