/**
 * Running real CNI plugins (Debian's containernetworking-plugins in /usr/lib/cni) with `strait-ipam` as
 * their IPAM, as a container runtime does: in a "node" network namespace the test made (the plugins'
 * master links live there, never on the host), CNI_NETNS a throw-away "pod" namespace.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { ip } from '../../src/kernel/command';
import { createNetns, deleteNetns, netnsPath } from '../../src/kernel/netns';
import { uniqueName } from './kernel';

const debianPlugins = '/usr/lib/cni';
/** The built plugin (npm run build:ts). */
const straitIpamPath = resolve(__dirname, '..', '..', 'src', 'cni', 'main.js');

export interface CniOutcome {
  code: number;
  stdout: string;
  stderr: string;
  /** stdout as JSON, when it is. */
  json?: Record<string, any>;
}

export interface PodAttachment {
  namespace: string;
  name: string;
  uid?: string;
  containerId: string;
  netns: string;
  ifname?: string;
}

export interface CniNode {
  /** The node's namespace name (holds `eth0`, a veth up: macvlan's and ipvlan's master). */
  netns: string;
  /** CNI_PATH: strait-ipam, then Debian's plugins. */
  cniPath: string;
  /** Runs the plugin of `config.type` (a Debian plugin) for the pod with the network configuration `config`. */
  run(command: string, config: Record<string, unknown>, pod?: PodAttachment, extraEnv?: Record<string, string>): Promise<CniOutcome>;
  /**
   * Runs strait-ipam itself, as a CNI 1.1.0 main plugin delegates GC and STATUS to its IPAM (Debian's
   * plugins are 1.1.1 and speak CNI 1.0.0 at most, which has neither).
   */
  runIpam(command: string, config: Record<string, unknown>, pod?: PodAttachment): Promise<CniOutcome>;
  /** A new pod network namespace (removed by cleanup). */
  podNetns(): { name: string; path: string };
  /** Another host on the node's segment: a macvlan of `eth0` named `link`, holding `address`, in a namespace of its own. */
  segmentHost(link: string, address: string): { name: string; path: string };
  /** Deletes the pod namespaces made so far (a benchmark's round done); cleanup deletes the later ones. */
  removePodNetns(): void;
  cleanup(): void;
}

export function cniNode(): CniNode {
  // Not sl-: that prefix is the lab's, and a lab test refuses to start while such a namespace exists.
  const netns = uniqueName('sipam');
  const dir = mkdtempSync(join(tmpdir(), 'strait-cni-path-'));
  symlinkSync(straitIpamPath, join(dir, 'strait-ipam'));
  const pods: string[] = [];
  let made = 0;
  createNetns(netns);
  try {
    // The node's NIC: one end of a veth pair (this kernel has no dummy links), both ends up.
    ip(['-n', netns, 'link', 'add', 'eth0', 'type', 'veth', 'peer', 'name', 'eth0-wire']);
    ip(['-n', netns, 'link', 'set', 'eth0', 'up']);
    ip(['-n', netns, 'link', 'set', 'eth0-wire', 'up']);
  } catch (err) {
    deleteNetns(netns);
    throw err;
  }
  const cniPath = `${dir}:${debianPlugins}`;
  return {
    netns,
    cniPath,
    podNetns() {
      const name = `${netns}-p${made++}`;
      createNetns(name);
      pods.push(name);
      return { name, path: netnsPath(name) };
    },
    segmentHost(link, address) {
      const host = this.podNetns();
      ip(['-n', netns, 'link', 'add', link, 'link', 'eth0', 'type', 'macvlan', 'mode', 'bridge']);
      ip(['-n', netns, 'link', 'set', link, 'netns', host.name]);
      ip(['-n', host.name, 'addr', 'add', address, 'dev', link]);
      ip(['-n', host.name, 'link', 'set', link, 'up']);
      return host;
    },
    removePodNetns() {
      for (const p of pods.splice(0)) deleteNetns(p);
    },
    runIpam: (command, config, pod) => invoke(join(dir, 'strait-ipam'), command, config, pod, {}),
    run: (command, config, pod, extraEnv = {}) => invoke(join(debianPlugins, String(config.type)), command, config, pod, extraEnv),
    cleanup() {
      for (const p of pods.splice(0)) deleteNetns(p);
      deleteNetns(netns);
      rmSync(dir, { recursive: true, force: true });
    },
  };

  function invoke(
    plugin: string,
    command: string,
    config: Record<string, unknown>,
    pod: PodAttachment | undefined,
    extraEnv: Record<string, string>,
  ): Promise<CniOutcome> {
    const env: Record<string, string> = {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      CNI_COMMAND: command,
      CNI_PATH: cniPath,
      ...(pod
        ? {
            CNI_CONTAINERID: pod.containerId,
            CNI_NETNS: pod.netns,
            CNI_IFNAME: pod.ifname ?? 'eth0',
            CNI_ARGS: `IgnoreUnknown=1;K8S_POD_NAMESPACE=${pod.namespace};K8S_POD_NAME=${pod.name}${pod.uid ? `;K8S_POD_UID=${pod.uid}` : ''}`,
          }
        : {}),
      ...extraEnv,
    };
    const child = spawn('ip', ['netns', 'exec', netns, plugin], { env, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.stdin.end(JSON.stringify(config));
    return new Promise((done, fail) => {
      child.on('error', fail);
      child.on('close', (code) => {
        // A plugin prints a JSON result or error, or nothing: anything else is a failure of its own.
        if (stdout.trim() === '') return done({ code: code ?? -1, stdout, stderr });
        try {
          done({ code: code ?? -1, stdout, stderr, json: JSON.parse(stdout) as Record<string, any> });
        } catch (err) {
          fail(new Error(`${plugin} ${command} printed something that is not JSON (${(err as Error).message}): ${stdout}${stderr}`));
        }
      });
    });
  }
}

/** The addresses (with prefix) of `ifname` in the namespace `netns` (a name). */
export function addressesIn(netns: string, ifname = 'eth0'): string[] {
  const out = ip(['-n', netns, '-j', 'addr', 'show', 'dev', ifname]);
  const links = JSON.parse(out) as { addr_info: { family: string; local: string; prefixlen: number; scope: string }[] }[];
  return links.flatMap((l) => l.addr_info.filter((a) => a.scope === 'global').map((a) => `${a.local}/${a.prefixlen}`));
}

/** The neighbour entries of a namespace (both families), as `ip neigh` prints them. */
export function neighbours(netns: string): string[] {
  return ip(['-n', netns, 'neigh', 'show'])
    .split('\n')
    .concat(ip(['-n', netns, '-6', 'neigh', 'show']).split('\n'))
    .filter((l) => l.trim() !== '');
}
