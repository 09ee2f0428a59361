/**
 * Garbage collection on a timer and on Pod events (the source document's two ways): the pure plan of
 * gc-plan.ts over the informers' caches, applied with uid preconditions (a claim made again since is
 * never released). Only for pod changes that can free an address: deleted, terminating, finished.
 */
import type { V1Pod } from '@kubernetes/client-node';
import { endpointNames } from '../../api/resource-names';
import type { Logger } from '../../log';
import { formatIp } from '../../net/cidr';
import { type GcPlan, type GcPod, type GcSettings, planGarbageCollection } from '../gc-plan';
import type { Allocator } from './allocator';
import type { PoolIpamView } from './cluster-view';

export interface GarbageCollectorOptions {
  view: PoolIpamView;
  allocator: Allocator;
  node: string;
  settings: GcSettings;
  /** The periodic scan (Spiderpool: SPIDERPOOL_GC_DEFAULT_INTERVAL_DURATION, 10 minutes). */
  intervalMs: number;
  log: Logger;
  now?: () => number;
}

const podOf = (pod: V1Pod): GcPod => ({
  uid: pod.metadata?.uid ?? '',
  nodeName: pod.spec?.nodeName ?? '',
  phase: pod.status?.phase ?? '',
  ...(pod.metadata?.deletionTimestamp ? { deletionTimestamp: new Date(pod.metadata.deletionTimestamp).getTime() } : {}),
});

export class GarbageCollector {
  private timer: NodeJS.Timeout | undefined;
  /** Uid per pod key, to know which pod a delete event was about; and the uids seen deleted (bounded). */
  private readonly podUids = new Map<string, string>();
  private readonly deletedPods = new Set<string>();
  /** Per terminating pod, passes at the end of its grace period and after the delay (a Ready node's due time). */
  private readonly due = new Map<string, { ends: number; timers: NodeJS.Timeout[] }>();
  private running: Promise<GcPlan> | undefined;
  private queued: Promise<GcPlan> | undefined;
  private readonly now: () => number;

  constructor(private readonly options: GarbageCollectorOptions) {
    this.now = options.now ?? Date.now;
  }

  start(): void {
    this.timer = setInterval(() => void this.collect().catch(() => undefined), this.options.intervalMs);
    this.timer.unref();
    this.options.view.pods.onChange((key) => this.podChanged(key));
  }

  stop(): void {
    clearInterval(this.timer);
    for (const { timers } of this.due.values()) timers.forEach(clearTimeout);
    this.due.clear();
  }

  private podChanged(key: string): void {
    const pod = this.options.view.pods.get(key);
    const collectNow = () => void this.collect().catch(() => undefined);
    if (!pod) {
      const uid = this.podUids.get(key);
      this.podUids.delete(key);
      if (uid !== undefined) {
        this.deletedPods.add(uid);
        // Enough to outlive any claim's freshness; the oldest uid goes first.
        if (this.deletedPods.size > 10_000) this.deletedPods.delete(this.deletedPods.values().next().value!);
      }
      this.due.get(key)?.timers.forEach(clearTimeout);
      this.due.delete(key);
      collectNow();
      return;
    }
    this.podUids.set(key, pod.metadata?.uid ?? '');
    if (pod.status?.phase === 'Succeeded' || pod.status?.phase === 'Failed') collectNow();
    const ends = pod.metadata?.deletionTimestamp ? new Date(pod.metadata.deletionTimestamp).getTime() : undefined;
    if (ends !== undefined && this.due.get(key)?.ends !== ends) {
      // A shorter grace period asked later moves the times. Which applies (node Ready or not) is the plan's decision then.
      this.due.get(key)?.timers.forEach(clearTimeout);
      const timers = [ends, ends + this.options.settings.additionalGraceDelayMs].map((at) => {
        const timer = setTimeout(collectNow, Math.max(0, at - this.now()) + 50);
        timer.unref();
        return timer;
      });
      this.due.set(key, { ends, timers });
    }
  }

