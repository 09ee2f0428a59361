import assert from 'node:assert/strict';
import type { NodeDataplaneStatus } from '../../../src/api/node-dataplane';
import { isReady } from '../../../src/controller/election';
import { nodeHeartbeats } from '../../../src/controller/kubernetes/heartbeats';
import type { Sighting } from '../../../src/controller/sightings';
import { nodeLeaseName } from '../../../src/k8s/names';

const t0 = Date.parse('2026-01-01T00:00:00.000Z');
const status = (ready: boolean): NodeDataplaneStatus => ({ ready, time: '2025-01-01T00:00:00.000Z', dataplane: 'ebpf', specGeneration: 1 });

describe('node heartbeats on Kubernetes (pure)', () => {
  it('names the Lease after the node', () => {
    assert.equal(nodeLeaseName('b-gw'), 'strait-node-b-gw');
  });

  it('makes a candidate Ready only with its Node Ready, its agent not saying otherwise, and a Lease renewal seen; it ages out by the sighting, not by the clock of the node', () => {
    const nodes = [
      { name: 'gw-fresh', gatewayCandidate: true, nodeReady: true },
      { name: 'gw-stale', gatewayCandidate: true, nodeReady: true },
      { name: 'gw-no-lease', gatewayCandidate: true, nodeReady: true },
      { name: 'gw-node-down', gatewayCandidate: true, nodeReady: false },
      { name: 'gw-agent-failing', gatewayCandidate: true, nodeReady: true },
      { name: 'gw-no-status', gatewayCandidate: true, nodeReady: true },
      { name: 'w-ready', gatewayCandidate: false, nodeReady: true },
      { name: 'w-no-status', gatewayCandidate: false, nodeReady: true },
      { name: 'w-node-down', gatewayCandidate: false, nodeReady: false },
    ];
    const now = t0 + 10_000;
    const sightings = new Map<string, Sighting>(
      ['gw-fresh', 'gw-node-down', 'gw-agent-failing', 'gw-no-status'].map((n) => [n, { version: '1', seenAt: now - 200 }]),
    );
    sightings.set('gw-stale', { version: '1', seenAt: now - 1_600 });
    const statuses = new Map<string, NodeDataplaneStatus | undefined>([
      ['gw-fresh', status(true)],
      ['gw-stale', status(true)],
      ['gw-no-lease', status(true)],
      ['gw-node-down', status(true)],
      ['gw-agent-failing', status(false)],
      ['w-ready', status(true)],
      ['w-node-down', status(true)],
    ]);
    const beats = nodeHeartbeats(nodes, sightings, statuses, now);
    const readyAt = (timeout: number) => nodes.map((n) => n.name).filter((n) => isReady(beats.get(n), now, timeout));
    assert.deepEqual(readyAt(1.5), ['gw-fresh', 'gw-no-status', 'w-ready']);
    assert.deepEqual(readyAt(2), ['gw-fresh', 'gw-stale', 'gw-no-status', 'w-ready']);
    assert.equal(beats.get('gw-stale')!.time, '2026-01-01T00:00:08.400Z');
    assert.equal(beats.has('gw-no-lease'), false, 'no sighting: no heartbeat');
  });
});
