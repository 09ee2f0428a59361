import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';

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
      require(${JSON.stringify(cliPath)}).buildCli(argv[2]).parseAsync(argv);
    `], { encoding: 'utf8' }).stderr.split('\n').at(-1);
    assert.deepEqual(['cli/agent-command', 'cli/controller-command', 'cli/lab-command', 'cli/ipam-command', 'src/controller/', 'src/lab/'].map(agent), ['true', 'false', 'false', 'false', 'false', 'false']);
  });
});
