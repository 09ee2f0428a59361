/** The controller's leader-election timings: client-go's defaults unless the flags say otherwise, checked as client-go checks them. */
import assert from 'node:assert/strict';
import { InputError } from '../../src/errors';
import { leaderElectionTimings } from '../../src/cli/leader-election-flags';

describe('controller leader-election flags', () => {
  // k8s.io/client-go/tools/leaderelection and kube-controller-manager: 15 s, 10 s, 2 s.
  it("defaults to client-go's 15/10/2 seconds", () => {
    assert.deepEqual(leaderElectionTimings({}), { leaseDuration: 15, renewDeadline: 10, retryPeriod: 2 });
  });

  it('takes shorter timings when all three agree (the lab)', () => {
    assert.deepEqual(
      leaderElectionTimings({ leaderElectLeaseDuration: '4', leaderElectRenewDeadline: '3', leaderElectRetryPeriod: '0.5' }),
      { leaseDuration: 4, renewDeadline: 3, retryPeriod: 0.5 },
    );
  });

  it('refuses a value that is no number of seconds, naming the flag and value', () => {
    assert.throws(
      () => leaderElectionTimings({ leaderElectRetryPeriod: '2s' }),
      (err: unknown) => err instanceof InputError && err.field === '--leader-elect-retry-period' && err.value === '2s',
    );
  });

  it('refuses timings client-go refuses: a renew deadline not shorter than the lease', () => {
    assert.throws(() => leaderElectionTimings({ leaderElectRenewDeadline: '15' }), /renewDeadline 15 must be less than leaseDuration 15/);
    assert.throws(() => leaderElectionTimings({ leaderElectLeaseDuration: '1.5' }), /a whole number of seconds/);
  });
});
