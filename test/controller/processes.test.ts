import assert from 'node:assert/strict';
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { NodeDataplaneSpec } from '../../src/nodespec/spec';
import { cliPath } from '../ipam/cli-runner';

/** Three `strait controller` processes on one run dir, the test standing in for the agents' heartbeats. */
const clusters = [
  { clusterId: 'cluster-a', podCIDR: '10.0.0.0/16', externalCIDR: '10.200.0.0/24', peers: ['cluster-b'], node: 'a-gw', pods: '10.0.0.0/24' },
  { clusterId: 'cluster-b', podCIDR: '10.0.0.0/16', externalCIDR: '10.200.0.0/24', peers: ['cluster-a', 'cluster-c'], node: 'b-gw', pods: '10.0.0.0/24' },
  { clusterId: 'cluster-c', podCIDR: '10.2.0.0/20', externalCIDR: '10.201.0.0/25', peers: ['cluster-b'], node: 'c-gw', pods: '10.2.0.0/24' },
];

function exited(child: ChildProcess): Promise<number | null> {
  return new Promise((resolve) => {
    if (child.exitCode !== null) resolve(child.exitCode);
    else child.once('exit', (code) => resolve(code));
  });
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
      writeFileSync(join(runDir, c.clusterId, 'status', `${c.node}.json`), JSON.stringify({ node: c.node, ready: true, time: new Date().toISOString(), dataplane: 'ebpf' }));
      const child = spawn(process.execPath, [cliPath, 'controller', '--config', path], { stdio: ['ignore', 'ignore', 'pipe'] });
      logs.set(c.clusterId, '');
      child.stderr!.on('data', (chunk: Buffer) => logs.set(c.clusterId, logs.get(c.clusterId) + chunk.toString()));
      children.push(child);
    }

    const expected: Record<string, string[]> = { 'cluster-a': ['cluster-b'], 'cluster-b': ['cluster-a', 'cluster-c'], 'cluster-c': ['cluster-b'] };
    const peersIn = (c: (typeof clusters)[number]): string[] | undefined => {
      const path = join(runDir, c.clusterId, 'nodes', `${c.node}.json`);
      if (!existsSync(path)) return undefined;
      return (JSON.parse(readFileSync(path, 'utf8')) as NodeDataplaneSpec).peers.map((p) => p.clusterId);
    };
    const deadline = Date.now() + 10_000;
    while (!clusters.every((c) => JSON.stringify(peersIn(c)) === JSON.stringify(expected[c.clusterId]))) {
      assert.ok(Date.now() < deadline, `node specs did not get their peers within 10 s: ${clusters.map((c) => `${c.clusterId}: ${JSON.stringify(peersIn(c))}`).join(', ')}\n${[...logs.values()].join('')}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }

    const hub = JSON.parse(readFileSync(join(runDir, 'cluster-b', 'nodes', 'b-gw.json'), 'utf8')) as NodeDataplaneSpec;
    assert.deepEqual(hub.peers.find((p) => p.clusterId === 'cluster-a')!.endpoint, { address: '203.0.113.1', port: 4789 });
    assert.equal(hub.node.role, 'gateway');
    const status = JSON.parse(readFileSync(join(runDir, 'cluster-b', 'controller.json'), 'utf8')) as { gateway: string; readyNodes: string[] };
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
      const lines = logs.get(c.clusterId)!.trim().split('\n').map((line) => JSON.parse(line) as { msg: string; name: string });
      assert.ok(lines.every((line) => line.name === 'controller'), 'pino JSON lines from the controller logger');
      for (const msg of ['controller started', 'gateway elected', 'peer ready', 'node spec written', 'controller stopped']) {
        assert.ok(lines.some((line) => line.msg === msg), `${c.clusterId} logged "${msg}"`);
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
      writeFileSync(join(runDir, 'cluster-a', 'status', `${node}.json`), JSON.stringify({ node, ready: true, time: new Date(Date.now() + 60_000).toISOString() }));
    }
    writeFileSync(join(runDir, 'cluster-a', 'controller.json'), JSON.stringify({ clusterId: 'cluster-a', gateway: 'a-2', peers: [], readyNodes: [], time: new Date().toISOString() }));
    const run = spawnSync(process.execPath, [cliPath, 'controller', '--config', path, '--once'], { encoding: 'utf8' });
    assert.equal(run.status, 0, run.stderr);
    const status = JSON.parse(run.stdout) as { gateway: string; readyNodes: string[]; peers: unknown[] };
    assert.equal(status.gateway, 'a-2', 'a-1 would win a new election (public address), but a-2 is still Ready');
    assert.deepEqual(status.readyNodes, ['a-1', 'a-2']);
    assert.deepEqual(status.peers, []);
  });

  it('refuses a bad configuration with the field and value, exit 1', () => {
    const path = join(dir, 'bad.yaml');
    writeFileSync(path, 'clusterId: cluster-a\npodCIDR: 10.0.0.1/16\nexternalCIDR: 10.200.0.0/24\nnodes: []\n');
    const run = spawnSync(process.execPath, [cliPath, 'controller', '--config', path], { encoding: 'utf8' });
    assert.equal(run.status, 1);
    const error = JSON.parse(run.stderr) as { field: string; value: string; error: string };
    assert.equal(error.field, 'podCIDR');
    assert.equal(error.value, '10.0.0.1/16');
    assert.match(error.error, /did you mean 10\.0\.0\.0\/16/);
  });
});
