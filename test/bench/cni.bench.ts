/**
 * The pool IPAM's CNI plugin against Debian's host-local, each the IPAM of Debian's real macvlan plugin,
 * in one run: the same Pods (objects in the lab API server), the same /22, every ADD into a fresh pod
 * namespace; one call at a time, then 8 in flight (a kubelet starting pods on one node). Latencies are
 * wall-clock around the plugin process (`ip netns exec <node> macvlan`, spawn to exit). strait-ipam talks
 * to `strait pool-ipam serve` in a process of its own, as on a node. The bench checks what it measured:
 * every ADD succeeded, the addresses are distinct, and every one is released after DEL.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { group, version } from '../../src/api/resource-names';
import { ip } from '../../src/kernel/command';
import { type PoolIpamFixture, poolIpamFixture } from '../pool-ipam/fixture';
import { type CniOutcome, type PodAttachment, addressesIn } from '../support/cni';
import { type CapturedLog, captureLog } from '../support/log-capture';
import { waitFor } from '../support/wait';
import { type BenchFigure, type BenchSuite, benchResultsDir, headCommit, percentile } from './result';

/** Pods ADDed and DELeted 8 in flight, per IPAM. */
const pods = 1000;
/** Of those, how many are ADDed and DELeted one at a time, per IPAM. */
const sequentialPods = 100;
const inFlight = 8;
/** The pool, for both IPAMs: 1,021 addresses. The StraitIPPool has no gateway, so strait-ipam probes none (and detect_gateway is false). */
const pool = { subnet: '10.20.0.0/22', first: '10.20.0.2', last: '10.20.3.254' };
const inPool = /^10\.20\.[0-3]\.\d{1,3}\/22$/;
const cli = join(__dirname, '..', '..', 'src', 'cli', 'main.js');

interface Ipam {
  label: string;
  strait: boolean;
  config: Record<string, unknown>;
}

interface Timed {
  outcome: CniOutcome;
  ms: number;
}

interface RoundFigures {
  adds: number[];
  dels: number[];
  addWallMs: number;
  delWallMs: number;
  /** API requests the server logged during the ADDs and during the DELs, by method. */
  addRequests: Map<string, number>;
  delRequests: Map<string, number>;
  /** `ip netns exec <node> true` with the round's namespaces in place (each is a mount it copies). */
  execFloorMs: number;
  serviceCpuMs?: number;
}

const nowMs = () => Number(process.hrtime.bigint()) / 1e6;
const round1 = (n: number) => Math.round(n * 10) / 10;
const round2 = (n: number) => Math.round(n * 100) / 100;

/** Runs `one(0..count-1)` with at most `concurrency` in flight; results by index. */
async function inParallel<T>(count: number, concurrency: number, one: (i: number) => Promise<T>): Promise<T[]> {
  const results = new Array<T>(count);
  let next = 0;
  const worker = async () => {
    while (next < count) {
      const i = next++;
      results[i] = await one(i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, count) }, worker));
  return results;
}

async function timed(call: () => Promise<CniOutcome>): Promise<Timed> {
  const started = nowMs();
  const outcome = await call();
  return { outcome, ms: nowMs() - started };
}

/** The requests the API server logged since line `from`, by method. */
function requestsSince(requests: CapturedLog, from: number): Map<string, number> {
  const byMethod = new Map<string, number>();
  for (const line of requests.lines.slice(from))
    if (line.msg === 'request') byMethod.set(String(line.method), (byMethod.get(String(line.method)) ?? 0) + 1);
  return byMethod;
}

const total = (byMethod: Map<string, number>) => [...byMethod.values()].reduce((a, b) => a + b, 0);
const perCall = (byMethod: Map<string, number>, count: number) =>
  [...byMethod]
    .sort()
    .map(([method, n]) => `${method} ${round2(n / count)}`)
    .join(', ');

function failIf(what: string, failures: string[]): void {
  if (failures.length > 0) throw new Error(`cni bench: ${what}: ${failures.length} wrong; the first: ${failures.slice(0, 3).join(' | ')}`);
}

