/**
 * Gateway election among the cluster's nodes, pure. A gateway moves only when it stops being Ready, so
 * tunnels are not torn down by a better node coming back; among Ready nodes, one with a public address
 * wins (peers can reach it directly), then the name order makes every controller agree.
 */

import type { NodeDataplaneStatus } from '../api/node-dataplane';
import type { Ip } from '../net/cidr';

/**
 * What decides a node's readiness in the status its agent writes (its heartbeat), and, from a gateway
 * candidate, its probes of the others' datapaths.
 */
export type Heartbeat = Pick<NodeDataplaneStatus, 'ready' | 'time' | 'validFor' | 'gatewayProbes'>;

export interface Candidate {
  name: string;
  publicAddress?: Ip;
}

type ElectionReason =
  /** The previous gateway is still Ready. */
  | 'kept'
  /** The previous gateway has not reported since this controller started, which is recent: it gets time. */
  | 'awaiting-first-heartbeat'
  /** The previous gateway was elected less than one heartbeat timeout ago and last said ready: it gets time. */
  | 'settling'
  /** A Ready node was chosen (first election, or the previous one is not Ready). */
  | 'elected'
  /** No node is Ready: the previous gateway stays (or, on a first start, the preferred node). */
  | 'no-ready-node';

export interface Election {
  gateway: string;
  reason: ElectionReason;
}

/** The gateway a controller last elected, carried to its next reconcile. */
export interface GatewayTenure {
  gateway: string;
  /** When it was elected (ms since the epoch); absent when adopted from a former run's status. */
  since?: number;
}

/**
 * Ready: a heartbeat saying ready, no older than `timeoutSeconds` at `now` (ms since the epoch), or than
 * its own `validFor` when that is longer (the last heartbeat of an agent stopping for a restart).
 */
export function isReady(heartbeat: Heartbeat | undefined, now: number, timeoutSeconds: number): boolean {
  if (!heartbeat || heartbeat.ready !== true) return false;
  const age = now - Date.parse(heartbeat.time);
  // NaN (unparsable time) compares false: not Ready.
  return age <= Math.max(timeoutSeconds, heartbeat.validFor ?? 0) * 1000;
}

/**
 * The candidates whose datapath the others' probes judge (docs/liveness.md): up when a Ready candidate's
 * probes say it answers, down when some say it does not and none says it does (a split view keeps the
 * gateway: a node that still reaches it keeps sending there). A candidate nobody has heard from (a
 * kernel-fallback node has no responder) is not listed: its agent's heartbeat judges it.
 *
 * The probes of a candidate that another one sees down do not count: a report is written when it
 * changes, so a dead candidate's last one stays while its Node is still Ready (40 s on Kubernetes), and
 * its stale "up" would keep a second dead candidate alive. Two candidates that see each other down (a
 * split) then both count for nothing, and their heartbeats judge them.
 */
export function probedVerdicts(
  candidates: readonly Candidate[],
  heartbeats: ReadonlyMap<string, Heartbeat>,
  now: number,
  timeoutSeconds: number,
): Map<string, 'up' | 'down'> {
  const isCandidate = (name: string) => candidates.some((c) => c.name === name);
  const reports = candidates.flatMap((reporter) => {
    const heartbeat = heartbeats.get(reporter.name);
    if (!isReady(heartbeat, now, timeoutSeconds)) return [];
    return (heartbeat!.gatewayProbes ?? [])
      .filter(({ name }) => name !== reporter.name && isCandidate(name))
      .map(({ name, verdict }) => ({ reporter: reporter.name, name, verdict }));
  });
  const seenDown = new Set(reports.filter((r) => r.verdict === 'down').map((r) => r.name));
  const said = new Map<string, Set<'up' | 'down'>>();
  for (const { reporter, name, verdict } of reports)
    if (!seenDown.has(reporter)) said.set(name, (said.get(name) ?? new Set()).add(verdict));
  return new Map([...said].map(([name, verdicts]) => [name, verdicts.has('up') ? 'up' : 'down']));
}

