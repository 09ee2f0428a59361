/**
 * The agent's ports: what its reconcile loop (agent.ts) needs besides its datapath, and what each control
 * plane (files: control-plane.ts; the API server: kubernetes-control-plane.ts) gives it. Types only, so
 * the loop and the adapters depend on them and not on each other.
 */
import type { SpecSource } from './spec-source';
import type { StatusSink } from './status-sink';

/** What the agent needs besides its datapath: the node it runs, where its spec comes from and its status goes. */
export interface AgentPorts {
  /** The node this agent runs; a spec for another node is refused. Default: the spec's node. */
  nodeName?: string;
  source: SpecSource;
  sink?: StatusSink;
}

export interface FileControlPlane {
  kind: 'files';
  specPath: string;
  /** The heartbeat file; none: no status is written. */
  statusPath?: string;
  /** The node this agent runs; a spec for another node is refused. Default: the spec's node. */
  nodeName?: string;
}

export interface KubernetesControlPlane {
  kind: 'kubernetes';
  /** A kubeconfig file; none: in-cluster (the Pod's service account). */
  kubeconfig?: string;
  nodeName: string;
  /** Where the node's Lease lives (the agent's own namespace). */
  namespace: string;
  leaseIntervalMs: number;
  /** How often an unchanged status is written anyway. */
  statusRefreshMs: number;
  /** The node's pool IPAM service (src/poolipam/service), with the same kubeconfig and node; none: not served. */
  poolIpam?: PoolIpamOptions;
}

export interface PoolIpamOptions {
  /** The unix socket strait-ipam calls. */
  socket: string;
  gcIntervalMs: number;
}

export type ControlPlaneOptions = FileControlPlane | KubernetesControlPlane;

export interface ControlPlane {
  ports: AgentPorts;
  /** For the agent's start line (never a credential). */
  where: Record<string, unknown>;
  /**
   * Starts what the node is served besides its datapath (the pool IPAM socket), once the datapath is
   * loaded; its readiness is its own, so nothing waits for it.
   */
  serve(): Promise<void>;
  /** Starts what runs beside the reconcile loop; `readyGatewayCandidate` is asked before each Lease renewal. */
  start(readyGatewayCandidate: () => boolean): void;
  /** Stops watching, renewing and serving; resolves when no write is in flight. */
  close(): Promise<void>;
}
