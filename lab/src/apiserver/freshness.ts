/**
 * A read from the watch cache at a resourceVersion the server has not reached yet (a client that saw it
 * on another server, or before this one restarted) waits for it, as the cacher's waitUntilFreshAndBlock
 * does for 3 seconds, then is refused with 504 Too large resource version, which the client retries.
 */
import { tooLargeResourceVersion } from './status';
import type { Store } from './store';

/** watch_cache.go blockTimeout. */
const blockTimeoutMs = 3000;

/** Resolves once the store has reached `resourceVersion` (at once for 0); rejects with the 504 after the wait. */
export function waitUntilFresh(store: Store, resourceVersion: number): Promise<void> {
  if (store.resourceVersion >= resourceVersion) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const stop = store.onChange(() => {
      if (store.resourceVersion < resourceVersion) return;
      clearTimeout(timer);
      stop();
      resolve();
    });
    const timer = setTimeout(() => {
      stop();
      reject(tooLargeResourceVersion(resourceVersion, store.resourceVersion));
    }, blockTimeoutMs);
  });
}
