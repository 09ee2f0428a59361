/**
 * Leader election on a coordination.k8s.io/v1 Lease through the API server: read, decide
 * (lease-decision.ts), write with the resourceVersion read as precondition. A 409 means another elector
 * wrote first: nothing is overwritten, the next attempt reads again. Ours, not a library's:
 * @kubernetes/client-node 1.4.0 has no leader election.
 *
 * A leader that cannot renew for renewDeadline stops leading (a timer, so a hung request cannot hold it
 * leading), before a standby may take over (leaseDuration after it last saw a renewal). A clean stop
 * first stops the leader's work (onStoppedLeading is awaited), then releases the Lease (holderIdentity
 * cleared, as client-go's ReleaseOnCancel) so a standby takes over at its next attempt, not a lease later.
 */
import { type CoordinationV1Api, type V1Lease, V1MicroTime } from '@kubernetes/client-node';
import type { Logger } from '../log';
import { apiErrorText, apiStatus } from './api-errors';
import {
  type LeaseRead,
  type LeaseRecord,
  type LeaseTimings,
  type Observation,
  checkLeaseTimings,
  decideLease,
  releasedLease,
} from './lease-decision';

export interface LeaderElectorOptions extends LeaseTimings {
  api: CoordinationV1Api;
  namespace: string;
  /** The Lease's name. */
  name: string;
  /** Unique per replica (the Pod name). */
  identity: string;
  /** Called when this elector starts leading. */
  onStartedLeading(): void;
  /** Called when it stops (lost, renewDeadline passed, or stop()); the work must be stopped when it resolves. */
  onStoppedLeading(): void | Promise<void>;
  /** Called when another identity is seen holding the Lease. */
  onNewLeader?(holder: string): void;
  log?: Logger;
}

const timeOf = (value: unknown) => (value === undefined || value === null ? undefined : new Date(value as string | Date));

/** The Lease as election reads it; client-node hands MicroTime fields over as strings. */
function leaseRead(lease: V1Lease): LeaseRead {
  const s = lease.spec ?? {};
  const acquireTime = timeOf(s.acquireTime);
  const renewTime = timeOf(s.renewTime);
  return {
    resourceVersion: lease.metadata?.resourceVersion ?? '',
    spec: {
      ...(s.holderIdentity !== undefined ? { holderIdentity: s.holderIdentity } : {}),
      ...(s.leaseDurationSeconds !== undefined ? { leaseDurationSeconds: s.leaseDurationSeconds } : {}),
      ...(acquireTime ? { acquireTime } : {}),
      ...(renewTime ? { renewTime } : {}),
      ...(s.leaseTransitions !== undefined ? { leaseTransitions: s.leaseTransitions } : {}),
    },
  };
}

/** MicroTime on the wire: six fractional digits, which the API server requires. */
const micro = (date: Date | undefined) => (date ? new V1MicroTime(date.getTime()) : undefined);

export class LeaderElector {
  private observed: Observation | undefined;
  /** The Lease as we last wrote it, while leading. */
  private held: LeaseRead | undefined;
  private isLeading = false;
  private stopped = true;
  private leader: string | undefined;
  private tickTimer: NodeJS.Timeout | undefined;
  private deadlineTimer: NodeJS.Timeout | undefined;
  private attempt: Promise<void> = Promise.resolve();
  /** Callbacks run one after another: a new term never starts before the last one's stop resolved. */
  private callbacks: Promise<void> = Promise.resolve();

  constructor(private readonly options: LeaderElectorOptions) {
    checkLeaseTimings(options);
  }

