/** `strait agent` as the lab runs it: a real process against a real node namespace. */
import assert from 'node:assert/strict';
import { type ChildProcess, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { mainRoutes as readMainRoutes } from '../support/routes';
import { type BpfMap, type CodecValue, ifIndex, queryTcx } from '../../src/native';
import * as layout from '../../src/dataplane/ebpf/layout';
import { findAttachments } from '../../src/dataplane/ebpf/attachments';
import { ip } from '../../src/kernel/command';
import { netnsPath } from '../../src/kernel/netns';
import type { NodeDataplaneSpecDocument } from '../../src/api/node-dataplane';
import { nextReconcile } from '../support/heartbeat';
import { requireRoot } from '../support/kernel';
import { fileModeArgs, spawnAgent, straitCliPath as cliPath } from '../support/agent-process';
import { noMetricsServer } from '../support/metrics';
import { waitFor } from '../support/wait';
import { createAgentNode, removeAgentNode } from './agent-node';
import { nodeSpecDocument, peerB, peerC, specFileText } from '../support/node-specs';
import {
  attachments as attachmentsOf,
  liveAttachments as liveAttachmentsOf,
  peerIds as peerIdsOf,
  withMap,
  withPeers as withPeersOf,
} from './node-view';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('strait agent (real process, real kernel)', function () {
  requireRoot(this);
  let node: string;
  let pod: string;
  let pinRoot: string;
  let dir: string;
  let child: ChildProcess | undefined;
  let stderr: string;

  beforeEach(() => {
    ({ node, pod, pinRoot, dir } = createAgentNode('strait-agent-'));
    stderr = '';
  });
  afterEach(() => removeAgentNode({ node, pod, pinRoot, dir }, child));

  const specPath = () => join(dir, 'nodes', 'n1.json');
  const statusPath = () => join(dir, 'status', 'n1.json');
  const writeSpec = (spec: NodeDataplaneSpecDocument | string) => {
    const text = typeof spec === 'string' ? spec : specFileText(spec);
    writeFileSync(join(dir, 'nodes', '.n1.json.tmp'), text);
    renameSync(join(dir, 'nodes', '.n1.json.tmp'), specPath());
  };
  const heartbeat = () =>
    JSON.parse(readFileSync(statusPath(), 'utf8')) as {
      node: string;
      ready: boolean;
      time: string;
      dataplane: string;
      specGeneration: number;
      validFor?: number;
    };
  const attachments = () => attachmentsOf(pinRoot, node);
  const withPeers = <T>(use: (peers: BpfMap<number, CodecValue<typeof layout.peer>>) => T): T => withPeersOf(pinRoot, use);
  const withConfig = <T>(use: (config: BpfMap<number, CodecValue<typeof layout.config>>) => T): T =>
    withMap(pinRoot, layout.maps.config, use);
  const peerIds = () => peerIdsOf(pinRoot);
  const liveAttachments = () => liveAttachmentsOf(pinRoot, node);
  const logOf = () => `agent log:\n${stderr}`;

  /**
   * Starts the agent on the spec file; resolves with its exit code once its whole log is read. By
   * default every reconcile is a resync (reads everything), so a change by hand is repaired at the next.
   */
  const startAgent = (intervalSeconds: string, resyncSeconds = '0.001', extra: string[] = []): Promise<number | null> => {
    const files = { spec: specPath(), status: statusPath(), pinRoot, netns: node };
    const started = spawnAgent(
      [...fileModeArgs(files), '--interval', intervalSeconds, '--resync-interval', resyncSeconds, ...noMetricsServer, ...extra],
      (text) => (stderr += text),
    );
    child = started.child;
    return started.exited;
  };
  const exitCode = (exited: Promise<number | null>) => Promise.race([exited, sleep(10_000).then(() => 'still running')]);

  it('applies the spec, follows its changes, repairs a map entry deleted by hand, attaches a new pod, stops on SIGTERM leaving the datapath, and --cleanup removes it', async () => {
    mkdirSync(join(dir, 'nodes'));
    writeSpec(nodeSpecDocument([peerB]));
    const exited = startAgent('0.2');

    await waitFor('a ready heartbeat', () => heartbeat().ready);
    await waitFor(
      'the attachments',
      () => attachments().join() === 'p-x:strait_from_pod,strait0:strait_from_overlay,strait0:strait_to_overlay',
    );
    const first = heartbeat();
    assert.deepEqual(first, { ...first, dataplane: 'ebpf', specGeneration: 1 });
    await waitFor('a fresh heartbeat every interval', () => heartbeat().time !== first.time, 2_000);
    assert.deepEqual(peerIds(), [5]);
    assert.deepEqual(
      readMainRoutes(node)
        .filter((r) => r.dev === 'strait0')
        .map((r) => `${r.dst} ${r.protocol}`)
        .sort(),
      ['10.1.0.0/16 252', '10.60.0.0/24 252'],
    );

    // A new peer: the watcher (or the poll) applies it.
    writeSpec(nodeSpecDocument([peerB, peerC]));
    await waitFor('peer c in strait_peers', () => peerIds().join() === '5,7');
    await waitFor('specGeneration 2', () => heartbeat().specGeneration === 2);
    assert.equal(withPeers((m) => m.lookup(7))?.endpoint, '203.0.113.3');
    assert.ok(readMainRoutes(node).some((r) => r.dst === '10.2.0.0/20' && r.dev === 'strait0'));

    // Drift: an entry deleted by hand is back after the next reconcile.
    assert.equal(
      withPeers((m) => m.delete(5)),
      true,
    );
    await nextReconcile(statusPath(), 10_000, logOf);
    assert.deepEqual(peerIds(), [5, 7], 'peer b back in strait_peers');
    // The log line reaches us through a pipe, possibly after the heartbeat file.
    await waitFor('the repair in the log', () => stderr.includes('node changed since the last apply'), 10_000, logOf);

    // A new pod: its interface gets the program at the next reconcile.
    ip(['link', 'add', 'p-y', 'type', 'veth', 'peer', 'name', 'eth1', 'netns', pod], node);
    await nextReconcile(statusPath(), 10_000, logOf);
    assert.ok(attachments().includes('p-y:strait_from_pod'), 'the new pod attached');

    // A half-written file is not applied: the maps keep the last good spec, the node stays ready.
    writeSpec(specFileText(nodeSpecDocument([peerB])).slice(0, 150));
    await waitFor('the rejection in the log', () => stderr.includes('spec rejected'));
    await sleep(600);
    assert.deepEqual(peerIds(), [5, 7]);
    assert.equal(heartbeat().ready, true);
    assert.equal(heartbeat().specGeneration, 2);

    child!.kill('SIGTERM');
    assert.equal(await exitCode(exited), 0, logOf());
    assert.deepEqual(
      attachments(),
      ['p-x:strait_from_pod', 'p-y:strait_from_pod', 'strait0:strait_from_overlay', 'strait0:strait_to_overlay'],
      'the datapath stays in place',
    );
    assert.deepEqual(peerIds(), [5, 7]);
    const last = heartbeat();
    assert.equal(last.ready, true, 'a stop is not a NotReady report: the heartbeat ages out instead');
    assert.equal(last.validFor, 5, 'the last heartbeat holds the node Ready for 5 s, the time a restart may take');
    assert.ok(Date.parse(last.time) > Date.parse(first.time));
    await sleep(600);
    assert.equal(heartbeat().time, last.time, 'no heartbeat after the stop');
    for (const line of stderr.trim().split('\n')) assert.doesNotThrow(() => JSON.parse(line), `a pino line: ${line}`);

    const cleanup = spawnSync(process.execPath, [cliPath, 'agent', '--cleanup', '--pin-root', pinRoot, '--netns', node], {
      encoding: 'utf8',
    });
    assert.equal(cleanup.status, 0, cleanup.stderr);
    const summary = JSON.parse(cleanup.stdout);
    assert.equal(summary.detached.length, 4);
    assert.equal(summary.overlayDeviceRemoved, true);
    assert.deepEqual(summary.routesRemoved, ['10.1.0.0/16', '10.2.0.0/20', '10.60.0.0/24', '10.70.0.0/26']);
    assert.deepEqual(findAttachments(pinRoot, netnsPath(node)), []);
    assert.equal(existsSync(pinRoot), false);
    assert.deepEqual(readMainRoutes(node), []);
  });

  it('probes the kernel at its first start of the boot, and at the next start reads the report it kept (--probe-cache)', async () => {
    mkdirSync(join(dir, 'nodes'));
    writeSpec(nodeSpecDocument([peerB]));
    const cache = join(dir, 'run', 'probe-cache.json');
    /** One agent start: how it got the kernel's features, from its start line; stopped once ready. */
    const probeOfOneStart = async () => {
      stderr = '';
      const exited = startAgent('0.2', '0.001', ['--probe-cache', cache]);
      await waitFor('the first apply', () => stderr.includes('"msg":"spec applied"'), 10_000, logOf);
      child!.kill('SIGTERM');
      assert.equal(await exitCode(exited), 0, logOf());
      return (JSON.parse(stderr.split('\n').find((l) => l.includes('"msg":"agent started"'))!) as { probe: string }).probe;
    };
    assert.deepEqual([await probeOfOneStart(), await probeOfOneStart()], ['probed', 'cached']);
    assert.equal(JSON.parse(readFileSync(cache, 'utf8')).report.features.bpf, true);
  });

  it('applies a change of the spec file at once through the watcher, long before the next poll', async () => {
    mkdirSync(join(dir, 'nodes'));
    writeSpec(nodeSpecDocument([peerB]));
    const exited = startAgent('30');
    await waitFor('a ready heartbeat', () => heartbeat().ready);
    writeSpec(nodeSpecDocument([peerB, peerC]));
    await waitFor('peer c in strait_peers', () => peerIds().join() === '5,7', 3_000);
    await waitFor('specGeneration 2', () => heartbeat().specGeneration === 2, 1_000);
    child!.kill('SIGTERM');
    assert.equal(await exitCode(exited), 0, logOf());
  });

  it('repairs a map entry deleted by hand at the --resync-interval, not at the reconciles in between', async () => {
    mkdirSync(join(dir, 'nodes'));
    writeSpec(nodeSpecDocument([peerB]));
    const exited = startAgent('0.2', '4');
    await waitFor('a ready heartbeat', () => heartbeat().ready, 10_000, logOf);
    assert.equal(
      withPeers((m) => m.delete(5)),
      true,
    );
    await nextReconcile(statusPath(), 10_000, logOf);
    await nextReconcile(statusPath(), 10_000, logOf);
    assert.deepEqual(peerIds(), [], 'reconciles with an unchanged spec read no map');
    await waitFor('peer b back at the resync', () => peerIds().join() === '5', 10_000, logOf);
    child!.kill('SIGTERM');
    assert.equal(await exitCode(exited), 0, logOf());
  });

  it('programs a new pod interface on its netlink link event, with no reconcile in between, and leaves other new links alone', async () => {
    mkdirSync(join(dir, 'nodes'));
    writeSpec(nodeSpecDocument([peerB]));
    // A minute between reconciles: within this test only the link event can attach anything.
    const exited = startAgent('60');
    await waitFor('a ready heartbeat', () => heartbeat().ready, 10_000, logOf);
    await waitFor(
      'the attachments',
      () => attachments().join() === 'p-x:strait_from_pod,strait0:strait_from_overlay,strait0:strait_to_overlay',
      10_000,
      logOf,
    );
    const { time } = heartbeat();
    ip(['link', 'add', 'p-y', 'type', 'veth', 'peer', 'name', 'eth1', 'netns', pod], node);
    // Created under another name, then renamed: the rename is the event that makes it a pod interface.
    ip(['link', 'add', 'tmp-z', 'type', 'veth', 'peer', 'name', 'eth2', 'netns', pod], node);
    ip(['link', 'set', 'tmp-z', 'name', 'p-z'], node);
    ip(['link', 'add', 'q-0', 'type', 'veth', 'peer', 'name', 'eth3', 'netns', pod], node);
    await waitFor(
      'p-y and p-z attached',
      () =>
        liveAttachments().join() ===
        'p-x:strait_from_pod,p-y:strait_from_pod,p-z:strait_from_pod,strait0:strait_from_overlay,strait0:strait_to_overlay',
      10_000,
      logOf,
    );
    assert.equal(heartbeat().time, time, 'no reconcile ran: the heartbeat is the one written at start');
    await waitFor('the log lines', () => (stderr.match(/pod interface programmed/g) ?? []).length === 2, 10_000, logOf);
    const programmed = stderr
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { msg: string; interface?: string; change?: string })
      .filter((l) => l.msg === 'pod interface programmed');
    assert.deepEqual(
      programmed.map((l) => `${l.interface}:${l.change}`),
      ['p-y:attached', 'p-z:attached'],
    );
    child!.kill('SIGTERM');
    assert.equal(await exitCode(exited), 0, logOf());
  });

  it('puts back at the next reconcile the tcx attachments detached by hand, and strait0 deleted by hand with its program', async () => {
    mkdirSync(join(dir, 'nodes'));
    writeSpec(nodeSpecDocument([peerB]));
    const exited = startAgent('0.2');
    const attached = ['p-x:strait_from_pod', 'strait0:strait_from_overlay', 'strait0:strait_to_overlay'];
    await waitFor('a ready heartbeat', () => heartbeat().ready, 10_000, logOf);
    await waitFor('the attachments', () => liveAttachments().join() === attached.join(), 10_000, logOf);

    // bpftool link detach: the link stays pinned but runs nowhere until the agent attaches again.
    for (const pin of ['ingress_p-x', 'ingress_strait0', 'egress_strait0']) {
      const link = queryTcx(join(pinRoot, 'links', pin))!;
      const detach = spawnSync('bpftool', ['link', 'detach', 'id', String(link.id)], { encoding: 'utf8' });
      assert.equal(detach.status, 0, detach.stderr);
    }
    assert.deepEqual(liveAttachments(), [], 'bpftool detached every link');
    await nextReconcile(statusPath(), 10_000, logOf);
    assert.deepEqual(liveAttachments(), attached, 'attached again');

    // Deleting the device takes its attachment and the ifindex the programs redirect to with it.
    const before = ifIndex('strait0', netnsPath(node));
    ip(['link', 'del', 'strait0'], node);
    await nextReconcile(statusPath(), 10_000, logOf);
    const after = ifIndex('strait0', netnsPath(node));
    assert.notEqual(after, before, 'a new strait0');
    assert.deepEqual(liveAttachments(), attached, 'the new strait0 has its programs');
    assert.equal(withConfig((m) => m.lookup(layout.CONFIG_KEY))?.overlayIfindex, after, 'strait_config names the new strait0');
    assert.equal(heartbeat().ready, true);

    child!.kill('SIGTERM');
    assert.equal(await exitCode(exited), 0, logOf());
  });

  it('stops on SIGINT with exit code 0, leaving the datapath in place', async () => {
    mkdirSync(join(dir, 'nodes'));
    writeSpec(nodeSpecDocument([peerB]));
    const exited = startAgent('0.2');
    await waitFor('a ready heartbeat', () => heartbeat().ready, 10_000, logOf);
    await waitFor('the attachments', () => liveAttachments().length === 3, 10_000, logOf);
    child!.kill('SIGINT');
    assert.equal(await exitCode(exited), 0, logOf());
    assert.match(stderr, /"signal":"SIGINT"/);
    assert.deepEqual(
      liveAttachments(),
      ['p-x:strait_from_pod', 'strait0:strait_from_overlay', 'strait0:strait_to_overlay'],
      'the programs stay attached',
    );
    assert.deepEqual(peerIds(), [5], 'the maps stay pinned and filled');
  });

  it('refuses to start on a bad flag before touching the node', () => {
    const run = spawnSync(
      process.execPath,
      [cliPath, 'agent', '--spec', specPath(), '--pin-root', pinRoot, '--netns', node, '--interval', '-0.5'],
      { encoding: 'utf8' },
    );
    assert.equal(run.status, 1);
    assert.deepEqual(JSON.parse(run.stderr), {
      error: '--interval: must be a number of seconds greater than 0, like 1 or 0.2 (got "-0.5")',
      field: '--interval',
      value: '-0.5',
    });
    assert.equal(existsSync(pinRoot), false);
  });
});
