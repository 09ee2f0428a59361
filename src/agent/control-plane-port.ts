/**
 * The agent's ports: what its reconcile loop (agent.ts) needs besides its datapath, and what each control
 * plane (files/control-plane.ts; the API server: kubernetes/control-plane.ts) gives it. Types only, so
 * the loop and the adapters depend on them and not on each other.
 */
import type { NodeDataplaneStatus } from '../api/node-dataplane';
import type { NodeDataplaneSpec } from '../nodespec/spec';

/**
 * Where the agent's NodeDataplane comes from (files/spec-source.ts, kubernetes/spec-source.ts). The agent
 * asks for the newest document at every reconcile and is told when it may have changed; an unchanged
 * version is not parsed again.
 */
export interface SpecDocument {
  /** The NodeDataplane object as JSON; throws when the document is not JSON (the agent rejects it). */
  parse(): unknown;
  /** Changes whenever the document does (the file's text, the object's uid and resourceVersion). */
  version: string;
  /** metadata.generation, when the source counts them (the API server does; a file does not). */
  generation?: number;
}

export interface SpecSource {
  /** For logs: where the spec is read from. */
  readonly where: Record<string, string>;
  /**
   * The newest document; undefined when there is none. Throws when it cannot be read this time (the
   * agent keeps the last good spec).
   */
  read(): SpecDocument | undefined;
  /**
   * The canonical text of the part of a spec that the status's `appliedSpec` names, where that is not the
   * whole spec: on Kubernetes the NodeDataplane object's own part, as the node list and the gateways are
   * read from objects every node shares (an acknowledgement of those would have every agent write its
   * status on each gateway move or Node added). Undefined: the whole spec.
   */
  ownPartText?(spec: NodeDataplaneSpec): string;
  /** Calls `onChange` when the document may have changed; again from every tick (re-establishes a lost watch). */
  watch(onChange: () => void): void;
  /** Resolves once `read` can answer: at once for a file, after the first list for the API server. */
  ready(): Promise<void>;
  close(): void;
}

/**
 * Where the agent reports its NodeDataplane status (files/status-sink.ts, kubernetes/status-sink.ts),
 * after every reconcile; a sink may write less often when nothing but the time changed.
 */
export interface StatusSink {
  /** For logs: where the status goes. */
  readonly where: Record<string, string>;
  /** Throws when it cannot be written (the agent logs it once and tries again next tick). */
  write(status: NodeDataplaneStatus): void;
}

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
  /** The agent's own namespace (its DaemonSet's). */
  namespace: string;
  /** How often an unchanged status is written anyway. */
  statusRefreshMs: number;
  /** The node's pool IPAM service (src/pool-ipam/service), with the same kubeconfig and node; none: not served. */
  poolIpam?: PoolIpamOptions;
  /**
   * The DaemonSet that runs this agent, in `namespace`: once it is deleted (`helm uninstall`), a stop
   * removes the datapath instead of leaving it for the next agent. None: a stop always leaves it.
   */
  daemonSet?: string;
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
  /** Starts what runs beside the reconcile loop (the watch of the agent's DaemonSet). */
  start(): void;
  /**
   * Whether the installation this agent belongs to is being removed (its DaemonSet deleted): then a stop
   * takes the datapath off the node, as no agent will come after it.
   */
  uninstalled(): boolean;
  /** Stops watching and serving; resolves when no write is in flight. */
  close(): Promise<void>;
}
