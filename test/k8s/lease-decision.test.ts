import assert from 'node:assert/strict';
import { type LeaseDecision, type LeaseRead, checkLeaseTimings, decideLease, releasedLease } from '../../src/k8s/lease-decision';

const timings = { leaseDuration: 15, renewDeadline: 10, retryPeriod: 2 };
const t0 = Date.parse('2026-01-01T00:00:00.000Z');
const at = (seconds: number) => t0 + seconds * 1000;
const date = (seconds: number) => new Date(at(seconds));

const lease = (rv: string, holder: string, transitions: number, renewed = 0, durationSeconds = 15): LeaseRead => ({
  resourceVersion: rv,
  spec: {
    holderIdentity: holder,
    leaseDurationSeconds: durationSeconds,
    acquireTime: date(-100),
    renewTime: date(renewed),
    leaseTransitions: transitions,
  },
});

/** A decision in one line: action, then what is written (holder, transitions, acquired, renewed, on which RV) or whom we wait for and until when. */
function line(d: LeaseDecision): string {
  const s = (ms: number) => `${(ms - t0) / 1000}s`;
  if (d.action === 'follow' || d.action === 'wait') return `${d.action} ${d.holder} until ${s(d.expiresAt)}`;
  const w = d.write;
  return `${d.action} as ${w.holderIdentity} transitions ${w.leaseTransitions} acquired ${s(w.acquireTime!.getTime())} renewed ${s(w.renewTime!.getTime())} for ${w.leaseDurationSeconds}s on ${d.resourceVersion ?? 'create'}`;
}

describe('leader election: the decision on a Lease', () => {
  it('creates a missing Lease, with no transition counted', () => {
    assert.equal(
      line(decideLease(undefined, undefined, at(1), 'me', timings)),
      'acquire as me transitions 0 acquired 1s renewed 1s for 15s on create',
    );
  });

  it('renews a Lease it holds, keeping its acquire time and transitions', () => {
    assert.equal(
      line(decideLease(lease('7', 'me', 3), undefined, at(2), 'me', timings)),
      'renew as me transitions 3 acquired -100s renewed 2s for 15s on 7',
    );
  });

  it('takes a released Lease at once, counting a transition', () => {
    const released: LeaseRead = { resourceVersion: '9', spec: { holderIdentity: '', leaseDurationSeconds: 1, leaseTransitions: 4 } };
    assert.equal(
      line(decideLease(released, undefined, at(0), 'me', timings)),
      'acquire as me transitions 5 acquired 0s renewed 0s for 15s on 9',
    );
    assert.equal(
      line(decideLease({ resourceVersion: '9', spec: {} }, undefined, at(0), 'me', timings)),
      'acquire as me transitions 1 acquired 0s renewed 0s for 15s on 9',
    );
  });

  it("follows another holder while it renews, and takes the Lease leaseDuration after it last saw it change (its own clock, the holder's duration)", () => {
    const steps: [LeaseRead, number, string][] = [
      [lease('10', 'other', 2), 0, 'follow other until 15s'],
      [lease('10', 'other', 2), 2, 'wait other until 15s'],
      [lease('11', 'other', 2, 4), 4, 'follow other until 19s'],
      [lease('11', 'other', 2, 4), 18.999, 'wait other until 19s'],
      [lease('11', 'other', 2, 4), 19, 'acquire as me transitions 3 acquired 19s renewed 19s for 15s on 11'],
    ];
    let observed;
    for (const [read, seconds, expected] of steps) {
      const d = decideLease(read, observed, at(seconds), 'me', timings);
      assert.equal(line(d), expected, `at ${seconds}s`);
      observed = d.observed;
    }
  });

  it("does not trust the renewTime written in the Lease (another machine's clock): a Lease renewed long ago by its clock is waited for", () => {
    assert.equal(line(decideLease(lease('12', 'other', 0, -3600), undefined, at(0), 'me', timings)), 'follow other until 15s');
  });

  it("counts the holder's own leaseDurationSeconds, not ours", () => {
    const d1 = decideLease(lease('13', 'other', 0, 0, 40), undefined, at(0), 'me', timings);
    assert.equal(line(d1), 'follow other until 40s');
    assert.equal(line(decideLease(lease('13', 'other', 0, 0, 40), d1.observed, at(39), 'me', timings)), 'wait other until 40s');
    assert.equal(
      line(decideLease(lease('13', 'other', 0, 0, 40), d1.observed, at(40), 'me', timings)),
      'acquire as me transitions 1 acquired 40s renewed 40s for 15s on 13',
    );
  });

  it('a Lease written with the same resourceVersion but another content counts as a change (a server that was restarted)', () => {
    const d1 = decideLease(lease('5', 'other', 0), undefined, at(0), 'me', timings);
    assert.equal(line(decideLease(lease('5', 'third', 0), d1.observed, at(16), 'me', timings)), 'follow third until 31s');
  });

  it('releases a held Lease: no holder, one second, transitions kept', () => {
    assert.deepEqual(releasedLease(lease('7', 'me', 3).spec, at(5)), {
      holderIdentity: '',
      leaseDurationSeconds: 1,
      acquireTime: date(5),
      renewTime: date(5),
      leaseTransitions: 3,
    });
  });

  it('refuses timings that could let two leaders overlap, as client-go does', () => {
    checkLeaseTimings({ leaseDuration: 2, renewDeadline: 1.5, retryPeriod: 0.25 });
    assert.throws(
      () => checkLeaseTimings({ leaseDuration: 10, renewDeadline: 10, retryPeriod: 2 }),
      /renewDeadline 10 must be less than leaseDuration 10/,
    );
    assert.throws(
      () => checkLeaseTimings({ leaseDuration: 10, renewDeadline: 6, retryPeriod: 5 }),
      /retryPeriod 5 must be positive and 1\.2 times it less than renewDeadline 6/,
    );
    assert.throws(
      () => checkLeaseTimings({ leaseDuration: 1.5, renewDeadline: 1, retryPeriod: 0.2 }),
      /leaseDuration 1\.5: a whole number of seconds/,
    );
  });
});
