/**
 * The crash tests' machinery: the lab API server with one node and one pool, the pool IPAM service as
 * its own process (`strait pool-ipam serve`) killed with SIGKILL at random moments and started again,
 * and `strait-ipam`'s calls for pods sharing one namespace whose `eth0` answers no probe. What each test
 * plays is the runtime: when it retries, whether it DELs.
 *
 * The plugin runs in this process (runPlugin, all of main.ts but reading stdin and exiting), over the
 * service's real socket: a Node.js process per call costs this machine ~0.2 s of CPU, and these tests
 * make a thousand calls. The plugin as a process meets a killed service in test/cni.
 *
 * Kills are paced by the service's progress, not the clock: each incarnation is killed a random number
 * of answered requests after it is ready (then 0-300 ms later, mid-way through the requests in flight),
 * so a loaded machine, where a restart takes seconds, gets as many kills per call as an idle one. Ready
 * is read from the service's log, not asked with STATUS: a process per poll costs the CPU the test needs.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { join, resolve } from 'node:path';
import { CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { apiVersion, group, version } from '../../src/api/resource-names';
import { ip } from '../../src/kernel/command';
import { createNetns, deleteNetns, netnsPath } from '../../src/kernel/netns';
import { type TestApiServer, startTestApiServer } from '../support/apiserver';
import { uniqueName } from '../support/kernel';
import { prng } from '../support/prng';
import { runPlugin } from '../../src/cni/plugin';
import type { PluginRun } from '../cni/plugin-process';

const cli = resolve(__dirname, '..', '..', 'src', 'cli', 'main.js');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export interface CrashingService {
  core: CoreV1Api;
  /** A random number in [0, 1) from the test's seed. */
  random: () => number;
  /** Kills so far. */
  readonly kills: number;
  /** strait-ipam `command` for the pod's container on eth0. */
  run(command: 'ADD' | 'DEL' | 'GC', pod: string, containerId: string, config?: Record<string, unknown>): Promise<PluginRun>;
  /** The network configuration (CNI GC adds its valid attachments to it). */
  config: Record<string, unknown>;
  createPod(name: string): Promise<void>;
  /** Until the service's incarnation is ready (its log says it serves: the informers have listed). */
  ready(): Promise<void>;
  /** Kills each incarnation `killAfter` answered requests (a random number in the range) after it is ready, until stopKilling. */
  startKilling(): void;
  /** Stops killing; the service is up (maybe not ready) once this resolves. */
  stopKilling(): Promise<void>;
  /** Lines the service logged with this message, over every incarnation. */
  logged(msg: string): number;
  /** The service's log lines (over every incarnation, each prefixed by its number) that mention `text`: a failure's story. */
  linesAbout(text: string): string[];
  /** Every IPClaim as [containerID ('' for none), address, conflict marked], sorted. */
  claims(): Promise<[string, string, boolean][]>;
  /** Every Endpoint as [pod, containerID, addresses], sorted. */
  endpoints(): Promise<[string, string, string[]][]>;
  close(): Promise<void>;
}

export interface CrashingServiceOptions {
  seed: number;
  /** ARP-probe each address before giving it (the window between a claim and its Endpoint grows by 300 ms). */
  detectConflict: boolean;
  /** The pool's addresses: enough for every pod at once. */
  ips: string;
  /** Answered requests between an incarnation's ready and its kill: [min, max]. */
  killAfter: [number, number];
}

/** `call` until it succeeds, as a runtime retries: 200 ms after a failure, doubling up to 2 s; the last failure after `attempts`. */
export async function retried(
  call: () => Promise<PluginRun>,
  what: string,
  onFailure: (run: PluginRun) => void = () => undefined,
  attempts = 200,
): Promise<PluginRun> {
  for (let attempt = 1; ; attempt++) {
    const run = await call();
    if (run.status === 0) return run;
    onFailure(run);
    if (attempt >= attempts) throw new Error(`${what} never succeeded in ${attempts} attempts: ${run.stdout}${run.stderr}`);
    await sleep(Math.min(2000, 200 * 2 ** (attempt - 1)));
  }
}

