/**
 * Fuzz: a node's NodeDataplane spec, as a running agent (a real process on the eBPF datapath, in a
 * namespace of its own) reads it from its spec file. Every spec is applied, or rejected with the field
 * and the value in the agent's status (`error`), and a rejected one changes nothing in the kernel: the
 * maps as `strait inspect` reads them, the attachments and the routes are those of the last good spec.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import fc from 'fast-check';
import { inspectNode } from '../../src/dataplane/ebpf/inspect';
import { createAgentNode, removeAgentNode, type AgentNode } from '../agent/agent-node';
import { nodeObject, nodeSpecDocument, peerB, peerC } from '../support/node-specs';
import { attachments } from '../agent/node-view';
import { noProbeCache } from '../support/agent-flags';
import { type Verdict, accepted, documentTexts, fuzzSurface, refused, trickyStrings } from '../support/fuzz';
import { nextReconcile } from '../support/heartbeat';
import { requireRoot } from '../support/kernel';
import { noMetricsServer } from '../support/metrics';
import { mainRoutes } from '../support/routes';
import { waitFor } from '../support/wait';

const cliPath = join(__dirname, '../../src/cli/main.js');
const good = nodeObject(nodeSpecDocument([peerB, peerC]));
const goodText = JSON.stringify(good);

interface Heartbeat {
  ready: boolean;
  error?: string;
  appliedSpec?: string;
}

describe('fuzz: the NodeDataplane spec, read by a running agent', function () {
  this.timeout(120_000);
  requireRoot(this);
  let node: AgentNode;
  let agent: ChildProcess | undefined;
  let log = '';
  const specPath = () => join(node.dir, 'nodes', 'n1.json');
  const statusPath = () => join(node.dir, 'status', 'n1.json');
  const heartbeat = () => JSON.parse(readFileSync(statusPath(), 'utf8')) as Heartbeat;
  const writeSpec = (text: string) => {
    writeFileSync(join(node.dir, 'nodes', '.n1.json.tmp'), text);
    renameSync(join(node.dir, 'nodes', '.n1.json.tmp'), specPath());
  };
  /** The node's kernel state as Strait made it. */
  const kernelState = () => ({
    maps: inspectNode(node.pinRoot),
    attachments: attachments(node.pinRoot, node.node),
    routes: mainRoutes(node.node).filter((r) => r.dev === 'strait0'),
  });

  let goodState: ReturnType<typeof kernelState>;
  before(async () => {
    node = createAgentNode('strait-fuzz-spec-');
    mkdirSync(join(node.dir, 'nodes'));
    writeSpec(goodText);
    agent = spawn(
      process.execPath,
      [
        cliPath,
        'agent',
        '--spec',
        specPath(),
        '--pin-root',
        node.pinRoot,
        '--status',
        statusPath(),
        '--netns',
        node.node,
        '--interval',
        '0.05',
        ...noMetricsServer,
        ...noProbeCache,
      ],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
    agent.stderr!.on('data', (chunk: Buffer) => (log = (log + chunk.toString()).slice(-20_000)));
    await waitFor(
      'the agent to apply the good spec',
      () => heartbeat().ready && heartbeat().appliedSpec !== undefined,
      20_000,
      () => log,
    );
    goodState = kernelState();
  });
  after(() => removeAgentNode(node, agent));

  const feed = async (text: string): Promise<Verdict> => {
    writeSpec(text);
    await nextReconcile(statusPath(), 10_000, () => log);
    const beat = heartbeat();
    if (beat.error?.startsWith('spec rejected: ')) {
      assert.equal(beat.ready, true, 'a rejected spec leaves the node ready on the last good one');
      return refused(beat.error.slice('spec rejected: '.length));
    }
    // Taken: it must apply (an accepted spec the dataplane then fails on is a spec that should have been refused).
    assert.equal(beat.ready, true, `an accepted spec failed to apply: ${beat.error}\n${text}`);
    writeSpec(goodText);
    await waitFor(
      'the good spec applied again',
      () => isDeepStrictEqual(kernelState(), goodState),
      10_000,
      () => log,
    );
    return accepted;
  };

  const spec = good.spec as unknown as Record<string, unknown>;
  fuzzSurface(() => ({
    name: 'NodeDataplane spec',
    inputs: fc.oneof(
      { weight: 8, arbitrary: documentTexts(good) },
      {
        weight: 1,
        arbitrary: fc
          .tuple(fc.constantFrom('podCIDR', 'externalCIDR', 'transitAddress'), fc.constantFrom(...trickyStrings))
          .map(([field, value]) => JSON.stringify({ ...good, spec: { ...spec, [field]: value } })),
      },
      {
        weight: 1,
        arbitrary: fc
          .constantFrom(...trickyStrings)
          .map((address) => JSON.stringify({ ...good, spec: { ...spec, peers: [{ ...peerB, endpoint: { address, port: 4789 } }] } })),
      },
    ),
    cases: [
      // Issue 24: a spec the reader took, with a node list no cluster has.
      JSON.stringify({ ...good, spec: { ...spec, nodes: [{ name: 'n1', underlayAddress: '192.0.2.11', podCIDRs: ['10.9.0.0/24'] }] } }),
      JSON.stringify({ ...good, spec: { ...spec, activeGateway: { name: 'elsewhere', underlayAddress: '192.0.2.99' } } }),
      JSON.stringify({ ...good, spec: { ...spec, peers: [{ ...peerB, remotePodCIDR: 'fd00::/48' }] } }),
      goodText.slice(0, goodText.length / 2),
    ],
    feed,
    state: kernelState,
    timeoutMs: 15_000,
  }));
});
