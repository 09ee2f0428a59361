/**
 * Which control plane a lab runs on: the run directory's files, or an API server per cluster
 * (kubernetes-control-plane.ts, loaded only for a lab on Kubernetes). Told apart by the kubeconfig each
 * cluster's API server writes, so `lab test`, `status` and `down` need no setting of their own.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { runDirPaths } from '../../src/api/run-dir';
import type { LabTopology } from './topology';

/** Where the desired state goes between controllers and agents: run-directory files, or an API server per cluster. */
export type ControlPlane = 'files' | 'kubernetes';

export const kubeconfigPath = (runDir: string, cluster: string) => join(runDir, runDirPaths.kubeconfig(cluster));

/**
 * The Strait identities of a cluster on Kubernetes, as the chart's ServiceAccounts name them (release
 * `strait`): each process of the lab uses its own, so RBAC and the admission policies are the chart's
 * and a missing rule fails the lab. The controllers share `controller`; each agent has `agent-<node>`,
 * a token bound to its node (what its Pod's token would be).
 */
export type LabIdentity = 'controller' | `agent-${string}`;
export const identityKubeconfigPath = (runDir: string, cluster: string, identity: LabIdentity) =>
  join(runDir, runDirPaths.identityKubeconfig(cluster, identity));

/** Where a cluster's processes on Kubernetes find the chart's ConfigMap: its keys as a Pod's volume would show them. */
export const labConfigDir = (runDir: string, cluster: string) => join(runDir, cluster, 'config');

/** Whether the lab in `runDir` runs on Kubernetes (its clusters have kubeconfigs). */
export const runsOnKubernetes = (runDir: string, topology: LabTopology) => existsSync(kubeconfigPath(runDir, topology.clusters[0]!.id));
