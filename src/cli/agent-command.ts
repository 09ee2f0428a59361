/**
 * `strait agent`: the node agent, on files (docs/lab.md) or on the API server (`--kubernetes`,
 * docs/kubernetes.md, "The agent"). Flags are checked in the action, before the kernel is touched, so a bad one
 * gets the same JSON error on stderr as every other failure.
 */
import { existsSync, statSync } from 'node:fs';
import { isAbsolute } from 'node:path';
import type { Command } from 'commander';
import { type AgentOptions, type DataplaneRequest, runAgent } from '../agent/agent';
import { cleanupNodeDataplanes } from '../dataplane/open';
import type { TcMode } from '../native';
import type { ControlPlaneOptions, PoolIpamOptions } from '../agent/control-plane-port';
import { checkFormat } from '../api/formats';
import { InputError } from '../errors';
import { netnsPath } from '../kernel/netns';
import { createLogger } from '../log';
import { defaultNamespace, straitNamespace } from '../k8s/names';
import { defaultIpamSocket } from '../pool-ipam/protocol';
import { defaultProbeCachePath } from '../probe/probe-cache';
import { type MetricsFlags, defaultMetricsAddress, defaultMetricsPort, parseMetricsListen } from '../metrics/listen';
import { optionsWithFlagsFile } from './flags-file';
import { jsonAction } from './output';

export interface AgentFlags extends MetricsFlags {
  spec?: string;
  /** The same as --spec, for a spec written by hand rather than by a controller. */
  config?: string;
  pinRoot?: string;
  status?: string;
  node?: string;
  podInterfaces: string;
  dataplane: string;
  attach: string;
  interval: string;
  resyncInterval: string;
  probeInterval: string;
  probeMultiplier: string;
  netns?: string;
  ipsecSecrets?: string;
  probeCache?: string;
  cleanup?: boolean;
  /** The NodeDataplane from the API server instead of --spec; the status to it instead of --status. */
  kubernetes?: boolean;
  kubeconfig?: string;
  namespace?: string;
  statusRefresh?: string;
  /** With --kubernetes: serve the pool IPAM (strait-ipam) on this unix socket; absent: none. */
  poolIpamSocket?: string;
  poolIpamGcInterval?: string;
  /** With --kubernetes: the agent's DaemonSet, whose deletion means the release is uninstalled. */
  daemonset?: string;
  /** With --daemonset: where `pool-ipam install-plugin` put strait-ipam, to take it off the node on uninstall. */
  poolIpamPluginDir?: string;
  poolIpamRuntimeDir?: string;
}

/** The environment the Kubernetes mode reads (a DaemonSet sets them from the downward API). */
export interface AgentEnvironment {
  NODE_NAME?: string;
  POD_NAMESPACE?: string;
  KUBECONFIG?: string;
  /** The node's address (status.hostIP): where the metrics server listens unless --metrics-address says. */
  HOST_IP?: string;
}

function oneOf<T extends string>(flag: string, value: string, allowed: readonly T[]): T {
  if (!allowed.includes(value as T)) throw new InputError(flag, value, `must be one of ${allowed.join(', ')}`);
  return value as T;
}

function parseRegex(value: string): RegExp {
  try {
    return new RegExp(value);
  } catch (err) {
    throw new InputError('--pod-interfaces', value, `not a regular expression: ${(err as Error).message}`);
  }
}

function parseSeconds(flag: string, value: string): number {
  const seconds = /^\d+(\.\d+)?$/.test(value) ? Number(value) : NaN;
  if (!(seconds > 0)) throw new InputError(flag, value, 'must be a number of seconds greater than 0, like 1 or 0.2');
  return Math.max(1, Math.round(seconds * 1000));
}

/** --probe-interval 0 turns the gateway probes (and local failover) off. */
function parseLiveness(flags: AgentFlags): AgentOptions['liveness'] {
  if (flags.probeInterval === '0') return undefined;
  const multiplier = /^\d+$/.test(flags.probeMultiplier) ? Number(flags.probeMultiplier) : NaN;
  if (!(multiplier >= 1 && multiplier <= 255))
    throw new InputError('--probe-multiplier', flags.probeMultiplier, 'must be a whole number of probes from 1 to 255, like 3');
  return { intervalMs: parseSeconds('--probe-interval', flags.probeInterval), multiplier };
}

function checkNetns(value: string): string {
  if (value === '' || value.includes('/') || !existsSync(netnsPath(value)))
    throw new InputError('--netns', value, `no such network namespace (${netnsPath(value)}; see ip netns list)`);
  return value;
}

function checkSecretsDir(value: string): string {
  if (!isAbsolute(value)) throw new InputError('--ipsec-secrets', value, 'must be an absolute path to a directory');
  if (!existsSync(value) || !statSync(value).isDirectory()) throw new InputError('--ipsec-secrets', value, 'no such directory');
  return value;
}

