/**
 * The lab with mixed dataplanes (src/lab/topologies/mixed.yaml): the hub B on the kernel-route fallback,
 * A and C on the eBPF datapath, so every peering, and hub transit from C through B into A, joins an eBPF
 * gateway and a fallback gateway. Both speak the peering's wire format (per-peering VNI and tunnel MACs,
 * src/nodespec/peer-tunnel.ts): every check must pass. Same setup and cleanup as lab.e2e.test.ts.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { labUp } from '../../src/lab/lab';
import { failureSummary, labStatus, labTest } from '../../src/lab/lab-test';
import { defaultTopologyPath } from '../../src/lab/topology';
import { requireRoot } from '../support/kernel';
import { labSuiteHooks } from '../support/lab-suite';

const runDir = `/run/strait/lab-test-${process.pid}`;
const lines: string[] = [];
const say = (line: string) => lines.push(line);
const mixedTopology = join(defaultTopologyPath, '..', 'mixed.yaml');

describe('lab end to end (real kernel, mixed dataplanes: eBPF gateways peered with a fallback hub)', function () {
  requireRoot(this);
  this.timeout(240_000);
  labSuiteHooks(runDir, lines, say);

  it('A and C on eBPF, the hub B on the kernel fallback: every peered pair both ways, the hub path, unpeered clusters blocked', async () => {
    // `--dataplane ebpf` for the lab: B's pin to kernel must win.
    await labUp(mixedTopology, { runDir, dataplane: 'ebpf', say });
    const outcome = await labTest(runDir, say);
    const { results, failed } = outcome;
    assert.equal(failed, 0, failureSummary(outcome));
    assert.ok(results.some((r) => r.kind === 'hub' && r.probe === 'udp' && r.detail === `reply from ${r.address}`), 'the hub reply comes from the address dialled');
    assert.deepEqual(outcome.wire.map((w) => [w.peering.join('-'), w.ok]), [['cluster-a-cluster-b', true], ['cluster-b-cluster-c', true]]);

    const status = await labStatus(runDir);
    const dataplanes = Object.fromEntries(status.clusters.map((c) => [c.id, [...new Set(c.nodes.map((n) => n.dataplane))]]));
    assert.deepEqual(dataplanes, { 'cluster-a': ['ebpf'], 'cluster-b': ['kernel'], 'cluster-c': ['ebpf'] }, 'each cluster runs its pinned dataplane');
    for (const id of ['cluster-a', 'cluster-c']) {
      const c = status.clusters.find((x) => x.id === id)!;
      const gateway = c.nodes.find((n) => n.name === c.gateway)!;
      // The eBPF gateway translated traffic both ways with the fallback hub: its frames were accepted.
      assert.ok(gateway.peers.length === 1 && gateway.peers[0]!.txPackets > 0 && gateway.peers[0]!.rxPackets > 0, `${id}'s eBPF gateway counted traffic both ways: ${JSON.stringify(gateway.peers)}`);
    }
  });
});
