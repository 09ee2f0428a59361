/**
 * kube-apiserver's compactor (k8s.io/apiserver pkg/storage/etcd3/compact.go): every interval (its
 * default: 5 minutes) it compacts etcd's history up to the revision etcd had at the previous tick, so a
 * past version stays readable for one to two intervals; a list or continue token of an older one is a
 * 410 Expired, as on a real cluster.
 */
import type { Logger } from '../../../src/log';

interface Compactable {
  readonly resourceVersion: number;
  compact(revision: number): Promise<void>;
}

/** Starts compacting `store` every `intervalMs`; returns the function that stops it. */
export function startCompactor(store: Compactable, intervalMs: number, logger?: Logger): () => void {
  let previous: number | undefined;
  const timer = setInterval(() => {
    const upTo = previous;
    previous = store.resourceVersion;
    if (upTo === undefined) return;
    store.compact(upTo).then(
      () => logger?.debug({ revision: upTo }, 'etcd compacted'),
      (err: unknown) => logger?.warn({ err, revision: upTo }, 'etcd compaction failed'),
    );
  }, intervalMs);
  timer.unref();
  return () => clearInterval(timer);
}
