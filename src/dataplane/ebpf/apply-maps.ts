/**
 * Brings a node's datapath maps to a desired state, in an order where no intermediate state misroutes:
 * a peer is written before the routes that name it and deleted after them; a changed prefix gets its
 * new route before the old one goes; each element update is atomic in the kernel.
 */
import { type DesiredMaps, type DesiredTables, tableIds, tablesOf } from './desired-maps';
import type { BpfMap, Codec } from '../../native';
import type { DatapathMaps } from './layout';
import { maps as layoutMaps } from './layout';
import { MapMirror, type SyncResult, idMap } from './map-sync';
import { U32Table } from './u32-table';

export type ApplyResult = Record<keyof DesiredMaps | 'peerCounters' | 'peerCounters6', SyncResult>;

/**
 * Deletes from `counters` (either family's) the counters of peers `peers` no longer has. A peer's
 * counters go with its strait_peers entry, which every peering has whatever families it carries.
 */
function deleteGoneCounters(counters: DatapathMaps['peerCounters'], peers: DesiredTables['peers']): SyncResult {
  const key = Buffer.alloc(layoutMaps.peers.key.size);
  const gone = [...counters.keys()].filter((id) => {
    layoutMaps.peers.key.encode(id, key, 0);
    return !peers.has(tableIds.peers.key.decode(key, 0));
  });
  return { written: 0, deleted: gone.filter((id) => counters.delete(id)).length };
}

/**
 * The node's maps as this process last wrote them (map-sync.ts): an apply writes only what differs from
 * the last one; `read` (or a map whose last write failed) diffs against the kernel instead, repairing
 * any change made by hand.
 */
export class AppliedMaps {
  private readonly mirrors;

  constructor(private readonly maps: DatapathMaps) {
    const mirror = <I, W>(map: { fd: number }, ids: { key: Codec<I>; value: Codec<W> }) =>
      new MapMirror(idMap(map as BpfMap<unknown, unknown>, ids));
    const u32Mirror = (map: { fd: number }) => new MapMirror(idMap(map as BpfMap<unknown, unknown>, tableIds.natmap), () => new U32Table());
    this.mirrors = {
      config: mirror(maps.config, tableIds.config),
      peers: mirror(maps.peers, tableIds.peers),
      routes: mirror(maps.routes, tableIds.routes),
      natmap: u32Mirror(maps.natmap),
      natmapRev: u32Mirror(maps.natmapRev),
      nodes: mirror(maps.nodes, tableIds.nodes),
      liveness: mirror(maps.liveness, tableIds.liveness),
      config6: mirror(maps.config6, tableIds.config6),
      peers6: mirror(maps.peers6, tableIds.peers6),
      routes6: mirror(maps.routes6, tableIds.routes6),
      natmap6: mirror(maps.natmap6, tableIds.natmap6),
      natmap6Rev: mirror(maps.natmap6Rev, tableIds.natmap6Rev),
      nodes6: mirror(maps.nodes6, tableIds.nodes6),
    };
  }

  apply(desired: DesiredTables, read: boolean): ApplyResult {
    const m = this.mirrors;
    const readPeers = read || m.peers.unknown;
    const config = m.config.sync(desired.config, read);
    const config6 = m.config6.sync(desired.config6, read);
    // An IPv6 route needs its peer in both peer maps (the tunnel is in `peers`).
    const peers = m.peers.plan(desired.peers, read);
    const peers6 = m.peers6.plan(desired.peers6, read);
    const peersWritten = peers.upsert();
    const peers6Written = peers6.upsert();
    const routes = m.routes.sync(desired.routes, read);
    const routes6 = m.routes6.sync(desired.routes6, read);
    const peersDeleted = peers.delete();
    const peers6Deleted = peers6.delete();
    const natmap = m.natmap.sync(desired.natmap, read);
    const natmapRev = m.natmapRev.sync(desired.natmapRev, read);
    const natmap6 = m.natmap6.sync(desired.natmap6, read);
    const natmap6Rev = m.natmap6Rev.sync(desired.natmap6Rev, read);
    const nodes = m.nodes.sync(desired.nodes, read);
    const nodes6 = m.nodes6.sync(desired.nodes6, read);
    // Counters of peers that are gone; the others keep counting. Looked at when peers went, and on a read.
    const countersOfGone = (counters: DatapathMaps['peerCounters']) =>
      readPeers || peersDeleted > 0 ? deleteGoneCounters(counters, desired.peers) : { written: 0, deleted: 0 };
    const peerCounters = countersOfGone(this.maps.peerCounters);
    const peerCounters6 = countersOfGone(this.maps.peerCounters6);
    // Last: the node answers probes as Ready once everything it forwards by is written.
    const liveness = m.liveness.sync(desired.liveness, read);
    return {
      config,
      peers: { written: peersWritten, deleted: peersDeleted },
      routes,
      natmap,
      natmapRev,
      nodes,
      peerCounters,
      peerCounters6,
      liveness,
      config6,
      peers6: { written: peers6Written, deleted: peers6Deleted },
      routes6,
      natmap6,
      natmap6Rev,
      nodes6,
    };
  }
}

/** Makes the maps hold `desired`, reading every map first. */
export function applyDesiredMaps(maps: DatapathMaps, desired: DesiredMaps): ApplyResult {
  return new AppliedMaps(maps).apply(tablesOf(desired), true);
}

/** Whether applying wrote or deleted anything. */
export function changedAnything(result: ApplyResult): boolean {
  return Object.values(result).some((r) => r.written > 0 || r.deleted > 0);
}
