/**
 * Runs traffic checks from inside the pods' namespaces, a few at a time, with progress as they finish:
 * pings as `ping` processes, echoes through each pod's prober (pod-probers.ts). Each check is tried once:
 * a path whose first packets are lost fails, so a flake shows.
 */
import { execFile } from 'node:child_process';
import { isIPv6 } from 'node:net';
import type { Probe, TrafficCheck } from './checks';
import { bulkSize } from './echo-client';
import type { PodProbers } from './pod-probers';
import { closedPort, echoPort, podNetns, servicePort } from './names';
import { echoOutcome, pathMtuVerdict, pingArgv } from './ping';

export interface CheckResult extends TrafficCheck {
  ok: boolean;
  detail: string;
  ms: number;
}

/** The number of echo requests of a ping check: every one must be answered (or, when blocked, none). */
const pingCount = 3;

/**
 * How long the bulk echo of `pmtu-tcp` waits for the next echoed byte (a stalled stream fails; see
 * LabPace.echoWaitMs); the probe's whole run is bounded by the check's timeout on top of it.
 */
const bulkWaitMs = 15_000;

/** Runs a probe process; `timeoutMs` bounds its start and its run (the probe's own wait is shorter). */
function exec(argv: string[], timeoutMs: number): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(argv[0]!, argv.slice(1), { timeout: timeoutMs }, (err, stdout, stderr) => {
      const code = err ? (typeof (err as { code?: unknown }).code === 'number' ? (err as { code: number }).code : -1) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}

/** Whether the check's traffic got through, and what was seen; throws when the probe itself failed. */
/** How a run of checks is paced (LabPace's part of it). */
type ChecksPace = { probeStartTimeoutMs: number; echoWaitMs: number; pingIntervalS: number; concurrency: number };

async function probe(check: TrafficCheck, probers: PodProbers, pace: ChecksPace): Promise<{ reached: boolean; detail: string }> {
  const { probeStartTimeoutMs: timeoutMs, echoWaitMs } = pace;
  const inPod = ['ip', 'netns', 'exec', podNetns(check.from)];
  if (check.probe === 'icmp') {
    const r = await exec(
      [...inPod, ...pingArgv(check.address, { count: pingCount, intervalS: pace.pingIntervalS, waitS: echoWaitMs / 1000 })],
      timeoutMs,
    );
    const { transmitted, received, unanswered } = echoOutcome(r.code, r.stdout, r.stderr, pingCount);
    // Blocked: no request answered; otherwise every one.
    const reached = check.expect === 'blocked' ? received > 0 : received === pingCount;
    const missing = unanswered.length ? ` (no reply to icmp_seq ${unanswered.join(', ')})` : '';
    return { reached, detail: `${received}/${transmitted} answered${missing}` };
  }
  if (check.probe === 'pmtu-icmp') {
    // ICMP echo: 8 bytes of header and 20 of IPv4 (40 of IPv6) under the payload make a packet of the pod's MTU.
    const headers = isIPv6(check.address) ? 48 : 28;
    const r = await exec(
      [...inPod, 'ping', '-M', 'do', '-s', String(check.mtu! - headers), '-c', '1', '-W', '2', check.address],
      timeoutMs,
    );
    const { ok, detail } = pathMtuVerdict(r.code, r.stdout, r.stderr, check.mtu!);
    return { reached: ok, detail };
  }
  if (check.probe === 'whoami') return serviceProbe(check, probers, pace);
  // One datagram or one connection, no retry of ours (but where the path MTU is learnt: `learnsPathMtu`):
  // the first packets of a path must get through.
  const port = check.probe === 'unreach' ? closedPort : echoPort;
  const bulk = check.probe === 'pmtu-tcp';
  const waitMs = bulk ? bulkWaitMs : echoWaitMs;
  const out = await probers.echo(check.from, check.probe, check.address, port, waitMs, timeoutMs + waitMs, check.learnsPathMtu);
  const answered =
    check.probe === 'unreach' ? 'port unreachable came back' : bulk ? `${bulkSize} bytes echoed by ${out.from}` : `reply from ${out.from}`;
  return { reached: out.ok, detail: out.error ?? answered };
}

/**
 * Connections to a service address until every expected endpoint answered (at most `serviceTries`): each
 * connection must be answered, and only by an expected endpoint. At random over two endpoints, 40 tries
 * miss one with a chance of 2 in 10^12.
 */
const serviceTries = 40;

async function serviceProbe(check: TrafficCheck, probers: PodProbers, pace: ChecksPace): Promise<{ reached: boolean; detail: string }> {
  // One request of the pod's prober, waited for as every echo is.
  const ask = (mode: 'whoami' | 'dns-a' | 'dns-aaaa', to: string, port: number) =>
    probers.echo(check.from, mode, to, port, pace.echoWaitMs, pace.probeStartTimeoutMs + pace.echoWaitMs);
  let resolved = '';
  if (check.name) {
    // The name first, through the pod's resolver (the lab's clusterset DNS on its node): it must give this address.
    const named = await ask(check.address.includes(':') ? 'dns-aaaa' : 'dns-a', check.name, 53);
    if (!named.ok || !named.from?.split(',').includes(check.address))
      return { reached: false, detail: `${check.name} resolved to ${named.from || named.error}, not ${check.address}` };
    resolved = `${check.name} is ${check.address}; `;
  }
  const expected = new Set(check.endpoints ?? []);
  if (expected.size === 0) {
    // No ready endpoint: the proxy refuses the connection (kube-proxy's reject).
    const out = await ask('whoami', check.address, servicePort);
    return { reached: !out.ok, detail: out.ok ? `answered by ${out.from} with no ready endpoint` : `refused: ${out.error}` };
  }
  const answered = new Map<string, number>();
  for (let i = 0; i < serviceTries && [...expected].some((e) => !answered.has(e)); i++) {
    const out = await ask('whoami', check.address, servicePort);
    if (!out.ok) return { reached: false, detail: `connection ${i + 1}: ${out.error ?? 'no answer'}` };
    answered.set(out.from!, (answered.get(out.from!) ?? 0) + 1);
    if (!expected.has(out.from!))
      return { reached: false, detail: `answered by ${out.from}, not an endpoint (${[...expected].join(', ')})` };
  }
  const counts = [...answered].map(([pod, n]) => `${pod} ${n}`).join(', ');
  const missing = [...expected].filter((e) => !answered.has(e));
  return missing.length > 0
    ? { reached: false, detail: `${missing.join(', ')} never answered (${counts})` }
    : { reached: true, detail: `${resolved}answered by ${counts}` };
}

async function runOne(check: TrafficCheck, probers: PodProbers, pace: ChecksPace): Promise<CheckResult> {
  const started = Date.now();
  let outcome: { reached: boolean; detail: string };
  try {
    outcome = await probe(check, probers, pace);
  } catch (err) {
    // The probe could not say whether the path works: a failure whatever was expected.
    return { ...check, ok: false, detail: (err as Error).message, ms: Date.now() - started };
  }
  return { ...check, ok: outcome.reached === (check.expect === 'reach'), detail: outcome.detail, ms: Date.now() - started };
}

/** Runs `checks`, `pace.concurrency` at a time, the echoes through `probers` (the caller ends them). */
export async function runChecks(
  checks: TrafficCheck[],
  onResult: (r: CheckResult, done: number) => void,
  pace: ChecksPace,
  probers: PodProbers,
): Promise<CheckResult[]> {
  const results: CheckResult[] = new Array(checks.length);
  let next = 0;
  let done = 0;
  const worker = async () => {
    while (next < checks.length) {
      const i = next++;
      results[i] = await runOne(checks[i]!, probers, pace);
      onResult(results[i]!, ++done);
    }
  };
  await Promise.all(Array.from({ length: pace.concurrency }, worker));
  return results;
}

const columns: [Probe, string][] = [
  ['icmp', 'PING'],
  ['tcp', 'TCP'],
  ['udp', 'UDP'],
  ['frag', 'FRAG'],
  ['unreach', 'UNREACH'],
  ['pmtu-tcp', 'PMTU-TCP'],
  ['pmtu-icmp', 'PMTU-ICMP'],
  ['whoami', 'SERVICE'],
];

/** The result table: one row per (from, to, address), one column per probe. */
export function resultTable(results: CheckResult[]): string {
  const rows = new Map<string, { from: string; to: string; address: string; kind: string; cells: Partial<Record<Probe, string>> }>();
  for (const r of results) {
    const key = `${r.from}|${r.to}|${r.address}`;
    const row = rows.get(key) ?? { from: r.from, to: r.to, address: r.address, kind: r.kind, cells: {} };
    row.cells[r.probe] = r.ok ? (r.expect === 'reach' ? 'ok' : 'blocked') : 'FAIL';
    rows.set(key, row);
  }
  const lines = [...rows.values()].map((r) => [r.kind, r.from, r.to, r.address, ...columns.map(([probe]) => r.cells[probe] ?? '-')]);
  const header = ['KIND', 'FROM', 'TO', 'ADDRESS DIALLED', ...columns.map(([, title]) => title)];
  const widths = header.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i]!.length)));
  return [header, ...lines]
    .map((l) =>
      l
        .map((c, i) => c.padEnd(widths[i]!))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}
