/**
 * vagrant/provision/install.sh and lab.sh, the scripts the Vagrantfile and the local VMs share, run here
 * with stand-ins for the commands that would change the machine (apt-get, npm, curl, node): what they
 * run, with which arguments, and what they leave alone.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type FakeCommands, fakeCommands } from '../support/fake-commands';

const repo = join(__dirname, '..', '..', '..');
const installSh = join(repo, 'vagrant', 'provision', 'install.sh');
const labSh = join(repo, 'vagrant', 'provision', 'lab.sh');
const labPath = join(repo, 'dist', 'lab', 'src', 'main.js');

const run = (script: string, args: string[], fakes: FakeCommands, env: Record<string, string> = {}) => {
  const out = spawnSync('bash', [script, ...args], { encoding: 'utf8', timeout: 30_000, env: { PATH: fakes.path, ...env } });
  return { status: out.status, stdout: out.stdout, stderr: out.stderr };
};

describe('vagrant/provision/install.sh', () => {
  let fakes: FakeCommands | undefined;
  let dir: string | undefined;
  afterEach(() => {
    fakes?.cleanup();
    if (dir) rmSync(dir, { recursive: true, force: true });
    fakes = dir = undefined;
  });

  it('on a machine that has everything, only checks and says so', () => {
    // Here (as on CI, after .ci/setup and npm run build) every package, Node.js and the build are present.
    fakes = fakeCommands({ 'apt-get': 'exit 1', npm: 'exit 1', curl: 'exit 1', mount: 'exit 1' });
    const out = run(installSh, [repo], fakes);
    assert.deepEqual(fakes.calls(), [], `it ran commands that change the machine: ${out.stdout}${out.stderr}`);
    assert.equal(out.status, 0, out.stderr);
    assert.equal(
      out.stdout,
      `install.sh: nothing to do: 13 packages installed, node ${process.version}, Strait built in ${repo}, bpffs mounted\n`,
    );
  });

  it('installs only the packages that are missing, and builds as the README does when an artefact is missing', () => {
    dir = mkdtempSync(join(tmpdir(), 'strait-install-'));
    mkdirSync(join(dir, 'image'));
    mkdirSync(join(dir, 'vagrant', 'provision'), { recursive: true });
    mkdirSync(join(dir, '.ci'));
    writeFileSync(join(dir, 'image', 'runtime-packages'), '# installed here\nkmod  # modprobe\nstrait-no-such-package\n');
    writeFileSync(join(dir, 'vagrant', 'provision', 'packages'), 'procps\n\n# installed here too\n');
    writeFileSync(join(dir, '.ci', 'setup'), 'echo "setup in $PWD" >> "$CALLS"\n');
    fakes = fakeCommands({ 'apt-get': '', npm: '' });
    const out = run(installSh, [dir], fakes, { CALLS: join(fakes.dir, 'calls.log') });
    assert.equal(out.status, 0, out.stderr);
    assert.deepEqual(fakes.calls(), [
      'apt-get update -qq',
      'apt-get install -y -qq --no-install-recommends strait-no-such-package',
      `setup in ${dir}`,
      'npm ci --no-audit --no-fund',
      'npm run build',
    ]);
    assert.equal(out.stdout, `install.sh: installed strait-no-such-package\ninstall.sh: built Strait in ${dir}\n`);
  });

  it('refuses a Node.js download whose SHA-256 is not the pinned one', () => {
    // An old node on PATH, and a "download" that is not the official tarball.
    fakes = fakeCommands({
      node: 'echo v20.18.3',
      'apt-get': '',
      curl: 'while [ $# -gt 1 ]; do if [ "$1" = -o ]; then echo "not node" > "$2"; fi; shift; done',
    });
    const out = run(installSh, [repo], fakes);
    assert.equal(out.status, 1, out.stdout);
    const curl = fakes.calls().filter((c) => c.startsWith('curl '));
    assert.equal(curl.length, 1, fakes.calls().join('\n'));
    assert.match(
      curl[0]!,
      /^curl -fsSL -o \S+\/node-v20\.19\.5-linux-x64\.tar\.xz https:\/\/nodejs\.org\/dist\/v20\.19\.5\/node-v20\.19\.5-linux-x64\.tar\.xz$/,
    );
    assert.match(
      out.stderr,
      /node-v20\.19\.5-linux-x64\.tar\.xz: SHA-256 is [0-9a-f]{64}, expected 315046739a513a70e03a4a55a8afda8cf979f30852e576075c340084e3f8ac0f; refused/,
    );
  });
});

describe('vagrant/provision/lab.sh', () => {
  let fakes: FakeCommands;
  // The lab's stand-in fails `test` when FAKE_TEST_FAILS is set (does the report still run?), and
  // `report` when FAKE_REPORT_FAILS is.
  beforeEach(() => {
    fakes = fakeCommands({
      node: 'case " $* " in *" test "*) [ -z "$FAKE_TEST_FAILS" ] ;; *" report "*) [ -z "$FAKE_REPORT_FAILS" ] ;; esac',
    });
  });
  afterEach(() => fakes.cleanup());
  const cli = `node ${labPath}`;

  it("runs this machine's lab verb with the node, run dir, topology, dataplane and pace from the environment", () => {
    assert.equal(run(labSh, ['up'], fakes, { STRAIT_NODE: 'b-w1' }).status, 0);
    const env = {
      STRAIT_NODE: 'c-gw',
      STRAIT_RUN_DIR: '/srv/run',
      STRAIT_TOPOLOGY: '/t/mixed.yaml',
      STRAIT_DATAPLANE: 'kernel',
      STRAIT_PACE: 'emulated',
    };
    for (const verb of ['up', 'test', 'report', 'down']) assert.equal(run(labSh, [verb], fakes, env).status, 0, verb);
    assert.deepEqual(fakes.calls(), [
      `${cli} --run-dir /run/strait-mvm up --node b-w1 --topology ${repo}/lab/src/topologies/default.yaml --dataplane auto --pace host`,
      `${cli} --run-dir /srv/run up --node c-gw --topology /t/mixed.yaml --dataplane kernel --pace emulated`,
      `${cli} --run-dir /srv/run test --node c-gw --pace emulated`,
      `${cli} --run-dir /srv/run report`,
      `${cli} --run-dir /srv/run down --node c-gw`,
    ]);
  });

  it('passes only options the real CLI has, for each verb', () => {
    const env = { STRAIT_NODE: 'c-gw', STRAIT_REPORT: '1' };
    for (const verb of ['up', 'test', 'report', 'down']) assert.equal(run(labSh, [verb], fakes, env).status, 0, verb);
    const help = (args: string[]) => {
      const out = spawnSync(process.execPath, [labPath, ...args, '--help'], { encoding: 'utf8', timeout: 20_000 });
      assert.equal(out.status, 0, out.stderr);
      return new Set([...out.stdout.matchAll(/^\s+(?:-\w, )?(--[\w-]+)/gm)].map((m) => m[1]));
    };
    const groupOptions = help([]);
    for (const call of fakes.calls()) {
      const [, group, verb, rest] = /^node \S+ (.*?) (up|test|report|down)\b(.*)$/.exec(call) ?? assert.fail(`not a lab call: ${call}`);
      const verbOptions = help([verb!]);
      for (const option of group!.match(/--[\w-]+/g) ?? []) assert.ok(groupOptions.has(option), `strait-lab has no ${option} (${call})`);
      for (const option of rest!.match(/--[\w-]+/g) ?? [])
        assert.ok(verbOptions.has(option), `strait-lab ${verb} has no ${option} (${call})`);
    }
  });

  it('with STRAIT_REPORT=1, reports after a failed test, and fails when either failed', () => {
    const test = `${cli} --run-dir /run/strait-mvm test --node a-gw --pace host`;
    const report = `${cli} --run-dir /run/strait-mvm report`;
    const env = { STRAIT_NODE: 'a-gw', STRAIT_REPORT: '1' };
    assert.equal(run(labSh, ['test'], fakes, { ...env, FAKE_TEST_FAILS: '1' }).status, 1);
    assert.equal(run(labSh, ['test'], fakes, { ...env, FAKE_REPORT_FAILS: '1' }).status, 1);
    assert.equal(run(labSh, ['test'], fakes, env).status, 0);
    assert.equal(run(labSh, ['test'], fakes, { STRAIT_NODE: 'a-gw' }).status, 0);
    assert.deepEqual(fakes.calls(), [test, report, test, report, test, report, test]);
  });

  it('refuses a verb without the node it needs, and an unknown verb', () => {
    const up = run(labSh, ['up'], fakes);
    assert.notEqual(up.status, 0);
    assert.match(up.stderr, /STRAIT_NODE: is required: the name of this machine in the topology/);
    const bogus = run(labSh, ['start'], fakes, { STRAIT_NODE: 'a-gw' });
    assert.equal(bogus.status, 2);
    assert.match(bogus.stderr, /usage: STRAIT_NODE=NAME .*lab\.sh up\|test\|report\|down/);
    assert.deepEqual(fakes.calls(), []);
  });
});

describe('vagrant/test.sh', () => {
  let fakes: FakeCommands;
  // `vagrant ssh M -c CMD` stand-in: the checks fail on a-w1 when FAKE_FAILS_ON=a-w1, the report when
  // FAKE_REPORT_FAILS is set.
  beforeEach(() => {
    fakes = fakeCommands({
      vagrant: 'case "$4" in *" test") [ "$2" != "$FAKE_FAILS_ON" ] ;; *" report") [ -z "$FAKE_REPORT_FAILS" ] ;; esac',
    });
  });
  afterEach(() => fakes.cleanup());
  const testSh = join(repo, 'vagrant', 'test.sh');
  const inVm = (machine: string, verb: string, pace = 'host') =>
    `vagrant ssh ${machine} -c sudo env STRAIT_NODE=${machine} STRAIT_PACE=${pace} bash /strait/vagrant/provision/lab.sh ${verb}`;

  it("tests on every machine of the topology, even after one failed, then reports on the first: its status is the report's", () => {
    const twoClusters = { STRAIT_TOPOLOGY: join(repo, 'lab', 'src', 'topologies', 'two-clusters.yaml'), STRAIT_PACE: 'emulated' };
    const out = spawnSync('bash', [testSh], {
      encoding: 'utf8',
      timeout: 30_000,
      cwd: tmpdir(),
      env: { PATH: fakes.path, ...twoClusters, FAKE_FAILS_ON: 'a-w1' },
    });
    assert.equal(out.status, 0, out.stderr);
    assert.deepEqual(fakes.calls(), [
      ...['a-gw', 'a-w1', 'b-gw'].map((m) => inVm(m, 'test', 'emulated')),
      inVm('a-gw', 'report', 'emulated'),
    ]);
    assert.match(out.stdout, /--- a-w1: some checks failed/);
    const failed = spawnSync('bash', [testSh], { encoding: 'utf8', timeout: 30_000, env: { PATH: fakes.path, FAKE_REPORT_FAILS: '1' } });
    assert.equal(failed.status, 1, failed.stderr);
    assert.equal(fakes.calls().filter((c) => c.endsWith(' test')).length, 3 + 6, 'the default topology has six machines');
  });

  it("reads a relative STRAIT_TOPOLOGY from the caller's directory", () => {
    const out = spawnSync('bash', [testSh], {
      encoding: 'utf8',
      timeout: 30_000,
      cwd: repo,
      env: { PATH: fakes.path, STRAIT_TOPOLOGY: 'lab/src/topologies/jumbo.yaml' },
    });
    assert.equal(out.status, 0, out.stderr);
    assert.deepEqual(
      fakes.calls().map((c) => c.split(' ')[2]),
      ['a-gw', 'a-w1', 'b-gw', 'b-w1', 'a-gw'],
    );
  });
});
