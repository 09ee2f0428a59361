/**
 * Which gateway candidate a node sends through, decided on the node from what its prober sees: the
 * first candidate, in the order the controller published, that is not down. A node never judges itself
 * (its own datapath is the one it programs). With every candidate down the published first stays: there
 * is nothing better to send to, and its return is seen at once.
 */
import type { Verdict } from './detection';

export function chooseGateway(order: readonly string[], self: string, verdicts: ReadonlyMap<string, Verdict>): string | undefined {
  return order.find((name) => name === self || verdicts.get(name) !== 'down') ?? order[0];
}
