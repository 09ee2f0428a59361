/**
 * The recent history of each resource, from which a watch starts at a resourceVersion: the last
 * `capacity` changes of the resource are kept; a watch from an older version (or from before this
 * server started: a restarted server has no history) is refused with 410 Expired, "too old resource
 * version", which makes an informer relist, as a real API server's watch cache does.
 */
import type { Change, Store } from './store';

interface History {
  changes: Change[];
  /** Every change after this version is in `changes`. */
  since: number;
  watchers: Set<(change: Change) => void>;
}

export class WatchCache {
  private readonly histories = new Map<string, History>();
  private readonly startVersion: number;

  constructor(
    private readonly store: Store,
    private readonly capacity: number,
  ) {
    this.startVersion = store.resourceVersion;
    store.onChange((change) => this.record(change));
  }

  /**
   * Delivers every change of `resource` after `from`, then each new one as it happens, until the
   * returned `stop` is called. When the changes after `from` are no longer all known (or `from` is newer
   * than any: a server restarted without its state), the version the history starts at, for the 410.
   */
  watch(resource: string, from: number, deliver: (change: Change) => void): { stop: () => void } | { oldest: number } {
    const history = this.history(resource);
    if (from < history.since || from > this.store.resourceVersion) return { oldest: history.since };
    for (const change of history.changes) if (change.resourceVersion > from) deliver(change);
    history.watchers.add(deliver);
    return { stop: () => history.watchers.delete(deliver) };
  }

  private record(change: Change): void {
    const history = this.history(change.resource);
    history.changes.push(change);
    if (history.changes.length > this.capacity) history.since = history.changes.shift()!.resourceVersion;
    for (const deliver of history.watchers) deliver(change);
  }

  private history(resource: string): History {
    let history = this.histories.get(resource);
    if (!history) this.histories.set(resource, (history = { changes: [], since: this.startVersion, watchers: new Set() }));
    return history;
  }
}
