/** The Helm chart (helm/strait) as the real helm renders it: the objects a cluster would be given. */
import { execFileSync } from 'node:child_process';
import { type KubeConfig, KubernetesObjectApi } from '@kubernetes/client-node';
import { parseAllDocuments } from 'yaml';
import { chartDirectory } from '../../src/api/chart-paths';
import type { TokenUser } from '../../lab/src/apiserver/authentication';
import { apiStatus } from '../../src/k8s/api-errors';
import { k8sTool } from '../../lab/src/k8s-tools';

export type ChartObject = Record<string, any>;

/** The namespace renderChart installs into. */
export const chartNamespace = 'strait-system';

/** `helm template` of the chart in namespace strait-system, with `args` (-f FILE, --set ...). */
export function renderChart(args: string[] = []): ChartObject[] {
  const text = execFileSync(k8sTool('helm'), ['template', 'strait', chartDirectory, '--namespace', chartNamespace, ...args], {
    encoding: 'utf8',
  });
  return parseAllDocuments(text)
    .map((d) => d.toJS() as ChartObject)
    .filter((o) => o !== null);
}

/** The user a ServiceAccount of the chart's namespace authenticates as, with `token` (for startTestApiServer's `users`). */
export const chartServiceAccountUser = (account: string, token: string): TokenUser => ({
  token,
  name: `system:serviceaccount:${chartNamespace}:${account}`,
  uid: `uid-${account}`,
  groups: ['system:serviceaccounts', `system:serviceaccounts:${chartNamespace}`],
});

/**
 * The user the chart's agent ServiceAccount authenticates as on `node`: as a Pod's token bound to it,
 * with the node's name in its extra (what the chart's admission policy lets the agent write by).
 */
export const chartAgentUser = (token: string, node = 'n1'): TokenUser => ({
  ...chartServiceAccountUser('strait-agent', token),
  extra: { 'authentication.kubernetes.io/node-name': [node] },
});

/** The kinds of the chart's access control (Roles, in the namespace each names: the release's, or `default` for the controller's Events). */
const accessKinds = new Set([
  'ClusterRole',
  'ClusterRoleBinding',
  'Role',
  'RoleBinding',
  'ValidatingAdmissionPolicy',
  'ValidatingAdmissionPolicyBinding',
]);

/**
 * Puts the chart's access control as rendered with `args` into an API server through `admin`: its RBAC
 * objects (ClusterRoles, Roles and their bindings) and its ValidatingAdmissionPolicies and bindings,
 * which the server evaluates, replacing those of an earlier call (a `helm upgrade`). Namespace
 * strait-system must exist.
 */
export async function applyChartAccess(admin: KubeConfig, args: string[] = []): Promise<void> {
  const client = KubernetesObjectApi.makeApiClient(admin);
  for (const object of renderChart(args)) {
    if (!accessKinds.has(object.kind)) continue;
    try {
      await client.create(object);
    } catch (err) {
      if (apiStatus(err) !== 409) throw err;
      await client.replace(object);
    }
  }
}
