/**
 * Where a state lives between runs. The standalone controller and the CLI use FileStore; in Kubernetes the
 * IPAM lives in the API server as small objects (src/controller/kubernetes/ipam-store.ts), behind the same interface, so the
 * IPAM and the Network Manager do not change.
 */

export interface Codec<T> {
  encode(value: T): string;
  /** Throws StateError when the text is not a valid state. */
  decode(text: string): T;
}

/** Held while writing; only one writer at a time. */
export interface StoreLock {
  release(): Promise<void>;
}

export interface Store<T> {
  /** Refuses (StateError) when another live writer holds the store. */
  lock(): Promise<StoreLock>;
  /** The last saved state, or undefined when none was ever saved. */
  load(): Promise<T | undefined>;
  /**
   * FileStore: all or nothing, after a crash at any point load() returns either the old or the new state.
   * The API store: the old state with a part of the change, valid (src/controller/kubernetes/ipam-objects.ts), which
   * the next save completes.
   */
  save(value: T): Promise<void>;
}

/**
 * Lock, load, compute, save, unlock. `change` returns the new state (saved only when it is a different
 * object: the IPAM core returns the same object when nothing changed) and the result to hand back.
 * If `change` throws, nothing is saved. `replace: true` skips loading, so a state that can no longer be
 * loaded (corrupt, or from another version) can still be replaced by a new one.
 */
export async function transact<T, R>(
  store: Store<T>,
  change: (current: T | undefined) => { state: T; result: R },
  options: { replace?: boolean } = {},
): Promise<R> {
  const lock = await store.lock();
  try {
    const current = options.replace ? undefined : await store.load();
    const { state, result } = change(current);
    if (state !== current) await store.save(state);
    return result;
  } finally {
    await lock.release();
  }
}
