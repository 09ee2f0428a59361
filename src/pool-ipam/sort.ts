/**
 * Candidate pool sorting (the document's "Candidate Pool Sorting"): a pool with spec.podAffinity first;
 * then spec.nodeName, then spec.nodeAffinity; then spec.namespaceName, then spec.namespaceAffinity; then
 * spec.multusName. The comparison is lexicographic over these six properties' presence, so a pool with
 * podAffinity + nodeName precedes one with podAffinity + namespaceName + multusName (the document's third
 * example). Ties keep the candidates' order (Array.prototype.sort is stable): the order of a CNI config's
 * default pool list is the administrator's preference among equals.
 */
import type { Pool } from './model';

/** The presence of each property, most significant first, as bits of one number: higher sorts first. */
function sortKey(pool: Pool): number {
  const present = [
    pool.podAffinity !== undefined,
    pool.nodeName.length > 0,
    pool.nodeAffinity !== undefined,
    pool.namespaceName.length > 0,
    pool.namespaceAffinity !== undefined,
    pool.multusName.length > 0,
  ];
  return present.reduce((key, bit) => (key << 1) | (bit ? 1 : 0), 0);
}

export function sortPools(pools: readonly Pool[]): Pool[] {
  return [...pools].sort((a, b) => sortKey(b) - sortKey(a));
}