/**
 * The candidates that may carry the gateway, in the order given: the datapath's answer where a candidate
 * was probed (an agent restarting, however long, does not count against a node whose programs forward;
 * an agent that says its node is not ready, freshly, does), its agent's heartbeat where it was not.
 */
export function aliveCandidates(
  candidates: readonly Candidate[],
  heartbeats: ReadonlyMap<string, Heartbeat>,
  now: number,
  timeoutSeconds: number,
): string[] {
  const probed = probedVerdicts(candidates, heartbeats, now, timeoutSeconds);
  return candidates
    .filter((c) => {
      const verdict = probed.get(c.name);
      const heartbeat = heartbeats.get(c.name);
      if (verdict === undefined) return isReady(heartbeat, now, timeoutSeconds);
      const saysNotReady = heartbeat?.ready === false && isReady({ ...heartbeat, ready: true }, now, timeoutSeconds);
      return verdict === 'up' && !saysNotReady;
    })
    .map((c) => c.name);
}

/** The nodes whose heartbeat is Ready, in the order given. */
export function readyNodes(
  nodes: readonly Candidate[],
  heartbeats: ReadonlyMap<string, Heartbeat>,
  now: number,
  timeoutSeconds: number,
): string[] {
  return nodes.filter((n) => isReady(heartbeats.get(n.name), now, timeoutSeconds)).map((n) => n.name);
}

/** The candidates best first: a public address first, then by name (every controller agrees). */
function byPreference<C extends Candidate>(candidates: readonly C[]): C[] {
  return [...candidates].sort((a, b) => {
    const publicFirst = Number(b.publicAddress !== undefined) - Number(a.publicAddress !== undefined);
    return publicFirst !== 0 ? publicFirst : a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
  });
}

const preferred = (candidates: readonly Candidate[]): Candidate | undefined => byPreference(candidates)[0];

/** The standby gateways of `gateway`: the other candidates, in the order nodes fail over to them. */
export const standbyOrder = (candidates: readonly Candidate[], gateway: string): string[] =>
  byPreference(candidates)
    .map((c) => c.name)
    .filter((name) => name !== gateway);

/**
 * `nodes` must not be empty (the configuration guarantees it). `awaiting`: nodes that have not reported
 * yet while the controller is starting; a previous gateway among them is kept rather than replaced by
 * whichever node's agent happened to start first (a move, and new specs everywhere, for nothing).
 * `settling`: the previous gateway was elected less than one heartbeat timeout ago and its last
 * heartbeat said ready, however old; it is kept. A move costs every node an apply, and under load the
 * new gateway's next renewal can lag the move itself: judged by age alone, two nodes hand the role back
 * and forth (the Kubernetes lab did, on two cores, with a 0.6 s timeout).
 */
export function electGateway(
  nodes: readonly Candidate[],
  ready: readonly string[],
  previous: string | undefined,
  awaiting: readonly string[] = [],
  settling = false,
): Election {
  const known = previous !== undefined && nodes.some((n) => n.name === previous);
  if (known && ready.includes(previous)) return { gateway: previous, reason: 'kept' };
  if (known && awaiting.includes(previous)) return { gateway: previous, reason: 'awaiting-first-heartbeat' };
  if (known && settling) return { gateway: previous, reason: 'settling' };
  const best = preferred(nodes.filter((n) => ready.includes(n.name)));
  if (best) return { gateway: best.name, reason: 'elected' };
  // Agents heartbeat only once they have a node spec, so a first start must name a gateway before any is Ready.
  return { gateway: known ? previous : preferred(nodes)!.name, reason: 'no-ready-node' };
}

/** The address peers tunnel to: the gateway's public address, else its underlay address. */
export function gatewayAddress(node: Candidate & { underlayAddress: Ip }): Ip {
  return node.publicAddress ?? node.underlayAddress;
}
