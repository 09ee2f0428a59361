import assert from 'node:assert/strict';
import { getHeapSpaceStatistics } from 'node:v8';
import { native } from '../../src/native/binding';

const newSpaceMiB = () => getHeapSpaceStatistics().find((s) => s.space_name === 'new_space')!.space_size / 2 ** 20;

describe('releasing memory (native)', () => {
  it('collects what is no longer reachable and shrinks the young generation back to its least', async () => {
    // 2,000,000 objects that survive their first collections: the young generation grows to its most.
    let garbage: object[][] | undefined = Array.from({ length: 20 }, () => Array.from({ length: 100_000 }, (_, i) => ({ i })));
    const collected = new WeakRef(garbage);
    garbage = undefined;
    assert.ok(newSpaceMiB() >= 16, `the young generation grew (${newSpaceMiB()} MiB)`);
    // A WeakRef's target is kept until the current job ends.
    await new Promise((resolve) => setImmediate(resolve));
    native().releaseMemory();
    assert.equal(collected.deref(), undefined, 'collected');
    assert.equal(newSpaceMiB(), 1, 'semi-spaces of 1 MiB (Node 20)');
  });
});
