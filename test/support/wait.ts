/** Waiting on events a test cannot subscribe to (a file another process writes, a kernel object appearing). */

import { setTimeout as sleep } from 'node:timers/promises';

/**
 * Polls `check` every `everyMs` (50) until it returns (or resolves to) true; a throw counts as "not yet"
 * (a file half there, a map not pinned yet, an object not on the API server yet). Fails after `ms` naming
 * `what`, with `detail()` (e.g. the process's log) if given.
 */
export async function waitFor(
  what: string,
  check: () => boolean | Promise<boolean>,
  ms = 10_000,
  detail?: () => string,
  everyMs = 50,
): Promise<void> {
  const deadline = Date.now() + ms;
  for (;;) {
    try {
      if (await check()) return;
    } catch {
      // not there yet
    }
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}${detail ? `\n${detail()}` : ''}`);
    await sleep(everyMs);
  }
}
