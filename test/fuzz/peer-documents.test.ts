/**
 * Fuzz: the documents a peer cluster writes into our run directory, its NetworkConfig for us
 * (`exchange/<peer>/<us>.spec.json`) and its answer on ours (`exchange/<us>/<peer>.status.json`), read
 * by our real controller (runController on a run directory on disk). A peer is another team's cluster:
 * whatever it writes, the answer is a peering that is ready, or refused with the field and the value
 * named, and never a frozen node: every node spec the controller writes is taken by the agents (the
 * spec reader and both dataplanes' checks), and the other peering stays exactly as it was.
 */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import pino from 'pino';
import { readControllerConfig } from '../../src/api/controller-config';
import { readControllerStatus } from '../../src/api/controller-status';
import { readNodeDataplane } from '../../src/api/node-dataplane';
import { runDirPaths } from '../../src/api/run-dir';
import { runController } from '../../src/controller/files/controller';
import { requireOneUnderlayFamily } from '../../src/nodespec/ip-family';
import { threeClusters } from '../controller/three-clusters';
import { type Verdict, accepted, documentTexts, fieldPattern, fuzzSurface, refused, trickyStrings } from '../support/fuzz';

type Input = { file: 'spec' | 'status'; text: string };

const silent = pino({ level: 'silent' });

describe('fuzz: documents from a peer, read by our controller', function () {
  this.timeout(120_000);
  let runDir: string;
  const good: Record<Input['file'], string> = { spec: '', status: '' };
  const paths = { spec: runDirPaths.spec('cluster-c', 'cluster-b'), status: runDirPaths.status('cluster-b', 'cluster-c') };

  const beat = () => {
    for (const [id, config] of Object.entries(threeClusters)) {
      mkdirSync(join(runDir, id, 'status'), { recursive: true });
      for (const node of config.nodes as { name: string }[]) {
        writeFileSync(
          join(runDir, runDirPaths.heartbeat(id, node.name)),
          JSON.stringify({ ready: true, time: new Date().toISOString(), dataplane: 'ebpf', specGeneration: 1 }),
        );
      }
    }
  };
  const round = async (id: string) => {
    await runController(readControllerConfig({ ...threeClusters[id], runDir }), { once: true, log: silent });
  };
  const read = (path: string) => readFileSync(join(runDir, path), 'utf8');
  const status = () => readControllerStatus(JSON.parse(read(runDirPaths.controllerStatus('cluster-b'))));
  /** B's node specs, each as every agent reads it; throws when an agent would refuse one. */
  const nodeSpecs = () =>
    readdirSync(join(runDir, 'cluster-b', 'nodes'))
      .filter((n) => n.endsWith('.json'))
      .map((name) => {
        const { spec } = readNodeDataplane(JSON.parse(read(`cluster-b/nodes/${name}`)));
        requireOneUnderlayFamily(spec);
        return spec;
      });
  /** The peering with A as B's nodes carry it: what nothing C writes may change. */
  const peeringWithA = () => ({
    state: status().peers.find((p) => p.clusterId === 'cluster-a'),
    tunnels: nodeSpecs().map((s) =>
      JSON.stringify(
        s.peers.find((p) => p.clusterId === 'cluster-a'),
        (_, v) => (typeof v === 'bigint' ? String(v) : v),
      ),
    ),
  });

  before(async () => {
    runDir = mkdtempSync(join(tmpdir(), 'strait-fuzz-peer-'));
    for (let i = 0; i < 4; i++) {
      beat();
      for (const id of Object.keys(threeClusters)) await round(id);
    }
    assert.deepEqual(
      status().peers.map((p) => p.state),
      ['ready', 'ready'],
      'B converged with A and C',
    );
    good.spec = read(paths.spec);
    good.status = read(paths.status);
  });
  after(() => rmSync(runDir, { recursive: true, force: true }));

  const feed = async ({ file, text }: Input): Promise<Verdict> => {
    const withA = peeringWithA();
    beat();
    writeFileSync(join(runDir, paths[file]), text);
    try {
      await round('cluster-b');
      // Whatever C wrote: the agents take every spec, and the peering with A is untouched.
      assert.deepEqual(peeringWithA(), withA, `C's ${file} changed the peering with A`);
      const c = status().peers.find((p) => p.clusterId === 'cluster-c')!;
      if (c.reason !== undefined) return refused(c.reason);
      assert.ok(c.state !== 'refused', 'refused without a reason');
      return accepted;
    } finally {
      writeFileSync(join(runDir, paths[file]), good[file]);
      beat();
      await round('cluster-b');
    }
  };

  fuzzSurface<Input>(() => {
    const specDoc = JSON.parse(good.spec) as Record<string, unknown>;
    const statusDoc = JSON.parse(good.status) as Record<string, unknown>;
    return {
      name: 'documents from a peer',
      inputs: fc.oneof(
        documentTexts(specDoc).map((text): Input => ({ file: 'spec', text })),
        documentTexts(statusDoc).map((text): Input => ({ file: 'status', text })),
        // The spec's addresses and networks replaced by every special kind.
        fc
          .tuple(fc.constantFrom('podCIDR', 'externalCIDR'), fc.constantFrom(...trickyStrings))
          .map(([field, value]): Input => ({ file: 'spec', text: JSON.stringify({ ...specDoc, [field]: value }) })),
        fc
          .constantFrom(...trickyStrings)
          .map((address): Input => ({ file: 'spec', text: JSON.stringify({ ...specDoc, endpoint: { address, port: 4789 } }) })),
      ),
      cases: [
        // Issue 24: each of these went into every node's spec, and every agent refused it.
        { file: 'spec', text: JSON.stringify({ ...specDoc, podCIDR: 'fd00::/48' }) },
        { file: 'spec', text: JSON.stringify({ ...specDoc, externalCIDR: 'fd00:1::/64' }) },
        { file: 'spec', text: JSON.stringify({ ...specDoc, endpoint: { address: '2001:db8::1', port: 4789 } }) },
        { file: 'spec', text: JSON.stringify({ ...specDoc, endpoint: { address: '0.0.0.0', port: 4789 } }) },
        { file: 'status', text: JSON.stringify({ ...statusDoc, remappedPodCIDR: 'fd00::/16' }) },
        { file: 'status', text: JSON.stringify({ ...statusDoc, remappedPodCIDR: '127.0.0.0/16' }) },
        { file: 'spec', text: good.spec.slice(0, 40) },
      ],
      feed,
      // "NetworkConfig from cluster-c: spec.podCIDR: ... (got ...)", or the file that cannot be read.
      clear: (message) =>
        assert.match(
          message,
          new RegExp(
            `^NetworkConfig from cluster-c: (spec|status)${fieldPattern}: .*\\(got .*\\)|^exchange/[\\w./-]+\\.json: |^status from cluster-c on our NetworkConfig: ${fieldPattern}: `,
          ),
          `names no field: ${message}`,
        ),
      state: () => peeringWithA(),
      timeoutMs: 5000,
    };
  });
});
