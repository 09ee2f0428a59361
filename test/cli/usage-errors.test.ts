import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { runLabCli } from '../../lab/src/main';
import { runCli } from '../../src/cli/main';
import type { CliOutput } from '../../src/cli/output';

const cliPath = join(__dirname, '../../src/cli/main.js');

type Runner = (argv: readonly string[], output: CliOutput) => Promise<number>;

/** A command line run in this process (strait's, or strait-lab's): its exit code and what it wrote. */
async function runWith(runner: Runner, name: string, args: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const code = await runner(['node', name, ...args], { out: (text) => void (out += text), err: (text) => void (err += text) });
  return { code, out, err };
}
const run = (...args: string[]) => runWith(runCli, 'strait', args);

describe('strait usage errors', () => {
  // Every command speaks JSON (docs/cli.md: an error prints {"error", "field"?, "value"?} on stderr and exits 1),
  // a usage error too: a script reading stderr gets the option and the value, not a help page.
  const cases: [name: 'strait' | 'strait-lab', args: string[], field: string, value: unknown][] = [
    ['strait', ['network-ipam', 'show'], '--state', null],
    ['strait', ['network-ipam', 'init', '--state', '/x', '--pod-cidr'], '--pod-cidr', null],
    [
      'strait',
      ['pool-ipam', 'install-plugin', '--cni-bin-dir', '/opt/cni/bin', '--runtime-dir', '/opt/strait', '--no-such-flag'],
      '--no-such-flag',
      '--no-such-flag',
    ],
    ['strait-lab', ['status', 'extra'], 'arguments', ['extra']],
    ['strait-lab', ['nope'], 'command', 'nope'],
    ['strait', ['inspect', '--pin-root', '/sys/fs/bpf/nowhere', '--bogus'], '--bogus', '--bogus'],
    ['strait', ['probe', '--json', 'x'], 'arguments', ['x']],
    ['strait', ['controller', '--config'], '--config', null],
    ['strait', ['agent', '--whatever'], '--whatever', '--whatever'],
    ['strait', ['nope'], 'command', 'nope'],
    // The lab is its own package (lab/, strait-lab): the product has no lab command.
    ['strait', ['lab'], 'command', 'lab'],
    ['strait', [], 'command', null],
  ];
  for (const [name, args, field, value] of cases) {
    it(`${name} ${args.join(' ') || '(nothing)'}: {"error", "field": ${JSON.stringify(field)}, "value": ${JSON.stringify(value)}} on stderr, exit 1`, async () => {
      const { code, out, err } = await runWith(name === 'strait' ? runCli : runLabCli, name, args);
      assert.equal(code, 1);
      assert.equal(out, '');
      assert.equal(err.trim().split('\n').length, 1, err);
      const error = JSON.parse(err) as { error: string; field: string; value: unknown };
      assert.deepEqual([error.field, error.value], [field, value]);
      assert.ok(error.error.startsWith(`${field}: `), error.error);
      assert.match(error.error, /see `strait[a-z -]* --help`/);
    });
  }

  it("refuses the controller's --deployment that is no object name, or without --kubernetes, naming it and the value", async () => {
    for (const [args, reason] of [
      [['--kubernetes', '--deployment', 'Strait_Controller'], /DNS-1123 subdomain/],
      [['--deployment', 'strait-controller'], /only with --kubernetes/],
    ] as const) {
      const { code, err } = await run('controller', '--config', '/nonexistent/cluster.yaml', ...args);
      assert.equal(code, 1);
      const error = JSON.parse(err) as { error: string; field: string; value: unknown };
      assert.deepEqual([error.field, error.value], ['--deployment', args[args.length - 1]]);
      assert.match(error.error, reason);
    }
  });

  it('keeps --help, help <command> and --version: printed on stdout, exit 0', async () => {
    for (const args of [
      ['--help'],
      ['network-ipam', '--help'],
      ['network-ipam', 'help', 'show'],
      ['pool-ipam', 'install-plugin', '--help'],
    ]) {
      const { code, out, err } = await run(...args);
      assert.deepEqual([code, err], [0, ''], args.join(' '));
      assert.match(out, /^Usage: strait/, args.join(' '));
    }
    assert.deepEqual(await run('--version'), { code: 0, out: `${require('../../../package.json').version}\n`, err: '' });
  });

  it('prints the same JSON from the process: stderr, exit 1', () => {
    const child = spawnSync(process.execPath, [cliPath, 'network-ipam', 'show', '--stat', 'x'], { encoding: 'utf8', timeout: 30_000 });
    assert.deepEqual([child.status, child.stdout], [1, '']);
    assert.deepEqual(JSON.parse(child.stderr).field, '--state');
  });

  it('runs a renamed command under its old name for one release, with a warning first (strait ipam: network-ipam)', async () => {
    const old = await run('ipam', 'show', '--stat', 'x');
    const now = await run('network-ipam', 'show', '--stat', 'x');
    const [warning, ...rest] = old.err.trimEnd().split('\n');
    assert.deepEqual(JSON.parse(warning!), {
      warning: '`strait ipam` is `strait network-ipam` now; the old name goes in the next release',
    });
    assert.deepEqual({ code: old.code, out: old.out, err: `${rest.join('\n')}\n` }, now);
  });
});
