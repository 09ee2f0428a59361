/**
 * What the lab reads back from a running lab, whichever control plane runs it: each node's NodeDataplane
 * (spec by the controller, status by the agent), the endpoints a hub reflects, the controller's gateway
 * and peers. A port with two adapters: the run directory's files (below) and the API servers of a lab
 * on Kubernetes (kubernetes-lab-state.ts).
 */
import { join } from 'node:path';
import { readControllerStatus, readReflections } from '../../src/api/controller-status';
import { pollDocumentFile } from '../../src/api/document';
import { readNodeDataplane, readNodeDataplaneStatus } from '../../src/api/node-dataplane';
import { runDirPaths } from '../../src/api/run-dir';
import { runsOnKubernetes } from './control-plane';
import type { ClusterState, LabState, NodeState } from './lab-state-port';
import { readImports } from './service-proxy';
import type { LabCluster, LabTopology } from './topology';

/** The standalone lab: the files the controllers and agents write in the run directory. */
class RunDirLabState implements LabState {
  constructor(private readonly runDir: string) {}

  async read(cluster: LabCluster): Promise<ClusterState> {
    const at = (path: string) => join(this.runDir, path);
    const nodes = new Map<string, NodeState>();
    for (const node of cluster.nodes) {
      const spec = pollDocumentFile(at(runDirPaths.nodeSpec(cluster.id, node.name)), readNodeDataplane)?.spec;
      const status = pollDocumentFile(at(runDirPaths.heartbeat(cluster.id, node.name)), readNodeDataplaneStatus);
      nodes.set(node.name, {
        ...(spec ? { spec } : {}),
        ...(status ? { status } : {}),
        ...(status?.appliedSpec === undefined ? {} : { running: status.appliedSpec }),
      });
    }
    const controller = pollDocumentFile(at(runDirPaths.controllerStatus(cluster.id)), readControllerStatus);
    return {
      nodes,
      reflections: pollDocumentFile(at(runDirPaths.reflections(cluster.id)), readReflections) ?? [],
      imports: readImports(this.runDir, cluster.id),
      gateway: controller?.gateway ?? null,
      peers: controller?.peers ?? [],
    };
  }

  async close(): Promise<void> {}
}

/** The state of the lab in `runDir`, from its files or its API servers (whose client is loaded only then). */
export async function openLabState(runDir: string, topology: LabTopology): Promise<LabState> {
  if (!runsOnKubernetes(runDir, topology)) return new RunDirLabState(runDir);
  const { KubernetesLabState } = await import('./kubernetes-lab-state');
  return new KubernetesLabState(runDir, topology);
}
