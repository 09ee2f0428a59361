/** client-go's jittered exponential backoff (apimachinery wait.Backoff.Step, Jitter; the reflector's backoff manager). */
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { type BackoffState, initialBackoff, nextBackoff, reflectorBackoff } from '../../src/k8s/backoff';

const p = reflectorBackoff;

describe('backoff', () => {
  it("waits 0.8 s doubling to 30 s, each delay stretched by a random share of up to its step (jitter 1.0), as client-go's reflector", () => {
    fc.assert(
      fc.property(fc.array(fc.double({ min: 0, max: 0.999999, noNaN: true }), { minLength: 1, maxLength: 20 }), (randoms) => {
        let state: BackoffState = initialBackoff(p);
        randoms.forEach((random, i) => {
          const step = Math.min(p.initial * p.factor ** i, p.cap);
          const next = nextBackoff(state, p, 1000 * i, random);
          assert.ok(next.delay >= step && next.delay < step * (1 + p.jitter), `failure ${i + 1}: ${next.delay} ms, step ${step}`);
          assert.ok(Math.abs(next.delay - step * (1 + random)) < 1e-6, 'the share is the random one');
          state = next.state;
        });
      }),
    );
  });

  it('never waits less than 0.8 s nor more than twice the 30 s cap', () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.integer({ min: 0, max: 300_000 }), fc.double({ min: 0, max: 0.999999, noNaN: true })), { maxLength: 50 }),
        (failures) => {
          let state = initialBackoff(p);
          let now = 0;
          for (const [gap, random] of failures) {
            now += gap;
            const next = nextBackoff(state, p, now, random);
            assert.ok(next.delay >= p.initial && next.delay < 2 * p.cap);
            state = next.state;
          }
        },
      ),
    );
  });

  it('starts again from 0.8 s after 2 minutes without a failure', () => {
    let state = initialBackoff(p);
    for (let i = 0; i < 10; i++) state = nextBackoff(state, p, i * 1000, 0).state;
    assert.equal(nextBackoff(state, p, 9000 + p.resetAfter - 1, 0).delay, p.cap, 'still backing off just before the reset');
    assert.equal(nextBackoff(state, p, 9000 + p.resetAfter, 0).delay, p.initial);
  });
});