  /** The plan of now, over the caches and the replicas of the StatefulSets claims name. */
  plan(statefulSets: ReadonlyMap<string, number>): GcPlan {
    const { view, allocator } = this.options;
    const pods = new Map(view.pods.list().map((p) => [`${p.metadata?.namespace}/${p.metadata?.name}`, podOf(p)]));
    const nodes = new Map(
      view.nodes
        .list()
        .map((n) => [n.metadata?.name ?? '', (n.status?.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True')]),
    );
    const endpoints = view.endpoints.list().map((e) => ({
      namespace: e.metadata?.namespace ?? '',
      name: e.metadata?.name ?? '',
      uid: e.metadata?.uid ?? '',
      node: e.spec.node,
      podUID: e.spec.podUID,
      created: e.metadata?.creationTimestamp ? new Date(e.metadata.creationTimestamp).getTime() : 0,
    }));
    return planGarbageCollection({
      node: this.options.node,
      now: this.now(),
      claims: allocator.claims.all(),
      endpoints,
      pods,
      nodes,
      statefulSets,
      deletedPods: this.deletedPods,
      settings: this.options.settings,
    });
  }

  /**
   * Plans and applies until a pass that began after this call is done, so what changed before it is
   * collected; the plan returned is what was released and deleted from the pass running at the call, if
   * any, to that one. Passes run one at a time; the calls made while one runs share the next.
   */
  collect(): Promise<GcPlan> {
    if (this.queued) return this.queued;
    if (!this.running) return this.begin();
    this.queued = this.running
      .catch((): GcPlan => ({ release: [], deleteEndpoints: [] }))
      .then(async (running) => {
        this.queued = undefined;
        const next = await this.begin();
        return { release: [...running.release, ...next.release], deleteEndpoints: [...running.deleteEndpoints, ...next.deleteEndpoints] };
      });
    return this.queued;
  }

  private begin(): Promise<GcPlan> {
    this.running = this.pass().finally(() => (this.running = undefined));
    return this.running;
  }

  private async pass(): Promise<GcPlan> {
    const { allocator, log } = this.options;
    const plan = await this.withStatefulSets();
    for (const { claim, reason } of plan.release) {
      try {
        await allocator.release(claim);
        log.info(
          { address: formatIp(claim.address), pool: claim.pool, pod: `${claim.podNamespace}/${claim.podName}`, reason },
          'released a zombie address',
        );
      } catch (err) {
        log.warn(
          { address: formatIp(claim.address), err: (err as Error).message },
          'could not release a zombie address; the next pass tries again',
        );
      }
    }
    for (const { endpoint, reason } of plan.deleteEndpoints) {
      try {
        await allocator.removeEndpoint(endpoint.namespace, endpoint.name, endpoint.uid);
        log.info({ endpoint: `${endpoint.namespace}/${endpoint.name}`, reason }, `deleted an outdated ${endpointNames.kind}`);
      } catch (err) {
        log.warn(
          { endpoint: `${endpoint.namespace}/${endpoint.name}`, err: (err as Error).message },
          `could not delete an outdated ${endpointNames.kind}`,
        );
      }
    }
    try {
      await allocator.collectApplicationPools();
    } catch (err) {
      log.warn({ err: (err as Error).message }, 'could not collect the application pools; the next pass tries again');
    }
    return plan;
  }

  /** The plan, with the replicas of every StatefulSet a claim names read from the API server (few, and never stale for this decision). */
  private async withStatefulSets(): Promise<GcPlan> {
    const { allocator } = this.options;
    const named = new Set(
      allocator.claims.all().flatMap((c) => (c.owner?.kind === 'StatefulSet' ? [`${c.podNamespace}/${c.owner.name}`] : [])),
    );
    return this.plan(await allocator.statefulSets([...named]));
  }
}
