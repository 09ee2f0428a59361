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
});
