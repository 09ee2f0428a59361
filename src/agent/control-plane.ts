/**
 * Where an agent's NodeDataplane comes from and where it reports, by mode: files (the standalone lab:
 * a spec file and a heartbeat file) or the API server (`--kubernetes`: informers on its NodeDataplane and
 * the Nodes, the status subresource, and a fast Lease while it is a ready gateway candidate). The reconcile
 * loop (agent.ts) is the same for both.
 */
import type { Logger } from '../log';
import type { AgentPorts } from './agent';
import { FileSpecSource } from './spec-source';
import { FileStatusSink } from './status-sink';

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

function files(options: FileControlPlane, log: Logger): ControlPlane {
  const source = new FileSpecSource(options.specPath, log);
  return {
    ports: {
      source,
      ...(options.nodeName === undefined ? {} : { nodeName: options.nodeName }),
      ...(options.statusPath === undefined ? {} : { sink: new FileStatusSink(options.statusPath) }),
    },
    where: { specFile: options.specPath, statusFile: options.statusPath ?? null },
    serve: async () => {},
    start: () => {},
    close: async () => source.close(),
  };
}

/**
 * The control plane of the mode asked for. The Kubernetes one is loaded only then: the client library
 * takes a quarter of a second to load, which an agent on files must not pay at every start.
 */
export async function openControlPlane(options: ControlPlaneOptions, log: Logger): Promise<ControlPlane> {
  if (options.kind === 'files') return files(options, log);
  return (await import('./kubernetes-control-plane')).kubernetesControlPlane(options, log);
}
