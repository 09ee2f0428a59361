/**
 * The two dataplanes behind one interface, so the agent's loop does not care which one runs: the eBPF
 * datapath (programs, pinned maps, and the routes strict reverse-path filtering needs) and the kernel
 * fallback (VXLAN, policy routing, nftables). Opening one removes what the other left on the node, so a
 * node switched from one to the other keeps nothing of the first.
 */
import { type DatapathCounters, readCounters } from '../datapath/inspect';
import { type NodeApplyResult, NodeDatapath, cleanupNode, defaultOverlayDevice } from '../datapath/node-datapath';
import { type IpsecSetup, type KernelApplyResult, KernelDatapath, cleanupKernelNode, kernelApplyChanged } from '../fallback/kernel-datapath';
import { InputError } from '../errors';
import type { Logger } from '../log';
import { podInterfaceListener } from '../datapath/pod-interface-watch';
import { KernelChangeMonitor } from '../kernel/change-monitor';
import type { NetlinkGroup } from '../kernel/netlink-monitor';
import type { TcMode } from '../bpf';
import { netnsPath } from '../kernel/netns';
import { requireIpv4 } from '../nodespec/ip-family';
import type { NodeDataplaneSpec } from '../nodespec/spec';
import type { Dataplane } from '../api/dataplane';
import { type RouteChanges, desiredRoutes, reconcileOverlayRoutes } from './routes';

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
  /** Releases this process's handles; what was programmed stays. */
  close(): void;
}

/** Pure: what an eBPF apply changed, for one log line; undefined when it changed nothing. */
export function summarizeChanges(result: NodeApplyResult, routes: RouteChanges): Record<string, unknown> | undefined {
  const maps = Object.fromEntries(Object.entries(result.maps).filter(([, r]) => r.written > 0 || r.deleted > 0));
  const attachments = result.attachments.filter((a) => a.change !== 'unchanged').map((a) => `${a.interface}:${a.program}:${a.change}${a.kind ? `:${a.kind}` : ''}`);
  const summary: Record<string, unknown> = {};
  if (result.overlayDeviceChanged) summary.overlayDeviceChanged = true;
  if (Object.keys(maps).length > 0) summary.maps = maps;
  if (attachments.length > 0) summary.attachments = attachments;
  if (routes.added.length > 0) summary.routesAdded = routes.added;
  if (routes.removed.length > 0) summary.routesRemoved = routes.removed;
  return Object.keys(summary).length > 0 ? summary : undefined;
}

/** The eBPF datapath carries peerings over VXLAN only; IPsec is the kernel fallback's. */
function refuseEncryption(spec: NodeDataplaneSpec): void {
  spec.peers.forEach((p, i) => {
    if (p.transport !== 'vxlan') {
      throw new InputError(`spec.peers[${i}].transport`, p.transport, `the peering with ${p.clusterId} is encrypted, which the eBPF dataplane does not do; run the agent with --dataplane kernel`);
    }
  });
}

/** Tells whether the kernel may have changed since the last call (src/kernel/change-monitor.ts). */
export interface ChangeSource {
  takeChanged(): boolean;
  close(): void;
}

/** Default of `--resync-interval`: how often either dataplane reads its whole kernel state anyway, to repair a change no event told of. */
export const defaultResyncMs = 60_000;

/**
 * The eBPF datapath. Its maps are written incrementally (the difference between the spec and the one
 * last applied, src/datapath/map-sync.ts); the kernel objects around them (the overlay device, the
 * attachments, the overlay routes) are looked at when the kernel's change events say something changed;
 * everything, maps included, is read at the first apply, every `resyncMs` and after a failed apply,
 * which repairs a change by hand that no event tells of (a map entry, a tcx link). A tick with the same
 * spec (the same object: the agent re-parses only a changed document), no event and no resync due does
 * nothing at all. `counters` reads the datapath's counter maps (tests that fake the datapath have none).
 */
export function ebpfDataplane(
  datapath: Pick<NodeDatapath, 'apply' | 'close'> & Partial<Pick<NodeDatapath, 'replacedMaps'>>,
  netns?: string,
  counters?: () => DatapathCounters,
  changes?: ChangeSource,
  resyncMs = defaultResyncMs,
  now = Date.now,
): NodeDataplane {
  let last: { spec: NodeDataplaneSpec; routes: string; conflicts: string[] } | undefined;
  let readAt = -Infinity;
  return {
    kind: 'ebpf',
    ...(counters === undefined ? {} : { counters }),
    ...(datapath.replacedMaps?.length ? { replacedMaps: datapath.replacedMaps } : {}),
    validate: (spec) => {
      requireIpv4(spec, 'the eBPF datapath');
      refuseEncryption(spec);
    },
    apply(spec) {
      // Taken before applying: events caused by this apply make the next tick look again, once.
      const kernel = changes?.takeChanged() ?? true;
      const resync = last === undefined || now() - readAt >= resyncMs;
      if (!kernel && !resync && last?.spec === spec) return { conflicts: last.conflicts };
      const previous = last;
      last = undefined;
      const started = now();
      const result = datapath.apply(spec, { kernel: kernel || resync, readMaps: resync });
      const prefixes = desiredRoutes(spec);
      const routes = kernel || resync || prefixes.join() !== previous?.routes
        ? reconcileOverlayRoutes(prefixes, defaultOverlayDevice, netns)
        : { added: [], removed: [], conflicts: previous.conflicts };
      last = { spec, routes: prefixes.join(), conflicts: routes.conflicts };
      if (resync) readAt = started;
      const summary = summarizeChanges(result, routes);
      return { ...(summary ? { changes: summary } : {}), conflicts: routes.conflicts, ...(resync ? { readAll: true as const } : {}) };
    },
    close: () => {
      changes?.close();
      datapath.close();
    },
  };
}