/** The service process's CPU time so far (user + system), from /proc. */
function cpuMs(pid: number, ticksPerSecond: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8')
    .replace(/^.*\) /, '')
    .split(' ');
  // After the command: state is field 3, utime 14, stime 15 (proc(5)).
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / ticksPerSecond;
}

function memoryMiB(pid: number): { rss: number; peak: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kib = (key: string) => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(status)?.[1]);
  return { rss: kib('VmRSS') / 1024, peak: kib('VmHWM') / 1024 };
}

const openFds = (pid: number) => readdirSync(`/proc/${pid}/fd`).length;

async function startService(f: PoolIpamFixture, logPath: string): Promise<ChildProcess> {
  const log = openSync(logPath, 'w');
  const child = spawn(
    process.execPath,
    [cli, 'pool-ipam', 'serve', '--kubeconfig', f.api.kubeconfigPath, '--node', 'node-a', '--socket', f.socket],
    { stdio: ['ignore', log, log] },
  );
  closeSync(log);
  const status = { ...f.config('macvlan'), cniVersion: '1.1.0' };
  await waitFor(
    'strait pool-ipam serve ready (STATUS)',
    async () => child.exitCode === null && (await f.node.runIpam('STATUS', status)).code === 0,
    60_000,
    () => readFileSync(logPath, 'utf8').slice(-2000),
    200,
  );
  return child;
}

async function stopService(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, 'exit');
  child.kill('SIGTERM');
  if ((await Promise.race([exited.then(() => true), sleep(10_000).then(() => false)])) === false) child.kill('SIGKILL');
}

/** The addresses host-local holds: one file per address in its data directory. */
function hostLocalHeld(dataDir: string): string[] {
  const dir = join(dataDir, 'underlay');
  return existsSync(dir) ? readdirSync(dir).filter((name) => /^\d+\.\d+\.\d+\.\d+$/.test(name)) : [];
}

async function straitHeld(f: PoolIpamFixture): Promise<{ claims: { name: string; spec: Record<string, any> }[]; endpoints: number }> {
  const endpoints = (await f.custom.listNamespacedCustomObject({ group, version, namespace: 'default', plural: 'straitendpoints' })) as {
    items: unknown[];
  };
  return { claims: await f.claims(), endpoints: endpoints.items.length };
}

const linksIn = (netns: string) => (JSON.parse(ip(['-n', netns, '-j', 'link', 'show'])) as { ifname: string }[]).map((l) => l.ifname);

/** p50 of `n` sequential runs of `command`: a floor that every CNI call of the bench includes (`ip netns exec <node> …`). */
async function floorMs(n: number, command: () => Promise<unknown>): Promise<number> {
  const samples: number[] = [];
  for (let i = 0; i < n; i++) {
    const started = nowMs();
    await command();
    samples.push(nowMs() - started);
  }
  return percentile(samples, 50);
}

function execIn(netns: string, argv: string[]): Promise<void> {
  const child = spawn('ip', ['netns', 'exec', netns, ...argv], { stdio: 'ignore' });
  return new Promise((done, fail) => {
    child.on('error', fail);
    child.on('close', (code) => (code === 0 ? done() : fail(new Error(`${argv.join(' ')} exited ${code}`))));
  });
}

/**
 * One round: `count` pods ADDed (each into a fresh namespace), checked, DELeted, checked, with
 * `concurrency` calls in flight; the namespaces are removed after, also on a failure.
 */