function checkPinRoot(value: string | undefined): string {
  if (value === undefined || value === '')
    throw new InputError(
      '--pin-root',
      value,
      "required: the directory on bpffs for this node's pins, like /sys/fs/bpf/strait (or pin-root: in --flags-file)",
    );
  if (!isAbsolute(value)) throw new InputError('--pin-root', value, 'must be an absolute path on bpffs, like /sys/fs/bpf/strait/<node>');
  return value;
}

/** The file mode: --spec (or --config), --status. */
function fileControlPlane(flags: AgentFlags, cleanup: boolean): ControlPlaneOptions {
  const kubernetesOnly = {
    kubeconfig: '--kubeconfig',
    namespace: '--namespace',
    statusRefresh: '--status-refresh',
    poolIpamSocket: '--pool-ipam-socket',
    poolIpamGcInterval: '--pool-ipam-gc-interval',
    daemonset: '--daemonset',
    poolIpamPluginDir: '--pool-ipam-plugin-dir',
    poolIpamRuntimeDir: '--pool-ipam-runtime-dir',
  } as const;
  for (const [key, flag] of Object.entries(kubernetesOnly)) {
    const value = flags[key as keyof typeof kubernetesOnly];
    if (value !== undefined) throw new InputError(flag, value, 'only with --kubernetes');
  }
  if (flags.spec !== undefined && flags.config !== undefined)
    throw new InputError('--config', flags.config, 'give either --spec or --config (they are the same file), not both');
  const spec = flags.spec ?? flags.config;
  if (!cleanup && (spec === undefined || spec === ''))
    throw new InputError('--spec', spec, 'required (the node dataplane spec file, or --config), unless --cleanup or --kubernetes');
  if (flags.node !== undefined && flags.node.trim() === '') throw new InputError('--node', flags.node, 'must not be empty');
  if (flags.status === '') throw new InputError('--status', flags.status, 'must not be empty');
  return {
    kind: 'files',
    specPath: spec ?? '',
    ...(flags.status === undefined ? {} : { statusPath: flags.status }),
    ...(flags.node === undefined ? {} : { nodeName: flags.node }),
  };
}

/** --pool-ipam-socket: an absolute path, as strait-ipam's network configuration names it; none: no pool IPAM. */
function poolIpam(flags: AgentFlags): PoolIpamOptions | undefined {
  const { poolIpamSocket: socket, poolIpamGcInterval: gcInterval } = flags;
  if (socket === undefined) {
    if (gcInterval !== undefined) throw new InputError('--pool-ipam-gc-interval', gcInterval, 'only with --pool-ipam-socket');
    return undefined;
  }
  if (!isAbsolute(socket))
    throw new InputError(
      '--pool-ipam-socket',
      socket,
      `must be an absolute path (the "socket" of strait-ipam's network configuration), like ${defaultIpamSocket}`,
    );
  return { socket, gcIntervalMs: parseSeconds('--pool-ipam-gc-interval', gcInterval ?? '600') };
}

/**
 * --pool-ipam-plugin-dir and --pool-ipam-runtime-dir, both or neither, with --daemonset (their only use is
 * the uninstall it tells of): install-plugin's --cni-bin-dir and --runtime-dir.
 */
function poolIpamPlugin(flags: AgentFlags): { cniBinDir: string; runtimeDir: string } | undefined {
  const { poolIpamPluginDir: cniBinDir, poolIpamRuntimeDir: runtimeDir } = flags;
  if (cniBinDir === undefined && runtimeDir === undefined) return undefined;
  const [flag, value] = cniBinDir !== undefined ? ['--pool-ipam-plugin-dir', cniBinDir] : ['--pool-ipam-runtime-dir', runtimeDir];
  if (flags.daemonset === undefined)
    throw new InputError(flag, value, 'only with --daemonset (the plugin is taken off the node when it is deleted)');
  if (cniBinDir === undefined) throw new InputError('--pool-ipam-plugin-dir', cniBinDir, 'required with --pool-ipam-runtime-dir');
  if (runtimeDir === undefined) throw new InputError('--pool-ipam-runtime-dir', runtimeDir, 'required with --pool-ipam-plugin-dir');
  for (const [f, v] of [
    ['--pool-ipam-plugin-dir', cniBinDir],
    ['--pool-ipam-runtime-dir', runtimeDir],
  ] as const)
    if (!isAbsolute(v)) throw new InputError(f, v, 'must be an absolute path');
  return { cniBinDir, runtimeDir };
}

