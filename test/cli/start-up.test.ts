import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defaultTopologyPath } from '../../lab/src/names';
import { nodeSpecDocument, specFileText } from '../support/node-specs';
import { startTestEtcd } from '../support/etcd';

const cliPath = join(__dirname, '../../src/cli/main.js');
const distSrc = join(__dirname, '../../src');
const labMain = join(__dirname, '../../lab/src/main.js');

/** TypeBox and ajv's compiler: for the build (src/api/write-validators.ts) and tests only. */
const schemaModules = ['@sinclair/typebox/', 'ajv/dist/core.js', 'ajv/dist/compile/'];

/**
 * Runs `script` (JavaScript, in which `run(...args)` runs a strait command line in the process as main.js
 * does, setting the exit code, and `lab(...args)` a strait-lab one as the lab's main.js does) in a fresh
 * process: which of `schemaModules` it had loaded when it exited, its exit code and what else it wrote to
 * stderr.
 */
function schemaModulesLoaded(
  script: string,
  options: { input?: string; env?: NodeJS.ProcessEnv } = {},
): { loaded: string[]; status: number | null; stderr: string } {
  const { stderr, status } = spawnSync(
    process.execPath,
    [
      '-e',
      `
    process.on('exit', () => process.stderr.write('\\n' + JSON.stringify(${JSON.stringify(schemaModules)}.filter((name) => Object.keys(require.cache).some((k) => k.includes(name))))));
    const run = (...args) => require(${JSON.stringify(cliPath)}).runCli([process.argv[0], ${JSON.stringify(cliPath)}, ...args]).then((code) => { process.exitCode = code; });
    const lab = (...args) => require(${JSON.stringify(labMain)}).runLabCli([process.argv[0], ${JSON.stringify(labMain)}, ...args]).then((code) => { process.exitCode = code; });
    ${script}
  `,
    ],
    // A process that does not end is a failure with what it said, not a suite that never ends.
    { encoding: 'utf8', timeout: 60_000, ...options },
  );
  const lines = stderr.split('\n');
  return { loaded: JSON.parse(lines.at(-1)!) as string[], status, stderr: lines.slice(0, -1).join('\n') };
}

/** Runs `strait --version` in a fresh process: whether it loaded a module whose path contains `name`. */
function loadedByVersion(name: string): { status: number | null; stderr: string } {
  const { stderr, status } = spawnSync(
    process.execPath,
    [
      '-e',
      `
    process.argv = [process.argv[0], ${JSON.stringify(cliPath)}, '--version'];
    require(${JSON.stringify(cliPath)});
    process.on('exit', () => process.stderr.write(String(Object.keys(require.cache).some((k) => k.includes(${JSON.stringify(name)})))));
  `,
    ],
    { encoding: 'utf8' },
  );
  return { status, stderr };
}

