/**
 * A process started the way a container runtime starts the agent's container of the Helm chart: as uid
 * 0 with only the given capabilities (bounding, permitted, effective, inheritable and ambient sets, as a
 * runtime sets them for a container's root), with no_new_privs (allowPrivilegeEscalation: false), in the
 * node's network namespace (hostNetwork), and in a mount namespace of its own with that namespace's sysfs
 * and the host's bpffs at /sys/fs/bpf (the chart's hostPath volume, HostToContainer). The process enters
 * nothing itself: entering a namespace (setns, the agent's --netns) needs CAP_SYS_ADMIN.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { netnsPath } from '../../src/kernel/netns';
import { cannotRunHere } from './kernel';

/** The numbers (linux/capability.h) of the capabilities a test may give or find; others read as `capability N`. */
const capabilityNumbers: Record<string, number> = { NET_ADMIN: 12, NET_RAW: 13, SYS_ADMIN: 21, SYS_RESOURCE: 24, PERFMON: 38, BPF: 39 };

/** Fails (skips outside CI) where util-linux's tools or the capabilities the chart names are missing. */
export function requireContainerTools(ctx: Mocha.Context): void {
  for (const tool of ['setpriv', 'nsenter', 'unshare']) {
    if (spawnSync(tool, ['--version']).status !== 0) cannotRunHere(ctx, `needs util-linux's ${tool}`);
  }
  const lastCap = Number(readFileSync('/proc/sys/kernel/cap_last_cap', 'utf8'));
  if (lastCap < capabilityNumbers.BPF!)
    cannotRunHere(ctx, `needs a kernel with CAP_BPF and CAP_PERFMON (5.8+); this one's last capability is ${lastCap}`);
}

/**
 * The command line that runs `argv` so in namespace `netns`, with `capabilities` (names as a pod spec
 * writes them: NET_ADMIN). Every step execs the next, so the pid of the spawned process is the contained
 * program's.
 */
export function containerCommand(netns: string, capabilities: readonly string[], argv: readonly string[]): string[] {
  // The host's bpffs, opened in the new mount namespace before the namespace's sysfs covers it, then
  // mounted from that fd (--no-canonicalize: mount would otherwise resolve it to the covered path).
  const script =
    'exec 3</sys/fs/bpf && mount -t sysfs sysfs /sys && mount --no-canonicalize --bind /proc/self/fd/3 /sys/fs/bpf && exec "$@" 3<&-';
  return [
    'nsenter',
    `--net=${netnsPath(netns)}`,
    '--',
    'unshare',
    '--mount',
    '--propagation',
    'slave',
    '--',
    'sh',
    '-c',
    script,
    'sh',
    ...withOnly(capabilities, argv),
  ];
}

/** The same in this machine's own network namespace (hostNetwork), its sysfs as it is. */
export function hostNetworkContainerCommand(capabilities: readonly string[], argv: readonly string[]): string[] {
  return ['unshare', '--mount', '--propagation', 'slave', '--', ...withOnly(capabilities, argv)];
}

/** `argv` run as uid 0 with only `capabilities`, and no_new_privs. */
function withOnly(capabilities: readonly string[], argv: readonly string[]): string[] {
  const set = ['-all', ...capabilities.map((c) => `+${c.toLowerCase()}`)].join(',');
  return ['setpriv', `--inh-caps=${set}`, `--ambient-caps=${set}`, `--bounding-set=${set}`, '--no-new-privs', '--', ...argv];
}

/** A running process's capability sets (names, sorted) and no_new_privs flag, from /proc/PID/status. */
export function processPrivileges(pid: number): {
  effective: string[];
  permitted: string[];
  inheritable: string[];
  bounding: string[];
  ambient: string[];
  noNewPrivs: boolean;
} {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const field = (name: string) => new RegExp(`^${name}:\\s*(\\S+)$`, 'm').exec(status)?.[1] ?? '';
  const names = (hex: string) => {
    const mask = BigInt(`0x${hex}`);
    const known = Object.entries(capabilityNumbers)
      .filter(([, n]) => (mask >> BigInt(n)) & 1n)
      .map(([name]) => name);
    const others = [...Array(64).keys()]
      .filter((n) => (mask >> BigInt(n)) & 1n && !Object.values(capabilityNumbers).includes(n))
      .map((n) => `capability ${n}`);
    return [...known, ...others].sort();
  };
  return {
    effective: names(field('CapEff')),
    permitted: names(field('CapPrm')),
    inheritable: names(field('CapInh')),
    bounding: names(field('CapBnd')),
    ambient: names(field('CapAmb')),
    noNewPrivs: field('NoNewPrivs') === '1',
  };
}
