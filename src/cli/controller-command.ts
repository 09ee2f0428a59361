/**
 * `strait controller --config FILE [--once]`: the standalone controller of one cluster (docs/lab.md).
 * Runs until SIGTERM or SIGINT and exits 0; `--once` runs one reconcile and prints the controller status.
 * `strait controller --kubernetes --config FILE`: one replica of the controller on Kubernetes
 * (docs/kubernetes.md): leader election, Nodes in, strait.io objects out.
 */
import { hostname } from 'node:os';
import type { Command } from 'commander';
import { loadControllerConfig } from '../api/controller-config';
import { runController, runUntilSignalled } from '../controller/files/controller';
import { checkFormat } from '../api/formats';
import { InputError } from '../errors';
import { defaultNamespace, straitNamespace } from '../k8s/names';
import { type LeaseTimings, clientGoLeaseTimings } from '../k8s/lease-decision';
import { createLogger } from '../log';
import type { ControllerMetrics } from '../metrics/controller-metrics';
import { type MetricsFlags, type MetricsListen, defaultMetricsAddress, defaultMetricsPort, parseMetricsListen } from '../metrics/listen';
import { startMetricsServer } from '../metrics/server';
import { optionsWithFlagsFile } from './flags-file';
import { jsonAction } from './output';
import { type LeaderElectionFlags, leaderElectionTimings } from './leader-election-flags';

interface ControllerFlags extends MetricsFlags, LeaderElectionFlags {
  config?: string;
  once?: boolean;
  kubernetes?: boolean;
  kubeconfig?: string;
  namespace?: string;
  identity?: string;
  /** With --kubernetes: the controller's Deployment, whose deletion means the release is uninstalled. */
  deployment?: string;
}

/** What --flags-file may say, and how (flags-file.ts). */
export const controllerFlagsFileRules = { paths: ['config', 'kubeconfig'], commandLineOnly: ['once'] } as const;

/** The config path, namespace (straitNamespace) and identity (flag, else the Pod's name, else host and pid). */
function kubernetesFlags(
  flags: ControllerFlags,
  env: NodeJS.ProcessEnv = process.env,
): { config: string; namespace: string; identity: string; leaseTimings: LeaseTimings; deployment?: string } {
  if (flags.config === undefined || flags.config === '')
    throw new InputError('--config', flags.config, 'required: the controller configuration file (or config: in --flags-file)');
  if (!flags.kubernetes) {
    for (const flag of ['kubeconfig', 'namespace', 'identity', 'deployment'] as const) {
      if (flags[flag] !== undefined) throw new InputError(`--${flag}`, flags[flag], 'only with --kubernetes');
    }
    for (const [option, field] of [
      ['--leader-elect-lease-duration', flags.leaderElectLeaseDuration],
      ['--leader-elect-renew-deadline', flags.leaderElectRenewDeadline],
      ['--leader-elect-retry-period', flags.leaderElectRetryPeriod],
    ] as const)
      if (field !== undefined) throw new InputError(option, field, 'only with --kubernetes');
  }
  if (flags.kubernetes && flags.once) throw new InputError('--once', true, 'only for the standalone controller (without --kubernetes)');
  const namespace = straitNamespace(flags.namespace, env);
  const identity = flags.identity ?? env.POD_NAME ?? `${hostname()}-${process.pid}`;
  if (identity.trim() === '') throw new InputError('--identity', identity, 'must not be empty');
  const deployment = flags.deployment === undefined ? undefined : checkFormat('object-name', '--deployment', flags.deployment);
  const leaseTimings = leaderElectionTimings(flags);
  return { config: flags.config, namespace, identity, leaseTimings, ...(deployment === undefined ? {} : { deployment }) };
}

/** Where the metrics server listens (none for --once, which exits after one reconcile). */
export function controllerMetricsListen(
  flags: ControllerFlags,
  env: { HOST_IP?: string | undefined } = process.env,
): MetricsListen | undefined {
  const listen = parseMetricsListen(flags, env, defaultMetricsPort.controller);
  return flags.once ? undefined : listen;
}

/** Runs `run` with the metrics server up, when there is one; prom-client is loaded only then. */
async function withMetrics(
  listen: MetricsListen | undefined,
  mode: 'standalone' | 'kubernetes',
  run: (metrics?: ControllerMetrics) => Promise<void>,
): Promise<void> {
  if (listen === undefined) return run();
  const { ControllerMetrics } = await import('../metrics/controller-metrics');
  const metrics = new ControllerMetrics(mode);
  const server = await startMetricsServer(listen, metrics.registry, () => metrics.notReady(), createLogger('controller'));
  try {
    await run(metrics);
  } finally {
    await server.close();
  }
}

