/**
 * Status conditions (metav1.Condition) as Strait's objects carry them: a condition's lastTransitionTime
 * moves only when its status does, as client-go's meta.SetStatusCondition.
 */
import type { Static } from '@sinclair/typebox';
import type { Condition as ConditionSchema } from './schema';

export type Condition = Static<typeof ConditionSchema>;
export type ConditionValue = Omit<Condition, 'lastTransitionTime'>;

/** The conditions to write: `wanted`, each keeping its previous lastTransitionTime while its status is the same. */
export function setConditions(previous: readonly Condition[], wanted: readonly ConditionValue[], now: string): Condition[] {
  return wanted.map((condition) => {
    const before = previous.find((p) => p.type === condition.type);
    return {
      ...condition,
      lastTransitionTime: before !== undefined && before.status === condition.status ? before.lastTransitionTime : now,
    };
  });
}
