/**
 * When the controller last saw each node's heartbeat change, on its own clock. Another machine's clock
 * says nothing about when it wrote: a heartbeat stamped an hour ahead would keep a dead node Ready for
 * that hour. So freshness is judged by sightings, the rule of the kube-controller-manager's node
 * lifecycle controller: of a heartbeat file's stamp (the standalone controller; on Kubernetes the Node's
 * Ready condition is that controller's own).
 */
import type { Heartbeat } from './election';

export interface Sighting {
  /** What changes at every renewal: a heartbeat's stamp. */
  version: string;
  /** Milliseconds since the epoch, on the controller's clock. */
  seenAt: number;
}

/**
 * The sightings after reading the versions at `now`: a new version is a renewal seen now; an unchanged
 * one keeps its time; a node no longer listed is forgotten. The first sight (this controller just
 * started) counts as a renewal.
 */
export function observeRenewals(
  previous: ReadonlyMap<string, Sighting>,
  versions: ReadonlyMap<string, string>,
  now: number,
): Map<string, Sighting> {
  const seen = new Map<string, Sighting>();
  for (const [node, version] of versions) {
    const before = previous.get(node);
    seen.set(node, before?.version === version ? before : { version, seenAt: now });
  }
  return seen;
}

/**
 * The heartbeats of the run directory as reconcile() judges them: each dated by its own stamp, or by
 * when it was seen to change if that is earlier. A stamp from the past keeps ageing from when it was
 * written (a file left by an agent that died before this controller started is not fresh); one from the
 * future is dated when seen, and ages out a timeout after it stops changing. `problems` names the clocks
 * more than a second ahead.
 */
export function heartbeatsAsSeen(
  stamped: ReadonlyMap<string, Heartbeat>,
  sightings: ReadonlyMap<string, Sighting>,
  now: number,
): { heartbeats: Map<string, Heartbeat>; problems: string[] } {
  const heartbeats = new Map<string, Heartbeat>();
  const problems: string[] = [];
  for (const [node, heartbeat] of stamped) {
    const seenAt = sightings.get(node)?.seenAt ?? now;
    const stamp = Date.parse(heartbeat.time);
    if (stamp - now > 1000)
      problems.push(
        `node ${node}: heartbeat stamped ${((stamp - now) / 1000).toFixed(1)} s ahead of this controller's clock (${heartbeat.time}); judged by when it was seen to change`,
      );
    heartbeats.set(node, stamp > seenAt ? { ...heartbeat, time: new Date(seenAt).toISOString() } : heartbeat);
  }
  return { heartbeats, problems };
}
