/**
 * Node readiness on Kubernetes, pure: the heartbeats reconcile() elects the gateway from.
 *
 * No Strait process writes a heartbeat at rest. A node's liveness is its Node's Ready condition (the
 * kubelet's own heartbeat, which the node lifecycle controller turns Unknown when it stops) and what its
 * agent reports in its NodeDataplane status, written only when it changes (and every 5 minutes
 * unchanged). Which gateway candidate forwards is the datapath's answer: each candidate's agent reports
 * its probes of the others (`gatewayProbes`, election.ts `probedVerdicts`), which outweigh this
 * heartbeat for every candidate that was probed; only a candidate never probed (a kernel-fallback node,
 * no responder) is judged by it alone.
 */
import type { NodeDataplaneStatus } from '../../api/node-dataplane';
import type { Heartbeat } from '../election';

export interface NodeReadiness {
  name: string;
  /** The Node's Ready condition (the kubelet's view). */
  nodeReady: boolean;
}

/**
 * One heartbeat per node for reconcile(), always current (`now`: its freshness is the Node's Ready
 * condition, which the kubelet and the node lifecycle controller keep): a node is Ready while its Node
 * is and its agent reported ready (a candidate whose agent never ran is not elected over one whose agent
 * did; one whose agent died since keeps its last word, and the probes judge its datapath). A candidate's
 * heartbeat carries the probes its agent reported, for the election.
 */
export function nodeHeartbeats(
  nodes: readonly NodeReadiness[],
  statuses: ReadonlyMap<string, NodeDataplaneStatus | undefined>,
  now: number,
): Map<string, Heartbeat> {
  const heartbeats = new Map<string, Heartbeat>();
  const time = new Date(now).toISOString();
  for (const node of nodes) {
    const status = statuses.get(node.name);
    heartbeats.set(node.name, {
      ready: node.nodeReady && status?.ready === true,
      time,
      ...(status?.gatewayProbes === undefined ? {} : { gatewayProbes: status.gatewayProbes }),
    });
  }
  return heartbeats;
}
