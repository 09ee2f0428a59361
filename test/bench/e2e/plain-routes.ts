/**
 * The limit path: pod to pod of one cluster across nodes over plain routes on the underlay, as
 * flannel's host-gw writes them (each node routes every other node's PodCIDR via that node's underlay
 * address). Strait leaves this traffic alone: its destination is in no remote prefix. Idempotent, so it
 * stays right once the lab writes these routes itself.
 */
import { run } from '../../../src/kernel/command';
import { nodeNetns } from '../../../src/lab/names';
import type { LabTopology } from '../../../src/lab/topology';

export function addPlainPodRoutes(topology: LabTopology, clusterId: string): void {
  const nodes = topology.clusters.find((c) => c.id === clusterId)!.nodes;
  for (const node of nodes) {
    for (const other of nodes.filter((n) => n !== node)) {
      run(['ip', '-n', nodeNetns(node.name), 'route', 'replace', other.podCIDR, 'via', other.underlayAddress, 'dev', 'ul0']);
    }
  }
}
