/**
 * The controller's leader-election timings from its flags (kube-controller-manager's names, in
 * seconds): client-go's 15/10/2 unless said otherwise. A real control plane needs those (an etcd
 * hiccup under 10 s must not end a term); the lab's in-memory API server may go faster.
 */
import { InputError } from '../errors';
import { type LeaseTimings, checkLeaseTimings, clientGoLeaseTimings } from '../k8s/lease-decision';

export interface LeaderElectionFlags {
  leaderElectLeaseDuration?: string;
  leaderElectRenewDeadline?: string;
  leaderElectRetryPeriod?: string;
}

function seconds(flag: string, value: string | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  const parsed = /^\d+(\.\d+)?$/.test(value) ? Number(value) : NaN;
  if (!(parsed > 0)) throw new InputError(flag, value, 'must be a number of seconds greater than 0, like 15 or 0.5');
  return parsed;
}

/** The timings the flags say, checked as client-go checks them. */
export function leaderElectionTimings(flags: LeaderElectionFlags): LeaseTimings {
  const timings: LeaseTimings = {
    leaseDuration: seconds('--leader-elect-lease-duration', flags.leaderElectLeaseDuration, clientGoLeaseTimings.leaseDuration),
    renewDeadline: seconds('--leader-elect-renew-deadline', flags.leaderElectRenewDeadline, clientGoLeaseTimings.renewDeadline),
    retryPeriod: seconds('--leader-elect-retry-period', flags.leaderElectRetryPeriod, clientGoLeaseTimings.retryPeriod),
  };
  try {
    checkLeaseTimings(timings);
  } catch (err) {
    throw new InputError(
      '--leader-elect-lease-duration, --leader-elect-renew-deadline, --leader-elect-retry-period',
      timings,
      (err as Error).message,
    );
  }
  return timings;
}
