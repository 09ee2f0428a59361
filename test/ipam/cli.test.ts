import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FileLock } from '../../src/store/file-lock';
import { cliJson, runCli } from './cli-runner';

describe('strait ipam CLI', function () {
  this.timeout(60_000);
  let dir: string;
  let state: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'strait-cli-'));
    state = join(dir, 'ipam.json');
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  const ipam = (...args: string[]) => cliJson(['ipam', ...args, '--state', state]);

  it('runs the docs/ipam.md scenario on cluster B end to end, printing JSON', () => {
    assert.deepEqual(ipam('init', '--pod-cidr', '10.0.0.0/24', '--external-cidr', '192.168.0.0/24', '--pools', '172.16.0.0/12', '--reserved', '172.16.0.0/24'), {
      created: true,
      migrated: [],
      home: { podCIDR: '10.0.0.0/24', externalCIDR: '192.168.0.0/24', reserved: ['172.16.0.0/24'], pools: ['172.16.0.0/12'] },
      peers: 0,
    });
    assert.deepEqual(ipam('peer', 'add', '--cluster', 'a', '--pod-cidr', '10.0.0.0/24', '--external-cidr', '192.168.0.0/24'), {
      remotePodCIDR: '172.16.1.0/24',
      remoteExternalCIDR: '172.16.2.0/24',
    });
    assert.deepEqual(ipam('peer', 'add', '--cluster', 'c', '--pod-cidr', '10.1.0.0/24', '--external-cidr', '10.2.0.0/23'), { remotePodCIDR: '10.1.0.0/24', remoteExternalCIDR: '10.2.0.0/23' });
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
    assert.deepEqual(shown.peers.map((p) => p.clusterId), ['c']);
  });

  it('resumes on init with the same configuration and refuses a conflicting one, file untouched', () => {
    ipam('init', '--pod-cidr', '10.0.0.0/16', '--external-cidr', '10.201.0.0/16');
    ipam('peer', 'add', '--cluster', 'b', '--pod-cidr', '10.0.0.0/16', '--external-cidr', '10.202.0.0/16');
    const before = readFileSync(state, 'utf8');
    assert.deepEqual(ipam('init', '--pod-cidr', '10.0.0.0/16', '--external-cidr', '10.201.0.0/16'), {
      created: false,
      migrated: [],
      home: { podCIDR: '10.0.0.0/16', externalCIDR: '10.201.0.0/16', reserved: [], pools: ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', 'fd00::/8'] },
      peers: 1,
    });
    const refused = runCli(['ipam', 'init', '--state', state, '--pod-cidr', '10.0.0.0/16', '--external-cidr', '10.201.0.0/16', '--reserved', '10.1.0.0/16']);
    assert.equal(refused.code, 1);
    assert.match(JSON.parse(refused.stderr).error, /peer b podCIDR is seen as 10\.1\.0\.0\/16, which overlaps the new reserved\[0\] 10\.1\.0\.0\/16/);
    assert.equal(readFileSync(state, 'utf8'), before);
  });

  it('reports bad input on stderr as JSON with field and value, exits 1, and leaves the state file as it was', () => {
    ipam('init', '--pod-cidr', '10.0.0.0/16', '--external-cidr', '10.201.0.0/16');
    const before = readFileSync(state, 'utf8');
    const cases: [string[], string, string][] = [
      [['peer', 'add', '--cluster', 'b', '--pod-cidr', '10.0.0.1/16', '--external-cidr', '10.202.0.0/16'], 'podCIDR', '10.0.0.1/16'],
      [['peer', 'add', '--cluster', 'B!', '--pod-cidr', '10.0.0.0/16', '--external-cidr', '10.202.0.0/16'], 'cluster', 'B!'],
      [['map-endpoint', '--cluster', 'zz', '--ip', '10.1.0.1'], 'cluster', 'zz'],
      [['peer', 'remote-view', '--cluster', 'zz', '--local-nat-pod-cidr', '10.0.0.0/16', '--local-nat-external-cidr', '10.201.0.0/16'], 'cluster', 'zz'],
    ];
    for (const [args, field, value] of cases) {
      const run = runCli(['ipam', ...args, '--state', state]);
      assert.equal(run.code, 1, args.join(' '));
      assert.equal(run.stdout, '');
      const err = JSON.parse(run.stderr) as { field: string; value: string };
      assert.deepEqual([err.field, err.value], [field, value]);
      assert.equal(readFileSync(state, 'utf8'), before);
    }
    const overlapping = runCli(['ipam', 'init', '--state', join(dir, 'other.json'), '--pod-cidr', '10.0.0.0/16', '--external-cidr', '10.0.128.0/24']);
    assert.equal(overlapping.code, 1);
    assert.deepEqual(JSON.parse(overlapping.stderr).field, 'externalCIDR');
  });

  it('refuses a corrupt state file with what to do, and init --force replaces it', () => {
    writeFileSync(state, '{"version": 1, "home": {');
    const shown = runCli(['ipam', 'show', '--state', state]);
    assert.equal(shown.code, 1);
    assert.match(JSON.parse(shown.stderr).error, /not valid JSON .*init --force/);
    assert.equal(runCli(['ipam', 'init', '--state', state, '--pod-cidr', '10.0.0.0/16', '--external-cidr', '10.201.0.0/16']).code, 1);
    assert.deepEqual((ipam('init', '--pod-cidr', '10.0.0.0/16', '--external-cidr', '10.201.0.0/16', '--force') as { created: boolean }).created, true);
    assert.equal(runCli(['ipam', 'show', '--state', state]).code, 0);
  });

  it('refuses a second writer while the lock is held', async () => {
    ipam('init', '--pod-cidr', '10.0.0.0/16', '--external-cidr', '10.201.0.0/16');
    const lock = FileLock.acquire(`${state}.lock`);
    try {
      const run = runCli(['ipam', 'peer', 'add', '--state', state, '--cluster', 'b', '--pod-cidr', '10.1.0.0/16', '--external-cidr', '10.202.0.0/16']);
      assert.equal(run.code, 1);
      assert.match(JSON.parse(run.stderr).error, new RegExp(`held by process ${process.pid}`));
      assert.equal(runCli(['ipam', 'show', '--state', state]).code, 0, 'readers are not blocked');
    } finally {
      await lock.release();
    }
  });

  it('documents every command in --help', () => {
    const help = runCli(['ipam', '--help']).stdout;
    for (const command of ['init', 'peer', 'home-pod-ip', 'map-endpoint', 'unmap-endpoint', 'nat-mappings', 'show']) assert.match(help, new RegExp(`\\n\\s+${command}\\b`));
    assert.match(runCli(['ipam', 'peer', '--help']).stdout, /remote-view/);
    assert.match(runCli(['ipam', 'init', '--help']).stdout, /--reserved <cidrs>/);
  });
});
