/**
 * Leader election on a coordination.k8s.io/v1 Lease, the decision alone (pure), as client-go's
 * tryAcquireOrRenew makes it. An elector reads the Lease, decides here, and writes what this says with the
 * resourceVersion it read as the precondition (leader-elector.ts).
 *
 * Expiry is judged on this elector's own clock: the holder's lease runs leaseDurationSeconds from when
 * this elector first saw the Lease as it is now (any renewal changes it), never from the renewTime
 * written in it, so two machines' clocks need not agree.
 */

/** Seconds, as client-go's LeaderElectionConfig. */
export interface LeaseTimings {
  /** How long a standby waits, after it last saw the Lease change, before taking it. A whole number (the Lease holds seconds). */
  leaseDuration: number;
  /** How long a leader keeps leading without a successful renewal. */
  renewDeadline: number;
  /** Between two attempts to acquire or renew. */
  retryPeriod: number;
}

/**
 * client-go's defaults (and kube-controller-manager's, Cilium's): a dead leader is replaced within 15 s
 * plus a retry, and a leader survives an API server or etcd hiccup of up to 10 s.
 */
export const clientGoLeaseTimings: LeaseTimings = { leaseDuration: 15, renewDeadline: 10, retryPeriod: 2 };

/** The fields of a Lease's spec that election reads and writes. */
export interface LeaseRecord {
  /** Absent or '' when nobody holds the Lease (never taken, or released). */
  holderIdentity?: string;
  leaseDurationSeconds?: number;
  acquireTime?: Date;
  renewTime?: Date;
  leaseTransitions?: number;
}

export interface LeaseRead {
  resourceVersion: string;
  spec: LeaseRecord;
}

/** The Lease as this elector last saw it, and when (ms, its own clock) it first saw it so. */
export interface Observation {
  key: string;
  at: number;
}

export type LeaseDecision =
  /** Take the Lease: create it (resourceVersion undefined) or replace the one read. */
  | { action: 'acquire'; write: LeaseRecord; resourceVersion: string | undefined; observed: Observation | undefined }
  /** We hold it: replace the one read with a new renewTime. */
  | { action: 'renew'; write: LeaseRecord; resourceVersion: string; observed: Observation }
  /** Another holder renewed since we last looked: it is alive. Check again later. */
  | { action: 'follow'; holder: string; expiresAt: number; observed: Observation }
  /** Another holder has not renewed since we last looked; it loses the Lease at expiresAt (ms, our clock). */
  | { action: 'wait'; holder: string; expiresAt: number; observed: Observation };

/** Checks timings as client-go does: leaseDuration > renewDeadline > retryPeriod × 1.2 (its jitter). */
export function checkLeaseTimings(t: LeaseTimings): void {
  if (!Number.isInteger(t.leaseDuration) || t.leaseDuration < 1)
    throw new Error(`leaseDuration ${t.leaseDuration}: a whole number of seconds, at least 1`);
  if (!(t.renewDeadline < t.leaseDuration))
    throw new Error(`renewDeadline ${t.renewDeadline} must be less than leaseDuration ${t.leaseDuration}`);
  if (!(t.retryPeriod > 0 && t.retryPeriod * 1.2 < t.renewDeadline))
    throw new Error(`retryPeriod ${t.retryPeriod} must be positive and 1.2 times it less than renewDeadline ${t.renewDeadline}`);
}

const keyOf = (lease: LeaseRead) => `${lease.resourceVersion} ${JSON.stringify(lease.spec)}`;

/**
 * What `identity` does with the Lease as read (undefined: there is none), at `now` (ms, our clock).
 * `observed` is the previous decision's.
 */
export function decideLease(
  lease: LeaseRead | undefined,
  observed: Observation | undefined,
  now: number,
  identity: string,
  timings: LeaseTimings,
): LeaseDecision {
  const taken = (transitions: number): LeaseRecord => ({
    holderIdentity: identity,
    leaseDurationSeconds: timings.leaseDuration,
    acquireTime: new Date(now),
    renewTime: new Date(now),
    leaseTransitions: transitions,
  });
  if (!lease) return { action: 'acquire', write: taken(0), resourceVersion: undefined, observed: undefined };

  const key = keyOf(lease);
  const seen = observed?.key === key ? observed : { key, at: now };
  const holder = lease.spec.holderIdentity ?? '';
  const transitions = lease.spec.leaseTransitions ?? 0;
  if (holder === identity) {
    const { acquireTime } = lease.spec;
    return {
      action: 'renew',
      write: { ...taken(transitions), ...(acquireTime ? { acquireTime } : {}) },
      resourceVersion: lease.resourceVersion,
      observed: seen,
    };
  }
  // The holder's own duration counts (it may be configured differently from us), as in client-go.
  const duration =
    lease.spec.leaseDurationSeconds && lease.spec.leaseDurationSeconds > 0 ? lease.spec.leaseDurationSeconds : timings.leaseDuration;
  const expiresAt = seen.at + duration * 1000;
  if (holder !== '' && now < expiresAt) return { action: seen === observed ? 'wait' : 'follow', holder, expiresAt, observed: seen };
  return { action: 'acquire', write: taken(transitions + 1), resourceVersion: lease.resourceVersion, observed: seen };
}

/** The record that releases a held Lease on a clean stop (client-go's ReleaseOnCancel): a standby takes it at its next attempt. */
export function releasedLease(held: LeaseRecord, now: number): LeaseRecord {
  return {
    holderIdentity: '',
    leaseDurationSeconds: 1,
    acquireTime: new Date(now),
    renewTime: new Date(now),
    leaseTransitions: held.leaseTransitions ?? 0,
  };
}
