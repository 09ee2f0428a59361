/**
 * The lab's in-process API server (src/lab/apiserver/) for tests of Strait's Kubernetes code, with every
 * strait.io CRD, and a client-node KubeConfig for it (through src/k8s/kubeconfig.ts, as the controller
 * loads one). `restart` closes it and starts an empty one on the same port with the same certificate and
 * token: what a client sees when the API server restarts and loses its state.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import type { KubeConfig } from '@kubernetes/client-node';
import { kubeConfigFromText } from '../../src/k8s/kubeconfig';
import { type Certificate, selfSignedCertificate } from '../../src/lab/apiserver/certificate';
import { kubeconfigText } from '../../src/lab/apiserver/kubeconfig';
import { type ApiServer, type ApiServerOptions, startApiServer } from '../../src/lab/apiserver/server';

const crdDir = join(__dirname, '..', '..', '..', 'helm', 'strait', 'crds');
let certificate: Certificate | undefined;

export interface TestApiServer {
  server: ApiServer;
  kubeConfig: KubeConfig;
  /** Stops the server (streams and connections closed); nothing when it is stopped. */
  stop(): Promise<void>;
  /** Starts an empty one on the same port, with the same certificate and token. */
  start(): Promise<void>;
}

export async function startTestApiServer(options: Pick<ApiServerOptions, 'watchCacheSize' | 'bookmarkIntervalMs' | 'logger'> = {}): Promise<TestApiServer> {
  certificate ??= selfSignedCertificate('strait-test-apiserver', ['127.0.0.1'], ['localhost']);
  const token = randomBytes(16).toString('hex');
  const crds = readdirSync(crdDir).filter((f) => f.endsWith('.yaml')).sort().map((f) => readFileSync(join(crdDir, f), 'utf8'));
  const serve = (port?: number) => startApiServer({ token, crds, certificate: certificate!, ...(port !== undefined ? { port } : {}), ...options });
  let running = true;
  const test: TestApiServer = {
    server: await serve(),
    kubeConfig: undefined as unknown as KubeConfig,
    stop: async () => {
      if (running) await test.server.close();
      running = false;
    },
    start: async () => {
      test.server = await serve(test.server.port);
      running = true;
    },
  };
  test.kubeConfig = kubeConfigFromText(kubeconfigText([{ name: 'test', server: test.server.url, ca: test.server.ca, token }]));
  return test;
}
