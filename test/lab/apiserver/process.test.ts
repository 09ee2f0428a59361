/**
 * `strait lab apiserver` as the lab runs it: a process that writes a kubeconfig for its cluster, says
 * where it listens, serves the strait.io CRDs to kubectl, keeps its token out of its logs, and exits 0
 * on SIGTERM.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'yaml';
import { kubectl } from '../../support/k8s-tools';

const main = join(__dirname, '..', '..', '..', 'src', 'cli', 'main.js');

describe('strait lab apiserver (the process)', function () {
  this.timeout(20_000);
  let dir: string;
  let child: ChildProcess | undefined;

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'strait-apiserver-process-'));
  });
  afterEach(() => {
    if (child?.exitCode === null) child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });

  it('writes a kubeconfig kubectl uses, prints its address, never logs the token, and exits 0 on SIGTERM', async () => {
    const token = 'process-test-token-0123456789';
    writeFileSync(join(dir, 'token'), `${token}\n`);
    const kubeconfig = join(dir, 'kubeconfig');
    child = spawn(process.execPath, [main, 'lab', 'apiserver', '--token-file', join(dir, 'token'), '--kubeconfig', kubeconfig, '--cluster', 'east'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => child!.on('exit', (code) => resolve(code)));
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no address printed; stderr: ${stderr}`)), 10_000);
      child!.stdout!.on('data', () => stdout.includes('\n') && (clearTimeout(timer), resolve()));
      void exited.then((code) => reject(new Error(`exited ${code}: ${stderr}`)));
    });
    const said = JSON.parse(stdout.split('\n')[0]!) as { url: string; port: number; kubeconfig: string };
    assert.equal(said.url, `https://127.0.0.1:${said.port}`);
    assert.equal(said.kubeconfig, kubeconfig);

    assert.equal(statSync(kubeconfig).mode & 0o777, 0o600);
    const config = parse(readFileSync(kubeconfig, 'utf8')) as Record<string, any>;
    assert.equal(config['current-context'], 'east');
    assert.deepEqual(config.contexts, [{ name: 'east', context: { cluster: 'east', user: 'east' } }]);
    assert.equal(config.clusters[0].cluster.server, said.url);
    assert.deepEqual(config.users, [{ name: 'east', user: { token } }]);

    const crds = await kubectl(kubeconfig, dir, '--context', 'east', 'get', 'crds', '-o', 'name');
    assert.deepEqual(crds, {
      code: 0,
      stdout: [
        'customresourcedefinition.apiextensions.k8s.io/clusternetworks.strait.io',
        'customresourcedefinition.apiextensions.k8s.io/natmappings.strait.io',
        'customresourcedefinition.apiextensions.k8s.io/networkconfigs.strait.io',
        'customresourcedefinition.apiextensions.k8s.io/nodedataplanes.strait.io',
        'customresourcedefinition.apiextensions.k8s.io/peernetworks.strait.io',
        'customresourcedefinition.apiextensions.k8s.io/tunnelendpoints.strait.io',
        '',
      ].join('\n'),
      stderr: '',
    });

    child.kill('SIGTERM');
    let timer: NodeJS.Timeout | undefined;
    const code = await Promise.race([exited, new Promise((resolve) => (timer = setTimeout(() => resolve('still running 5 s after SIGTERM'), 5000)))]);
    clearTimeout(timer);
    assert.equal(code, 0);
    assert.ok(!stderr.includes(token), 'the token is in the log');
    assert.match(stderr, /"msg":"serving"/);
  });
});
