/**
 * The port between the agent and a dataplane: validate a spec, apply it, read counters, close. The agent's
 * loop sees only this; the eBPF datapath (./ebpf) and the kernel fallback (./kernel) each implement it in
 * their dataplane.ts, and ./open.ts opens one of them (and cleans a node of both).
 */
import type { Dataplane } from '../api/dataplane';
import type { NodeDataplaneSpec } from '../nodespec/spec';
import type { DatapathCounters } from './ebpf/inspect';

export interface NodeDataplane {
  readonly kind: Dataplane;
  /** Throws (InputError naming the field) for a spec this dataplane cannot take; changes nothing. */
  validate(spec: NodeDataplaneSpec): void;
  /**
   * Makes the node match `spec`: what changed (undefined: nothing), prefixes routed by someone else, and
   * `readAll` when it read the node's whole state (the first apply, a resync): megabytes of garbage at
   * 100,000 NatMappings, which the agent then releases.
   */
  apply(spec: NodeDataplaneSpec): { changes?: Record<string, unknown>; conflicts: string[]; readAll?: true };
  /** Packets and bytes per peer and drops per reason, as counted now; absent where nothing counts them (the kernel fallback). */
  counters?(): DatapathCounters;
  /** Maps pinned by an earlier build with another layout, replaced when this one loaded (logged at start). */
  readonly replacedMaps?: readonly string[];
  /** The state carried over from those of them that hold some: entries per map, or why none (logged at start). */
  readonly carriedState?: readonly { map: string; entries: number; notCarried?: string }[];
  /** Releases this process's handles; what was programmed stays. */
  close(): void;
}

/** Tells whether the kernel may have changed since the last call (src/kernel/change-monitor.ts). */
export interface ChangeSource {
  takeChanged(): boolean;
  close(): void;
}

/** Default of `--resync-interval`: how often either dataplane reads its whole kernel state anyway, to repair a change no event told of. */
export const defaultResyncMs = 60_000;

/** What answers gateway probes for a dataplane that has no programs of its own (docs/liveness.md). */
export interface ProbeResponder {
  /** Answers for `spec`'s addresses, as forwarding by it: called once the dataplane applied it. */
  apply(spec: NodeDataplaneSpec): void;
  /** Releases this process's hold; the responder keeps answering. */
  close(): void;
}
