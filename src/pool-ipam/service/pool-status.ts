/**
 * StraitIPPool status counts (allocatedIPCount, totalIPCount), written off the allocation path: a while after
 * claims change (debounced), only where the count differs. Every node's service may write them; they
 * agree, since each counts the same claims.
 */
import { type CustomObjectsApi, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { group, ipPoolNames, version } from '../../api/resource-names';
import { apiErrorText } from '../../k8s/api-errors';
import type { Logger } from '../../log';
import { poolSize } from '../pick-address';
import type { Allocator } from './allocator';
import type { PoolIpamView } from './cluster-view';

export class PoolStatusWriter {
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly api: CustomObjectsApi,
    private readonly view: PoolIpamView,
    private readonly allocator: Allocator,
    private readonly log: Logger,
    private readonly delayMs = 1000,
  ) {}

  start(): void {
    const later = () => {
      if (this.timer) return;
      this.timer = setTimeout(() => {
        this.timer = undefined;
        void this.write();
      }, this.delayMs);
    };
    this.view.claims.onChange(later);
    this.view.pools.onChange(later);
    later();
  }

  stop(): void {
    clearTimeout(this.timer);
  }

  /** The counts of every valid pool, written where they differ. */
  async write(): Promise<void> {
    const allocated = new Map<string, number>();
    for (const c of this.allocator.claims.all()) if (!c.conflict) allocated.set(c.pool, (allocated.get(c.pool) ?? 0) + 1);
    for (const pool of this.allocator.pools().valid) {
      const status = { allocatedIPCount: allocated.get(pool.name) ?? 0, totalIPCount: Number(poolSize(pool)) };
      const current = this.view.pools.get(pool.name)?.status;
      if (current?.allocatedIPCount === status.allocatedIPCount && current?.totalIPCount === status.totalIPCount) continue;
      try {
        await this.api.patchClusterCustomObjectStatus(
          { group, version, plural: ipPoolNames.plural, name: pool.name, body: { status } },
          setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
        );
      } catch (err) {
        this.log.debug({ pool: pool.name, err: apiErrorText(err) }, 'could not write the pool status counts');
      }
    }
  }
}
