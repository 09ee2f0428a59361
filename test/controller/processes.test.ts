import assert from 'node:assert/strict';
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readNodeDataplane } from '../../src/api/node-dataplane';
import { temporaryPathFor } from '../../src/store/atomic-file';
import { parseIp } from '../../src/net/cidr';
import { cliPath } from '../network-ipam/cli-runner';
import { noMetricsServer } from '../support/metrics';
import { waitFor } from '../support/wait';

/** Three `strait controller` processes on one run dir, the test standing in for the agents' heartbeats. */
const clusters = [
  {
    clusterId: 'cluster-a',
    podCIDR: '10.0.0.0/16',
    externalCIDR: '10.200.0.0/24',
    peers: ['cluster-b'],
    node: 'a-gw',
    pods: '10.0.0.0/24',
  },
  {
    clusterId: 'cluster-b',
    podCIDR: '10.0.0.0/16',
    externalCIDR: '10.200.0.0/24',
    peers: ['cluster-a', 'cluster-c'],
    node: 'b-gw',
    pods: '10.0.0.0/24',
  },
  {
    clusterId: 'cluster-c',
    podCIDR: '10.2.0.0/20',
    externalCIDR: '10.201.0.0/25',
    peers: ['cluster-b'],
    node: 'c-gw',
    pods: '10.2.0.0/24',
  },
];

function exited(child: ChildProcess): Promise<number | null> {
  return new Promise((resolve) => {
    if (child.exitCode !== null) resolve(child.exitCode);
    else child.once('exit', (code) => resolve(code));
  });
}

/** How a process ended: its exit code, or the signal that killed it. */
function ended(child: ChildProcess): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve({ code: child.exitCode, signal: child.signalCode });
    else child.once('exit', (code, signal) => resolve({ code, signal }));
  });
}