/**
 * The kernel fallback. Reading its whole state takes several processes, so a reconcile is skipped while
 * the spec, the secrets' files and the kernel (by its change events) are as they were at the last good
 * apply, up to `resyncMs` (a lost event is repaired then); a hand-made change is an event, so it is still repaired at the next tick.
 * The spec is compared by identity: the agent hands over the same object until its file changes, and
 * serialising a spec of 100,000 NatMappings at every tick would cost more than the skip saves.
 */
export function kernelDataplane(datapath: Pick<KernelDatapath, 'apply' | 'inputsVersion'>, changes?: ChangeSource, resyncMs = defaultResyncMs, now = Date.now): NodeDataplane {
  let lastGood: { spec: NodeDataplaneSpec; inputs: string; at: number } | undefined;
  return {
    kind: 'kernel',
    validate: (spec) => requireIpv4(spec, 'the kernel fallback'),
    apply(spec) {
      const inputs = datapath.inputsVersion(spec);
      // Taken before applying: events caused by this apply make the next tick look again, once.
      const kernelChanged = changes?.takeChanged() ?? true;
      if (!kernelChanged && lastGood?.spec === spec && lastGood.inputs === inputs && now() - lastGood.at < resyncMs) return { conflicts: [] };
      lastGood = undefined;
      const result: KernelApplyResult = datapath.apply(spec);
      // Something the kernel refused is not applied: the node is not ready until it is. So is an
      // encrypted peering that cannot be set up (its traffic is blocked, not sent in the clear).
      const problems = [...(result.failed.length > 0 ? [`the kernel refused: ${result.failed.join('; ')}`] : []), ...result.blocked.map((b) => `blocked ${b}`)];
      if (problems.length > 0) throw new Error(problems.join('; '));
      lastGood = { spec, inputs, at: now() };
      // Every apply that is not skipped reads the node's whole state.
      return { ...(kernelApplyChanged(result) ? { changes: { ...result } } : {}), conflicts: [], readAll: true };
    },
    close: () => changes?.close(),
  };
}

/**
 * What the eBPF datapath's kernel objects can be changed by: links (the overlay device, pod interfaces),
 * addresses (the underlay MTU) and routes. Neighbours and nftables churn on a busy node and are not its own.
 */
const ebpfKernelEvents: NetlinkGroup[] = ['link', 'addr', 'route'];

export interface DataplaneOptions {
  pinRoot: string;
  podInterfaces: RegExp;
  attachMode: TcMode;
  netns?: string;
  /** The kernel fallback's IPsec peerings: their secrets, and why this kernel cannot run them. */
  ipsec?: IpsecSetup;
  /** How often the whole kernel state is read even without a change event (`--resync-interval`). */
  resyncMs?: number;
  /** With a logger, the eBPF datapath programs each new pod interface on its netlink event (logged). */
  log?: Logger;
}

/** Opens the chosen dataplane after removing what the other one left on the node. */
export async function openDataplane(kind: Dataplane, options: DataplaneOptions): Promise<NodeDataplane> {
  const path = options.netns === undefined ? undefined : netnsPath(options.netns);
  if (kind === 'kernel') {
    cleanupNode({ pinRoot: options.pinRoot, ...(path ? { netns: path } : {}) });
    reconcileOverlayRoutes([], defaultOverlayDevice, options.netns);
    return kernelDataplane(new KernelDatapath(options.netns, options.ipsec), new KernelChangeMonitor(options.netns), options.resyncMs);
  }
  cleanupKernelNode(options.netns);
  const datapath = await NodeDatapath.load({ pinRoot: options.pinRoot, podInterfaces: options.podInterfaces, attachMode: options.attachMode, ...(path ? { netns: path } : {}) });
  // One monitor for both: the kernel objects around the maps, and each new pod interface at once.
  const pods = options.log === undefined ? undefined : podInterfaceListener(datapath, options.log);
  return ebpfDataplane(datapath, options.netns, () => readCounters(datapath.maps), new KernelChangeMonitor(options.netns, ebpfKernelEvents, pods), options.resyncMs);
}
