import assert from 'node:assert/strict';
import { percentile } from './result';

describe('bench percentiles (pure)', () => {
  it('takes the nearest rank: the smallest sample with at least p% of the samples at or below it', () => {
    const samples = [40, 15, 50, 35, 20];
    assert.deepEqual(
      [5, 30, 40, 50, 100].map((p) => percentile(samples, p)),
      [15, 20, 20, 35, 50],
    );
  });

  it('gives the 990th of 1,000 samples as p99 and the 99th of 100, however the samples are ordered', () => {
    const thousand = Array.from({ length: 1000 }, (_, i) => (i * 7919) % 1000);
    assert.equal(percentile(thousand, 99), 989);
    assert.equal(percentile(thousand, 50), 499);
    assert.equal(
      percentile(
        Array.from({ length: 100 }, (_, i) => 100 - i),
        99,
      ),
      99,
    );
  });

  it('refuses no samples and a p outside (0, 100]', () => {
    assert.throws(() => percentile([], 50), /percentile 50 of 0 samples/);
    assert.throws(() => percentile([1], 0), /percentile 0 of 1 samples/);
    assert.throws(() => percentile([1], 101), /percentile 101 of 1 samples/);
  });
});
