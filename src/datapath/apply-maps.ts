/**
 * Brings a node's datapath maps to a desired state, in an order where no intermediate state misroutes:
 * a peer is written before the routes that name it and deleted after them; a changed prefix gets its
 * new route before the old one goes; each element update is atomic in the kernel.
 */
import type { DesiredMaps } from './desired-maps';
import type { DatapathMaps } from './layout';
import { type SyncResult, syncMap } from './map-sync';

export type ApplyResult = Record<keyof DesiredMaps | 'peerCounters', SyncResult>;

export function applyDesiredMaps(maps: DatapathMaps, desired: DesiredMaps): ApplyResult {
  const config = syncMap(maps.config, desired.config);
  const peersWritten = syncMap(maps.peers, desired.peers, 'upsert');
  const routes = syncMap(maps.routes, desired.routes);
  const peersDeleted = syncMap(maps.peers, desired.peers, 'delete');
  const natmap = syncMap(maps.natmap, desired.natmap);
  const natmapRev = syncMap(maps.natmapRev, desired.natmapRev);
  const nodes = syncMap(maps.nodes, desired.nodes);
  // Counters of peers that are gone; the others keep counting.
  const live = new Set(desired.peers.map(([id]) => id));
  const stale = [...maps.peerCounters.keys()].filter((id) => !live.has(id));
  const peerCounters = { written: 0, deleted: stale.filter((id) => maps.peerCounters.delete(id)).length };
  return {
    config,
    peers: { written: peersWritten.written, deleted: peersDeleted.deleted },
    routes,
    natmap,
    natmapRev,
    nodes,
    peerCounters,
  };
}

/** Whether applying wrote or deleted anything. */
export function changedAnything(result: ApplyResult): boolean {
  return Object.values(result).some((r) => r.written > 0 || r.deleted > 0);
}
