import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { lstatSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FileLock } from '../../src/store/file-lock';
import { cliJson, runCli } from './cli-runner';

describe('strait network-ipam CLI', function () {
  this.timeout(60_000);
  let dir: string;
  let state: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'strait-cli-'));
    state = join(dir, 'ipam.json');
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  const ipam = (...args: string[]) => cliJson(['network-ipam', ...args, '--state', state]);

  it('runs the docs/network-ipam.md scenario on cluster B end to end, printing JSON', () => {
    assert.deepEqual(
      ipam(
        'init',
        '--pod-cidr',
        '10.0.0.0/24',
        '--external-cidr',
        '192.168.0.0/24',
        '--pools',
        '172.16.0.0/12',
        '--reserved',
        '172.16.0.0/24',
      ),
      {
        created: true,
        migrated: [],
        home: { podCIDR: '10.0.0.0/24', externalCIDR: '192.168.0.0/24', reserved: ['172.16.0.0/24'], pools: ['172.16.0.0/12'] },
        peers: 0,
      },
    );
    assert.deepEqual(ipam('peer', 'add', '--cluster', 'a', '--pod-cidr', '10.0.0.0/24', '--external-cidr', '192.168.0.0/24'), {
      remotePodCIDR: '172.16.1.0/24',
      remoteExternalCIDR: '172.16.2.0/24',
    });
    assert.deepEqual(ipam('peer', 'add', '--cluster', 'c', '--pod-cidr', '10.1.0.0/24', '--external-cidr', '10.2.0.0/23'), {
      remotePodCIDR: '10.1.0.0/24',
      remoteExternalCIDR: '10.2.0.0/23',
    });
    assert.deepEqual(ipam('home-pod-ip', '--cluster', 'a', '--ip', '10.0.0.34'), { ip: '172.16.1.34' });
    ipam('peer', 'remote-view', '--cluster', 'a', '--local-nat-pod-cidr', '10.0.0.0/24', '--local-nat-external-cidr', '10.8.0.0/24');
    ipam('peer', 'remote-view', '--cluster', 'c', '--local-nat-pod-cidr', '10.0.0.0/24', '--local-nat-external-cidr', '192.168.0.0/24');
    assert.deepEqual(ipam('map-endpoint', '--cluster', 'a', '--ip', '10.1.0.5'), { ip: '10.8.0.1' });
    assert.deepEqual(ipam('map-endpoint', '--cluster', 'a', '--ip', '10.0.0.34'), { ip: '10.0.0.34' });
    assert.deepEqual(ipam('nat-mappings', '--cluster', 'a'), {
      clusterId: 'a',
      externalCIDR: '192.168.0.0/24',
      localNATExternalCIDR: '10.8.0.0/24',
      mappings: [{ externalIP: '192.168.0.1', endpointIP: '10.1.0.5' }],
    });
    assert.deepEqual(ipam('unmap-endpoint', '--cluster', 'a', '--ip', '10.1.0.5'), { removed: true, freedExternalIP: '192.168.0.1' });
    assert.deepEqual(ipam('peer', 'remove', '--cluster', 'a'), { removed: true });
    const shown = ipam('show') as { peers: { clusterId: string }[] };
    assert.deepEqual(
      shown.peers.map((p) => p.clusterId),
      ['c'],
    );
  });

  it('resumes on init with the same configuration and refuses a conflicting one, file untouched', () => {
    ipam('init', '--pod-cidr', '10.0.0.0/16', '--external-cidr', '10.201.0.0/16');
    ipam('peer', 'add', '--cluster', 'b', '--pod-cidr', '10.0.0.0/16', '--external-cidr', '10.202.0.0/16');
    const before = readFileSync(state, 'utf8');
    assert.deepEqual(ipam('init', '--pod-cidr', '10.0.0.0/16', '--external-cidr', '10.201.0.0/16'), {
      created: false,
      migrated: [],
      home: {
        podCIDR: '10.0.0.0/16',
        externalCIDR: '10.201.0.0/16',
        reserved: [],
        pools: ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', 'fd00::/8'],
      },
      peers: 1,
    });
    const refused = runCli([
      'network-ipam',
      'init',
      '--state',
      state,
      '--pod-cidr',
      '10.0.0.0/16',
      '--external-cidr',
      '10.201.0.0/16',
      '--reserved',
      '10.1.0.0/16',
    ]);
    assert.equal(refused.code, 1);
    assert.match(
      JSON.parse(refused.stderr).error,
      /peer b podCIDR is seen as 10\.1\.0\.0\/16, which overlaps the new reserved\[0\] 10\.1\.0\.0\/16/,
    );
    assert.equal(readFileSync(state, 'utf8'), before);
  });

  it('reports bad input on stderr as JSON with field and value, exits 1, and leaves the state file as it was', () => {
    ipam('init', '--pod-cidr', '10.0.0.0/16', '--external-cidr', '10.201.0.0/16');
    const before = readFileSync(state, 'utf8');
    const cases: [string[], string, string][] = [
      [['peer', 'add', '--cluster', 'b', '--pod-cidr', '10.0.0.1/16', '--external-cidr', '10.202.0.0/16'], 'podCIDR', '10.0.0.1/16'],
      [['peer', 'add', '--cluster', 'B!', '--pod-cidr', '10.0.0.0/16', '--external-cidr', '10.202.0.0/16'], 'cluster', 'B!'],
      [['map-endpoint', '--cluster', 'zz', '--ip', '10.1.0.1'], 'cluster', 'zz'],
      [
        ['peer', 'remote-view', '--cluster', 'zz', '--local-nat-pod-cidr', '10.0.0.0/16', '--local-nat-external-cidr', '10.201.0.0/16'],
        'cluster',
        'zz',
      ],
    ];
    for (const [args, field, value] of cases) {
      const run = runCli(['network-ipam', ...args, '--state', state]);
      assert.equal(run.code, 1, args.join(' '));
      assert.equal(run.stdout, '');
      const err = JSON.parse(run.stderr) as { field: string; value: string };
      assert.deepEqual([err.field, err.value], [field, value]);
      assert.equal(readFileSync(state, 'utf8'), before);
    }
    const overlapping = runCli([
      'network-ipam',
      'init',
      '--state',
      join(dir, 'other.json'),
      '--pod-cidr',
      '10.0.0.0/16',
      '--external-cidr',
      '10.0.128.0/24',
    ]);
    assert.equal(overlapping.code, 1);
    assert.deepEqual(JSON.parse(overlapping.stderr).field, 'externalCIDR');
  });

  it('refuses a corrupt state file with what to do, and init --force replaces it', () => {
    writeFileSync(state, '{"version": 1, "home": {');
    const shown = runCli(['network-ipam', 'show', '--state', state]);
    assert.equal(shown.code, 1);
    assert.match(JSON.parse(shown.stderr).error, /not valid JSON .*init --force/);
    assert.equal(
      runCli(['network-ipam', 'init', '--state', state, '--pod-cidr', '10.0.0.0/16', '--external-cidr', '10.201.0.0/16']).code,
      1,
    );
    assert.deepEqual(
      (ipam('init', '--pod-cidr', '10.0.0.0/16', '--external-cidr', '10.201.0.0/16', '--force') as { created: boolean }).created,
      true,
    );
    assert.equal(runCli(['network-ipam', 'show', '--state', state]).code, 0);
  });

  it('refuses a second writer while the lock is held', async () => {
    ipam('init', '--pod-cidr', '10.0.0.0/16', '--external-cidr', '10.201.0.0/16');
    const lock = FileLock.acquire(`${state}.lock`);
    try {
      const run = runCli([
        'network-ipam',
        'peer',
        'add',
        '--state',
        state,
        '--cluster',
        'b',
        '--pod-cidr',
        '10.1.0.0/16',
        '--external-cidr',
        '10.202.0.0/16',
      ]);
      assert.equal(run.code, 1);
      assert.match(JSON.parse(run.stderr).error, new RegExp(`held by process ${process.pid}`));
      assert.equal(runCli(['network-ipam', 'show', '--state', state]).code, 0, 'readers are not blocked');
    } finally {
      await lock.release();
    }
  });

  /** A refusal: exit 1, nothing on stdout, one JSON document on stderr (returned). */
  const refusal = (args: string[]): { error: string; field?: string; value?: unknown } => {
    const run = runCli(args, 10_000);
    assert.equal(run.code, 1, `strait ${args.join(' ')} exited ${run.code}: ${run.stderr}`);
    assert.equal(run.stdout, '');
    assert.equal(run.stderr.trim().split('\n').length, 1, run.stderr);
    return JSON.parse(run.stderr) as { error: string; field?: string; value?: unknown };
  };

  it('refuses to map an endpoint address no pod can have, naming the field and the value, state untouched', () => {
    ipam('init', '--pod-cidr', '10.0.0.0/16', '--external-cidr', '10.201.0.0/16');
    ipam('peer', 'add', '--cluster', 'b', '--pod-cidr', '10.1.0.0/16', '--external-cidr', '10.202.0.0/16');
    ipam('peer', 'remote-view', '--cluster', 'b', '--local-nat-pod-cidr', '10.0.0.0/16', '--local-nat-external-cidr', '10.201.0.0/16');
    const before = readFileSync(state, 'utf8');
    for (const ip of ['0.0.0.0', '255.255.255.255', '224.0.0.1', '127.0.0.1']) {
      const err = refusal(['network-ipam', 'map-endpoint', '--state', state, '--cluster', 'b', '--ip', ip]);
      assert.deepEqual([err.field, err.value], ['ip', ip]);
      assert.match(err.error, /^ip: is in .*: not unicast space a node or pod can be in/);
    }
    assert.equal(readFileSync(state, 'utf8'), before);
  });

  it('refuses at once a state path that is not a regular file (a fifo, a directory, a symlink), naming it, for readers and writers', () => {
    const fifo = join(dir, 'fifo');
    execFileSync('mkfifo', [fifo]);
    const directory = join(dir, 'directory');
    mkdirSync(directory);
    const link = join(dir, 'link');
    ipam('init', '--pod-cidr', '10.0.0.0/16', '--external-cidr', '10.201.0.0/16');
    symlinkSync(state, link);
    const before = readFileSync(state, 'utf8');
    for (const [path, kind] of [
      [fifo, 'a fifo'],
      [directory, 'a directory'],
      [link, 'a symbolic link'],
    ] as const) {
      for (const args of [
        ['show'],
        ['peer', 'remove', '--cluster', 'b'],
        ['init', '--pod-cidr', '10.0.0.0/16', '--external-cidr', '10.201.0.0/16', '--force'],
      ]) {
        const started = Date.now();
        const err = refusal(['network-ipam', ...args, '--state', path]);
        assert.ok(err.error.startsWith(`${path}: is ${kind}, not a regular file`), err.error);
        assert.ok(Date.now() - started < 5000, 'refused at once');
      }
    }
    assert.ok(lstatSync(fifo).isFIFO() && lstatSync(directory).isDirectory() && lstatSync(link).isSymbolicLink());
    assert.equal(readFileSync(state, 'utf8'), before);
    assert.deepEqual(readdirSync(dir).sort(), ['directory', 'fifo', 'ipam.json', 'link']);
  });

  it('takes over a corrupt lock file (empty, not a pid, 0, -1) and refuses a lock that is a fifo at once', () => {
    ipam('init', '--pod-cidr', '10.0.0.0/16', '--external-cidr', '10.201.0.0/16');
    for (const text of ['', 'garbage\n', '0\n', '-1\n']) {
      writeFileSync(`${state}.lock`, text);
      assert.deepEqual(ipam('peer', 'remove', '--cluster', 'b'), { removed: false }, JSON.stringify(text));
      assert.deepEqual(readdirSync(dir), ['ipam.json']);
    }
    execFileSync('mkfifo', [`${state}.lock`]);
    const err = refusal(['network-ipam', 'peer', 'remove', '--state', state, '--cluster', 'b']);
    assert.ok(err.error.startsWith(`${state}.lock: is a fifo, not a regular file`), err.error);
  });

  it('reports usage errors as JSON naming the option or argument and the value; --help still prints help', () => {
    const cases: [string[], string, unknown][] = [
      [['network-ipam', 'show'], '--state', null],
      [['network-ipam', 'show', '--state'], '--state', null],
      [['network-ipam', 'show', '--state', state, '--stat', 'x'], '--stat', '--stat'],
      [['network-ipam', 'show', '--state', state, '--bogus=1'], '--bogus', '--bogus=1'],
      [['network-ipam', 'show', '--state', state, 'extra'], 'arguments', ['extra']],
      [['network-ipam', 'peer', 'add', '--state', state, '--cluster', 'b', '--pod-cidr', '10.1.0.0/16'], '--external-cidr', null],
      [['network-ipam', 'nope'], 'command', 'nope'],
      [['network-ipam'], 'command', null],
      [['network-ipam', 'peer'], 'command', null],
      [['network-ipam', 'show', '--state', ''], '--state', ''],
      [['network-ipam', 'show', '--state', 'a\u0001/'], '--state', 'a\u0001/'],
    ];
    for (const [args, field, value] of cases) {
      const err = refusal(args);
      assert.deepEqual([err.field, err.value], [field, value], args.join(' '));
      assert.ok(err.error.startsWith(`${field}: `), err.error);
      assert.doesNotMatch(err.error, /Usage:/);
    }
    const help = runCli(['network-ipam', 'show', '--help']);
    assert.deepEqual([help.code, help.stderr], [0, '']);
    assert.match(help.stdout, /^Usage: strait network-ipam show \[options\]/);
  });

  it('documents every command in --help', () => {
    const help = runCli(['network-ipam', '--help']).stdout;
    for (const command of ['init', 'peer', 'home-pod-ip', 'map-endpoint', 'unmap-endpoint', 'nat-mappings', 'show'])
      assert.match(help, new RegExp(`\\n\\s+${command}\\b`));
    assert.match(runCli(['network-ipam', 'peer', '--help']).stdout, /remote-view/);
    assert.match(runCli(['network-ipam', 'init', '--help']).stdout, /--reserved <cidrs>/);
  });
});
