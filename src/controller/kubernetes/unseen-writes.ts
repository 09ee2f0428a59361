/**
 * The controller's own writes that its informers have not shown yet. A reconcile planned from a cache
 * that has not seen them would make them again: a create of what exists, an update from a
 * resourceVersion that is gone; each a 409 that fails the reconcile, retried with backoff. client-go's
 * controllers keep "expectations" for this, and so do we: a reconcile waits until the informers have
 * seen our last writes (their events queue it again), or `timeoutMs` has passed, so a lost event cannot
 * hold the reconciles (and a gateway failover) back for longer.
 */
import type { KubernetesObject } from '@kubernetes/client-node';
import type { ObjectWrite } from './objects';

/** An informer's cache, by object name (cluster-scoped). */
interface Cache {
  get(name: string): KubernetesObject | undefined;
}

export class UnseenWrites {
  private writes: { cache: Cache; name: string; created: boolean; before?: string; at: number }[] = [];

  constructor(
    private readonly timeoutMs: number,
    /** A monotonic clock, ms. */
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** A write made to the collection `cache` holds; `resourceVersion`, the one the server answered with. */
  wrote(cache: Cache, write: ObjectWrite, resourceVersion?: string): void {
    const at = this.now();
    if (write.op === 'create') this.writes.push({ cache, name: write.object.metadata.name, created: true, at });
    // An update that changed nothing keeps its version: there is no event to wait for.
    else if (write.op === 'update' && resourceVersion === write.resourceVersion) return;
    else
      this.writes.push({
        cache,
        name: write.op === 'delete' ? write.name : write.object.metadata.name,
        created: false,
        before: write.resourceVersion,
        at,
      });
  }

  /** Whether the caches show every write (a created object there, an updated or deleted one no longer at the version it had), or it was waited for long enough. */
  allSeen(): boolean {
    const now = this.now();
    this.writes = this.writes.filter((w) => {
      const version = w.cache.get(w.name)?.metadata?.resourceVersion;
      const seen = w.created ? version !== undefined : version !== w.before;
      return !seen && now - w.at < this.timeoutMs;
    });
    return this.writes.length === 0;
  }
}
