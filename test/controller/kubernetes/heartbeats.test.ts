import assert from 'node:assert/strict';
import type { NodeDataplaneStatus } from '../../../src/api/node-dataplane';
import { aliveCandidates, isReady } from '../../../src/controller/election';
import { nodeHeartbeats } from '../../../src/controller/kubernetes/heartbeats';

const t0 = Date.parse('2026-01-01T00:00:00.000Z');
const status = (ready: boolean, gatewayProbes?: NodeDataplaneStatus['gatewayProbes']): NodeDataplaneStatus => ({
  ready,
  time: '2025-01-01T00:00:00.000Z',
  dataplane: 'ebpf',
  specGeneration: 1,
  ...(gatewayProbes === undefined ? {} : { gatewayProbes }),
});

describe('node heartbeats on Kubernetes (pure)', () => {
  it("makes a node Ready while its Node is and its agent said it is ready (a candidate whose agent never ran is not); no Lease, no age: every heartbeat is dated now, whatever the status's own time", () => {
    const nodes = [
      { name: 'gw-ready', nodeReady: true },
      { name: 'gw-no-status', nodeReady: true },
      { name: 'gw-node-down', nodeReady: false },
      { name: 'gw-agent-failing', nodeReady: true },
      { name: 'w-ready', nodeReady: true },
      { name: 'w-no-status', nodeReady: true },
      { name: 'w-node-down', nodeReady: false },
      { name: 'w-agent-failing', nodeReady: true },
    ];
    const now = t0 + 10_000;
    const statuses = new Map<string, NodeDataplaneStatus | undefined>([
      ['gw-ready', status(true)],
      ['gw-node-down', status(true)],
      ['gw-agent-failing', status(false)],
      ['w-ready', status(true)],
      ['w-node-down', status(true)],
      ['w-agent-failing', status(false)],
    ]);
    const beats = nodeHeartbeats(nodes, statuses, now);
    assert.deepEqual(
      [...beats.keys()],
      nodes.map((n) => n.name),
      'one heartbeat per node, none left out',
    );
    for (const beat of beats.values()) assert.equal(beat.time, '2026-01-01T00:00:10.000Z');
    const ready = nodes.map((n) => n.name).filter((n) => isReady(beats.get(n), now, 1.5));
    assert.deepEqual(ready, ['gw-ready', 'w-ready']);
    assert.deepEqual(
      nodes.map((n) => n.name).filter((n) => isReady(beats.get(n), now + 60_000, 1.5)),
      [],
      'a heartbeat is as old as the reconcile that made it: the next one dates its own',
    );
  });

  it("carries each candidate's reported probes to the election: a candidate probed down is not alive though its Node and agent say Ready, one probed up is alive though its agent is gone, not when its agent says it is not ready", () => {
    const nodes = [
      { name: 'gw-a', nodeReady: true },
      { name: 'gw-b', nodeReady: true },
      { name: 'gw-c', nodeReady: true },
      { name: 'w-1', nodeReady: true },
    ];
    const statuses = new Map<string, NodeDataplaneStatus | undefined>([
      [
        'gw-a',
        status(true, [
          { name: 'gw-b', verdict: 'down' },
          { name: 'gw-c', verdict: 'up' },
        ]),
      ],
      // gw-c's agent last said its apply failed: its datapath answers gw-a's probes, but by what spec?
      ['gw-c', status(false, [{ name: 'gw-a', verdict: 'up' }])],
      ['gw-b', status(true)],
      ['w-1', status(true)],
    ]);
    const now = t0;
    const beats = nodeHeartbeats(nodes, statuses, now);
    assert.deepEqual(beats.get('gw-a')!.gatewayProbes, [
      { name: 'gw-b', verdict: 'down' },
      { name: 'gw-c', verdict: 'up' },
    ]);
    assert.deepEqual(beats.get('gw-c')!.gatewayProbes, [{ name: 'gw-a', verdict: 'up' }]);
    assert.equal('gatewayProbes' in beats.get('gw-b')!, false, 'none reported, none carried');
    assert.equal('gatewayProbes' in beats.get('w-1')!, false);
    const candidates = nodes.filter((n) => n.name.startsWith('gw-')).map((n) => ({ name: n.name }));
    assert.deepEqual(aliveCandidates(candidates, beats, now, 1.5), ['gw-a']);
    // Its agent gone (no status change since it said ready), the probes carry it: alive.
    statuses.set('gw-c', status(true, [{ name: 'gw-a', verdict: 'up' }]));
    assert.deepEqual(aliveCandidates(candidates, nodeHeartbeats(nodes, statuses, now), now, 1.5), ['gw-a', 'gw-c']);
  });
});