async function runRound(
  f: PoolIpamFixture,
  requests: CapturedLog,
  ipam: Ipam,
  podObjects: { name: string; uid: string }[],
  count: number,
  concurrency: number,
  tag: string,
  service: { pid: number; ticks: number } | undefined,
): Promise<RoundFigures> {
  const what = `${ipam.label}, ${concurrency === 1 ? 'one at a time' : `${concurrency} in flight`}`;
  try {
    const attachments = podObjects.slice(0, count).map((p, i) => {
      const netns = f.node.podNetns();
      return {
        netnsName: netns.name,
        pod: { namespace: 'default', name: p.name, uid: p.uid, containerId: `${tag}-${i}`, netns: netns.path } satisfies PodAttachment,
      };
    });
    const execFloorMs = await floorMs(20, () => execIn(f.node.netns, ['true']));
    const cpuBefore = service ? cpuMs(service.pid, service.ticks) : 0;
    let mark = requests.lines.length;
    let started = nowMs();
    const added = await inParallel(count, concurrency, (i) => timed(() => f.node.run('ADD', ipam.config, attachments[i]!.pod)));
    const addWallMs = nowMs() - started;
    const addRequests = requestsSince(requests, mark);

    failIf(
      `${what}: ADD failed`,
      added.flatMap((a, i) =>
        a.outcome.code === 0 ? [] : [`pod ${i}: exit ${a.outcome.code}: ${a.outcome.stdout.trim()} ${a.outcome.stderr.trim()}`],
      ),
    );
    const addresses = added.map((a) => String(a.outcome.json?.ips?.[0]?.address));
    failIf(
      `${what}: an address outside ${pool.subnet}`,
      addresses.filter((a) => !inPool.test(a)),
    );
    failIf(
      `${what}: an address given twice`,
      addresses.filter((a, i) => addresses.indexOf(a) !== i),
    );
    // The pod has it (every 100th pod checked: an `ip` process each).
    failIf(
      `${what}: the pod's eth0 does not hold its address`,
      attachments.flatMap((a, i) =>
        i % 100 === 0 && addressesIn(a.netnsName).join() !== addresses[i]
          ? [`${a.netnsName}: ${addressesIn(a.netnsName).join()} (given ${addresses[i]})`]
          : [],
      ),
    );
    const bare = addresses.map((a) => a.split('/')[0]!).sort();
    if (ipam.strait) {
      const { claims } = await straitHeld(f);
      const names = claims.map((c) => c.name).sort();
      failIf(
        `${what}: the IPClaims are not the addresses given`,
        names.join() === bare.join() && claims.every((c) => !c.spec.conflict && c.spec.node === 'node-a')
          ? []
          : [`${claims.length} claims, ${claims.filter((c) => c.spec.conflict).length} marked conflicting, for ${count} addresses`],
      );
    } else {
      const held = hostLocalHeld(String((ipam.config.ipam as { dataDir: string }).dataDir)).sort();
      failIf(
        `${what}: host-local's files are not the addresses given`,
        held.join() === bare.join() ? [] : [`${held.length} files for ${count} addresses`],
      );
    }

    mark = requests.lines.length;
    started = nowMs();
    const deleted = await inParallel(count, concurrency, (i) => timed(() => f.node.run('DEL', ipam.config, attachments[i]!.pod)));
    const delWallMs = nowMs() - started;
    const delRequests = requestsSince(requests, mark);
    const serviceCpuMs = service ? cpuMs(service.pid, service.ticks) - cpuBefore : undefined;

    failIf(
      `${what}: DEL failed`,
      deleted.flatMap((d, i) =>
        d.outcome.code === 0 ? [] : [`pod ${i}: exit ${d.outcome.code}: ${d.outcome.stdout.trim()} ${d.outcome.stderr.trim()}`],
      ),
    );
    failIf(
      `${what}: a pod's eth0 is left after DEL`,
      attachments.flatMap((a, i) => (i % 100 === 0 && linksIn(a.netnsName).includes('eth0') ? [a.netnsName] : [])),
    );
    if (ipam.strait) {
      const { claims, endpoints } = await straitHeld(f);
      failIf(`${what}: held after every DEL returned`, [
        ...claims.map((c) => `IPClaim ${c.name}`),
        ...(endpoints > 0 ? [`${endpoints} StraitEndpoints`] : []),
      ]);
    } else {
      failIf(
        `${what}: host-local holds after every DEL returned`,
        hostLocalHeld(String((ipam.config.ipam as { dataDir: string }).dataDir)),
      );
    }
    return {
      adds: added.map((a) => a.ms),
      dels: deleted.map((d) => d.ms),
      addWallMs,
      delWallMs,
      addRequests,
      delRequests,
      execFloorMs,
      ...(serviceCpuMs === undefined ? {} : { serviceCpuMs }),
    };
  } finally {
    f.node.removePodNetns();
  }
}

