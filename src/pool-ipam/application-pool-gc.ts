/**
 * Which application pools (rule 1: an application's own StraitIPPool carved from a StraitSubnet) to delete, pure. The
 * cluster's garbage collector cannot: a StraitIPPool is cluster-scoped and its application namespaced, and a
 * cluster-scoped dependent of a namespaced owner is never collected (kubernetes.io, "Owners and
 * Dependents"). A pool goes once the application it was made for is gone, or is another one by now (the
 * same name, another uid: a re-created application gets a pool of its own), and no claim holds one of
 * its addresses (a pod of it still terminating keeps it).
 */
import type { ApplicationRef } from './model';

export interface ApplicationPoolRecord {
  /** The StraitIPPool's name and uid (the delete's precondition). */
  name: string;
  uid: string;
  /** The StraitSubnet it was carved from (whose status.allocations records it). */
  subnet: string;
  application: Omit<ApplicationRef, 'apiVersion'>;
}

/** What the API server answered for an application: its uid, absent (404), or not known this time (an error). */
export type ApplicationState = { uid: string } | 'absent' | 'unknown';

export const applicationKey = (a: Pick<ApplicationRef, 'kind' | 'namespace' | 'name'>) => `${a.kind} ${a.namespace}/${a.name}`;

export function staleApplicationPools(
  pools: readonly ApplicationPoolRecord[],
  applications: ReadonlyMap<string, ApplicationState>,
  claimedPools: ReadonlySet<string>,
): { pool: ApplicationPoolRecord; reason: string }[] {
  const stale: { pool: ApplicationPoolRecord; reason: string }[] = [];
  for (const pool of pools) {
    if (claimedPools.has(pool.name)) continue;
    const key = applicationKey(pool.application);
    const state = applications.get(key) ?? 'unknown';
    if (state === 'unknown') continue;
    if (state === 'absent') stale.push({ pool, reason: `${key} is gone` });
    else if (state.uid !== pool.application.uid)
      stale.push({ pool, reason: `${key} is another one (uid ${state.uid}, the pool's ${pool.application.uid})` });
  }
  return stale;
}