/** Every file under `dir` (relative path) with its content, inode and modification time. */
function snapshot(dir: string, skip: (path: string) => boolean): Map<string, { text: string; ino: number; mtimeMs: number }> {
  const files = new Map<string, { text: string; ino: number; mtimeMs: number }>();
  for (const entry of readdirSync(dir, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const path = join(entry.parentPath, entry.name);
    if (skip(path)) continue;
    const { ino, mtimeMs } = statSync(path);
    files.set(path.slice(dir.length + 1), { text: readFileSync(path, 'utf8'), ino, mtimeMs });
  }
  return files;
}

describe('strait controller processes', () => {
  let dir: string;
  const children: ChildProcess[] = [];
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'strait-controllers-'));
  });
  afterEach(() => {
    for (const child of children.splice(0)) if (child.exitCode === null) child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });

  it('three controllers peer through the run dir, write node specs with their peers, and exit 0 on SIGTERM', async () => {
    const runDir = join(dir, 'run');
    const logs = new Map<string, string>();
    for (const [i, c] of clusters.entries()) {
      const config = {
        clusterId: c.clusterId,
        runDir,
        podCIDR: c.podCIDR,
        externalCIDR: c.externalCIDR,
        peers: c.peers,
        ...(c.clusterId === 'cluster-b' ? { reflections: [{ to: 'cluster-a', fromPeer: 'cluster-c', podIP: '10.2.0.10' }] } : {}),
        nodes: [{ name: c.node, underlayAddress: `192.168.${i + 1}.1`, podCIDRs: [c.pods], publicAddress: `203.0.113.${i + 1}` }],
        heartbeatTimeout: 30,
        interval: 0.1,
      };
      const path = join(dir, `${c.clusterId}.json`);
      writeFileSync(path, JSON.stringify(config));
      mkdirSync(join(runDir, c.clusterId, 'status'), { recursive: true });
      writeFileSync(
        join(runDir, c.clusterId, 'status', `${c.node}.json`),
        JSON.stringify({ ready: true, time: new Date().toISOString(), dataplane: 'ebpf', specGeneration: 1 }),
      );
      const child = spawn(process.execPath, [cliPath, 'controller', '--config', path, ...noMetricsServer], {
        stdio: ['ignore', 'ignore', 'pipe'],
      });
      logs.set(c.clusterId, '');
      child.stderr!.on('data', (chunk: Buffer) => logs.set(c.clusterId, logs.get(c.clusterId) + chunk.toString()));
      children.push(child);
    }

    const expected: Record<string, string[]> = {
      'cluster-a': ['cluster-b'],
      'cluster-b': ['cluster-a', 'cluster-c'],
      'cluster-c': ['cluster-b'],
    };
    const peersIn = (c: (typeof clusters)[number]): string[] | undefined => {
      const path = join(runDir, c.clusterId, 'nodes', `${c.node}.json`);
      if (!existsSync(path)) return undefined;
      return readNodeDataplane(JSON.parse(readFileSync(path, 'utf8'))).spec.peers.map((p) => p.clusterId);
    };
    const deadline = Date.now() + 10_000;
    while (!clusters.every((c) => JSON.stringify(peersIn(c)) === JSON.stringify(expected[c.clusterId]))) {
      assert.ok(
        Date.now() < deadline,
        `node specs did not get their peers within 10 s: ${clusters.map((c) => `${c.clusterId}: ${JSON.stringify(peersIn(c))}`).join(', ')}\n${[...logs.values()].join('')}`,
      );
      await new Promise((resolve) => setTimeout(resolve, 100));
    }

    const hub = readNodeDataplane(JSON.parse(readFileSync(join(runDir, 'cluster-b', 'nodes', 'b-gw.json'), 'utf8'))).spec;
    assert.deepEqual(hub.peers.find((p) => p.clusterId === 'cluster-a')!.endpoint, {
      address: parseIp('address', '203.0.113.1'),
      port: 4789,
      standbyAddresses: [],
    });
    assert.equal(hub.node.role, 'gateway');
    const status = JSON.parse(readFileSync(join(runDir, 'cluster-b', 'controller.json'), 'utf8')) as {
      gateway: string;
      readyNodes: string[];
    };
    assert.equal(status.gateway, 'b-gw');
    assert.deepEqual(status.readyNodes, ['b-gw']);

    const codes = await Promise.all(
      children.map((child) => {
        child.kill('SIGTERM');
        return exited(child);
      }),
    );
    assert.deepEqual(codes, [0, 0, 0], [...logs.values()].join(''));
    for (const c of clusters) {
      const lines = logs
        .get(c.clusterId)!
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line) as { msg: string; name: string });
      assert.ok(
        lines.every((line) => line.name === 'controller'),
        'pino JSON lines from the controller logger',
      );
      for (const msg of ['controller started', 'gateway elected', 'peer ready', 'node spec written', 'controller stopped']) {
        assert.ok(
          lines.some((line) => line.msg === msg),
          `${c.clusterId} logged "${msg}"`,
        );
      }
      assert.equal(existsSync(join(runDir, c.clusterId, 'ipam.json.lock')), false, 'the IPAM lock is released');
    }
  });

  it('--once after a restart keeps the gateway of the last status while it is Ready, and prints the status', () => {
    const runDir = join(dir, 'run');
    const config = {
      clusterId: 'cluster-a',
      runDir,
      podCIDR: '10.0.0.0/16',
      externalCIDR: '10.200.0.0/24',
      nodes: [
        { name: 'a-1', underlayAddress: '192.168.1.1', podCIDRs: ['10.0.0.0/24'], publicAddress: '203.0.113.1' },
        { name: 'a-2', underlayAddress: '192.168.1.2', podCIDRs: ['10.0.1.0/24'] },
      ],
    };
    const path = join(dir, 'a.json');
    writeFileSync(path, JSON.stringify(config));
    mkdirSync(join(runDir, 'cluster-a', 'status'), { recursive: true });
    // Dated ahead, so a slow process start cannot make them stale.
    for (const node of ['a-1', 'a-2']) {
      writeFileSync(
        join(runDir, 'cluster-a', 'status', `${node}.json`),
        JSON.stringify({ ready: true, time: new Date(Date.now() + 60_000).toISOString(), dataplane: 'ebpf', specGeneration: 1 }),
      );
    }
    writeFileSync(
      join(runDir, 'cluster-a', 'controller.json'),
      JSON.stringify({ clusterId: 'cluster-a', gateway: 'a-2', peers: [], readyNodes: [], time: new Date().toISOString() }),
    );
    const run = spawnSync(process.execPath, [cliPath, 'controller', '--config', path, '--once'], { encoding: 'utf8' });
    assert.equal(run.status, 0, run.stderr);
    const status = JSON.parse(run.stdout) as { gateway: string; readyNodes: string[]; peers: unknown[] };
    assert.equal(status.gateway, 'a-2', 'a-1 would win a new election (public address), but a-2 is still Ready');
    assert.deepEqual(status.readyNodes, ['a-1', 'a-2']);
    assert.deepEqual(status.peers, []);
  });

  /** Cluster A alone, one node; `extra` changes the configuration. */
  const configA = (name: string, extra: Record<string, unknown> = {}) => {
    const runDir = join(dir, 'run');
    const path = join(dir, name);
    writeFileSync(
      path,
      JSON.stringify({
        clusterId: 'cluster-a',
        runDir,
        podCIDR: '10.0.0.0/16',
        externalCIDR: '10.200.0.0/24',
        peers: ['cluster-b'],
        nodes: [{ name: 'a-gw', underlayAddress: '192.168.1.1', podCIDRs: ['10.0.0.0/24'], publicAddress: '203.0.113.1' }],
        heartbeatTimeout: 30,
        interval: 0.1,
        ...extra,
      }),
    );
    return { path, runDir, clusterDir: join(runDir, 'cluster-a') };
  };

  /** A running controller of cluster A and its log, once it wrote its node spec; a-gw is Ready. */
  const startController = async (configPath: string, clusterDir: string) => {
    mkdirSync(join(clusterDir, 'status'), { recursive: true });
    writeFileSync(
      join(clusterDir, 'status', 'a-gw.json'),
      JSON.stringify({ ready: true, time: new Date().toISOString(), dataplane: 'ebpf', specGeneration: 1 }),
    );
    const child = spawn(process.execPath, [cliPath, 'controller', '--config', configPath, ...noMetricsServer], {
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    children.push(child);
    let log = '';
    child.stderr!.on('data', (chunk: Buffer) => (log += chunk.toString()));
    await waitFor(
      'the controller to write its node spec',
      () => existsSync(join(clusterDir, 'nodes', 'a-gw.json')),
      10_000,
      () => log,
    );
    return { child, log: () => log };
  };

  it('refuses a second controller for the same cluster, naming the lock file and its holder, and changes nothing', async () => {
    const { path, runDir, clusterDir } = configA('a.json');
    const first = await startController(path, clusterDir);
    const lockPath = join(clusterDir, 'ipam.json.lock');
    // controller.json is the first controller's own heartbeat, rewritten every round through its
    // temporary (a CI run listed .controller.json.tmp between its write and its rename).
    const heartbeat = join(clusterDir, 'controller.json');
    const unchanged = () => snapshot(runDir, (p) => p === heartbeat || p === temporaryPathFor(heartbeat));
    const firstRound = [
      'cluster-a/ipam.json',
      'cluster-a/ipam.json.lock',
      'cluster-a/nodes/a-gw.json',
      'cluster-a/reflections.json',
      'cluster-a/status/a-gw.json',
      'exchange/cluster-a/cluster-b.spec.json',
    ];
    // The first controller may still be writing its first round (a CI run caught .reflections.json.tmp): settled first.
    await waitFor(
      "the first controller's first round written",
      () => [...unchanged().keys()].sort().join() === firstRound.join(),
      10_000,
      () => [...unchanged().keys()].sort().join(' '),
    );
    const before = unchanged();
    assert.deepEqual([...before.keys()].sort(), [
      'cluster-a/ipam.json',
      'cluster-a/ipam.json.lock',
      'cluster-a/nodes/a-gw.json',
      'cluster-a/reflections.json',
      'cluster-a/status/a-gw.json',
      'exchange/cluster-a/cluster-b.spec.json',
    ]);

    // Another peer and another node: had it run, it would write a spec for cluster-z and one for a-w2.
    const other = configA('a-again.json', {
      peers: ['cluster-b', 'cluster-z'],
      nodes: [
        { name: 'a-gw', underlayAddress: '192.168.1.1', podCIDRs: ['10.0.0.0/24'], publicAddress: '203.0.113.1' },
        { name: 'a-w2', underlayAddress: '192.168.1.2', podCIDRs: ['10.0.1.0/24'] },
      ],
    });
    const second = spawnSync(process.execPath, [cliPath, 'controller', '--config', other.path, ...noMetricsServer], {
      encoding: 'utf8',
      timeout: 10_000,
    });
    const ran = second.stderr.split('\n').slice(0, 4).join('\n');
    assert.equal(
      second.status,
      1,
      second.error ? `the second controller was not refused: still running after 10 s (${second.error.message}), logging:\n${ran}` : ran,
    );
    assert.equal(second.stdout, '');
    assert.deepEqual(JSON.parse(second.stderr), {
      error:
        `${lockPath} is held by process ${first.child.pid}, another writer of this state; wait for it to finish. ` +
        `If no strait process is running (the pid was reused), remove ${lockPath}`,
    });

    const after = unchanged();
    assert.deepEqual([...after.keys()].sort(), [...before.keys()].sort(), 'no file added or removed');
    for (const [file, was] of before) assert.deepEqual(after.get(file), was, `${file} is untouched (content, inode, mtime)`);
    assert.equal(readFileSync(lockPath, 'utf8'), `${first.child.pid}\n`, 'the lock still names the first controller');

    // The first goes on: another round after the refusal, then a clean stop.
    const refusedAt = Date.now();
    await waitFor(
      'a round of the first controller after the refusal',
      () => Date.parse(JSON.parse(readFileSync(join(clusterDir, 'controller.json'), 'utf8')).time) > refusedAt,
      10_000,
      first.log,
    );
    assert.equal(first.child.exitCode, null, 'the first controller is still running');
    first.child.kill('SIGTERM');
    assert.deepEqual(await ended(first.child), { code: 0, signal: null }, first.log());
    assert.equal(existsSync(lockPath), false);
  });

  it('a node whose heartbeat is stamped an hour ahead is not Ready once it stops changing: the gateway moves (issue 24)', async () => {
    const { path, clusterDir } = configA('a.json', {
      peers: [],
      nodes: [
        { name: 'a-1', underlayAddress: '192.168.1.1', podCIDRs: ['10.0.0.0/24'], publicAddress: '203.0.113.1' },
        { name: 'a-2', underlayAddress: '192.168.1.2', podCIDRs: ['10.0.1.0/24'] },
      ],
      heartbeatTimeout: 0.5,
      interval: 0.05,
    });
    mkdirSync(join(clusterDir, 'status'), { recursive: true });
    const beat = (node: string, time: number) =>
      writeFileSync(
        join(clusterDir, 'status', `${node}.json`),
        JSON.stringify({ ready: true, time: new Date(time).toISOString(), dataplane: 'ebpf', specGeneration: 1 }),
      );
    // a-1's clock is an hour ahead, and its agent writes once, then dies; a-2's agent goes on.
    beat('a-1', Date.now() + 3_600_000);
    const a2 = setInterval(() => beat('a-2', Date.now()), 50);
    try {
      beat('a-2', Date.now());
      const child = spawn(process.execPath, [cliPath, 'controller', '--config', path, ...noMetricsServer], {
        stdio: ['ignore', 'ignore', 'pipe'],
      });
      children.push(child);
      let log = '';
      child.stderr!.on('data', (chunk: Buffer) => (log += chunk.toString()));
      const status = () =>
        JSON.parse(readFileSync(join(clusterDir, 'controller.json'), 'utf8')) as { gateway: string; readyNodes: string[] };
      await waitFor(
        'the controller to elect a-1 (public address) while its heartbeat is new',
        () => status().gateway === 'a-1',
        10_000,
        () => log,
      );
      await waitFor(
        'a-1 not Ready a timeout after its heartbeat stopped changing, and a-2 the gateway',
        () => status().gateway === 'a-2' && status().readyNodes.join() === 'a-2',
        5_000,
        () => log,
      );
      assert.match(log, /node a-1: heartbeat stamped 3\d{3}\.\d s ahead of this controller's clock/);
    } finally {
      clearInterval(a2);
    }
  });

  it('stops on SIGINT like on SIGTERM: logs "controller stopped", releases the lock and exits 0', async () => {
    const { path, clusterDir } = configA('a.json');
    const { child, log } = await startController(path, clusterDir);
    child.kill('SIGINT');
    assert.deepEqual(await ended(child), { code: 0, signal: null }, log());
    assert.equal(JSON.parse(log().trim().split('\n').at(-1)!).msg, 'controller stopped');
    assert.equal(existsSync(join(clusterDir, 'ipam.json.lock')), false, 'the IPAM lock is released');
  });

  it('refuses a bad configuration with the field and value, exit 1', () => {
    const path = join(dir, 'bad.yaml');
    writeFileSync(path, 'clusterId: cluster-a\npodCIDR: 10.0.0.1/16\nexternalCIDR: 10.200.0.0/24\nnodes: []\n');
    const run = spawnSync(process.execPath, [cliPath, 'controller', '--config', path, ...noMetricsServer], { encoding: 'utf8' });
    assert.equal(run.status, 1);
    const error = JSON.parse(run.stderr) as { field: string; value: string; error: string };
    assert.equal(error.field, 'podCIDR');
    assert.equal(error.value, '10.0.0.1/16');
    assert.match(error.error, /did you mean 10\.0\.0\.0\/16/);
  });
});
