/**
 * The e2e bench's traffic: servers in a target pod, and from the client pod a connect/close loop
 * (tcp-crr, our C tool), TCP request/response latency (sockperf ping-pong; over IPv6 tcp-crr's `rr`, as
 * Debian's sockperf 3.7 has no IPv6) and a stream (iperf3), each for a fixed duration, against one
 * dialled address. The output parsers are pure.
 */
import { type ChildProcess, execFileSync, spawn, spawnSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { podNetns } from '../../../lab/src/names';

const ports = { crr: 7101, sockperf: 7102, iperf3: 7103, rr: 7104 };
/** Seconds each tool runs: long enough for a stable figure, short enough for 30-odd measurements. */
export const toolSeconds = 4;
/** The connect/close loop's processes: at most 2 on a 2-core machine, where the lab's pods share the cores. */
const crrParallel = 2;

/**
 * The request/response client and server share one CPU: the round trip is then the path's own cost, without the
 * wake-up of an idle vCPU (tens of µs on a VM), which made the p50 jump between runs from 9 to 85 µs.
 */
const sameCpu = ['taskset', '-c', '0'];

const crrSource = join(__dirname, '..', '..', '..', '..', 'test', 'bench', 'tools', 'tcp-crr.c');
const crrBinary = join(__dirname, '..', 'tools', 'tcp-crr');

/** Compiles tcp-crr into dist/ (Debian has no TCP_CRR tool); cc is on every machine that builds Strait. */
export function buildCrr(): void {
  mkdirSync(join(crrBinary, '..'), { recursive: true });
  execFileSync('cc', ['-O2', '-Wall', '-Werror', '-o', crrBinary, crrSource], { stdio: 'inherit' });
}

/** Runs a tool in a pod; its stdout, with `withStderr` also its stderr (sockperf prints its figures to either, by version). */
function inPod(pod: string, argv: string[], withStderr = false): string {
  const r = spawnSync('ip', ['netns', 'exec', podNetns(pod), ...argv], {
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
    timeout: (toolSeconds + 20) * 1000,
  });
  if (r.status !== 0)
    throw new Error(
      `${argv.join(' ')} in ${pod} failed (${r.status ?? r.signal ?? r.error?.message}): ${r.stderr.trim() || r.stdout.trim()}`,
    );
  return withStderr ? `${r.stdout}${r.stderr}` : r.stdout;
}

/** The command lines of the tools, for a pod here or a machine of a lab across VMs (test/multivm/figures.ts). */
export const toolCommands = {
  crrServer: [crrBinary, 'serve', String(ports.crr)],
  iperf3Server: ['iperf3', '--server', '--port', String(ports.iperf3)],
  crrClient: (address: string) => [crrBinary, 'run', address, String(ports.crr), String(toolSeconds), String(crrParallel)],
  iperf3Client: (address: string) => [
    'iperf3',
    '--client',
    address,
    '--port',
    String(ports.iperf3),
    '--time',
    String(toolSeconds),
    '--json',
  ],
};

/** The three servers in one pod, on every address of it; `stop` ends their process groups. */
export function startServers(pod: string): { stop: () => void } {
  const commands = [
    toolCommands.crrServer,
    [...sameCpu, 'sockperf', 'server', '--tcp', '-p', String(ports.sockperf)],
    [...sameCpu, crrBinary, 'serve', String(ports.rr)],
    toolCommands.iperf3Server,
  ];
  const children: ChildProcess[] = commands.map((argv) =>
    spawn('ip', ['netns', 'exec', podNetns(pod), ...argv], { detached: true, stdio: 'ignore' }),
  );
  return {
    stop: () => {
      for (const child of children) {
        try {
          process.kill(-child.pid!, 'SIGKILL');
        } catch {
          // Already gone.
        }
      }
    },
  };
}

/** Waits until the pod's servers listen (their ports show in `ss`), so the first measurement does not race them. */
export async function waitForServers(pod: string): Promise<void> {
  for (let tries = 0; tries < 100; tries++) {
    const listening = inPod(pod, ['ss', '-Htln']);
    if (Object.values(ports).every((p) => listening.includes(`:${p} `))) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`the bench servers in ${pod} do not listen on ${Object.values(ports).join(', ')}`);
}

/** tcp-crr's output: connections, and per second; refused when any connection failed (a path that drops is no figure). */
export function parseCrr(output: string): { connections: number; perSecond: number } {
  const r = JSON.parse(output) as { connections: number; errors: number; seconds: number };
  if (r.errors > 0 || r.connections === 0) throw new Error(`tcp-crr: ${r.connections} connections, ${r.errors} failed`);
  return { connections: r.connections, perSecond: r.connections / r.seconds };
}

/** sockperf's percentile lines (`---> percentile 99.000 =   71.920`), in microseconds of round trip. */
export function parseSockperf(output: string): { p50Us: number; p99Us: number } {
  const percentile = (p: string) => {
    const m = new RegExp(`percentile ${p.replace('.', '\\.')} =\\s*([0-9.]+)`).exec(output);
    if (!m) throw new Error(`sockperf printed no ${p} percentile:\n${output}`);
    return Number(m[1]);
  };
  return { p50Us: percentile('50.000'), p99Us: percentile('99.000') };
}

/** iperf3 -J: what the receiver got, in Gbit/s. */
export function parseIperf3(output: string): number {
  const r = JSON.parse(output) as { end?: { sum_received?: { bits_per_second: number } }; error?: string };
  if (!r.end?.sum_received) throw new Error(`iperf3: ${r.error ?? 'no result'}`);
  return r.end.sum_received.bits_per_second / 1e9;
}

export const connectionsPerSecond = (client: string, address: string) => parseCrr(inPod(client, toolCommands.crrClient(address)));

/** tcp-crr rr's output: the round trip's percentiles, in microseconds. */
export function parseRoundTrips(output: string): { p50Us: number; p99Us: number } {
  const r = JSON.parse(output) as { roundTrips: number; p50Us: number; p99Us: number };
  if (!(r.roundTrips > 0)) throw new Error(`tcp-crr rr: no round trip: ${output}`);
  return { p50Us: r.p50Us, p99Us: r.p99Us };
}

/** The request/response tool of a family: sockperf for IPv4, tcp-crr rr for IPv6. */
export const requestResponseTool = (family: 4 | 6) => (family === 6 ? 'tcp-crr rr' : 'sockperf ping-pong');

export const requestResponse = (client: string, address: string) =>
  address.includes(':')
    ? parseRoundTrips(inPod(client, [...sameCpu, crrBinary, 'rr', address, String(ports.rr), String(toolSeconds)]))
    : parseSockperf(
        inPod(
          client,
          [
            ...sameCpu,
            'sockperf',
            'ping-pong',
            '--tcp',
            '--full-rtt',
            '-i',
            address,
            '-p',
            String(ports.sockperf),
            '-t',
            String(toolSeconds),
          ],
          true,
        ),
      );

export const stream = (client: string, address: string) => parseIperf3(inPod(client, toolCommands.iperf3Client(address)));
