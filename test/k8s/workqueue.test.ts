import assert from 'node:assert/strict';
import fc from 'fast-check';
import { WorkQueue } from '../../src/k8s/workqueue';
import { FakeTimers } from '../support/fake-timers';

/** A process function the test finishes by hand: each call waits until the test resolves or rejects it. */
class Worker {
  readonly calls: string[] = [];
  private current: { key: string; resolve: () => void; reject: (err: Error) => void } | undefined;
  running = 0;
  maxRunning = 0;

  readonly process = (key: string) => {
    this.calls.push(key);
    this.running++;
    this.maxRunning = Math.max(this.maxRunning, this.running);
    return new Promise<void>((resolve, reject) => {
      this.current = { key, resolve, reject };
    }).finally(() => this.running--);
  };

  /** Finishes the call in progress (which must be `key`), and lets the queue go on. */
  async finish(key: string, outcome: 'ok' | 'fail' = 'ok'): Promise<void> {
    await flush();
    assert.equal(this.current?.key, key, `${key} is being processed`);
    const current = this.current!;
    this.current = undefined;
    if (outcome === 'ok') current.resolve();
    else current.reject(new Error(`${key} failed`));
    await flush();
  }
}

/** Lets the queue's microtasks run. */
const flush = async () => {
  for (let i = 0; i < 10; i++) await Promise.resolve();
};

function setup() {
  const timers = new FakeTimers();
  const worker = new Worker();
  const errors: string[] = [];
  const queue = new WorkQueue(worker.process, {
    baseDelay: 100,
    maxDelay: 1000,
    timers,
    onError: (key, _err, failures, retryIn) => errors.push(`${key} #${failures} in ${retryIn}`),
  });
  return { timers, worker, queue, errors };
}

describe('work queue', () => {
  it('processes a key added many times before it runs once, in the order first added', async () => {
    const { worker, queue } = setup();
    for (const key of ['a', 'b', 'a', 'c', 'b', 'a']) queue.add(key);
    assert.deepEqual(worker.calls, [], 'not inside add()');
    await worker.finish('a');
    await worker.finish('b');
    await worker.finish('c');
    await queue.idle();
    assert.deepEqual(worker.calls, ['a', 'b', 'c']);
  });

  it('runs one key at a time', async () => {
    const { worker, queue } = setup();
    queue.add('a');
    queue.add('b');
    await flush();
    assert.deepEqual([worker.calls, worker.running], [['a'], 1]);
    await worker.finish('a');
    await worker.finish('b');
    assert.equal(worker.maxRunning, 1);
  });

  it('processes a key changed while it is being processed once more after, and only once', async () => {
    const { worker, queue } = setup();
    queue.add('a');
    await flush();
    queue.add('a');
    queue.add('b');
    queue.add('a');
    await worker.finish('a');
    await worker.finish('b');
    await worker.finish('a');
    await queue.idle();
    assert.deepEqual(worker.calls, ['a', 'b', 'a']);
  });

  it('retries a failed key after 100, 200, 400, 800, 1000, 1000 ms, and starts from 100 again after a success', async () => {
    const { timers, worker, queue, errors } = setup();
    queue.add('a');
    const delays: number[] = [];
    for (let i = 0; i < 6; i++) {
      await worker.finish('a', 'fail');
      assert.deepEqual(queue.retrying(), ['a']);
      const [delay] = timers.delays();
      delays.push(delay!);
      timers.advance(delay! - 1);
      await flush();
      assert.equal(worker.calls.length, i + 1, 'not before its delay');
      timers.advance(1);
    }
    assert.deepEqual(delays, [100, 200, 400, 800, 1000, 1000]);
    assert.equal(queue.failures('a'), 6);
    await worker.finish('a');
    assert.deepEqual([queue.failures('a'), queue.retrying()], [0, []]);
    queue.add('a');
    await worker.finish('a', 'fail');
    assert.deepEqual(timers.delays(), [100]);
    assert.deepEqual(errors, ['a #1 in 100', 'a #2 in 200', 'a #3 in 400', 'a #4 in 800', 'a #5 in 1000', 'a #6 in 1000', 'a #1 in 100']);
  });

  it('a failed key added again during its delay runs at once, keeping its count of failures', async () => {
    const { timers, worker, queue } = setup();
    queue.add('a');
    await worker.finish('a', 'fail');
    assert.deepEqual(timers.delays(), [100], 'one retry waiting');
    queue.add('a');
    assert.deepEqual([timers.delays(), queue.retrying()], [[], []], 'its timer is cancelled');
    await worker.finish('a', 'fail');
    assert.deepEqual(timers.delays(), [200]);
  });

  it('a key that fails while it was changed runs again at once, without a timer', async () => {
    const { timers, worker, queue } = setup();
    queue.add('a');
    await flush();
    queue.add('a');
    await worker.finish('a', 'fail');
    assert.deepEqual([timers.delays(), worker.calls], [[], ['a', 'a']]);
    await worker.finish('a');
    assert.equal(queue.failures('a'), 0);
  });

  it('shutDown waits for the key being processed, drops waiting retries and processes nothing more', async () => {
    const { timers, worker, queue } = setup();
    queue.add('a');
    queue.add('b');
    await worker.finish('a', 'fail');
    let down = false;
    const done = queue.shutDown().then(() => (down = true));
    await flush();
    assert.equal(down, false, 'b is still being processed');
    await worker.finish('b');
    await done;
    assert.deepEqual(timers.delays(), [], "a's retry timer is gone (it would keep the process alive)");
    queue.add('c');
    timers.advance(10_000);
    await flush();
    assert.deepEqual(worker.calls, ['a', 'b']);
  });

  it('every key added is processed, the last time after its last add, never two at once (property)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.oneof(
            fc.constantFrom('a', 'b', 'c').map((key) => ({ add: key })),
            fc.constant({ step: true }),
          ),
          { maxLength: 40 },
        ),
        async (script) => {
          const calls: string[] = [];
          let running = 0;
          const queue = new WorkQueue(async (key) => {
            running++;
            assert.equal(running, 1);
            calls.push(key);
            await Promise.resolve();
            running--;
          });
          const lastAdd = new Map<string, number>();
          for (const s of script) {
            if ('add' in s) {
              queue.add(s.add);
              lastAdd.set(s.add, calls.length);
            } else {
              await Promise.resolve();
            }
          }
          await queue.idle();
          for (const [key, before] of lastAdd)
            assert.ok(calls.slice(before).includes(key), `${key} processed after its last add (${calls.join(',')})`);
          assert.equal(calls.length <= script.length, true);
        },
      ),
      { numRuns: 300 },
    );
  });
});
