/** A kernel-fallback gateway that cannot set up an encrypted peering: a real `strait agent` process. */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ip, run } from '../../src/kernel/command';
import { createNetns, deleteNetns } from '../../src/kernel/netns';
import { ipsecHubDocument } from '../dataplane/kernel/ipsec-hub';
import { specFileText } from '../support/node-specs';
import { kernelFeatures, requireKernel, requireRoot, uniqueName } from '../support/kernel';
import { noProbeCache } from '../support/agent-flags';
import { noMetricsServer } from '../support/metrics';
import { waitFor } from '../support/wait';

const cliPath = join(__dirname, '../../src/cli/main.js');

describe('strait agent --dataplane kernel, an encrypted peer on a kernel without ESP (real process)', function () {
  requireRoot(this);
  let ns: string;
  let dir: string;
  let pinRoot: string;
  let child: ChildProcess | undefined;
  let stderr: string;

  beforeEach(() => {
    ns = uniqueName('strait-test-gw');
    pinRoot = join('/sys/fs/bpf', uniqueName('strait-test'));
    dir = mkdtempSync(join(tmpdir(), 'strait-blocked-'));
    stderr = '';
    child = undefined;
    createNetns(ns);
    // As on any node: the kernel refuses onlink next hops while lo is down.
    ip(['link', 'set', 'lo', 'up'], ns);
  });
  afterEach(() => {
    try {
      if (child && child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    } finally {
      // Everything the agent programmed lives in the namespace; it had no pins to leave (no eBPF).
      deleteNetns(ns);
      rmSync(pinRoot, { recursive: true, force: true });
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('programs the rest of the node, gives the peer no tunnel, and reports ready: false with the reason in its heartbeat @no-esp', async function () {
    await requireKernel(this, { lacks: ['esp'] });
    // The kernel's two reasons, as `strait probe --reasons` words them on Linux 6.x; the second only where
    // xfrm interfaces are missing too (this machine's kernel).
    const reasons = [
      'esp (ENOSYS (Function not implemented): Requested AEAD algorithm not found)',
      ...((await kernelFeatures()).features.xfrmInterface
        ? []
        : ['xfrmInterface (EOPNOTSUPP (Operation not supported): Unknown device type)']),
    ];

    // Hub B's gateway: A encrypted, C plain VXLAN. A secret is there, so the kernel is the only obstacle.
    mkdirSync(join(dir, 'nodes'));
    mkdirSync(join(dir, 'secrets'));
    writeFileSync(join(dir, 'secrets', 'cluster-a'), Buffer.alloc(32, 0x3c).toString('base64'), { mode: 0o600 });
    writeFileSync(join(dir, 'nodes', 'b-gw.json'), specFileText(ipsecHubDocument(['cluster-a'])));
    const statusPath = join(dir, 'status', 'b-gw.json');
    child = spawn(
      process.execPath,
      [
        cliPath,
        'agent',
        '--dataplane',
        'kernel',
        '--spec',
        join(dir, 'nodes', 'b-gw.json'),
        '--status',
        statusPath,
        '--node',
        'b-gw',
        '--netns',
        ns,
        '--pin-root',
        pinRoot,
        '--ipsec-secrets',
        join(dir, 'secrets'),
        '--interval',
        '0.2',
        ...noMetricsServer,
        ...noProbeCache,
      ],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
    child.stderr!.on('data', (chunk) => (stderr += String(chunk)));
    const exited = new Promise<{ code: number | null; signal: string | null }>((resolve) =>
      child!.on('exit', (code, signal) => resolve({ code, signal })),
    );
    const heartbeat = () => JSON.parse(readFileSync(statusPath, 'utf8')) as Record<string, unknown>;

    // The first heartbeat is written after the first apply.
    await waitFor(
      'the first heartbeat',
      () => heartbeat().dataplane === 'kernel',
      15_000,
      () => stderr,
    );
    const first = heartbeat();
    assert.deepEqual(first, {
      ready: false,
      time: first.time,
      dataplane: 'kernel',
      specGeneration: 0,
      error: `blocked peer cluster-a: this kernel cannot run IPsec peerings: ${reasons.join(', ')}`,
      conditions: ['Applied', 'Ready'].map((type) => ({
        type,
        status: 'False',
        reason: 'ApplyFailed',
        message: `blocked peer cluster-a: this kernel cannot run IPsec peerings: ${reasons.join(', ')}`,
        lastTransitionTime: (first.conditions as { lastTransitionTime: string }[])[0]!.lastTransitionTime,
      })),
    });

    // Everything else is programmed: the overlay, C's tunnel, its route and rule, the NAT; A has no tunnel,
    // only the backstop, and no xfrm entry.
    const links = run(['ip', '-n', ns, '-br', 'link'])
      .split('\n')
      .map((l) => l.split(/[\s@]+/)[0])
      .filter(Boolean)
      .sort();
    assert.deepEqual(links, ['lo', 'stp00000009', 'strait.vxlan']);
    const lines = (text: string) =>
      text
        .split('\n')
        .map((l) => l.trim())
        .filter(Boolean)
        .sort();
    assert.deepEqual(lines(ip(['route', 'show', 'table', '18952'], ns)), [
      '10.0.1.0/24 via 192.0.2.12 dev strait.vxlan proto 252 onlink',
      '10.2.0.0/20 via 203.0.113.3 dev stp00000009 proto 252 onlink',
      '10.70.0.0/24 via 203.0.113.3 dev stp00000009 proto 252 onlink',
      'unreachable 10.1.0.0/16 proto 252 metric 4294967295',
      'unreachable 10.2.0.0/20 proto 252 metric 4294967295',
      'unreachable 10.60.0.0/24 proto 252 metric 4294967295',
      'unreachable 10.70.0.0/24 proto 252 metric 4294967295',
    ]);
    assert.deepEqual(
      lines(ip(['rule'], ns)).filter((l) => /^1895\d:/.test(l)),
      [
        '18952:\tfrom all to 10.1.0.0/16 lookup 18952',
        '18952:\tfrom all to 10.2.0.0/20 lookup 18952',
        '18952:\tfrom all to 10.60.0.0/24 lookup 18952',
        '18952:\tfrom all to 10.70.0.0/24 lookup 18952',
        '18953:\tfrom all iif stp00000009 lookup 18952',
      ],
    );
    const nat = run(['ip', 'netns', 'exec', ns, 'nft', 'list', 'table', 'ip', 'strait']);
    assert.match(
      nat,
      /oifname "stp00000009" snat ip prefix to ip saddr map \{ 10\.0\.0\.0\/16 : 192\.168\.0\.0\/16, 10\.50\.0\.0\/24 : 10\.90\.0\.0\/24 \}/,
    );
    assert.equal(ip(['xfrm', 'state'], ns).trim(), '');
    assert.equal(ip(['xfrm', 'policy'], ns).trim(), '');

    // It stays so at every reconcile, and the reason is logged once, not per tick.
    await waitFor(
      'a later heartbeat',
      () => heartbeat().time !== first.time,
      5_000,
      () => stderr,
    );
    assert.deepEqual({ ...heartbeat(), time: first.time }, first);
    const failures = stderr
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { msg: string; error?: string })
      .filter((l) => l.msg === 'applying the spec failed');
    assert.deepEqual(
      failures.map((l) => l.error),
      [first.error],
    );

    child.kill('SIGTERM');
    assert.deepEqual(await exited, { code: 0, signal: null }, stderr);
  });
});