export async function crashingService(options: CrashingServiceOptions): Promise<CrashingService> {
  const api: TestApiServer = await startTestApiServer();
  const netns = uniqueName('sipam-crash');
  let service: ChildProcess | undefined;
  try {
    createNetns(netns);
    // The pods' interface: up (so concurrent probes never toggle it), its peer here too, answering for no address.
    ip(['-n', netns, 'link', 'add', 'eth0', 'type', 'veth', 'peer', 'name', 'eth0-peer']);
    ip(['-n', netns, 'link', 'set', 'eth0', 'up']);
    ip(['-n', netns, 'link', 'set', 'eth0-peer', 'up']);
    const core = api.kubeConfig.makeApiClient(CoreV1Api);
    const custom = api.kubeConfig.makeApiClient(CustomObjectsApi);
    const socket = join(api.dir, 'ipam.sock');
    await core.createNode({ body: { metadata: { name: 'node-a' } } });
    await custom.createClusterCustomObject({
      group,
      version,
      plural: 'straitippools',
      body: { apiVersion, kind: 'StraitIPPool', metadata: { name: 'crash' }, spec: { subnet: '10.9.0.0/24', ips: [options.ips] } },
    });
    const config = {
      cniVersion: '1.1.0',
      name: 'underlay',
      ipam: {
        type: 'strait-ipam',
        socket,
        default_ipv4_ippool: ['crash'],
        detect_ip_conflict: options.detectConflict,
        detect_gateway: false,
      },
    };
    const random = prng(options.seed);
    let tail = '';
    const counts = new Map<string, number>();
    /** Every line the service logged, `incarnation: line` (a few thousand per test). */
    const logLines: string[] = [];
    let incarnations = 0;
    /** The current incarnation's: whether it said it serves, and the requests it answered. */
    let incarnation = { ready: false, answered: 0 };
    const start = () => {
      const current = { ready: false, answered: 0 };
      incarnation = current;
      const number = ++incarnations;
      service = spawn(
        process.execPath,
        [cli, 'pool-ipam', 'serve', '--kubeconfig', api.kubeconfigPath, '--node', 'node-a', '--socket', socket, '--gc-interval', '3600'],
        { stdio: ['ignore', 'ignore', 'pipe'] },
      );
      let partial = '';
      service.stderr!.on('data', (d: Buffer) => {
        const lines = (partial + d.toString()).split('\n');
        tail = (tail + d.toString()).slice(-4000);
        partial = lines.pop()!;
        for (const line of lines) {
          let msg: string;
          try {
            msg = String((JSON.parse(line) as { msg?: unknown }).msg);
          } catch {
            continue; // a line cut by SIGKILL
          }
          counts.set(msg, (counts.get(msg) ?? 0) + 1);
          logLines.push(`${number}: ${line}`);
          if (msg === 'pool IPAM serving') current.ready = true;
          if (msg === 'pool IPAM request' || msg === 'pool IPAM request failed') current.answered++;
        }
      });
    };
    start();

    const run: CrashingService['run'] = async (command, pod, containerId, given = config) => {
      const env = {
        CNI_COMMAND: command,
        CNI_CONTAINERID: containerId,
        CNI_NETNS: netnsPath(netns),
        CNI_IFNAME: 'eth0',
        CNI_ARGS: `K8S_POD_NAMESPACE=default;K8S_POD_NAME=${pod}`,
        CNI_PATH: '/usr/lib/cni',
      };
      const { stdout, exitCode } = await runPlugin(env, async () => JSON.stringify(given));
      return { status: exitCode, stdout, stderr: '' };
    };
    let kills = 0;
    let killing: Promise<void> | undefined;
    let stop = false;
    let closed = false;
    /** Polls state of this process only (the log's counts): no process per poll. */
    const until = async (condition: () => boolean, ms: number, what: string) => {
      const deadline = Date.now() + ms;
      while (!condition() && !closed) {
        if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}: ${tail}`);
        await sleep(20);
      }
    };
    const ready = () => until(() => incarnation.ready, 120_000, 'the service to be ready');
    const crashing: CrashingService = {
      core,
      random,
      get kills() {
        return kills;
      },
      config,
      run,
      createPod: async (name) => {
        await core.createNamespacedPod({
          namespace: 'default',
          body: { metadata: { name }, spec: { nodeName: 'node-a', containers: [{ name: 'c', image: 'i' }] } },
        });
      },
      ready,
      startKilling() {
        stop = false;
        // Each incarnation serves for a random while, then dies in the middle of whatever it is doing.
        const [min, max] = options.killAfter;
        killing = (async () => {
          while (!stop) {
            await ready();
            const target = incarnation.answered + min + Math.floor(random() * (max - min + 1));
            await until(() => incarnation.answered >= target || stop, 600_000, `${target} answered requests`);
            await sleep(Math.floor(random() * 300));
            if (stop) break;
            service!.kill('SIGKILL');
            await new Promise((r) => service!.once('exit', r));
            kills++;
            if (closed) break;
            start();
          }
        })();
      },
      async stopKilling() {
        stop = true;
        await killing;
      },
      logged: (msg) => counts.get(msg) ?? 0,
      linesAbout: (text) => logLines.filter((line) => line.includes(text)),
      async claims() {
        const list = (await custom.listClusterCustomObject({ group, version, plural: 'ipclaims' })) as {
          items: { spec: { address: string; containerID?: string; conflict?: object } }[];
        };
        return list.items
          .map((c): [string, string, boolean] => [c.spec.containerID ?? '', c.spec.address, c.spec.conflict !== undefined])
          .sort();
      },
      async endpoints() {
        const list = (await custom.listCustomObjectForAllNamespaces({ group, version, plural: 'straitendpoints' })) as {
          items: { metadata: { name: string }; spec: { attachments: { containerID?: string; ips: { address: string }[] }[] } }[];
        };
        return list.items
          .flatMap((e) =>
            e.spec.attachments.map((a): [string, string, string[]] => [e.metadata.name, a.containerID ?? '', a.ips.map((i) => i.address)]),
          )
          .sort();
      },
      async close() {
        stop = true;
        closed = true;
        service?.kill('SIGKILL');
        await killing?.catch(() => undefined);
        deleteNetns(netns);
        await api.close();
      },
    };
    return crashing;
  } catch (err) {
    service?.kill('SIGKILL');
    deleteNetns(netns);
    await api.close();
    throw err;
  }
}
