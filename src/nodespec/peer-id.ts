/**
 * Peer ids for BPF maps: a 32-bit FNV-1a hash of the cluster id, so a peer keeps its id (and its
 * counters) whatever other peers come and go. The rare collision is resolved by probing upward, in
 * cluster-id order, which is deterministic for a given set of peers.
 */

function fnv1a32(text: string): number {
  let hash = 0x811c9dc5;
  for (const byte of Buffer.from(text, 'utf8')) {
    hash ^= byte;
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash;
}

/**
 * Ids for a set of cluster ids; 0 is never used, so an all-zero map value never names a peer. `hash`
 * is FNV-1a; a test gives its own to reach the collisions and the wrap past 2^32 - 1.
 */
export function assignPeerIds(clusterIds: readonly string[], hash: (clusterId: string) => number = fnv1a32): Map<string, number> {
  const ids = new Map<string, number>();
  const taken = new Set<number>();
  for (const clusterId of [...new Set(clusterIds)].sort()) {
    let id = hash(clusterId) || 1;
    while (taken.has(id)) id = (id + 1) >>> 0 || 1;
    taken.add(id);
    ids.set(clusterId, id);
  }
  return ids;
}
