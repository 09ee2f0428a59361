/**
 * The clients of a kubeconfig Strait loads keep one TLS connection alive per API server (keep-alive.ts):
 * @kubernetes/client-node alone opens one per request. Counted on a real HTTPS server; it fails if
 * client-node stops going through the agent we replace.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { kubeConfigFromText, loadKubeConfig } from '../../src/k8s/kubeconfig';
import { selfSignedCertificate } from '../../lab/src/apiserver/certificate';
import { kubeconfigText } from '../../lab/src/apiserver/kubeconfig';

describe('kubeconfig clients keep their connections alive', () => {
  const certificate = selfSignedCertificate('keep-alive-test', ['127.0.0.1'], []);
  const server = createServer({ cert: certificate.cert, key: certificate.key }, (_req, res) => {
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ kind: 'NamespaceList', apiVersion: 'v1', metadata: { resourceVersion: '1' }, items: [] }));
  });
  let connections = 0;
  server.on('secureConnection', () => connections++);
  let text = '';
  let dir = '';
  before(async () => {
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const { port } = server.address() as AddressInfo;
    text = kubeconfigText([{ name: 'test', server: `https://127.0.0.1:${port}`, ca: certificate.cert, token: 'a-token' }]);
    dir = mkdtempSync(join(tmpdir(), 'strait-keep-alive-'));
  });
  after(() => {
    server.closeAllConnections();
    server.close();
    rmSync(dir, { recursive: true, force: true });
  });
  beforeEach(() => (connections = 0));

  const lists = async (config: KubeConfig, n: number) => {
    const core = config.makeApiClient(CoreV1Api);
    for (let i = 0; i < n; i++) await core.listNamespace();
  };

  it('makes 20 requests over one connection, from a file or from text', async () => {
    const file = join(dir, 'kubeconfig');
    writeFileSync(file, text, { mode: 0o600 });
    await lists(loadKubeConfig({ file }), 20);
    assert.equal(connections, 1, 'loadKubeConfig: one TLS connection');
    connections = 0;
    await lists(kubeConfigFromText(text), 20);
    assert.equal(connections, 1, 'kubeConfigFromText: one TLS connection');
  });

  it('opens more only for requests at the same time, and reuses them after', async () => {
    const core = kubeConfigFromText(text).makeApiClient(CoreV1Api);
    await Promise.all([core.listNamespace(), core.listNamespace(), core.listNamespace()]);
    const parallel = connections;
    assert.ok(parallel >= 1 && parallel <= 3, `${parallel} connections for 3 requests at once`);
    for (let i = 0; i < 10; i++) await core.listNamespace();
    assert.equal(connections, parallel, 'no new connection for requests one after another');
  });

  it('is what client-node alone does not do (the reason for keep-alive.ts): one connection per request', async () => {
    const config = new KubeConfig();
    config.loadFromString(text);
    await lists(config, 5);
    assert.equal(connections, 5);
  });
});
