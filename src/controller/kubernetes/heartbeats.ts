/**
 * Node readiness on Kubernetes, pure: the heartbeats reconcile() elects the gateway from.
 *
 * A gateway candidate's agent renews a Lease (`nodeLeaseName`) several times a second while its
 * datapath is applied and ready; a worker's agent writes its NodeDataplane status only when it changes.
 * So a 1,000-node cluster costs a few Lease writes per second per candidate, not one write per node per
 * second. A candidate's freshness is judged by when this controller *saw* a renewal (a new
 * resourceVersion: src/controller/sightings.ts), never by comparing the renewTime written by another
 * machine's clock with ours: the same rule as the kube-controller-manager's node lifecycle controller.
 */
import type { NodeDataplaneStatus } from '../../api/node-dataplane';
import type { Heartbeat } from '../election';
import type { Sighting } from '../sightings';

export interface NodeReadiness {
  name: string;
  gatewayCandidate: boolean;
  /** The Node's Ready condition (the kubelet's view). */
  nodeReady: boolean;
}

/**
 * One heartbeat per node for reconcile(): a candidate is Ready while its Node is, its agent does not
 * report itself not ready, and its Lease was seen renewed (the time of the heartbeat is that sighting,
 * so it ages out after the controller's heartbeat timeout). A worker is Ready while its Node is and its
 * agent reports ready; its heartbeat is always current (its readiness is only reported, never elected on).
 */
export function nodeHeartbeats(
  nodes: readonly NodeReadiness[],
  sightings: ReadonlyMap<string, Sighting>,
  statuses: ReadonlyMap<string, NodeDataplaneStatus | undefined>,
  now: number,
): Map<string, Heartbeat> {
  const heartbeats = new Map<string, Heartbeat>();
  for (const node of nodes) {
    const agentReady = statuses.get(node.name)?.ready;
    if (node.gatewayCandidate) {
      const sighting = sightings.get(node.name);
      if (!sighting) continue;
      heartbeats.set(node.name, { ready: node.nodeReady && agentReady !== false, time: new Date(sighting.seenAt).toISOString() });
    } else {
      heartbeats.set(node.name, { ready: node.nodeReady && agentReady === true, time: new Date(now).toISOString() });
    }
  }
  return heartbeats;
}
