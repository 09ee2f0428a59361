/**
 * The lab on Kubernetes installs Strait as a platform team does: values for the chart (helm/strait) and
 * the real `helm upgrade --install` against the cluster's API server (a release, its CRDs created and
 * upgraded by helm, a change installed as the next revision), and the controllers and agents
 * started from the ConfigMap as the API server holds it (its keys written to `<run-dir>/<cluster>/config/`,
 * what a Pod's volume would show). Only what differs per process on one machine (node name, kubeconfig,
 * pin root, namespace, metrics port) is given on the command line: the chart and the binaries cannot
 * drift apart without the lab failing.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse, stringify } from 'yaml';
import { chartDirectory } from '../../src/api/chart-paths';
import type { ControllerConfigDocument } from '../../src/api/controller-config';
import { run, runAsync } from '../../src/kernel/command';
import { defaultNamespace } from '../../src/k8s/names';
import { kubeconfigPath } from './control-plane';
import { k8sTool } from './k8s-tools';

/** The chart's release in every lab cluster: its objects are named `strait-*`. */
export const labRelease = 'strait';
export const labConfigMap = `${labRelease}-config`;

/**
 * Shorter than the chart's (client-go's 15/10/2): the lab's API server answers in microseconds, and its
 * failover tests kill leaders; a standby takes over within 4.5 s.
 */
const labLeaderElection = { leaseDuration: 4, renewDeadline: 3, retryPeriod: 0.5 };

/** What the lab sets in the chart's values (helm/strait/values.yaml), from its controller configuration. */
export interface LabChartSettings {
  /** The controller configuration document the lab makes for the cluster (lab.ts controllerConfig). */
  config: ControllerConfigDocument;
  dataplane: string;
  agentInterval: number;
  /** Seconds between the agents' gateway probes; absent: the chart's (its multiplier stays the chart's: Helm merges values). */
  agentProbeInterval?: number;
  podInterfaces: string;
  encryption: boolean;
}

export function labChartValues(s: LabChartSettings): object {
  return {
    cluster: {
      id: s.config.clusterId,
      podCIDR: s.config.podCIDR,
      externalCIDR: s.config.externalCIDR,
      ...(s.config.secondary ? { secondary: s.config.secondary } : {}),
    },
    peers: s.config.peers ?? [],
    reflections: s.config.reflections ?? [],
    dataplane: s.dataplane,
    encryption: { enabled: s.encryption },
    agent: {
      interval: s.agentInterval,
      podInterfaces: s.podInterfaces,
      ...(s.agentProbeInterval === undefined ? {} : { gatewayProbes: { interval: s.agentProbeInterval } }),
    },
    controller: { interval: s.config.interval, heartbeatTimeout: s.config.heartbeatTimeout, leaderElection: labLeaderElection },
  };
}

const valuesPath = (runDir: string, cluster: string) => join(runDir, cluster, 'values.yaml');

/** The dataplane the cluster's chart was installed with (to install it again with a change). */
export const installedDataplane = (runDir: string, cluster: string): string =>
  (parse(readFileSync(valuesPath(runDir, cluster), 'utf8')) as { dataplane: string }).dataplane;

/** `helm uninstall` of the cluster's release: its objects, its CRDs and every strait.io object go. */
export function uninstallChart(runDir: string, cluster: string): void {
  run([k8sTool('helm'), 'uninstall', labRelease, '--kubeconfig', kubeconfigPath(runDir, cluster), '--namespace', defaultNamespace]);
}

/** The chart installed with the lab's values, or upgraded to them (the release's next revision). */
export async function installChart(runDir: string, cluster: string, values: object): Promise<void> {
  const valuesFile = valuesPath(runDir, cluster);
  writeFileSync(valuesFile, stringify(values));
  await runAsync([
    k8sTool('helm'),
    'upgrade',
    '--install',
    labRelease,
    chartDirectory,
    '--kubeconfig',
    kubeconfigPath(runDir, cluster),
    '--namespace',
    defaultNamespace,
    '--values',
    valuesFile,
  ]);
}