async function runOnKubernetes(
  flags: ControllerFlags,
  { config: configPath, namespace, identity, leaseTimings, deployment }: ReturnType<typeof kubernetesFlags>,
  listen: MetricsListen | undefined,
): Promise<void> {
  const config = loadControllerConfig(configPath, 'kubernetes');
  // The Kubernetes client takes a quarter of a second to load: only a controller on Kubernetes pays it.
  const { loadKubeConfig } = await import('../k8s/kubeconfig');
  const { runKubernetesController } = await import('../controller/kubernetes/controller');
  const kubeConfig = loadKubeConfig(
    flags.kubeconfig !== undefined ? { file: flags.kubeconfig } : process.env.KUBECONFIG ? { file: process.env.KUBECONFIG } : {},
  );
  const stop = new AbortController();
  const onSignal = () => stop.abort();
  process.once('SIGTERM', onSignal);
  process.once('SIGINT', onSignal);
  try {
    await withMetrics(listen, 'kubernetes', (metrics) =>
      runKubernetesController(
        {
          config,
          kubeConfig,
          namespace,
          identity,
          leaseTimings,
          log: createLogger('controller'),
          ...(deployment ? { deployment } : {}),
          ...(metrics ? { metrics } : {}),
        },
        stop.signal,
      ),
    );
  } finally {
    process.removeListener('SIGTERM', onSignal);
    process.removeListener('SIGINT', onSignal);
  }
}

export function registerControllerCommand(program: Command): void {
  program
    .command('controller')
    .description(
      'the controller of one cluster: IPAM, NetworkConfig exchange, gateway election, node dataplane specs; standalone through the run directory (docs/lab.md), or on Kubernetes (docs/kubernetes.md)',
    )
    .option(
      '--config <file>',
      'controller configuration, YAML or JSON (clusterId, podCIDR, externalCIDR, peers, reflections; standalone also runDir and nodes); required',
    )
    .option('--once', 'standalone: run one reconcile, print the controller status and exit')
    .option('--kubernetes', 'run against an API server: leader election, Node objects in, strait.io objects out')
    .option('--kubeconfig <file>', 'with --kubernetes: the API server (default KUBECONFIG, else in-cluster)')
    .option(
      '--namespace <ns>',
      `with --kubernetes: where the Leases, Secrets and Events are (default POD_NAMESPACE, else ${defaultNamespace})`,
    )
    .option('--identity <name>', 'with --kubernetes: this replica in leader election (default POD_NAME, else host-pid)')
    .option(
      '--deployment <name>',
      "with --kubernetes: the controller's Deployment, in its namespace; once it is deleted (helm uninstall), the leader's stop withdraws this cluster's NetworkConfigs from the peers' API servers",
    )
    .option(
      '--leader-elect-lease-duration <seconds>',
      `with --kubernetes: how long a standby waits for a silent leader before taking over (default ${clientGoLeaseTimings.leaseDuration}, client-go's)`,
    )
    .option(
      '--leader-elect-renew-deadline <seconds>',
      `with --kubernetes: how long a leader leads without renewing its Lease (default ${clientGoLeaseTimings.renewDeadline})`,
    )
    .option(
      '--leader-elect-retry-period <seconds>',
      `with --kubernetes: between two attempts to acquire or renew the Lease (default ${clientGoLeaseTimings.retryPeriod})`,
    )
    .option(
      '--metrics-address <ip>',
      `where /metrics, /healthz and /readyz are served (default: HOST_IP, else ${defaultMetricsAddress}; 0.0.0.0 only when given)`,
    )
    .option('--metrics-port <port>', `the port of that server; 0: none (default ${defaultMetricsPort.controller}; --once serves nothing)`)
    .option(
      '--flags-file <file>',
      "these options from a YAML map of option names to values (the Helm chart's ConfigMap); the command line wins",
    )
    .action(
      jsonAction(async (_: ControllerFlags, command: Command) => {
        const o = optionsWithFlagsFile<ControllerFlags>(command, controllerFlagsFileRules);
        const checked = kubernetesFlags(o);
        const listen = controllerMetricsListen(o);
        if (o.kubernetes) {
          await runOnKubernetes(o, checked, listen);
          return undefined;
        }
        const config = loadControllerConfig(checked.config);
        if (o.once) return runController(config, { once: true });
        await withMetrics(listen, 'standalone', (metrics) => runUntilSignalled(config, metrics));
        return undefined;
      }),
    );
}
