import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describeKubeConfig, kubeConfigFromText, loadKubeConfig } from '../../src/k8s/kubeconfig';
import { kubeconfigText } from '../../lab/src/apiserver/kubeconfig';

const token = 'secret-token-0123456789';
const text = kubeconfigText([
  { name: 'cluster-a', server: 'https://127.0.0.1:6443', ca: 'not a real CA', token },
  { name: 'cluster-b', server: 'https://127.0.0.1:7443', ca: 'not a real CA', token },
]);

describe('kubeconfig loading', () => {
  let dir: string;
  before(() => (dir = mkdtempSync(join(tmpdir(), 'strait-kubeconfig-'))));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('loads a file at its current context or a named one, and describes it without the token', () => {
    const file = join(dir, 'kubeconfig');
    writeFileSync(file, text, { mode: 0o600 });
    assert.equal(describeKubeConfig(loadKubeConfig({ file })), 'https://127.0.0.1:6443 as user cluster-a (context cluster-a)');
    const b = loadKubeConfig({ file, context: 'cluster-b' });
    assert.equal(describeKubeConfig(b), 'https://127.0.0.1:7443 as user cluster-b (context cluster-b)');
    assert.equal(describeKubeConfig(kubeConfigFromText(text, 'cluster-b')), 'https://127.0.0.1:7443 as user cluster-b (context cluster-b)');
    assert.throws(
      () => loadKubeConfig({ file, context: 'cluster-c' }),
      /^Error: the kubeconfig has no context "cluster-c" \(it has cluster-a, cluster-b\)$/,
    );
  });

  it('without a file, refuses outside a Pod rather than guessing at ~/.kube/config', () => {
    const saved = process.env.KUBERNETES_SERVICE_HOST;
    delete process.env.KUBERNETES_SERVICE_HOST;
    try {
      assert.throws(
        () => loadKubeConfig(),
        /^Error: no kubeconfig file given and not running in a Pod \(KUBERNETES_SERVICE_HOST is not set\)$/,
      );
    } finally {
      if (saved !== undefined) process.env.KUBERNETES_SERVICE_HOST = saved;
    }
  });
});
