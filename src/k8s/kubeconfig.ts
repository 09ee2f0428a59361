/**
 * Where the controller and the agent find their API server: a kubeconfig file when one is given (the
 * lab's `<run-dir>/<cluster>/kubeconfig`, a person's), else the Pod's service account (in-cluster); a
 * peer cluster's kubeconfig comes as text from a Secret. A kubeconfig holds a token: only `describe` is
 * for logs (server, context and user names, never credentials). Their clients keep their connections
 * alive (keep-alive.ts).
 */
import { KubeConfig } from '@kubernetes/client-node';
import { keepConnectionsAlive } from './keep-alive';

export interface KubeConfigSource {
  /** A kubeconfig file; without it, in-cluster (the service account's token and CA). */
  file?: string;
  /** A context of the file other than its current one. */
  context?: string;
}

export function loadKubeConfig(source: KubeConfigSource = {}): KubeConfig {
  const config = new KubeConfig();
  if (source.file !== undefined) {
    config.loadFromFile(source.file);
  } else {
    if (!process.env.KUBERNETES_SERVICE_HOST)
      throw new Error('no kubeconfig file given and not running in a Pod (KUBERNETES_SERVICE_HOST is not set)');
    config.loadFromCluster();
  }
  return withContext(config, source.context);
}

/** A kubeconfig given as text (a peer cluster's, from a Secret). */
export function kubeConfigFromText(text: string, context?: string): KubeConfig {
  const config = new KubeConfig();
  config.loadFromString(text);
  return withContext(config, context);
}

function withContext(config: KubeConfig, context: string | undefined): KubeConfig {
  if (context !== undefined) {
    if (!config.getContextObject(context))
      throw new Error(
        `the kubeconfig has no context ${JSON.stringify(context)} (it has ${
          config
            .getContexts()
            .map((c) => c.name)
            .join(', ') || 'none'
        })`,
      );
    config.setCurrentContext(context);
  }
  if (!config.getCurrentCluster()) throw new Error('the kubeconfig names no current cluster');
  return keepConnectionsAlive(config);
}

/** For a log line: the server and whom we are, without any credential. */
export function describeKubeConfig(config: KubeConfig): string {
  return `${config.getCurrentCluster()?.server ?? '(no server)'} as user ${config.getCurrentUser()?.name ?? '(none)'} (context ${config.getCurrentContext() || '(none)'})`;
}