  get leading(): boolean {
    return this.isLeading;
  }

  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    this.schedule(0);
  }

  /** Stops trying; when leading, stops the work (onStoppedLeading) and then releases the Lease. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    clearTimeout(this.tickTimer);
    await this.attempt;
    if (!this.isLeading) return;
    this.lose('stopping');
    await this.callbacks;
    const held = this.held!;
    try {
      await this.options.api.replaceNamespacedLease({
        name: this.options.name,
        namespace: this.options.namespace,
        body: this.body(releasedLease(held.spec, Date.now()), held.resourceVersion),
      });
      this.options.log?.info({ lease: this.options.name }, 'released the lease');
    } catch (err) {
      // 409: another elector took it since our last renewal; it is theirs now.
      this.options.log?.warn({ lease: this.options.name, error: apiErrorText(err) }, 'could not release the lease');
    }
  }

  private schedule(ms: number): void {
    if (this.stopped) return;
    this.tickTimer = setTimeout(() => {
      this.attempt = this.tryAcquireOrRenew().finally(() => this.schedule(this.options.retryPeriod * 1000));
    }, ms);
  }

  private body(spec: LeaseRecord, resourceVersion: string | undefined): V1Lease {
    return {
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: {
        name: this.options.name,
        namespace: this.options.namespace,
        ...(resourceVersion !== undefined ? { resourceVersion } : {}),
      },
      spec: { ...spec, acquireTime: micro(spec.acquireTime), renewTime: micro(spec.renewTime) },
    } as V1Lease;
  }

  private async read(): Promise<LeaseRead | undefined> {
    try {
      return leaseRead(await this.options.api.readNamespacedLease({ name: this.options.name, namespace: this.options.namespace }));
    } catch (err) {
      if (apiStatus(err) === 404) return undefined;
      throw err;
    }
  }

  private async tryAcquireOrRenew(): Promise<void> {
    const { api, namespace, identity, log } = this.options;
    try {
      const decision = decideLease(await this.read(), this.observed, Date.now(), identity, this.options);
      this.observed = decision.observed;
      if (this.stopped) return;
      if (decision.action === 'follow' || decision.action === 'wait') {
        if (this.isLeading) this.lose(`the lease is held by ${decision.holder}`);
        this.seeLeader(decision.holder);
        return;
      }
      const body = this.body(decision.write, decision.resourceVersion);
      const written = leaseRead(
        decision.resourceVersion === undefined
          ? await api.createNamespacedLease({ namespace, body })
          : await api.replaceNamespacedLease({ name: this.options.name, namespace, body }),
      );
      // Written, so renewed from now on, even when stop() came meanwhile (it releases what we hold).
      this.held = written;
      this.observed = { key: `${written.resourceVersion} ${JSON.stringify(written.spec)}`, at: Date.now() };
      this.armDeadline();
      this.seeLeader(identity);
      if (!this.isLeading) {
        this.isLeading = true;
        log?.info({ lease: this.options.name, identity, transitions: written.spec.leaseTransitions }, 'started leading');
        this.callback('onStartedLeading', () => this.options.onStartedLeading());
      }
    } catch (err) {
      // 409: another elector wrote first; anything else: the API server is not reachable. Either way the
      // next attempt reads again; the renewDeadline timer ends a term that cannot be renewed.
      log?.warn({ lease: this.options.name, error: apiErrorText(err) }, 'lease not acquired or renewed');
    }
  }

  private armDeadline(): void {
    clearTimeout(this.deadlineTimer);
    this.deadlineTimer = setTimeout(
      () => this.lose(`not renewed within ${this.options.renewDeadline} s`),
      this.options.renewDeadline * 1000,
    );
  }

  private seeLeader(holder: string): void {
    if (holder === this.leader) return;
    this.leader = holder;
    if (holder !== this.options.identity) this.options.onNewLeader?.(holder);
  }

  private lose(why: string): void {
    clearTimeout(this.deadlineTimer);
    if (!this.isLeading) return;
    this.isLeading = false;
    this.options.log?.info({ lease: this.options.name, identity: this.options.identity, why }, 'stopped leading');
    this.callback('onStoppedLeading', () => this.options.onStoppedLeading());
  }

  private callback(name: string, run: () => void | Promise<void>): void {
    this.callbacks = this.callbacks
      .then(run)
      .catch((err: unknown) => this.options.log?.error({ lease: this.options.name, error: String(err) }, `${name} failed`));
  }
}
