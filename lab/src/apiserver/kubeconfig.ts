/**
 * Kubeconfig files for the lab's API servers: per cluster its server URL, its CA (the server's
 * self-signed certificate), a user with its bearer token and a context named after the cluster, so
 * `kubectl --context <cluster>` and client-node's loadFromFile reach it. Written atomically (mode 0600:
 * it holds tokens), so a reader never sees half a file.
 */
import { stringify } from 'yaml';
import { writeFileAtomic } from '../../../src/store/atomic-file';

export interface KubeconfigCluster {
  /** The cluster's name, also its context's and user's. */
  name: string;
  server: string;
  /** PEM of the CA that signed the server's certificate. */
  ca: string;
  token: string;
}

export function kubeconfigText(clusters: KubeconfigCluster[], currentContext = clusters[0]?.name): string {
  return stringify({
    apiVersion: 'v1',
    kind: 'Config',
    preferences: {},
    clusters: clusters.map((c) => ({
      name: c.name,
      cluster: { server: c.server, 'certificate-authority-data': Buffer.from(c.ca).toString('base64') },
    })),
    users: clusters.map((c) => ({ name: c.name, user: { token: c.token } })),
    contexts: clusters.map((c) => ({ name: c.name, context: { cluster: c.name, user: c.name } })),
    'current-context': currentContext ?? '',
  });
}

export function writeKubeconfig(path: string, clusters: KubeconfigCluster[], currentContext?: string): void {
  writeFileAtomic(path, kubeconfigText(clusters, currentContext), 0o600);
}