/** --kubernetes: the node from --node or NODE_NAME, the kubeconfig from --kubeconfig, KUBECONFIG or the Pod. */
function kubernetesControlPlane(flags: AgentFlags, env: AgentEnvironment): ControlPlaneOptions {
  for (const [flag, value] of [
    ['--spec', flags.spec],
    ['--config', flags.config],
    ['--status', flags.status],
  ] as const) {
    if (value !== undefined)
      throw new InputError(
        flag,
        value,
        'is the file mode; --kubernetes reads the NodeDataplane from the API server and writes its status there',
      );
  }
  const [nodeField, nodeName] = flags.node !== undefined ? ['--node', flags.node] : ['NODE_NAME', env.NODE_NAME];
  if (nodeName === undefined || nodeName === '')
    throw new InputError(
      '--node',
      nodeName,
      'required with --kubernetes: give --node or set NODE_NAME (a DaemonSet sets it from spec.nodeName)',
    );
  const namespace = straitNamespace(flags.namespace, env);
  const [kubeconfigField, kubeconfig] =
    flags.kubeconfig !== undefined ? ['--kubeconfig', flags.kubeconfig] : ['KUBECONFIG', env.KUBECONFIG || undefined];
  if (kubeconfig !== undefined && !(existsSync(kubeconfig) && statSync(kubeconfig).isFile()))
    throw new InputError(kubeconfigField, kubeconfig, "no such file (without a kubeconfig the agent uses the Pod's service account)");
  const ipam = poolIpam(flags);
  return {
    kind: 'kubernetes',
    nodeName: checkFormat('node-name', nodeField, nodeName),
    namespace,
    ...(kubeconfig === undefined ? {} : { kubeconfig }),
    statusRefreshMs: parseSeconds('--status-refresh', flags.statusRefresh ?? '300'),
    ...(ipam === undefined ? {} : { poolIpam: ipam }),
    ...(flags.daemonset === undefined ? {} : { daemonSet: checkFormat('object-name', '--daemonset', flags.daemonset) }),
  };
}

/** --probe-cache: an absolute file path, or none (probe at every start). */
function checkProbeCache(value: string | undefined): string | undefined {
  if (value === undefined) return defaultProbeCachePath;
  if (value === 'none') return undefined;
  if (!isAbsolute(value))
    throw new InputError('--probe-cache', value, `must be an absolute file path, like ${defaultProbeCachePath}, or none`);
  return value;
}

/** What --flags-file may say, and how (flags-file.ts). */
export const agentFlagsFileRules = {
  paths: ['spec', 'config', 'status', 'kubeconfig', 'ipsec-secrets', 'pool-ipam-plugin-dir', 'pool-ipam-runtime-dir'],
  commandLineOnly: ['cleanup'],
} as const;

/** Checks every flag; the spec may be absent only for --cleanup and --kubernetes. */
export function parseAgentFlags(flags: AgentFlags, env: AgentEnvironment = process.env): AgentOptions & { cleanup: boolean } {
  const cleanup = flags.cleanup === true;
  const metrics = parseMetricsListen(flags, env, defaultMetricsPort.agent);
  const probeCache = checkProbeCache(flags.probeCache);
  const plugin = flags.kubernetes ? poolIpamPlugin(flags) : undefined;
  const liveness = cleanup ? undefined : parseLiveness(flags);
  return {
    cleanup,
    controlPlane: flags.kubernetes ? kubernetesControlPlane(flags, env) : fileControlPlane(flags, cleanup),
    pinRoot: checkPinRoot(flags.pinRoot),
    podInterfaces: parseRegex(flags.podInterfaces),
    dataplane: oneOf<DataplaneRequest>('--dataplane', flags.dataplane, ['auto', 'ebpf', 'kernel']),
    attachMode: oneOf<TcMode>('--attach', flags.attach, ['auto', 'tcx', 'clsact']),
    intervalMs: parseSeconds('--interval', flags.interval),
    resyncMs: parseSeconds('--resync-interval', flags.resyncInterval),
    ...(liveness === undefined ? {} : { liveness }),
    ...(flags.netns === undefined ? {} : { netns: checkNetns(flags.netns) }),
    ...(flags.ipsecSecrets === undefined ? {} : { ipsecSecrets: checkSecretsDir(flags.ipsecSecrets) }),
    ...(probeCache === undefined ? {} : { probeCache }),
    ...(metrics === undefined || cleanup ? {} : { metrics }),
    ...(plugin === undefined ? {} : { poolIpamPlugin: plugin }),
  };
}

