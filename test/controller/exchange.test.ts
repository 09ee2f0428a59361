import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runDirPaths } from '../../src/api/run-dir';
import { diskRunDir, readExchange, readHeartbeats, syncFiles } from '../../src/controller/files/exchange';
import { writeFileAtomic } from '../../src/store/atomic-file';
import { MemoryRunDir } from './memory-run-dir';

describe('controller run directory and exchange', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'strait-exchange-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('lays the run directory out as docs/lab.md documents it (the agents and the lab find the files there)', () => {
    assert.deepEqual(
      [
        runDirPaths.spec('cluster-a', 'cluster-b'),
        runDirPaths.status('cluster-a', 'cluster-b'),
        runDirPaths.ipam('cluster-a'),
        runDirPaths.nodeSpec('cluster-a', 'a-gw'),
        runDirPaths.heartbeat('cluster-a', 'a-gw'),
        runDirPaths.reflections('cluster-a'),
        runDirPaths.controllerStatus('cluster-a'),
      ],
      [
        'exchange/cluster-a/cluster-b.spec.json',
        'exchange/cluster-a/cluster-b.status.json',
        'cluster-a/ipam.json',
        'cluster-a/nodes/a-gw.json',
        'cluster-a/status/a-gw.json',
        'cluster-a/reflections.json',
        'cluster-a/controller.json',
      ],
    );
  });

  it('writes atomically: directories made, content replaced, no temporary file left', () => {
    const path = join(dir, 'exchange', 'cluster-a', 'cluster-b.spec.json');
    writeFileAtomic(path, 'one');
    writeFileAtomic(path, 'two');
    assert.equal(readFileSync(path, 'utf8'), 'two');
    assert.deepEqual(readdirSync(join(dir, 'exchange', 'cluster-a')), ['cluster-b.spec.json']);
  });

  it('reads only regular files of the run directory: a fifo, a symlink or a directory reached through one is a problem of that file, never a blocked or misled read', () => {
    const files = diskRunDir(dir);
    mkdirSync(join(dir, 'exchange', 'cluster-b'), { recursive: true });
    writeFileSync(join(dir, 'elsewhere.json'), '{"x": 1}');
    execFileSync('mkfifo', [join(dir, 'exchange', 'cluster-b', 'cluster-a.spec.json')]);
    symlinkSync(join(dir, 'elsewhere.json'), join(dir, 'exchange', 'cluster-b', 'cluster-a.status.json'));
    assert.throws(() => files.read('exchange/cluster-b/cluster-a.spec.json'), /a fifo, not a regular file/);
    assert.throws(() => files.read('exchange/cluster-b/cluster-a.status.json'), /a symbolic link/);
    // A peer's directory that is a link to another's: nothing in it is listed (so nothing is deleted) or read.
    mkdirSync(join(dir, 'exchange', 'cluster-c', 'services', 'cluster-a'), { recursive: true });
    writeFileSync(join(dir, 'exchange', 'cluster-c', 'services', 'cluster-a', 'shop.cart.json'), '{}');
    mkdirSync(join(dir, 'exchange', 'evil', 'services'), { recursive: true });
    symlinkSync(join(dir, 'exchange', 'cluster-c', 'services', 'cluster-a'), join(dir, 'exchange', 'evil', 'services', 'cluster-a'));
    assert.deepEqual(files.list('exchange/evil/services/cluster-a'), []);
    assert.throws(() => files.read('exchange/evil/services/cluster-a/shop.cart.json'), /symbolic link/);
    assert.deepEqual(files.list('exchange/cluster-c/services/cluster-a'), ['shop.cart.json']);
    // The exchange reader takes the fifo as a problem of that peer's spec, and the round goes on.
    const view = readExchange(files, 'cluster-a');
    assert.match(view.unreadableSpecs.get('cluster-b') ?? '', /fifo/);
  });

  it('reads a missing file or directory as absent', () => {
    const files = diskRunDir(dir);
    assert.equal(files.read('nope/x.json'), undefined);
    assert.deepEqual(files.list('nope'), []);
    files.remove('nope/x.json');
  });

  it('writes only what changed and deletes only what exists', () => {
    const files = new MemoryRunDir();
    files.write('a', 'same');
    files.write('gone', 'x');
    const first = syncFiles(
      files,
      new Map([
        ['a', 'same'],
        ['b', 'new'],
      ]),
      ['gone', 'never-there'],
    );
    assert.deepEqual(first, { written: ['b'], deleted: ['gone'] });
    assert.deepEqual(
      syncFiles(
        files,
        new Map([
          ['a', 'same'],
          ['b', 'new'],
        ]),
        [],
      ),
      { written: [], deleted: [] },
    );
  });

  it('reads the specs addressed to us and the statuses of ours; reports what it cannot use', () => {
    const files = diskRunDir(dir);
    const spec = {
      clusterId: 'cluster-b',
      remoteClusterId: 'cluster-a',
      podCIDR: '10.0.0.0/16',
      externalCIDR: '10.200.0.0/24',
      endpoint: { address: '203.0.113.2', port: 4789 },
    };
    files.write(runDirPaths.spec('cluster-b', 'cluster-a'), JSON.stringify(spec));
    files.write(runDirPaths.spec('cluster-b', 'cluster-z'), JSON.stringify({ ...spec, remoteClusterId: 'cluster-z' })); // not for us
    files.write(runDirPaths.spec('cluster-c', 'cluster-a'), JSON.stringify({ ...spec, clusterId: 'cluster-b' })); // wrong owner
    writeFileSync(join(dir, 'exchange', 'cluster-b', '.123.abc.tmp'), '{"half'); // someone's write in progress
    const status = {
      processed: true,
      remappedPodCIDR: '10.1.0.0/16',
      remappedExternalCIDR: 'None',
      observed: { podCIDR: '10.0.0.0/16', externalCIDR: '10.200.0.0/24' },
    };
    files.write(runDirPaths.status('cluster-a', 'cluster-b'), JSON.stringify(status));
    files.write(runDirPaths.status('cluster-a', 'cluster-d'), '{"processed": tr'); // half-visible
    files.write(runDirPaths.spec('cluster-a', 'cluster-b'), '{}');
    files.write(runDirPaths.status('cluster-b', 'cluster-a'), '{}');
    files.write(runDirPaths.nodeSpec('cluster-a', 'a-gw'), '{}');

    const view = readExchange(files, 'cluster-a');
    assert.deepEqual([...view.specsForUs], [['cluster-b', spec]]);
    assert.deepEqual([...view.statusesOfOurs], [['cluster-b', status]]);
    assert.deepEqual(view.written.sort(), [
      'cluster-a/nodes/a-gw.json',
      'exchange/cluster-a/cluster-b.spec.json',
      'exchange/cluster-b/cluster-a.status.json',
    ]);
    assert.equal(view.problems.length, 2, view.problems.join('\n'));
    assert.ok(
      view.problems.some((p) =>
        p.startsWith("exchange/cluster-c/cluster-a.spec.json: spec.clusterId: expected its directory's owner cluster-c"),
      ),
      view.problems.join('\n'),
    );
    assert.ok(view.problems.some((p) => p.startsWith('exchange/cluster-a/cluster-d.status.json: not valid JSON')));
  });

  it('reads heartbeats; a malformed one is no heartbeat', () => {
    const files = new MemoryRunDir();
    const beat = { ready: true, time: '2026-01-01T00:00:00Z', dataplane: 'ebpf', specGeneration: 1 };
    files.write(runDirPaths.heartbeat('c', 'n1'), JSON.stringify(beat));
    files.write(runDirPaths.heartbeat('c', 'n2'), JSON.stringify({ ...beat, ready: 'yes' }));
    files.write(runDirPaths.heartbeat('c', 'n3'), '{"ready":');
    files.write(runDirPaths.heartbeat('c', 'n5'), JSON.stringify({ ...beat, time: 'yesterday' }));
    assert.deepEqual([...readHeartbeats(files, 'c', ['n1', 'n2', 'n3', 'n4', 'n5'])], [['n1', beat]]);
  });
});
