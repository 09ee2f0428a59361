/**
 * The lab API server for a test: started on a free port with the strait.io CRDs, a random token, and a
 * kubeconfig (for kubectl) in a temporary directory; `kubeConfig` is client-node's view of that file.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { crdFiles } from '../../src/api/write-crds';
import { writeKubeconfig } from '../../src/lab/apiserver/kubeconfig';
import { type ApiServer, type ApiServerOptions, startApiServer } from '../../src/lab/apiserver/server';

export interface TestApiServer {
  server: ApiServer;
  token: string;
  /** A kubeconfig file whose current context (`test`) is this server. */
  kubeconfigPath: string;
  kubeConfig: KubeConfig;
  /** A directory the test may use (kubectl's HOME, manifests); removed by close(). */
  dir: string;
  close(): Promise<void>;
}

export async function startTestApiServer(options: Partial<ApiServerOptions> = {}): Promise<TestApiServer> {
  const token = randomBytes(16).toString('hex');
  const server = await startApiServer({ token, crds: [...crdFiles().values()], ...options });
  const dir = mkdtempSync(join(tmpdir(), 'strait-apiserver-'));
  const kubeconfigPath = join(dir, 'kubeconfig');
  writeKubeconfig(kubeconfigPath, [{ name: 'test', server: server.url, ca: server.ca, token }]);
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromFile(kubeconfigPath);
  return {
    server,
    token,
    kubeconfigPath,
    kubeConfig,
    dir,
    close: async () => {
      await server.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
