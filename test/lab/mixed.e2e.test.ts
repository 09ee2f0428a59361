/**
 * The lab with mixed dataplanes (lab/src/topologies/mixed.yaml, dual-stack): the hub B on the kernel-route
 * fallback, A and C on the eBPF datapath, so every peering in both families, and hub transit from C through
 * B into A, joins an eBPF gateway and a fallback gateway. Both speak the peering's wire format (per-peering VNI and tunnel MACs,
 * src/nodespec/peer-tunnel.ts): every check must pass. Same setup and cleanup as lab.e2e.test.ts.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { labUp } from '../../lab/src/lab';
import { failureSummary, labTest } from '../../lab/src/lab-test';
import { defaultTopologyPath } from '../../lab/src/names';
import { requireRoot } from '../support/kernel';
import { assertMixedLab, labSuiteHooks } from '../support/lab-suite';

const runDir = `/run/strait/lab-test-${process.pid}`;
const lines: string[] = [];
const say = (line: string) => lines.push(line);
const mixedTopology = join(defaultTopologyPath, '..', 'mixed.yaml');

describe('lab end to end (real kernel, mixed dataplanes: eBPF gateways peered with a fallback hub)', function () {
  requireRoot(this);
  this.timeout(240_000);
  labSuiteHooks(runDir, lines, say);

  it('A and C on eBPF, the hub B on the kernel fallback: every peered pair both ways in both families, the hub path, unpeered clusters blocked', async () => {
    // `--dataplane ebpf` for the lab: B's pin to kernel must win.
    await labUp(mixedTopology, { runDir, dataplane: 'ebpf', say });
    const outcome = await labTest(runDir, say);
    assert.equal(outcome.failed, 0, failureSummary(outcome));
    await assertMixedLab(runDir, outcome);
  });
});
