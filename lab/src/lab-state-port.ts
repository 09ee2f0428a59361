/**
 * What the lab reads back from a running lab, whichever control plane runs it (the port; its adapters:
 * lab-state.ts for the run directory, kubernetes-lab-state.ts for the API servers).
 */
import type { Reflection } from '../../src/api/controller-status';
import type { NodeDataplaneStatus } from '../../src/api/node-dataplane';
import type { ServiceImportDocument } from '../../src/api/service-import-schema';
import type { NodeDataplaneSpec } from '../../src/nodespec/spec';
import type { LabCluster } from './topology';

export interface NodeState {
  /** Undefined until the controller wrote it (or while it is half-written). */
  spec?: NodeDataplaneSpec;
  /** Undefined until the agent reported. */
  status?: NodeDataplaneStatus;
  /**
   * The digest of the whole spec its agent runs, node list and gateways included: the status's
   * appliedSpec where the status names the whole spec (files), the agent's strait_agent_applied_spec_info
   * on Kubernetes (where the status names the object's own part, so a gateway move writes no status).
   */
  running?: string;
}

export interface ClusterState {
  /** By node name: every node of the topology's cluster. */
  nodes: Map<string, NodeState>;
  /** The endpoints this cluster reflects as a hub, with the address each peer dials. */
  reflections: Reflection[];
  /** The services it imports (docs/services.md), as its controller last wrote them. */
  imports: ServiceImportDocument[];
  gateway: string | null;
  /** The controller's view of each peering ('waiting-for-peer', 'remapped', 'ready'). */
  peers: { clusterId: string; state: string }[];
}

export interface LabState {
  read(cluster: LabCluster): Promise<ClusterState>;
  close(): Promise<void>;
}
