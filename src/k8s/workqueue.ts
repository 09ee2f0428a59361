/**
 * A work queue of object keys with one worker, as client-go's workqueue with its rate limiter: a key
 * added many times before it is processed is processed once; a key added while being processed is
 * processed once more after (the change may have come after the worker read the object); a key whose
 * processing fails is retried after a delay doubling from baseDelay up to maxDelay, until it succeeds
 * (the desired state must be reached eventually), or sooner when it is added again (a change may have
 * fixed it). Keys run in the order they were added; one at a time, so a reconcile never races itself.
 */

/** The timers the queue uses; tests pass a fake one (test/support/fake-timers.ts). */
export interface Timers {
  setTimeout(run: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

const systemTimers: Timers = {
  setTimeout: (run, ms) => setTimeout(run, ms),
  clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
};

export interface WorkQueueOptions {
  /** The first retry's delay, ms (default 100). */
  baseDelay?: number;
  /** The longest delay between retries, ms (default 30,000). */
  maxDelay?: number;
  timers?: Timers;
  /** Told of each failure, with the failures in a row and the delay before the retry. */
  onError?(key: string, err: unknown, failures: number, retryIn: number): void;
}

export class WorkQueue {
  private readonly queue: string[] = [];
  /** Keys waiting in the queue, or added again while being processed. */
  private readonly dirty = new Set<string>();
  private processing: string | undefined;
  private readonly retries = new Map<string, unknown>();
  private readonly failureCounts = new Map<string, number>();
  private running = false;
  private shut = false;
  private idleWaiters: (() => void)[] = [];
  private readonly baseDelay: number;
  private readonly maxDelay: number;
  private readonly timers: Timers;

  constructor(
    private readonly process: (key: string) => Promise<void>,
    private readonly options: WorkQueueOptions = {},
  ) {
    this.baseDelay = options.baseDelay ?? 100;
    this.maxDelay = options.maxDelay ?? 30_000;
    this.timers = options.timers ?? systemTimers;
  }

  add(key: string): void {
    if (this.shut) return;
    const retry = this.retries.get(key);
    if (retry !== undefined) {
      this.timers.clearTimeout(retry);
      this.retries.delete(key);
    }
    if (this.dirty.has(key)) return;
    this.dirty.add(key);
    if (this.processing === key) return;
    this.queue.push(key);
    this.wake();
  }

  /** Failures in a row of `key` (0 once it succeeds). */
  failures(key: string): number {
    return this.failureCounts.get(key) ?? 0;
  }

  /** Keys waiting for a retry's delay. */
  retrying(): string[] {
    return [...this.retries.keys()];
  }

  /** Resolves once nothing is queued or being processed (keys waiting for a retry do not count). */
  idle(): Promise<void> {
    if (!this.running) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /** Processes nothing more, drops the waiting retries, and resolves when the key being processed is done. */
  async shutDown(): Promise<void> {
    this.shut = true;
    for (const handle of this.retries.values()) this.timers.clearTimeout(handle);
    this.retries.clear();
    await this.idle();
  }

  private wake(): void {
    if (this.running) return;
    this.running = true;
    // On a microtask, not inside add(): the adds of one event burst are merged, and the caller's handler
    // does not run a reconcile within itself.
    void Promise.resolve().then(() => this.work());
  }

  private async work(): Promise<void> {
    while (this.queue.length > 0 && !this.shut) {
      const key = this.queue.shift()!;
      this.dirty.delete(key);
      this.processing = key;
      try {
        await this.process(key);
        this.failureCounts.delete(key);
      } catch (err) {
        const failures = this.failures(key) + 1;
        this.failureCounts.set(key, failures);
        const delay = Math.min(this.baseDelay * 2 ** (failures - 1), this.maxDelay);
        this.options.onError?.(key, err, failures, delay);
        // Added again meanwhile: it runs again now, no need to wait.
        if (!this.dirty.has(key) && !this.shut) {
          this.retries.set(
            key,
            this.timers.setTimeout(() => {
              this.retries.delete(key);
              this.add(key);
            }, delay),
          );
        }
      } finally {
        this.processing = undefined;
        if (this.dirty.has(key)) this.queue.push(key);
      }
    }
    this.running = false;
    const waiters = this.idleWaiters;
    this.idleWaiters = [];
    for (const resolve of waiters) resolve();
  }
}
