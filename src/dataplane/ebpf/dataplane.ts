/**
 * The eBPF datapath behind the dataplane port (../port.ts): programs, pinned maps, and the routes strict
 * reverse-path filtering needs, applied incrementally.
 */
import type { TcMode } from '../../native';
import type { Logger } from '../../log';
import { InputError } from '../../errors';
import { KernelChangeMonitor } from '../../kernel/change-monitor';
import type { NetlinkGroup } from '../../kernel/netlink-monitor';
import { netnsPath } from '../../kernel/netns';
import { requireOneUnderlayFamily } from '../../nodespec/ip-family';
import type { NodeDataplaneSpec } from '../../nodespec/spec';
import { type ChangeSource, type NodeDataplane, defaultResyncMs } from '../port';
import { type DatapathCounters, readCounters } from './inspect';
import { type NodeApplyResult, NodeDatapath, cleanupNode, defaultOverlayDevice } from './node-datapath';
import { type RouteChanges, desiredRoutes, reconcileOverlayRoutes } from './overlay-routes';
import { podInterfaceListener } from './pod-interface-watch';

/** Pure: what an eBPF apply changed, for one log line; undefined when it changed nothing. */
export function summarizeChanges(result: NodeApplyResult, routes: RouteChanges): Record<string, unknown> | undefined {
  const maps = Object.fromEntries(Object.entries(result.maps).filter(([, r]) => r.written > 0 || r.deleted > 0));
  const attachments = result.attachments
    .filter((a) => a.change !== 'unchanged')
    .map((a) => `${a.interface}:${a.program}:${a.change}${a.kind ? `:${a.kind}` : ''}`);
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
      throw new InputError(
        `spec.peers[${i}].transport`,
        p.transport,
        `the peering with ${p.clusterId} is encrypted, which the eBPF dataplane does not do; run the agent with --dataplane kernel`,
      );
    }
  });
}

/**
 * The eBPF datapath. Its maps are written incrementally (the difference between the spec and the one
 * last applied, src/dataplane/ebpf/map-sync.ts); the kernel objects around them (the overlay device, the
 * attachments, the overlay routes) are looked at when the kernel's change events say something changed;
 * everything, maps included, is read at the first apply, every `resyncMs` and after a failed apply,
 * which repairs a change by hand that no event tells of (a map entry, a tcx link). A tick with the same
 * spec (the same object: the agent re-parses only a changed document), no event and no resync due does
 * nothing at all. `counters` reads the datapath's counter maps (tests that fake the datapath have none).
 */
export function ebpfDataplane(
  datapath: Pick<NodeDatapath, 'apply' | 'close'> & Partial<Pick<NodeDatapath, 'replacedMaps' | 'carriedState'>>,
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
    ...(datapath.replacedMaps?.length ? { replacedMaps: datapath.replacedMaps, carriedState: datapath.carriedState ?? [] } : {}),
    validate: (spec) => {
      requireOneUnderlayFamily(spec);
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
      const routes =
        kernel || resync || prefixes.join() !== previous?.routes
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
 * What the eBPF datapath's kernel objects can be changed by: links (the overlay device, pod interfaces),
 * addresses (the underlay MTU) and routes. Neighbours and nftables churn on a busy node and are not its own.
 */
const ebpfKernelEvents: NetlinkGroup[] = ['link', 'addr', 'route'];

/** What opening the eBPF datapath takes from the agent's options. */
export interface EbpfDataplaneOptions {
  pinRoot: string;
  podInterfaces: RegExp;
  attachMode: TcMode;
  /** The node's network namespace by name (the lab, tests); the agent's own when absent. */
  netns?: string;
  /** How often the whole kernel state is read even without a change event (`--resync-interval`). */
  resyncMs?: number;
  /** With a logger, each new pod interface is programmed on its netlink event (logged). */
  log?: Logger;
}

/** Loads the programs (adopting what an earlier agent pinned) and watches the kernel objects around them. */
export async function openEbpfDataplane(options: EbpfDataplaneOptions): Promise<NodeDataplane> {
  const path = options.netns === undefined ? undefined : netnsPath(options.netns);
  const datapath = await NodeDatapath.load({
    pinRoot: options.pinRoot,
    podInterfaces: options.podInterfaces,
    attachMode: options.attachMode,
    ...(path ? { netns: path } : {}),
  });
  // One monitor for both: the kernel objects around the maps, and each new pod interface at once.
  const pods = options.log === undefined ? undefined : podInterfaceListener(datapath, options.log);
  return ebpfDataplane(
    datapath,
    options.netns,
    () => readCounters(datapath.maps),
    new KernelChangeMonitor(options.netns, ebpfKernelEvents, pods),
    options.resyncMs,
  );
}

/** Removes what the eBPF datapath put on the node: its overlay routes, attachments, overlay device and pins. */
export function cleanupEbpfNode(
  pinRoot: string,
  netns?: string,
  keep: 'nothing' | 'responder' = 'nothing',
): ReturnType<typeof cleanupNode> & { routesRemoved: string[] } {
  const routes = reconcileOverlayRoutes([], defaultOverlayDevice, netns);
  const { detached, overlayDeviceRemoved } = cleanupNode({ pinRoot, ...(netns === undefined ? {} : { netns: netnsPath(netns) }) }, keep);
  return { detached, overlayDeviceRemoved, routesRemoved: routes.removed };
}
