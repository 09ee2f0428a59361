/** `strait pool-ipam serve`: a bad flag is refused before anything starts, naming the flag and the value. */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';

const cliPath = join(__dirname, '../../src/cli/main.js');
const serve = (args: string[], env: Record<string, string> = {}) => {
  const out = spawnSync(process.execPath, [cliPath, 'pool-ipam', 'serve', ...args], {
    encoding: 'utf8',
    env: { PATH: process.env.PATH ?? '', ...env },
    timeout: 20_000,
  });
  // A refused command prints {"error": ...} as one JSON line on stderr.
  const line = out.stderr.trim().split('\n').pop() ?? '';
  return { status: out.status, said: line.startsWith('{') ? ((JSON.parse(line) as { error?: string }).error ?? line) : out.stderr };
};

describe('strait pool-ipam serve (flags)', () => {
  it('needs the node, from --node or NODE_NAME', () => {
    const out = serve(['--socket', '/tmp/x.sock']);
    assert.equal(out.status, 1);
    assert.match(out.said, /--node: required: give --node or set NODE_NAME/);
  });

  it('refuses a node name that is not one, a relative socket, a kubeconfig that is not a file, a zero interval', () => {
    assert.match(serve(['--node', 'Node_A']).said, /--node: a node name is lowercase letters/);
    assert.match(serve(['--node', 'a', '--socket', 'ipam.sock']).said, /--socket: expected an absolute path \(got "ipam.sock"\)/);
    assert.match(serve(['--node', 'a', '--kubeconfig', '/nonexistent/kc']).said, /--kubeconfig: no such file \(got "\/nonexistent\/kc"\)/);
    assert.match(serve(['--node', 'a', '--gc-interval', '0']).said, /--gc-interval: expected a positive number of seconds \(got "0"\)/);
  });
});