export function registerAgentCommand(program: Command): void {
  program
    .command('agent')
    .description(
      "keep this node's datapath in step with its NodeDataplane (a spec file, or the API server with --kubernetes): apply it on every change and every interval, report a status; SIGTERM leaves the datapath in place (but when --daemonset is deleted)",
    )
    .option('--spec <file>', 'the node dataplane spec (JSON, written by the controller); required unless --cleanup or --kubernetes')
    .option('--config <file>', 'the same, for a spec file written by hand (src/nodespec/spec.ts)')
    .option('--pin-root <dir>', "the directory on bpffs for this node's pinned maps and links; required")
    .option('--status <file>', 'where to write the heartbeat {node, ready, time, dataplane, specGeneration}')
    .option('--kubernetes', "watch this node's NodeDataplane on the API server and write its status there (instead of --spec and --status)")
    .option('--kubeconfig <file>', "with --kubernetes: the kubeconfig (default: KUBECONFIG, else the Pod's service account)")
    .option(
      '--namespace <ns>',
      `with --kubernetes: the agent's namespace, its DaemonSet's (default: POD_NAMESPACE, else ${defaultNamespace})`,
    )
    .option(
      '--status-refresh <seconds>',
      'with --kubernetes: how often an unchanged status is written anyway (default 300, as the kubelet reports a node status)',
    )
    .option(
      '--pool-ipam-socket <path>',
      `with --kubernetes: serve the pool IPAM of this node's underlay pods on this unix socket, for the strait-ipam CNI plugin (its configuration's "socket", like ${defaultIpamSocket}); default: none`,
    )
    .option(
      '--pool-ipam-gc-interval <seconds>',
      "with --pool-ipam-socket: seconds between the pool IPAM's garbage collection scans (default 600)",
    )
    .option(
      '--daemonset <name>',
      'with --kubernetes: the DaemonSet that runs this agent, in its namespace; once it is deleted (helm uninstall), SIGTERM takes the datapath off the node instead of leaving it for the next agent',
    )
    .option(
      '--pool-ipam-plugin-dir <dir>',
      "with --daemonset: the CNI plugin directory where `pool-ipam install-plugin` put strait-ipam; once the DaemonSet is deleted, SIGTERM removes the plugin's runtime and leaves a strait-ipam that only lets the pods that used it be deleted",
    )
    .option('--pool-ipam-runtime-dir <dir>', "with --pool-ipam-plugin-dir: the plugin's runtime directory (install-plugin's --runtime-dir)")
    .option(
      '--node <name>',
      "this node's name; a spec for another node is refused (default: the spec's node; with --kubernetes: NODE_NAME)",
    )
    .option(
      '--pod-interfaces <regex>',
      'pod interfaces (host side of each pod veth: bridge and ptp CNIs veth, Calico cali, Cilium lxc) are those whose name matches',
      '^(veth|cali|lxc)',
    )
    .option('--dataplane <mode>', 'auto (eBPF where the kernel can run it, else the kernel fallback), ebpf, or kernel', 'auto')
    .option('--attach <mode>', 'how programs are attached: auto (tcx where available), tcx, or clsact', 'auto')
    .option('--interval <seconds>', 'seconds between reconciles and heartbeats', '1')
    .option(
      '--resync-interval <seconds>',
      "seconds between full reads of the node's kernel state (maps, devices, routes), which repair changes made by hand that no kernel event reports (a map entry); between them a reconcile writes only what changed",
      '60',
    )
    .option(
      '--probe-interval <seconds>',
      'seconds between the probes this node sends to each gateway candidate (docs/liveness.md); 0: no probes, the node follows the published gateway only',
      '0.05',
    )
    .option(
      '--probe-multiplier <n>',
      'probes unanswered before a gateway candidate counts as down: it is detected in interval × multiplier',
      '3',
    )
    .option('--netns <name>', "the node's network namespace (/run/netns/NAME); default: the agent's own")
    .option(
      '--ipsec-secrets <dir>',
      "encrypted peerings: a directory with a file per peer cluster id holding the peering's secret (base64, at least 32 bytes, mode 0600)",
    )
    .option(
      '--probe-cache <file>',
      `where the kernel probe's report is kept for the rest of the boot, so a restart does not probe again (none: probe at every start; default ${defaultProbeCachePath})`,
    )
    .option(
      '--metrics-address <ip>',
      `where /metrics, /healthz and /readyz are served (default: HOST_IP, else ${defaultMetricsAddress}; 0.0.0.0 only when given)`,
    )
    .option('--metrics-port <port>', `the port of that server; 0: none (default ${defaultMetricsPort.agent})`)
    .option(
      '--cleanup',
      'remove everything Strait put on the node (routes, attachments, devices, pinned maps, NAT, xfrm), print a summary, exit',
    )
    .option(
      '--flags-file <file>',
      "these options from a YAML map of option names to values (the Helm chart's ConfigMap); the command line wins",
    )
    .action(
      jsonAction(async (_: AgentFlags, command: Command) => {
        const options = parseAgentFlags(optionsWithFlagsFile<AgentFlags>(command, agentFlagsFileRules));
        if (options.cleanup) return cleanupNodeDataplanes(options.pinRoot, options.netns);
        await runAgent(options, createLogger('agent'));
        return undefined;
      }),
    );
}