describe('strait start-up', () => {
  // Every strait process (the IPAM CLI, an agent on files, a lab probe) starts with main.js; the
  // Kubernetes client takes about a quarter of a second to load and is for the --kubernetes modes only.
  it('does not load the Kubernetes client unless a command runs against an API server', () => {
    assert.deepEqual(loadedByVersion('@kubernetes/client-node'), { status: 0, stderr: 'false' });
  });

  // prom-client takes about 50 ms: only an agent or controller serving /metrics pays it.
  it('does not load prom-client unless a process serves metrics', () => {
    assert.deepEqual(loadedByVersion('prom-client'), { status: 0, stderr: 'false' });
  });

  // Every module of every command took about 0.3 s of each agent start (issue 16: start to programmed).
  it("loads only the command it runs: an agent loads none of the controller's, lab's or IPAM's code", () => {
    // A flag refused in the action: the process runs the agent command as main.js does, then exits 1.
    const agent = (name: string) =>
      spawnSync(
        process.execPath,
        [
          '-e',
          `
      process.on('exit', () => process.stderr.write('\\n' + String(Object.keys(require.cache).some((k) => k.includes(${JSON.stringify(name)})))));
      const argv = [process.argv[0], ${JSON.stringify(cliPath)}, 'agent', '--spec', '/nowhere.json', '--pin-root', 'not/absolute'];
      require(${JSON.stringify(cliPath)}).runCli(argv);
    `,
        ],
        { encoding: 'utf8' },
      )
        .stderr.split('\n')
        .at(-1);
    assert.deepEqual(
      ['cli/agent-command', 'cli/controller-command', 'cli/network-ipam-command', 'src/controller/', 'dist/lab/'].map(agent),
      ['true', 'false', 'false', 'false', 'false'],
    );
  });

  // TypeBox and ajv's compiler took about 100 ms of each agent start, the YAML parser 15 to 30 ms: the
  // agent checks its spec with the validators the build compiled (src/api/write-validators.ts).
  it("checks an agent's spec with the build's validators: no TypeBox, no ajv compiler, no YAML parser", () => {
    const bad = JSON.parse(
      specFileText({ ...nodeSpecDocument(), overlay: { vni: 1 << 24, port: 4789, mac: '02:53:54:00:00:01' } }),
    ) as unknown;
    const modules = ['@sinclair/typebox/', 'ajv/dist/core.js', 'ajv/dist/compile/', '/node_modules/yaml/', 'src/api/generated-validators/'];
    const { stdout, stderr, status } = spawnSync(
      process.execPath,
      [
        '-e',
        `
      require(${JSON.stringify(join(__dirname, '../../src/cli/agent-command.js'))});
      require(${JSON.stringify(join(__dirname, '../../src/agent/agent.js'))});
      const { readNodeDataplane } = require(${JSON.stringify(join(__dirname, '../../src/api/node-dataplane.js'))});
      let refusal = 'accepted';
      try { readNodeDataplane(${JSON.stringify(bad)}); } catch (err) { refusal = err.message; }
      const loaded = ${JSON.stringify(modules)}.map((name) => Object.keys(require.cache).some((k) => k.includes(name)));
      process.stdout.write(JSON.stringify({ refusal, loaded }));
    `,
      ],
      { encoding: 'utf8' },
    );
    assert.equal(status, 0, stderr);
    assert.deepEqual(JSON.parse(stdout), {
      refusal: 'spec.overlay.vni: expected a whole number from 0 to 16777215 (got 16777216)',
      loaded: [false, false, false, false, true],
    });
  });

  describe('loads no TypeBox and no ajv compiler: documents are checked by the validators the build compiled', () => {
    let dir: string;
    beforeEach(() => {
      dir = mkdtempSync(join(tmpdir(), 'strait-start-up-'));
    });
    afterEach(() => rmSync(dir, { recursive: true, force: true }));

    it('the controller, standalone (one reconcile) and on Kubernetes (refused a kubeconfig that does not parse)', () => {
      writeFileSync(
        join(dir, 'controller.yaml'),
        `clusterId: a\nrunDir: ${join(dir, 'run')}\npodCIDR: 10.0.0.0/16\nexternalCIDR: 10.50.0.0/24\nnodes: [{name: n1, underlayAddress: 192.0.2.11}]\n`,
      );
      const standalone = schemaModulesLoaded(`run('controller', '--config', ${JSON.stringify(join(dir, 'controller.yaml'))}, '--once')`);
      assert.deepEqual([standalone.status, standalone.loaded], [0, []], standalone.stderr);
      writeFileSync(join(dir, 'kubernetes.yaml'), 'clusterId: a\npodCIDR: 10.0.0.0/16\nexternalCIDR: 10.50.0.0/24\n');
      writeFileSync(join(dir, 'kubeconfig'), '{');
      const onKubernetes = schemaModulesLoaded(
        `run('controller', '--kubernetes', '--config', ${JSON.stringify(join(dir, 'kubernetes.yaml'))}, '--kubeconfig', ${JSON.stringify(join(dir, 'kubeconfig'))})`,
      );
      assert.deepEqual([onKubernetes.status, onKubernetes.loaded], [1, []], onKubernetes.stderr);
    });

    it('the IPAM on a state file (init, then a peer added to the state read back)', () => {
      const state = JSON.stringify(join(dir, 'state.json'));
      const ipam = schemaModulesLoaded(`
        run('ipam', 'init', '--state', ${state}, '--pod-cidr', '10.0.0.0/16', '--external-cidr', '10.50.0.0/24')
          .then(() => run('ipam', 'peer', 'add', '--state', ${state}, '--cluster', 'b', '--pod-cidr', '10.1.0.0/16', '--external-cidr', '10.60.0.0/24'));
      `);
      assert.deepEqual([ipam.status, ipam.loaded], [0, []], ipam.stderr);
    });

    it("the pool IPAM's service (refused a kubeconfig that does not parse), inspect, and the strait-ipam plugin", () => {
      writeFileSync(join(dir, 'kubeconfig'), '{');
      const service = schemaModulesLoaded(
        `run('pool-ipam', 'serve', '--node', 'n1', '--kubeconfig', ${JSON.stringify(join(dir, 'kubeconfig'))}, '--socket', ${JSON.stringify(join(dir, 'ipam.sock'))})`,
      );
      assert.deepEqual([service.status, service.loaded], [1, []], service.stderr);
      const inspect = schemaModulesLoaded(`run('inspect', '--pin-root', ${JSON.stringify(join(dir, 'no-pins'))})`);
      assert.deepEqual([inspect.status, inspect.loaded], [1, []], inspect.stderr);
      // An ADD whose socket nobody serves: the plugin's whole path, to its error result.
      const network = {
        cniVersion: '1.1.0',
        name: 'underlay',
        type: 'macvlan',
        ipam: { type: 'strait-ipam', socket: join(dir, 'ipam.sock') },
      };
      const env = {
        ...process.env,
        CNI_COMMAND: 'ADD',
        CNI_CONTAINERID: 'c1',
        CNI_NETNS: '/var/run/netns/cni-1',
        CNI_IFNAME: 'net1',
        CNI_ARGS: 'K8S_POD_NAMESPACE=default;K8S_POD_NAME=p',
        CNI_PATH: '/opt/cni/bin',
      };
      const plugin = schemaModulesLoaded(`require(${JSON.stringify(join(distSrc, 'cni', 'main.js'))})`, {
        input: JSON.stringify(network),
        env,
      });
      assert.deepEqual([plugin.status, plugin.loaded], [1, []], plugin.stderr);
    });

    it('the lab: plan, up (refused a topology that does not exist), test, report, status, and the modules of a lab on Kubernetes', () => {
      const runDir = JSON.stringify(join(dir, 'lab'));
      const lab = schemaModulesLoaded(`
        (async () => {
          await lab('plan', '--topology', ${JSON.stringify(defaultTopologyPath)});
          await lab('--run-dir', ${runDir}, 'up', '--topology', ${JSON.stringify(join(dir, 'none.yaml'))});
          for (const verb of [['test'], ['test', '--node', 'n1'], ['report'], ['status']]) await lab('--run-dir', ${runDir}, ...verb);
          for (const lazy of ['kubernetes-control-plane', 'kubernetes-lab-state', 'lab-chart']) require(${JSON.stringify(join(labMain, '..'))} + '/' + lazy + '.js');
        })();
      `);
      assert.deepEqual(lab.loaded, [], lab.stderr);
    });

    it("the lab's API server, on its etcd, serving until SIGTERM", async () => {
      const etcd = await startTestEtcd(join(dir, 'etcd'));
      let server: ReturnType<typeof schemaModulesLoaded>;
      try {
        const kubeconfig = JSON.stringify(join(dir, 'kubeconfig'));
        server = schemaModulesLoaded(`
          lab('apiserver', '--kubeconfig', ${kubeconfig}, '--etcd-servers', ${JSON.stringify(etcd.url)});
          const served = setInterval(() => {
            if (!require('node:fs').existsSync(${kubeconfig})) return;
            clearInterval(served);
            process.emit('SIGTERM');
          }, 20);
        `);
      } finally {
        await etcd.close();
      }
      assert.deepEqual([server.status, server.loaded], [0, []], server.stderr);
    });
  });
});
