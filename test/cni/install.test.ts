/**
 * `strait pool-ipam install-plugin` (src/cni/install.ts), as the Helm chart's init container runs it: the
 * launcher it puts in the CNI plugin directory runs with nothing of the host's Node.js or C++ runtime, a
 * second install replaces the first by a rename, and a copy that does not run is never installed.
 */
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { installPlugin } from '../../src/cni/install';
import { InputError, StateError } from '../../src/errors';
import { requireRoot } from '../support/kernel';

const cliPath = join(__dirname, '../../src/cli/main.js');

/** The CLI's JSON answer. */
const install = (cniBinDir: string, runtimeDir: string) =>
  JSON.parse(
    execFileSync(process.execPath, [cliPath, 'pool-ipam', 'install-plugin', '--cni-bin-dir', cniBinDir, '--runtime-dir', runtimeDir], {
      encoding: 'utf8',
    }),
  ) as { plugin: string; runtime: string; removed: string[] };

describe('strait pool-ipam install-plugin', function () {
  requireRoot(this);
  this.timeout(60_000);
  let dir: string;
  let bin: string;
  let runtimes: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'strait-install-'));
    bin = join(dir, 'opt', 'cni', 'bin');
    runtimes = join(dir, 'var', 'lib', 'strait', 'strait-ipam');
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it("installs a launcher that answers CNI VERSION with an empty environment while the host's node and libstdc++ are unreadable", () => {
    const done = install(bin, runtimes);
    assert.equal(done.plugin, join(bin, 'strait-ipam'));
    assert.match(done.runtime, new RegExp(`^${runtimes}/strait-ipam-[A-Za-z0-9]{6}$`));
    assert.deepEqual(readdirSync(bin), ['strait-ipam'], 'no temporary file left');
    assert.deepEqual(readdirSync(done.runtime).sort(), ['dist', 'lib', 'node']);
    // In a mount namespace of its own, the host's Node.js and C++ runtime covered by an empty file: only
    // the runtime directory's copies can run the plugin (/bin/sh needs neither).
    const libstdcxx = realpathSync(
      execFileSync('sh', ['-c', `ldd ${process.execPath} | sed -n 's/.*libstdc++.so.6 => \\([^ ]*\\).*/\\1/p'`], {
        encoding: 'utf8',
      }).trim(),
    );
    const hidden = (argv: string[]) =>
      spawnSync(
        'unshare',
        [
          '--mount',
          '--propagation',
          'private',
          'sh',
          '-c',
          `mount --bind /dev/null ${realpathSync(process.execPath)} && mount --bind /dev/null ${libstdcxx} && exec env -i CNI_COMMAND=VERSION "$@"`,
          'sh',
          ...argv,
        ],
        { input: '{"cniVersion":"1.0.0"}', encoding: 'utf8' },
      );
    assert.notEqual(hidden([process.execPath, '--version']).status, 0, "the host's node cannot run there");
    const run = hidden([done.plugin]);
    assert.deepEqual(
      { status: run.status, stdout: run.stdout, stderr: run.stderr },
      { status: 0, stdout: '{"cniVersion":"1.0.0","supportedVersions":["1.0.0","1.1.0"]}\n', stderr: '' },
    );
    const text = readFileSync(done.plugin, 'utf8');
    assert.equal(
      text.split('\n').at(-2),
      `exec '${done.runtime}/lib/ld-linux-x86-64.so.2' --library-path '${done.runtime}/lib' '${done.runtime}/node' '${done.runtime}/dist/src/cni/main.js' "$@"`,
    );
  });

  it('replaces the launcher by a rename, keeping the runtime the replaced one ran and removing older ones', () => {
    const first = install(bin, runtimes);
    const second = install(bin, runtimes);
    assert.deepEqual(second.removed, []);
    assert.notEqual(second.runtime, first.runtime);
    assert.match(readFileSync(second.plugin, 'utf8'), new RegExp(`'${second.runtime}/node'`));
    const third = install(bin, runtimes);
    assert.deepEqual(third.removed, [first.runtime]);
    assert.deepEqual(
      readdirSync(runtimes)
        .map((n) => join(runtimes, n))
        .sort(),
      [second.runtime, third.runtime].sort(),
    );
    assert.deepEqual(readdirSync(bin), ['strait-ipam']);
  });

  it('never installs a copy that does not run, leaving the installed plugin as it was', () => {
    const first = install(bin, runtimes);
    const before = readFileSync(first.plugin, 'utf8');
    const empty = join(dir, 'build', 'dist', 'src');
    mkdirSync(empty, { recursive: true });
    assert.throws(
      () => installPlugin({ cniBinDir: bin, runtimeDir: runtimes, distSrc: empty }),
      (err: unknown) => {
        assert.ok(err instanceof StateError, String(err));
        assert.match(err.message, /^the copied plugin does not run \(exit 1\): .*Cannot find module '.*\/dist\/src\/cni\/main\.js'/s);
        return true;
      },
    );
    assert.equal(readFileSync(first.plugin, 'utf8'), before);
    assert.deepEqual(
      readdirSync(runtimes).map((n) => join(runtimes, n)),
      [first.runtime],
      'the failed copy removed',
    );
  });

  it("refuses relative directories and a runtime directory inside Strait's own files, naming the flag", () => {
    const refused = (options: Parameters<typeof installPlugin>[0], field: string, value: string, reason: RegExp) =>
      assert.throws(
        () => installPlugin(options),
        (err: unknown) => {
          assert.ok(err instanceof InputError, String(err));
          assert.deepEqual({ field: err.field, value: err.value }, { field, value });
          assert.match(err.reason, reason);
          return true;
        },
      );
    refused({ cniBinDir: 'opt/cni/bin', runtimeDir: runtimes }, '--cni-bin-dir', 'opt/cni/bin', /^must be an absolute path$/);
    refused({ cniBinDir: bin, runtimeDir: 'strait-ipam' }, '--runtime-dir', 'strait-ipam', /^must be an absolute path$/);
    const dist = join(dir, 'opt', 'strait', 'dist', 'src');
    mkdirSync(dist, { recursive: true });
    refused(
      { cniBinDir: bin, runtimeDir: join(dir, 'opt', 'strait', 'ipam'), distSrc: dist },
      '--runtime-dir',
      join(dir, 'opt', 'strait', 'ipam'),
      new RegExp(`^must be outside ${join(dir, 'opt', 'strait')}, where Strait itself is installed$`),
    );
    assert.equal(existsSync(bin), false, 'nothing made');
  });
});
