/**
 * `strait pool-ipam install-plugin` (src/cni/install.ts), as the Helm chart's init container runs it: the
 * launcher it puts in the CNI plugin directory runs with nothing of the host's Node.js or C++ runtime, a
 * second install replaces the first by a rename, and a copy that does not run is never installed. Its
 * uninstall (the agent's, when the release is uninstalled) leaves no runtime and a launcher that only lets
 * the pods that used it be deleted.
 */
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { installPlugin, uninstallPlugin } from '../../src/cni/install';
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

  it('uninstalls to a few lines that let DEL succeed and refuse ADD, removing every runtime; again, it changes nothing', () => {
    install(bin, runtimes);
    install(bin, runtimes);
    const ran = (command: string) => {
      const r = spawnSync(join(bin, 'strait-ipam'), [], {
        env: { CNI_COMMAND: command, PATH: '/usr/bin:/bin' },
        input: '{"cniVersion":"1.0.0","name":"n","type":"strait-ipam"}',
        encoding: 'utf8',
      });
      return { status: r.status, stdout: r.stdout };
    };
    const done = uninstallPlugin({ cniBinDir: bin, runtimeDir: runtimes });
    assert.equal(done.plugin, join(bin, 'strait-ipam'));
    assert.equal(done.removed.length, 2);
    assert.equal(existsSync(runtimes), false, 'the runtime directory, empty, is removed too');
    assert.deepEqual(readdirSync(bin), ['strait-ipam'], 'no temporary file left');
    for (const command of ['DEL', 'CHECK', 'GC']) assert.deepEqual(ran(command), { status: 0, stdout: '' }, command);
    for (const command of ['ADD', 'STATUS'])
      assert.deepEqual(
        { ...ran(command), stdout: JSON.parse(ran(command).stdout) as unknown },
        { status: 1, stdout: { cniVersion: '1.1.0', code: 50, msg: "Strait's pool IPAM was uninstalled from this cluster" } },
        command,
      );
    assert.deepEqual(JSON.parse(ran('VERSION').stdout), { cniVersion: '1.1.0', supportedVersions: ['1.0.0', '1.1.0'] });
    const text = readFileSync(join(bin, 'strait-ipam'), 'utf8');
    assert.deepEqual(uninstallPlugin({ cniBinDir: bin, runtimeDir: runtimes }), { plugin: join(bin, 'strait-ipam'), removed: [] });
    assert.equal(readFileSync(join(bin, 'strait-ipam'), 'utf8'), text, 'the second uninstall rewrote nothing');
  });

  it('leaves a strait-ipam that is not ours, and other files of the runtime directory, as they are', () => {
    mkdirSync(bin, { recursive: true });
    mkdirSync(join(runtimes, 'strait-ipam-abc123', 'dist'), { recursive: true });
    writeFileSync(join(bin, 'strait-ipam'), '#!/bin/sh\necho someone else\n', { mode: 0o755 });
    writeFileSync(join(runtimes, 'notes.txt'), 'mine');
    assert.deepEqual(uninstallPlugin({ cniBinDir: bin, runtimeDir: runtimes }), {
      foreign: join(bin, 'strait-ipam'),
      removed: [join(runtimes, 'strait-ipam-abc123')],
    });
    assert.equal(readFileSync(join(bin, 'strait-ipam'), 'utf8'), '#!/bin/sh\necho someone else\n');
    assert.deepEqual(readdirSync(runtimes), ['notes.txt']);
    // Nothing installed at all: nothing to do.
    rmSync(dir, { recursive: true, force: true });
    assert.deepEqual(uninstallPlugin({ cniBinDir: bin, runtimeDir: runtimes }), { removed: [] });
    assert.equal(existsSync(bin), false, 'nothing made');
  });
});
