/** Timers a test moves by hand (for src/k8s/workqueue.ts's Timers): no sleeps, delays checked exactly. */
import type { Timers } from '../../src/k8s/workqueue';

interface Timer {
  at: number;
  run: () => void;
  delay: number;
}

export class FakeTimers implements Timers {
  now = 0;
  private readonly pending = new Map<number, Timer>();
  private nextId = 1;

  setTimeout(run: () => void, ms: number): unknown {
    const id = this.nextId++;
    this.pending.set(id, { at: this.now + ms, run, delay: ms });
    return id;
  }

  clearTimeout(handle: unknown): void {
    this.pending.delete(handle as number);
  }

  /** The delays of the timers set and not yet run, in the order they were set. */
  delays(): number[] {
    return [...this.pending.values()].map((t) => t.delay);
  }

  /** Moves the clock by `ms`, running each timer that comes due, in time order. */
  advance(ms: number): void {
    const until = this.now + ms;
    for (;;) {
      const due = [...this.pending.entries()].filter(([, t]) => t.at <= until).sort(([, a], [, b]) => a.at - b.at)[0];
      if (!due) break;
      this.pending.delete(due[0]);
      this.now = due[1].at;
      due[1].run();
    }
    this.now = until;
  }
}
