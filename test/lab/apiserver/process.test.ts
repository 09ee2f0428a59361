/**
 * `strait-lab apiserver` as the lab runs it: a process that writes a kubeconfig for its cluster, says
 * where it listens, serves the strait.io CRDs to kubectl, keeps its tokens out of its logs, exits 0 on
 * SIGTERM, and with --token-auth-file authenticates more users, whose requests RBAC authorizes. Its
 * objects are in the etcd of --etcd-servers (a real one per test): killed and started again, it serves them.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse, stringify } from 'yaml';
import { crdFiles } from '../../../src/api/write-crds';
import { kubectl } from '../../support/k8s-tools';
import { type TestEtcd, startTestEtcd } from '../../support/etcd';
import { selfSignedCertificate } from '../../../lab/src/apiserver/certificate';

const main = join(__dirname, '..', '..', '..', 'lab', 'src', 'main.js');

describe('strait-lab apiserver (the process)', function () {
  this.timeout(20_000);
  let dir: string;
  let child: ChildProcess | undefined;
  let etcd: TestEtcd | undefined;

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'strait-apiserver-process-'));
    etcd = await startTestEtcd(join(dir, 'etcd'));
  });
  afterEach(async () => {
    if (child?.exitCode === null) child.kill('SIGKILL');
    await etcd?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** Starts the process with `args` (and the test's etcd); resolves when it said where it listens. */
  async function start(...args: string[]) {
    const argv = [main, 'apiserver', '--etcd-servers', etcd!.url, ...args];
    child = spawn(process.execPath, argv, { stdio: ['ignore', 'pipe', 'pipe'] });
    const output = { stdout: '', stderr: '' };
    child.stdout!.on('data', (chunk: Buffer) => (output.stdout += chunk.toString()));
    child.stderr!.on('data', (chunk: Buffer) => (output.stderr += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => child!.on('exit', (code) => resolve(code)));
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no address printed; stderr: ${output.stderr}`)), 10_000);
      child!.stdout!.on('data', () => output.stdout.includes('\n') && (clearTimeout(timer), resolve()));
      void exited.then((code) => reject(new Error(`exited ${code}: ${output.stderr}`)));
    });
    const said = JSON.parse(output.stdout.split('\n')[0]!) as { url: string; port: number; kubeconfig: string };
    return { said, output, exited };
  }

  it('writes a kubeconfig kubectl uses, serves the CRDs of --crds, prints its address, never logs the token, and exits 0 on SIGTERM', async () => {
    const token = 'process-test-token-0123456789';
    writeFileSync(join(dir, 'token'), `${token}\n`);
    const kubeconfig = join(dir, 'kubeconfig');
    const crdDir = join(dir, 'crds');
    mkdirSync(crdDir);
    for (const [name, text] of crdFiles()) writeFileSync(join(crdDir, name), text);
    const { said, output, exited } = await start(
      '--token-file',
      join(dir, 'token'),
      '--kubeconfig',
      kubeconfig,
      '--cluster',
      'east',
      '--crds',
      crdDir,
    );
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
        'customresourcedefinition.apiextensions.k8s.io/ipclaims.strait.io',
        'customresourcedefinition.apiextensions.k8s.io/natmappings.strait.io',
        'customresourcedefinition.apiextensions.k8s.io/networkconfigs.strait.io',
        'customresourcedefinition.apiextensions.k8s.io/nodedataplanes.strait.io',
        'customresourcedefinition.apiextensions.k8s.io/peernetworks.strait.io',
        'customresourcedefinition.apiextensions.k8s.io/reservedips.strait.io',
        'customresourcedefinition.apiextensions.k8s.io/serviceoffers.strait.io',
        'customresourcedefinition.apiextensions.k8s.io/straitendpoints.strait.io',
        'customresourcedefinition.apiextensions.k8s.io/straitgateways.strait.io',
        'customresourcedefinition.apiextensions.k8s.io/straitippools.strait.io',
        'customresourcedefinition.apiextensions.k8s.io/straitsubnets.strait.io',
        'customresourcedefinition.apiextensions.k8s.io/tunnelendpoints.strait.io',
        '',
      ].join('\n'),
      stderr: '',
    });

    child!.kill('SIGTERM');
    let timer: NodeJS.Timeout | undefined;
    const code = await Promise.race([
      exited,
      new Promise((resolve) => (timer = setTimeout(() => resolve('still running 5 s after SIGTERM'), 5000))),
    ]);
    clearTimeout(timer);
    assert.equal(code, 0);
    assert.ok(!output.stderr.includes(token), 'the token is in the log');
    assert.match(output.stderr, /"msg":"serving"/);
  });

  it('alone (--kubeconfig-out, no token file, no --crds): a random admin token only in the kubeconfig, no strait.io resource until a CRD is created', async () => {
    const kubeconfig = join(dir, 'kubeconfig');
    const { output } = await start('--kubeconfig-out', kubeconfig);
    const config = parse(readFileSync(kubeconfig, 'utf8')) as { users: { user: { token: string } }[] };
    const token = config.users[0]!.user.token;
    assert.match(token, /^[0-9a-f]{64}$/);
    const served = () => kubectl(kubeconfig, dir, 'api-resources', '--api-group', 'strait.io', '--namespaced=true', '-o', 'name');
    assert.deepEqual(await served(), { code: 0, stdout: '', stderr: '' });
    const crd = join(dir, 'straitendpoints.yaml');
    writeFileSync(crd, crdFiles().get('straitendpoints.strait.io.yaml')!);
    assert.equal((await kubectl(kubeconfig, dir, 'create', '-f', crd)).code, 0);
    assert.deepEqual(await served(), { code: 0, stdout: 'straitendpoints.strait.io\n', stderr: '' });
    assert.ok(!output.stderr.includes(token), 'the token is in the log');
  });

  it('killed (SIGKILL) and started again on its etcd, port, certificate and signing key: the same server to its clients, with the objects it had', async () => {
    const { cert, key } = selfSignedCertificate('process-test', ['127.0.0.1'], []);
    writeFileSync(join(dir, 'tls.crt'), cert);
    writeFileSync(join(dir, 'tls.key'), key);
    writeFileSync(join(dir, 'sa.key'), 'a-signing-key-of-this-test');
    writeFileSync(join(dir, 'token'), 'admin-token-77c1\n');
    const kubeconfig = join(dir, 'kubeconfig');
    const identity = ['--tls-cert-file', join(dir, 'tls.crt'), '--tls-private-key-file', join(dir, 'tls.key')];
    const args = [
      '--kubeconfig',
      kubeconfig,
      '--token-file',
      join(dir, 'token'),
      ...identity,
      '--service-account-key-file',
      join(dir, 'sa.key'),
    ];
    const { said } = await start(...args);
    assert.equal((await kubectl(kubeconfig, dir, 'create', 'configmap', 'kept', '--from-literal=a=1')).code, 0);
    assert.equal((await kubectl(kubeconfig, dir, 'create', 'serviceaccount', 'robot')).code, 0);
    const token = (await kubectl(kubeconfig, dir, 'create', 'token', 'robot')).stdout.trim();
    const version = () => kubectl(kubeconfig, dir, 'get', 'configmap', 'kept', '-o', 'jsonpath={.metadata.resourceVersion}');
    const before = await version();
    assert.match(before.stdout, /^\d+$/);
    child!.kill('SIGKILL');
    await new Promise((resolve) => child!.once('exit', resolve));
    await start(...args, '--listen', `127.0.0.1:${said.port}`);
    // kube-apiserver keeps nothing itself: what it serves after a restart is etcd's (storage/etcd3/store.go).
    assert.deepEqual(await version(), before);
    // A token it issued before is still good: signed with the same key (--service-account-key-file).
    const config = parse(readFileSync(kubeconfig, 'utf8')) as { users: { name: string }[] };
    writeFileSync(join(dir, 'robot'), stringify({ ...config, users: [{ name: config.users[0]!.name, user: { token } }] }));
    assert.deepEqual(await kubectl(join(dir, 'robot'), dir, 'get', '--raw', '/version'), {
      code: 0,
      stdout: (await kubectl(kubeconfig, dir, 'get', '--raw', '/version')).stdout,
      stderr: '',
    });
  });

  it('refuses both --kubeconfig and --kubeconfig-out, naming the option', async () => {
    await assert.rejects(
      start('--kubeconfig', join(dir, 'a'), '--kubeconfig-out', join(dir, 'b')),
      /--kubeconfig-out: give --kubeconfig or --kubeconfig-out, not both/,
    );
  });

  it('authenticates the users of --token-auth-file (their groups too) and authorizes them by RBAC; an unknown token is 401; no token is logged', async () => {
    writeFileSync(join(dir, 'token'), 'admin-token-5d1e\n');
    writeFileSync(join(dir, 'users.csv'), 'alice-token-9b2f,alice,uid-alice,"operators,dev"\nbob-token-61aa,bob,uid-bob\n');
    const kubeconfig = join(dir, 'kubeconfig');
    const { output } = await start(
      '--token-file',
      join(dir, 'token'),
      '--token-auth-file',
      join(dir, 'users.csv'),
      '--kubeconfig',
      kubeconfig,
    );
    writeFileSync(
      join(dir, 'binding.yaml'),
      `apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: operators-view, namespace: default}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: configmap-lister}
