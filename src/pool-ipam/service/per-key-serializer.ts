/**
 * Runs tasks of one key one after another and tasks of different keys at once: the service's CNI calls
 * for one attachment (container, interface, network). CNI forbids parallel calls for one attachment, but
 * a runtime that gave up waiting on an ADD calls ADD again (or DEL) while the first still runs here; in
 * turn, the second sees what the first did (the same addresses, or none left to release).
 */
export class PerKeySerializer {
  /** The last task queued per key, settled or not; a key leaves the map when its last task settles. */
  private readonly tails = new Map<string, Promise<unknown>>();

  run<T>(key: string, task: () => Promise<T>): Promise<T> {
    const previous = this.tails.get(key) ?? Promise.resolve();
    // After the previous task, whatever its outcome: its failure is its caller's, not this one's.
    const result = previous.then(task, task);
    const tail = result.then(
      () => undefined,
      () => undefined,
    );
    this.tails.set(key, tail);
    void tail.then(() => {
      if (this.tails.get(key) === tail) this.tails.delete(key);
    });
    return result;
  }

  /** Keys with a task queued or running (for tests: nothing is kept once the calls are done). */
  get size(): number {
    return this.tails.size;
  }
}
