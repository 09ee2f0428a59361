import assert from 'node:assert/strict';
import { type AgentState, agentConditions } from '../../src/agent/conditions';
import { setConditions } from '../../src/api/conditions';

const state = (over: Partial<AgentState> = {}): AgentState => ({
  noSpec: false,
  ready: true,
  dataplane: 'ebpf',
  newestGeneration: 3,
  appliedGeneration: 3,
  appliedSpec: 'e6b714edfe2924f1',
  ...over,
});

describe('agent: status conditions', () => {
  it('says Applied with the generation in force, and each reason it is not', () => {
    assert.deepEqual(agentConditions(state()), [
      { type: 'Applied', status: 'True', reason: 'SpecApplied', message: 'spec e6b714edfe2924f1 applied', observedGeneration: 3 },
      {
        type: 'Ready',
        status: 'True',
        reason: 'DatapathReady',
        message: 'the ebpf datapath is loaded and the last reconcile succeeded',
        observedGeneration: 3,
      },
    ]);
    const rejected = agentConditions(state({ newestGeneration: 4, rejection: 'spec rejected: spec.podCIDR: bad (got "x")' }));
    assert.deepEqual(rejected[0], {
      type: 'Applied',
      status: 'False',
      reason: 'SpecRejected',
      message: 'spec rejected: spec.podCIDR: bad (got "x"); spec e6b714edfe2924f1 stays applied',
      observedGeneration: 4,
    });
    assert.deepEqual(
      rejected[1],
      {
        type: 'Ready',
        status: 'True',
        reason: 'DatapathReady',
        message: 'the ebpf datapath is loaded and the last reconcile succeeded',
        observedGeneration: 3,
      },
      'the last good spec keeps the node ready',
    );
    assert.deepEqual(
      agentConditions(
        state({ ready: false, applyError: 'bpf_map_update_elem: ENOMEM', appliedSpec: undefined, appliedGeneration: undefined }),
      ),
      [
        { type: 'Applied', status: 'False', reason: 'ApplyFailed', message: 'bpf_map_update_elem: ENOMEM', observedGeneration: 3 },
        { type: 'Ready', status: 'False', reason: 'ApplyFailed', message: 'bpf_map_update_elem: ENOMEM' },
      ],
    );
    assert.deepEqual(agentConditions(state({ noSpec: true, newestGeneration: undefined }))[0], {
      type: 'Applied',
      status: 'False',
      reason: 'NoSpec',
      message: 'no NodeDataplane spec for this node; spec e6b714edfe2924f1 stays applied',
    });
  });

  it("moves lastTransitionTime only when a condition's status changes", () => {
    const first = setConditions([], agentConditions(state()), '2026-01-01T00:00:00.000Z');
    assert.deepEqual(
      first.map((c) => c.lastTransitionTime),
      ['2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z'],
    );
    const rejected = setConditions(first, agentConditions(state({ rejection: 'spec rejected: x' })), '2026-01-01T00:00:05.000Z');
    assert.deepEqual(
      rejected.map((c) => `${c.type} ${c.status} ${c.lastTransitionTime}`),
      ['Applied False 2026-01-01T00:00:05.000Z', 'Ready True 2026-01-01T00:00:00.000Z'],
    );
    const otherReason = setConditions(rejected, agentConditions(state({ noSpec: true })), '2026-01-01T00:00:09.000Z');
    assert.equal(otherReason[0]!.reason, 'NoSpec');
    assert.equal(otherReason[0]!.lastTransitionTime, '2026-01-01T00:00:05.000Z', 'still False: a new reason is no transition');
  });
});
