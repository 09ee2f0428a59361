import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { nodeSpecDocument, specFileText } from '../agent/fixture';

const cliPath = join(__dirname, '../../src/cli/main.js');

/** Runs `strait --version` in a fresh process: whether it loaded a module whose path contains `name`. */
function loadedByVersion(name: string): { status: number | null; stderr: string } {
  const { stderr, status } = spawnSync(process.execPath, ['-e', `
    process.argv = [process.argv[0], ${JSON.stringify(cliPath)}, '--version'];
    require(${JSON.stringify(cliPath)});
    process.on('exit', () => process.stderr.write(String(Object.keys(require.cache).some((k) => k.includes(${JSON.stringify(name)})))));
  `], { encoding: 'utf8' });
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
    const agent = (name: string) => spawnSync(process.execPath, ['-e', `
      process.on('exit', () => process.stderr.write('\\n' + String(Object.keys(require.cache).some((k) => k.includes(${JSON.stringify(name)})))));
      const argv = [process.argv[0], ${JSON.stringify(cliPath)}, 'agent', '--spec', '/nowhere.json', '--pin-root', 'not/absolute'];
      require(${JSON.stringify(cliPath)}).runCli(argv);
    `], { encoding: 'utf8' }).stderr.split('\n').at(-1);
    assert.deepEqual(['cli/agent-command', 'cli/controller-command', 'cli/lab-command', 'cli/ipam-command', 'src/controller/', 'src/lab/'].map(agent), ['true', 'false', 'false', 'false', 'false', 'false']);
  });

  // TypeBox and ajv's compiler took about 100 ms of each agent start, the YAML parser 15 to 30 ms: the
  // agent checks its spec with the validators the build compiled (src/api/write-validators.ts).
  it("checks an agent's spec with the build's validators: no TypeBox, no ajv compiler, no YAML parser", () => {
    const bad = JSON.parse(specFileText({ ...nodeSpecDocument(), overlay: { vni: 1 << 24, port: 4789, mac: '02:53:54:00:00:01' } })) as unknown;
    const modules = ['@sinclair/typebox/', 'ajv/dist/core.js', 'ajv/dist/compile/', '/node_modules/yaml/', 'src/api/generated-validators.js'];
    const { stdout, stderr, status } = spawnSync(process.execPath, ['-e', `
      require(${JSON.stringify(join(__dirname, '../../src/cli/agent-command.js'))});
      require(${JSON.stringify(join(__dirname, '../../src/agent/agent.js'))});
      const { readNodeDataplane } = require(${JSON.stringify(join(__dirname, '../../src/api/node-dataplane.js'))});
      let refusal = 'accepted';
      try { readNodeDataplane(${JSON.stringify(bad)}); } catch (err) { refusal = err.message; }
      const loaded = ${JSON.stringify(modules)}.map((name) => Object.keys(require.cache).some((k) => k.includes(name)));
      process.stdout.write(JSON.stringify({ refusal, loaded }));
    `], { encoding: 'utf8' });
    assert.equal(status, 0, stderr);
    assert.deepEqual(JSON.parse(stdout), {
      refusal: 'spec.overlay.vni: expected a whole number from 0 to 16777215 (got 16777216)',
      loaded: [false, false, false, false, true],
    });
  });
});
