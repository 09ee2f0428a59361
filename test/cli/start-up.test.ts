import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';

const cliPath = join(__dirname, '../../src/cli/main.js');

describe('strait start-up', () => {
  // Every strait process (the IPAM CLI, an agent on files, a lab probe) starts with main.js; the
  // Kubernetes client takes about a quarter of a second to load and is for the --kubernetes modes only.
  it('does not load the Kubernetes client unless a command runs against an API server', () => {
    const { stderr, status } = spawnSync(process.execPath, ['-e', `
      process.argv = [process.argv[0], ${JSON.stringify(cliPath)}, '--version'];
      require(${JSON.stringify(cliPath)});
      process.on('exit', () => process.stderr.write(String(Object.keys(require.cache).some((k) => k.includes('@kubernetes/client-node')))));
    `], { encoding: 'utf8' });
    assert.deepEqual({ status, stderr }, { status: 0, stderr: 'false' });
  });
});