export const run: BenchSuite = async () => {
  const figures: BenchFigure[] = [];
  const figure = (name: string, value: number, unit: string, note?: string) =>
    figures.push({ suite: 'cni', name, value, unit, ...(note ? { note } : {}) });
  const started = Date.now();
  const loadBefore = os.loadavg()[0]!;
  const rounds: Record<string, unknown>[] = [];
  const requests = captureLog();
  const f = await poolIpamFixture({ inProcess: false, nodes: [{ name: 'node-a', ready: true }], apiServer: { logger: requests.log } });
  let service: ChildProcess | undefined;
  // A bench stopped by a signal still removes its namespaces (the node's and every pod's).
  const onSignal = () => {
    service?.kill('SIGKILL');
    f.node.cleanup();
    process.exit(130);
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    await f.pool('bench', { subnet: pool.subnet, ips: [`${pool.first}-${pool.last}`] });
    const podObjects = await inParallel(pods, 16, async (i) => {
      const created = await f.core.createNamespacedPod({
        namespace: 'default',
        body: { metadata: { name: `bench-${i}` }, spec: { nodeName: 'node-a', containers: [{ name: 'c', image: 'i' }] } },
      });
      return { name: `bench-${i}`, uid: created.metadata!.uid! };
    });
    const logPath = join(f.dir, 'pool-ipam.log');
    service = await startService(f, logPath);
    const serviceProc = { pid: service.pid!, ticks: Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' })) };
    const startMemory = memoryMiB(serviceProc.pid);
    const startFds = openFds(serviceProc.pid);
    const hostLocalDir = join(f.dir, 'host-local');
    mkdirSync(hostLocalDir);
    const strait = (detect: boolean) =>
      f.config('macvlan', { default_ipv4_ippool: ['bench'], detect_ip_conflict: detect, detect_gateway: false });
    const ipams: Ipam[] = [
      {
        label: 'host-local',
        strait: false,
        config: {
          ...f.config('macvlan'),
          ipam: {
            type: 'host-local',
            ranges: [[{ subnet: pool.subnet, rangeStart: pool.first, rangeEnd: pool.last }]],
            dataDir: hostLocalDir,
          },
        },
      },
      { label: 'strait-ipam, conflict detection off', strait: true, config: strait(false) },
      { label: 'strait-ipam, conflict detection on', strait: true, config: strait(true) },
    ];

    figure(
      'floor: `ip netns exec <node> true`, p50 of 20',
      round1(await floorMs(20, () => execIn(f.node.netns, ['true']))),
      'ms',
      'no pod namespaces yet; in every latency below',
    );
    figure(
      'floor: `strait-ipam` VERSION (a Node.js process start), p50 of 20',
      round1(await floorMs(20, () => f.node.runIpam('VERSION', {}))),
      'ms',
      'through ip netns exec',
    );
    figure(
      'floor: `host-local` VERSION, p50 of 20',
      round1(await floorMs(20, () => f.node.run('VERSION', { type: 'host-local' }))),
      'ms',
      'through ip netns exec',
    );

    for (const [mode, count, concurrency] of [
      ['one at a time', sequentialPods, 1],
      [`${inFlight} in flight`, pods, inFlight],
    ] as const) {
      const byIpam = new Map<string, RoundFigures>();
      for (const [k, ipam] of ipams.entries()) {
        process.stderr.write(`  ${ipam.label}, ${mode}: ${count} ADD + DEL...\n`);
        const r = await runRound(
          f,
          requests,
          ipam,
          podObjects,
          count,
          concurrency,
          `${concurrency}-${k}`,
          ipam.strait ? serviceProc : undefined,
        );
        byIpam.set(ipam.label, r);
        rounds.push({
          ipam: ipam.label,
          pods: count,
          inFlight: concurrency,
          addWallMs: round1(r.addWallMs),
          delWallMs: round1(r.delWallMs),
          execFloorMs: round1(r.execFloorMs),
          ...(r.serviceCpuMs === undefined ? {} : { serviceCpuMs: Math.round(r.serviceCpuMs) }),
          addRequests: Object.fromEntries(r.addRequests),
          delRequests: Object.fromEntries(r.delRequests),
          addMs: r.adds.map(round1),
          delMs: r.dels.map(round1),
        });
        const name = `${ipam.label}, ${mode}`;
        figure(`${name}: ADDs per second`, round1(count / (r.addWallMs / 1000)), 'ADD/s', `${count} ADDs in ${Math.round(r.addWallMs)} ms`);
        figure(`${name}: ADD p50`, round1(percentile(r.adds, 50)), 'ms');
        figure(`${name}: ADD p99`, round1(percentile(r.adds, 99)), 'ms', `max ${round1(Math.max(...r.adds))}`);
        figure(`${name}: DEL p50`, round1(percentile(r.dels, 50)), 'ms', `${round1(count / (r.delWallMs / 1000))} DEL/s`);
        figure(`${name}: DEL p99`, round1(percentile(r.dels, 99)), 'ms', `max ${round1(Math.max(...r.dels))}`);
        figure(
          `${name}: floor, \`ip netns exec <node> true\` with the round's ${count} pod namespaces, p50 of 20`,
          round1(r.execFloorMs),
          'ms',
          'one at a time, before the ADDs',
        );
        if (r.serviceCpuMs !== undefined) {
          figure(
            `${name}: service CPU per ADD + DEL`,
            round1(r.serviceCpuMs / count),
            'ms',
            `${Math.round(r.serviceCpuMs)} ms for ${count}`,
          );
          figure(`${name}: API requests per ADD`, round2(total(r.addRequests) / count), 'requests', perCall(r.addRequests, count));
          figure(`${name}: API requests per DEL`, round2(total(r.delRequests) / count), 'requests', perCall(r.delRequests, count));
        }
      }
      const base = byIpam.get('host-local')!;
      for (const ipam of ipams.filter((i) => i.strait)) {
        const r = byIpam.get(ipam.label)!;
        figure(`${ipam.label} / host-local, ${mode}: ADDs per second`, round2(base.addWallMs / r.addWallMs), '×');
        figure(`${ipam.label} / host-local, ${mode}: ADD p50`, round2(percentile(r.adds, 50) / percentile(base.adds, 50)), '×');
        figure(`${ipam.label} / host-local, ${mode}: ADD p99`, round2(percentile(r.adds, 99) / percentile(base.adds, 99)), '×');
        figure(`${ipam.label} / host-local, ${mode}: DEL p50`, round2(percentile(r.dels, 50) / percentile(base.dels, 50)), '×');
      }
    }
    const memory = memoryMiB(serviceProc.pid);
    figure(
      'strait pool-ipam serve: RSS once ready',
      round1(startMemory.rss),
      'MiB',
      `informers listed: ${pods} Pods, the StraitIPPool, no claims`,
    );
    figure('strait pool-ipam serve: RSS after the run', round1(memory.rss), 'MiB', `peak (VmHWM) ${round1(memory.peak)} MiB`);
    figure(
      'strait pool-ipam serve: open file descriptors once ready / after the run',
      startFds,
      'fds',
      `after: ${openFds(serviceProc.pid)}`,
    );
    figure(
      'load average (1 min) before / after the suite',
      round2(loadBefore),
      'load',
      `after: ${round2(os.loadavg()[0]!)}; ${os.cpus().length} CPUs, shared`,
    );
    const seconds = Math.round((Date.now() - started) / 1000);
    figure('the whole cni run', seconds, 's');
    // Every sample, for a distribution latest.json does not hold.
    mkdirSync(benchResultsDir, { recursive: true });
    writeFileSync(
      join(benchResultsDir, 'cni.json'),
      `${JSON.stringify({ commit: headCommit(), date: new Date().toISOString(), seconds, figures, rounds })}\n`,
    );
    return figures;
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    if (service) await stopService(service);
    await f.close();
  }
};
