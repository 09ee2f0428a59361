/**
 * The agent's status conditions (metav1.Condition), pure. `Applied`: the newest NodeDataplane spec is the
 * one in force, or why not (SpecRejected, ApplyFailed, NoSpec). `Ready`: the datapath is loaded and the
 * last reconcile succeeded (with a rejected newest spec the node stays Ready on the last good one).
 */
import type { ConditionValue } from '../api/conditions';

/** What the agent knows at the end of a reconcile. */
export interface AgentState {
  /** No spec document there (none yet, or it was deleted); the last good spec, if any, stays in force. */
  noSpec: boolean;
  /** Why the newest spec was refused (field and value named). */
  rejection?: string;
  /** Why applying the spec in force failed. */
  applyError?: string;
  ready: boolean;
  dataplane: string;
  /** metadata.generation of the newest document read, and of the one in force (the API server's; files have none). */
  newestGeneration?: number;
  appliedGeneration?: number;
  /** status.appliedSpec of the spec in force. */
  appliedSpec?: string;
}

const generation = (value: number | undefined) => (value === undefined ? {} : { observedGeneration: value });

export function agentConditions(state: AgentState): ConditionValue[] {
  const keeping = state.appliedSpec === undefined ? 'nothing is applied yet' : `spec ${state.appliedSpec} stays applied`;
  const applied: ConditionValue = state.noSpec
    ? { type: 'Applied', status: 'False', reason: 'NoSpec', message: `no NodeDataplane spec for this node; ${keeping}` }
    : state.rejection !== undefined
      ? {
          type: 'Applied',
          status: 'False',
          reason: 'SpecRejected',
          message: `${state.rejection}; ${keeping}`,
          ...generation(state.newestGeneration),
        }
      : state.applyError !== undefined
        ? { type: 'Applied', status: 'False', reason: 'ApplyFailed', message: state.applyError, ...generation(state.newestGeneration) }
        : {
            type: 'Applied',
            status: 'True',
            reason: 'SpecApplied',
            message: `spec ${state.appliedSpec} applied`,
            ...generation(state.appliedGeneration),
          };
  const ready: ConditionValue = state.ready
    ? {
        type: 'Ready',
        status: 'True',
        reason: 'DatapathReady',
        message: `the ${state.dataplane} datapath is loaded and the last reconcile succeeded`,
        ...generation(state.appliedGeneration),
      }
    : {
        type: 'Ready',
        status: 'False',
        reason: 'ApplyFailed',
        message: state.applyError ?? 'the last reconcile failed',
        ...generation(state.appliedGeneration),
      };
  return [applied, ready];
}