subjects: [{kind: Group, name: dev}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: configmap-lister}
rules: [{apiGroups: [""], resources: [configmaps], verbs: [list]}]
`,
    );
    assert.equal((await kubectl(kubeconfig, dir, 'apply', '-f', join(dir, 'binding.yaml'))).code, 0);
    // The lab's kubeconfig with another user's token.
    const config = parse(readFileSync(kubeconfig, 'utf8')) as { users: { name: string }[] };
    const as = (token: string) => {
      const path = join(dir, `kubeconfig-${token}`);
      writeFileSync(path, stringify({ ...config, users: [{ name: config.users[0]!.name, user: { token } }] }));
      return (...args: string[]) => kubectl(path, dir, ...args);
    };
    assert.deepEqual(await as('alice-token-9b2f')('get', 'configmaps'), {
      code: 0,
      stdout: '',
      stderr: 'No resources found in default namespace.\n',
    });
    assert.deepEqual(await as('bob-token-61aa')('get', 'configmaps'), {
      code: 1,
      stdout: '',
      stderr:
        'Error from server (Forbidden): configmaps is forbidden: User "bob" cannot list resource "configmaps" in API group "" in the namespace "default"\n',
    });
    assert.deepEqual(await as('carol-token-0000')('get', 'configmaps'), {
      code: 1,
      stdout: '',
      stderr: 'error: You must be logged in to the server (Unauthorized)\n',
    });
    for (const token of ['admin-token-5d1e', 'alice-token-9b2f', 'bob-token-61aa'])
      assert.ok(!output.stderr.includes(token), 'a token is in the log');
    assert.match(output.stderr, /"msg":"configmaps is forbidden: User \\"bob\\" cannot list resource/);
  });
});
